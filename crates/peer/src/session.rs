//! One measured call: page server, relay and browser started, the call recorded for a
//! while, everything stopped (by process id, on success, error or Ctrl-C), then scored.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{anyhow, bail, Context, Result};
use salsify_codec::y4m::Y4mReader;
use salsify_runtime::clock;
use salsify_runtime::observe::Observer;
use salsify_runtime::relay::{self, RelayConfig, RelayTotals};
use salsify_time::{Duration, Instant};
use serde::Serialize;

use crate::audio_tap::AudioTapsRecord;
use crate::chromium::{self, Browser, BrowserConfig};
use crate::records::RecordWriter;
use crate::server::{PageEvent, PageServer};

/// Builds the relay's configuration for a receiver at the given address.
pub type RelayConfigFor = Box<dyn Fn(SocketAddr) -> Result<RelayConfig> + Send + Sync>;

/// A call's settings.
#[derive(Debug, Clone)]
pub struct CallConfig {
    /// Chromium binary (default: found on `PATH`).
    pub chromium: Option<PathBuf>,
    /// The barcoded Y4M the fake camera plays, looped.
    pub source: PathBuf,
    /// Output folder.
    pub out: PathBuf,
    /// How long to record once the call is connected.
    pub duration: Duration,
    /// How long to wait, from the browser's start, for the call to connect.
    pub connect_timeout: Duration,
    /// `RTCRtpSendParameters.degradationPreference` (None: Chrome's default).
    pub degradation_preference: Option<String>,
    /// `RTCRtpEncodingParameters.maxBitrate` in bit/s (None: Chrome's default).
    pub max_bitrate_bps: Option<u64>,
    /// The video codec's MIME type, e.g. `video/VP9` (None: VP8). The call fails, naming
    /// the codecs this Chromium offers, when it does not offer this one.
    pub codec: Option<String>,
    /// `RTCRtpEncodingParameters.scalabilityMode`, e.g. `L3T3_KEY` (None: Chrome's default).
    pub scalability_mode: Option<String>,
    /// UDP port of the relay (0: any free port).
    pub relay_port: u16,
    /// Extra browser switches.
    pub extra_args: Vec<String>,
    /// A 48 kHz WAV file the fake microphone plays: the call carries audio, and the page
    /// records the microphone's track and the remote track as played (None: video only).
    pub microphone: Option<PathBuf>,
}

/// What the page is told.
#[derive(Debug, Serialize)]
struct PageConfig {
    width: u32,
    height: u32,
    fps: f64,
    degradation_preference: Option<String>,
    max_bitrate_bps: Option<u64>,
    codec: Option<String>,
    scalability_mode: Option<String>,
    /// Whether the call carries the microphone's audio (recorded on both sides).
    audio: bool,
}

/// A recorded call.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// The browser's version line.
    pub browser: String,
    /// When both peer connections were connected (host monotonic µs).
    pub connected_us: u64,
    /// When recording stopped.
    pub ended_us: u64,
    /// The relay's address.
    pub relay: Option<String>,
    /// Datagrams the relay forwarded: video direction (sender to receiver), in and out.
    pub relay_video_packets: (u64, u64),
    /// Datagrams the relay dropped because they came from outside loopback.
    pub relay_refused: u64,
    /// ... and the feedback direction.
    pub relay_feedback_packets: (u64, u64),
    /// Camera pictures and presented pictures recorded.
    pub recorded: (u64, u64),
    /// Stopped early by Ctrl-C.
    pub interrupted: bool,
    /// The audio the page recorded, in a call with audio (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioTapsRecord>,
}

impl CallRecord {
    /// When the call connected.
    pub fn connected(&self) -> Instant {
        Instant::from_micros(self.connected_us)
    }

    /// When recording stopped.
    pub fn ended(&self) -> Instant {
        Instant::from_micros(self.ended_us)
    }
}

/// A running relay thread and its stop flag.
type RelaySlot = Arc<Mutex<Option<(JoinHandle<Result<RelayTotals>>, Arc<AtomicBool>)>>>;

/// Stops the relay thread when dropped (error paths included).
struct RelayGuard(RelaySlot);

impl RelayGuard {
    fn stop(&self) -> Result<Option<RelayTotals>> {
        let taken = self.0.lock().map_err(|_| anyhow!("relay"))?.take();
        match taken {
            Some((handle, stop)) => {
                stop.store(true, Ordering::SeqCst);
                let totals = handle.join().map_err(|_| anyhow!("the relay panicked"))??;
                Ok(Some(totals))
            }
            None => Ok(None),
        }
    }
}

impl Drop for RelayGuard {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Runs one call and records it into `config.out`; `stop` (Ctrl-C) ends the recording early;
/// `progress` gets a line now and then.
pub fn record_call(
    config: &CallConfig,
    relay_config: RelayConfigFor,
    stop: Arc<AtomicBool>,
    mut progress: impl FnMut(&str),
) -> Result<CallRecord> {
    let binary = chromium::find_binary(config.chromium.as_deref())?;
    let browser_version = chromium::version(&binary)?;
    let (width, height, fps) = source_format(&config.source)?;
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("cannot create '{}'", config.out.display()))?;

    let writer = RecordWriter::create(&config.out, width, height, fps)?;
    let page_config = PageConfig {
        width,
        height,
        fps: fps.to_f64(),
        degradation_preference: config.degradation_preference.clone(),
        max_bitrate_bps: config.max_bitrate_bps,
        codec: config.codec.clone(),
        scalability_mode: config.scalability_mode.clone(),
        audio: config.microphone.is_some(),
    };
    let (tx, rx) = mpsc::channel();
    let relay_slot: RelaySlot = Arc::new(Mutex::new(None));
    let relay_guard = RelayGuard(relay_slot.clone());
    let start_relay = relay_starter(relay_config, config.relay_port, relay_slot);
    let server = PageServer::start(
        &config.out,
        serde_json::to_string(&page_config)?,
        writer,
        tx,
        start_relay,
    )?;

    let browser_config = BrowserConfig {
        binary: Some(binary.clone()),
        camera: config
            .source
            .canonicalize()
            .with_context(|| format!("cannot find the source '{}'", config.source.display()))?,
        profile: config.out.join("chromium-profile"),
        log: config.out.join("chromium.log"),
        extra_args: config.extra_args.clone(),
        microphone: config
            .microphone
            .as_ref()
            .map(|m| {
                m.canonicalize()
                    .with_context(|| format!("cannot find the microphone's file '{}'", m.display()))
            })
            .transpose()?,
    };
    let _ = std::fs::remove_dir_all(&browser_config.profile);
    let mut browser = Browser::start(&binary, &browser_config, &server.url())?;
    progress(&format!(
        "{browser_version} started (pid {}), page {}",
        browser.pid(),
        server.url()
    ));

    let connected = wait_connected(config, &rx, &mut browser, &stop, &mut progress)?;
    let relay_addr = connected.1;
    let connected = connected.0;
    progress("call connected through the relay; recording");
    let end = connected + config.duration;
    let mut next_line = clock::now() + Duration::from_secs(1);
    while clock::now() < end && !stop.load(Ordering::Relaxed) {
        browser.check_running()?;
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(PageEvent::Error(e)) => bail!("the page failed: {e}"),
            Ok(PageEvent::State { peer, state, .. }) if state == "failed" => {
                bail!("the {peer} peer connection failed during the call")
            }
            Ok(PageEvent::Warning(w)) => progress(&format!("page: {w}")),
            _ => {}
        }
        if clock::now() >= next_line {
            next_line += Duration::from_secs(1);
            let left = end.saturating_duration_since(clock::now()).as_secs_f64();
            progress(&format!("recording, {left:.0} s left"));
        }
    }
    let ended = clock::now();
    let interrupted = stop.load(Ordering::Relaxed);
    let writer = server.stop_recording();
    browser.stop();
    let totals = relay_guard.stop()?;
    let audio = server.take_audio();
    server.stop()?;
    let (captures, shown) = match writer {
        Some(w) => {
            let counts = (w.captures_written, w.shown_written);
            w.finish()?;
            counts
        }
        None => (0, 0),
    };
    let _ = std::fs::remove_dir_all(&browser_config.profile);
    let audio = match config.microphone {
        Some(_) => Some(audio.write(&config.out)?.with_context(|| {
            format!(
                "the call carried no audio the page could record on both sides: see events.jsonl in {}",
                config.out.display()
            )
        })?),
        None => None,
    };
    let record = CallRecord {
        browser: browser_version,
        connected_us: connected.as_micros(),
        ended_us: ended.as_micros(),
        relay: Some(relay_addr.to_string()),
        relay_video_packets: totals.map_or((0, 0), |t| (t.video.packets_in, t.video.packets_out)),
        relay_feedback_packets: totals.map_or((0, 0), |t| (t.ack.packets_in, t.ack.packets_out)),
        relay_refused: totals.map_or(0, |t| t.refused),
        recorded: (captures, shown),
        interrupted,
        audio,
    };
    let call_json = config.out.join("call.json");
    salsify_codec::output::write(&call_json, serde_json::to_string_pretty(&record)? + "\n")
        .with_context(|| format!("cannot write '{}'", call_json.display()))?;
    Ok(record)
}

/// Waits until both peer connections are connected; returns when and the relay's address.
fn wait_connected(
    config: &CallConfig,
    rx: &mpsc::Receiver<PageEvent>,
    browser: &mut Browser,
    stop: &AtomicBool,
    progress: &mut impl FnMut(&str),
) -> Result<(Instant, SocketAddr)> {
    let deadline = clock::now() + config.connect_timeout;
    let mut relay = None;
    let (mut sender, mut receiver) = (false, false);
    loop {
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted before the call connected");
        }
        browser.check_running()?;
        if clock::now() >= deadline {
            bail!(
                "the call did not connect within {:.0} s ({}): see chromium.log and events.jsonl in {}",
                config.connect_timeout.as_secs_f64(),
                match relay {
                    None => "the page never sent its ICE candidates".to_string(),
                    Some(a) => format!("ICE through the relay at {a} did not complete"),
                },
                config.out.display()
            );
        }
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(PageEvent::Error(e)) => bail!("the page failed: {e}"),
            Ok(PageEvent::Warning(w)) => progress(&format!("page: {w}")),
            Ok(PageEvent::Routed(a)) => {
                progress(&format!("relay on {a}; connecting"));
                relay = Some(a);
            }
            Ok(PageEvent::State { peer, state, at }) => {
                if state == "failed" {
                    bail!("the {peer} peer connection failed (ICE through the relay)");
                }
                let up = state == "connected";
                match peer.as_str() {
                    "sender" => sender = up,
                    "receiver" => receiver = up,
                    _ => {}
                }
                if sender && receiver {
                    let relay = relay.context("connected without the relay")?;
                    return Ok((at, relay));
                }
            }
            Err(_) => {}
        }
    }
}

/// The relay starter the server calls with the receiver's address.
fn relay_starter(
    relay_config: RelayConfigFor,
    port: u16,
    slot: RelaySlot,
) -> crate::server::StartRelay {
    Box::new(move |receiver: SocketAddr| {
        let config = RelayConfig {
            loopback_only: true,
            ..relay_config(receiver)?
        };
        // Loopback only, like the candidates the page is given (see `candidates`).
        let bind = SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), port);
        let socket = salsify_runtime::udp::bind(bind)
            .context("the relay's port (choose another with --relay-port)")?;
        let addr = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle =
            std::thread::spawn(move || relay::run(config, socket, flag, Observer::default()));
        *slot.lock().map_err(|_| anyhow!("relay"))? = Some((handle, stop));
        Ok(addr)
    })
}

/// Size and frame rate of a Y4M file.
pub fn source_format(path: &Path) -> Result<(u32, u32, salsify_codec::y4m::Rational)> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let reader = Y4mReader::new(std::io::BufReader::new(file))
        .with_context(|| format!("'{}' is not a Y4M file", path.display()))?;
    let h = reader.header();
    let fps = h
        .frame_rate
        .unwrap_or(salsify_codec::y4m::Rational::new(30, 1));
    Ok((h.width, h.height, fps))
}
