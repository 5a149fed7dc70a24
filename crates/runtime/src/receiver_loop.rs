//! The receiver's loop: any scheme's [`ReceiverEndpoint`](salsify_endpoint::ReceiverEndpoint) driven by a UDP socket, one session
//! at a time (the rules are in [`crate::receiver_sessions`]).
//!
//! Each datagram goes to the endpoint [`Sessions`] picks; then the current session's endpoint
//! (and its successor's, if any) is drained: feedback goes back to the sender, shown frames
//! to the [`Display`] and the observer.
//!
//! The peer: the receiver listens, or dials a listening sender
//! ([`ReceiverLoopConfig::dial`]). A [`PeerLink`] opens each datagram first (with
//! [`ReceiverLoopConfig::secure`]); only what it opens reaches the session rules, so forged,
//! replayed or altered datagrams cost one cheap check or one AEAD open and touch no session.
//! An encrypted session has one peer wherever it is (a roam moves its session along); a
//! plaintext receiver tells senders apart by address. The feedback the endpoints send is
//! sealed the same way.
//!
//! Audio: an opened datagram tagged as audio goes to [`LiveAudio`] (from the peer; in
//! plaintext, from the current session's sender only), which plays it on the wall clock, lip-synced to the pictures shown
//! here, and measures it; the video's session rules never see it.

use std::net::{SocketAddr, UdpSocket};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::Result;
use salsify_call::control::Control;
use salsify_endpoint::{Displayed, ReceiverEvent, ReceiverOutput, ReceiverStats};
use salsify_schemes::{SchemeConfig, SchemeParams, SourceInfo};
use salsify_secure::SecureConfig;
use salsify_time::{Duration, Instant};

use crate::audio_receive::{AudioReceiveConfig, LiveAudio};
use crate::clock;
use crate::data_io::{DataIoConfig, DataTotals, LiveData};
use crate::display::{Display, DisplayConfig};
use crate::hang_up::{self, HangUpConfig, HangUpWatch, PeerEnded};
use crate::loop_link::LoopLink;
use crate::meet_phase::Via;
use crate::observe::{Observation, Observer, STATE_EVERY};
use crate::peer_link::{PeerLink, Reach};
use crate::receiver_sessions::{Route, Session, Sessions};
use crate::status::ReceiverStatus;
use crate::udp::{self, Received};

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// After the sender hangs up, how long the receiver goes on showing and playing what came
/// before the goodbye (the audio's jitter buffer holds up to a few frames).
const HUNG_UP_LINGER: Duration = Duration::from_millis(300);

/// At most one `busy` to plaintext strangers this often.
const BUSY_EVERY: Duration = Duration::from_millis(100);

/// Everything the receiver loop needs.
#[derive(Debug, Clone)]
pub struct ReceiverLoopConfig {
    /// The scheme; `None`: learned per session from its first datagram.
    pub scheme: Option<SchemeConfig>,
    /// Parameters for learned schemes.
    pub params: SchemeParams,
    /// The source the sender plays, as far as known (schemes that decode at a fixed size use
    /// it). Default 640x360 at 30 fps.
    pub source: SourceInfo,
    /// Time without a frame shown after which another sender may take over. Default 2 s.
    /// `None`: a session never dies of silence, for a receiver whose one sender stays (the
    /// demo's), whose frames may wait longer than that in a deep queue after an outage.
    pub session_timeout: Option<Duration>,
    /// How long the current session's sender must have been silent before another address
    /// may start a session ([`crate::receiver_sessions`]). Default 0.5 s: a stranger's
    /// datagram costs the real sender at most that; a real sender silent that long while a
    /// stranger talks (an outage) loses the receiver to it.
    pub takeover_after: Duration,
    /// How far back a frame's send time may lie behind a frame another session already
    /// showed and still be taken as a replay (and not written): beyond it the two senders'
    /// clocks are taken to be different machines'. Default 60 s.
    pub replay_horizon: Duration,
    /// Where shown frames and logs go.
    pub display: DisplayConfig,
    /// Print a status line per second on standard error.
    pub status: bool,
    /// Keys: only datagrams sealed by the peer holding them are taken (`None`: plaintext).
    pub secure: Option<SecureConfig>,
    /// Dial a sender listening here (`salsify recv --to`) instead of waiting to be dialed.
    pub dial: Option<SocketAddr>,
    /// Meet the sender through a rendezvous (`salsify recv --via`); needs keys.
    pub via: Option<Via>,
    /// The call's audio: played, written and measured when it comes (`None`: audio
    /// datagrams go to the session rules like any other, which ignore them). Default: taken,
    /// lip-synced, no file written.
    pub audio: Option<AudioReceiveConfig>,
    /// When the sender is taken as gone (or, dialing, absent). Default: gone after 10 s of
    /// silence; a receiver that dials gives up after 5 s without an answer.
    pub hang_up: HangUpConfig,
    /// When the sender hangs up or goes silent, wait for the next caller instead of ending.
    pub stay: bool,
    /// The data channel to the sender (none by default; in a call, the call's loop has it).
    /// Lines of its input are taken at least every 50 ms.
    pub data: DataIoConfig,
}

impl Default for ReceiverLoopConfig {
    fn default() -> Self {
        ReceiverLoopConfig {
            scheme: None,
            params: SchemeParams::default(),
            source: SourceInfo {
                width: 640,
                height: 360,
                fps: 30.0,
            },
            session_timeout: Some(Duration::from_secs(2)),
            takeover_after: Duration::from_millis(500),
            replay_horizon: Duration::from_secs(60),
            display: DisplayConfig::default(),
            status: false,
            secure: None,
            dial: None,
            via: None,
            audio: Some(AudioReceiveConfig::default()),
            hang_up: HangUpConfig::default(),
            stay: false,
            data: DataIoConfig::default(),
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
    /// The last session's scheme.
    pub scheme: Option<&'static str>,
    /// Datagrams that went to no session (another sender's while one is live, garbage with
    /// no session to count it, a foreign scheme's).
    pub ignored: u64,
    /// Of those, well-formed datagrams of another scheme than a fixed --scheme.
    pub foreign: u64,
    /// Stats of the last session's receiver.
    pub last: ReceiverStats,
    /// Datagrams whose arrival time came from the kernel.
    pub kernel_stamps: u64,
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams the secure layer refused before any session saw them (or, without keys,
    /// encrypted ones).
    pub rejected: u64,
    /// Frames decoded but not written: sent before a frame another session already showed
    /// (a replay of an old stream, see [`ReceiverLoopConfig::replay_horizon`]).
    pub replayed: u64,
    /// The call's audio figures, if audio was heard.
    pub audio: Option<salsify_audio::AudioSummary>,
    /// Audio datagrams refused: malformed, or from another address than the session's.
    pub audio_refused: u64,
    /// The speakers' underruns and overruns, with `--play`.
    pub speaker: Option<crate::audio_playout::PlayoutCounts>,
    /// Why the sender's side ended the call, if it did (else this side stopped).
    pub ended: Option<PeerEnded>,
    /// The data channel, with one.
    pub data: Option<DataTotals>,
    /// Second callers told the receiver is busy (plaintext strangers and, with keys, callers
    /// that authenticated).
    pub busy_refused: u64,
}

/// A receiver's loop: its sessions, display and audio, on its link.
pub(crate) struct Loop {
    config: ReceiverLoopConfig,
    link: LoopLink,
    sessions: Sessions,
    display: Display,
    totals: ReceiverTotals,
    observer: Observer,
    status: ReceiverStatus,
    /// When the counters are next reported to the observer.
    next_state: Instant,
    /// The newest send time of a frame shown, and its session.
    newest_sent: Option<(u32, Instant)>,
    /// The call's audio.
    audio: Option<LiveAudio>,
    /// When the audio's figures are next taken for the status line.
    next_audio_second: Instant,
    /// What was heard of the sender, and whether it ended the call.
    peer: HangUpWatch,
    /// The data channel, with `--data-in` or `--data-out`.
    data: Option<LiveData>,
    /// When a plaintext stranger may next be told the receiver is busy.
    next_busy_at: Instant,
}

/// When a receiver gives up on its sender: as configured, with no answer awaited only by one
/// that dials, and never on its own in a call (whose loop watches the peer for both).
fn hang_up_for(config: &ReceiverLoopConfig, link: &LoopLink) -> HangUpConfig {
    match (config.dial, link.is_shared()) {
        (_, true) => HangUpConfig {
            gone_after: None,
            no_answer_after: None,
        },
        (Some(_), false) => config.hang_up,
        (None, false) => HangUpConfig {
            no_answer_after: None,
            ..config.hang_up
        },
    }
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
    let display = Display::new(config.display.clone())?;
    run_with_display(config, display, socket, stop, observer)
}

/// As [`run`], with the outputs already created (so a caller can fail on a bad path before
/// it binds its socket). `display` shows on `config.display.view`.
pub fn run_with_display(
    config: ReceiverLoopConfig,
    mut display: Display,
    socket: UdpSocket,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<ReceiverTotals> {
    display.set_view(config.display.view.clone());
    // Met (with --via) before the reader thread takes the socket.
    let reach = match (config.dial, &config.via, &config.secure) {
        (Some(to), _, _) => Reach::Dial(to),
        (None, Some(via), _) => Reach::Via(via),
        (None, None, Some(_)) => Reach::Listen,
        (None, None, None) => Reach::Follow,
    };
    let link = PeerLink::connect(
        socket,
        reach,
        config.secure.clone(),
        "salsify recv",
        config.status,
        &stop,
    )?;
    let (tx, rx) = mpsc::sync_channel::<Received>(udp::READER_BACKLOG);
    let _reader = udp::spawn_reader(link.socket(), stop.clone(), tx, |d| d)?;
    let mut l = Loop::new(config, display, LoopLink::Own(Box::new(link)), observer)?;
    let result = l.serve(&rx, &stop);
    l.hang_up(clock::now());
    l.finish(result)
}

impl Loop {
    /// A loop on `link`, showing on `display`.
    pub(crate) fn new(
        config: ReceiverLoopConfig,
        display: Display,
        link: LoopLink,
        observer: Observer,
    ) -> Result<Self> {
        let sessions = Sessions::new(
            config.scheme.clone(),
            config.params.clone(),
            config.source,
            config.session_timeout,
            config.takeover_after,
        );
        let started = clock::now();
        let audio = LiveAudio::of(config.audio.clone(), started)?;
        let peer = HangUpWatch::new(hang_up_for(&config, &link), started);
        let data = match link.is_shared() {
            true => None,
            false => LiveData::start(&config.data, || {})?,
        };
        Ok(Loop {
            data,
            next_busy_at: Instant::ZERO,
            link,
            next_state: Instant::ZERO,
            newest_sent: None,
            audio,
            next_audio_second: started + Duration::from_secs(1),
            peer,
            sessions,
            display,
            totals: ReceiverTotals::default(),
            observer,
            status: ReceiverStatus::new(clock::now(), config.status),
            config,
        })
    }

    /// The totals once the outputs are closed (`result`: how serving ended).
    pub(crate) fn finish(mut self, result: Result<()>) -> Result<ReceiverTotals> {
        let finished = self.display.finish();
        result?;
        finished?;
        Ok(self.totals)
    }
}

impl Loop {
    fn serve(&mut self, rx: &mpsc::Receiver<Received>, stop: &AtomicBool) -> Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if self.sender_ended(clock::now()) {
                let until = clock::now() + HUNG_UP_LINGER;
                // What arrived before the goodbye is shown and its audio played out.
                while clock::now() < until {
                    let next = self.step(clock::now())?;
                    let wait = next.min(until).saturating_duration_since(clock::now());
                    match rx.recv_timeout(wait.min(MAX_WAIT)) {
                        Ok(d) => self.on_datagram(d)?,
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
                break;
            }
            let deadline = self.step(clock::now())?.min(self.peer.next_at());
            let wait = deadline
                .saturating_duration_since(clock::now())
                .min(MAX_WAIT);
            match rx.recv_timeout(wait) {
                Ok(d) => {
                    self.on_datagram(d)?;
                    // With audio, what is already queued is taken before frames are played,
                    // so a packet that arrived in time (by its kernel time) is not concealed
                    // because the loop was busy. A call without audio keeps its old rhythm.
                    if self.hears_audio() {
                        while let Ok(d) = rx.try_recv() {
                            self.on_datagram(d)?;
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        self.end()
    }

    /// Whether the sender ended the call (said goodbye, went silent, never answered): printed;
    /// with `--stay`, the receiver waits for the next caller instead.
    fn sender_ended(&mut self, now: Instant) -> bool {
        let Some(ended) = self.peer.check(now) else {
            return false;
        };
        if self.config.stay && !ended.failed() {
            if self.config.status {
                eprintln!(
                    "salsify recv: {}; waiting for the next caller",
                    ended.say("the sender")
                );
            }
            self.peer.reset(now);
            return false;
        }
        self.totals.ended = Some(ended);
        true
    }

    /// Says goodbye to the sender, unless it ended the call itself.
    pub(crate) fn hang_up(&mut self, now: Instant) {
        if !matches!(self.totals.ended, Some(PeerEnded::HungUp | PeerEnded::Busy)) {
            hang_up::say_goodbye(&mut self.link, now);
        }
    }

    /// What the data channel did, with one.
    pub(crate) fn data_totals(&self) -> Option<DataTotals> {
        self.data.as_ref().map(LiveData::totals)
    }

    /// Sends what the data channel has due to the session's sender.
    fn send_data(&mut self, now: Instant) -> Result<()> {
        let Some(data) = &mut self.data else {
            return Ok(());
        };
        let peer = self.sessions.current.as_ref().map(|s| s.peer);
        for datagram in data.poll(now, peer.is_some() && self.link.ready(now))? {
            self.link.send(now, &datagram, peer);
        }
        Ok(())
    }

    /// A plaintext stranger's datagram was ignored while another session is live: tell it the
    /// receiver is busy (at most one answer each [`BUSY_EVERY`], each smaller than what
    /// prompted it). With keys the link's busy desk answers second callers, sealed.
    fn answer_busy(&mut self, at: Instant, from: SocketAddr) {
        // A real call: its session showed frames and its sender was heard just now. A
        // stranger that spoke first holds a session that shows nothing: the real sender is
        // not told busy, and takes over as before.
        let takeover = self.config.takeover_after;
        let shown = self.newest_sent.map(|(n, _)| n);
        let live_elsewhere = self.sessions.current.as_ref().is_some_and(|s| {
            s.peer != from
                && shown == Some(s.number)
                && at.saturating_duration_since(s.last_heard) < takeover
        });
        if self.config.secure.is_some() || !live_elsewhere || at < self.next_busy_at {
            return;
        }
        self.next_busy_at = at + BUSY_EVERY;
        self.link.send(at, &Control::Busy.encode(), Some(from));
        self.totals.busy_refused += 1;
    }

    /// Whether audio was heard (then queued datagrams are taken before frames are played).
    pub(crate) fn hears_audio(&self) -> bool {
        self.audio.as_ref().is_some_and(LiveAudio::heard)
    }

    /// One turn: sessions expired, endpoints drained, audio played, the link flushed, the
    /// status ticked. Returns when it next has something to do on its own.
    pub(crate) fn step(&mut self, now: Instant) -> Result<Instant> {
        self.sessions.expire(now);
        let deadline = self.drain(now)?;
        if let Some(audio) = &mut self.audio {
            for frame in audio.play(now)? {
                if self.observer.active() {
                    self.observer.report(Observation::AudioPlayed(frame));
                }
            }
        }
        self.send_data(now)?;
        self.link.flush(now);
        self.tick_status(now);
        let audio_due = self
            .audio
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |a| a.next_at());
        Ok(deadline.min(audio_due).min(self.link.deadline()))
    }

    /// Serving ended: the last figures taken, the audio finished.
    pub(crate) fn end(&mut self) -> Result<()> {
        if let Some(s) = &self.sessions.current {
            self.totals.last = s.endpoint.stats();
        }
        self.totals.ignored = self.sessions.ignored;
        self.totals.foreign = self.sessions.foreign;
        self.totals.rejected = self.link.rejected();
        self.totals.busy_refused += self.link.busy_refused();
        self.totals.data = self.data_totals();
        if let Some(audio) = self.audio.take() {
            self.totals.audio_refused += audio.bad_datagrams();
            self.totals.speaker = audio.speaker_counts();
            self.totals.audio = audio.finish()?;
            if let Some(summary) = self.totals.audio {
                self.observer.report(Observation::AudioSummary(summary));
            }
        }
        Ok(())
    }

    fn tick_status(&mut self, now: Instant) {
        let (stats, label) = match &self.sessions.current {
            Some(s) => (
                s.endpoint.stats(),
                format!("session {} ({}, {})", s.number, s.scheme, s.peer),
            ),
            None => (ReceiverStats::default(), "no session".to_string()),
        };
        if now >= self.next_audio_second {
            self.next_audio_second = now + Duration::from_secs(1);
            if let Some(second) = self.audio.as_mut().and_then(LiveAudio::second) {
                self.status.on_audio(second);
                self.observer.report(Observation::AudioSecond {
                    at: now,
                    audio: second,
                });
            }
        }
        let refused = self.link.rejected();
        self.status
            .tick(now, self.totals.shown, &stats, refused, &label);
        if self.observer.active() && now >= self.next_state {
            self.next_state = now + STATE_EVERY;
            self.observer.report(Observation::ReceiverState {
                at: now,
                shown: self.totals.shown,
                stats,
                rejected: self.link.rejected(),
            });
        }
    }

    fn on_datagram(&mut self, d: Received) -> Result<()> {
        self.count_datagram(&d);
        let Some((from, bytes)) = self.link.receive(&d) else {
            return Ok(());
        };
        self.on_opened(d.at, from, &bytes)
    }

    /// Counts an opened datagram no one takes (malformed for a call, or data with no channel).
    pub(crate) fn count_refused(&mut self) {
        self.sessions.ignored += 1;
    }

    /// Counts a datagram received (before it is opened).
    pub(crate) fn count_datagram(&mut self, d: &Received) {
        self.totals.datagrams += 1;
        self.totals.kernel_stamps += u64::from(d.kernel_stamp);
    }

    /// A datagram of the peer's media, opened, from `from`, arrived at `at`.
    pub(crate) fn on_opened(&mut self, at: Instant, from: SocketAddr, bytes: &[u8]) -> Result<()> {
        // With keys, whatever opens is the peer's; in plaintext, the session's sender's (a
        // stranger, or a sender of another scheme with no session, cannot end the call).
        let from_sender = self.config.secure.is_some()
            || self
                .sessions
                .current
                .as_ref()
                .is_some_and(|s| s.peer == from);
        if from_sender {
            self.peer.on_heard(at);
        }
        if Control::is_control(bytes) {
            match Control::parse(bytes) {
                Ok(c) if from_sender => self.peer.on_control(c),
                _ => self.sessions.ignored += 1,
            }
            return Ok(());
        }
        if bytes.first() == Some(&salsify_call::wire::DATA_TAG) {
            match (&mut self.data, from_sender) {
                (Some(data), true) => data.handle_datagram(at, bytes),
                _ => self.sessions.ignored += 1,
            }
            return Ok(());
        }
        if self.config.secure.is_some() {
            self.sessions.repoint(from);
        }
        if let Some(audio) = self
            .audio
            .as_mut()
            .filter(|_| salsify_audio::AudioPacket::is_audio(bytes))
        {
            // Only the call's sender speaks in it: with keys, whoever the channel opened it
            // from (the peer); in plaintext, the current session's sender.
            let from_peer = self.config.secure.is_some()
                || self
                    .sessions
                    .current
                    .as_ref()
                    .is_some_and(|s| s.peer == from);
            if !(from_peer && audio.handle_datagram(at, bytes)) {
                self.totals.audio_refused += u64::from(!from_peer);
            }
            return Ok(());
        }
        let before = self.sessions.started;
        let route = self.sessions.route(at, from, bytes)?;
        if route == Route::Ignored {
            self.answer_busy(at, from);
        }
        if let Some(s) = &self.sessions.current {
            self.link.follow(at, s.peer);
        }
        if let Some(note) = self.sessions.take_note() {
            eprintln!("salsify recv: {note}");
        }
        if self.sessions.started != before {
            if let Some(s) = &self.sessions.current {
                self.totals.sessions = s.number;
                self.totals.scheme = Some(s.scheme);
                if self.config.status {
                    eprintln!(
                        "salsify recv: session {} ({}) from {}",
                        s.number, s.scheme, s.peer
                    );
                }
            }
        }
        Ok(())
    }

    /// Carries out the endpoints' outputs; returns the earliest next deadline.
    fn drain(&mut self, now: Instant) -> Result<Instant> {
        if self.drain_successor(now)? {
            self.sessions.promote(now);
            if let Some(s) = &self.sessions.current {
                self.totals.sessions = s.number;
                self.totals.scheme = Some(s.scheme);
                if self.config.status {
                    eprintln!(
                        "salsify recv: {} restarted; session {} ({})",
                        s.peer, s.number, s.scheme
                    );
                }
            }
        }
        let Some(s) = &mut self.sessions.current else {
            return Ok(self
                .sessions
                .successor
                .as_ref()
                .map_or(Instant::FAR_FUTURE, |s| s.deadline));
        };
        if now >= s.deadline {
            s.endpoint.handle_timeout(now);
        }
        loop {
            match s.endpoint.poll_output(now) {
                ReceiverOutput::Transmit(bytes) => {
                    self.link.send(now, &bytes, Some(s.peer));
                }
                ReceiverOutput::Event(ReceiverEvent::Display(d)) => {
                    let horizon = self.config.replay_horizon;
                    if older_than_shown(&mut self.newest_sent, s.number, &d, horizon) {
                        self.totals.replayed += 1;
                        continue;
                    }
                    let at = clock::now().max(d.at);
                    s.last_shown = s.last_shown.max(at);
                    self.status.on_shown(d.bytes);
                    if let Some(audio) = &mut self.audio {
                        audio.handle_video_shown(at, d.first_sent_at);
                    }
                    show(s, d, at, &mut self.display, &self.observer)?;
                    self.totals.shown += 1;
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => {
                    s.deadline = t;
                    break;
                }
            }
        }
        let successor = self.sessions.successor.as_ref().map(|s| s.deadline);
        Ok(successor.map_or(s.deadline, |t| t.min(s.deadline)))
    }

    /// Drains the successor: its feedback goes to the (same) sender; its first keyframe is
    /// shown under the session number it is about to take, and returns true: promote it.
    fn drain_successor(&mut self, now: Instant) -> Result<bool> {
        let Some(s) = &mut self.sessions.successor else {
            return Ok(false);
        };
        if now >= s.deadline {
            s.endpoint.handle_timeout(now);
        }
        loop {
            match s.endpoint.poll_output(now) {
                ReceiverOutput::Transmit(bytes) => {
                    self.link.send(now, &bytes, Some(s.peer));
                }
                ReceiverOutput::Event(ReceiverEvent::Display(d)) if d.keyframe => {
                    let number = self.sessions.started + 1;
                    let horizon = self.config.replay_horizon;
                    if older_than_shown(&mut self.newest_sent, number, &d, horizon) {
                        self.totals.replayed += 1;
                        continue;
                    }
                    let at = clock::now().max(d.at);
                    s.number = number;
                    self.status.on_shown(d.bytes);
                    if let Some(audio) = &mut self.audio {
                        audio.handle_video_shown(at, d.first_sent_at);
                    }
                    show(s, d, at, &mut self.display, &self.observer)?;
                    self.totals.shown += 1;
                    return Ok(true);
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => {
                    s.deadline = t;
                    return Ok(false);
                }
            }
        }
    }
}

/// Whether frame `d` of `session` was sent before a frame another session already showed
/// (within `horizon`: farther back, the two senders' clocks are taken to be different
/// machines'), so it must not be written; else records its send time. Frames that carry no
/// send time (the baselines') cannot be told and are shown.
fn older_than_shown(
    newest: &mut Option<(u32, Instant)>,
    session: u32,
    d: &Displayed,
    horizon: Duration,
) -> bool {
    let Some(sent) = d.first_sent_at else {
        return false;
    };
    if let Some((other, at)) = *newest {
        if other != session && sent <= at && at.saturating_duration_since(sent) < horizon {
            return true;
        }
    }
    // A session's first frame that is no replay starts the timeline anew (its sender's
    // clock may be another machine's); after that only newer frames move it.
    let newer = newest.is_none_or(|(other, at)| other != session || sent > at);
    if newer {
        *newest = Some((session, sent));
    }
    false
}

/// Shows frame `d` of session `s` at `at`.
fn show(
    s: &Session,
    d: Displayed,
    at: Instant,
    display: &mut Display,
    observer: &Observer,
) -> Result<()> {
    display.show(s.number, at, &d)?;
    if observer.active() {
        observer.report(Observation::Shown {
            session: s.number,
            frame: d.frame,
            at,
            sent_at: d.first_sent_at,
            image: Arc::new(d.picture),
        });
    }
    Ok(())
}
