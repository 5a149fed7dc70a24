//! `salsify audio-marks`: reads the audio barcode of a WAV file (what a receiver played) and
//! prints each mark it reads: its number, then its time in seconds; or writes the synthetic
//! voice that carries the marks (a file to feed a black-box peer's fake microphone).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use salsify_audio::{read_marks, read_wav, write_wav, AudioSource, SyntheticSpeech, SAMPLE_RATE};

use crate::usage::usage;

/// Flags of `salsify audio-marks`.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Reads: one line per mark read, `NUMBER SECONDS` (the mark's number, \
                        then when its sync tone starts, in seconds from the file's start); a \
                        count on standard error. Marks whose check bits fail are left out. \
                        The file must be 48 kHz (channels are averaged).\n\
                        Writes (--write): the synthetic voice, mark k at second k.\n\
                        Delay (--delay LOG): each mark's mouth-to-ear delay, `NUMBER \
                        DELAY_MS`, FILE being what a Salsify receiver played (OUT/audio.wav of \
                        `salsify demo`) and LOG its per-frame log (OUT/audio.csv), the sender \
                        having played the synthetic voice: the marks are read from the voice \
                        and from FILE and paired by number, on the clocks the log gives (when \
                        FILE's first sample played, when the voice's first was captured); the \
                        same reading `salsify peer chromium --audio synthetic` makes of \
                        Chromium's call."
)]
pub struct AudioMarksArgs {
    /// WAV file to read the marks of.
    #[arg(required_unless_present = "write", conflicts_with = "write")]
    pub file: Option<PathBuf>,
    /// Instead of reading: write the synthetic voice with its marks to this WAV file.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Seconds of voice to write (with --write).
    #[arg(long, default_value_t = 60, requires = "write")]
    pub seconds: u32,
    /// Read each mark's mouth-to-ear delay against the synthetic voice, the clocks from
    /// this per-frame log of the receiver that played FILE (`salsify demo`'s OUT/audio.csv).
    #[arg(long, value_name = "LOG", conflicts_with = "write")]
    pub delay: Option<PathBuf>,
    /// With --delay: also write audio_delay.csv and audio_marks.json here (and the figures
    /// into summary.json if the folder has one).
    #[arg(long, requires = "delay")]
    pub out: Option<PathBuf>,
    /// Quiet: no count on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `salsify audio-marks`.
pub fn run(args: &AudioMarksArgs) -> Result<()> {
    if let Some(out) = &args.write {
        return write_voice(out, args.seconds);
    }
    let path = args.file.as_ref().context("a WAV file to read")?;
    if let Some(log) = &args.delay {
        return read_delay(path, log, args.out.as_deref(), args.quiet);
    }
    read_file(path, args.quiet)
}

fn read_file(path: &Path, quiet: bool) -> Result<()> {
    if !path.is_file() {
        return Err(usage(format!("'{}' is not a file", path.display())));
    }
    let samples = read_wav(path)?;
    let marks = read_marks(&samples);
    for m in &marks {
        println!("{} {:.3}", m.number, m.at_seconds);
    }
    if !quiet {
        eprintln!(
            "{} marks read in {:.1} s of audio",
            marks.len(),
            samples.len() as f64 / f64::from(SAMPLE_RATE)
        );
    }
    Ok(())
}

/// What the two ends of a Salsify call's audio delay are.
const SALSIFY_AUDIO_ENDS: &str = "mouth: the sender's capture clock (the synthetic voice's sample 0 captured at the log's start of the stream); ear: the receiver's player (FILE's first sample played when the log's first frame was, and every frame after it one frame later); no device latency on either side";

fn read_delay(wav: &Path, log: &Path, out: Option<&Path>, quiet: bool) -> Result<()> {
    use salsify_peer::audio_delay::{audio_delay, write_audio_delay, Recording};
    if !wav.is_file() {
        return Err(usage(format!("'{}' is not a file", wav.display())));
    }
    let text = crate::paths::read_text("audio log", log)?;
    let clocks = salsify_peer::played_log::played_clocks(&text)
        .with_context(|| format!("'{}'", log.display()))?;
    let received = Recording {
        samples: read_wav(wav)?,
        start_s: clocks.received_start_ms / 1000.0,
    };
    let sent_start_s = clocks.sent_start_ms / 1000.0;
    let seconds = (received.start_s + received.seconds() - sent_start_s)
        .ceil()
        .max(1.0)
        + 1.0;
    let mut voice = vec![0i16; seconds as usize * SAMPLE_RATE as usize];
    SyntheticSpeech::new(0).fill(0, &mut voice);
    let sent = Recording {
        samples: voice,
        start_s: sent_start_s,
    };
    let result = audio_delay(&sent, &received, None);
    for d in &result.delays {
        println!("{} {:.2}", d.number, d.delay_ms);
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
        write_audio_delay(dir, &result, sent.start_s, None, SALSIFY_AUDIO_ENDS, None)?;
        let path = dir.join("audio_clocks.json");
        salsify_codec::output::write(&path, serde_json::to_string_pretty(&clocks)? + "\n")
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if !quiet {
        let f = &result.figures;
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        eprintln!(
            "mouth-to-ear delay by the marks: mean {} ms, p95 {} ms; {} of {} marks heard; \
             no frame in the log starts more than {:.1} ms after the one before ends (frames of {:.1} ms)",
            opt(f.audio_delay_mean_ms),
            opt(f.audio_delay_p95_ms),
            f.audio_marks_heard,
            f.audio_marks_expected,
            clocks.timeline_deviation_ms,
            clocks.frame_ms,
        );
    }
    Ok(())
}

fn write_voice(out: &Path, seconds: u32) -> Result<()> {
    if seconds == 0 {
        return Err(usage("--seconds must be at least 1"));
    }
    let mut samples = vec![0i16; seconds as usize * SAMPLE_RATE as usize];
    SyntheticSpeech::new(0).fill(0, &mut samples);
    write_wav(out, &samples).with_context(|| format!("writing '{}'", out.display()))
}
