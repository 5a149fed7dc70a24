//! `salsify bench codec`: what one Salsify frame costs, and what each quality buys.
//!
//! Everything runs on one thread, so the figures are per core. Timings are wall-clock medians
//! and 95th percentiles over the frames of the input, measured side by side in one run. Per
//! size and speed it also fits the encode cost as `a + b x bytes` and prints it, with the
//! median decode, as the simulator's `[cost]` keys for the codec (`encode_us_per_megapixel`,
//! `encode_us_per_kilobyte` and `decode_us_per_megapixel` for VP8,
//! `av1_encode_us_per_megapixel` and `av1_decode_us_per_megapixel` for AV1), and reports the
//! operating point the sender's encode-time rule would settle at on this machine: the finest
//! quantizer whose encodes take at most 75% of the frame interval, for Salsify-2c (two
//! encodes at once) and Salsify-1c (one after the other).
//!
//! With `--av1-cpu-used` the same tables follow for the AV1 codec (libaom, its 0..=63
//! quantizer scale), and a last table sets the two codecs side by side: the bytes each needs
//! for equal SSIM, read off their quality tables.

use std::time::Instant;

use anyhow::{Context, Result};
use salsify_codec::{
    Av1Decoder, Av1Encoder, Av1EncoderConfig, Av1Quality, Decoder, Encoder, EncoderConfig, Image,
    Quality, State,
};
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
    /// libaom realtime cpu-used speeds (0..=10) to measure the AV1 codec at, comma-separated;
    /// none (the default): VP8 only.
    #[arg(long, value_delimiter = ',')]
    av1_cpu_used: Vec<i32>,
    /// AV1 quantizers (0..=63, libaom's scale) for AV1's quality table, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,16,24,32,40,48,56")]
    av1_qualities: Vec<u8>,
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
        for &q in &self.av1_qualities {
            Av1Quality::new(q).map_err(|e| anyhow::anyhow!("--av1-qualities: {e}"))?;
        }
        for &c in &self.av1_cpu_used {
            if !(0..=10).contains(&c) {
                anyhow::bail!("--av1-cpu-used {c} is not in 0..=10");
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
    let mut vp8_tables = Vec::new();
    for (cpu_used, static_threshold) in settings {
        let config = EncoderConfig {
            cpu_used,
            static_threshold,
            ..EncoderConfig::new(size.width, size.height)
        };
        config.validate()?;
        let rows = measure_codec(
            BenchConfig::Vp8(config),
            &frames,
            &args.qualities,
            input.fps,
            &progress,
        )?;
        vp8_tables.push((BenchConfig::Vp8(config), rows));
    }
    let mut av1_tables = Vec::new();
    for &cpu_used in &args.av1_cpu_used {
        let config = Av1EncoderConfig {
            cpu_used,
            ..Av1EncoderConfig::new(size.width, size.height)
        };
        config.validate()?;
        let rows = measure_codec(
            BenchConfig::Av1(config),
            &frames,
            &args.av1_qualities,
            input.fps,
            &progress,
        )?;
        av1_tables.push((BenchConfig::Av1(config), rows));
    }
    if !av1_tables.is_empty() {
        side_by_side(&vp8_tables, &av1_tables);
    }
    Ok(())
}

/// Every table for one codec at one setting; returns its quality table.
fn measure_codec(
    config: BenchConfig,
    frames: &[Image],
    qualities: &[u8],
    fps: f64,
    progress: &impl Fn(String),
) -> Result<Vec<QualityRow>> {
    let name = config.name();
    progress(format!("{name}: Salsify frames ..."));
    salsify_frames(config, frames)?;
    progress(format!("{name}: state restore, read-back, decode ..."));
    let decode_ms = state_handling(config, frames)?;
    progress(format!("{name}: quality table ..."));
    let rows = quality_table(config, frames, qualities)?;
    operating_point(config, fps, &rows, decode_ms);
    Ok(rows)
}

/// The codec and settings one set of tables measures.
#[derive(Clone, Copy, Debug)]
enum BenchConfig {
    Vp8(EncoderConfig),
    Av1(Av1EncoderConfig),
}

impl BenchConfig {
    /// The heading's name for this setting ("cpu-used -8" for VP8, as before AV1 came).
    fn name(&self) -> String {
        match self {
            BenchConfig::Vp8(c) => format!("cpu-used {}", c.cpu_used),
            BenchConfig::Av1(c) => format!("AV1 cpu-used {}", c.cpu_used),
        }
    }

    /// The name with the codec for every setting, for the side-by-side table.
    fn codec_and_name(&self) -> String {
        match self {
            BenchConfig::Vp8(c) => format!("VP8 cpu-used {}", c.cpu_used),
            BenchConfig::Av1(_) => self.name(),
        }
    }

    fn megapixels(&self) -> f64 {
        let (w, h) = match self {
            BenchConfig::Vp8(c) => (c.width, c.height),
            BenchConfig::Av1(c) => (c.width, c.height),
        };
        f64::from(w) * f64::from(h) / 1e6
    }

    fn encoder(&self) -> Result<BenchEncoder> {
        Ok(match self {
            BenchConfig::Vp8(c) => BenchEncoder::Vp8(Box::new(Encoder::with_config(*c)?)),
            BenchConfig::Av1(c) => BenchEncoder::Av1(Box::new(Av1Encoder::with_config(*c)?)),
        })
    }

    fn decoder(&self) -> Result<BenchDecoder> {
        Ok(match self {
            BenchConfig::Vp8(_) => BenchDecoder::Vp8(Decoder::new()?),
            BenchConfig::Av1(_) => BenchDecoder::Av1(Av1Decoder::new()?),
        })
    }

    /// The quantizer pair of one Salsify frame, and a middle one (each codec's own scale:
    /// VP8 the sender's default steps around q64, AV1 a pair around its middle).
    fn salsify_pair(&self) -> (u8, u8, u8) {
        match self {
            BenchConfig::Vp8(_) => (64 - 17, 64 + 23, 64),
            BenchConfig::Av1(_) => (24, 40, 32),
        }
    }
}

/// One encoded frame as the benchmark needs it.
struct BenchFrame {
    bytes: Vec<u8>,
    len: usize,
    target: State,
}

/// Either codec's functional encoder.
enum BenchEncoder {
    // Boxed: both hold their library's config struct (libaom's is 904 bytes).
    Vp8(Box<Encoder>),
    Av1(Box<Av1Encoder>),
}

impl BenchEncoder {
    fn encode(&mut self, source: &State, image: &Image, q: u8) -> Result<BenchFrame> {
        Ok(match self {
            BenchEncoder::Vp8(e) => {
                let f = e.encode(source, image, Quality::new(q)?)?;
                BenchFrame {
                    len: f.len(),
                    bytes: f.bytes,
                    target: f.target,
                }
            }
            BenchEncoder::Av1(e) => {
                let f = e.encode(source, image, Av1Quality::new(q)?)?;
                BenchFrame {
                    len: f.len(),
                    bytes: f.bytes,
                    target: f.target,
                }
            }
        })
    }

    fn load_state(&mut self, state: &State) -> Result<()> {
        match self {
            BenchEncoder::Vp8(e) => e.load_state(state)?,
            BenchEncoder::Av1(e) => e.load_state(state)?,
        }
        Ok(())
    }

    fn read_state(&mut self) -> Result<State> {
        Ok(match self {
            BenchEncoder::Vp8(e) => e.read_state()?,
            BenchEncoder::Av1(e) => e.read_state()?,
        })
    }
}

/// Either codec's functional decoder.
enum BenchDecoder {
    Vp8(Decoder),
    Av1(Av1Decoder),
}

impl BenchDecoder {
    fn decode(&mut self, state: &State, frame: &[u8]) -> Result<State> {
        Ok(match self {
            BenchDecoder::Vp8(d) => d.decode(state, frame)?.0,
            BenchDecoder::Av1(d) => d.decode(state, frame)?.0,
        })
    }
}

/// Bytes per frame at equal SSIM: each codec's quality table, linearly interpolated at the
/// SSIM values both reach.
fn side_by_side(vp8: &[(BenchConfig, Vec<QualityRow>)], av1: &[(BenchConfig, Vec<QualityRow>)]) {
    println!("## VP8 and AV1 side by side: bytes per frame at equal SSIM\n");
    let mut header = String::from("| SSIM dB |");
    let mut rule = String::from("|---|");
    for (config, _) in vp8.iter().chain(av1) {
        header.push_str(&format!(" {} bytes |", config.codec_and_name()));
        rule.push_str("---|");
    }
    for (a, _) in av1 {
        for (v, _) in vp8 {
            header.push_str(&format!(
                " {} / {} |",
                a.name(),
                v.name().replace("cpu-used -", "VP8 cpu-used -")
            ));
            rule.push_str("---|");
        }
    }
    println!("{header}\n{rule}");
    let all: Vec<&Vec<QualityRow>> = vp8.iter().chain(av1).map(|(_, r)| r).collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::NEG_INFINITY, f64::INFINITY), |(lo, hi), rows| {
            let (min, max) = ssim_range(rows);
            (lo.max(min), hi.min(max))
        });
    if lo.is_nan() || hi.is_nan() || lo > hi {
        println!("(no SSIM range that every table reaches)\n");
        return;
    }
    let steps = 6;
    for i in 0..=steps {
        let db = lo + (hi - lo) * f64::from(i) / f64::from(steps);
        let mut line = format!("| {db:.2} |");
        let bytes: Vec<f64> = all.iter().map(|rows| bytes_at_ssim(rows, db)).collect();
        for b in &bytes {
            line.push_str(&format!(" {b:.0} |"));
        }
        for a in &bytes[vp8.len()..] {
            for v in &bytes[..vp8.len()] {
                line.push_str(&format!(" {:.2} |", a / v));
            }
        }
        println!("{line}");
    }
    println!();
}

fn ssim_range(rows: &[QualityRow]) -> (f64, f64) {
    rows.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r.ssim_db), hi.max(r.ssim_db))
        })
}

/// Mean bytes per frame at `db`, linearly interpolated between the two rows around it.
fn bytes_at_ssim(rows: &[QualityRow], db: f64) -> f64 {
    let mut points: Vec<(f64, f64)> = rows.iter().map(|r| (r.ssim_db, r.mean_bytes)).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        if (x0..=x1).contains(&db) {
            if x1 - x0 <= f64::EPSILON {
                return y0;
            }
            return y0 + (y1 - y0) * (db - x0) / (x1 - x0);
        }
    }
    points
        .iter()
        .find(|p| (p.0 - db).abs() <= 1e-9)
        .map_or(f64::NAN, |p| p.1)
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

/// Fits the cost model and prints where the encode-time rule would settle on this machine;
/// `decode_ms` is the median decode of the state-handling table.
fn operating_point(config: BenchConfig, fps: f64, rows: &[QualityRow], decode_ms: f64) {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .flat_map(|r| r.encodes.iter().copied())
        .collect();
    let megapixels = config.megapixels();
    println!(
        "## {}: cost model and operating point at {fps:.0} frames/s
",
        config.name()
    );
    match least_squares(&points) {
        Some((a_ms, b_ms_per_byte)) => println!(
            "encode ~ {a_ms:.2} ms + {:.3} ms per KB over {} encodes, decode {decode_ms:.2} ms: \
             for `salsify sim`, {}\n",
            b_ms_per_byte * 1000.0,
            points.len(),
            cost_keys(
                config,
                a_ms * 1000.0 / megapixels,
                b_ms_per_byte * 1e6,
                decode_ms * 1000.0 / megapixels
            ),
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
    // The sender's step to its worse option: VP8's default; for AV1 the step of the pair
    // `salsify_pair` times (the sender has no AV1 steps yet).
    let worse_step = match config {
        BenchConfig::Vp8(_) => salsify_transport::SenderConfig::default().worse_step,
        BenchConfig::Av1(_) => {
            let (a, b, _) = config.salsify_pair();
            b - a
        }
    };
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
                "| {name} | {}{} | {:.0} | {:.2} |",
                q_prefix(config),
                r.quality,
                r.mean_bytes,
                r.ssim_db
            ),
            None => println!("| {name} | none of the qualities measured | | |"),
        }
    }
    println!();
}

/// The `[cost]` keys the simulator charges `config`'s codec by, at the fitted microseconds
/// per megapixel (encode, decode) and per kilobyte. The per-kilobyte slope is one key for
/// both codecs, so AV1's is only said.
fn cost_keys(
    config: BenchConfig,
    encode_us_mp: f64,
    encode_us_kb: f64,
    decode_us_mp: f64,
) -> String {
    match config {
        BenchConfig::Vp8(_) => format!(
            "`[cost]` encode_us_per_megapixel = {encode_us_mp:.0}, \
             encode_us_per_kilobyte = {encode_us_kb:.0}, decode_us_per_megapixel = {decode_us_mp:.0}"
        ),
        BenchConfig::Av1(_) => format!(
            "`[cost]` av1_encode_us_per_megapixel = {encode_us_mp:.0}, \
             av1_decode_us_per_megapixel = {decode_us_mp:.0} (AV1's slope: {encode_us_kb:.0} us per KB; \
             encode_us_per_kilobyte is VP8's and AV1's alike)"
        ),
    }
}

/// How a quantizer is written: VP8's bare ("q64"), AV1's apart ("aq32": another scale).
fn q_prefix(config: BenchConfig) -> &'static str {
    match config {
        BenchConfig::Vp8(_) => "q",
        BenchConfig::Av1(_) => "aq",
    }
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
fn salsify_frames(config: BenchConfig, frames: &[Image]) -> Result<()> {
    let (better, worse, middle) = config.salsify_pair();
    match config {
        BenchConfig::Vp8(c) => println!(
            "## cpu-used {} static-threshold {}: one Salsify frame (2 encodes from one state)\n",
            c.cpu_used, c.static_threshold
        ),
        BenchConfig::Av1(c) => println!(
            "## AV1 cpu-used {}: one Salsify frame (2 encodes from one state)\n",
            c.cpu_used
        ),
    }
    let p = q_prefix(config);
    println!("| qualities | median ms | p95 ms | frames | median fits 60 fps (16.7 ms) |");
    println!("|---|---|---|---|---|");
    // The second row isolates the cost of switching the quantizer between the two encodes.
    for (a, b) in [(better, worse), (middle, middle)] {
        let ms = two_encodes_per_frame(config, frames, a, b)?;
        let s = spread(&ms);
        println!(
            "| {p}{a} + {p}{b} | {:.2} | {:.2} | {} | {} |",
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
fn two_encodes_per_frame(config: BenchConfig, frames: &[Image], a: u8, b: u8) -> Result<Vec<f64>> {
    let mut encoder = config.encoder()?;
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

/// Times restoring a state into the encoder, reading one back, and decoding; returns the
/// median decode in milliseconds.
fn state_handling(config: BenchConfig, frames: &[Image]) -> Result<f64> {
    let mut encoder = config.encoder()?;
    let quality = config.salsify_pair().2;
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
    let mut decoder = config.decoder()?;
    let mut state = State::initial();
    let mut decode = Vec::new();
    for f in &encoded {
        let t = Instant::now();
        let next = decoder
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
        "## {}: state handling and decoding ({}{quality} stream)\n",
        config.name(),
        q_prefix(config)
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
    Ok(spread(&decode).median)
}

/// Per quality: encode time, bytes, and the reconstruction's SSIM and PSNR against the source.
fn quality_table(
    config: BenchConfig,
    frames: &[Image],
    qualities: &[u8],
) -> Result<Vec<QualityRow>> {
    let mut rows = Vec::new();
    println!(
        "## {}: quality table (a stream at one quantizer)\n",
        config.name()
    );
    println!("| q | median ms/encode | p95 ms | mean bytes/frame | SSIM dB | PSNR dB |");
    println!("|---|---|---|---|---|---|");
    for &q in qualities {
        let mut encoder = config.encoder()?;
        let mut state = State::initial();
        let (mut ms, mut bytes, mut ssim, mut psnr) = (vec![], vec![], vec![], vec![]);
        for (i, image) in frames.iter().enumerate() {
            let t = Instant::now();
            let f = encoder.encode(&state, image, q)?;
            if i > 0 {
                // The keyframe is not a per-frame cost.
                ms.push(millis_since(t));
                bytes.push(f.len as f64);
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
        let coded = match config {
            BenchConfig::Vp8(_) => Quality::new(q)?.effective().index(),
            BenchConfig::Av1(_) => q,
        };
        let row = QualityRow {
            quality: coded,
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
            (&["--av1-cpu-used", "11"][..], "--av1-cpu-used"),
            (&["--av1-qualities", "64"][..], "--av1-qualities"),
        ] {
            let err = run(&args(flags)).unwrap_err().to_string();
            assert!(err.contains(says), "{flags:?}: {err}");
        }
        let err = run(&args(&[])).unwrap_err().to_string();
        assert!(err.contains("clip.y4m"), "{err}");
    }
}
