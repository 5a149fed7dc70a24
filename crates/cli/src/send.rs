//! `salsify send`: stream a video source to a receiver (or a relay) over UDP, with any scheme
//! that runs live. Its flags convert into the runtime's `SenderSide` and `CameraConfig`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use salsify_time::Duration;

use crate::dashboard;
use crate::flags::{plaintext_warning, KeyArgs, MeetArgs, SchemeArgs, SourceArgs};
use crate::runtime::hang_up::PeerEnded;
use crate::runtime::peer_link::Connect;
use crate::runtime::sender_loop::{self, SenderLoopConfig, DEFAULT_RESET_AFTER};
use crate::runtime::{self, CameraInput};

/// Flags of `salsify send`.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("meeting").required(true).args(["to", "listen", "via"])))]
pub struct SendArgs {
    /// Dial the receiver (or `salsify link`) listening at HOST:PORT. This side starts the
    /// handshake.
    #[arg(long)]
    pub to: Option<String>,
    /// Listen at HOST:PORT for a receiver that dials this sender (`salsify recv --to`):
    /// for a receiver behind a NAT, which can dial out but not be dialed. Nothing is sent
    /// until a receiver has dialed (and, with keys, completed the handshake).
    #[arg(long)]
    pub listen: Option<String>,
    #[command(flatten)]
    pub meet: MeetArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub scheme: SchemeArgs,
    #[command(flatten)]
    pub keys: KeyArgs,
    #[command(flatten)]
    pub data: crate::flags::DataArgs,
    /// Write a per-frame CSV log here (frames sent, pictures skipped or dropped; times in µs
    /// on the machine's monotonic clock, comparable with `salsify recv --log`).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The call's audio beside the video: `synthetic` (a speech-like voice with a timing mark
    /// each second, the audio barcode `salsify audio-marks` reads), a 48 kHz `.wav` file
    /// (looped), `mic` (the machine's default input device, mixed to mono and resampled to 48 kHz;
    /// needs a build with `--features sound`, see `scripts/setup --sound`), or `none`. 20 ms Opus frames (32 kb/s, in-band FEC and DTX on) made on the
    /// wall clock, each one datagram in the same session on the same socket as the video,
    /// counted in the scheme's budget and never skipped for the video. `salsify recv` plays
    /// it (`--audio-out` writes it).
    #[arg(long, default_value = "none")]
    pub audio: String,
    /// Stop after this many seconds (default: until Ctrl-C or the end of the input).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No status line per second.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// Runs `salsify send`.
pub fn run(args: &SendArgs) -> Result<()> {
    let via = args.meet.via(args.keys.key.is_some())?;
    let connect = match (&args.to, &args.listen, via) {
        (Some(to), None, None) => Connect::To(crate::usage::resolve_destination("--to", to)?),
        (None, Some(listen), None) => Connect::Listen(crate::usage::resolve("--listen", listen)?),
        (None, None, Some(via)) => Connect::Via(via),
        _ => bail!("give exactly one of --to HOST:PORT (dial the receiver), --listen HOST:PORT (wait for it to dial) or --via HOST:PORT (meet it through a rendezvous)"),
    };
    let (to, place) = match &connect {
        Connect::To(to) => (*to, format!("to {to}")),
        Connect::Listen(at) => (*at, format!("listening on {at}")),
        Connect::Via(via) => (
            via.rendezvous,
            format!("meeting the receiver through {}", via.rendezvous),
        ),
    };
    crate::paths::check_outputs(&[("--log", args.log.as_deref())])?;
    let side = args.scheme.sender(Some(DEFAULT_RESET_AFTER))?;
    let run_name = side.scheme.run_name();
    let config = SenderLoopConfig {
        connect,
        log: args.log.clone(),
        status: !args.quiet,
        secure: args.keys.secure_config()?,
        audio: crate::flags::audio::audio_source("--audio", &args.audio)?,
        data: args.data.config()?,
        ..side.loop_config(to)?
    };
    let source = CameraInput::open(&(&args.source).into())?;
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        let how = match &config.secure {
            Some(c) => format!("encrypted, peer key {}", c.peer.fingerprint()),
            None => "plaintext".to_string(),
        };
        eprintln!("salsify send: {run_name} {place} ({how})");
    }
    if config.secure.is_none() {
        eprintln!("{}", plaintext_warning("salsify send"));
    }
    let title = format!("salsify send: {run_name} {place}");
    let scheme = Some(config.scheme.name());
    let dash = dashboard::start(
        args.dashboard.dashboard.as_deref(),
        &title,
        scheme,
        dashboard::Runner::Send,
    )?;
    let totals = sender_loop::run(config, Box::new(source), stop, dashboard::observer(&dash));
    dashboard::finish(dash);
    let totals = totals?;
    let s = totals.stats;
    if totals.pictures == 0 {
        bail!(
            "no picture was read from '{}': nothing sent",
            args.source.input
        );
    }
    let options = match s.sent_better + s.sent_worse {
        0 => String::new(),
        _ => format!(" ({} better, {} worse)", s.sent_better, s.sent_worse),
    };
    eprintln!(
        "salsify send: {}: {} pictures, {} frames sent{options}, {} keyframes, {} skipped, {} dropped, over {} sessions",
        totals.scheme,
        totals.pictures,
        s.frames_sent,
        s.keyframes,
        s.skipped,
        s.dropped,
        totals.sessions
    );
    if totals.audio_overruns > 0 {
        eprintln!(
            "salsify send: audio: {} microphone frames dropped (the loop did not take them in time)",
            totals.audio_overruns
        );
    }
    if let Some((packets, bytes)) = totals.audio {
        eprintln!(
            "salsify send: audio: {packets} packets, {:.1} kB (before sealing)",
            bytes as f64 / 1e3
        );
    }
    if let Some(path) = &args.log {
        eprintln!("salsify send: log in {}", path.display());
    }
    if let Some(d) = &totals.data {
        eprintln!("salsify send: data: {}", crate::flags::data::line(d));
    }
    if let Some(ended) = totals.ended {
        eprintln!("salsify send: {}", ended.say("the receiver"));
        if let PeerEnded::NoAnswer(after) = ended {
            let hint = match &args.keys.key {
                Some(_) => "is the receiver running, with --key/--peer-key matching ours?",
                None => "nothing listens there, or the receiver wants keys (--key/--peer-key)",
            };
            bail!(
                "no answer from {to} in {:.0} s ({hint}): nothing was delivered",
                after.as_secs_f64()
            );
        }
        if ended.failed() {
            bail!("{}: nothing more was sent", ended.say("the receiver"));
        }
    }
    if let Some(d) = &totals.data {
        crate::flags::data::check_delivered(d)?;
    }
    if let Some(why) = &totals.source_failed {
        bail!(
            "the input '{}' failed after {} pictures: {why}",
            args.source.input,
            totals.pictures
        );
    }
    if args.keys.key.is_some() && !totals.keyed && args.to.is_none() {
        bail!("no receiver dialed {to} with matching keys: nothing was delivered");
    }
    if args.keys.key.is_some() && !totals.keyed {
        bail!(
            "{to} never answered the handshake (is the receiver running, with --key/--peer-key \
             matching ours?): nothing was delivered"
        );
    }
    Ok(())
}
