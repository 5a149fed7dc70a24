//! Vidaptive's hindsight choice of alpha: the encoder's target is alpha x CC-Rate.
//!
//! Each frame sent records `(alpha_i, d_i)`: the alpha in force and the frame's pacer delay.
//! Assuming a frame's delay scales with alpha (`d_i(alpha) = d_i x alpha / alpha_i`), alpha
//! maximises, over the frames of the last `T`,
//! `lambda / (1 - lambda) x F(alpha) + B(alpha)` where `F` = share of frames with
//! `d_i(alpha) <= tau` and `B = min(f_max x mean d_i(alpha), 1)`. `B` grows with alpha and
//! `F` only drops just past a candidate `tau x alpha_i / d_i`, so the maximum is at one of
//! those candidates within `[min_alpha, 1]`, or at 1. With fewer than `min_fps` frames per
//! second in the window, alpha steps down by `fallback_step` instead.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

/// The optimisation's parameters (Vidaptive's values as defaults).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlphaConfig {
    /// Frame-delay budget tau. Default 33 ms.
    #[serde(rename = "tau_ms", with = "salsify_time::serde_units::millis")]
    pub tau: Duration,
    /// Hindsight window T. Default 1 s.
    #[serde(rename = "window_ms", with = "salsify_time::serde_units::millis")]
    pub window: Duration,
    /// Weight lambda of the frame-rate score. Default 0.5.
    pub lambda: f64,
    /// f_max, frames per second. Default 30.
    pub f_max: f64,
    /// Smallest alpha. Default 0.05.
    pub min_alpha: f64,
    /// Below this many frames per second in the window, step alpha down. Default 5.
    pub min_fps: f64,
    /// That step. Default 0.15.
    pub fallback_step: f64,
}

impl Default for AlphaConfig {
    fn default() -> Self {
        AlphaConfig {
            tau: Duration::from_millis(33),
            window: Duration::from_secs(1),
            lambda: 0.5,
            f_max: 30.0,
            min_alpha: 0.05,
            min_fps: 5.0,
            fallback_step: 0.15,
        }
    }
}

/// One frame's record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameDelay {
    /// Alpha in force when it was encoded.
    pub alpha: f64,
    /// Its pacer delay.
    pub delay: Duration,
}

/// The objective at `alpha` over `frames`.
pub fn objective(frames: &[FrameDelay], alpha: f64, c: &AlphaConfig) -> f64 {
    if frames.is_empty() {
        return 0.0;
    }
    let tau = c.tau.as_secs_f64();
    let n = frames.len() as f64;
    let scaled = frames
        .iter()
        .map(|f| f.delay.as_secs_f64() * alpha / f.alpha);
    let (ok, sum) = scaled.fold((0usize, 0.0), |(ok, sum), d| {
        // A tiny tolerance so the candidate alpha = tau x alpha_i / d_i itself counts.
        (ok + usize::from(d <= tau * (1.0 + 1e-12)), sum + d)
    });
    let f = ok as f64 / n;
    let b = (c.f_max * sum / n).min(1.0);
    c.lambda / (1.0 - c.lambda) * f + b
}

/// The best alpha over `frames` (checked at the candidates only).
pub fn optimise(frames: &[FrameDelay], c: &AlphaConfig) -> f64 {
    let tau = c.tau.as_secs_f64();
    let candidates = frames
        .iter()
        .filter(|f| !f.delay.is_zero())
        .map(|f| tau * f.alpha / f.delay.as_secs_f64())
        .filter(|a| (c.min_alpha..=1.0).contains(a))
        .chain([1.0, c.min_alpha]);
    let mut best = (f64::NEG_INFINITY, 1.0);
    for a in candidates {
        let v = objective(frames, a, c);
        // Ties go to the larger alpha (more bits at the same score).
        if v > best.0 + 1e-12 || ((v - best.0).abs() <= 1e-12 && a > best.1) {
            best = (v, a);
        }
    }
    best.1
}

/// Keeps the window of frame records and the current alpha.
#[derive(Debug)]
pub struct AlphaController {
    config: AlphaConfig,
    frames: VecDeque<(Instant, FrameDelay)>,
    alpha: f64,
    started: Option<Instant>,
}

impl AlphaController {
    /// Starts at alpha = 1.
    pub fn new(config: AlphaConfig) -> Self {
        AlphaController {
            config,
            frames: VecDeque::new(),
            alpha: 1.0,
            started: None,
        }
    }

    /// The current alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// A frame's last packet left the pacer at `now`.
    pub fn on_frame_sent(&mut self, now: Instant, record: FrameDelay) {
        self.frames.push_back((now, record));
    }

    /// Frames per second sent over the window before `now`; `None` until a full window has
    /// passed since the first [`AlphaController::update`].
    pub fn sent_fps(&self, now: Instant) -> Option<f64> {
        let w = self.config.window;
        let start = self.started?;
        if now - start < w {
            return None;
        }
        let n = self.frames.iter().filter(|&&(t, _)| now - t <= w).count();
        Some(n as f64 / w.as_secs_f64())
    }

    /// Chooses alpha for the frame about to be encoded at `now`.
    pub fn update(&mut self, now: Instant) -> f64 {
        let start = *self.started.get_or_insert(now);
        let w = self.config.window;
        while self.frames.front().is_some_and(|&(t, _)| now - t > w) {
            self.frames.pop_front();
        }
        if now - start < w {
            return self.alpha; // not a full window of history yet
        }
        let fps = self.frames.len() as f64 / w.as_secs_f64();
        self.alpha = if fps < self.config.min_fps {
            (self.alpha - self.config.fallback_step).max(self.config.min_alpha)
        } else {
            let frames: Vec<FrameDelay> = self.frames.iter().map(|&(_, f)| f).collect();
            optimise(&frames, &self.config)
        };
        self.alpha
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(frames: &[FrameDelay], c: &AlphaConfig) -> f64 {
        (0..=95_000)
            .map(|i| 0.05 + f64::from(i) * 1e-5)
            .map(|a| objective(frames, a, c))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn frames(spec: &[(f64, u64)]) -> Vec<FrameDelay> {
        spec.iter()
            .map(|&(alpha, ms)| FrameDelay {
                alpha,
                delay: Duration::from_millis(ms),
            })
            .collect()
    }

    #[test]
    fn candidates_find_the_brute_force_optimum() {
        let c = AlphaConfig::default();
        for spec in [
            vec![(1.0, 10), (1.0, 20), (1.0, 40), (1.0, 80)],
            vec![(0.5, 66), (0.7, 12), (0.9, 150), (0.2, 5), (1.0, 33)],
            vec![(1.0, 0), (1.0, 1), (0.3, 300)],
            vec![(0.8, 45); 30],
            vec![(1.0, 500), (1.0, 700)],
        ] {
            let f = frames(&spec);
            let a = optimise(&f, &c);
            let got = objective(&f, a, &c);
            let best = brute_force(&f, &c);
            assert!(
                got >= best - 1e-9,
                "{spec:?}: alpha {a} scores {got} < {best}"
            );
        }
    }

    #[test]
    fn short_delays_keep_alpha_at_one_long_ones_lower_it() {
        let c = AlphaConfig::default();
        assert_eq!(optimise(&frames(&[(1.0, 5); 30]), &c), 1.0);
        let a = optimise(&frames(&[(1.0, 66); 30]), &c);
        assert!((a - 0.5).abs() < 1e-9, "{a}");
    }

    #[test]
    fn too_few_frames_step_alpha_down() {
        let mut ctl = AlphaController::new(AlphaConfig::default());
        ctl.update(Instant::ZERO);
        ctl.on_frame_sent(
            Instant::from_millis(900),
            FrameDelay {
                alpha: 1.0,
                delay: Duration::ZERO,
            },
        );
        assert!((ctl.update(Instant::from_millis(1000)) - 0.85).abs() < 1e-9);
        assert!((ctl.update(Instant::from_millis(2500)) - 0.70).abs() < 1e-9);
    }
}
