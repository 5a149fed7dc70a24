//! A live call's dashboard: the call hands what happens to a bounded channel with
//! `try_send` (dropped and counted when full, never waited on); a thread of the dashboard's
//! own turns each item into board values through the caller's [`Translate`], closes bins four
//! times a second, and, while a page is open, makes a JPEG of the newest picture twice a
//! second.
//!
//! The page's time 0 is the call's start and its last point the call's end, when the call
//! says when those were ([`Feed::mark_start`], [`Feed::mark_end`]): the dashboard starts
//! before the call (its port is taken first), and the call's threads take a moment to stop
//! after it ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use salsify_codec::Image;
use salsify_time::{Duration, Instant};
use serde_json::Value;

use crate::board::{Agg, Board};
use crate::picture;
use crate::server::{HttpServer, Listen, Picture, Shared};

/// Width of a bin: four points a second.
pub const BIN: Duration = Duration::from_millis(250);
/// Bins close this long after they end, so values reported a little late still count.
const LAG: Duration = Duration::from_millis(250);
/// Least time between two pictures made for the page (two a second at most: each costs a
/// JPEG here and a fetch and a decode in the browser, on the call's machine when the page is
/// open there).
const PICTURE_EVERY: Duration = Duration::from_millis(500);
/// Items waiting for the dashboard's thread before new ones are dropped.
pub const CAPACITY: usize = 4096;
/// How long the end waits for open pages to take the last samples.
const END_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a translation puts what it makes of an item.
pub struct Sink<'a> {
    origin: Instant,
    board: &'a mut Board,
    picture: &'a mut Option<(Arc<Image>, Option<u64>)>,
}

impl Sink<'_> {
    /// `at` on the page's time axis (seconds from the start of the dashboard).
    pub fn since(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.origin)
    }

    /// Reports `value` of series `name` at `at`.
    pub fn value(&mut self, at: Instant, name: &str, agg: Agg, value: f64) {
        let t = self.since(at);
        self.board.add(t, name, agg, value);
    }

    /// Offers the newest picture, with the number of the frame it is where there is one
    /// (made into a JPEG when one is due and a page is open; the page names it by `frame`).
    pub fn picture(&mut self, image: Arc<Image>, frame: Option<u64>) {
        *self.picture = Some((image, frame));
    }
}

/// Turns what a call reports into board values.
pub trait Translate<T>: Send {
    /// Takes one item in.
    fn translate(&mut self, item: T, sink: &mut Sink<'_>);
}

/// The call's start and end on its clock (µs; [`NOT_YET`] until said).
#[derive(Debug)]
struct Bounds {
    start: AtomicU64,
    end: AtomicU64,
}

/// A bound not said yet.
const NOT_YET: u64 = u64::MAX;

impl Bounds {
    fn get(v: &AtomicU64) -> Option<Instant> {
        match v.load(Ordering::SeqCst) {
            NOT_YET => None,
            us => Some(Instant::from_micros(us)),
        }
    }
}

/// The feeding side of a live dashboard (cheap to clone into the call's threads).
#[derive(Debug)]
pub struct Feed<T> {
    tx: SyncSender<T>,
    dropped: Arc<AtomicU64>,
    bounds: Arc<Bounds>,
}

impl<T> Clone for Feed<T> {
    fn clone(&self) -> Self {
        Feed {
            tx: self.tx.clone(),
            dropped: self.dropped.clone(),
            bounds: self.bounds.clone(),
        }
    }
}

impl<T> Feed<T> {
    /// Hands `item` over, or drops it (counted) if the dashboard is behind. Never blocks.
    pub fn offer(&self, item: T) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(item) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The channel and the drop counter, for a caller that offers through its own handle
    /// (`try_send`, counting a full channel in the counter).
    pub fn parts(&self) -> (SyncSender<T>, Arc<AtomicU64>) {
        (self.tx.clone(), self.dropped.clone())
    }

    /// Items dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The call started at `at`: the page's time 0 (what was reported before counts at 0).
    /// Said before the first item, else the time axis jumps.
    pub fn mark_start(&self, at: Instant) {
        self.bounds.start.store(at.as_micros(), Ordering::SeqCst);
    }

    /// The call ended at `at`: the page's last point is there, and what is reported later
    /// (the call's threads stopping) counts in it.
    pub fn mark_end(&self, at: Instant) {
        self.bounds.end.store(at.as_micros(), Ordering::SeqCst);
    }
}

/// A live dashboard: its server and its thread.
pub struct Live<T> {
    feed: Feed<T>,
    shared: Arc<Shared>,
    server: HttpServer,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> Live<T> {
    /// Starts serving on `listen` with `meta` (title, scheme ...); `now` is the call's clock
    /// and the page's time 0 is now.
    pub fn start(
        listen: &Listen,
        meta: Value,
        now: fn() -> Instant,
        translate: impl Translate<T> + 'static,
    ) -> Result<Live<T>> {
        let shared = Shared::new(meta);
        let server = HttpServer::start(listen, shared.clone())?;
        let (tx, rx) = mpsc::sync_channel(CAPACITY);
        let dropped = Arc::new(AtomicU64::new(0));
        let bounds = Arc::new(Bounds {
            start: AtomicU64::new(NOT_YET),
            end: AtomicU64::new(NOT_YET),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            origin: now(),
            bounds: bounds.clone(),
            now,
            board: Board::new(BIN),
            picture: None,
            picture_seq: 0,
            next_picture: Instant::ZERO,
            shared: shared.clone(),
            dropped: dropped.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("dashboard".into())
            .spawn({
                let stop = stop.clone();
                move || worker.run(&rx, &stop, translate)
            })
            .context("cannot start the dashboard's thread")?;
        Ok(Live {
            feed: Feed {
                tx,
                dropped,
                bounds,
            },
            shared,
            server,
            stop,
            worker: Some(thread),
        })
    }

    /// A handle to feed it.
    pub fn feed(&self) -> Feed<T> {
        self.feed.clone()
    }

    /// The page's address.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Ends the run: the last bins are sent, every open page is given up to two seconds to
    /// take them, and what those pages reported showing last is returned.
    pub fn finish(mut self) -> Vec<Value> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.worker.take() {
            let _ = t.join();
        }
        self.shared.end(END_WAIT)
    }
}

/// The dashboard's thread.
struct Worker {
    origin: Instant,
    bounds: Arc<Bounds>,
    now: fn() -> Instant,
    board: Board,
    picture: Option<(Arc<Image>, Option<u64>)>,
    picture_seq: u64,
    next_picture: Instant,
    shared: Arc<Shared>,
    dropped: Arc<AtomicU64>,
}

impl Worker {
    fn run<T>(mut self, rx: &mpsc::Receiver<T>, stop: &AtomicBool, mut t: impl Translate<T>) {
        crate::priority::lower_this_thread();
        let mut next_poll = self.origin + BIN;
        loop {
            self.follow_bounds();
            let now = (self.now)();
            if now >= next_poll {
                next_poll += BIN;
                self.publish(now);
            }
            if stop.load(Ordering::Relaxed) {
                // What is already queued still counts.
                while let Ok(item) = rx.try_recv() {
                    self.take(item, &mut t);
                }
                self.follow_bounds();
                let end = Bounds::get(&self.bounds.end).unwrap_or_else(self.now);
                let samples = self
                    .board
                    .finish(end.saturating_duration_since(self.origin));
                self.push(&samples);
                return;
            }
            match rx.recv_timeout(next_poll.saturating_duration_since((self.now)())) {
                Ok(item) => self.take(item, &mut t),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(next_poll.saturating_duration_since((self.now)()))
                }
            }
        }
    }

    /// Takes the call's start as the origin (once) and its end as the board's.
    fn follow_bounds(&mut self) {
        if let Some(start) = Bounds::get(&self.bounds.start) {
            self.origin = start;
        }
        if let Some(end) = Bounds::get(&self.bounds.end) {
            self.board
                .set_end(end.saturating_duration_since(self.origin));
        }
    }

    fn take<T>(&mut self, item: T, t: &mut impl Translate<T>) {
        // The call may have marked its start or end while this thread waited for the item.
        self.follow_bounds();
        let mut sink = Sink {
            origin: self.origin,
            board: &mut self.board,
            picture: &mut self.picture,
        };
        t.translate(item, &mut sink);
    }

    /// Sends the bins closed by `now` and, when one is due and a page is open, a new picture.
    fn publish(&mut self, now: Instant) {
        let t = now.saturating_duration_since(self.origin);
        let dropped = self.dropped.load(Ordering::Relaxed) as f64;
        self.board.add(t, "dash.dropped", Agg::Last, dropped);
        let samples = self.board.poll(t.saturating_sub(LAG));
        self.push(&samples);
        // With no page open no JPEG is made; the newest picture waits for one.
        if now < self.next_picture || self.shared.lock().streams == 0 {
            return;
        }
        let Some((image, frame)) = self.picture.take() else {
            return;
        };
        self.next_picture = now + PICTURE_EVERY;
        match picture::encode_jpeg(&image) {
            Ok(jpeg) => {
                self.picture_seq += 1;
                let picture = Picture {
                    seq: self.picture_seq,
                    frame,
                    jpeg: Arc::new(jpeg),
                };
                self.shared.update(|s| s.picture = Some(picture));
            }
            Err(e) => eprintln!("dashboard: {e:#}"),
        }
    }

    fn push(&self, samples: &[crate::board::Sample]) {
        if samples.is_empty() {
            return;
        }
        let text: Vec<String> = samples.iter().map(|s| s.to_json().to_string()).collect();
        self.shared.update(|s| s.samples.extend(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    fn now() -> Instant {
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        let start = START.get_or_init(std::time::Instant::now);
        Instant::from_micros(start.elapsed().as_micros() as u64)
    }

    /// Each item is a picture.
    struct Pictures;
    impl Translate<Arc<Image>> for Pictures {
        fn translate(&mut self, image: Arc<Image>, sink: &mut Sink<'_>) {
            sink.picture(image, Some(7));
        }
    }

    /// Each item is one event at its instant.
    struct Events;
    impl Translate<Instant> for Events {
        fn translate(&mut self, at: Instant, sink: &mut Sink<'_>) {
            sink.value(at, "n", Agg::Rate, 1.0);
        }
    }

    /// The page's axis runs from the call's start to its end, as the call marks them; an
    /// event reported after the end counts in the last point.
    #[test]
    fn the_call_marks_its_start_and_end() {
        let listen = Listen::new("127.0.0.1:0".parse().unwrap());
        let live = Live::start(&listen, Value::Null, now, Events).unwrap();
        let feed = live.feed();
        let start = now() + Duration::from_millis(50);
        feed.mark_start(start);
        feed.offer(start + Duration::from_millis(100));
        feed.mark_end(start + Duration::from_millis(500));
        feed.offer(start + Duration::from_millis(900));
        let shared = live.shared.clone();
        let _ = live.finish();
        let samples: Vec<Value> = shared
            .lock()
            .samples
            .iter()
            .map(|s| serde_json::from_str(s).unwrap())
            .collect();
        let last = samples.last().unwrap();
        assert_eq!(last["t"], 0.5, "{samples:?}");
        assert_eq!(last["tot"]["n"], 2.0, "{samples:?}");
    }

    /// Pictures become JPEGs only while a page is open (an open event stream).
    #[test]
    fn a_jpeg_only_while_a_page_is_open() {
        let listen = Listen::new("127.0.0.1:0".parse().unwrap());
        let live = Live::start(&listen, Value::Null, now, Pictures).unwrap();
        let image = Arc::new(Image::new(64, 48).unwrap());
        let feed = live.feed();
        for _ in 0..4 {
            feed.offer(image.clone());
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        assert!(live.shared.lock().picture.is_none(), "a JPEG with no page");
        live.shared.update(|s| s.streams += 1);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while live.shared.lock().picture.is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let seq = live
            .shared
            .lock()
            .picture
            .as_ref()
            .map(|p| (p.seq, p.frame));
        assert_eq!(
            seq,
            Some((1, Some(7))),
            "the waiting picture, once a page is open"
        );
        live.shared.update(|s| s.streams -= 1);
        let _ = live.finish();
    }
}
