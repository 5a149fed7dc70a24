//! One analysis for every system, measured from outside: joins what the sender side saw
//! (each source picture's barcode and capture time) with what the receiver side showed (the
//! barcode read from each displayed picture, its display time and score) into the same
//! [`FrameRecord`]s a simulated run produces, so [`crate::summarize`] and the per-frame CSV
//! treat a black-box peer, a live scheme and a simulation alike.
//!
//! A looping source repeats barcodes, so a displayed barcode is matched to the most recent
//! capture of that barcode at or before its display, and only if that capture is no older
//! than [`JoinConfig::max_delay`] (otherwise a frame missing from the capture log could be
//! matched to the previous loop). A picture displayed on several refreshes keeps its first
//! display; displays that match no capture are counted, not guessed.

use std::collections::HashMap;

use salsify_time::{Duration, Instant};

use crate::record::{FrameOutcome, FrameRecord};
use crate::MetricsError;

/// One source picture as the sender side saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Captured {
    /// The barcode stamped in it.
    pub barcode: u32,
    /// When it was captured (the host's monotonic clock).
    pub at: Instant,
}

/// One displayed picture as the receiver side saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown {
    /// The barcode read from it.
    pub barcode: u32,
    /// When it was displayed (same clock as the captures).
    pub at: Instant,
    /// Its luma SSIM against the source picture (linear), if scored.
    pub ssim: Option<f64>,
    /// Its luma PSNR in dB, if scored.
    pub psnr_db: Option<f64>,
}

/// How displays are matched to captures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JoinConfig {
    /// A display more than this after the capture it would match is not matched.
    pub max_delay: Duration,
}

impl Default for JoinConfig {
    fn default() -> Self {
        JoinConfig {
            max_delay: Duration::from_secs(5),
        }
    }
}

/// Why a display matched no capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatched {
    /// No capture of this barcode at or before the display.
    NoCapture,
    /// The latest capture of this barcode is older than [`JoinConfig::max_delay`].
    TooOld,
}

/// The joined run.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    /// One record per capture, in capture order; `frame_id` is the capture's index.
    pub records: Vec<FrameRecord>,
    /// Displays matched to a capture.
    pub matched: usize,
    /// Displays that matched none, with the reason, by index into the displays given.
    pub unmatched: Vec<(usize, Unmatched)>,
    /// For each display given, the index of the capture it matched.
    pub matched_to: Vec<Option<usize>>,
}

/// Joins captures (in capture order) with displays (any order) into per-frame records.
///
/// Errors: captures whose times go backwards.
pub fn join(
    captures: &[Captured],
    shown: &[Shown],
    config: JoinConfig,
) -> Result<Joined, MetricsError> {
    let mut by_barcode: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, c) in captures.iter().enumerate() {
        if i > 0 && c.at < captures[i - 1].at {
            return Err(MetricsError::InvalidRun(format!(
                "capture {i} (barcode {}) is earlier than the one before it",
                c.barcode
            )));
        }
        by_barcode.entry(c.barcode).or_default().push(i);
    }
    let mut records: Vec<FrameRecord> = captures
        .iter()
        .enumerate()
        .map(|(i, c)| FrameRecord {
            choice: FrameOutcome::Unknown,
            ..FrameRecord::captured(i as u64, c.at)
        })
        .collect();
    let mut matched = 0;
    let mut unmatched = Vec::new();
    let mut matched_to = vec![None; shown.len()];
    for (index, s) in shown.iter().enumerate() {
        let candidates = by_barcode.get(&s.barcode).map_or(&[][..], Vec::as_slice);
        // The latest capture of this barcode at or before the display.
        let after = candidates.partition_point(|&i| captures[i].at <= s.at);
        let Some(&capture) = after.checked_sub(1).and_then(|k| candidates.get(k)) else {
            unmatched.push((index, Unmatched::NoCapture));
            continue;
        };
        if s.at - captures[capture].at > config.max_delay {
            unmatched.push((index, Unmatched::TooOld));
            continue;
        }
        matched += 1;
        matched_to[index] = Some(capture);
        let record = &mut records[capture];
        if record.display.is_none_or(|t| s.at < t) {
            record.display = Some(s.at);
            record.ssim = s.ssim;
            record.psnr_db = s.psnr_db;
        }
    }
    Ok(Joined {
        records,
        matched,
        unmatched,
        matched_to,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn cap(barcode: u32, at: u64) -> Captured {
        Captured {
            barcode,
            at: ms(at),
        }
    }

    fn show(barcode: u32, at: u64, ssim: f64) -> Shown {
        Shown {
            barcode,
            at: ms(at),
            ssim: Some(ssim),
            psnr_db: None,
        }
    }

    #[test]
    fn a_looping_source_matches_the_latest_capture() {
        // Barcodes 0, 1, 2 then the loop again.
        let captures: Vec<Captured> = (0..6).map(|i| cap(i % 3, 100 * i as u64)).collect();
        let shown = [
            show(0, 50, 0.9),
            show(2, 260, 0.8),
            show(0, 340, 0.95), // second loop's frame 0 (captured at 300)
            show(0, 360, 0.5),  // the same picture again: first display kept
            show(1, 90, 0.9),   // before any capture of barcode 1
        ];
        let j = join(&captures, &shown, JoinConfig::default()).unwrap();
        assert_eq!(j.matched, 4);
        assert_eq!(j.unmatched, vec![(4, Unmatched::NoCapture)]);
        assert_eq!(j.matched_to, vec![Some(0), Some(2), Some(3), Some(3), None]);
        let displays: Vec<Option<Instant>> = j.records.iter().map(|r| r.display).collect();
        assert_eq!(
            displays,
            vec![Some(ms(50)), None, Some(ms(260)), Some(ms(340)), None, None]
        );
        assert_eq!(j.records[3].ssim, Some(0.95));
        assert!(j.records.iter().all(|r| r.choice == FrameOutcome::Unknown));
        // The summary's delay rule applies as for any run: frame 1 waits for frame 2.
        let delays = crate::record_delays(&j.records).unwrap();
        assert_eq!(delays[1], Some(Duration::from_millis(160)));
    }

    #[test]
    fn stale_matches_and_bad_logs() {
        let captures = [cap(7, 0)];
        let config = JoinConfig {
            max_delay: Duration::from_millis(100),
        };
        let j = join(&captures, &[show(7, 150, 1.0)], config).unwrap();
        assert_eq!(j.unmatched, vec![(0, Unmatched::TooOld)]);
        assert!(join(&[cap(1, 10), cap(2, 5)], &[], config).is_err());
    }

    proptest! {
        /// Every display of a captured barcode within the window is matched; each record's
        /// display is at or after its capture.
        #[test]
        fn matches_are_consistent(
            n in 1usize..80,
            period in 1u32..20,
            lags in proptest::collection::vec((0usize..80, 0u64..300), 0..60),
        ) {
            let captures: Vec<Captured> = (0..n).map(|i| cap(i as u32 % period, 33 * i as u64)).collect();
            let shown: Vec<Shown> = lags.iter().filter(|(i, _)| *i < n).map(|&(i, lag)| {
                show(captures[i].barcode, 33 * i as u64 + lag, 0.9)
            }).collect();
            let j = join(&captures, &shown, JoinConfig::default()).unwrap();
            prop_assert_eq!(j.matched, shown.len());
            for r in &j.records {
                if let Some(d) = r.display {
                    prop_assert!(d >= r.capture);
                }
            }
        }
    }
}
