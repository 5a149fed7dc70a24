//! The receiver's loop: the sans-IO [`Receiver`] driven by a UDP socket, one session at a time.
//!
//! A session is a (sender address, connection id) pair. Datagrams of any other session are
//! ignored while the current one is alive; after `session_timeout` without a frame shown
//! (from its start, or since its last frame) the next sender's data takes over with a fresh
//! state machine.
//! A keyframe fragment from the current sender's address under a new connection id also takes
//! over at once: that sender has restarted its session (see the sender loop), and waiting
//! would only add delay. Garbage is counted and dropped; it neither keeps a session alive nor
//! starts one.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{Context, Result};
use salsify_codec::StateHash;
use salsify_time::{Duration, Instant};
use salsify_transport::wire::Datagram;
use salsify_transport::{Receiver, ReceiverConfig, ReceiverEvent, ReceiverOutput, ReceiverStats};

use super::clock;
use super::display::{Display, DisplayConfig, ShowingDecoder, Shown};
use super::observe::{Observation, Observer};
use super::status::ReceiverStatus;
use super::udp::{self, Received};

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Everything the receiver loop needs.
#[derive(Debug, Clone)]
pub struct ReceiverLoopConfig {
    /// The Salsify receiver's parameters (the connection id is set per session).
    pub receiver: ReceiverConfig,
    /// Silence after which another sender may take over. Default 2 s.
    pub session_timeout: Duration,
    /// Where shown frames and logs go.
    pub display: DisplayConfig,
    /// Print a status line per second on standard error.
    pub status: bool,
}

impl Default for ReceiverLoopConfig {
    fn default() -> Self {
        ReceiverLoopConfig {
            receiver: ReceiverConfig::default(),
            session_timeout: Duration::from_secs(2),
            display: DisplayConfig::default(),
            status: false,
        }
    }
}

/// What a finished run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReceiverTotals {
    /// Frames shown, all sessions.
    pub shown: u64,
    /// Sessions served.
    pub sessions: u32,
    /// Datagrams ignored as another session's, or garbage with no session to count it.
    pub ignored: u64,
    /// Stats of the last session's receiver.
    pub last: ReceiverStats,
    /// Datagrams whose arrival time came from the kernel.
    pub kernel_stamps: u64,
    /// Datagrams received.
    pub datagrams: u64,
}

struct Session {
    peer: SocketAddr,
    connection_id: u16,
    receiver: Receiver<ShowingDecoder>,
    /// When it last showed a frame (or started): a session is alive while it shows frames,
    /// so datagrams that parse but never decode cannot keep a stale or forged one alive.
    last_shown: Instant,
}

struct Loop {
    config: ReceiverLoopConfig,
    socket: UdpSocket,
    session: Option<Session>,
    display: Display,
    totals: ReceiverTotals,
    observer: Observer,
    status: ReceiverStatus,
}

/// Binds `listen` now (so a busy port is an error before anything starts).
pub fn bind(listen: SocketAddr) -> Result<UdpSocket> {
    udp::bind(listen)
}

/// Serves sessions on `socket` until `stop` is set.
pub fn run(
    config: ReceiverLoopConfig,
    socket: UdpSocket,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<ReceiverTotals> {
    let (tx, rx) = mpsc::channel::<Received>();
    let _reader = udp::spawn_reader(&socket, stop.clone(), tx, |d| d)?;
    let display = Display::new(config.display.clone())?;
    let mut l = Loop {
        socket,
        session: None,
        display,
        totals: ReceiverTotals::default(),
        observer,
        status: ReceiverStatus::new(clock::now(), config.status),
        config,
    };
    let result = l.serve(&rx, &stop);
    let finished = l.display.finish();
    result?;
    finished?;
    Ok(l.totals)
}

impl Loop {
    fn serve(&mut self, rx: &mpsc::Receiver<Received>, stop: &AtomicBool) -> Result<()> {
        let mut deadline = Instant::FAR_FUTURE;
        while !stop.load(Ordering::Relaxed) {
            let now = clock::now();
            if now >= deadline {
                if let Some(s) = &mut self.session {
                    s.receiver.handle_timeout(now);
                }
            }
            deadline = self.drain()?;
            let stats = self
                .session
                .as_ref()
                .map(|s| s.receiver.stats())
                .unwrap_or_default();
            self.status
                .tick(now, self.totals.shown, &stats, self.totals.sessions);
            let wait = deadline
                .saturating_duration_since(clock::now())
                .min(MAX_WAIT);
            match rx.recv_timeout(wait) {
                Ok(d) => self.on_datagram(d),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(s) = &self.session {
            self.totals.last = s.receiver.stats();
        }
        Ok(())
    }

    fn on_datagram(&mut self, d: Received) {
        self.totals.datagrams += 1;
        self.totals.kernel_stamps += u64::from(d.kernel_stamp);
        let data = match Datagram::parse(&d.bytes) {
            Ok(Datagram::Data(f)) => Some((f.connection_id, f.source == StateHash::INITIAL)),
            _ => None,
        };
        let current = self
            .session
            .as_ref()
            .map(|s| (s.peer, s.connection_id, s.last_shown));
        let belongs = match (current, data) {
            (Some((peer, id, _)), Some((cid, _))) => peer == d.from && id == cid,
            (Some((peer, ..)), None) => peer == d.from, // garbage from the peer: counted there
            (None, _) => false,
        };
        if !belongs {
            let takeover = match (current, data) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some((peer, _, heard)), Some((_, keyframe))) => {
                    d.at.saturating_duration_since(heard) >= self.config.session_timeout
                        || (peer == d.from && keyframe)
                }
            };
            if !takeover {
                self.totals.ignored += 1;
                return;
            }
            let Some((cid, _)) = data else { return };
            if let Err(e) = self.start_session(d.from, cid, d.at) {
                eprintln!("salsify recv: cannot start a session: {e:#}");
                return;
            }
        }
        let s = self.session.as_mut().expect("a session exists here"); // set just above
        let _ = s.receiver.handle_datagram(d.at, &d.bytes); // bad ones are counted there
    }

    fn start_session(&mut self, peer: SocketAddr, connection_id: u16, now: Instant) -> Result<()> {
        let config = ReceiverConfig {
            connection_id: Some(connection_id),
            ..self.config.receiver.clone()
        };
        let decoder = ShowingDecoder::new(self.display.wants_bytes())?;
        let receiver = Receiver::new(config, decoder).context("receiver configuration")?;
        self.totals.sessions += 1;
        if self.config.status {
            eprintln!("salsify recv: session {connection_id} from {peer}");
        }
        self.session = Some(Session {
            peer,
            connection_id,
            receiver,
            last_shown: now,
        });
        Ok(())
    }

    /// Carries out the receiver's outputs; returns its next deadline.
    fn drain(&mut self) -> Result<Instant> {
        let Some(s) = &mut self.session else {
            return Ok(Instant::FAR_FUTURE);
        };
        loop {
            match s.receiver.poll_output() {
                ReceiverOutput::Transmit(ack) => {
                    udp::send(&self.socket, &ack, s.peer);
                }
                ReceiverOutput::Event(ReceiverEvent::Display {
                    frame,
                    at,
                    picture,
                    source,
                    target,
                    first_sent_at,
                    bytes,
                }) => {
                    let shown = Shown {
                        session: s.connection_id,
                        frame,
                        at: clock::now().max(at),
                        first_sent_at,
                        source,
                        target,
                        bytes,
                        picture,
                    };
                    s.last_shown = s.last_shown.max(shown.at);
                    self.totals.shown += 1;
                    self.status.on_shown(bytes);
                    self.observer.report(Observation::Shown {
                        frame,
                        connection_id: s.connection_id,
                        at: shown.at,
                        image: shown.picture.image.clone(),
                    });
                    self.display.show(&shown)?;
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => return Ok(t),
            }
        }
    }
}
