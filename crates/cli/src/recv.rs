//! `salsify recv`: receive, decode and "display" a stream of any scheme that runs live.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use salsify_audio::{PlayerConfig, SyncMode};
use salsify_runtime::{AudioReceiveConfig, SchemeChoice};
use salsify_schemes::SourceInfo;
use salsify_time::Duration;

use crate::dashboard;
use crate::flags::{plaintext_warning, read_params, KeyArgs, MeetArgs};
use crate::input::Size;
use crate::runtime::display::DisplayConfig;
use crate::runtime::meet_phase;
use crate::runtime::receiver_loop::{self, ReceiverLoopConfig};
use crate::runtime::{self, udp};
use crate::window;

/// Flags of `salsify recv`.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("meeting").required(true).args(["to", "listen", "via"])))]
pub struct RecvArgs {
    /// Where to listen, HOST:PORT (e.g. 127.0.0.1:9000, or 0.0.0.0:9000 for every interface),
    /// for a sender that dials (`salsify send --to`).
    #[arg(long)]
    pub listen: Option<String>,
    /// Dial a sender listening at HOST:PORT (`salsify send --listen`): for a receiver behind
    /// a NAT, which can dial out but not be dialed. This side starts the handshake.
    #[arg(long)]
    pub to: Option<String>,
    #[command(flatten)]
    pub meet: MeetArgs,
    /// The sender's scheme (as `salsify send --scheme`). Default: learned from each session's
    /// first datagram. Given, datagrams of another scheme are ignored and counted (anyone can
    /// send one), with a note naming both schemes.
    #[arg(long)]
    pub scheme: Option<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
    #[command(flatten)]
    pub data: crate::flags::DataArgs,
    /// Scheme parameters: a TOML file with the tables of experiment files (the receiver uses
    /// `salsify_receiver` and `conventional`).
    #[arg(long)]
    pub scheme_params: Option<PathBuf>,
    /// Show the video in a window as frames are decoded: no jitter buffer, the newest picture
    /// at once (pictures the window could not keep up with are dropped and counted, never
    /// queued). Closing the window (or Escape / q) ends the session like Ctrl-C, keeping
    /// everything written. Needs a display (DISPLAY or WAYLAND_DISPLAY; `xvfb-run -a` gives
    /// a virtual one).
    #[arg(long)]
    pub display: bool,
    /// Write the shown pictures as Y4M here; `-` writes to standard output
    /// (`salsify recv ... -o - | ffplay -`).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Picture size of the Y4M output: pictures coded at another size (a scheme's resolution
    /// ladder) are scaled to it. Default: the first shown picture's size. Give the sender's
    /// source size to score the output against the source frame by frame.
    #[arg(long)]
    pub size: Option<Size>,
    /// Write the shown frames' coded data as IVF here, VP8 or AV1 as the stream is (fourcc
    /// VP80 or AV01; plays in ffplay, vpxdec or aomdec); `-` writes to standard output. A
    /// scheme's resolution ladder changes the coded size at keyframes, which players follow.
    #[arg(long)]
    pub ivf: Option<PathBuf>,
    /// Write a per-frame CSV log here: session, frame, display time, first datagram's send
    /// time, their difference, source and target state, bytes, keyframe, coded size.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Seconds without a frame shown after which another sender may take over the receiver.
    #[arg(long, default_value = "2", value_parser = runtime::parse_seconds)]
    pub session_timeout: Duration,
    /// Seconds the current sender must be silent (nothing from it accepted) before another
    /// address may take over the receiver, whether or not frames are still shown: a stranger
    /// that sent a datagram first holds the receiver at most this long after its last one.
    #[arg(long, default_value = "0.5", value_parser = runtime::parse_seconds)]
    pub takeover_after: Duration,
    /// Frame rate written in the Y4M and IVF headers (frames are written as shown; the IVF
    /// timestamps count in 1/fps s of display time).
    #[arg(long, default_value_t = 30, value_parser = crate::input::parse_whole_fps)]
    pub fps: u32,
    /// Write the call's audio (`salsify send --audio`), as played, to this WAV file (48 kHz
    /// mono; concealed frames included, as heard). Audio that comes is played and measured
    /// whether or not it is written.
    #[arg(long)]
    pub audio_out: Option<PathBuf>,
    /// Also play the call's audio on the machine's default output device as it is played
    /// (the same samples `--audio-out` writes), through a 250 ms ring the device reads;
    /// running dry fills silence, and underruns and overruns are counted and printed at the
    /// end. Needs a build with `--features sound` (see `scripts/setup --sound`); an error
    /// when the machine has no output device.
    #[arg(long)]
    pub play: bool,
    /// Lip sync: `video` (the audio's playout is held back to the delay of the pictures
    /// shown, aiming inside ITU-R BT.1359's window; the video is never held for the audio) or
    /// `none` (the audio plays at its jitter buffer's own least delay).
    #[arg(long, default_value = "video", value_parser = crate::flags::audio::parse_sync)]
    pub sync: SyncMode,
    /// Write a per-frame CSV log of the audio played here: played_ms, frame, captured_ms,
    /// delay_ms, kind (packet, accelerated, fec, missing, stretch, stall); times in ms from the receiver's start.
    #[arg(long)]
    pub audio_log: Option<PathBuf>,
    /// Write the run's figures as JSON here when it ends: frames shown, sessions and
    /// datagrams, and, when audio was heard, `audio_delay_mean_ms` and `audio_delay_p95_ms`
    /// (capture to playout, lip-sync hold included), `audio_concealed_fraction` and
    /// `av_skew_in_window_fraction` (pictures shown whose audio was inside BT.1359's window;
    /// a picture's capture time is taken as its first datagram's send time).
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// When the sender hangs up (or goes silent for 10 s), wait for the next caller instead
    /// of ending.
    #[arg(long)]
    pub stay: bool,
    /// No status line per second.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

impl RecvArgs {
    /// The loop configuration these flags describe.
    pub fn loop_config(&self) -> Result<ReceiverLoopConfig> {
        let params = read_params(self.scheme_params.as_deref())?;
        let scheme = match &self.scheme {
            Some(name) => Some({
                crate::usage::check_live_scheme("--scheme", name)?;
                SchemeChoice::new(name, params.clone()).build()?
            }),
            None => None,
        };
        let stdout = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.as_os_str() == "-");
        if self.data.to_stdout() && (stdout(&self.output) || stdout(&self.ivf)) {
            return Err(crate::usage::usage(
                "--data-out - and video to standard output (-o - or --ivf -): give one a file",
            ));
        }
        if stdout(&self.output) && stdout(&self.ivf) {
            return Err(crate::usage::usage(
                "-o - and --ivf - would both write to standard output: give one a file",
            ));
        }
        if self.log.as_ref().is_some_and(|p| p.as_os_str() == "-") {
            return Err(crate::usage::usage(
                "--log -: the log needs a file (standard output carries video with -o - or --ivf -)",
            ));
        }
        let outputs = [
            ("-o", self.output.as_deref()),
            ("--ivf", self.ivf.as_deref()),
            ("--log", self.log.as_deref()),
            ("--audio-out", self.audio_out.as_deref()),
            ("--audio-log", self.audio_log.as_deref()),
            ("--summary", self.summary.as_deref()),
        ];
        for (flag, path) in &outputs[3..] {
            if path.is_some_and(|p| p.as_os_str() == "-") {
                return Err(crate::usage::usage(format!("{flag} -: give a file")));
            }
        }
        crate::paths::check_outputs(&outputs)?;
        runtime::display::check_distinct(&outputs)?;
        let mut player = PlayerConfig::default();
        player.sync.mode = self.sync;
        let defaults = ReceiverLoopConfig::default();
        let source = match self.size {
            Some(size) => SourceInfo {
                width: size.width,
                height: size.height,
                fps: f64::from(self.fps),
            },
            None => defaults.source,
        };
        Ok(ReceiverLoopConfig {
            scheme,
            params,
            source,
            session_timeout: Some(self.session_timeout),
            takeover_after: self.takeover_after,
            replay_horizon: defaults.replay_horizon,
            display: DisplayConfig {
                y4m: self.output.clone(),
                size: self.size.map(|s| (s.width, s.height)),
                ivf: self.ivf.clone(),
                log: self.log.clone(),
                fps: self.fps,
                view: None,
            },
            status: !self.quiet,
            secure: self.keys.secure_config()?,
            dial: match &self.to {
                Some(to) => Some(crate::usage::resolve_destination("--to", to)?),
                None => None,
            },
            via: self.meet.via(self.keys.key.is_some())?,
            audio: Some(AudioReceiveConfig {
                player,
                wav: self.audio_out.clone(),
                log: self.audio_log.clone(),
                play: crate::flags::audio::play(self.play)?,
            }),
            hang_up: defaults.hang_up,
            stay: self.stay,
            data: self.data.config()?,
        })
    }
}

/// Runs `salsify recv`.
pub fn run(args: &RecvArgs) -> Result<()> {
    let config = args.loop_config()?;
    // The outputs are created before the socket is bound: a bad path fails at once.
    let display = runtime::display::Display::new(config.display.clone())?;
    let socket = match (&args.listen, config.dial, &config.via) {
        (Some(listen), None, None) => receiver_loop::bind(crate::usage::resolve("--listen", listen)?)?,
        (None, Some(to), None) => udp::bind_for(to)?,
        (None, None, Some(via)) => meet_phase::bind(via)?,
        _ => bail!("give exactly one of --listen HOST:PORT (wait for the sender), --to HOST:PORT (dial it) or --via HOST:PORT (meet it through a rendezvous)"),
    };
    let size = (config.source.width, config.source.height);
    let title = format!("salsify recv {}", socket.local_addr()?);
    let window = window::open(args.display, &title, size, args.size.is_none())?;
    let mut config = config;
    config.display.view = window.as_ref().map(|w| w.view());
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        let scheme = config
            .scheme
            .as_ref()
            .map_or("the scheme of the first sender", |s| s.name());
        let how = match &config.secure {
            Some(c) => format!("encrypted sessions with peer key {}", c.peer.fingerprint()),
            None => "plaintext".to_string(),
        };
        match config.dial {
            None if config.via.is_some() => eprintln!(
                "salsify recv: meeting the sender through {} for {scheme} ({how})",
                args.meet.via.as_deref().unwrap_or("")
            ),
            Some(to) => eprintln!(
                "salsify recv: dialing {to} from {} for {scheme} ({how})",
                socket.local_addr()?
            ),
            None => eprintln!(
                "salsify recv: listening on {} for {scheme} ({how})",
                socket.local_addr()?
            ),
        }
    }
    if config.secure.is_none() {
        eprintln!("{}", plaintext_warning("salsify recv"));
    }
    let scheme = config.scheme.as_ref().map(|s| s.name());
    let dash = dashboard::start(
        args.dashboard.dashboard.as_deref(),
        &title,
        scheme,
        dashboard::Runner::Recv,
    )?;
    let observer = dashboard::observer(&dash);
    let totals = window::run_in(window, "salsify recv", &stop.clone(), move || {
        receiver_loop::run_with_display(config, display, socket, stop, observer)
    });
    dashboard::finish(dash);
    let totals = totals?;
    let foreign = match totals.foreign {
        0 => String::new(),
        n => format!(" ({n} of another scheme)"),
    };
    eprintln!(
        "salsify recv: {} frames shown, {} sessions{}, {} datagrams ignored{foreign}, {} refused unauthenticated, {} of {} datagrams kernel-timestamped",
        totals.shown,
        totals.sessions,
        totals.scheme.map_or(String::new(), |s| format!(" (last: {s})")),
        totals.ignored,
        totals.rejected,
        totals.kernel_stamps,
        totals.datagrams
    );
    if let Some(audio) = &totals.audio {
        eprintln!("salsify recv: {}", crate::flags::audio::line(audio));
    }
    if totals.audio_refused > 0 {
        eprintln!(
            "salsify recv: {} audio datagrams refused (malformed, or not from the session's sender)",
            totals.audio_refused
        );
    }
    if let Some(d) = &totals.data {
        eprintln!("salsify recv: data: {}", crate::flags::data::line(d));
    }
    if let Some(path) = &args.summary {
        write_summary(path, &totals)?;
    }
    if let Some(d) = &totals.data {
        crate::flags::data::check_delivered(d)?;
    }
    if totals.replayed > 0 {
        eprintln!(
            "salsify recv: {} frames not written: sent before frames another session already showed (a replay)",
            totals.replayed
        );
    }
    if totals.busy_refused > 0 {
        eprintln!(
            "salsify recv: {} busy answers to other callers (one call at a time)",
            totals.busy_refused
        );
    }
    if let Some(ended) = totals.ended {
        eprintln!("salsify recv: {}", ended.say("the sender"));
        if ended.failed() {
            let hint = match args.to.as_deref() {
                Some(to) => format!(
                    ": is it running (salsify send --listen {to}){}?",
                    if config_keyed(args) {
                        " with keys matching ours"
                    } else {
                        ", without keys like us"
                    }
                ),
                None => String::new(),
            };
            bail!("{}{hint}", ended.say("the sender"));
        }
    }
    if totals.shown == 0 {
        bail!(
            "no frame was shown ({} datagrams received): no output written",
            totals.datagrams
        );
    }
    Ok(())
}

fn config_keyed(args: &RecvArgs) -> bool {
    args.keys.key.is_some()
}

/// The run's figures as JSON: the counts, and the audio's figures when audio was heard
/// (absent otherwise, as in a simulated run without audio).
fn summary_json(totals: &runtime::ReceiverTotals) -> Result<serde_json::Value> {
    let mut json = serde_json::json!({
        "frames_shown": totals.shown,
        "sessions": totals.sessions,
        "scheme": totals.scheme,
        "datagrams": totals.datagrams,
        "datagrams_ignored": totals.ignored,
        "datagrams_refused": totals.rejected,
        "busy_answers": totals.busy_refused,
    });
    if let Some(d) = &totals.data {
        json["data"] = crate::flags::data::json(d);
    }
    if let Some(audio) = &totals.audio {
        let figures = serde_json::to_value(crate::flags::audio::figures(audio))?;
        if let (Some(all), serde_json::Value::Object(more)) = (json.as_object_mut(), figures) {
            all.extend(more);
        }
    }
    Ok(json)
}

fn write_summary(path: &std::path::Path, totals: &runtime::ReceiverTotals) -> Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(&summary_json(totals)?)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write '{}'", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver that heard no audio writes no audio field; one that did writes the four.
    #[test]
    fn the_summary_has_audio_fields_only_with_audio() {
        let mut totals = runtime::ReceiverTotals {
            shown: 90,
            ..Default::default()
        };
        let json = summary_json(&totals).unwrap();
        assert_eq!(json["frames_shown"], 90);
        assert!(json.get("audio_delay_mean_ms").is_none(), "{json}");
        totals.audio = Some(salsify_audio::AudioSummary {
            frames_played: 150,
            delay_mean_ms: 70.0,
            delay_p95_ms: 90.0,
            pictures_scored: 80,
            av_skew_in_window_fraction: 0.975,
            ..Default::default()
        });
        let json = summary_json(&totals).unwrap();
        assert_eq!(json["audio_delay_p95_ms"], 90.0);
        assert_eq!(json["av_skew_in_window_fraction"], 0.975);
        assert_eq!(json["audio_concealed_fraction"], 0.0);
    }
}
