//! The HTTP side: a `tiny_http` server on its own thread serving the page (embedded in the
//! binary: nothing is fetched from elsewhere), the samples as server-sent events, the last
//! picture, and the page's own reports of what it shows (`/probe`, which tests read back).
//!
//! The call never waits here: whoever feeds [`Shared`] only takes its lock to append, and
//! each event stream runs on a thread of its own.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration as StdDuration;

use anyhow::{anyhow, Context, Result};
use serde_json::Value;
use tiny_http::{Header, Method, Request, Response, Server};

const INDEX_HTML: &str = include_str!("page/index.html");
const APP_JS: &str = include_str!("page/app.js");
const STYLE_CSS: &str = include_str!("page/style.css");

/// Pages watching at once (each holds a thread and a connection).
const MAX_STREAMS: usize = 8;
/// Page reports kept for `/probes`.
const KEEP_PROBES: usize = 64;
/// Largest page report accepted.
const MAX_PROBE_BYTES: u64 = 16 * 1024;
/// Samples per event when a page catches up with the history.
const BATCH: usize = 200;
/// Least time between two writes to a live page: it draws twice a second, and each write
/// wakes the browser (its network process and the page) on what may be the call's machine.
const WRITE_EVERY: StdDuration = StdDuration::from_millis(500);

/// What the page is given, shared between the feeder and the server's threads.
#[derive(Debug, Default)]
pub struct State {
    /// `{"mode": "live"|"replay", "title": .., "summary": ..}`.
    pub meta: Value,
    /// Every sample so far, as JSON text.
    pub samples: Vec<String>,
    /// The last picture.
    pub picture: Option<Picture>,
    /// No more samples will come.
    pub ended: bool,
    /// Event streams open now.
    pub streams: usize,
    /// Streams that were open when the run ended.
    pub streams_at_end: usize,
    /// Reports pages sent after seeing the end (what they showed last).
    pub end_reports: Vec<Value>,
    /// The last reports pages sent.
    pub probes: VecDeque<Value>,
}

/// A picture for the page.
#[derive(Debug, Clone)]
pub struct Picture {
    /// Grows with each new picture (what the page fetches by).
    pub seq: u64,
    /// The number of the frame it is (shown frame at a receiver, captured picture at a
    /// sender), which the page names it by; none where the call does not say.
    pub frame: Option<u64>,
    /// The JPEG.
    pub jpeg: Arc<Vec<u8>>,
}

/// [`State`] behind a lock, with a condition variable that wakes the event streams.
#[derive(Debug, Default)]
pub struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    /// Shared state starting with `meta`.
    pub fn new(meta: Value) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                meta,
                ..State::default()
            }),
            changed: Condvar::new(),
        })
    }

    /// The state, locked (a thread that panicked holding it left plain data behind).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the state and wakes the streams.
    pub fn update(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.lock());
        self.changed.notify_all();
    }

    /// Marks the end and waits up to `wait` for every open page to report what it showed
    /// last; returns those reports.
    pub fn end(&self, wait: StdDuration) -> Vec<Value> {
        self.update(|s| {
            s.ended = true;
            s.streams_at_end = s.streams;
        });
        let deadline = std::time::Instant::now() + wait;
        let mut s = self.lock();
        while s.end_reports.len() < s.streams_at_end {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        s.end_reports.clone()
    }
}

/// Where the server listens and who may read it.
#[derive(Debug, Clone)]
pub struct Listen {
    /// The address (`127.0.0.1:0` by default: loopback, a free port).
    pub addr: SocketAddr,
    /// Required as `?token=` on every request (set for any address off loopback).
    pub token: Option<String>,
}

impl Listen {
    /// `addr`, with a fresh random token unless it is a loopback address.
    pub fn new(addr: SocketAddr) -> Listen {
        let token = (!addr.ip().is_loopback()).then(|| format!("{:032x}", rand::random::<u128>()));
        Listen { addr, token }
    }
}

/// A running server.
pub struct HttpServer {
    server: Arc<Server>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    url: String,
    addr: SocketAddr,
}

impl HttpServer {
    /// Binds `listen` and serves `shared` on a thread of its own.
    pub fn start(listen: &Listen, shared: Arc<Shared>) -> Result<HttpServer> {
        let server = Server::http(listen.addr)
            .map_err(|e| anyhow!("cannot listen for the dashboard on {}: {e}", listen.addr))?;
        let addr = server
            .server_addr()
            .to_ip()
            .context("the dashboard's server has no IP address")?;
        let url = match &listen.token {
            Some(t) => format!("http://{addr}/?token={t}"),
            None => format!("http://{addr}/"),
        };
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("dashboard-http".into())
            .spawn({
                let (server, stop, token) = (server.clone(), stop.clone(), listen.token.clone());
                move || serve(&server, &stop, token.as_deref(), &shared)
            })
            .context("cannot start the dashboard's server thread")?;
        Ok(HttpServer {
            server,
            stop,
            thread: Some(thread),
            url,
            addr,
        })
    }

    /// The page's address, token included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The accept loop.
fn serve(server: &Server, stop: &AtomicBool, token: Option<&str>, shared: &Arc<Shared>) {
    crate::priority::lower_this_thread();
    while !stop.load(Ordering::Relaxed) {
        let request = match server.recv_timeout(StdDuration::from_millis(200)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let (path, query) = split_url(request.url());
        if let Some(t) = token {
            if !query.split('&').any(|kv| kv == format!("token={t}")) {
                let _ = request
                    .respond(Response::from_string("a token is needed").with_status_code(403));
                continue;
            }
        }
        route(request, &path, shared);
    }
}

/// The path and the query of a request's URL.
fn split_url(url: &str) -> (String, String) {
    match url.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (url.to_string(), String::new()),
    }
}

fn header(name: &str, value: &str) -> Header {
    // Panic = bug: callers pass ASCII names and values.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

/// Answers one request.
fn route(mut request: Request, path: &str, shared: &Arc<Shared>) {
    let text = |body: String, kind: &str| {
        Response::from_string(body)
            .with_header(header("Content-Type", kind))
            .with_header(header("Cache-Control", "no-store"))
    };
    let method = request.method().clone();
    let response = match (method, path) {
        (Method::Get, "/") => text(INDEX_HTML.into(), "text/html; charset=utf-8"),
        (Method::Get, "/app.js") => text(APP_JS.into(), "text/javascript; charset=utf-8"),
        (Method::Get, "/style.css") => text(STYLE_CSS.into(), "text/css; charset=utf-8"),
        (Method::Get, "/meta.json") => text(shared.lock().meta.to_string(), "application/json"),
        (Method::Get, "/probes") => {
            let probes: Vec<Value> = shared.lock().probes.iter().cloned().collect();
            text(Value::Array(probes).to_string(), "application/json")
        }
        (Method::Get, "/picture.jpg") => match shared.lock().picture.clone() {
            Some(Picture { jpeg, .. }) => Response::from_data(jpeg.as_slice())
                .with_header(header("Content-Type", "image/jpeg"))
                .with_header(header("Cache-Control", "no-store")),
            None => text("no picture yet".into(), "text/plain").with_status_code(404),
        },
        (Method::Get, "/events") => return start_stream(request, shared),
        (Method::Post, "/probe") => {
            let mut body = String::new();
            let read = request
                .as_reader()
                .take(MAX_PROBE_BYTES)
                .read_to_string(&mut body);
            match read
                .ok()
                .and_then(|_| serde_json::from_str::<Value>(&body).ok())
            {
                Some(report) => {
                    take_probe(shared, report);
                    text("ok".into(), "text/plain")
                }
                None => text("not JSON".into(), "text/plain").with_status_code(400),
            }
        }
        _ => text("not found".into(), "text/plain").with_status_code(404),
    };
    let _ = request.respond(response);
}

/// Keeps a page's report; one sent after the end counts as that page's last word.
fn take_probe(shared: &Shared, report: Value) {
    shared.update(|s| {
        if report.get("ended").and_then(Value::as_bool) == Some(true) {
            s.end_reports.push(report.clone());
        }
        if s.probes.len() == KEEP_PROBES {
            s.probes.pop_front();
        }
        s.probes.push_back(report);
    });
}

/// Runs an event stream on its own thread (or refuses it when too many are open).
fn start_stream(request: Request, shared: &Arc<Shared>) {
    {
        let mut s = shared.lock();
        if s.streams >= MAX_STREAMS {
            drop(s);
            let _ = request.respond(Response::from_string("too many pages").with_status_code(503));
            return;
        }
        s.streams += 1;
    }
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("dashboard-events".into())
        .spawn(move || {
            crate::priority::lower_this_thread();
            let mut writer = request.into_writer();
            let _ = stream(&mut *writer, &shared);
            shared.update(|s| s.streams -= 1);
        });
    if spawned.is_err() {
        eprintln!("dashboard: cannot start a thread for a page");
    }
}

/// What a stream sent so far.
#[derive(Debug, Default)]
struct Sent {
    samples: usize,
    picture: u64,
}

/// Writes server-sent events until the run ends (or the page goes): the history, then each
/// new sample, a `picture` event when there is a new picture, and `end`.
fn stream(w: &mut dyn Write, shared: &Shared) -> std::io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\
          Connection: close\r\n\r\n",
    )?;
    w.write_all(format!("event: meta\ndata: {}\n\n", shared.lock().meta).as_bytes())?;
    w.flush()?;
    let mut sent = Sent::default();
    let mut last_write = std::time::Instant::now();
    loop {
        // What came since the last write waits for the rest of WRITE_EVERY (not the end).
        let wait = WRITE_EVERY.saturating_sub(last_write.elapsed());
        if !wait.is_zero() && !shared.lock().ended {
            std::thread::sleep(wait);
        }
        let (out, ended) = {
            let mut s = shared.lock();
            if nothing_new(&s, &sent) {
                s = shared
                    .changed
                    .wait_timeout(s, StdDuration::from_secs(5))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            let out = events_due(&s, &mut sent);
            (out, s.ended && sent.samples == s.samples.len())
        };
        // An empty write every few seconds finds a page that went away.
        w.write_all(if out.is_empty() {
            b": \n\n"
        } else {
            out.as_bytes()
        })?;
        if ended {
            w.write_all(b"event: end\ndata: {}\n\n")?;
            w.flush()?;
            return Ok(());
        }
        w.flush()?;
        last_write = std::time::Instant::now();
    }
}

/// Whether a stream that sent `sent` has nothing to add.
fn nothing_new(s: &State, sent: &Sent) -> bool {
    s.samples.len() == sent.samples
        && !s.ended
        && s.picture.as_ref().map_or(0, |p| p.seq) == sent.picture
}

/// The events `sent` has not had yet (samples batched, at most [`BATCH`] a batch).
fn events_due(s: &State, sent: &mut Sent) -> String {
    let mut out = String::new();
    while sent.samples < s.samples.len() {
        let end = (sent.samples + BATCH).min(s.samples.len());
        out.push_str("event: samples\ndata: [");
        out.push_str(&s.samples[sent.samples..end].join(","));
        out.push_str("]\n\n");
        sent.samples = end;
    }
    if let Some(p) = &s.picture {
        if p.seq != sent.picture {
            sent.picture = p.seq;
            let frame = p.frame.map_or("null".to_string(), |f| f.to_string());
            out.push_str(&format!(
                "event: picture\ndata: {{\"seq\":{},\"frame\":{frame}}}\n\n",
                p.seq
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream catches up in batches, then says only what is new.
    #[test]
    fn events_batch_the_history_then_follow() {
        let mut s = State {
            samples: (0..450).map(|i| format!("{{\"t\":{i}}}")).collect(),
            ..State::default()
        };
        let mut sent = Sent::default();
        let first = events_due(&s, &mut sent);
        assert_eq!(first.matches("event: samples").count(), 3);
        assert!(events_due(&s, &mut sent).is_empty());
        s.samples.push("{\"t\":450}".into());
        s.picture = Some(Picture {
            seq: 1,
            frame: Some(812),
            jpeg: Arc::new(vec![1]),
        });
        let next = events_due(&s, &mut sent);
        assert_eq!(
            next,
            "event: samples\ndata: [{\"t\":450}]\n\nevent: picture\ndata: {\"seq\":1,\"frame\":812}\n\n"
        );
    }

    /// Records when each flush happened and what had been written by then.
    struct Timed(Vec<(std::time::Instant, usize)>, Vec<u8>);
    impl Write for Timed {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.1.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.push((std::time::Instant::now(), self.1.len()));
            Ok(())
        }
    }

    /// A live stream writes at most every WRITE_EVERY, however often samples come, and
    /// still delivers all of them and the end at once.
    #[test]
    fn a_live_stream_writes_twice_a_second_at_most() {
        let shared = Shared::new(Value::Null);
        let feeder = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                for i in 0..30 {
                    std::thread::sleep(StdDuration::from_millis(50));
                    shared.update(|s| s.samples.push(format!("{{\"t\":{i}}}")));
                }
                shared.update(|s| s.ended = true);
            })
        };
        let mut w = Timed(Vec::new(), Vec::new());
        stream(&mut w, &shared).unwrap();
        feeder.join().unwrap();
        let text = String::from_utf8(w.1).unwrap();
        assert!(text.contains("{\"t\":29}") && text.ends_with("event: end\ndata: {}\n\n"));
        // Flushes after the header: each write's, and the end's right after the last.
        let times: Vec<_> = w.0.iter().skip(1).map(|f| f.0).collect();
        assert!(times.len() >= 3, "{} writes", times.len());
        for pair in times[..times.len() - 1].windows(2) {
            let gap = pair[1] - pair[0];
            assert!(gap >= StdDuration::from_millis(450), "writes {gap:?} apart");
        }
    }

    /// Only a loopback address goes without a token.
    #[test]
    fn a_token_off_loopback_only() {
        assert!(Listen::new("127.0.0.1:0".parse().unwrap()).token.is_none());
        assert!(Listen::new("[::1]:0".parse().unwrap()).token.is_none());
        let open = Listen::new("0.0.0.0:0".parse().unwrap());
        assert_eq!(open.token.map(|t| t.len()), Some(32));
    }
}
