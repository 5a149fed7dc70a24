//! `salsify peer`: unmodified systems as peers, measured black-box through the same link
//! relay and scored by the same analysis as simulated runs.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use salsify_peer::{analyse, write_outputs, Analysis, AnalysisInput, CallConfig, CallRecord};
use salsify_time::Duration;

use crate::input::Size;
use crate::link::{relay_config, LinkFlags};
use crate::runtime;

/// Highest `--max-bitrate-kbps` (10 Gb/s).
const MAX_BITRATE_KBPS: u64 = 10_000_000;

/// Below this share of presented pictures matched to their source the run is an error.
const MIN_MATCH_SHARE: f64 = 0.5;

/// The peers.
#[derive(Subcommand, Debug)]
pub enum PeerCommand {
    /// A call in headless Chromium (its own WebRTC, Chrome's defaults; VP8 unless --codec) through the link
    /// relay: a barcoded source as the fake camera, every presented picture recorded, then
    /// scored into frames.csv, summary.json and match.json in --out.
    Chromium(Box<ChromiumArgs>),
    /// Re-score a recorded call (e.g. against another reference).
    Score(ScoreArgs),
}

/// Flags of `salsify peer chromium`.
#[derive(Args, Debug, Clone)]
pub struct ChromiumArgs {
    /// Video fed to the camera: `synthetic`, a .y4m file, or any file ffmpeg reads; it is
    /// barcoded into OUT/source.y4m (unless --barcoded) and looped by Chromium.
    #[arg(long, default_value = "synthetic")]
    pub input: String,
    /// The input is already a barcoded Y4M file (from `salsify barcode`): play it as it is.
    #[arg(long)]
    pub barcoded: bool,
    /// Picture size of the camera.
    #[arg(long, default_value = "640x360")]
    pub size: Size,
    /// Frame rate of the synthetic source.
    #[arg(long, default_value_t = 30, value_parser = crate::input::parse_whole_fps)]
    pub fps: u32,
    /// Pictures of the input barcoded (the camera loops them).
    #[arg(long, default_value_t = 150)]
    pub source_frames: u64,
    /// Seconds recorded once the call is connected.
    #[arg(long, default_value = "10", value_parser = runtime::parse_seconds)]
    pub duration: Duration,
    /// Seconds after connecting that are not scored (the call's start-up).
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Seconds to wait for the browser to start and the call to connect.
    #[arg(long, default_value = "30", value_parser = runtime::parse_seconds)]
    pub connect_timeout: Duration,
    /// RTCRtpSendParameters.degradationPreference: maintain-framerate, maintain-resolution
    /// or balanced (default: Chrome's own).
    #[arg(long, value_parser = ["maintain-framerate", "maintain-resolution", "balanced"])]
    pub degradation_preference: Option<String>,
    /// RTCRtpEncodingParameters.maxBitrate in kb/s (default: Chrome's own).
    #[arg(long)]
    pub max_bitrate_kbps: Option<u64>,
    /// The video codec (an error naming the codecs this Chromium offers when it lacks it).
    #[arg(long, default_value = "vp8", value_parser = ["vp8", "vp9", "av1", "h264", "h265"])]
    pub codec: String,
    /// RTCRtpEncodingParameters.scalabilityMode, e.g. L1T3 or L3T3_KEY (default: none set).
    #[arg(long)]
    pub scalability_mode: Option<String>,
    /// UDP port of the relay (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub relay_port: u16,
    /// Chromium binary (default: chromium, chromium-browser or google-chrome on PATH).
    #[arg(long)]
    pub chromium: Option<PathBuf>,
    /// Output folder.
    #[arg(long, short, default_value = "peer-chromium")]
    pub out: PathBuf,
    #[command(flatten)]
    pub path: LinkFlags,
    /// Quiet: no progress lines and no summary on standard error (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Flags of `salsify peer score`.
#[derive(Args, Debug, Clone)]
pub struct ScoreArgs {
    /// Folder of a recorded call (`salsify peer chromium --out`).
    pub dir: PathBuf,
    /// Barcoded reference to score against (default: DIR/source.y4m).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Seconds after connecting that are not scored.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Write frames.csv, summary.json and match.json here (default: DIR).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Quiet: no progress lines and no summary on standard error (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `salsify peer ...`.
pub fn run(command: &PeerCommand) -> Result<()> {
    match command {
        PeerCommand::Chromium(args) => chromium(args),
        PeerCommand::Score(args) => score(args),
    }
}

fn chromium(args: &ChromiumArgs) -> Result<()> {
    call_and_score(args).map(drop)
}

/// Records a call as `args` say and scores it (the files in `args.out`, and in memory).
pub(crate) fn call_and_score(args: &ChromiumArgs) -> Result<(CallRecord, Analysis)> {
    if let Some(mode) = args.scalability_mode.as_deref().filter(|m| {
        m.is_empty() || m.len() > 16 || !m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) {
        bail!("--scalability-mode '{mode}' is not a mode name such as L1T3 or L3T3_KEY");
    }
    if !(args.warmup >= 0.0 && args.warmup < args.duration.as_secs_f64()) {
        bail!("--warmup {} must be below --duration", args.warmup);
    }
    if let Some(kbps) = args
        .max_bitrate_kbps
        .filter(|k| !(1..=MAX_BITRATE_KBPS).contains(k))
    {
        bail!("--max-bitrate-kbps {kbps}: give 1 to {MAX_BITRATE_KBPS} kb/s");
    }
    if args.source_frames == 0 {
        bail!("--source-frames 0: the camera needs at least one picture");
    }
    // Everything that can be checked is, before the output folder is made.
    salsify_peer::chromium::find_binary(args.chromium.as_deref())?;
    args.path.build()?;
    if args.barcoded && !std::path::Path::new(&args.input).is_file() {
        bail!("--barcoded input '{}' is not a file", args.input);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create '{}'", args.out.display()))?;
    let source = if args.barcoded {
        PathBuf::from(&args.input)
    } else {
        let path = args.out.join("source.y4m");
        crate::barcode_cmd::stamp_video(
            &args.input,
            Some(args.size),
            args.fps,
            Some(args.source_frames),
            0,
            &path,
            args.quiet,
        )?;
        path
    };
    let path = args.path.clone();
    let log_dir = args.out.clone();
    // WebRTC's datagrams are none of ours: the relay learns the browser's address from its
    // first datagram of any kind.
    let relay = Box::new(move |to| {
        let mut config = relay_config(&path, to, Some(&log_dir))?;
        config.sender.known_protocols_only = false;
        Ok(config)
    });
    let config = CallConfig {
        chromium: args.chromium.clone(),
        source: source.clone(),
        out: args.out.clone(),
        duration: args.duration,
        connect_timeout: args.connect_timeout,
        degradation_preference: args.degradation_preference.clone(),
        max_bitrate_bps: args.max_bitrate_kbps.map(|k| k * 1000),
        codec: Some(format!("video/{}", args.codec.to_uppercase())),
        scalability_mode: args.scalability_mode.clone(),
        relay_port: args.relay_port,
        extra_args: Vec::new(),
    };
    let stop = runtime::stop_on_ctrl_c()?;
    let quiet = args.quiet;
    let call = salsify_peer::record_call(&config, relay, stop, move |line| {
        if !quiet {
            eprintln!("salsify peer chromium: {line}")
        }
    })?;
    if !quiet {
        eprintln!(
            "salsify peer chromium: recorded {} camera pictures and {} presented pictures; relay video {} in / {} out; scoring",
            call.recorded.0, call.recorded.1, call.relay_video_packets.0, call.relay_video_packets.1
        );
    }
    let scoring = Scoring {
        warmup: args.warmup,
        quiet,
    };
    let analysis = score_call(&args.out, &source, &call, scoring, &args.out)?;
    Ok((call, analysis))
}

fn score(args: &ScoreArgs) -> Result<()> {
    if !(args.warmup.is_finite() && (0.0..=1e6).contains(&args.warmup)) {
        bail!(
            "--warmup {} is not a number of seconds from 0 to 1e6",
            args.warmup
        );
    }
    let call_json = args.dir.join("call.json");
    let text = crate::paths::read_text("call record", &call_json)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("'{}' is not JSON", call_json.display()))?;
    let micros = |k: &str| {
        value
            .get(k)
            .and_then(|v| v.as_u64())
            .with_context(|| format!("'{}' has no {k}", call_json.display()))
    };
    let call = CallRecord {
        browser: String::new(),
        connected_us: micros("connected_us")?,
        ended_us: micros("ended_us")?,
        relay: None,
        relay_video_packets: (0, 0),
        relay_feedback_packets: (0, 0),
        relay_refused: 0,
        recorded: (0, 0),
        interrupted: false,
    };
    let reference = args
        .reference
        .clone()
        .unwrap_or_else(|| args.dir.join("source.y4m"));
    let out = args.out.clone().unwrap_or_else(|| args.dir.clone());
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create '{}'", out.display()))?;
    let scoring = Scoring {
        warmup: args.warmup,
        quiet: args.quiet,
    };
    score_call(&args.dir, &reference, &call, scoring, &out).map(drop)
}

/// How a call is scored: seconds skipped at its start, and whether to keep quiet.
#[derive(Debug, Clone, Copy)]
struct Scoring {
    warmup: f64,
    quiet: bool,
}

fn score_call(
    dir: &std::path::Path,
    reference: &std::path::Path,
    call: &CallRecord,
    scoring: Scoring,
    out: &std::path::Path,
) -> Result<Analysis> {
    let analysis = analyse(&AnalysisInput {
        dir,
        reference,
        from: Some(call.connected() + Duration::from_secs_f64(scoring.warmup)),
        until: Some(call.ended()),
    })?;
    write_outputs(out, &analysis)?;
    if !scoring.quiet {
        print_scores(&analysis, out);
    }
    check_match(&analysis, reference)?;
    Ok(analysis)
}

/// The scores of a call on standard error.
fn print_scores(analysis: &Analysis, out: &std::path::Path) {
    let s = &analysis.summary;
    let c = &analysis.counts;
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.1}{unit}"));
    eprintln!(
        "salsify peer: {} of {} presented pictures matched a barcode ({:.1} %), mean SSIM of matched {}; {} presentations missed by the page",
        c.shown_matched,
        c.shown,
        c.match_share * 100.0,
        c.matched_ssim_mean.map_or("-".into(), |v| format!("{v:.4}")),
        c.presentations_missed
    );
    eprintln!(
        "salsify peer: {} frames, shown {:.1} fps, SSIM {} (p25 {}), delay mean {} p95 {}",
        s.frames,
        s.displayed_fps,
        opt(s.ssim_db_mean, " dB"),
        opt(s.ssim_db_p25, " dB"),
        opt(s.delay_mean_ms, " ms"),
        opt(s.delay_p95_ms, " ms"),
    );
    eprintln!(
        "salsify peer: frames.csv, summary.json, match.json in {}",
        out.display()
    );
}

/// Refuses a call whose pictures mostly do not match the reference.
fn check_match(analysis: &Analysis, reference: &std::path::Path) -> Result<()> {
    let c = &analysis.counts;
    if c.match_share < MIN_MATCH_SHARE {
        bail!(
            "only {} of {} presented pictures match their barcode's source picture ({} unknown barcodes, {} whose content is another frame's, {} with no capture): is the reference '{}' the source the call played?",
            c.shown_matched,
            c.shown,
            c.shown_unknown_barcode,
            c.shown_content_mismatch,
            c.shown_no_capture,
            reference.display()
        );
    }
    Ok(())
}
