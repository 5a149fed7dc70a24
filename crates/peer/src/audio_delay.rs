//! Mouth-to-ear delay of a call's audio, read black-box from two recordings: what went in at
//! the sender (the "mouth") and what came out at the receiver (the "ear"), each a stream of
//! samples whose first sample's time on one shared clock is known. The audio carries
//! numbered timing marks (the audio barcode, [`salsify_audio::marks`]); both recordings are
//! read with the project's one mark reader, marks are paired by number, and mark n's delay is
//! `(received start + n's time in the received recording) - (sent start + n's time in the
//! sent recording)`. The same analysis serves Chromium (both recordings made by its page) and
//! Salsify (the sent recording is the synthetic voice itself, the received one `audio.wav`).
//!
//! Concealment is not read from outside: a mark is either read (its check bits hold) or
//! not, so the share of marks read is reported, not a concealed fraction.

use std::io::{self, Write};

use salsify_audio::{read_marks, Mark, SAMPLE_RATE};
use serde::Serialize;

/// Largest delay a pairing accepts: a received mark more than this after the sent mark of
/// its number is another pass of a looped source, not that mark.
pub const MAX_DELAY_S: f64 = 10.0;
/// Largest lead a pairing tolerates (the reader places an onset to about a millisecond; a
/// received mark well before its sent one cannot be that mark).
pub const MAX_LEAD_S: f64 = 0.005;

/// A recording: mono samples at [`SAMPLE_RATE`] and when its first sample was taken, in
/// seconds on the clock both recordings share.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The samples.
    pub samples: Vec<i16>,
    /// Time of the first sample, seconds on the shared clock.
    pub start_s: f64,
}

impl Recording {
    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(SAMPLE_RATE)
    }
}

/// A mark read on a shared clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedMark {
    /// Its number.
    pub number: u32,
    /// When its onset was, seconds on the shared clock.
    pub at_s: f64,
}

/// The marks of `recording` on the shared clock (the project's reader, unchanged).
pub fn timed_marks(recording: &Recording) -> Vec<TimedMark> {
    read_marks(&recording.samples)
        .into_iter()
        .map(|Mark { number, at_seconds }| TimedMark {
            number,
            at_s: recording.start_s + at_seconds,
        })
        .collect()
}

/// One mark heard: its number, when it was sent and heard (shared clock, s), the delay.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MarkDelay {
    /// The mark's number.
    pub number: u32,
    /// Its onset in the sent recording, shared clock, s.
    pub sent_s: f64,
    /// Its onset in the received recording, shared clock, s.
    pub received_s: f64,
    /// Mouth-to-ear delay, ms.
    pub delay_ms: f64,
}

/// Pairs every received mark with the sent mark of its number that precedes it most closely
/// (within [`MAX_DELAY_S`], a lead of at most [`MAX_LEAD_S`] tolerated); each sent mark is
/// paired at most once. Received marks with no such sent mark are left out. In order of
/// reception.
pub fn pair_marks(sent: &[TimedMark], received: &[TimedMark]) -> Vec<MarkDelay> {
    let mut used = vec![false; sent.len()];
    let mut out = Vec::new();
    for r in received {
        let best = sent
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                !used[*i]
                    && s.number == r.number
                    && r.at_s - s.at_s >= -MAX_LEAD_S
                    && r.at_s - s.at_s <= MAX_DELAY_S
            })
            .max_by(|a, b| a.1.at_s.total_cmp(&b.1.at_s));
        if let Some((i, s)) = best {
            used[i] = true;
            out.push(MarkDelay {
                number: r.number,
                sent_s: s.at_s,
                received_s: r.at_s,
                delay_ms: (r.at_s - s.at_s) * 1000.0,
            });
        }
    }
    out
}

/// The audio's figures read from its marks, under `summary.json`'s names where they mean
/// the same as a Salsify run's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarkFigures {
    /// Mean mouth-to-ear delay of the marks heard, ms (`None`: none heard).
    pub audio_delay_mean_ms: Option<f64>,
    /// Its 95th percentile (linear interpolation, as every summary's), ms.
    pub audio_delay_p95_ms: Option<f64>,
    /// Sent marks that should have been heard within the received recording.
    pub audio_marks_expected: u64,
    /// ... read from the received recording and paired.
    pub audio_marks_heard: u64,
    /// Heard / expected (`None` when none was expected): a mark concealment, loss or a
    /// stretch of its bits made unreadable is not heard.
    pub audio_marks_heard_fraction: Option<f64>,
}

/// The figures of `delays` given the sent marks and the received recording's span (shared
/// clock, s): a sent mark is expected if, delayed by the median delay heard (zero if none
/// was), its whole length falls inside the span and inside `window` (when given).
pub fn mark_figures(
    sent: &[TimedMark],
    delays: &[MarkDelay],
    received_span: (f64, f64),
    window: Option<(f64, f64)>,
) -> MarkFigures {
    let in_window = |t: f64| window.is_none_or(|(from, until)| t >= from && t <= until);
    let delays: Vec<&MarkDelay> = delays.iter().filter(|d| in_window(d.sent_s)).collect();
    let values: Vec<f64> = delays.iter().map(|d| d.delay_ms).collect();
    let median_s = salsify_metrics::percentile(&values, 50.0).unwrap_or(0.0) / 1000.0;
    let mark_s = salsify_audio::marks::MARK_LEN as f64 / f64::from(SAMPLE_RATE);
    let expected = sent
        .iter()
        .filter(|s| {
            let heard = s.at_s + median_s;
            in_window(s.at_s) && heard >= received_span.0 && heard + mark_s <= received_span.1
        })
        .count() as u64;
    // A mark heard but outside the expected span (its own delay far from the median) still
    // counts as heard; the share is capped at one.
    let heard = delays.len() as u64;
    MarkFigures {
        audio_delay_mean_ms: salsify_metrics::mean(&values),
        audio_delay_p95_ms: salsify_metrics::percentile(&values, 95.0),
        audio_marks_expected: expected,
        audio_marks_heard: heard,
        audio_marks_heard_fraction: (expected > 0)
            .then(|| (heard as f64 / expected as f64).min(1.0)),
    }
}

/// A call's audio delay read from its two recordings; `window` (shared clock, s) limits the
/// figures to marks sent inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioDelay {
    /// Every mark heard and paired, in order of reception (also outside the window).
    pub delays: Vec<MarkDelay>,
    /// The figures.
    pub figures: MarkFigures,
    /// Marks read from the sent recording.
    pub sent_marks: u64,
    /// ... and from the received one (paired or not).
    pub received_marks: u64,
}

/// Reads both recordings' marks, pairs them and sums them up.
pub fn audio_delay(
    sent: &Recording,
    received: &Recording,
    window: Option<(f64, f64)>,
) -> AudioDelay {
    let sent_marks = timed_marks(sent);
    let received_marks = timed_marks(received);
    let delays = pair_marks(&sent_marks, &received_marks);
    let span = (received.start_s, received.start_s + received.seconds());
    let figures = mark_figures(&sent_marks, &delays, span, window);
    AudioDelay {
        delays,
        figures,
        sent_marks: sent_marks.len() as u64,
        received_marks: received_marks.len() as u64,
    }
}

/// Columns of [`write_delay_csv`].
pub const DELAY_CSV_HEADER: &str = "mark,sent_s,received_s,delay_ms";

/// One line per mark heard; times in seconds from `base` on the shared clock.
pub fn write_delay_csv(delays: &[MarkDelay], base: f64, mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{DELAY_CSV_HEADER}")?;
    for d in delays {
        writeln!(
            out,
            "{},{:.4},{:.4},{:.2}",
            d.number,
            d.sent_s - base,
            d.received_s - base,
            d.delay_ms
        )?;
    }
    Ok(())
}

/// File names of [`write_audio_delay`].
pub const DELAY_CSV: &str = "audio_delay.csv";
/// ...
pub const MARKS_JSON: &str = "audio_marks.json";

/// What `audio_marks.json` holds: the figures and how the reading went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarksReport {
    /// The figures (also merged into `summary.json`).
    #[serde(flatten)]
    pub figures: MarkFigures,
    /// Marks read from the sent recording.
    pub sent_marks: u64,
    /// ... and from the received one (paired or not).
    pub received_marks: u64,
    /// Marks paired in all (also outside the window).
    pub paired_marks: u64,
    /// The window the figures count (shared clock, s from `base_s`), if any.
    pub window_s: Option<(f64, f64)>,
    /// The shared-clock time the CSV's times count from (s): the sent recording's start.
    pub base_s: f64,
    /// What the two ends of the delay are, in words.
    pub measured: String,
    /// Concealed share as the receiver itself counts it, where it says (Chromium's getStats:
    /// `concealedSamples / totalSamplesReceived` of the remote audio at the call's end): its
    /// own account, not read from the marks.
    pub receiver_reported_concealed_fraction: Option<f64>,
}

/// Writes `audio_delay.csv` (every mark paired) and `audio_marks.json` into `dir`, and
/// merges the figures into `dir/summary.json` when there is one (its other fields kept).
pub fn write_audio_delay(
    dir: &std::path::Path,
    result: &AudioDelay,
    base_s: f64,
    window: Option<(f64, f64)>,
    measured: &str,
    reported_concealed: Option<f64>,
) -> anyhow::Result<MarksReport> {
    use anyhow::Context;
    let path = dir.join(DELAY_CSV);
    let mut csv = Vec::new();
    write_delay_csv(&result.delays, base_s, &mut csv)?;
    salsify_codec::output::write(&path, csv)
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    let report = MarksReport {
        figures: result.figures.clone(),
        sent_marks: result.sent_marks,
        received_marks: result.received_marks,
        paired_marks: result.delays.len() as u64,
        window_s: window.map(|(a, b)| (a - base_s, b - base_s)),
        base_s,
        measured: measured.to_string(),
        receiver_reported_concealed_fraction: reported_concealed,
    };
    let path = dir.join(MARKS_JSON);
    salsify_codec::output::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("cannot write '{}'", path.display()))?;
    let summary = dir.join("summary.json");
    if summary.is_file() {
        let text = std::fs::read_to_string(&summary)
            .with_context(|| format!("cannot read '{}'", summary.display()))?;
        let mut value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("'{}' is not JSON", summary.display()))?;
        let figures = serde_json::to_value(&result.figures)?;
        if let (Some(map), Some(add)) = (value.as_object_mut(), figures.as_object()) {
            for (k, v) in add {
                map.insert(k.clone(), v.clone());
            }
        }
        salsify_codec::output::write(&summary, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("cannot write '{}'", summary.display()))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(number: u32, at_s: f64) -> TimedMark {
        TimedMark { number, at_s }
    }

    #[test]
    fn pairs_by_number_with_the_closest_earlier_pass() {
        // A source looped every 5 s: mark 1 sent at 1 s and 6 s.
        let sent = [mark(1, 1.0), mark(2, 2.0), mark(1, 6.0)];
        let received = [mark(2, 2.15), mark(1, 6.2), mark(3, 3.3), mark(2, 1.0)];
        let d = pair_marks(&sent, &received);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!((d[0].number, d[0].sent_s), (2, 2.0));
        assert!((d[0].delay_ms - 150.0).abs() < 1e-6);
        assert_eq!((d[1].number, d[1].sent_s), (1, 6.0));
        assert!((d[1].delay_ms - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_sent_mark_is_paired_once() {
        let sent = [mark(4, 4.0)];
        let received = [mark(4, 4.1), mark(4, 4.3)];
        assert_eq!(pair_marks(&sent, &received).len(), 1);
    }

    #[test]
    fn figures_count_marks_expected_in_the_received_span() {
        let sent: Vec<TimedMark> = (0..10).map(|k| mark(k, f64::from(k))).collect();
        // Heard 100 ms later, the received recording spanning 2.0..8.0 s; mark 5 lost.
        let delays: Vec<MarkDelay> = [2u32, 3, 4, 6]
            .iter()
            .map(|&k| MarkDelay {
                number: k,
                sent_s: f64::from(k),
                received_s: f64::from(k) + 0.1,
                delay_ms: 100.0,
            })
            .collect();
        let f = mark_figures(&sent, &delays, (2.0, 8.0), None);
        // Marks 2..=7 heard at 2.1..7.1 fit (7.1 + 0.31 <= 8.0).
        assert_eq!(f.audio_marks_expected, 6);
        assert_eq!(f.audio_marks_heard, 4);
        assert_eq!(f.audio_delay_mean_ms, Some(100.0));
        let windowed = mark_figures(&sent, &delays, (2.0, 8.0), Some((3.5, 9.0)));
        assert_eq!(windowed.audio_marks_expected, 4);
        assert_eq!(windowed.audio_marks_heard, 2);
    }

    #[test]
    fn the_csv_counts_from_its_base() {
        let d = [MarkDelay {
            number: 7,
            sent_s: 107.0,
            received_s: 107.125,
            delay_ms: 125.0,
        }];
        let mut out = Vec::new();
        write_delay_csv(&d, 100.0, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{DELAY_CSV_HEADER}\n7,7.0000,7.1250,125.00\n")
        );
    }
}
