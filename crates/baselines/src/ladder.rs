//! Vidaptive's resolution ladder: the encoder steps down one rung of [`LADDER`] after 15
//! consecutive camera pictures during which fewer than 5 frames/s were sent over the last T,
//! and up after 30 consecutive frames encoded at < 0.9 of the target while alpha > 0.9; at
//! most one change per T. The sender ([`crate::VidaptiveSender`]) codes each picture at its
//! rung's [`ladder_size`] and forces a keyframe on a change.

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;

/// The resolution ladder: fractions (numerator, denominator) of the source width and height.
pub const LADDER: [(u32, u32); 4] = [(1, 1), (3, 4), (1, 2), (1, 4)];

/// The picture size of ladder rung `step` for a `width` x `height` source: each side scaled
/// by the rung's fraction and rounded down to an even number (at least 2).
pub fn ladder_size(width: u32, height: u32, step: usize) -> (u32, u32) {
    let (num, den) = LADDER[step.min(LADDER.len() - 1)];
    let side = |v: u32| ((u64::from(v) * u64::from(num) / u64::from(den)) as u32 & !1).max(2);
    (side(width), side(height))
}

/// The ladder's triggers (Vidaptive's values as defaults), the `[vidaptive.ladder]` table.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LadderConfig {
    /// Change the resolution at all (`false`: always the source size). Default true.
    pub enabled: bool,
    /// Step down after this many consecutive pictures with too few frames sent. Default 15.
    pub down_after: u32,
    /// "Too few": below this many frames per second sent over the last T. Default 5.
    pub min_fps: f64,
    /// Step up after this many consecutive frames under-using the target. Default 30.
    pub up_after: u32,
    /// "Under-using": the encoder's output over the last T below this share of its target.
    /// Default 0.9.
    pub underuse: f64,
    /// ... while alpha is above this. Default 0.9.
    pub min_alpha: f64,
    /// At most one change per this long (T). Default 1 s.
    #[serde(rename = "min_interval_ms", with = "salsify_time::serde_units::millis")]
    pub min_interval: Duration,
}

impl Default for LadderConfig {
    fn default() -> Self {
        LadderConfig {
            enabled: true,
            down_after: 15,
            min_fps: 5.0,
            up_after: 30,
            underuse: 0.9,
            min_alpha: 0.9,
            min_interval: Duration::from_secs(1),
        }
    }
}

/// Which rung of [`LADDER`] the encoder is on, and the runs that move it.
#[derive(Debug, Clone)]
pub struct Ladder {
    config: LadderConfig,
    step: usize,
    low_fps_run: u32,
    underuse_run: u32,
    last_change: Option<Instant>,
    /// Frames encoded over the last T: (time, bits, target in b/s).
    encoded: std::collections::VecDeque<(Instant, u64, f64)>,
    changes: u64,
}

impl Ladder {
    /// At full size.
    pub fn new(config: LadderConfig) -> Self {
        Ladder {
            config,
            step: 0,
            low_fps_run: 0,
            underuse_run: 0,
            last_change: None,
            encoded: Default::default(),
            changes: 0,
        }
    }

    /// The rung (0: full size).
    pub fn step(&self) -> usize {
        self.step
    }

    /// Changes so far.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    fn may_change(&self, now: Instant) -> bool {
        self.last_change
            .is_none_or(|t| now - t >= self.config.min_interval)
    }

    fn change(&mut self, now: Instant, step: usize) {
        self.step = step;
        self.last_change = Some(now);
        self.low_fps_run = 0;
        self.underuse_run = 0;
        self.encoded.clear();
        self.changes += 1;
    }

    /// A camera picture at `now`; `sent_fps` frames per second were sent over the last T
    /// (`None`: not a full window yet). Returns whether the rung went down.
    pub fn on_picture(&mut self, now: Instant, sent_fps: Option<f64>) -> bool {
        match sent_fps {
            Some(f) if f < self.config.min_fps => self.low_fps_run += 1,
            _ => self.low_fps_run = 0,
        }
        if self.low_fps_run >= self.config.down_after
            && self.step + 1 < LADDER.len()
            && self.may_change(now)
        {
            self.change(now, self.step + 1);
            return true;
        }
        false
    }

    /// A frame of `bytes` encoded at `now` for `target` with `alpha` in force. Returns
    /// whether the rung went up.
    pub fn on_encoded(&mut self, now: Instant, bytes: usize, target: Bitrate, alpha: f64) -> bool {
        let w = self.config.min_interval;
        self.encoded
            .push_back((now, bytes as u64 * 8, target.as_f64()));
        while self.encoded.front().is_some_and(|&(t, _, _)| now - t > w) {
            self.encoded.pop_front();
        }
        let bits: u64 = self.encoded.iter().map(|e| e.1).sum();
        let n = self.encoded.len() as f64;
        let target = self.encoded.iter().map(|e| e.2).sum::<f64>() / n;
        let achieved = bits as f64 / w.as_secs_f64();
        // Only judged over a full window at this rung.
        let full = self.may_change(now);
        if full && alpha > self.config.min_alpha && achieved < self.config.underuse * target {
            self.underuse_run += 1;
        } else {
            self.underuse_run = 0;
        }
        if self.underuse_run >= self.config.up_after && self.step > 0 && self.may_change(now) {
            self.change(now, self.step - 1);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn ladder_sizes_are_even_fractions_of_the_source() {
        assert_eq!(ladder_size(320, 180, 0), (320, 180));
        assert_eq!(ladder_size(320, 180, 1), (240, 134));
        assert_eq!(ladder_size(320, 180, 2), (160, 90));
        assert_eq!(ladder_size(320, 180, 3), (80, 44));
        assert_eq!(ladder_size(1280, 720, 3), (320, 180));
        assert_eq!(ladder_size(4, 2, 3), (2, 2));
    }

    #[test]
    fn steps_down_after_15_consecutive_low_fps_pictures_at_most_once_per_t() {
        let mut l = Ladder::new(LadderConfig::default());
        // A run of 14 broken by one good picture does not count.
        for i in 0..14 {
            assert!(!l.on_picture(at(i * 33), Some(2.0)));
        }
        assert!(!l.on_picture(at(14 * 33), Some(10.0)));
        // No full window yet: not counted either.
        assert!(!l.on_picture(at(15 * 33), None));
        let t0 = 1000;
        for i in 0..14 {
            assert!(!l.on_picture(at(t0 + i * 33), Some(4.9)));
        }
        assert!(l.on_picture(at(t0 + 14 * 33), Some(4.9)));
        assert_eq!(l.step(), 1);
        // Another 15 within T of the change: no second step.
        let t1 = t0 + 14 * 33;
        for i in 1..=20 {
            assert!(!l.on_picture(at(t1 + i * 33), Some(1.0)));
        }
        assert_eq!(l.step(), 1);
        // Past T, the run (still going) steps down again, to the last rung at most.
        assert!(l.on_picture(at(t1 + 1000), Some(1.0)));
        assert_eq!(l.step(), 2);
        for i in 0..200 {
            l.on_picture(at(t1 + 2000 + i * 33), Some(1.0));
        }
        assert_eq!(l.step(), LADDER.len() - 1);
        assert_eq!(l.changes(), 3);
    }

    /// Feeds `n` frames 33 ms apart from `t` of `bytes` each at `kbps` and `alpha`; returns
    /// the index of the frame that moved the rung up.
    fn feed(l: &mut Ladder, t: u64, n: u64, bytes: usize, kbps: u64, alpha: f64) -> Option<u64> {
        (0..n).find(|&i| l.on_encoded(at(t + i * 33), bytes, Bitrate::kbps(kbps), alpha))
    }

    #[test]
    fn steps_up_after_30_frames_under_the_target_with_alpha_above_0_9() {
        let mut l = Ladder::new(LadderConfig::default());
        for i in 0..15 {
            l.on_picture(at(2000 + i * 10), Some(0.0));
        }
        assert_eq!(l.step(), 1);
        // 30 frames/s of 1000 bytes = 240 kb/s. For a 1000 kb/s target with alpha 0.95:
        // under-used. Not within T of the change, then 30 frames more.
        let up = feed(&mut l, 2150, 100, 1000, 1000, 0.95).expect("steps up");
        let t_up = 2150 + up * 33;
        assert!(
            t_up >= 2140 + 1000,
            "not within T of the last change: {t_up}"
        );
        // The run starts once the window is full (T after the change): 30 frames later.
        assert_eq!(up, (1000_u64 - 10).div_ceil(33) + 29);
        assert_eq!(l.step(), 0);
        // Never above full size.
        assert_eq!(feed(&mut l, 10_000, 200, 1000, 1000, 0.95), None);
    }

    #[test]
    fn no_step_up_when_alpha_is_low_or_the_target_is_met() {
        let down = |l: &mut Ladder| {
            for i in 0..15 {
                l.on_picture(at(i * 10), Some(0.0));
            }
            assert_eq!(l.step(), 1);
        };
        let mut l = Ladder::new(LadderConfig::default());
        down(&mut l);
        assert_eq!(feed(&mut l, 200, 200, 1000, 1000, 0.8), None, "alpha 0.8");
        let mut l = Ladder::new(LadderConfig::default());
        down(&mut l);
        // 30 x 4000 bytes = 960 kb/s of 1000: met.
        assert_eq!(feed(&mut l, 200, 200, 4000, 1000, 1.0), None, "target met");
        // A run of 29 broken by one frame with low alpha starts over.
        let mut l = Ladder::new(LadderConfig::default());
        down(&mut l);
        assert_eq!(feed(&mut l, 1200, 29, 1000, 1000, 1.0), None);
        assert_eq!(feed(&mut l, 1200 + 29 * 33, 1, 1000, 1000, 0.5), None);
        assert_eq!(feed(&mut l, 1200 + 30 * 33, 30, 1000, 1000, 1.0), Some(29));
    }
}
