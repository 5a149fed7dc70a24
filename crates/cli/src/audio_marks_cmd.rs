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
                        Writes (--write): the synthetic voice, mark k at second k."
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

fn write_voice(out: &Path, seconds: u32) -> Result<()> {
    if seconds == 0 {
        return Err(usage("--seconds must be at least 1"));
    }
    let mut samples = vec![0i16; seconds as usize * SAMPLE_RATE as usize];
    SyntheticSpeech::new(0).fill(0, &mut samples);
    write_wav(out, &samples).with_context(|| format!("writing '{}'", out.display()))
}
