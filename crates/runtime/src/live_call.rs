//! A live call as typed configuration: the scheme (a name and its parameter tables), the
//! sender's settings, the camera, the emulated path and the receiver's outputs, with what
//! turns them into the three loops' configurations and runs sender, relay and receiver of
//! one call on loopback ([`PreparedCall`]).
//!
//! The command's flags (`salsify demo`, `send`, `recv`, `link`, `peer`) convert into these
//! types, and `salsify eval`'s live cells build them from an experiment: neither goes
//! through the other's command line. The scheme is kept as its name and parameter value,
//! resolved into a [`SchemeConfig`] only when a loop is configured.
//!
//! Errors name a setting by the flag that gives it on the command line (`--scheme`,
//! `--cpu-used`), as every caller is a command that reports them to a person.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Context, Result};
use salsify_netem::{LinkConfig, QueueLimit};
use salsify_schemes::{SchemeConfig, SchemeError, SchemeParams, SourceInfo};
use salsify_secure::{Keypair, SecureConfig};
use salsify_time::Duration;

use crate::audio_receive::AudioReceiveConfig;
use crate::audio_send::AudioSendConfig;
use crate::call_start::CallStart;
use crate::camera::PictureSource;
use crate::display::{DisplayConfig, LiveView};
use crate::observe::{Observation, Observer};
use crate::receiver_loop::{self, ReceiverLoopConfig};
use crate::relay::{self, DirectionConfig, LinkStart, RelayConfig};
use crate::relay_sender::SenderRule;
use crate::sender_loop::{self, SenderLoopConfig};
use crate::{clock, udp};

/// Most bytes the live relay queues per direction, whatever the link's queue says.
pub const RELAY_MAX_QUEUE_BYTES: u64 = 256 << 20;

/// A scheme by name with its parameter tables (those of experiment files).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemeChoice {
    /// The scheme's name, as `--scheme` and experiment files give it.
    pub name: String,
    /// Parameters of its family (defaults where a table is absent).
    pub params: SchemeParams,
    /// For a scheme that encodes two options of each picture: in parallel on two cores
    /// (`true`) or in series on one, whatever its name says (`--mode`). `None`: as named.
    pub parallel: Option<bool>,
}

impl SchemeChoice {
    /// The scheme `name` with `params`, as named.
    pub fn new(name: impl Into<String>, params: SchemeParams) -> SchemeChoice {
        SchemeChoice {
            name: name.into(),
            params,
            parallel: None,
        }
    }

    /// The run's name: the scheme and what its parameters change from the defaults
    /// (`salsify-2c [d 50 ms]`), for titles.
    pub fn run_name(&self) -> String {
        salsify_schemes::run_name(&self.name, &self.params)
    }

    /// The scheme fully configured; it must run live.
    pub fn build(&self) -> Result<SchemeConfig> {
        // Only a family whose schemes encode two options has an encode mode to override.
        let salsify = &salsify_schemes::families::salsify::FAMILY;
        let scheme = match self.parallel {
            Some(parallel) if salsify.owns(&self.name) => {
                salsify.configure_with(&self.name, &self.params, Some(parallel))
            }
            _ => SchemeConfig::named(&self.name, &self.params),
        }
        .map_err(|e| anyhow!("--scheme: {e}"))?;
        if !scheme.runs_live() {
            bail!("{}", SchemeError::SimulationOnly(scheme.name()));
        }
        Ok(scheme)
    }
}

/// The sender's settings beside its camera and destination.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderSide {
    /// The scheme.
    pub scheme: SchemeChoice,
    /// libvpx speed, -16..=-1 (more negative is faster and coarser).
    pub cpu_used: i32,
    /// Session id of the first session (`None`: one chosen from the process id and time).
    pub connection_id: Option<u16>,
    /// Start a new session after this long without feedback while sending; `None`: never on
    /// silence alone (see [`SenderLoopConfig::reset_after`]).
    pub reset_after: Option<Duration>,
}

impl SenderSide {
    /// The sender of `scheme` with the defaults of `salsify send`.
    pub fn new(scheme: SchemeChoice) -> SenderSide {
        SenderSide {
            scheme,
            cpu_used: -8,
            connection_id: None,
            reset_after: Some(sender_loop::DEFAULT_RESET_AFTER),
        }
    }

    /// Refuses a libvpx speed out of range.
    pub fn check_cpu_used(cpu_used: i32) -> Result<()> {
        if !(-16..=-1).contains(&cpu_used) {
            bail!("--cpu-used {cpu_used} is not in -16..=-1");
        }
        Ok(())
    }

    /// The loop configuration of this sender, sending to `to`.
    pub fn loop_config(&self, to: SocketAddr) -> Result<SenderLoopConfig> {
        Self::check_cpu_used(self.cpu_used)?;
        Ok(SenderLoopConfig {
            connection_id: self.connection_id.unwrap_or_else(fresh_connection_id),
            cpu_used: self.cpu_used,
            reset_after: self.reset_after,
            ..SenderLoopConfig::new(to, self.scheme.build()?)
        })
    }
}

/// A connection id unlikely to match a previous run's.
fn fresh_connection_id() -> u16 {
    let t = clock::now().as_micros();
    (t as u16) ^ (std::process::id() as u16).rotate_left(7)
}

/// Where the camera's pictures come from (opened by the command, which knows the inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct CameraConfig {
    /// `synthetic`, a `.y4m` file, `-` (Y4M on standard input), a live grab or any file
    /// ffmpeg reads.
    pub input: String,
    /// Size (width, height) of the synthetic source, or what a live grab is asked for.
    pub size: (u32, u32),
    /// Frame rate of the synthetic source or live grab (files play at their own rate).
    pub fps: f64,
    /// Start again at the end of a file.
    pub looped: bool,
}

/// When a relay's links start, before a call says which mark "the call" is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PathStart {
    /// With the call: the sender's first picture where the sender runs in this process,
    /// else the first datagram.
    #[default]
    Call,
    /// At the first datagram.
    FirstDatagram,
    /// When the relay starts.
    Launch,
}

impl PathStart {
    /// The relay's start; `call` is the sender's mark when there is one.
    pub fn relay_start(self, call: Option<&CallStart>) -> LinkStart {
        match (self, call) {
            (PathStart::Call, Some(call)) => LinkStart::Call(call.clone()),
            (PathStart::Call | PathStart::FirstDatagram, _) => LinkStart::FirstDatagram,
            (PathStart::Launch, _) => LinkStart::Launch,
        }
    }
}

/// The emulated path between sender and receiver, its links built.
#[derive(Debug, Clone, Default)]
pub struct LinkPath {
    /// Sender to receiver (`None`: forwarded at once).
    pub video: Option<LinkConfig>,
    /// Receiver to sender.
    pub ack: Option<LinkConfig>,
    /// A name for the trace, in log headers and lines printed.
    pub trace_name: String,
    /// When the links start.
    pub start: PathStart,
    /// When a scheduled outage begins after the link starts (the `dropout` preset), for the
    /// demo's recovery line.
    pub outage_at: Option<Duration>,
}

impl LinkPath {
    /// The relay configuration for this path, forwarding to `to`, logging into `log_dir`
    /// (created), its links starting with `call` where the sender marks one.
    pub fn relay_config(
        &self,
        to: SocketAddr,
        log_dir: Option<&Path>,
        call: Option<&CallStart>,
    ) -> Result<RelayConfig> {
        if let Some(dir) = log_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow!("cannot create folder '{}': {e}", dir.display()))?;
        }
        let direction = |link: &Option<LinkConfig>, file: &str| DirectionConfig {
            log: log_dir.filter(|_| link.is_some()).map(|d| d.join(file)),
            link: link.clone().map(bound_queue),
            trace_name: self.trace_name.clone(),
        };
        Ok(RelayConfig {
            to,
            video: direction(&self.video, "video.log"),
            ack: direction(&self.ack, "ack.log"),
            loopback_only: false,
            realtime: true,
            report: log_dir.map(|d| d.join("relay.csv")),
            start: self.start.relay_start(call),
            sender: SenderRule::default(),
        })
    }
}

/// `link` with its queue bounded in bytes (even an unlimited one), so a flood cannot exhaust
/// the relay's memory.
fn bound_queue(mut link: LinkConfig) -> LinkConfig {
    link.queue = match (link.queue.packets, link.queue.bytes) {
        (Some(p), None) => QueueLimit::packets_and_bytes(p, RELAY_MAX_QUEUE_BYTES),
        (None, None) => QueueLimit::bytes(RELAY_MAX_QUEUE_BYTES),
        _ => link.queue,
    };
    link
}

/// A call on loopback in one process (`salsify demo`, `salsify eval`'s live cells): sender,
/// relay and receiver, and what the command around them does.
#[derive(Debug, Clone)]
pub struct LiveCall {
    /// The sender.
    pub sender: SenderSide,
    /// Its camera.
    pub camera: CameraConfig,
    /// The path between sender and receiver.
    pub path: LinkPath,
    /// The receiver's outputs.
    pub receiver: ReceiverSide,
    /// How long the call runs.
    pub duration: Duration,
    /// Folder for the received video and the logs.
    pub out: PathBuf,
    /// Seal every datagram with fresh keys (else plaintext).
    pub encrypted: bool,
    /// The camera plays a barcoded Y4M file: also score the call black-box by barcodes.
    pub barcoded: bool,
    /// No line per second.
    pub quiet: bool,
    /// Serve a live dashboard at this address (`--dashboard`'s ADDR).
    pub dashboard: Option<String>,
    /// The call's audio (`None`: video only).
    pub audio: Option<CallAudio>,
}

/// The audio of a [`LiveCall`]: its source and encoder at the sender, its player at the
/// receiver. The receiver reports each frame it plays (`Observation::AudioPlayed`); the
/// call's watcher writes them as `audio.csv` on its own clock, beside its `frames.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallAudio {
    /// The sender's source and encoder.
    pub send: AudioSendConfig,
    /// The receiver's jitter buffer and lip sync.
    pub player: salsify_audio::PlayerConfig,
    /// Write what the receiver played here.
    pub wav: Option<PathBuf>,
    /// Also play it on the default output device (`--play`).
    pub play: bool,
}

/// The receiver's outputs in a [`LiveCall`] (it always writes `received.ivf` and its log).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverSide {
    /// Also write every shown picture to `received.y4m`.
    pub y4m: bool,
    /// Show the received video in a window.
    pub display: bool,
    /// Score shown pictures with SSIM.
    pub ssim: bool,
}

/// A [`LiveCall`] with its sockets bound, keys made and loops configured, not yet running.
pub struct PreparedCall {
    /// The receiver's loop.
    pub receiver: ReceiverLoopConfig,
    /// The relay's loop.
    pub relay: RelayConfig,
    /// The sender's loop.
    pub sender: SenderLoopConfig,
    recv_socket: std::net::UdpSocket,
    relay_socket: std::net::UdpSocket,
}

impl LiveCall {
    /// Creates the output folder, binds the receiver's and the relay's sockets on
    /// 127.0.0.1, makes keys and configures the three loops for a camera of `source`.
    ///
    /// The receiver keeps its one sender for the whole call (no session timeout); the sender
    /// starts a new session on silence only as [`SenderSide::reset_after`] says, which the
    /// demo and the evaluation leave at `None`: a silence here is the link's outage, and a
    /// fresh sender would part ways with the simulation of the same call.
    pub fn prepare(&self, source: SourceInfo) -> Result<PreparedCall> {
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("cannot create folder '{}'", self.out.display()))?;
        let loopback = "127.0.0.1:0".parse().expect("literal address");
        let recv_socket = udp::bind(loopback)?;
        let relay_socket = udp::bind(loopback)?;
        let call_start = CallStart::new();
        let relay = self.path.relay_config(
            recv_socket.local_addr()?,
            Some(&self.out),
            Some(&call_start),
        )?;
        let (sender_secure, receiver_secure) = match self.encrypted {
            false => (None, None),
            true => {
                let fresh = || Keypair::generate().context("cannot generate session keys");
                let (s, r) = (fresh()?, fresh()?);
                (
                    Some(SecureConfig::new(s.private, r.public)),
                    Some(SecureConfig::new(r.private, s.public)),
                )
            }
        };
        let sender = SenderLoopConfig {
            call_start: Some(call_start),
            audio: self.audio.as_ref().map(|a| a.send.clone()),
            ..self.sender_config(relay_socket.local_addr()?, sender_secure)?
        };
        let audio = match &self.audio {
            Some(a) => AudioReceiveConfig {
                player: a.player,
                wav: a.wav.clone(),
                // The watcher writes the log, on the clock of its frames.csv.
                log: None,
                play: a.play,
            },
            None => AudioReceiveConfig::default(),
        };
        let receiver = ReceiverLoopConfig {
            scheme: Some(sender.scheme.clone()),
            source,
            display: DisplayConfig {
                y4m: self.receiver.y4m.then(|| self.out.join("received.y4m")),
                size: Some((source.width, source.height)),
                ivf: Some(self.out.join("received.ivf")),
                log: Some(self.out.join("receiver.csv")),
                fps: source.fps.round().max(1.0) as u32,
                view: None,
            },
            secure: receiver_secure,
            // Its one sender stays for the call: frames held in a deep queue after an outage
            // are late, not another sender's.
            session_timeout: None,
            audio: Some(audio),
            ..ReceiverLoopConfig::default()
        };
        Ok(PreparedCall {
            receiver,
            relay,
            sender,
            recv_socket,
            relay_socket,
        })
    }

    /// The sender's loop, sending to `to`.
    pub fn sender_config(
        &self,
        to: SocketAddr,
        secure: Option<SecureConfig>,
    ) -> Result<SenderLoopConfig> {
        Ok(SenderLoopConfig {
            log: Some(self.out.join("sender.csv")),
            secure,
            ..self.sender.loop_config(to)?
        })
    }
}

impl PreparedCall {
    /// Starts receiver, relay and sender on their threads, showing pictures in `view` if
    /// given and reporting to `observations`. The first to fail or end sets `stop`; the
    /// sender ends with its source.
    pub fn spawn(
        self,
        source: Box<dyn PictureSource>,
        view: Option<LiveView>,
        stop: &Arc<AtomicBool>,
        observations: &mpsc::Sender<Observation>,
    ) -> Result<RunningCall> {
        let PreparedCall {
            mut receiver,
            relay,
            sender,
            recv_socket,
            relay_socket,
        } = self;
        receiver.display.view = view;
        let observer = || Observer::new(observations.clone());
        let threads = [
            spawn("receiver", stop, {
                let (stop, obs) = (stop.clone(), observer());
                move || receiver_loop::run(receiver, recv_socket, stop, obs).map(drop)
            })?,
            spawn("link", stop, {
                let (stop, obs) = (stop.clone(), observer());
                move || relay::run(relay, relay_socket, stop, obs).map(drop)
            })?,
            spawn("sender", stop, {
                let (stop, obs) = (stop.clone(), observer());
                move || {
                    let totals = sender_loop::run(sender, source, stop, obs)?;
                    match totals.source_failed {
                        Some(why) => Err(anyhow!("the input failed: {why}")),
                        None => Ok(()),
                    }
                }
            })?,
        ];
        Ok(RunningCall { threads })
    }
}

/// The three threads of a running call.
pub struct RunningCall {
    threads: [JoinHandle<Result<()>>; 3],
}

impl RunningCall {
    /// Waits for the three threads; the first error, if any.
    pub fn join(self) -> Option<anyhow::Error> {
        let mut failed = None;
        for t in self.threads {
            if let Ok(Err(e)) | Err(e) = t.join().map_err(|_| anyhow!("a thread panicked")) {
                failed.get_or_insert(e);
            }
        }
        failed
    }
}

/// Runs `f` on a named thread; its end (an error or not) sets `stop`.
fn spawn(
    name: &str,
    stop: &Arc<AtomicBool>,
    f: impl FnOnce() -> Result<()> + Send + 'static,
) -> Result<JoinHandle<Result<()>>> {
    let stop = stop.clone();
    let label = name.to_string();
    std::thread::Builder::new()
        .name(label.clone())
        .spawn(move || {
            let result = f().with_context(|| format!("{label} failed"));
            stop.store(true, Ordering::SeqCst);
            result
        })
        .with_context(|| format!("cannot start the {name} thread"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sender_loop::DEFAULT_RESET_AFTER;

    fn call(reset_after: Option<Duration>) -> LiveCall {
        LiveCall {
            sender: SenderSide {
                reset_after,
                ..SenderSide::new(SchemeChoice::new("salsify-2c", SchemeParams::default()))
            },
            camera: CameraConfig {
                input: "synthetic".into(),
                size: (64, 48),
                fps: 30.0,
                looped: false,
            },
            path: LinkPath::default(),
            receiver: ReceiverSide::default(),
            duration: Duration::from_secs(1),
            out: PathBuf::from("out"),
            encrypted: false,
            barcoded: false,
            quiet: true,
            dashboard: None,
            audio: None,
        }
    }

    /// A sender on its own resets after 2 s of silence by default; a call's sender does
    /// what its configuration says (the demo: never, unless asked).
    #[test]
    fn a_calls_sender_resets_only_when_configured() {
        let to = "127.0.0.1:9".parse().unwrap();
        let alone = SenderSide::new(SchemeChoice::new("conventional", SchemeParams::default()));
        assert_eq!(
            alone.loop_config(to).unwrap().reset_after,
            Some(DEFAULT_RESET_AFTER)
        );
        assert_eq!(
            call(None).sender_config(to, None).unwrap().reset_after,
            None
        );
        let half = Some(Duration::from_millis(500));
        let config = call(half).sender_config(to, None).unwrap();
        assert_eq!(config.reset_after, half);
        assert_eq!(config.log, Some(PathBuf::from("out/sender.csv")));
    }

    /// The cores override applies to a scheme with two encodes; a simulation-only scheme
    /// and an unknown name are refused, and a bad libvpx speed too.
    #[test]
    fn schemes_are_resolved_and_checked() {
        let mut choice = SchemeChoice::new("salsify-2c", SchemeParams::default());
        choice.parallel = Some(false);
        let built = format!("{:?}", choice.build().unwrap());
        assert!(built.contains("parallel: false"), "{built}");
        let oracle = SchemeChoice::new("oracle", SchemeParams::default());
        assert!(oracle.build().is_err());
        let bogus = SchemeChoice::new("bogus", SchemeParams::default());
        let err = bogus.build().unwrap_err().to_string();
        assert!(err.starts_with("--scheme:"), "{err}");
        let mut side = SenderSide::new(SchemeChoice::new("salsify-1c", SchemeParams::default()));
        side.cpu_used = 0;
        let to = "127.0.0.1:9".parse().unwrap();
        assert!(side.loop_config(to).is_err());
    }

    /// Even an unlimited queue is bounded in bytes in the live relay; a queue in packets
    /// gets the byte bound beside it; a link-less direction logs nothing.
    #[test]
    fn the_relay_queue_is_bounded_in_bytes() {
        let mut link = salsify_netem::presets::ramp().unwrap();
        link.queue = QueueLimit::UNLIMITED;
        let path = LinkPath {
            video: Some(link.clone()),
            ack: None,
            ..LinkPath::default()
        };
        let to = "127.0.0.1:9".parse().unwrap();
        let config = path.relay_config(to, None, None).unwrap();
        let queue = config.video.link.unwrap().queue;
        assert_eq!(
            (queue.packets, queue.bytes),
            (None, Some(RELAY_MAX_QUEUE_BYTES))
        );
        assert!(config.ack.link.is_none() && config.ack.log.is_none());
        link.queue = QueueLimit::packets(256);
        let path = LinkPath {
            video: Some(link),
            ..LinkPath::default()
        };
        let queue = path
            .relay_config(to, None, None)
            .unwrap()
            .video
            .link
            .unwrap()
            .queue;
        assert_eq!(
            (queue.packets, queue.bytes),
            (Some(256), Some(RELAY_MAX_QUEUE_BYTES))
        );
    }

    /// "With the call" is the sender's mark where there is one, else the first datagram.
    #[test]
    fn the_path_starts_with_the_call_where_there_is_one() {
        let mark = CallStart::new();
        assert!(matches!(
            PathStart::Call.relay_start(Some(&mark)),
            LinkStart::Call(_)
        ));
        assert!(matches!(
            PathStart::Call.relay_start(None),
            LinkStart::FirstDatagram
        ));
        assert!(matches!(
            PathStart::Launch.relay_start(Some(&mark)),
            LinkStart::Launch
        ));
    }
}
