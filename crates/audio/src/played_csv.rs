//! The per-frame audio log (`audio.csv`, written by [`crate::write_played_csv`]) read back,
//! so the report and the replay dashboard draw a finished run's audio from its files.
//!
//! Columns are found by their names in the header; columns it does not know are ignored (a
//! newer log may carry more), and a `kind` it does not know is read as a frame played from
//! its packet (a newer player may name more ways of playing one).

use salsify_time::Instant;

use crate::record::{PlayedFrame, PlayedKind};

/// Largest time a log may hold, ms (about 31 years): keeps every time an [`Instant`] with
/// room for arithmetic.
const MAX_MS: f64 = 1e12;

/// What is wrong with an audio log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayedCsvError {
    /// The header lacks a column the log needs.
    #[error("audio.csv: no '{0}' column in the header")]
    MissingColumn(&'static str),
    /// A line does not parse.
    #[error("audio.csv line {line}: {message}")]
    Line {
        /// Line number, from 1 (the header).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The frames of an `audio.csv`, with its zero as [`Instant::ZERO`] (the times the log
/// counts from: a simulated run's start, a live run's first scored picture), sorted by when
/// they played. Frames played or captured before the log's zero (a live sender that started
/// before the receiver) are left out: no [`Instant`] is earlier than zero.
pub fn read_played_csv(text: &str) -> Result<Vec<PlayedFrame>, PlayedCsvError> {
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines
        .next()
        .map_or(vec![], |(_, h)| h.split(',').map(str::trim).collect());
    let column = |name: &'static str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(PlayedCsvError::MissingColumn(name))
    };
    let (played, frame, captured, kind) = (
        column("played_ms")?,
        column("frame")?,
        column("captured_ms")?,
        column("kind")?,
    );
    let mut out = Vec::new();
    for (index, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| PlayedCsvError::Line {
            line: index + 1,
            message,
        };
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |i: usize, name: &str| {
            cells
                .get(i)
                .copied()
                .ok_or_else(|| bad(format!("no '{name}' cell")))
        };
        let ms = |i: usize, name: &str| -> Result<f64, PlayedCsvError> {
            let text = cell(i, name)?;
            let v: f64 = text
                .parse()
                .map_err(|_| bad(format!("{name} '{text}' is not a number")))?;
            if !v.is_finite() || v.abs() > MAX_MS {
                return Err(bad(format!("{name} '{text}' is out of range")));
            }
            Ok(v)
        };
        let (at, from) = (ms(played, "played_ms")?, ms(captured, "captured_ms")?);
        let number = cell(frame, "frame")?;
        let frame = match number {
            "" => None,
            n => Some(
                n.parse::<u64>()
                    .map_err(|_| bad(format!("frame '{n}' is not a frame number")))?,
            ),
        };
        let kind = match cell(kind, "kind")? {
            "accelerated" => PlayedKind::Accelerated,
            "fec" => PlayedKind::Fec,
            "missing" => PlayedKind::Missing,
            "stretch" => PlayedKind::Stretch,
            "stall" => PlayedKind::Stall,
            // "packet", and ways of playing a frame this reader does not know.
            _ => PlayedKind::Packet,
        };
        if at < 0.0 || from < 0.0 {
            continue;
        }
        let instant = |ms: f64| Instant::from_micros((ms * 1000.0).round() as u64);
        out.push(PlayedFrame {
            at: instant(at),
            frame,
            captured: instant(from),
            kind,
        });
    }
    out.sort_by_key(|p| p.at);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{write_played_csv, AUDIO_CSV_HEADER};
    use proptest::prelude::*;

    fn write(played: &[PlayedFrame], base: Instant) -> String {
        let mut out = Vec::new();
        write_played_csv(played, base, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn frame(at_ms: u64, frame: Option<u64>, kind: PlayedKind) -> PlayedFrame {
        PlayedFrame {
            at: Instant::from_millis(at_ms),
            frame,
            captured: Instant::from_millis(at_ms - 60),
            kind,
        }
    }

    /// Read back as written, from the log's zero: frames before it are left out.
    #[test]
    fn a_log_reads_back_from_its_base() {
        let played = [
            frame(1_000, Some(1), PlayedKind::Packet),
            frame(1_100, Some(2), PlayedKind::Fec),
            frame(1_180, None, PlayedKind::Stretch),
            frame(1_200, Some(3), PlayedKind::Missing),
        ];
        let text = write(&played, Instant::from_millis(1_050));
        // The first was played, the second captured (at 1 040 ms) before the base.
        assert_eq!(
            read_played_csv(&text).unwrap(),
            [
                frame(130, None, PlayedKind::Stretch),
                frame(150, Some(3), PlayedKind::Missing)
            ]
        );
    }

    /// A newer log's extra column and kind are read, not refused: the kind as played from
    /// its packet.
    #[test]
    fn extra_columns_and_kinds_are_taken() {
        let text = "kind,played_ms,frame,captured_ms,delay_ms,length_ms\n\
                    accelerate,140.000,2,80.000,60.000,10.000\n\
                    packet,100.000,1,40.000,60.000,20.000\n";
        assert_eq!(
            read_played_csv(text).unwrap(),
            [
                frame(100, Some(1), PlayedKind::Packet),
                frame(140, Some(2), PlayedKind::Packet)
            ]
        );
    }

    #[test]
    fn bad_logs_say_what_is_wrong() {
        assert_eq!(
            read_played_csv("played_ms,frame,kind\n"),
            Err(PlayedCsvError::MissingColumn("captured_ms"))
        );
        assert_eq!(
            read_played_csv(""),
            Err(PlayedCsvError::MissingColumn("played_ms"))
        );
        for (line, says) in [
            ("x,1,0,0,packet", "played_ms 'x'"),
            ("1,-1,0,0,packet", "frame '-1'"),
            ("1,1,inf,0,packet", "captured_ms 'inf' is out of range"),
            ("1e13,1,0,0,packet", "out of range"),
            ("1,1", "no 'captured_ms' cell"),
        ] {
            let e = read_played_csv(&format!("{AUDIO_CSV_HEADER}\n{line}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("line 2"), "{line}: {e}");
        }
    }

    fn kind() -> impl Strategy<Value = PlayedKind> {
        prop_oneof![
            Just(PlayedKind::Packet),
            Just(PlayedKind::Fec),
            Just(PlayedKind::Missing),
            Just(PlayedKind::Stretch),
            Just(PlayedKind::Accelerated),
            Just(PlayedKind::Stall),
        ]
    }

    proptest! {
        /// Whatever the player wrote reads back exactly (times in µs, written as ms with
        /// three decimals).
        #[test]
        fn what_is_written_reads_back(
            frames in proptest::collection::vec(
                (0u64..10_000_000_000, 0u64..2_000_000, 0u64..1_000_000, kind()),
                0..40,
            ),
        ) {
            let mut played: Vec<PlayedFrame> = frames
                .iter()
                .map(|&(at, delay, n, kind)| PlayedFrame {
                    at: Instant::from_micros(at + delay),
                    frame: (!matches!(kind, PlayedKind::Stretch | PlayedKind::Stall)).then_some(n),
                    captured: Instant::from_micros(at),
                    kind,
                })
                .collect();
            played.sort_by_key(|p| p.at);
            let text = write(&played, Instant::ZERO);
            prop_assert_eq!(read_played_csv(&text).unwrap(), played);
        }

        /// Any text is read or refused, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in "(played_ms,frame,captured_ms,kind\n)?[-0-9a-z.,e\n]{0,200}") {
            let _ = read_played_csv(&text);
        }
    }
}
