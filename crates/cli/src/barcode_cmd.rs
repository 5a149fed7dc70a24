//! `salsify barcode`: stamps a frame-id barcode into every picture of any video and writes a
//! Y4M file (the source a black-box peer is fed), or reads the barcodes of a Y4M file back.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_codec::y4m::Y4mReader;

use crate::input::Size;
use crate::stamp::stamp_video;

/// Flags of `salsify barcode`.
#[derive(Args, Debug, Clone)]
pub struct BarcodeArgs {
    /// Video to stamp: `synthetic`, a .y4m file, `-` (Y4M on standard input), or any file
    /// ffmpeg reads.
    #[arg(long, default_value = "synthetic")]
    pub input: String,
    /// Output Y4M file.
    #[arg(long, short, required_unless_present = "read")]
    pub out: Option<PathBuf>,
    /// Picture size of the output; the input is scaled to it if it differs. Default: the
    /// input's size (640x360 for the synthetic source).
    #[arg(long)]
    pub size: Option<Size>,
    /// Frame rate of the synthetic source (a file keeps its own).
    #[arg(long, default_value_t = 30, value_parser = crate::input::parse_whole_fps)]
    pub fps: u32,
    /// Frames to write (default: the whole input; 300 for the synthetic source).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Frame id of the first picture; the next ones count up from it.
    #[arg(long, default_value_t = 0)]
    pub first_id: u64,
    /// Instead of stamping: read the barcodes of this Y4M file and print one id per frame
    /// (`-` where unreadable), then how many were read.
    #[arg(long, conflicts_with_all = ["out", "input"])]
    pub read: Option<PathBuf>,
    /// Quiet: no summary on standard error (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `salsify barcode`.
pub fn run(args: &BarcodeArgs) -> Result<()> {
    if let Some(path) = &args.read {
        return read_back(path, args.quiet);
    }
    let out = args.out.as_ref().context("--out is required")?;
    stamp_video(
        &args.input,
        args.size,
        args.fps,
        args.frames,
        args.first_id,
        out,
        args.quiet,
    )?;
    Ok(())
}

fn read_back(path: &Path, quiet: bool) -> Result<()> {
    let file = File::open(path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let mut reader = Y4mReader::new(BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("reading '{}'", path.display()))?;
    let (mut frames, mut read) = (0u64, 0u64);
    while let Some(picture) = reader
        .next_frame()
        .with_context(|| format!("frame {frames} of '{}'", path.display()))?
    {
        match salsify_barcode::read(&picture) {
            Ok(id) => {
                println!("{frames} {id}");
                read += 1;
            }
            Err(e) => println!("{frames} - ({e})"),
        }
        frames += 1;
    }
    if !quiet {
        eprintln!("salsify barcode: {read} of {frames} frames carry a readable barcode");
    }
    if frames == 0 {
        bail!("'{}' has no frames", path.display());
    }
    Ok(())
}
