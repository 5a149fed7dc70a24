//! The sender's control loop: any scheme's [`SenderEndpoint`] driven by a UDP socket, the
//! camera thread and the encoder thread, all feeding one channel.
//!
//! "Mutate, then drain `poll_output` until `Timeout`": every input (feedback with its kernel
//! receive time, a camera picture, a finished encode, a deadline reached) goes into the
//! endpoint; then its outputs are carried out — datagrams sent, encode requests handed to the
//! encoder thread with the picture they name, events logged — and the loop waits on the
//! channel until the endpoint's deadline.
//!
//! Sessions: when [`FeedbackWatch`] says the receiver is gone, the loop builds a fresh
//! endpoint (under the next connection id, for schemes that use one) whose first frame is a
//! keyframe; encodes still running for the old one are thrown away when they finish.
//!
//! The peer: the sender dials the receiver or listens for it to dial ([`Connect`]); a
//! [`PeerLink`] seals and opens every datagram (with [`SenderLoopConfig::secure`]), follows
//! the receiver when its address changes (roaming), and sizes datagrams to the path (the
//! endpoint is told the largest it may send). A listening sender feeds the endpoint no
//! picture until a receiver has dialed. A new session of a dialing sender also starts a new
//! handshake (the receiver may have restarted without the keys).
//!
//! Audio ([`SenderLoopConfig::audio`]): each Opus frame is sent when it is due on the wall
//! clock ([`LiveAudioSender`]), one datagram sealed in the same session on the same socket
//! as the video, and the endpoint is told of it first (`handle_audio_sent`) so the scheme's
//! budget counts it. Audio is never skipped for the video; it goes on across video sessions.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{Context, Result};
use salsify_call::control::Control;
use salsify_codec::Image;
use salsify_endpoint::{EncodeFailed, EncodeRequest, SenderEndpoint, SenderOutput, SenderStats};
use salsify_schemes::{Executor, SchemeConfig, SourceInfo};
use salsify_secure::SecureConfig;
use salsify_time::{Duration, Instant};

use crate::audio_send::{AudioSendConfig, LiveAudioSender};
use crate::call_start::CallStart;
use crate::camera::{self, Captured, PictureSource};
use crate::clock;
use crate::csv_log::SenderLog;
use crate::data_io::{DataIoConfig, DataTotals, LiveData};
use crate::encoder::{Encoded, EncoderThread};
use crate::feedback_watch::FeedbackWatch;
use crate::hang_up::{self, HangUpConfig, HangUpWatch, PeerEnded};
use crate::loop_link::LoopLink;
use crate::observe::{Observation, Observer, STATE_EVERY};
use crate::peer_link::{Connect, PeerLink, Reach};
use crate::status::SenderStatus;
use crate::udp::{self, Received};

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// How long without keys before the sender says the receiver does not answer handshakes,
/// and how often it repeats it.
const UNANSWERED_HANDSHAKE: Duration = Duration::from_secs(3);

/// After the source ends and the last encode is done, how long the loop stays to let paced
/// datagrams out: until nothing was sent for [`TAIL_QUIET`], at most [`TAIL_MAX`].
const TAIL_QUIET: Duration = Duration::from_millis(50);
const TAIL_MAX: Duration = Duration::from_secs(1);

/// Silence after which a sender on its own (`salsify send`) starts a new session: its
/// receiver may have restarted.
pub const DEFAULT_RESET_AFTER: Duration = Duration::from_secs(2);

/// Camera pictures kept for encode requests: senders ask for the newest, or one just before
/// it when a picture arrived while they decided.
const KEEP_PICTURES: usize = 4;

/// Everything the sender loop needs.
#[derive(Debug, Clone)]
pub struct SenderLoopConfig {
    /// How the receiver is met: dialed where it (or the relay) listens, or listened for.
    pub connect: Connect,
    /// The scheme, with its parameters. It must run live ([`SchemeConfig::runs_live`]).
    pub scheme: SchemeConfig,
    /// Connection id of the first session (schemes that tell sessions apart by one use it);
    /// each new session takes the next.
    pub connection_id: u16,
    /// libvpx speed (negative: real-time; more negative is faster).
    pub cpu_used: i32,
    /// Start a new session after this long without feedback while sending
    /// ([`DEFAULT_RESET_AFTER`] by default). `None`: never on silence alone, for a sender
    /// whose receiver cannot restart unseen (see [`FeedbackWatch`]), where a silence is an
    /// outage of the link.
    pub reset_after: Option<Duration>,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Print a status line per second on standard error.
    pub status: bool,
    /// Keys: seal and open every datagram (`None`: plaintext, anyone can read or inject).
    pub secure: Option<SecureConfig>,
    /// Marked with the first picture's capture time (a relay in the same process starts its
    /// traces then, see [`crate::relay::LinkStart::Call`]).
    pub call_start: Option<CallStart>,
    /// The call's audio (`None`: video only).
    pub audio: Option<AudioSendConfig>,
    /// When the receiver is taken as gone or absent (a sender that listens or meets waits
    /// for its receiver however long: only one that dials gives up on no answer).
    pub hang_up: HangUpConfig,
    /// The data channel to the receiver (none by default; in a call, the call's loop has it).
    pub data: DataIoConfig,
}

impl SenderLoopConfig {
    /// Defaults for everything but the destination and the scheme.
    pub fn new(to: SocketAddr, scheme: SchemeConfig) -> Self {
        SenderLoopConfig {
            connect: Connect::To(to),
            scheme,
            connection_id: 1,
            cpu_used: -8,
            reset_after: Some(DEFAULT_RESET_AFTER),
            log: None,
            status: false,
            secure: None,
            call_start: None,
            audio: None,
            hang_up: HangUpConfig::default(),
            data: DataIoConfig::default(),
        }
    }
}

/// What a finished run did.
#[derive(Debug, Clone)]
pub struct SenderTotals {
    /// The scheme that ran.
    pub scheme: &'static str,
    /// Stats summed over every session (the last session's rate and quality).
    pub stats: SenderStats,
    /// Sessions started (1 + resets).
    pub sessions: u32,
    /// Pictures the camera supplied.
    pub pictures: u64,
    /// Datagrams received that the secure layer refused (or, without keys, encrypted ones).
    pub rejected: u64,
    /// With keys: whether a handshake ever completed (without one, nothing was delivered).
    pub keyed: bool,
    /// Why the picture source failed, if it did (rather than ending or being stopped).
    pub source_failed: Option<String>,
    /// Audio datagrams sent and their bytes (before sealing), with audio.
    pub audio: Option<(u64, u64)>,
    /// Microphone frames dropped because the loop did not take them in time (`--audio mic`).
    pub audio_overruns: u64,
    /// Why the receiver's side ended the call, if it did (else this side stopped).
    pub ended: Option<PeerEnded>,
    /// The data channel, with one.
    pub data: Option<DataTotals>,
}

/// Inputs of the control loop (and of a call's, which feeds its sender and receiver from
/// one channel).
pub(crate) enum Input {
    Datagram(Received),
    Picture(Captured),
    Encoded(Encoded),
    CameraDone,
    /// Something outside the loop has news (a call's data input read a line).
    Wake,
}

/// One sender endpoint's life.
struct Session {
    number: u32,
    connection_id: u16,
    endpoint: Box<dyn SenderEndpoint>,
    watch: FeedbackWatch,
    deadline: Instant,
}

/// A sender's loop: its endpoint, encoders, camera pictures and audio, on its link.
pub(crate) struct Loop {
    config: SenderLoopConfig,
    source: SourceInfo,
    link: LoopLink,
    /// The largest datagram the endpoint was told it may send.
    told_max: usize,
    session: Session,
    /// Stats of the sessions before this one, summed.
    earlier: SenderStats,
    encoder: EncoderThread,
    /// (session, request id) of the encodes queued at the encoder thread, oldest first.
    encoding: VecDeque<(u32, u64)>,
    /// The newest pictures, oldest first.
    pictures: VecDeque<(u64, Arc<Image>)>,
    captured: u64,
    log: Option<SenderLog>,
    observer: Observer,
    status: SenderStatus,
    /// When the sender last had keys (or started), for the unanswered-handshake warning.
    keyed_at: Instant,
    /// A handshake completed at least once.
    keyed: bool,
    /// When the counters are next reported to the observer.
    next_state: Instant,
    /// The call's audio.
    audio: Option<LiveAudioSender>,
    /// The camera said it stopped.
    camera_done: bool,
    /// Once the source ended and every encode is done: when, since when nothing was sent,
    /// and the datagrams sent then.
    tail: Option<(Instant, Instant, u64)>,
    /// What was heard of the receiver, and whether it ended the call.
    peer: HangUpWatch,
    /// The data channel, with `--data-in` or `--data-out`.
    data: Option<LiveData>,
}

/// Runs until `stop` is set or the camera's source ends.
pub fn run(
    config: SenderLoopConfig,
    source: Box<dyn PictureSource>,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<SenderTotals> {
    let prepared = Prepared::new(config, source.as_ref())?;
    let socket = prepared.config.connect.bind()?;
    // Met (with --via) before the reader thread takes the socket.
    let link = PeerLink::connect(
        socket,
        reach(&prepared.config.connect),
        prepared.config.secure.clone(),
        "salsify send",
        prepared.config.status,
        &stop,
    )?;
    let (tx, rx) = mpsc::sync_channel::<Input>(udp::READER_BACKLOG);
    let _reader = udp::spawn_reader(link.socket(), stop.clone(), tx.clone(), Input::Datagram)?;
    let (mut l, camera) =
        prepared.start(LoopLink::Own(Box::new(link)), source, tx, &stop, observer)?;
    let totals = l.run(&rx, &stop)?;
    l.hang_up(clock::now());
    Ok(l.finish(totals, camera))
}

/// How a side given `connect` reaches its peer.
pub(crate) fn reach(connect: &Connect) -> Reach<'_> {
    match connect {
        Connect::To(peer) => Reach::Dial(*peer),
        Connect::Listen(_) => Reach::Listen,
        Connect::Via(via) => Reach::Via(via),
    }
}

/// A sender's first session and encoders, made before anything touches the network (a
/// scheme or an encoder that cannot start is an error before a socket is bound).
pub(crate) struct Prepared {
    pub(crate) config: SenderLoopConfig,
    info: SourceInfo,
    session: Session,
    executor: Executor,
}

impl Prepared {
    /// The first session and the encoders for `source`'s pictures.
    pub(crate) fn new(config: SenderLoopConfig, source: &dyn PictureSource) -> Result<Self> {
        let (width, height) = source.size();
        let info = SourceInfo {
            width,
            height,
            fps: source.fps(),
        };
        let session = new_session(&config, &info, 1, config.connection_id)?;
        let jobs = config.scheme.encode_jobs();
        let codec = config.scheme.codec();
        let executor = Executor::for_codec(codec, width, height, info.fps, config.cpu_used, jobs)
            .with_context(|| format!("cannot create the {codec} encoders"))?;
        Ok(Prepared {
            config,
            info,
            session,
            executor,
        })
    }

    /// Starts the encoder thread and the camera, both feeding `tx`, and the loop on `link`
    /// (whose datagrams the caller's reader thread feeds to `tx`).
    pub(crate) fn start(
        self,
        link: LoopLink,
        source: Box<dyn PictureSource>,
        tx: mpsc::SyncSender<Input>,
        stop: &Arc<AtomicBool>,
        observer: Observer,
    ) -> Result<(Loop, CameraHandle)> {
        let Prepared {
            config,
            info,
            session,
            executor,
        } = self;
        let log = match &config.log {
            Some(path) => Some(SenderLog::create(path)?),
            None => None,
        };
        let wake = tx.clone();
        let data = LiveData::start(&config.data, move || {
            let _ = wake.try_send(Input::Wake);
        })?;
        let encoded_tx = tx.clone();
        let encoder = EncoderThread::start(executor, move |e| {
            encoded_tx.send(Input::Encoded(e)).is_ok()
        })?;
        let now = clock::now();
        let camera_tx = tx;
        let camera = camera::start(source, stop.clone(), move |c| {
            camera_tx
                .send(c.map_or(Input::CameraDone, Input::Picture))
                .is_ok()
        })?;
        observer.report(Observation::SenderSession {
            session: 1,
            scheme: config.scheme.name(),
        });
        let audio = match &config.audio {
            Some(a) => Some(LiveAudioSender::new(a, clock::now())?),
            None => None,
        };
        let peer = HangUpWatch::new(hang_up_for(&config, &link), now);
        let l = Loop {
            audio,
            link,
            told_max: 0,
            keyed_at: now,
            keyed: false,
            next_state: Instant::ZERO,
            source: info,
            session,
            earlier: SenderStats::default(),
            encoder,
            encoding: VecDeque::new(),
            pictures: VecDeque::new(),
            captured: 0,
            log,
            observer,
            status: SenderStatus::new(clock::now(), config.status),
            peer,
            config,
            camera_done: false,
            tail: None,
            data,
        };
        Ok((l, camera))
    }
}

/// When a sender gives up on its receiver: as configured, with no answer awaited only by one
/// that dials, and never on its own in a call (whose loop watches the peer for both).
fn hang_up_for(config: &SenderLoopConfig, link: &LoopLink) -> HangUpConfig {
    match (&config.connect, link.is_shared()) {
        (_, true) => HangUpConfig {
            gone_after: None,
            no_answer_after: None,
        },
        (Connect::To(_), false) => config.hang_up,
        (_, false) => HangUpConfig {
            no_answer_after: None,
            ..config.hang_up
        },
    }
}

/// The camera thread: joined once it said it stopped, for why it failed if it did.
pub(crate) type CameraHandle = std::thread::JoinHandle<Option<String>>;

/// Counters of `a` and `b` added (the most states held: the larger; rate and quality:
/// `b`'s, the later session's, when it has them).
fn sum_stats(a: &SenderStats, b: &SenderStats) -> SenderStats {
    SenderStats {
        pictures: a.pictures + b.pictures,
        frames_sent: a.frames_sent + b.frames_sent,
        keyframes: a.keyframes + b.keyframes,
        sent_better: a.sent_better + b.sent_better,
        sent_worse: a.sent_worse + b.sent_worse,
        skipped: a.skipped + b.skipped,
        dropped: a.dropped + b.dropped,
        datagrams_sent: a.datagrams_sent + b.datagrams_sent,
        feedback: a.feedback + b.feedback,
        stale_feedback: a.stale_feedback + b.stale_feedback,
        bad_datagrams: a.bad_datagrams + b.bad_datagrams,
        recoveries: a.recoveries + b.recoveries,
        states_held: b.states_held,
        max_states_held: a.max_states_held.max(b.max_states_held),
        target: b.target.or(a.target),
        quality: b.quality.or(a.quality),
    }
}

/// A fresh endpoint for session `number`.
fn new_session(
    config: &SenderLoopConfig,
    source: &SourceInfo,
    number: u32,
    connection_id: u16,
) -> Result<Session> {
    let endpoint = config
        .scheme
        .build_sender(source, connection_id)
        .with_context(|| format!("cannot start a {} sender", config.scheme.name()))?;
    Ok(Session {
        number,
        connection_id,
        endpoint,
        watch: FeedbackWatch::new(config.reset_after),
        deadline: Instant::ZERO,
    })
}

impl Loop {
    /// Runs until stopped or the source ended and its pictures are sent; the totals.
    fn run(&mut self, rx: &mpsc::Receiver<Input>, stop: &AtomicBool) -> Result<SenderTotals> {
        while !stop.load(Ordering::Relaxed) {
            if self.step(clock::now())? {
                break;
            }
            let wait = self
                .next_at()
                .saturating_duration_since(clock::now())
                .min(MAX_WAIT);
            match rx.recv_timeout(wait) {
                Ok(Input::Datagram(d)) => self.on_datagram(&d),
                Ok(input) => self.handle(input),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        self.totals()
    }

    /// One turn: deadlines, audio, the endpoint's outputs, sessions, the link, status.
    /// Returns true once the source ended and its last datagrams are out.
    pub(crate) fn step(&mut self, now: Instant) -> Result<bool> {
        if self.peer.check(now).is_some() {
            return Ok(true);
        }
        if now >= self.session.deadline {
            self.session.endpoint.handle_timeout(now);
        }
        // Before the video's outputs, so the budget sizing a frame counts the audio.
        self.send_audio(now)?;
        self.send_data(now)?;
        // Drained before looking at the end, so the last picture's encode request (made
        // when the previous encode came back) is not lost.
        self.drain(now)?;
        self.check_session(now)?;
        self.flush_link(now);
        let stats = self.stats();
        self.status.tick(now, &stats);
        self.report_state(now, &stats);
        if !(self.camera_done && self.encoding.is_empty()) {
            return Ok(false);
        }
        let sent = stats.datagrams_sent;
        match &mut self.tail {
            None => self.tail = Some((now, now, sent)),
            Some((_, quiet_since, last)) if *last != sent => {
                (*quiet_since, *last) = (now, sent);
            }
            Some((since, quiet_since, _)) => {
                return Ok(now.saturating_duration_since(*quiet_since) >= TAIL_QUIET
                    || now.saturating_duration_since(*since) >= TAIL_MAX);
            }
        }
        Ok(false)
    }

    /// When the loop next has something to do on its own.
    pub(crate) fn next_at(&self) -> Instant {
        let audio_due = self
            .audio
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |a| a.next_at());
        self.session
            .deadline
            .min(self.link.deadline())
            .min(audio_due)
            .min(self.peer.next_at())
    }

    /// The run's totals, the log closed.
    pub(crate) fn totals(&mut self) -> Result<SenderTotals> {
        if let Some(log) = self.log.take() {
            log.finish()?;
        }
        Ok(SenderTotals {
            scheme: self.config.scheme.name(),
            stats: self.stats(),
            sessions: self.session.number,
            pictures: self.captured,
            rejected: self.link.rejected(),
            keyed: self.keyed,
            source_failed: None,
            audio: self.audio.as_ref().map(|a| (a.datagrams, a.bytes)),
            audio_overruns: self.audio.as_ref().map_or(0, LiveAudioSender::overruns),
            ended: self.peer.check(clock::now()),
            data: self.data_totals(),
        })
    }

    /// What the data channel did, with one.
    pub(crate) fn data_totals(&self) -> Option<DataTotals> {
        self.data.as_ref().map(LiveData::totals)
    }

    /// Sends what the data channel has due, counted in the scheme's budget (never behind a
    /// frame: the endpoint's datagrams are not waited for).
    fn send_data(&mut self, now: Instant) -> Result<()> {
        let Some(data) = &mut self.data else {
            return Ok(());
        };
        let ready = self.peer.heard() && self.link.ready(now);
        for datagram in data.poll(now, ready)? {
            if self.link.send(now, &datagram, None) > 0 {
                self.session.endpoint.handle_audio_sent(now, datagram.len());
                self.status.on_sent(datagram.len());
            }
        }
        Ok(())
    }

    /// Says goodbye to the receiver, unless it ended the call itself.
    pub(crate) fn hang_up(&mut self, now: Instant) {
        if !matches!(
            self.peer.check(now),
            Some(PeerEnded::HungUp | PeerEnded::Busy)
        ) {
            hang_up::say_goodbye(&mut self.link, now);
        }
    }

    /// `totals` with why the camera failed, if it said it stopped (otherwise it may be
    /// blocked reading a pipe, and is not joined).
    pub(crate) fn finish(&self, mut totals: SenderTotals, camera: CameraHandle) -> SenderTotals {
        if self.camera_done {
            totals.source_failed = camera
                .join()
                .unwrap_or(Some("the camera thread panicked".into()));
        }
        totals
    }

    /// Bytes sent beside the scheme's own on the same path (a call's data channel and its
    /// receiver's feedback): counted in the scheme's budget as the audio is.
    pub(crate) fn count_sent(&mut self, now: Instant, bytes: usize) {
        self.session.endpoint.handle_audio_sent(now, bytes);
        self.status.on_sent(bytes);
    }

    /// Reports the counters and the scheme's gauges to the observer, every [`STATE_EVERY`].
    fn report_state(&mut self, now: Instant, stats: &SenderStats) {
        if !self.observer.active() || now < self.next_state {
            return;
        }
        self.next_state = now + STATE_EVERY;
        self.observer.report(Observation::SenderState {
            at: now,
            stats: *stats,
            diagnostics: self.session.endpoint.diagnostics(),
        });
    }

    /// Stats over every session so far.
    fn stats(&self) -> SenderStats {
        sum_stats(&self.earlier, &self.session.endpoint.stats())
    }

    /// A datagram from the socket: opened by the link, then the endpoint's.
    fn on_datagram(&mut self, d: &Received) {
        let Some((_, bytes)) = self.link.receive(d) else {
            return;
        };
        self.peer.on_heard(d.at);
        if Control::is_control(&bytes) {
            if let Ok(c) = Control::parse(&bytes) {
                self.peer.on_control(c);
            }
        } else if bytes.first() == Some(&salsify_call::wire::DATA_TAG) {
            match &mut self.data {
                Some(data) => data.handle_datagram(d.at, &bytes),
                None => self.on_feedback(d.at, &bytes), // the endpoint counts it as bad
            }
        } else {
            self.on_feedback(d.at, &bytes);
        }
    }

    /// Feedback from the receiver, opened, arrived at `at`.
    pub(crate) fn on_feedback(&mut self, at: Instant, bytes: &[u8]) {
        self.tell_max_datagram(at);
        let s = &mut self.session;
        let stale_before = s.endpoint.stats().stale_feedback;
        let accepted = s.endpoint.handle_datagram(at, bytes).is_ok()
            && s.endpoint.stats().stale_feedback == stale_before;
        s.watch.on_feedback(accepted);
    }

    /// A picture, an encode or the camera's end (a datagram goes to
    /// [`Loop::on_feedback`] once opened).
    pub(crate) fn handle(&mut self, input: Input) {
        let s = &mut self.session;
        match input {
            Input::Datagram(_) | Input::Wake => {}
            Input::CameraDone => self.camera_done = true,
            Input::Picture(c) => {
                self.captured += 1;
                let now = clock::now();
                if !matches!(self.config.connect, Connect::To(_)) && !self.link.ready(now) {
                    return; // nobody has dialed yet: nothing to send it to
                }
                if let Some(start) = &self.config.call_start {
                    start.mark(c.at);
                }
                if self.observer.active() {
                    self.observer.report(Observation::Captured {
                        picture: c.id,
                        at: c.at,
                        image: c.image.clone(),
                    });
                }
                if self.pictures.len() == KEEP_PICTURES {
                    self.pictures.pop_front();
                }
                self.pictures.push_back((c.id, c.image));
                s.endpoint.handle_picture(clock::now(), c.id, c.at);
            }
            Input::Encoded(e) => self.finish_encode(e),
        }
    }

    fn finish_encode(&mut self, e: Encoded) {
        let Some((session, id)) = self.encoding.pop_front() else {
            return;
        };
        if session != self.session.number || id != e.id {
            return; // for a session given up on
        }
        if let Err(why) = &e.result {
            eprintln!("salsify send: {why}");
        }
        // An error means the result did not fit the request; the sender drops the picture.
        let _ = self
            .session
            .endpoint
            .handle_encoded(clock::now(), id, e.result);
    }

    /// Sends the audio frames due: the endpoint told of each, then sealed and sent. Before
    /// the receiver can be sent to they are dropped (see [`LiveAudioSender::poll`]).
    fn send_audio(&mut self, now: Instant) -> Result<()> {
        let Some(audio) = &mut self.audio else {
            return Ok(());
        };
        let ready = self.link.ready(now);
        for datagram in audio.poll(now, ready)? {
            self.session.endpoint.handle_audio_sent(now, datagram.len());
            let sent = self.link.send(now, &datagram, None);
            if sent > 0 {
                self.status.on_sent(sent);
            }
        }
        Ok(())
    }

    /// Carries out the endpoint's outputs until its next deadline.
    fn drain(&mut self, now: Instant) -> Result<()> {
        loop {
            match self.session.endpoint.poll_output(now) {
                SenderOutput::Transmit(bytes) => {
                    // Held until the handshake completes: counted as sent when released.
                    let sent = self.link.send(now, &bytes, None);
                    if sent > 0 {
                        self.status.on_sent(sent);
                    }
                    self.session.watch.on_sent(now);
                }
                SenderOutput::Encode(request) => self.start_encode(request),
                SenderOutput::Event(event) => {
                    if let salsify_endpoint::SenderEvent::FrameSent(f) = &event {
                        self.observer.report(Observation::Sent(*f));
                    }
                    if let Some(log) = &mut self.log {
                        log.event(self.session.number, &event)?;
                    }
                }
                SenderOutput::Timeout(t) => {
                    self.session.deadline = t;
                    return Ok(());
                }
            }
        }
    }

    /// Hands `request` to the encoder thread with the picture it names, or tells the
    /// endpoint at once that it cannot be done.
    fn start_encode(&mut self, request: EncodeRequest) {
        let image = self
            .pictures
            .iter()
            .find(|(id, _)| *id == request.picture)
            .map(|(_, image)| image.clone());
        let failed = match image {
            None => Some(format!("picture {} is no longer kept", request.picture)),
            Some(image) => {
                self.encoding.push_back((self.session.number, request.id));
                match self.encoder.submit(request.clone(), image) {
                    true => None,
                    false => {
                        self.encoding.pop_back();
                        Some("the encoder thread stopped".to_string())
                    }
                }
            }
        };
        if let Some(why) = failed {
            let now = clock::now();
            let _ = self
                .session
                .endpoint
                .handle_encoded(now, request.id, Err(EncodeFailed(why)));
        }
    }

    /// Replaces the session when its receiver seems gone.
    fn check_session(&mut self, now: Instant) -> Result<()> {
        let Some(reason) = self.session.watch.check(now) else {
            return Ok(());
        };
        let number = self.session.number + 1;
        let connection_id = self.session.connection_id.wrapping_add(1);
        let fresh = new_session(&self.config, &self.source, number, connection_id)?;
        let ended = std::mem::replace(&mut self.session, fresh);
        self.earlier = sum_stats(&self.earlier, &ended.endpoint.stats());
        self.told_max = 0;
        self.tell_max_datagram(now);
        if self.link.is_initiator() {
            self.link.restart_handshake(now);
        }
        self.observer.report(Observation::SenderSession {
            session: number,
            scheme: self.config.scheme.name(),
        });
        if self.config.status {
            eprintln!("salsify send: {reason}; new session {number} (keyframe)");
        }
        Ok(())
    }

    /// Tells the endpoint the largest datagram the path carries now (less sealing), when it
    /// changed.
    fn tell_max_datagram(&mut self, now: Instant) {
        let max = self.link.max_scheme_datagram();
        if max != self.told_max {
            self.told_max = max;
            self.session.endpoint.set_max_datagram(now, max);
        }
    }

    /// Sends what the link has due (handshake messages, datagrams it held, path messages),
    /// and says once in a while if the receiver does not answer handshakes.
    fn flush_link(&mut self, now: Instant) {
        let sent = self.link.flush(now);
        if sent > 0 {
            self.status.on_sent(sent);
        }
        self.tell_max_datagram(now);
        if self.link.ready(now) {
            self.keyed_at = now;
            self.keyed = true;
        } else if now.saturating_duration_since(self.keyed_at) >= UNANSWERED_HANDSHAKE {
            self.keyed_at = now;
            if !self.config.status {
                return;
            }
            match &self.config.connect {
                Connect::To(to) if self.config.secure.is_some() => eprintln!(
                    "salsify send: no handshake answer from {to} yet: is the receiver running, \
                     with --key/--peer-key matching ours?"
                ),
                Connect::To(_) => {}
                Connect::Listen(at) => {
                    eprintln!(
                        "salsify send: waiting for a receiver to dial {at} (salsify recv --to)"
                    )
                }
                Connect::Via(_) => eprintln!("salsify send: met the receiver, no handshake yet"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run's totals add every session's counters: a sender restarted after 144 frames
    /// and sending 2 more reports 146, not the last session's 2.
    #[test]
    fn totals_sum_the_sessions() {
        let first = SenderStats {
            pictures: 150,
            frames_sent: 144,
            skipped: 4,
            dropped: 2,
            max_states_held: 9,
            quality: Some(salsify_codec::Quality::new(30).unwrap()),
            ..SenderStats::default()
        };
        let last = SenderStats {
            pictures: 3,
            frames_sent: 2,
            dropped: 1,
            max_states_held: 3,
            ..SenderStats::default()
        };
        let total = sum_stats(&first, &last);
        assert_eq!(
            (
                total.pictures,
                total.frames_sent,
                total.skipped,
                total.dropped
            ),
            (153, 146, 4, 3)
        );
        assert_eq!(total.max_states_held, 9);
        assert_eq!(total.quality, first.quality);
    }
}
