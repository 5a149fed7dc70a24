//! `salsify bench codec`: what one Salsify frame costs, and what each quality buys.
//!
//! Everything runs on one thread, so the figures are per core. Timings are wall-clock medians
//! and 95th percentiles over the frames of the input, measured side by side in one run. Per
//! size and speed it also fits the encode cost as `a + b x bytes` (the simulator's
//! `encode_us_per_megapixel` and `encode_us_per_kilobyte`) and reports the operating point the
//! sender's encode-time rule would settle at on this machine: the finest quantizer whose
//! encodes take at most 75% of the frame interval, for Salsify-2c (two encodes at once) and
//! Salsify-1c (one after the other).

use std::time::Instant;

use anyhow::{Context, Result};
use salsify_codec::{Decoder, Encoder, EncoderConfig, Image, Quality, State};
use salsify_eval::metrics::{mean, percentile, psnr_luma, ssim_luma, ssim_to_db};

use crate::input::{Size, VideoInput};

/// Options of `salsify bench codec`.
#[derive(clap::Args, Debug)]
pub struct CodecBenchArgs {
    /// Video to encode: `synthetic`, a .y4m file, `-` for Y4M on stdin, or any file ffmpeg
    /// reads (e.g. FourPeople_1280x720_60.mp4).
    #[arg(long, default_value = "synthetic")]
    input: String,
    /// Picture sizes of the synthetic source, comma-separated (each measured in turn).
    #[arg(long, value_delimiter = ',', default_value = "1280x720")]
    size: Vec<Size>,
    /// Frame rate of the synthetic source.
    #[arg(long, default_value_t = 60.0, value_parser = crate::input::parse_fps)]
    fps: f64,
    /// Frames to use (read into memory first; 1 to 3600).
    #[arg(long, default_value_t = 120)]
    frames: usize,
    /// libvpx cpu-used speeds to compare, comma-separated (negative: fixed speed).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "-8"
    )]
    cpu_used: Vec<i32>,
    /// libvpx static thresholds to compare, comma-separated (0 = off).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    static_threshold: Vec<u32>,
    /// Quantizer indices (0..=127) for the quality table, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16,32,48,64,80,96,112")]
    qualities: Vec<u8>,
    /// Quiet: no progress lines on standard error (the figures still go to standard output).
    #[arg(long, short)]
    quiet: bool,
}

/// Median and 95th percentile of a set of milliseconds.
struct Spread {
    median: f64,
    p95: f64,
}

fn spread(ms: &[f64]) -> Spread {
    Spread {
        median: percentile(ms, 50.0).unwrap_or(f64::NAN),
        p95: percentile(ms, 95.0).unwrap_or(f64::NAN),
    }
}

fn millis_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Most frames `--frames` may ask for (all are held in memory).
const MAX_FRAMES: usize = 3600;

impl CodecBenchArgs {
    /// Refuses bad settings before any frame is read.
    fn check(&self) -> Result<()> {
        if !(1..=MAX_FRAMES).contains(&self.frames) {
            anyhow::bail!("--frames {}: give 1 to {MAX_FRAMES}", self.frames);
        }
        for &q in &self.qualities {
            Quality::new(q).map_err(|e| anyhow::anyhow!("--qualities: {e}"))?;
        }
        for &c in &self.cpu_used {
            if !(-16..=-1).contains(&c) {
                anyhow::bail!("--cpu-used {c} is not in -16..=-1");
            }
        }
        if self.size.is_empty() {
            anyhow::bail!("--size needs at least one size");
        }
        Ok(())
    }
}

/// Runs the benchmark and prints markdown tables.
pub fn run(args: &CodecBenchArgs) -> Result<()> {
    args.check()?;
    if args.size.len() > 1 && args.input != "synthetic" {
        anyhow::bail!("several --size values need --input synthetic (a file has its own size)");
    }
    for &size in &args.size {
        run_size(args, size)?;
    }
    Ok(())
}

/// The whole benchmark at one picture size.
fn run_size(args: &CodecBenchArgs, size: Size) -> Result<()> {
    let mut input = VideoInput::open(&args.input, size, args.fps)?;
    let progress = |line: String| {
        if !args.quiet {
            eprintln!("{line}");
        }
    };
    progress(format!(
        "reading {} frames of {} ...",
        args.frames, input.name
    ));
    let frames = input.read_frames(args.frames)?;
    let size = input.size;
    println!(
        "# Codec benchmark: {} ({size}, {} frames), one thread\n",
        input.name,
        frames.len()
    );
    let settings = args
        .cpu_used
        .iter()
        .flat_map(|&c| args.static_threshold.iter().map(move |&t| (c, t)));
    for (cpu_used, static_threshold) in settings {
        let config = EncoderConfig {
            cpu_used,
            static_threshold,
            ..EncoderConfig::new(size.width, size.height)
        };
        config.validate()?;
        progress(format!("cpu-used {cpu_used}: Salsify frames ..."));
        salsify_frames(config, &frames)?;
        progress(format!(
            "cpu-used {cpu_used}: state restore, read-back, decode ..."
        ));
        state_handling(config, &frames)?;
        progress(format!("cpu-used {cpu_used}: quality table ..."));
        let rows = quality_table(config, &frames, &args.qualities)?;
        operating_point(config, input.fps, &rows);
    }
    Ok(())
}

/// One row of the quality table, kept for the operating point.
struct QualityRow {
    quality: u8,
    median_ms: f64,
    mean_bytes: f64,
    ssim_db: f64,
    /// (bytes, ms) of every timed encode.
    encodes: Vec<(f64, f64)>,
}

/// Fits the cost model and prints where the encode-time rule would settle on this machine.
fn operating_point(config: EncoderConfig, fps: f64, rows: &[QualityRow]) {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .flat_map(|r| r.encodes.iter().copied())
        .collect();
    let megapixels = f64::from(config.width) * f64::from(config.height) / 1e6;
    println!(
        "## cpu-used {}: cost model and operating point at {fps:.0} frames/s
",
        config.cpu_used
    );
    match least_squares(&points) {
        Some((a_ms, b_ms_per_byte)) => println!(
            "encode ~ {a_ms:.2} ms + {:.3} ms per KB over {} encodes: for `salsify sim`, \
             `[cost]` encode_us_per_megapixel = {:.0}, encode_us_per_kilobyte = {:.0}\n",
            b_ms_per_byte * 1000.0,
            points.len(),
            a_ms * 1000.0 / megapixels,
            b_ms_per_byte * 1e6,
        ),
        None => println!("(too few encodes to fit a cost model)\n"),
    }
    let target = 0.75 * 1000.0 / fps;
    let ms_at = |q: u8| {
        rows.iter()
            .find(|r| r.quality >= q)
            .or(rows.last())
            .map_or(f64::NAN, |r| r.median_ms)
    };
    let worse_step = salsify_transport::SenderConfig::default().worse_step;
    let finest = |parallel: bool| {
        rows.iter().find(|r| {
            let worse = ms_at(r.quality.saturating_add(worse_step));
            let job = match parallel {
                true => r.median_ms.max(worse),
                false => r.median_ms + worse,
            };
            job <= target
        })
    };
    println!("| variant | finest quantizer within {target:.1} ms | bytes/frame | SSIM dB |");
    println!("|---|---|---|---|");
    for (name, parallel) in [("Salsify-2c", true), ("Salsify-1c", false)] {
        match finest(parallel) {
            Some(r) => println!(
                "| {name} | q{} | {:.0} | {:.2} |",
                r.quality, r.mean_bytes, r.ssim_db
            ),
            None => println!("| {name} | none of the qualities measured | | |"),
        }
    }
    println!();
}

/// Intercept and slope of the least-squares line through `points`.
fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(sxx, sxy), (x, y)| {
        (sxx + (x - mx).powi(2), sxy + (x - mx) * (y - my))
    });
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

/// The work of one Salsify-1c frame: two encodes from one state (each restoring it and
/// reading its result back), as the sender does for every camera frame.
fn salsify_frames(config: EncoderConfig, frames: &[Image]) -> Result<()> {
    let q = |i| Quality::new(i).expect("constant in range");
    let (better, worse) = (q(64 - 17), q(64 + 23));
    println!(
        "## cpu-used {} static-threshold {}: one Salsify frame (2 encodes from one state)\n",
        config.cpu_used, config.static_threshold
    );
    println!("| qualities | median ms | p95 ms | frames | median fits 60 fps (16.7 ms) |");
    println!("|---|---|---|---|---|");
    // The second row isolates the cost of switching the quantizer between the two encodes.
    for (a, b) in [(better, worse), (q(64), q(64))] {
        let ms = two_encodes_per_frame(config, frames, a, b)?;
        let s = spread(&ms);
        println!(
            "| q{} + q{} | {:.2} | {:.2} | {} | {} |",
            a.index(),
            b.index(),
            s.median,
            s.p95,
            ms.len(),
            if s.median <= 1000.0 / 60.0 {
                "yes"
            } else {
                "no"
            }
        );
    }
    println!();
    Ok(())
}

/// Milliseconds per frame for two encodes of each frame from the same state.
fn two_encodes_per_frame(
    config: EncoderConfig,
    frames: &[Image],
    a: Quality,
    b: Quality,
) -> Result<Vec<f64>> {
    let mut encoder = Encoder::with_config(config)?;
    let mut source = encoder.encode(&State::initial(), &frames[0], a)?.target;
    let mut ms = Vec::new();
    for (i, image) in frames.iter().enumerate().skip(1) {
        let t = Instant::now();
        let first = encoder.encode(&source, image, a)?;
        let second = encoder.encode(&source, image, b)?;
        ms.push(millis_since(t));
        // Alternate the choice so the next frame's source is sometimes not the last encode.
        source = if i % 2 == 0 {
            first.target
        } else {
            second.target
        };
    }
    Ok(ms)
}

/// Times restoring a state into the encoder, reading one back, and decoding.
fn state_handling(config: EncoderConfig, frames: &[Image]) -> Result<()> {
    let mut encoder = Encoder::with_config(config)?;
    let quality = Quality::new(64)?;
    let mut encoded = Vec::new();
    let mut state = State::initial();
    for image in frames {
        let f = encoder.encode(&state, image, quality)?;
        state = f.target.clone();
        encoded.push(f);
    }
    let (mut restore, mut readback) = (Vec::new(), Vec::new());
    for pair in encoded.windows(2) {
        // Alternate between two states so every load really copies.
        for f in pair {
            let t = Instant::now();
            encoder.load_state(&f.target)?;
            restore.push(millis_since(t));
        }
        let t = Instant::now();
        encoder.read_state()?;
        readback.push(millis_since(t));
    }
    let mut decoder = Decoder::new()?;
    let mut state = State::initial();
    let mut decode = Vec::new();
    for f in &encoded {
        let t = Instant::now();
        let (next, _) = decoder
            .decode(&state, &f.bytes)
            .context("decoding the benchmark's own stream")?;
        decode.push(millis_since(t));
        state = next;
    }
    let row = |name: &str, ms: &[f64]| {
        let s = spread(ms);
        println!("| {name} | {:.3} | {:.3} |", s.median, s.p95);
    };
    println!(
        "## cpu-used {}: state handling and decoding (q64 stream)\n",
        config.cpu_used
    );
    println!("| operation | median ms | p95 ms |");
    println!("|---|---|---|");
    row(
        "restore a state into the encoder (copy + hash check)",
        &restore,
    );
    row("read a state back (copy + hash)", &readback);
    row(
        "decode (state load when needed, decode, read-back, hash)",
        &decode,
    );
    println!();
    Ok(())
}

/// Per quality: encode time, bytes, and the reconstruction's SSIM and PSNR against the source.
fn quality_table(
    config: EncoderConfig,
    frames: &[Image],
    qualities: &[u8],
) -> Result<Vec<QualityRow>> {
    let mut rows = Vec::new();
    println!(
        "## cpu-used {}: quality table (a stream at one quantizer)\n",
        config.cpu_used
    );
    println!("| q | median ms/encode | p95 ms | mean bytes/frame | SSIM dB | PSNR dB |");
    println!("|---|---|---|---|---|---|");
    for &q in qualities {
        let quality = Quality::new(q)?;
        let mut encoder = Encoder::with_config(config)?;
        let mut state = State::initial();
        let (mut ms, mut bytes, mut ssim, mut psnr) = (vec![], vec![], vec![], vec![]);
        for (i, image) in frames.iter().enumerate() {
            let t = Instant::now();
            let f = encoder.encode(&state, image, quality)?;
            if i > 0 {
                // The keyframe is not a per-frame cost.
                ms.push(millis_since(t));
                bytes.push(f.len() as f64);
            }
            let recon = f
                .target
                .picture()
                .context("encoded frame without a picture")?;
            ssim.push(ssim_luma(image, &recon)?);
            psnr.push(psnr_luma(image, &recon)?);
            state = f.target;
        }
        let s = spread(&ms);
        let row = QualityRow {
            quality: quality.effective().index(),
            median_ms: s.median,
            mean_bytes: mean(&bytes).unwrap_or(f64::NAN),
            ssim_db: ssim_to_db(mean(&ssim).unwrap_or(f64::NAN)),
            encodes: bytes.iter().copied().zip(ms.iter().copied()).collect(),
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} |",
            row.quality,
            s.median,
            s.p95,
            row.mean_bytes,
            row.ssim_db,
            mean(&psnr).unwrap_or(f64::NAN),
        );
        rows.push(row);
    }
    println!();
    rows.sort_by_key(|r| r.quality);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: CodecBenchArgs,
    }

    fn args(extra: &[&str]) -> CodecBenchArgs {
        let mut all = vec!["salsify", "--input", "/nonexistent/clip.y4m"];
        all.extend_from_slice(extra);
        Wrapper::try_parse_from(all).unwrap().args
    }

    /// Bad settings fail before the clip is read (the clip here does not even exist).
    #[test]
    fn bad_settings_fail_before_reading_the_clip() {
        for (flags, says) in [
            (&["--qualities", "200"][..], "--qualities"),
            (&["--frames", "0"][..], "--frames"),
            (&["--frames", "1000000000"][..], "--frames"),
            (&["--cpu-used", "-99"][..], "--cpu-used"),
        ] {
            let err = run(&args(flags)).unwrap_err().to_string();
            assert!(err.contains(says), "{flags:?}: {err}");
        }
        let err = run(&args(&[])).unwrap_err().to_string();
        assert!(err.contains("clip.y4m"), "{err}");
    }
}
