//! What the receiver played, frame by frame: the log the metrics read.

use std::io::{self, Write};

use salsify_time::Instant;

/// How a played frame was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayedKind {
    /// From its own packet, in time.
    Packet,
    /// From its own packet, played faster (time-scale compressed, pitch kept) to bring the
    /// delay back down after a stall.
    Accelerated,
    /// From the next packet's in-band FEC (its own was lost or late).
    Fec,
    /// No packet in time: concealed, or the silence DTX left (told apart afterwards from
    /// the packets' sequence numbers, see [`crate::metrics`]).
    Missing,
    /// A frame inserted to lengthen the playout delay (the stream pauses for it).
    Stretch,
    /// A frame inserted while the stream's next packet was late and nothing newer had
    /// arrived, neither audio nor video (the link stalled): the stream waits for it rather
    /// than losing it. What the listener hears is concealment; no audio is lost.
    Stall,
}

impl PlayedKind {
    /// Its name in the audio log.
    pub fn name(self) -> &'static str {
        match self {
            PlayedKind::Packet => "packet",
            PlayedKind::Accelerated => "accelerated",
            PlayedKind::Fec => "fec",
            PlayedKind::Missing => "missing",
            PlayedKind::Stretch => "stretch",
            PlayedKind::Stall => "stall",
        }
    }
}

/// One frame the receiver played.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayedFrame {
    /// When it started playing (receiver's clock).
    pub at: Instant,
    /// The stream frame it plays (`None` for a stretch or stall frame).
    pub frame: Option<u64>,
    /// When what it plays was captured (a stretch or stall frame: the capture time the
    /// stream resumes at). It plays until the next frame starts: an accelerated frame for
    /// less than a frame's length.
    pub captured: Instant,
    /// How it was made.
    pub kind: PlayedKind,
}

/// A packet the receiver got: which frame, which sequence number, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The frame it carries.
    pub frame: u64,
    /// Its sequence number.
    pub seq: u32,
    /// When it arrived.
    pub at: Instant,
}

/// Columns of [`write_played_csv`].
pub const AUDIO_CSV_HEADER: &str = "played_ms,frame,captured_ms,delay_ms,kind";

/// The per-frame audio log: one line per frame played (a stretch frame has no frame number),
/// times in ms from `base` (a simulated run's zero, a live call's start).
pub fn write_played_csv(
    played: &[PlayedFrame],
    base: Instant,
    mut out: impl Write,
) -> io::Result<()> {
    writeln!(out, "{AUDIO_CSV_HEADER}")?;
    for p in played {
        write_played_row(p, base, &mut out)?;
    }
    Ok(())
}

/// One line of [`write_played_csv`]'s log (after its header), for a log written as the
/// frames play.
pub fn write_played_row(p: &PlayedFrame, base: Instant, mut out: impl Write) -> io::Result<()> {
    let ms = |t: Instant| (t.as_micros() as f64 - base.as_micros() as f64) / 1000.0;
    let kind = p.kind.name();
    let frame = p.frame.map_or(String::new(), |f| f.to_string());
    writeln!(
        out,
        "{:.3},{frame},{:.3},{:.3},{kind}",
        ms(p.at),
        ms(p.captured),
        ms(p.at) - ms(p.captured),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_counts_from_its_base() {
        let played = [
            PlayedFrame {
                at: Instant::from_millis(1_100),
                frame: Some(3),
                captured: Instant::from_millis(1_060),
                kind: PlayedKind::Fec,
            },
            PlayedFrame {
                at: Instant::from_millis(1_120),
                frame: None,
                captured: Instant::from_millis(1_080),
                kind: PlayedKind::Stretch,
            },
        ];
        let mut out = Vec::new();
        write_played_csv(&played, Instant::from_millis(1_000), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "{AUDIO_CSV_HEADER}\n100.000,3,60.000,40.000,fec\n120.000,,80.000,40.000,stretch\n"
            )
        );
    }
}
