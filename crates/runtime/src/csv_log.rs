//! Per-frame CSV logs, buffered and flushed on finish (and on drop, so an early exit keeps
//! what was written), written from the endpoint crate's common events, so every scheme's
//! runs log the same columns.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use salsify_endpoint::{Choice, Displayed, DropReason, SenderEvent};
use salsify_time::{Bitrate, Instant};

/// A CSV file being written.
pub struct CsvLog {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CsvLog {
    /// Creates `path` (and its folder) and writes the header line.
    pub fn create(path: &Path, header: &str) -> Result<CsvLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create folder '{}'", dir.display()))?;
        }
        let file = salsify_codec::output::create(path)
            .with_context(|| format!("cannot create '{}'", path.display()))?;
        let mut log = CsvLog {
            path: path.to_owned(),
            out: BufWriter::new(file),
        };
        log.line(format_args!("{header}"))?;
        Ok(log)
    }

    /// Writes one line.
    pub fn line(&mut self, args: std::fmt::Arguments<'_>) -> Result<()> {
        writeln!(self.out, "{args}").with_context(|| format!("writing '{}'", self.path.display()))
    }

    /// Flushes the file.
    pub fn finish(mut self) -> Result<()> {
        self.out
            .flush()
            .with_context(|| format!("writing '{}'", self.path.display()))
    }
}

/// Columns of the sender's CSV log: one line per frame sent, picture skipped or picture
/// dropped (times in µs on the machine's monotonic clock; `session` counts this process's
/// sessions from 1; empty cells where a scheme has no such notion).
pub const SENDER_CSV_HEADER: &str =
    "session,frame,picture,captured_us,sent_us,quality,bytes,fragments,choice,budget,recovery,keyframe";

/// Columns of the receiver's CSV log. `display_us` and `first_sent_us` are µs on the
/// machine's monotonic clock; `delay_us` is their difference (meaningful when sender and
/// receiver share a machine; empty where the scheme's wire carries no send time). States
/// are the functional codec's (empty for other codecs); width and height are the coded size.
pub const RECEIVER_CSV_HEADER: &str = "session,frame,display_us,first_sent_us,delay_us,\
source_state,target_state,bytes,keyframe,width,height";

/// The header of `rates.csv`: each change of a rate-controlled sender's encoder and pacing
/// rates (bit/s), as the simulator also writes it, so a live run and its simulation can be
/// compared where they part ways.
pub const RATES_CSV_HEADER: &str = "session,at_us,encoder_bps,pacing_bps";

/// One line of `rates.csv` (without its newline), the same for a live sender and `salsify sim`.
pub fn rates_line(session: u32, at: Instant, encoder: Bitrate, pacing: Bitrate) -> String {
    format!(
        "{session},{},{},{}",
        at.as_micros(),
        encoder.as_bps(),
        pacing.as_bps()
    )
}

/// The sender's per-frame log (`path`) and its rate log (`rates.csv` beside it), written from
/// the common [`SenderEvent`]s.
pub struct SenderLog {
    frames: CsvLog,
    rates: CsvLog,
}

impl SenderLog {
    /// Creates `path` and `rates.csv` in the same folder, with their headers.
    pub fn create(path: &Path) -> Result<Self> {
        Ok(SenderLog {
            frames: CsvLog::create(path, SENDER_CSV_HEADER)?,
            rates: CsvLog::create(&path.with_file_name("rates.csv"), RATES_CSV_HEADER)?,
        })
    }

    /// Logs `event` of session `session`, if it is about a picture.
    pub fn event(&mut self, session: u32, event: &SenderEvent) -> Result<()> {
        let opt = |v: Option<usize>| v.map_or(String::new(), |b| b.to_string());
        match event {
            SenderEvent::FrameSent(f) => self.frames.line(format_args!(
                "{session},{},{},{},{},{},{},{},{},{},{},{}",
                f.frame,
                f.picture,
                f.captured.as_micros(),
                f.at.as_micros(),
                f.quality.index(),
                f.bytes,
                f.fragments,
                choice(f.choice),
                opt(f.budget),
                u8::from(f.recovery),
                u8::from(f.keyframe),
            )),
            SenderEvent::PictureSkipped {
                picture,
                captured,
                at,
                budget,
            } => self.frames.line(format_args!(
                "{session},,{picture},{},{},,0,0,skipped,{},0,0",
                captured.as_micros(),
                at.as_micros(),
                opt(*budget),
            )),
            SenderEvent::PictureDropped {
                picture,
                at,
                reason,
            } => self.frames.line(format_args!(
                "{session},,{picture},,{},,0,0,dropped:{},,0,0",
                at.as_micros(),
                drop_reason(*reason),
            )),
            SenderEvent::Target {
                at,
                encoder,
                pacing,
            } => self.rates.line(format_args!(
                "{}",
                rates_line(session, *at, *encoder, *pacing)
            )),
            _ => Ok(()),
        }
    }

    /// Flushes both files.
    pub fn finish(self) -> Result<()> {
        self.frames.finish()?;
        self.rates.finish()
    }
}

fn choice(c: Choice) -> &'static str {
    match c {
        Choice::Better => "better",
        Choice::Worse => "worse",
        Choice::ForcedWorse => "forcedworse",
        Choice::Only => "only",
    }
}

fn drop_reason(r: DropReason) -> &'static str {
    match r {
        DropReason::EncoderBusy => "encoder-busy",
        DropReason::PacerQueue => "pacer-queue",
        DropReason::RateControl => "rate-control",
        DropReason::Paused => "paused",
        DropReason::Reset => "reset",
        DropReason::WouldBeLate => "would-be-late",
        DropReason::Failed => "failed",
        _ => "other",
    }
}

/// The receiver's per-frame log, written from the common [`Displayed`].
pub struct ReceiverLog(CsvLog);

impl ReceiverLog {
    /// Creates `path` with its header.
    pub fn create(path: &Path) -> Result<Self> {
        CsvLog::create(path, RECEIVER_CSV_HEADER).map(ReceiverLog)
    }

    /// Logs frame `d` of session `session`, shown at `at`.
    pub fn shown(&mut self, session: u32, at: Instant, d: &Displayed) -> Result<()> {
        let (sent, delay) = match d.first_sent_at {
            Some(t) => (
                t.as_micros().to_string(),
                at.saturating_duration_since(t).as_micros().to_string(),
            ),
            None => (String::new(), String::new()),
        };
        let (source, target) = match d.states {
            Some((s, t)) => (s.to_string(), t.to_string()),
            None => (String::new(), String::new()),
        };
        self.0.line(format_args!(
            "{session},{},{},{sent},{delay},{source},{target},{},{},{},{}",
            d.frame,
            at.as_micros(),
            d.bytes,
            u8::from(d.keyframe),
            d.picture.width(),
            d.picture.height(),
        ))
    }

    /// Flushes the file.
    pub fn finish(self) -> Result<()> {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_changes_go_to_rates_csv_beside_the_frame_log() {
        let dir = std::env::temp_dir().join(format!("salsify-csvlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = SenderLog::create(&dir.join("sender.csv")).unwrap();
        let target = SenderEvent::Target {
            at: Instant::from_millis(1500),
            encoder: Bitrate::kbps(800),
            pacing: Bitrate::kbps(1100),
        };
        log.event(2, &target).unwrap();
        log.finish().unwrap();
        let rates = std::fs::read_to_string(dir.join("rates.csv")).unwrap();
        assert_eq!(
            rates,
            format!("{RATES_CSV_HEADER}\n2,1500000,800000,1100000\n")
        );
        let frames = std::fs::read_to_string(dir.join("sender.csv")).unwrap();
        assert_eq!(frames.lines().count(), 1, "only the header: {frames}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
