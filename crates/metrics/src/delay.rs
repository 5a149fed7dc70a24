//! The Salsify paper's per-frame delay metric.
//!
//! Delay of a source frame = the time the viewer first sees it *or anything newer*, minus the
//! time the camera supplied it. A frame that is never shown gets the display time of the next
//! frame (by frame id) that is shown, so a scheme cannot look fast by skipping frames: a low
//! frame rate shows up as delay. Frames after the last shown frame have no such time and are
//! left out (`None`), as in the paper.

use super::MetricsError;
use salsify_time::{Duration, Instant};

/// Delay of every captured frame.
///
/// `capture[i]` is the capture time of frame `i`; `shown` lists `(frame index, display time)`
/// for the frames actually displayed, in any order. Frame `i` gets the display time of the
/// first frame `j >= i` that was shown (itself if shown), minus `capture[i]`; if a frame id
/// is listed more than once (a barcode reader sees the same picture on several screen
/// refreshes) its earliest display time counts. The result has one entry per captured frame,
/// `None` for frames after the last one shown.
///
/// All receivers we build display in increasing frame id, where "first later frame shown"
/// and "first time anything at least as new is on screen" coincide; this function uses the
/// former, literally as the paper defines it.
///
/// Errors: a shown index not below `capture.len()`, or a frame whose assigned display time
/// is before its capture time (an inconsistent log, not a zero delay).
pub fn display_delays(
    capture: &[Instant],
    shown: &[(usize, Instant)],
) -> Result<Vec<Option<Duration>>, MetricsError> {
    let mut first_shown: Vec<Option<Instant>> = vec![None; capture.len()];
    for &(frame, at) in shown {
        let slot = first_shown
            .get_mut(frame)
            .ok_or(MetricsError::UnknownFrame {
                frame,
                frames: capture.len(),
            })?;
        *slot = Some(slot.map_or(at, |t| t.min(at)));
    }
    let mut delays = vec![None; capture.len()];
    let mut next_shown: Option<Instant> = None;
    for frame in (0..capture.len()).rev() {
        if let Some(at) = first_shown[frame] {
            next_shown = Some(at);
        }
        if let Some(at) = next_shown {
            let delay = at
                .checked_duration_since(capture[frame])
                .ok_or(MetricsError::DisplayBeforeCapture { frame })?;
            delays[frame] = Some(delay);
        }
    }
    Ok(delays)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn d(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    /// Frames every 10 ms from 0.
    fn captures(n: u64) -> Vec<Instant> {
        (0..n).map(|i| ms(10 * i)).collect()
    }

    #[test]
    fn every_frame_shown_gets_its_own_delay() {
        let shown = [(0, ms(50)), (1, ms(65)), (2, ms(70))];
        let got = display_delays(&captures(3), &shown).unwrap();
        assert_eq!(got, vec![d(50), d(55), d(50)]);
    }

    #[test]
    fn skipped_frames_wait_for_the_next_shown_frame() {
        // Frames 1 and 2 never shown: they count until frame 3 appears at 100 ms.
        let shown = [(0, ms(40)), (3, ms(100))];
        let got = display_delays(&captures(4), &shown).unwrap();
        assert_eq!(got, vec![d(40), d(90), d(80), d(70)]);
    }

    #[test]
    fn frames_after_the_last_shown_are_dropped() {
        let shown = [(1, ms(60))];
        let got = display_delays(&captures(4), &shown).unwrap();
        assert_eq!(got, vec![d(60), d(50), None, None]);
        assert_eq!(display_delays(&captures(3), &[]).unwrap(), vec![None; 3]);
        assert_eq!(display_delays(&[], &[]).unwrap(), vec![]);
    }

    #[test]
    fn order_of_shown_does_not_matter_and_repeats_take_the_earliest() {
        let shown = [(2, ms(90)), (0, ms(30)), (2, ms(80)), (0, ms(35))];
        let got = display_delays(&captures(3), &shown).unwrap();
        assert_eq!(got, vec![d(30), d(70), d(60)]);
    }

    #[test]
    fn bad_logs_are_errors() {
        let e = display_delays(&captures(2), &[(2, ms(50))]).unwrap_err();
        assert_eq!(
            e,
            MetricsError::UnknownFrame {
                frame: 2,
                frames: 2
            }
        );
        // Frame 1 is captured at 10 ms but "shown" at 5 ms.
        let e = display_delays(&captures(2), &[(1, ms(5))]).unwrap_err();
        assert_eq!(e, MetricsError::DisplayBeforeCapture { frame: 1 });
    }

    proptest! {
        /// With each shown frame displayed at or after its capture, and displays in frame
        /// order, no delay is an error; a frame's delay is at least the delay its own
        /// display would give; exactly the frames up to the last shown one are scored.
        #[test]
        fn consistent_logs_give_sane_delays(
            gaps in proptest::collection::vec(0u64..50, 1..60),
            shown_mask in proptest::collection::vec(any::<bool>(), 60),
            lag in proptest::collection::vec(0u64..500, 60),
        ) {
            let capture: Vec<Instant> = gaps.iter().scan(0u64, |t, g| { *t += g; Some(ms(*t)) }).collect();
            let mut shown = Vec::new();
            let mut last_display = Instant::ZERO;
            for (i, &c) in capture.iter().enumerate() {
                if shown_mask[i] {
                    let at = (c + Duration::from_millis(lag[i])).max(last_display);
                    last_display = at;
                    shown.push((i, at));
                }
            }
            let delays = display_delays(&capture, &shown).unwrap();
            let last = shown.last().map(|&(i, _)| i);
            for (i, delay) in delays.iter().enumerate() {
                prop_assert_eq!(delay.is_some(), last.is_some_and(|l| i <= l));
            }
            for &(i, at) in &shown {
                prop_assert_eq!(delays[i], Some(at - capture[i]));
            }
            // A skipped frame shares its successor's display time and was captured no later,
            // so it never waits less.
            for i in 1..delays.len() {
                if !shown_mask[i - 1] {
                    if let (Some(a), Some(b)) = (delays[i - 1], delays[i]) {
                        prop_assert!(a >= b);
                    }
                }
            }
        }
    }
}
