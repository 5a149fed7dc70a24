//! Test harness: a sender and a receiver joined by two seeded fake links, a camera ticking at
//! a fixed rate and an encoder service answering encode requests after a fixed time — a small
//! virtual-time simulator (in the spirit of quinn's `Pair`), generic over the codec.
#![allow(dead_code)]

pub mod link;

use std::collections::{BTreeMap, HashMap};

use crate::fake::{FakeDecoder, FakeEncoder, FakeFrame, FakePicture, FakeState};
use crate::*;
use salsify_codec::{Quality, StateHash};
use salsify_time::{Duration, Instant};

pub use salsify_endpoint::{
    Choice, Displayed, EncodeJob, EncodeRequest, ReceiverEvent, ReceiverOutput, SenderEvent,
    SenderOutput, SentFrame,
};

/// The (source, target) states of a frame the Salsify sender sent (it always says them).
pub trait FrameStates {
    /// The state it was encoded from.
    fn source(&self) -> StateHash;
    /// The state it reaches.
    fn target(&self) -> StateHash;
}

impl FrameStates for SentFrame {
    fn source(&self) -> StateHash {
        self.states.expect("Salsify's frames name their states").0
    }
    fn target(&self) -> StateHash {
        self.states.expect("Salsify's frames name their states").1
    }
}

/// The state a functional job encodes from.
pub fn job_source<S>(r: &EncodeRequest<S>) -> &S {
    r.job.source().expect("Salsify asks for functional encodes")
}

pub use link::{Link, LinkConfig};

/// Answers the sender's encode requests; the harness owns the pictures.
pub trait EncodeService {
    /// The codec's frame type.
    type Frame: SendableFrame;
    /// Encodes picture `request.picture` as the job asks.
    fn encode(
        &mut self,
        request: &EncodeRequest<<Self::Frame as SendableFrame>::State>,
    ) -> Vec<Self::Frame>;
}

/// The fake codec as a service.
#[derive(Default)]
pub struct FakeService {
    pub encoder: FakeEncoder,
}

impl EncodeService for FakeService {
    type Frame = FakeFrame;
    fn encode(&mut self, r: &EncodeRequest<FakeState>) -> Vec<FakeFrame> {
        match &r.job {
            EncodeJob::Qualities {
                source, qualities, ..
            } => qualities
                .iter()
                .map(|&q| self.encoder.encode(source, r.picture, q))
                .collect(),
            EncodeJob::SizeTarget { source, bytes, .. } => {
                let (lo, hi) = (Quality::new(3).unwrap(), Quality::WORST);
                let q = self
                    .encoder
                    .quality_for_size(source, r.picture, *bytes, lo, hi);
                vec![self.encoder.encode(source, r.picture, q)]
            }
            other => panic!("Salsify never asks for {other:?}"),
        }
    }
}

/// A frame the receiver showed.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    pub frame: u32,
    pub at: Instant,
    pub captured: Instant,
    pub source: StateHash,
}

type State<E> = <<E as EncodeService>::Frame as SendableFrame>::State;
type Verify<E, D> = Box<dyn FnMut(&SentFrame, &State<E>, &<D as FrameDecoder>::Picture) -> bool>;

/// Sender, receiver, links, camera and encoder in one virtual-time loop.
pub struct Session<E: EncodeService, D: FrameDecoder> {
    pub now: Instant,
    pub sender: Sender<E::Frame>,
    pub receiver: Receiver<D>,
    pub service: E,
    pub forward: Link,
    pub backward: Link,
    pub frame_interval: Duration,
    pub encode_time: Duration,
    /// Extra encode time per kilobyte coded (one after the other), like a real encoder.
    pub encode_time_per_kb: Duration,
    /// How many frames each encode request asked for, in order.
    pub job_sizes: Vec<usize>,
    /// Stop capturing at this time (to check what happens when the camera stops).
    pub camera_until: Instant,
    next_capture: Instant,
    next_picture: u64,
    encoding: Option<(Instant, u64, Vec<E::Frame>)>,
    sender_deadline: Instant,
    receiver_deadline: Instant,
    /// Target states of the frames of the encode in progress, by hash.
    encoded_targets: HashMap<StateHash, State<E>>,
    /// Their hashes, oldest first (the map keeps the newest 64).
    encoded_order: std::collections::VecDeque<StateHash>,
    /// Every frame sent, with the sender's reconstruction.
    pub sent: BTreeMap<u32, (SentFrame, State<E>)>,
    pub shown: Vec<Shown>,
    /// Frames shown whose picture differs from the sender's reconstruction.
    pub wrong: Vec<u32>,
    pub sender_events: Vec<SenderEvent>,
    pub losses: Vec<(Instant, u32)>,
    /// (sender, receiver) states held, sampled at every frame shown.
    pub state_samples: Vec<(usize, usize)>,
    verify: Verify<E, D>,
}

impl<E: EncodeService, D: FrameDecoder> Session<E, D> {
    pub fn new(
        sender: Sender<E::Frame>,
        receiver: Receiver<D>,
        service: E,
        forward: LinkConfig,
        backward: LinkConfig,
        seed: u64,
        verify: Verify<E, D>,
    ) -> Self {
        Session {
            now: Instant::ZERO,
            sender,
            receiver,
            service,
            forward: Link::new(forward, seed),
            backward: Link::new(backward, seed ^ 0xb0b),
            frame_interval: Duration::from_micros(33_333),
            encode_time: Duration::from_millis(5),
            encode_time_per_kb: Duration::ZERO,
            job_sizes: Vec::new(),
            camera_until: Instant::FAR_FUTURE,
            next_capture: Instant::ZERO,
            next_picture: 0,
            encoding: None,
            sender_deadline: Instant::ZERO,
            receiver_deadline: Instant::FAR_FUTURE,
            encoded_targets: HashMap::new(),
            encoded_order: std::collections::VecDeque::new(),
            sent: BTreeMap::new(),
            shown: Vec::new(),
            wrong: Vec::new(),
            sender_events: Vec::new(),
            losses: Vec::new(),
            state_samples: Vec::new(),
            verify,
        }
    }

    /// Runs the loop until virtual time `end`.
    pub fn run_until(&mut self, end: Instant) {
        loop {
            self.drain();
            let next = [
                Some(self.next_capture).filter(|t| *t < self.camera_until),
                self.encoding.as_ref().map(|(t, _, _)| *t),
                Some(self.sender_deadline),
                Some(self.receiver_deadline),
                self.forward.next_arrival(),
                self.backward.next_arrival(),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Instant::FAR_FUTURE);
            if next > end {
                self.now = end;
                return;
            }
            self.now = self.now.max(next);
            self.step();
        }
    }

    /// Hands every input due now to its endpoint.
    fn step(&mut self) {
        let now = self.now;
        if self.next_capture <= now && self.next_capture < self.camera_until {
            self.sender
                .handle_frame(now, self.next_picture, self.next_capture);
            self.next_picture += 1;
            self.next_capture += self.frame_interval;
        }
        if self.encoding.as_ref().is_some_and(|(t, _, _)| *t <= now) {
            let (_, id, frames) = self.encoding.take().unwrap();
            self.sender.handle_encoded(now, id, frames).unwrap();
        }
        while let Some(d) = self.forward.pop_due(now) {
            let _ = self.receiver.handle_datagram(now, &d);
        }
        while let Some(d) = self.backward.pop_due(now) {
            let _ = self.sender.handle_datagram(now, &d);
        }
        self.sender.handle_timeout(now);
        self.receiver.handle_timeout(now);
    }

    /// Drains both endpoints' outputs at the current time.
    fn drain(&mut self) {
        let now = self.now;
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(request) => self.start_encode(request),
                SenderOutput::Transmit(d) => self.forward.send(now, d),
                SenderOutput::Event(e) => self.on_sender_event(e),
                SenderOutput::Timeout(t) => {
                    self.sender_deadline = t;
                    break;
                }
            }
        }
        loop {
            match self.receiver.poll_output() {
                ReceiverOutput::Transmit(d) => self.backward.send(now, d),
                ReceiverOutput::Event(e) => self.on_receiver_event(e),
                ReceiverOutput::Timeout(t) => {
                    self.receiver_deadline = t;
                    break;
                }
            }
        }
    }

    fn start_encode(&mut self, request: EncodeRequest<State<E>>) {
        assert!(self.encoding.is_none(), "one encode at a time");
        let frames = self.service.encode(&request);
        // Kept across requests: the next request can come out before the last one's
        // FrameSent event (a picture was waiting while the encoder was busy).
        for f in &frames {
            self.encoded_targets
                .insert(f.target().hash(), f.target().clone());
            self.encoded_order.push_back(f.target().hash());
        }
        while self.encoded_order.len() > 64 {
            if let Some(old) = self.encoded_order.pop_front() {
                self.encoded_targets.remove(&old);
            }
        }
        self.job_sizes.push(frames.len());
        let kb = frames.iter().map(|f| f.len()).sum::<usize>() as f64 / 1000.0;
        let busy = self.encode_time + self.encode_time_per_kb.mul_f64(kb);
        self.encoding = Some((self.now + busy, request.id, frames));
    }

    fn on_sender_event(&mut self, event: SenderEvent) {
        if let SenderEvent::FrameSent(sent) = event {
            let target = self.encoded_targets[&sent.target()].clone();
            self.sent.insert(sent.frame, (sent, target));
        }
        self.sender_events.push(event);
    }

    fn on_receiver_event(&mut self, event: ReceiverEvent<D::Picture>) {
        match event {
            ReceiverEvent::Display(Displayed {
                frame,
                at,
                picture,
                states: Some((source, target)),
                ..
            }) => {
                let ok = match self.sent.get(&frame) {
                    Some((sent, state)) => {
                        sent.target() == target
                            && sent.source() == source
                            && (self.verify)(sent, state, &picture)
                    }
                    None => false,
                };
                if !ok {
                    self.wrong.push(frame);
                }
                let captured = self.sent.get(&frame).map_or(at, |(s, _)| s.captured);
                self.shown.push(Shown {
                    frame,
                    at,
                    captured,
                    source,
                });
                self.state_samples.push((
                    self.sender.stats().states_held,
                    self.receiver.stats().states_held,
                ));
            }
            ReceiverEvent::FramesLost { through, at, .. } => self.losses.push((at, through)),
            _ => {}
        }
    }

    /// Mean states held (sender, receiver) over the frames shown.
    pub fn mean_states(&self) -> (f64, f64) {
        let n = self.state_samples.len().max(1) as f64;
        let (a, b) = self
            .state_samples
            .iter()
            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
        (a as f64 / n, b as f64 / n)
    }

    /// Frames sent with the given choice.
    pub fn count_choice(&self, choice: Choice) -> usize {
        self.sent
            .values()
            .filter(|(s, _)| s.choice == choice)
            .count()
    }

    /// The first frame shown that the sender committed to at or after `t`.
    pub fn first_shown_sent_after(&self, t: Instant) -> Option<Shown> {
        self.shown
            .iter()
            .find(|s| self.sent.get(&s.frame).is_some_and(|(f, _)| f.at >= t))
            .copied()
    }

    /// The first frame shown at or after `t`.
    pub fn first_shown_after(&self, t: Instant) -> Option<Shown> {
        self.shown.iter().find(|s| s.at >= t).copied()
    }
}

/// A session over the fake codec.
pub type FakeSession = Session<FakeService, FakeDecoder>;

/// A fake-codec session with default configs and the given links.
pub fn fake_session(
    sender: SenderConfig,
    forward: LinkConfig,
    backward: LinkConfig,
    seed: u64,
) -> FakeSession {
    fake_session_with_receiver(sender, ReceiverConfig::default(), forward, backward, seed)
}

/// [`fake_session`] with a receiver configuration too.
pub fn fake_session_with_receiver(
    sender: SenderConfig,
    receiver: ReceiverConfig,
    forward: LinkConfig,
    backward: LinkConfig,
    seed: u64,
) -> FakeSession {
    let sender = Sender::new(sender, FakeState(StateHash::INITIAL)).unwrap();
    let receiver = Receiver::new(receiver, FakeDecoder).unwrap();
    let verify: Verify<FakeService, FakeDecoder> = Box::new(
        |sent: &SentFrame, target: &FakeState, shown: &FakePicture| {
            shown.picture == sent.picture && shown.state == target.0
        },
    );
    Session::new(
        sender,
        receiver,
        FakeService::default(),
        forward,
        backward,
        seed,
        verify,
    )
}

/// Milliseconds as an instant.
pub fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}
