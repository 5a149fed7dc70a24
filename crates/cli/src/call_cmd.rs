//! `salsify call`: a two-way call, one command on each side with the same flags: one
//! meeting, one (encrypted) session and one socket; each side sends its pictures, voice and
//! data messages and shows, plays and writes the peer's. Its flags convert into the
//! runtime's [`CallConfig`].

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_audio::{PlayerConfig, SyncMode};
use salsify_runtime::call_loop::{self, CallConfig, CallTotals};
use salsify_runtime::AudioReceiveConfig;
use salsify_time::Duration;

use crate::dashboard;
use crate::flags::{
    plaintext_warning, read_params, DataArgs, KeyArgs, MeetArgs, SchemeArgs, SourceArgs,
};
use crate::runtime::display::DisplayConfig;
use crate::runtime::peer_link::Connect;
use crate::runtime::receiver_loop::ReceiverLoopConfig;
use crate::runtime::sender_loop::DEFAULT_RESET_AFTER;
use crate::runtime::{self, CameraInput};
use crate::window;

/// Flags of `salsify call`.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("meeting").required(true).args(["to", "listen", "via"])))]
pub struct CallArgs {
    /// Dial the peer listening at HOST:PORT (its `salsify call --listen`). This side starts
    /// the handshake.
    #[arg(long)]
    pub to: Option<String>,
    /// Listen at HOST:PORT for the peer to dial (`salsify call --to`).
    #[arg(long)]
    pub listen: Option<String>,
    #[command(flatten)]
    pub meet: MeetArgs,
    /// What this side sends: as `salsify send --input`, or `none` (no pictures: a viewer
    /// that still talks, an operator that sends commands).
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub scheme: SchemeArgs,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// This side's voice: `synthetic`, a 48 kHz `.wav` file (looped), `mic` (needs a build
    /// with `--features sound`) or `none`, as `salsify send --audio`. The peer's audio is
    /// played and measured whenever it comes.
    #[arg(long, default_value = "none")]
    pub audio: String,
    /// Show the peer's video in a window (as `salsify recv --display`), with this side's own
    /// pictures small in its bottom-right corner; in it `m` turns the microphone off and on
    /// (silence is sent), `v` the camera (a black picture is sent), `q` or Escape ends the call.
    #[arg(long)]
    pub display: bool,
    /// Also play the peer's audio on the default output device (needs `--features sound`).
    #[arg(long)]
    pub play: bool,
    /// Lip sync of the peer's audio: `video` or `none` (as `salsify recv --sync`).
    #[arg(long, default_value = "video", value_parser = crate::flags::audio::parse_sync)]
    pub sync: SyncMode,
    /// Write the call's files in this folder (made if missing; files of these names are
    /// replaced): `received.ivf` (the peer's video as shown), `audio.wav` (the peer's audio
    /// as played), `received.csv` and `sent.csv` (per-frame logs of both directions, as
    /// `recv --log` and `send --log`), `summary.json` (both directions' figures and the data
    /// channel's).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub data: DataArgs,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No status lines.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// The files `--out` holds.
struct OutFiles {
    ivf: PathBuf,
    wav: PathBuf,
    received_log: PathBuf,
    sent_log: PathBuf,
    summary: PathBuf,
}

impl OutFiles {
    fn in_folder(folder: &Path) -> Result<Self> {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot make the folder '{}'", folder.display()))?;
        Ok(OutFiles {
            ivf: folder.join("received.ivf"),
            wav: folder.join("audio.wav"),
            received_log: folder.join("received.csv"),
            sent_log: folder.join("sent.csv"),
            summary: folder.join("summary.json"),
        })
    }
}

impl CallArgs {
    fn connect(&self) -> Result<Connect> {
        let via = self.meet.via(self.keys.key.is_some())?;
        Ok(match (&self.to, &self.listen, via) {
            (Some(to), None, None) => Connect::To(crate::usage::resolve_destination("--to", to)?),
            (None, Some(at), None) => Connect::Listen(crate::usage::resolve("--listen", at)?),
            (None, None, Some(via)) => Connect::Via(via),
            _ => bail!("give exactly one of --to HOST:PORT (dial the peer), --listen HOST:PORT (wait for it to dial) or --via HOST:PORT (meet it through a rendezvous)"),
        })
    }

    fn config(&self, files: Option<&OutFiles>) -> Result<CallConfig> {
        let connect = self.connect()?;
        let secure = self.keys.secure_config()?;
        let side = self.scheme.sender(Some(DEFAULT_RESET_AFTER))?;
        let to = match &connect {
            Connect::To(a) | Connect::Listen(a) => *a,
            Connect::Via(via) => via.rendezvous,
        };
        let mut sender = side.loop_config(to)?;
        sender.log = files.map(|f| f.sent_log.clone());
        sender.status = !self.quiet;
        sender.audio = crate::flags::audio::audio_source("--audio", &self.audio)?;
        let mut player = PlayerConfig::default();
        player.sync.mode = self.sync;
        let receiver = ReceiverLoopConfig {
            params: read_params(self.scheme.scheme_params.as_deref())?,
            display: DisplayConfig {
                ivf: files.map(|f| f.ivf.clone()),
                log: files.map(|f| f.received_log.clone()),
                ..DisplayConfig::default()
            },
            status: !self.quiet,
            audio: Some(AudioReceiveConfig {
                player,
                wav: files.map(|f| f.wav.clone()),
                log: None,
                play: crate::flags::audio::play(self.play)?,
            }),
            ..ReceiverLoopConfig::default()
        };
        Ok(CallConfig {
            connect,
            secure,
            sender,
            receiver,
            video: self.source.input != "none",
            data: self.data.config()?,
            status: !self.quiet,
            hang_up: Default::default(),
        })
    }
}

/// Runs `salsify call`.
pub fn run(args: &CallArgs) -> Result<()> {
    let files = args.out.as_deref().map(OutFiles::in_folder).transpose()?;
    let mut config = args.config(files.as_ref())?;
    let mut camera = crate::runtime::CameraConfig::from(&args.source);
    if !config.video {
        camera.input = "synthetic".into(); // sized like one; never played
    }
    let mut source: Box<dyn runtime::camera::PictureSource> = Box::new(CameraInput::open(&camera)?);
    let display = runtime::display::Display::new(config.receiver.display.clone())?;
    let title = format!("salsify call: {}", config.sender.scheme.name());
    let size = (args.source.size.width, args.source.size.height);
    let mut window = window::open(args.display, &title, size, true)?;
    config.receiver.display.view = window.as_ref().map(|w| w.view());
    if let Some(controls) = window.as_mut().map(|w| w.call_controls()) {
        // The window's keys: `m` sends silence, `v` a black picture; its corner shows ours.
        if let Some(audio) = &mut config.sender.audio {
            audio.mute = Some(controls.mute);
        }
        if config.video {
            source = Box::new(runtime::camera::SwitchedCamera::new(
                source,
                controls.camera_off,
                Some(controls.preview),
            ));
        }
    }
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        let how = match &config.secure {
            Some(c) => format!("encrypted, peer key {}", c.peer.fingerprint()),
            None => "plaintext".to_string(),
        };
        let what = if config.video { "video" } else { "no video" };
        eprintln!(
            "salsify call: {} ({what}) with {} ({how})",
            config.sender.scheme.name(),
            place(&config.connect)
        );
    }
    if config.secure.is_none() {
        eprintln!("{}", plaintext_warning("salsify call"));
    }
    let dash = dashboard::start(
        args.dashboard.dashboard.as_deref(),
        &title,
        Some(config.sender.scheme.name()),
        dashboard::Runner::Recv,
    )?;
    let observer = dashboard::observer(&dash);
    let totals = window::run_in(window, "salsify call", &stop.clone(), move || {
        call_loop::run(config, source, display, stop, observer)
    });
    dashboard::finish(dash);
    let totals = totals?;
    print_totals(&totals);
    if let Some(ended) = totals.ended {
        eprintln!("salsify call: {}", ended.say("the peer"));
        if ended.failed() {
            let hint = match (&args.to, &args.keys.key) {
                (Some(to), Some(_)) => format!(
                    ": is it running (salsify call --listen {to}), with --key/--peer-key matching ours?"
                ),
                (Some(_), None) => {
                    ": nothing listens there, or the peer wants keys (--key/--peer-key)".into()
                }
                _ => String::new(),
            };
            bail!("{}{hint}", ended.say("the peer"));
        }
    }
    if let Some(f) = &files {
        write_summary(&f.summary, &totals)?;
    }
    if let Some(data) = &totals.data {
        crate::flags::data::check_delivered(data)?;
    }
    if totals.received.shown == 0 && totals.sent.stats.frames_sent == 0 && totals.data.is_none() {
        bail!("nothing was shown or sent: the peer was never reached");
    }
    Ok(())
}

fn place(connect: &Connect) -> String {
    match connect {
        Connect::To(to) => format!("the peer at {to}"),
        Connect::Listen(at) => format!("a peer dialing {at}"),
        Connect::Via(via) => format!("the peer met through {}", via.rendezvous),
    }
}

fn print_totals(t: &CallTotals) {
    let r = &t.received;
    eprintln!(
        "salsify call: received: {} frames shown, {} sessions{}, {} datagrams ignored, {} refused unauthenticated",
        r.shown,
        r.sessions,
        r.scheme.map_or(String::new(), |s| format!(" (last: {s})")),
        r.ignored,
        r.rejected,
    );
    if let Some(audio) = &r.audio {
        eprintln!(
            "salsify call: received: {}",
            crate::flags::audio::line(audio)
        );
    }
    let s = &t.sent.stats;
    eprintln!(
        "salsify call: sent: {}: {} pictures, {} frames sent, {} keyframes, {} skipped, {} dropped, over {} sessions; feedback {} on media, {} alone",
        t.sent.scheme,
        t.sent.pictures,
        s.frames_sent,
        s.keyframes,
        s.skipped,
        s.dropped,
        t.sent.sessions,
        t.link.feedback_bundled,
        t.link.feedback_alone,
    );
    if let Some((packets, bytes)) = t.sent.audio {
        eprintln!(
            "salsify call: sent: audio: {packets} packets, {:.1} kB (before sealing)",
            bytes as f64 / 1e3
        );
    }
    if let Some(d) = &t.data {
        eprintln!("salsify call: data: {}", crate::flags::data::line(d));
    }
}

/// Both directions' figures, and the data channel's.
fn summary_json(t: &CallTotals) -> Result<serde_json::Value> {
    let r = &t.received;
    let mut received = serde_json::json!({
        "frames_shown": r.shown,
        "sessions": r.sessions,
        "scheme": r.scheme,
        "datagrams": r.datagrams,
        "datagrams_ignored": r.ignored,
        "datagrams_refused": r.rejected,
    });
    if let Some(audio) = &r.audio {
        let figures = serde_json::to_value(crate::flags::audio::figures(audio))?;
        if let (Some(all), serde_json::Value::Object(more)) = (received.as_object_mut(), figures) {
            all.extend(more);
        }
    }
    let s = &t.sent.stats;
    let sent = serde_json::json!({
        "scheme": t.sent.scheme,
        "pictures": t.sent.pictures,
        "frames_sent": s.frames_sent,
        "keyframes": s.keyframes,
        "skipped": s.skipped,
        "dropped": s.dropped,
        "sessions": t.sent.sessions,
        "feedback_on_media": t.link.feedback_bundled,
        "feedback_alone": t.link.feedback_alone,
    });
    let data = t.data.as_ref().map(crate::flags::data::json);
    Ok(serde_json::json!({ "received": received, "sent": sent, "data": data }))
}

fn write_summary(path: &Path, totals: &CallTotals) -> Result<()> {
    let text = serde_json::to_string_pretty(&summary_json(totals)?)? + "\n";
    std::fs::write(path, text).with_context(|| format!("cannot write '{}'", path.display()))
}
