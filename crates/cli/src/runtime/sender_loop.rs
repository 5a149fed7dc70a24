//! The sender's control loop: the sans-IO [`Sender`] driven by a UDP socket, the camera
//! thread and the encoder thread, all feeding one channel.
//!
//! "Mutate, then drain `poll_output` until `Timeout`": every input (an ACK with its kernel
//! receive time, a camera picture, a finished encode) goes into the sender; then its outputs
//! are carried out — datagrams sent, encode requests handed to the encoder thread with the
//! picture they name — and the loop waits on the channel until the sender's deadline.
//!
//! Sessions: if no new ACK arrives for `reset_after` while the sender is sending (the
//! receiver never answered), or only stale ones (a restarted receiver numbers its ACKs from
//! zero again), the sender starts over: a fresh state machine
//! under the next connection id, whose first frame is a keyframe any receiver can decode.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{Context, Result};
use salsify_codec::{EncodedFrame, Image, State};
use salsify_time::{Duration, Instant};
use salsify_transport::{
    EncodeRequest, Sender, SenderConfig, SenderEvent, SenderOutput, SenderStats,
};

use super::camera::{self, CameraConfig, Captured};
use super::clock;
use super::csv_log::CsvLog;
use super::encoder::{EncodeMode, Encoded, EncoderThread};
use super::observe::{Observation, Observer};
use super::udp::{self, Received};

/// Stale ACKs in a row, with no fresh one, that mean the receiver restarted (reordering
/// makes a few; a restarted receiver's counter makes one per fragment).
const RESTARTED_RECEIVER_STALE_ACKS: u64 = 64;

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Everything the sender loop needs.
#[derive(Debug, Clone)]
pub struct SenderLoopConfig {
    /// Where the receiver (or the relay) listens.
    pub to: SocketAddr,
    /// The camera.
    pub camera: CameraConfig,
    /// The Salsify sender's parameters (its connection id is the first session's).
    pub sender: SenderConfig,
    /// 1c or 2c encoding.
    pub mode: EncodeMode,
    /// libvpx speed (negative: real-time; more negative is faster).
    pub cpu_used: i32,
    /// Start a new session after this long without a valid ACK while sending. Default 2 s.
    pub reset_after: Duration,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Print a status line per second on standard error.
    pub status: bool,
}

impl SenderLoopConfig {
    /// Defaults for everything but the destination.
    pub fn new(to: SocketAddr) -> Self {
        SenderLoopConfig {
            to,
            camera: CameraConfig {
                input: "synthetic".into(),
                size: crate::input::Size {
                    width: 640,
                    height: 360,
                },
                fps: 30.0,
                looped: false,
            },
            sender: SenderConfig::default(),
            mode: EncodeMode::S2,
            cpu_used: -8,
            reset_after: Duration::from_secs(2),
            log: None,
            status: false,
        }
    }
}

/// Inputs of the control loop.
enum Input {
    Datagram(Received),
    Frame(Captured),
    Encoded(Encoded),
    CameraDone,
}

/// What a finished run did.
#[derive(Debug, Clone, Copy)]
pub struct SenderTotals {
    /// Stats of the last session.
    pub stats: SenderStats,
    /// Sessions started (1 + resets).
    pub sessions: u32,
    /// Pictures the camera supplied.
    pub pictures: u64,
}

struct Loop {
    config: SenderLoopConfig,
    socket: UdpSocket,
    sender: Sender<EncodedFrame>,
    connection_id: u16,
    sessions: u32,
    encoder: EncoderThread,
    /// (session, request id) of the encodes queued at the encoder thread, oldest first.
    encoding: VecDeque<(u32, u64)>,
    /// The newest picture: the only one the sender can ask for next.
    latest: Option<(u64, Arc<Image>)>,
    captured: u64,
    /// (ACKs applied, when that count last changed).
    last_ack: (u64, Instant),
    sent_at_last_ack: u64,
    /// Stale ACKs counted when the last fresh one was applied.
    stale_base: u64,
    log: Option<CsvLog>,
    observer: Observer,
    status: super::status::SenderStatus,
}

/// Runs until `stop` is set or the input ends.
pub fn run(
    config: SenderLoopConfig,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<SenderTotals> {
    let socket = udp::bind_for(config.to)?;
    let (tx, rx) = mpsc::channel::<Input>();
    let camera_tx = tx.clone();
    let (size, _fps, _camera) = camera::start(config.camera.clone(), stop.clone(), move |c| {
        let input = c.map_or(Input::CameraDone, Input::Frame);
        camera_tx.send(input).is_ok()
    })?;
    let encoded_tx = tx.clone();
    let encoder = EncoderThread::start(
        size.width,
        size.height,
        config.cpu_used,
        config.mode,
        move |e| encoded_tx.send(Input::Encoded(e)).is_ok(),
    )?;
    let _reader = udp::spawn_reader(&socket, stop.clone(), tx.clone(), Input::Datagram)?;
    let log = match &config.log {
        Some(path) => Some(CsvLog::create(path, SENDER_CSV_HEADER)?),
        None => None,
    };
    let connection_id = config.sender.connection_id;
    let sender =
        Sender::new(config.sender.clone(), State::initial()).context("sender configuration")?;
    let now = clock::now();
    observer.report(Observation::SenderSession { connection_id });
    let mut l = Loop {
        socket,
        sender,
        connection_id,
        sessions: 1,
        encoder,
        encoding: VecDeque::new(),
        latest: None,
        captured: 0,
        last_ack: (0, now),
        sent_at_last_ack: 0,
        stale_base: 0,
        log,
        observer,
        status: super::status::SenderStatus::new(now, config.status),
        config,
    };
    drop(tx);
    l.run(&rx, &stop)
}

/// Columns of the sender's CSV log (times in µs on the machine's monotonic clock).
pub const SENDER_CSV_HEADER: &str =
    "session,frame,picture,captured_us,sent_us,quality,bytes,fragments,choice,budget,recovery";

impl Loop {
    fn run(&mut self, rx: &mpsc::Receiver<Input>, stop: &AtomicBool) -> Result<SenderTotals> {
        let mut camera_done = false;
        loop {
            if stop.load(Ordering::Relaxed) || (camera_done && self.encoding.is_empty()) {
                break;
            }
            let now = clock::now();
            let deadline = self.drain(now)?;
            self.check_session(now)?;
            self.status.tick(now, &self.sender.stats());
            let wait = deadline
                .saturating_duration_since(clock::now())
                .min(MAX_WAIT);
            match rx.recv_timeout(wait) {
                Ok(Input::CameraDone) => camera_done = true,
                Ok(input) => self.handle(input),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(log) = self.log.take() {
            log.finish()?;
        }
        Ok(SenderTotals {
            stats: self.sender.stats(),
            sessions: self.sessions,
            pictures: self.captured,
        })
    }

    fn handle(&mut self, input: Input) {
        match input {
            Input::Datagram(d) if d.from == self.config.to => {
                let _ = self.sender.handle_datagram(d.at, &d.bytes);
            }
            Input::Datagram(_) | Input::CameraDone => {}
            Input::Frame(c) => {
                self.captured += 1;
                if self.observer.active() {
                    self.observer.report(Observation::Captured {
                        picture: c.id,
                        at: c.at,
                        image: c.image.clone(),
                    });
                }
                self.latest = Some((c.id, c.image));
                self.sender.handle_frame(clock::now(), c.id, c.at);
            }
            Input::Encoded(e) => self.finish_encode(e),
        }
    }

    fn finish_encode(&mut self, e: Encoded) {
        let Some((session, id)) = self.encoding.pop_front() else {
            return;
        };
        if session != self.sessions || id != e.id {
            return; // from a session given up on
        }
        let now = clock::now();
        let _ = match e.frames {
            Ok(frames) => self.sender.handle_encoded(now, id, frames),
            Err(why) => {
                eprintln!("salsify: encode failed: {why}");
                self.sender.handle_encode_failed(now, id)
            }
        };
    }

    /// Carries out the sender's outputs; returns its next deadline.
    fn drain(&mut self, now: Instant) -> Result<Instant> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Transmit(bytes) => {
                    udp::send(&self.socket, &bytes, self.config.to);
                }
                SenderOutput::Encode(request) => self.start_encode(request),
                SenderOutput::Event(event) => self.on_event(event)?,
                SenderOutput::Timeout(t) => return Ok(t),
            }
        }
    }

    fn start_encode(&mut self, request: EncodeRequest<State>) {
        let image = match &self.latest {
            Some((id, image)) if *id == request.picture => image.clone(),
            _ => {
                let _ = self.sender.handle_encode_failed(clock::now(), request.id);
                return;
            }
        };
        self.encoding.push_back((self.sessions, request.id));
        if !self.encoder.submit(request.clone(), image) {
            self.encoding.pop_back();
            let _ = self.sender.handle_encode_failed(clock::now(), request.id);
        }
    }

    fn on_event(&mut self, event: SenderEvent) -> Result<()> {
        match event {
            SenderEvent::FrameSent(f) => {
                self.observer.report(Observation::Sent(f));
                if let Some(log) = &mut self.log {
                    log.line(format_args!(
                        "{},{},{},{},{},{},{},{},{},{},{}",
                        self.connection_id,
                        f.frame,
                        f.picture,
                        f.captured.as_micros(),
                        f.at.as_micros(),
                        f.quality.index(),
                        f.bytes,
                        f.fragments,
                        format!("{:?}", f.choice).to_lowercase(),
                        f.budget.map_or(String::new(), |b| b.to_string()),
                        u8::from(f.recovery)
                    ))?;
                }
            }
            SenderEvent::PictureSkipped {
                picture,
                captured,
                at,
                budget,
            } => {
                if let Some(log) = &mut self.log {
                    log.line(format_args!(
                        "{},,{picture},{},{},,0,0,skipped,{},0",
                        self.connection_id,
                        captured.as_micros(),
                        at.as_micros(),
                        budget.map_or(String::new(), |b| b.to_string()),
                    ))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Starts a new session when the receiver has been silent too long while we send, or
    /// answers only with ACKs older than ones already used (a restarted receiver counts its
    /// ACKs from zero again).
    fn check_session(&mut self, now: Instant) -> Result<()> {
        let stats = self.sender.stats();
        let applied = stats.acks - stats.stale_acks;
        if applied != self.last_ack.0 {
            self.last_ack = (applied, now);
            self.sent_at_last_ack = stats.fragments_sent;
            self.stale_base = stats.stale_acks;
            return Ok(());
        }
        let silent = now.saturating_duration_since(self.last_ack.1);
        let stale_streak = stats.stale_acks - self.stale_base;
        let quiet =
            silent >= self.config.reset_after && stats.fragments_sent > self.sent_at_last_ack;
        if !quiet && stale_streak < RESTARTED_RECEIVER_STALE_ACKS {
            return Ok(());
        }
        self.connection_id = self.connection_id.wrapping_add(1);
        let config = SenderConfig {
            connection_id: self.connection_id,
            ..self.config.sender.clone()
        };
        self.sender = Sender::new(config, State::initial()).context("sender configuration")?;
        self.sessions += 1;
        self.last_ack = (0, now);
        self.sent_at_last_ack = 0;
        self.stale_base = 0;
        self.observer.report(Observation::SenderSession {
            connection_id: self.connection_id,
        });
        if self.config.status {
            eprintln!(
                "salsify send: no new ACK for {:.1} s ({stale_streak} stale); new session {} (keyframe)",
                silent.as_secs_f64(),
                self.connection_id
            );
        }
        Ok(())
    }
}
