//! Time-scale compression of one decoded frame: the frame played faster without changing
//! its pitch (NetEQ's "accelerate"), so the player can catch up after a stall without
//! dropping any of the audio it waited for.
//!
//! A stretch of the frame is cut out and its two edges are cross-faded. The cut's length is
//! the one, between a quarter and half of the frame, at which the samples after it look most
//! like the samples at the frame's start (for voiced speech or a tone: a whole number of
//! pitch periods), so the joint is smooth. The frame's first and last samples are kept, so
//! it still joins its neighbours. The frame then plays in 1/2 to 3/4 of its length.

/// The shortest cut, as a share of the frame (1/4: the frame plays in 3/4 of its time).
const MIN_CUT_DIV: usize = 4;
/// The longest cut (1/2: the frame plays in half its time).
const MAX_CUT_DIV: usize = 2;
/// The cross-fade's length, as a share of the frame (1/4: 5 ms of a 20 ms frame).
const FADE_DIV: usize = 4;
/// Below this mean square the frame is treated as silence: the longest cut, no search.
const SILENCE_POWER: f64 = 100.0;

/// The frame `pcm` shortened by cutting out between a quarter and half of it (see the module
/// docs). A frame too short to cut (under 8 samples) is returned as it is.
pub fn accelerate(pcm: &[i16]) -> Vec<i16> {
    let n = pcm.len();
    if n < 8 {
        return pcm.to_vec();
    }
    let fade = n / FADE_DIV;
    let cut = best_cut(pcm, n / MIN_CUT_DIV, n / MAX_CUT_DIV, fade);
    let mut out = Vec::with_capacity(n - cut);
    for i in 0..fade {
        // Weight of the frame's start falls from 1 to 0 across the fade.
        let w = 1.0 - (i as f64 + 0.5) / fade as f64;
        let mixed = f64::from(pcm[i]) * w + f64::from(pcm[cut + i]) * (1.0 - w);
        out.push(
            mixed
                .round()
                .clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16,
        );
    }
    out.extend_from_slice(&pcm[cut + fade..]);
    out
}

/// The cut in `min..=max` whose following `fade` samples correlate best (normalised) with
/// the frame's first `fade` samples; `max` for silence.
fn best_cut(pcm: &[i16], min: usize, max: usize, fade: usize) -> usize {
    let head = &pcm[..fade];
    let energy = |s: &[i16]| s.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>();
    let head_energy = energy(head);
    if head_energy / (fade as f64) < SILENCE_POWER {
        return max;
    }
    let mut best = (f64::NEG_INFINITY, max);
    for cut in (min..=max).rev() {
        let tail = &pcm[cut..cut + fade];
        let dot: f64 = head
            .iter()
            .zip(tail)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        let score = dot / (head_energy * energy(tail)).sqrt().max(1.0);
        if score > best.0 {
            best = (score, cut);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tone(hz: f64, n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| {
                (8000.0 * (2.0 * std::f64::consts::PI * hz * i as f64 / 48_000.0).sin()) as i16
            })
            .collect()
    }

    /// The joint between a tone's two ends is smooth: no sample-to-sample step larger than
    /// the tone's own, and the pitch (zero crossings per sample) is kept.
    #[test]
    fn a_tone_is_shortened_without_a_click_or_a_pitch_change() {
        for hz in [200.0, 1000.0, 1600.0, 2800.0] {
            let pcm = tone(hz, 960);
            let out = accelerate(&pcm);
            assert!((480..=720).contains(&out.len()), "{hz} Hz: {}", out.len());
            let max_step = |s: &[i16]| {
                s.windows(2)
                    .map(|w| (i32::from(w[1]) - i32::from(w[0])).abs())
                    .max()
                    .unwrap()
            };
            assert!(
                max_step(&out) <= max_step(&pcm) + 50,
                "{hz} Hz: step {} against {}",
                max_step(&out),
                max_step(&pcm)
            );
            let crossings = |s: &[i16]| {
                s.windows(2).filter(|w| (w[0] < 0) != (w[1] < 0)).count() as f64 / s.len() as f64
            };
            let (a, b) = (crossings(&pcm), crossings(&out));
            assert!((a - b).abs() / a < 0.1, "{hz} Hz: {a} against {b}");
        }
    }

    #[test]
    fn silence_is_cut_by_half_and_tiny_frames_are_left_alone() {
        assert_eq!(accelerate(&[0; 960]).len(), 480);
        assert_eq!(accelerate(&[5; 480]).len(), 240);
        assert_eq!(accelerate(&[1, 2, 3]), vec![1, 2, 3]);
    }

    proptest! {
        /// Any frame plays in a half to three quarters of its length, starts and ends as it
        /// did, and never panics.
        #[test]
        fn any_frame_keeps_its_ends(pcm in proptest::collection::vec(any::<i16>(), 8..2000)) {
            let out = accelerate(&pcm);
            let n = pcm.len();
            prop_assert!(out.len() >= n - n / 2 && out.len() <= n - n / 4);
            prop_assert_eq!(out.last(), pcm.last());
            // The first sample is nearly the frame's own (the fade's weight starts near 1).
            let first = (i32::from(out[0]) - i32::from(pcm[0])).abs();
            prop_assert!(first as f64 <= 65_536.0 / (2.0 * (n / 4) as f64) + 1.0);
        }
    }
}
