//! A two-way call (`salsify call`): each side runs a sender and a receiver of one scheme on
//! one socket, one meeting and one secure session, plus the data channel, in one loop.
//!
//! Each direction is its own control loop, as in a one-way call; what they share is the
//! link ([`CallLink`]): the peer's media go to this side's receiver, feedback (marked, see
//! [`salsify_call::wire`]) to this side's sender, data-channel datagrams to the channel.
//! Every turn the receiver is drained first, so the feedback it emits can ride on a media
//! datagram the sender sends in the same turn; what none took goes alone when the turn ends,
//! and its bytes, like the data channel's, are counted in this side's sender's budget (the
//! same uplink carries them).
//!
//! A side with no pictures to send (`--input none`: a viewer, an operator sending commands)
//! still sends audio, data and feedback. The call ends when `stop` is set.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::Result;
use salsify_call::control::Control;
use salsify_call::wire::{self, Part};
use salsify_secure::SecureConfig;
use salsify_time::{Duration, Instant};

use crate::camera::PictureSource;
use crate::clock;
use crate::data_io::{DataIoConfig, DataTotals, LiveData};
use crate::display::Display;
use crate::hang_up::{self, HangUpConfig, HangUpWatch, PeerEnded};
use crate::loop_link::{CallLink, CallLinkStats, LoopLink, Side};
use crate::observe::Observer;
use crate::peer_link::{Connect, PeerLink};
use crate::receiver_loop::{self, ReceiverLoopConfig, ReceiverTotals};
use crate::sender_loop::{self, Input, Prepared, SenderLoopConfig, SenderTotals};
use crate::udp::{self, Received};

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Everything a side of a call needs.
#[derive(Debug, Clone)]
pub struct CallConfig {
    /// How this side meets its peer; also the sender's.
    pub connect: Connect,
    /// Keys: one session for both directions (`None`: plaintext).
    pub secure: Option<SecureConfig>,
    /// This side's sender (its `connect` and `secure` are the call's).
    pub sender: SenderLoopConfig,
    /// This side's receiver (its `dial`, `via` and `secure` are ignored: the call's link is
    /// met once, for both).
    pub receiver: ReceiverLoopConfig,
    /// Whether this side sends pictures (`false`: `--input none`).
    pub video: bool,
    /// The data channel's input and output.
    pub data: DataIoConfig,
    /// Print the path's news and status lines.
    pub status: bool,
    /// When the peer is taken as gone (or, dialing, absent).
    pub hang_up: HangUpConfig,
}

/// What a finished call did.
#[derive(Debug, Clone)]
pub struct CallTotals {
    /// What this side sent.
    pub sent: SenderTotals,
    /// What this side received and showed of its peer.
    pub received: ReceiverTotals,
    /// The data channel, when it was used.
    pub data: Option<DataTotals>,
    /// Feedback carried on media and alone.
    pub link: CallLinkStats,
    /// Why the peer's side ended the call, if it did (else this side stopped).
    pub ended: Option<PeerEnded>,
}

/// The call's loop: both directions and the data channel on one link.
struct CallLoop {
    shared: Rc<RefCell<CallLink>>,
    sender: sender_loop::Loop,
    receiver: receiver_loop::Loop,
    data: Option<LiveData>,
    /// Something of the peer's was opened: it is there to take data messages (before, a
    /// *latest* one would be lost and an *ordered* one wait a timeout to be resent).
    heard: bool,
    /// What was heard of the peer, and whether it ended the call.
    peer: HangUpWatch,
}

/// Runs one side of a call until `stop` is set. `source` gives this side's pictures (with
/// `video` false, its pictures are never taken: give any source), `display` shows the
/// peer's.
pub fn run(
    config: CallConfig,
    source: Box<dyn PictureSource>,
    mut display: Display,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<CallTotals> {
    display.set_view(config.receiver.display.view.clone());
    let mut receiver_config = config.receiver;
    receiver_config.secure = config.secure.clone();
    let hang_up = match config.connect {
        Connect::To(_) => config.hang_up,
        _ => HangUpConfig {
            no_answer_after: None,
            ..config.hang_up
        },
    };
    let mut sender_config = config.sender;
    sender_config.connect = config.connect.clone();
    sender_config.secure = config.secure.clone();
    let prepared = Prepared::new(sender_config, source.as_ref())?;
    let socket = config.connect.bind()?;
    let link = PeerLink::connect(
        socket,
        sender_loop::reach(&config.connect),
        config.secure.clone(),
        "salsify call",
        config.status,
        &stop,
    )?;
    let (tx, rx) = mpsc::sync_channel::<Input>(udp::READER_BACKLOG);
    let _reader = udp::spawn_reader(link.socket(), stop.clone(), tx.clone(), Input::Datagram)?;
    let wake = tx.clone();
    let data = LiveData::start(&config.data, move || {
        let _ = wake.try_send(Input::Wake);
    })?;
    let shared = CallLink::new(link);
    let source = if config.video {
        source
    } else {
        Box::new(crate::camera::NoPictures::like(source.as_ref()))
    };
    let sender_link = LoopLink::Shared(shared.clone(), Side::Sender);
    let (sender, camera) = prepared.start(sender_link, source, tx, &stop, observer.clone())?;
    let receiver_link = LoopLink::Shared(shared.clone(), Side::Receiver);
    let receiver = receiver_loop::Loop::new(receiver_config, display, receiver_link, observer)?;
    let mut call = CallLoop {
        shared,
        sender,
        receiver,
        data,
        heard: false,
        peer: HangUpWatch::new(hang_up, clock::now()),
    };
    let served = call.serve(&rx, &stop);
    let now = clock::now();
    let ended = call.peer.check(now);
    if !matches!(ended, Some(PeerEnded::HungUp | PeerEnded::Busy)) {
        let mut goodbye = LoopLink::Shared(call.shared.clone(), Side::Sender);
        hang_up::say_goodbye(&mut goodbye, now);
    }
    let served = served.and_then(|()| call.receiver.end());
    let sent = call.sender.totals();
    let link = call.shared.borrow().stats();
    let data = call.data.as_ref().map(LiveData::totals);
    let sent = call.sender.finish(sent?, camera);
    let received = call.receiver.finish(served)?;
    Ok(CallTotals {
        sent,
        received,
        data,
        link,
        ended,
    })
}

impl CallLoop {
    fn serve(&mut self, rx: &mpsc::Receiver<Input>, stop: &AtomicBool) -> Result<()> {
        while !stop.load(Ordering::Relaxed) {
            let now = clock::now();
            if self.peer.check(now).is_some() {
                break;
            }
            let receiver_next = self.receiver.step(now)?;
            // The sender's source ending does not end the call: the peer's direction goes on.
            let _ = self.sender.step(now)?;
            let data_next = self.pump_data(now)?;
            let alone = self.shared.borrow_mut().flush_feedback(now);
            for bytes in alone {
                self.sender.count_sent(now, bytes);
            }
            let wait = receiver_next
                .min(self.sender.next_at())
                .min(data_next)
                .min(self.peer.next_at())
                .saturating_duration_since(clock::now())
                .min(MAX_WAIT);
            match rx.recv_timeout(wait) {
                Ok(Input::Datagram(d)) => {
                    self.on_datagram(&d)?;
                    // As a receiver with audio does: what is queued is taken before frames
                    // are played, so audio that arrived in time is not concealed.
                    if self.receiver.hears_audio() {
                        while let Ok(input) = rx.try_recv() {
                            self.take(input)?;
                        }
                    }
                }
                Ok(input) => self.take(input)?,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        Ok(())
    }

    fn take(&mut self, input: Input) -> Result<()> {
        match input {
            Input::Datagram(d) => self.on_datagram(&d),
            other => {
                self.sender.handle(other);
                Ok(())
            }
        }
    }

    /// Opens a datagram once and hands each of its parts to whom it is for.
    fn on_datagram(&mut self, d: &Received) -> Result<()> {
        self.receiver.count_datagram(d);
        let opened = self.shared.borrow_mut().link().receive(d);
        let Some((from, bytes)) = opened else {
            return Ok(());
        };
        self.heard = true;
        self.peer.on_heard(d.at);
        let Ok(parts) = wire::split(&bytes) else {
            self.receiver.count_refused();
            return Ok(());
        };
        for part in parts {
            match part {
                Part::Media(m) => self.receiver.on_opened(d.at, from, m)?,
                Part::Feedback(f) => self.sender.on_feedback(d.at, f),
                Part::Control(c) => match Control::parse(c) {
                    Ok(c) => self.peer.on_control(c),
                    Err(_) => self.receiver.count_refused(),
                },
                Part::Data(bytes) => match &mut self.data {
                    Some(data) => data.handle_datagram(d.at, bytes),
                    None => self.receiver.count_refused(),
                },
            }
        }
        Ok(())
    }

    /// Sends what the data channel has due (counted in the sender's budget); returns when
    /// it next has something to do.
    fn pump_data(&mut self, now: Instant) -> Result<Instant> {
        let Some(data) = &mut self.data else {
            return Ok(Instant::FAR_FUTURE);
        };
        let ready = self.heard && self.shared.borrow().link_ready(now);
        for datagram in data.poll(now, ready)? {
            let sent = self.shared.borrow_mut().link().send(now, &datagram, None);
            if sent > 0 {
                self.sender.count_sent(now, datagram.len());
            }
        }
        Ok(data.next_at(now))
    }
}
