//! The page's server on loopback: serves the page, answers clock pings, routes the call's
//! ICE candidates through the relay, and takes the page's per-frame records and events.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use salsify_runtime::clock;
use salsify_time::Instant;
use tiny_http::{Header, Method, Request, Response, Server};

use crate::audio_tap::{parse_pcm, AudioTaps};
use crate::candidates::{self, Route};
use crate::records::{read_band, CaptureRecord, RecordWriter, ShownRecord};

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/call.js");
const SHOWN_WORKER: &str = include_str!("page/shown_worker.js");
const AUDIO_TAP: &str = include_str!("page/audio_tap.js");
/// Largest request body taken (a 1920x1080 I420 picture is 3.1 MB).
const MAX_BODY: u64 = 8 << 20;
/// Threads answering requests (pictures and bands arrive concurrently).
const WORKERS: usize = 4;

/// What the page reports that the session acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum PageEvent {
    /// A peer connection's state changed (`connected`, `failed`, ...).
    State {
        /// `sender` or `receiver`.
        peer: String,
        /// The new `connectionState`.
        state: String,
        /// When the server heard it.
        at: Instant,
    },
    /// The page failed; the message says where.
    Error(String),
    /// A frame could not be recorded (the message and how many times so far).
    Warning(String),
    /// The relay is running on this address (the page's candidates were routed).
    Routed(SocketAddr),
}

/// Starts the relay towards the receiver's address; returns the relay's address.
pub type StartRelay = Box<dyn FnOnce(SocketAddr) -> Result<SocketAddr> + Send>;

/// State shared by the request threads.
struct Shared {
    config_json: String,
    recording: AtomicBool,
    writer: Mutex<Option<RecordWriter>>,
    audio: Mutex<AudioTaps>,
    stats: Mutex<BufWriter<File>>,
    events_log: Mutex<BufWriter<File>>,
    events: Mutex<Sender<PageEvent>>,
    start_relay: Mutex<Option<StartRelay>>,
    stop: AtomicBool,
}

/// The running server.
pub struct PageServer {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

impl PageServer {
    /// Starts serving on an ephemeral loopback port. `config_json` is what the page gets at
    /// `/config`; records go to `writer`, stats and events to files in `dir`.
    pub fn start(
        dir: &std::path::Path,
        config_json: String,
        writer: RecordWriter,
        events: Sender<PageEvent>,
        start_relay: StartRelay,
    ) -> Result<PageServer> {
        let server = Server::http("127.0.0.1:0").map_err(|e| anyhow!("page server: {e}"))?;
        let addr = server
            .server_addr()
            .to_ip()
            .context("page server has no IP address")?;
        let create = |name: &str| {
            let path = dir.join(name);
            salsify_codec::output::create(&path)
                .map(BufWriter::new)
                .with_context(|| format!("cannot create '{}'", path.display()))
        };
        let shared = Arc::new(Shared {
            config_json,
            recording: AtomicBool::new(true),
            writer: Mutex::new(Some(writer)),
            audio: Mutex::new(AudioTaps::default()),
            stats: Mutex::new(create("stats.jsonl")?),
            events_log: Mutex::new(create("events.jsonl")?),
            events: Mutex::new(events),
            start_relay: Mutex::new(Some(start_relay)),
            stop: AtomicBool::new(false),
        });
        let server = Arc::new(server);
        let workers = (0..WORKERS)
            .map(|_| {
                let (server, shared) = (server.clone(), shared.clone());
                std::thread::spawn(move || serve(&server, &shared))
            })
            .collect();
        Ok(PageServer {
            shared,
            workers,
            addr,
        })
    }

    /// The page's address.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops taking records and returns the writer (to be finished).
    pub fn stop_recording(&self) -> Option<RecordWriter> {
        self.shared.recording.store(false, Ordering::SeqCst);
        self.shared.writer.lock().ok()?.take()
    }

    /// The call's audio recorded so far (taken: call after [`PageServer::stop_recording`]).
    pub fn take_audio(&self) -> AudioTaps {
        self.shared
            .audio
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }

    /// Stops the server and flushes its logs.
    pub fn stop(mut self) -> Result<()> {
        self.shared.stop.store(true, Ordering::SeqCst);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        self.shared
            .stats
            .lock()
            .map_err(|_| anyhow!("stats log"))?
            .flush()?;
        self.shared
            .events_log
            .lock()
            .map_err(|_| anyhow!("events log"))?
            .flush()?;
        Ok(())
    }
}

fn serve(server: &Server, shared: &Shared) {
    while !shared.stop.load(Ordering::Relaxed) {
        match server.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(Some(request)) => handle(request, shared),
            Ok(None) => {}
            Err(_) => return,
        }
    }
}

/// The query string's fields.
fn query(url: &str) -> (&str, HashMap<&str, &str>) {
    let (path, q) = url.split_once('?').unwrap_or((url, ""));
    let fields = q.split('&').filter_map(|kv| kv.split_once('=')).collect();
    (path, fields)
}

fn field<T: std::str::FromStr>(q: &HashMap<&str, &str>, name: &str) -> Result<T> {
    let v = q.get(name).with_context(|| format!("no '{name}' field"))?;
    v.parse()
        .map_err(|_| anyhow!("field '{name}': '{v}' is not a number"))
}

fn handle(mut request: Request, shared: &Shared) {
    let mut body = Vec::new();
    if *request.method() == Method::Post {
        if let Err(e) = request.as_reader().take(MAX_BODY).read_to_end(&mut body) {
            let _ = request.respond(Response::from_string(e.to_string()).with_status_code(400));
            return;
        }
    }
    let url = request.url().to_string();
    let (path, q) = query(&url);
    let result: Result<(String, &str)> = match path {
        "/" | "/index.html" => Ok((PAGE.to_string(), "text/html; charset=utf-8")),
        "/call.js" => Ok((SCRIPT.to_string(), "text/javascript; charset=utf-8")),
        "/shown-worker.js" => Ok((SHOWN_WORKER.to_string(), "text/javascript; charset=utf-8")),
        "/audio-tap.js" => Ok((AUDIO_TAP.to_string(), "text/javascript; charset=utf-8")),
        "/config" => Ok((shared.config_json.clone(), "application/json")),
        "/clock" => Ok((clock::now().as_micros().to_string(), "text/plain")),
        "/ice" => route(shared, &body).map(|r| (r, "application/json")),
        "/captured" => captured(shared, &q, &body).map(|_| (String::new(), "text/plain")),
        "/shown" => shown(shared, &q, &body).map(|_| (String::new(), "text/plain")),
        "/audio" => audio(shared, &q, &body).map(|_| (String::new(), "text/plain")),
        "/stats" => log_line(&shared.stats, &body).map(|_| (String::new(), "text/plain")),
        "/event" => event(shared, &body).map(|_| (String::new(), "text/plain")),
        _ => Err(anyhow!("no such page: {path}")),
    };
    let response = match result {
        Ok((text, kind)) => {
            let header =
                Header::from_bytes(&b"Content-Type"[..], kind.as_bytes()).expect("static header");
            Response::from_string(text).with_header(header)
        }
        Err(e) => {
            if path == "/ice" {
                send(shared, PageEvent::Error(format!("routing the call: {e:#}")));
            }
            Response::from_string(format!("{e:#}")).with_status_code(400)
        }
    };
    let _ = request.respond(response);
}

fn send(shared: &Shared, event: PageEvent) {
    if let Ok(tx) = shared.events.lock() {
        let _ = tx.send(event);
    }
}

/// Picks one UDP IPv4 host candidate on loopback per side, starts the relay towards the
/// receiver's and answers with both candidates pointed at the relay.
fn route(shared: &Shared, body: &[u8]) -> Result<String> {
    let (sender, receiver) = candidates::parse_lists(&String::from_utf8_lossy(body))?;
    let (sender, _) = candidates::loopback_udp_host("sender", &sender)?;
    let (receiver, receiver_addr) = candidates::loopback_udp_host("receiver", &receiver)?;
    let start = shared
        .start_relay
        .lock()
        .map_err(|_| anyhow!("relay starter"))?
        .take()
        .context("the page asked for a route twice")?;
    let relay = start(receiver_addr)?;
    send(shared, PageEvent::Routed(relay));
    let route: Route = candidates::route(&sender, &receiver, relay);
    Ok(serde_json::to_string(&route)?)
}

fn captured(shared: &Shared, q: &HashMap<&str, &str>, body: &[u8]) -> Result<()> {
    if !shared.recording.load(Ordering::Relaxed) {
        return Ok(());
    }
    let width: u32 = field(q, "w")?;
    let record = CaptureRecord {
        capture: Instant::from_micros(field(q, "ts")?),
        read: Instant::from_micros(field(q, "read")?),
        barcode: read_band(width, body),
    };
    let mut writer = shared.writer.lock().map_err(|_| anyhow!("records"))?;
    match writer.as_mut() {
        Some(w) => w.capture(&record),
        None => Ok(()),
    }
}

fn shown(shared: &Shared, q: &HashMap<&str, &str>, body: &[u8]) -> Result<()> {
    if !shared.recording.load(Ordering::Relaxed) {
        return Ok(());
    }
    let record = ShownRecord {
        display: Instant::from_micros(field(q, "display")?),
        received: field(q, "received").ok().map(Instant::from_micros),
        width: field(q, "w")?,
        height: field(q, "h")?,
        rtp: field(q, "rtp")?,
        missed_before: field(q, "missed")?,
    };
    let mut writer = shared.writer.lock().map_err(|_| anyhow!("records"))?;
    match writer.as_mut() {
        Some(w) => w.shown(&record, body),
        None => Ok(()),
    }
}

/// A chunk of the call's audio: `side` (`sent` or `received`), its first sample's context
/// `frame` and host time `us`, 16-bit PCM in the body.
fn audio(shared: &Shared, q: &HashMap<&str, &str>, body: &[u8]) -> Result<()> {
    if !shared.recording.load(Ordering::Relaxed) {
        return Ok(());
    }
    let pcm = parse_pcm(body)?;
    let (frame, us) = (field(q, "frame")?, field(q, "us")?);
    let mut taps = shared.audio.lock().map_err(|_| anyhow!("audio"))?;
    match q.get("side").copied() {
        Some("sent") => taps.sent.add(frame, us, pcm),
        Some("received") => taps.received.add(frame, us, pcm),
        other => Err(anyhow!("audio side {other:?}: sent or received")),
    }
}

/// Appends `body` (one JSON object) as a line.
fn log_line(log: &Mutex<BufWriter<File>>, body: &[u8]) -> Result<()> {
    let mut log = log.lock().map_err(|_| anyhow!("log"))?;
    let text = String::from_utf8_lossy(body).replace('\n', " ");
    writeln!(log, "{text}")?;
    Ok(())
}

fn event(shared: &Shared, body: &[u8]) -> Result<()> {
    let value: serde_json::Value = serde_json::from_slice(body).context("event")?;
    let now = clock::now();
    {
        let mut with_time = value.clone();
        if let Some(map) = with_time.as_object_mut() {
            map.insert("host_us".into(), now.as_micros().into());
        }
        log_line(&shared.events_log, with_time.to_string().as_bytes())?;
    }
    let text = |k: &str| {
        value
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    match value.get("kind").and_then(|k| k.as_str()) {
        Some("state") => send(
            shared,
            PageEvent::State {
                peer: text("peer"),
                state: text("state"),
                at: now,
            },
        ),
        Some("error") => send(shared, PageEvent::Error(text("message"))),
        Some("warning") => send(
            shared,
            PageEvent::Warning(format!(
                "{} ({} so far)",
                text("message"),
                value.get("count").and_then(|c| c.as_u64()).unwrap_or(1)
            )),
        ),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_fields() {
        let (path, q) = query("/shown?display=12&w=640&bad&rtp=7");
        assert_eq!(path, "/shown");
        assert_eq!(field::<u64>(&q, "display").unwrap(), 12);
        assert_eq!(field::<u32>(&q, "rtp").unwrap(), 7);
        assert!(field::<u32>(&q, "h").is_err());
        let (path, q) = query("/clock");
        assert_eq!((path, q.len()), ("/clock", 0));
    }
}
