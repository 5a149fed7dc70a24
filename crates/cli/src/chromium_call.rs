//! A call in headless Chromium through the link relay, recorded and scored black-box
//! (`salsify peer chromium`, `salsify eval`'s Chromium cells), from a typed
//! [`ChromiumCall`]; and the scoring of a recorded call (`salsify peer score` too).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use salsify_peer::{analyse, write_outputs, Analysis, AnalysisInput, CallConfig, CallRecord};
use salsify_runtime::LinkPath;
use salsify_time::Duration;

use crate::input::Size;
use crate::runtime;

/// Highest maximum bitrate, in kb/s (10 Gb/s).
pub const MAX_BITRATE_KBPS: u64 = 10_000_000;

/// Below this share of presented pictures matched to their source the run is an error.
const MIN_MATCH_SHARE: f64 = 0.5;

/// A Chromium call: its camera's source, the browser's settings, the path and the outputs.
/// Errors name a setting by its `salsify peer chromium` flag.
#[derive(Debug, Clone)]
pub struct ChromiumCall {
    /// Video fed to the camera: `synthetic`, a .y4m file, or any file ffmpeg reads.
    pub input: String,
    /// The input is already a barcoded Y4M file: played as it is.
    pub barcoded: bool,
    /// Picture size of the camera (when the input is barcoded here).
    pub size: Size,
    /// Frame rate of the synthetic source.
    pub fps: u32,
    /// Pictures of the input barcoded (the camera loops them).
    pub source_frames: u64,
    /// Recorded once the call is connected.
    pub duration: Duration,
    /// Seconds after connecting that are not scored.
    pub warmup: f64,
    /// How long to wait for the browser to start and the call to connect.
    pub connect_timeout: Duration,
    /// RTCRtpSendParameters.degradationPreference (`None`: Chrome's own).
    pub degradation_preference: Option<String>,
    /// RTCRtpEncodingParameters.maxBitrate in kb/s (`None`: Chrome's own).
    pub max_bitrate_kbps: Option<u64>,
    /// The video codec, lower case (`vp8`, `vp9`, `av1`, `h264`, `h265`).
    pub codec: String,
    /// RTCRtpEncodingParameters.scalabilityMode (`None`: none set).
    pub scalability_mode: Option<String>,
    /// UDP port of the relay (0: any free port).
    pub relay_port: u16,
    /// Chromium binary (`None`: found on PATH).
    pub chromium: Option<PathBuf>,
    /// Output folder.
    pub out: PathBuf,
    /// The emulated path.
    pub path: LinkPath,
    /// No progress lines and no summary.
    pub quiet: bool,
    /// The call carries audio: the synthetic voice with its timing marks (Salsify's own
    /// sender's source) as the fake microphone, its mouth-to-ear delay read from the marks.
    pub audio: bool,
}

impl ChromiumCall {
    /// A call playing `input` into `out` over `path`, everything else as `salsify peer
    /// chromium`'s defaults.
    pub fn new(input: String, out: PathBuf, path: LinkPath) -> ChromiumCall {
        ChromiumCall {
            input,
            barcoded: false,
            size: Size {
                width: 640,
                height: 360,
            },
            fps: 30,
            source_frames: 150,
            duration: Duration::from_secs(10),
            warmup: 0.0,
            connect_timeout: Duration::from_secs(30),
            degradation_preference: None,
            max_bitrate_kbps: None,
            codec: "vp8".into(),
            scalability_mode: None,
            relay_port: 0,
            chromium: None,
            out,
            path,
            quiet: false,
            audio: false,
        }
    }

    /// Refuses settings out of range, and a missing browser.
    fn check(&self) -> Result<()> {
        if let Some(mode) = self.scalability_mode.as_deref().filter(|m| {
            m.is_empty()
                || m.len() > 16
                || !m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            bail!("--scalability-mode '{mode}' is not a mode name such as L1T3 or L3T3_KEY");
        }
        if !(self.warmup >= 0.0 && self.warmup < self.duration.as_secs_f64()) {
            bail!("--warmup {} must be below --duration", self.warmup);
        }
        if let Some(kbps) = self
            .max_bitrate_kbps
            .filter(|k| !(1..=MAX_BITRATE_KBPS).contains(k))
        {
            bail!("--max-bitrate-kbps {kbps}: give 1 to {MAX_BITRATE_KBPS} kb/s");
        }
        if self.source_frames == 0 {
            bail!("--source-frames 0: the camera needs at least one picture");
        }
        salsify_peer::chromium::find_binary(self.chromium.as_deref())?;
        if self.barcoded && !Path::new(&self.input).is_file() {
            bail!("--barcoded input '{}' is not a file", self.input);
        }
        Ok(())
    }
}

/// Records the call and scores it (the files in its `out`, and in memory).
pub fn call_and_score(args: &ChromiumCall) -> Result<(CallRecord, Analysis)> {
    // Everything that can be checked is, before the output folder is made.
    args.check()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create '{}'", args.out.display()))?;
    let source = if args.barcoded {
        PathBuf::from(&args.input)
    } else {
        let path = args.out.join("source.y4m");
        crate::stamp::stamp_video(
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
        let mut config = path.relay_config(to, Some(&log_dir), None)?;
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
        microphone: match args.audio {
            true => Some(write_microphone(args)?),
            false => None,
        },
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

/// Seconds of voice the fake microphone is given beyond the call's connect timeout and
/// duration, so that Chromium (which loops the file) never plays a mark number twice.
const MICROPHONE_MARGIN_S: f64 = 30.0;

/// Writes the synthetic voice (seed 0, as Salsify's sender plays it; mark k at second k) to
/// OUT/microphone.wav, long enough for the call.
fn write_microphone(args: &ChromiumCall) -> Result<PathBuf> {
    let seconds =
        (args.connect_timeout.as_secs_f64() + args.duration.as_secs_f64() + MICROPHONE_MARGIN_S)
            .ceil();
    let max = f64::from(1u32 << salsify_audio::marks::NUMBER_BITS);
    if seconds > max {
        bail!("--audio synthetic: the call is longer than the {max} s the marks number");
    }
    let mut samples = vec![0i16; seconds as usize * salsify_audio::SAMPLE_RATE as usize];
    salsify_audio::AudioSource::fill(&mut salsify_audio::SyntheticSpeech::new(0), 0, &mut samples);
    let path = args.out.join("microphone.wav");
    salsify_audio::write_wav(&path, &samples)
        .with_context(|| format!("writing '{}'", path.display()))?;
    Ok(path)
}

/// How a call is scored: seconds skipped at its start, and whether to keep quiet.
#[derive(Debug, Clone, Copy)]
pub struct Scoring {
    /// Seconds after connecting that are not scored.
    pub warmup: f64,
    /// No lines on standard error.
    pub quiet: bool,
}

/// Scores the call recorded in `dir` against `reference`, writing the scores into `out`.
pub fn score_call(
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
    if dir.join(salsify_peer::audio_tap::TAPS_JSON).is_file() {
        let from = call.connected() + Duration::from_secs_f64(scoring.warmup);
        score_audio(dir, (from, call.ended()), scoring.quiet, out)?;
    }
    check_match(&analysis, reference)?;
    Ok(analysis)
}

/// What the two ends of a Chromium call's audio delay are.
const CHROMIUM_AUDIO_ENDS: &str = "mouth: the microphone's track at the sending page (the fake device's file, after capture); ear: the remote track at the receiving page as its <audio> element plays it (after WebRTC's jitter buffer and decoder); both recorded through one AudioContext, so the browser's output latency is in neither";

/// Reads the call's audio marks (OUT/audio.json and its two WAV files) into
/// audio_delay.csv, audio_marks.json and summary.json's audio figures.
fn score_audio(
    dir: &Path,
    window: (salsify_time::Instant, salsify_time::Instant),
    quiet: bool,
    out: &Path,
) -> Result<()> {
    use salsify_peer::audio_delay::{audio_delay, write_audio_delay};
    let (sent, received) = salsify_peer::audio_tap::read_recordings(dir)?;
    let seconds = |t: salsify_time::Instant| t.as_micros() as f64 / 1e6;
    let window = (seconds(window.0), seconds(window.1));
    let result = audio_delay(&sent, &received, Some(window));
    let stats = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap_or_default();
    let report = write_audio_delay(
        out,
        &result,
        sent.start_s,
        Some(window),
        CHROMIUM_AUDIO_ENDS,
        reported_concealed(&stats),
    )?;
    if !quiet {
        eprintln!("salsify peer: audio {}", audio_line(&report));
    }
    Ok(())
}

/// Chromium's own concealed share of the remote audio, from the last getStats line that has
/// it (`concealedSamples / totalSamplesReceived`).
fn reported_concealed(stats: &str) -> Option<f64> {
    stats.lines().rev().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let a = v.get("inbound_audio")?;
        let concealed = a.get("concealedSamples")?.as_f64()?;
        let total = a.get("totalSamplesReceived")?.as_f64()?;
        (total > 0.0).then_some(concealed / total)
    })
}

/// One line of a call's audio figures read from its marks.
pub fn audio_line(report: &salsify_peer::audio_delay::MarksReport) -> String {
    let f = &report.figures;
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    format!(
        "mouth-to-ear delay by the marks: mean {} ms, p95 {} ms; {} of {} marks heard ({} %){}; audio_delay.csv, audio_marks.json",
        opt(f.audio_delay_mean_ms),
        opt(f.audio_delay_p95_ms),
        f.audio_marks_heard,
        f.audio_marks_expected,
        opt(f.audio_marks_heard_fraction.map(|v| v * 100.0)),
        report
            .receiver_reported_concealed_fraction
            .map_or(String::new(), |c| format!(
                "; concealed by the receiver's own count {:.2} %",
                c * 100.0
            )),
    )
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
