//! `salsify peer`: unmodified systems as peers, measured black-box through the same link
//! relay and scored by the same analysis as simulated runs. `peer chromium`'s flags convert
//! into a [`ChromiumCall`], which [`crate::chromium_call`] runs.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use salsify_peer::CallRecord;
use salsify_runtime::LinkPath;
use salsify_time::Duration;

use crate::chromium_call::{call_and_score, score_call, ChromiumCall, Scoring};
use crate::flags::LinkFlags;
use crate::input::Size;
use crate::runtime;

/// Unmodified systems as peers (headless Chromium's WebRTC), measured black-box through the
/// link relay by barcodes and scored as simulated runs are.
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
    /// Audio in the call: `synthetic` (the speech-like voice with a timing mark each second,
    /// as Salsify's sender plays it, written to OUT/microphone.wav for the fake microphone;
    /// the page records what was captured and what was played, and the marks give the
    /// mouth-to-ear delay: audio_delay.csv, audio_marks.json, summary.json) or `none`.
    #[arg(long, default_value = "none", value_parser = ["none", "synthetic"])]
    pub audio: String,
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
    call_and_score(&ChromiumCall::try_from(args)?).map(drop)
}

impl TryFrom<&ChromiumArgs> for ChromiumCall {
    type Error = anyhow::Error;

    /// The call these flags describe (the path checked and built).
    fn try_from(args: &ChromiumArgs) -> Result<ChromiumCall> {
        Ok(ChromiumCall {
            input: args.input.clone(),
            barcoded: args.barcoded,
            size: args.size,
            fps: args.fps,
            source_frames: args.source_frames,
            duration: args.duration,
            warmup: args.warmup,
            connect_timeout: args.connect_timeout,
            degradation_preference: args.degradation_preference.clone(),
            max_bitrate_kbps: args.max_bitrate_kbps,
            codec: args.codec.clone(),
            scalability_mode: args.scalability_mode.clone(),
            relay_port: args.relay_port,
            chromium: args.chromium.clone(),
            out: args.out.clone(),
            path: LinkPath::try_from(&args.path)?,
            quiet: args.quiet,
            audio: args.audio == "synthetic",
        })
    }
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
        audio: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The call's defaults (what `salsify eval`'s Chromium cells start from) are the flags'.
    #[test]
    fn the_typed_defaults_are_the_flags_defaults() {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ChromiumArgs,
        }
        let args = Wrapper::try_parse_from(["salsify", "--input", "in.y4m", "--out", "o"])
            .unwrap()
            .args;
        let from_flags = ChromiumCall::try_from(&args).unwrap();
        let typed = ChromiumCall::new("in.y4m".into(), "o".into(), from_flags.path.clone());
        assert_eq!(format!("{from_flags:?}"), format!("{typed:?}"));
    }
}
