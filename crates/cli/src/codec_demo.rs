//! `salsify codec-demo`: the functional codec at work on a clip, frame by frame.
//!
//! Each frame is encoded twice from the same state (a better and a worse quality, as Salsify's
//! sender does), one of the two is chosen by a simple byte budget, and the receiver's decoder
//! decodes it from its own copy of the state; the demo checks that the decoder's picture is
//! the encoder's reconstruction and prints sizes and quality. Optionally writes the chosen
//! stream as IVF (playable with ffplay or vpxdec) and the decoded video as Y4M.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use salsify_codec::ivf::{IvfHeader, IvfWriter};
use salsify_codec::y4m::{Y4mHeader, Y4mWriter};
use salsify_codec::{Decoder, Encoder, Quality, State};
use salsify_eval::metrics::{ssim_luma, ssim_to_db};

use crate::input::{Size, VideoInput};

/// Options of `salsify codec-demo`.
#[derive(clap::Args, Debug)]
pub struct CodecDemoArgs {
    /// Video: `synthetic` (built in), a .y4m file, `-` for Y4M on stdin, or any file ffmpeg reads.
    #[arg(long, default_value = "synthetic")]
    input: String,
    /// Picture size of the synthetic source.
    #[arg(long, default_value = "640x360")]
    size: Size,
    /// Frame rate of the synthetic source.
    #[arg(long, default_value_t = 30.0, value_parser = crate::input::parse_fps)]
    fps: f64,
    /// Frames to code.
    #[arg(long, default_value_t = 60)]
    frames: usize,
    /// Bytes a frame may take (the choice between the two qualities; 0 = always the better).
    #[arg(long, default_value_t = 12_000)]
    budget: usize,
    /// Write the chosen compressed stream here as IVF.
    #[arg(long)]
    ivf: Option<PathBuf>,
    /// Write the decoded pictures here as Y4M.
    #[arg(long)]
    y4m: Option<PathBuf>,
    /// No line per frame (the summary is still printed).
    #[arg(long, short)]
    quiet: bool,
}

impl Default for CodecDemoArgs {
    fn default() -> Self {
        CodecDemoArgs {
            input: "synthetic".into(),
            size: Size {
                width: 640,
                height: 360,
            },
            fps: 30.0,
            frames: 60,
            budget: 12_000,
            ivf: None,
            y4m: None,
            quiet: false,
        }
    }
}

/// Runs the demo and prints one line per frame and a summary.
pub fn run(args: &CodecDemoArgs) -> Result<()> {
    if args.frames == 0 {
        bail!("--frames must be at least 1");
    }
    crate::paths::check_outputs(&[
        ("--ivf", args.ivf.as_deref()),
        ("--y4m", args.y4m.as_deref()),
    ])?;
    crate::runtime::display::check_distinct(&[
        ("--ivf", args.ivf.as_deref()),
        ("--y4m", args.y4m.as_deref()),
    ])?;
    let mut input = VideoInput::open(&args.input, args.size, args.fps)?;
    let size = input.size;
    let mut encoder = Encoder::new(size.width, size.height)?;
    let mut decoder = Decoder::new()?;
    let mut ivf = match &args.ivf {
        Some(path) => {
            let (rate, scale) = frame_rate(input.fps);
            let header = IvfHeader::new(size.width as u16, size.height as u16, rate, scale);
            Some(IvfWriter::new(create(path)?, header)?)
        }
        None => None,
    };
    let mut y4m = match &args.y4m {
        Some(path) => {
            let (num, den) = frame_rate(input.fps);
            let rate = salsify_codec::y4m::Rational::new(num, den);
            Some(Y4mWriter::new(
                create(path)?,
                Y4mHeader::new(size.width, size.height, rate),
            )?)
        }
        None => None,
    };
    println!("salsify codec demo: {} ({size})", input.name);
    if !args.quiet {
        println!("frame  better(q,bytes)  worse(q,bytes)  sent        SSIM dB");
    }
    let (mut sender_state, mut receiver_state) = (State::initial(), State::initial());
    let mut quality = 64i32;
    let (mut total_bytes, mut ssim_sum, mut shown) = (0usize, 0.0, 0usize);
    for n in 0..args.frames {
        let Some(image) = input.next_frame()? else {
            break;
        };
        let lo = Quality::clamped(quality - 17, Quality::new(3)?, Quality::WORST);
        let hi = Quality::clamped(quality + 23, Quality::new(3)?, Quality::WORST);
        let better = encoder.encode(&sender_state, &image, lo)?;
        let worse = encoder.encode(&sender_state, &image, hi)?;
        let line = format!(
            "{n:5}  q{:<3} {:>8}     q{:<3} {:>8}    ",
            better.quality.index(),
            better.len(),
            worse.quality.index(),
            worse.len()
        );
        let chosen = if args.budget == 0 || better.len() <= args.budget {
            better
        } else {
            worse
        };
        let (state, picture) = decoder
            .decode(&receiver_state, &chosen.bytes)
            .context("the receiver could not decode the chosen frame")?;
        if state.hash() != chosen.target.hash() {
            bail!("frame {n}: decoder state differs from the encoder's");
        }
        let ssim = ssim_luma(&image, &picture)?;
        if !args.quiet {
            println!(
                "{line}q{:<3} {:>6}  {:6.2}",
                chosen.quality.index(),
                chosen.len(),
                ssim_to_db(ssim)
            );
        }
        if let Some(w) = &mut ivf {
            w.write_frame(n as u64, chosen.vp8())?;
        }
        if let Some(w) = &mut y4m {
            w.write_frame(&picture)?;
        }
        total_bytes += chosen.len();
        ssim_sum += ssim;
        shown += 1;
        quality = i32::from(chosen.quality.index());
        sender_state = chosen.target;
        receiver_state = state;
    }
    if shown == 0 {
        bail!("no frame of '{}' was coded", input.name);
    }
    let seconds = shown as f64 / input.fps;
    println!(
        "{shown} frames, {:.0} kbit/s at {} fps, mean SSIM {:.2} dB; every decoded picture matched the encoder's reconstruction",
        total_bytes as f64 * 8.0 / seconds / 1000.0,
        input.fps,
        ssim_to_db(ssim_sum / shown as f64)
    );
    if let Some(w) = ivf {
        w.finish_seekable()?;
        println!(
            "compressed stream: {}",
            args.ivf.as_ref().unwrap().display()
        );
    }
    if let Some(w) = y4m {
        w.finish()?;
        println!("decoded video: {}", args.y4m.as_ref().unwrap().display());
    }
    Ok(())
}

fn create(path: &Path) -> Result<File> {
    let file = salsify_codec::output::create(path)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
    Ok(file)
}

/// A frame rate as a fraction: whole rates exactly, others to a thousandth.
fn frame_rate(fps: f64) -> (u32, u32) {
    if (fps - fps.round()).abs() < 1e-9 {
        (fps.round() as u32, 1)
    } else {
        ((fps * 1000.0).round() as u32, 1000)
    }
}
