//! The two clocks a Salsify call's audio is read on, from its receiver's per-frame log
//! (`audio.csv`: `played_ms,frame,captured_ms,delay_ms,kind`, one row per frame played, in
//! the order written to the WAV file): the WAV file's first sample played at the first row's
//! `played_ms`, and the sender's voice started (its sample 0 captured) at `captured_ms -
//! frame * frame length`. Only the two starts are taken from the log; each mark's delay is
//! read from the marks, as for Chromium.

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// The log's clocks, ms on the receiver's clock (the log's zero).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlayedClocks {
    /// When the WAV file's first sample was played.
    pub received_start_ms: f64,
    /// When the sender's voice sample 0 was captured.
    pub sent_start_ms: f64,
    /// One frame's length (the median step between rows).
    pub frame_ms: f64,
    /// Rows read.
    pub rows: u64,
    /// Largest time a row starts after the previous row's frame would have ended (a frame
    /// plays for `frame_ms` at most; one played faster, for less, with fewer samples in the
    /// WAV file): zero when the WAV file's timeline is the playout's.
    pub timeline_deviation_ms: f64,
    /// Largest distance of a row's `captured_ms - frame * frame_ms` from `sent_start_ms`.
    pub capture_deviation_ms: f64,
}

/// Reads the clocks of an `audio.csv` log.
pub fn played_clocks(text: &str) -> Result<PlayedClocks> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    if header.trim() != salsify_audio::AUDIO_CSV_HEADER {
        bail!(
            "not an audio log: its header is '{header}', not '{}'",
            salsify_audio::AUDIO_CSV_HEADER
        );
    }
    let mut played = Vec::new();
    let mut captures = Vec::new();
    for (i, line) in lines.enumerate() {
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() != 5 {
            bail!("line {}: {} columns, not 5", i + 2, cols.len());
        }
        let number = |k: usize| -> Result<f64> {
            cols[k]
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .with_context(|| format!("line {}: '{}' is not a number", i + 2, cols[k]))
        };
        played.push(number(0)?);
        if !cols[1].is_empty() {
            let frame: u64 = cols[1]
                .parse()
                .with_context(|| format!("line {}: frame '{}'", i + 2, cols[1]))?;
            captures.push((frame, number(2)?));
        }
    }
    if played.len() < 2 || captures.is_empty() {
        bail!("the audio log has too few frames to read its clocks");
    }
    let steps: Vec<f64> = played.windows(2).map(|w| w[1] - w[0]).collect();
    let frame_ms = salsify_metrics::percentile(&steps, 50.0).unwrap_or(0.0);
    if frame_ms <= 0.0 {
        bail!("the audio log's frames are not played one after another");
    }
    let starts: Vec<f64> = captures
        .iter()
        .map(|&(f, c)| c - f as f64 * frame_ms)
        .collect();
    let sent_start_ms = salsify_metrics::percentile(&starts, 50.0).unwrap_or(0.0);
    let received_start_ms = played[0];
    let timeline_deviation_ms = steps
        .iter()
        .map(|step| (step - frame_ms).max(0.0))
        .fold(0.0, f64::max);
    let capture_deviation_ms = starts
        .iter()
        .map(|s| (s - sent_start_ms).abs())
        .fold(0.0, f64::max);
    Ok(PlayedClocks {
        received_start_ms,
        sent_start_ms,
        frame_ms,
        rows: played.len() as u64,
        timeline_deviation_ms,
        capture_deviation_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_of_a_log() {
        let log = format!(
            "{}\n100.000,3,60.000,40.000,packet\n120.000,,80.000,40.000,stretch\n140.000,4,80.000,60.000,missing\n",
            salsify_audio::AUDIO_CSV_HEADER
        );
        let c = played_clocks(&log).unwrap();
        assert_eq!(c.frame_ms, 20.0);
        assert_eq!(c.received_start_ms, 100.0);
        assert_eq!(c.sent_start_ms, 0.0);
        assert_eq!(c.rows, 3);
        assert_eq!(c.timeline_deviation_ms, 0.0);
        assert_eq!(c.capture_deviation_ms, 0.0);
        // A frame played faster (12 ms) keeps the timeline; a pause of 30 ms does not.
        let log = format!(
            "{}\n100.000,3,60.000,40.000,accelerated\n112.000,4,80.000,32.000,packet\n132.000,5,100.000,32.000,packet\n152.000,6,120.000,32.000,packet\n202.000,7,140.000,62.000,packet\n",
            salsify_audio::AUDIO_CSV_HEADER
        );
        let c = played_clocks(&log).unwrap();
        assert_eq!(c.frame_ms, 20.0);
        assert_eq!(c.timeline_deviation_ms, 30.0);
    }

    proptest::proptest! {
        /// Any text, and any rows of numbers, give clocks or an error, never a panic.
        #[test]
        fn any_log_is_read_or_refused(
            text in ".{0,200}",
            rows in proptest::collection::vec(
                (-1e12f64..1e12, proptest::option::of(0u64..u64::MAX), -1e12f64..1e12),
                0..20,
            ),
        ) {
            let _ = played_clocks(&text);
            let mut log = format!("{}\n", salsify_audio::AUDIO_CSV_HEADER);
            for (played, frame, captured) in rows {
                let frame = frame.map_or(String::new(), |f| f.to_string());
                log.push_str(&format!("{played},{frame},{captured},0,packet\n"));
            }
            if let Ok(c) = played_clocks(&log) {
                proptest::prop_assert!(c.frame_ms > 0.0 && c.rows >= 2);
            }
        }
    }

    #[test]
    fn a_bad_log_is_an_error_not_a_panic() {
        for bad in [
            "",
            "x,y\n1,2\n",
            "played_ms,frame,captured_ms,delay_ms,kind\n1,a,3,4,packet\n2,,3,4,stretch\n",
            "played_ms,frame,captured_ms,delay_ms,kind\n1,1,3,4,packet\n",
            "played_ms,frame,captured_ms,delay_ms,kind\n1,1,3,4,packet\n1,2,3,4,packet\n",
        ] {
            assert!(played_clocks(bad).is_err(), "{bad:?}");
        }
    }
}
