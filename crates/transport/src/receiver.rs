//! The Salsify receiver as a sans-IO state machine.
//!
//! Fragments are reassembled per frame, in any order. A frame is decoded only when it is
//! complete and the receiver holds its source state, so a frame is never shown from a state
//! the receiver lacks (the original decoded partial frames and showed corrupt pictures).
//! Frames are shown in frame-number order; showing frame `n` abandons every older frame.
//! A complete frame whose source state is missing waits `reorder_window` for an older,
//! reordered frame to supply it, then is given up on. Every frame abandoned is counted in
//! `frames_lost`, which each ACK carries: that counter rising is how the sender learns of loss.
//!
//! Every fragment accepted is ACKed with the inter-arrival EWMA, the current state (that of
//! the last frame shown) and the newest held states; duplicate, stale and malformed datagrams
//! are counted and dropped without an ACK and do not feed the estimator. Stored states: after
//! decoding a frame
//! from state `S` the receiver drops every state older than `S`, since the sender only ever
//! encodes from its last frame's target or the newest state the receiver reported — both
//! `S` or newer (after a keyframe, everything older than its target goes). A cap bounds the
//! store whatever the sender does.
//!
//! Untrusted input: a datagram can never make the receiver show a wrong picture (decoding
//! checks both state hashes). Without a configured connection id the receiver locks onto the
//! id of the first frame it shows, not the first datagram it sees, and a frame given up on
//! more than [`MAX_SKIP_AHEAD`] frames ahead is dropped alone instead of abandoning every
//! frame below it, so one forged datagram cannot stall the session.
//!
//! Decoding happens inside `handle_datagram`/`handle_timeout` through the [`FrameDecoder`]
//! the receiver owns. Why not ask the runtime, as the sender does for encodes: the result
//! decides at once what the ACK for this very fragment says (the new current state and held
//! states), decoding is several times cheaper than encoding, and the runtime can still charge
//! decode time by delaying the display it does on [`ReceiverEvent::Display`].

use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::Arc;

use salsify_endpoint::{Displayed, ReceiverEvent, ReceiverOutput};

use salsify_codec::StateHash;
use salsify_time::{Duration, Instant};

use crate::codec::{CodecState, FrameDecoder};
use crate::config::{ConfigError, ReceiverConfig};
use crate::error::DatagramRejected;
use crate::estimator::InterArrivalEstimator;
use crate::link_forecast::LinkForecaster;
use crate::state_store::StateStore;
use crate::wire::{Ack, DataFragment, Datagram, FragmentId};

/// How far ahead of the frames resolved so far an undecodable frame may be and still abandon
/// every frame below it (about a minute of frames; beyond that it is dropped on its own).
pub const MAX_SKIP_AHEAD: u32 = 4096;

/// A snapshot of the Salsify receiver's counters (more than the
/// [`salsify_endpoint::ReceiverStats`] every scheme keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SalsifyReceiverStats {
    /// Datagrams given to `handle_datagram`.
    pub datagrams: u64,
    /// Fragments accepted into reassembly.
    pub fragments_accepted: u64,
    /// Datagrams that did not parse.
    pub malformed: u64,
    /// Datagrams of another session or of an unexpected type.
    pub foreign: u64,
    /// Fragments of frames already shown or given up on.
    pub stale: u64,
    /// Fragments received twice.
    pub duplicates: u64,
    /// Fragments disagreeing with their frame's other fragments.
    pub inconsistent: u64,
    /// Fragments dropped because the reassembly buffer was full.
    pub buffer_full: u64,
    /// Frames shown.
    pub frames_displayed: u64,
    /// Frames given up on (the counter ACKs carry).
    pub frames_lost: u32,
    /// Complete frames whose decode failed or reached an unexpected state.
    pub decode_failures: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// States held now.
    pub states_held: usize,
    /// Most states held at once.
    pub max_states_held: usize,
    /// Frames being reassembled now.
    pub pending_frames: usize,
}

/// A frame being reassembled.
#[derive(Debug)]
struct PartialFrame {
    connection_id: u16,
    count: u16,
    source: StateHash,
    target: StateHash,
    fragments: Vec<Option<Vec<u8>>>,
    received: u16,
    first_sent_at: Instant,
    complete_at: Option<Instant>,
}

impl PartialFrame {
    fn new(f: &DataFragment<'_>) -> Self {
        PartialFrame {
            connection_id: f.connection_id,
            count: f.count,
            source: f.source,
            target: f.target,
            fragments: vec![None; usize::from(f.count)],
            received: 0,
            first_sent_at: f.sent_at,
            complete_at: None,
        }
    }

    fn is_complete(&self) -> bool {
        self.complete_at.is_some()
    }

    fn bytes(&self) -> Vec<u8> {
        self.fragments.iter().flatten().flatten().copied().collect()
    }
}

/// What to do next with the frames being reassembled.
enum NextStep {
    Decode(u32),
    GiveUp(u32),
    Wait,
}

/// The Salsify receiver. `D` decodes frames.
#[derive(Debug)]
pub struct Receiver<D: FrameDecoder> {
    config: ReceiverConfig,
    decoder: D,
    /// The session's id: configured, or locked at the first frame shown.
    connection_id: Option<u16>,
    /// The id to put in ACKs (the latest accepted fragment's until locked).
    ack_connection_id: u16,
    pending: BTreeMap<u32, PartialFrame>,
    states: StateStore<D::State>,
    current: StateHash,
    /// Every frame below this number has been shown or given up on.
    resolved_below: u64,
    estimator: InterArrivalEstimator,
    /// The link's forecast for the sender's forecast budget (`link_forecast`).
    forecaster: Option<LinkForecaster>,
    highest: Option<FragmentId>,
    /// The last fragment accepted and its frame's fragment count.
    last_arrival: Option<(FragmentId, u16)>,
    ack_number: u32,
    transmits: VecDeque<Vec<u8>>,
    events: VecDeque<ReceiverEvent<D::Picture>>,
    stats: SalsifyReceiverStats,
}

impl<D: FrameDecoder> Receiver<D> {
    /// A receiver decoding with `decoder`.
    pub fn new(config: ReceiverConfig, decoder: D) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Receiver {
            connection_id: config.connection_id,
            ack_connection_id: config.connection_id.unwrap_or_default(),
            states: StateStore::new(config.max_states),
            estimator: if config.size_aware_estimate {
                InterArrivalEstimator::size_aware(config.ewma_alpha)
            } else {
                InterArrivalEstimator::new(config.ewma_alpha)
            },
            forecaster: config
                .link_forecast
                .then(|| LinkForecaster::new(&config.forecast)),
            config,
            decoder,
            pending: BTreeMap::new(),
            current: StateHash::INITIAL,
            resolved_below: 0,
            highest: None,
            last_arrival: None,
            ack_number: 0,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: SalsifyReceiverStats::default(),
        })
    }

    /// A datagram from the sender, received at `now`. Bad ones are counted and dropped.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), DatagramRejected> {
        self.stats.datagrams += 1;
        let fragment = match Datagram::parse(bytes) {
            Ok(Datagram::Data(f)) => f,
            Ok(Datagram::Ack(_)) => {
                self.stats.foreign += 1;
                return Err(DatagramRejected::UnexpectedMessage);
            }
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e.into());
            }
        };
        if let Err(why) = self.accept(&fragment, now) {
            self.count_rejection(&why);
            return Err(why);
        }
        let in_sequence = self.follows_last_arrival(&fragment);
        if in_sequence {
            self.estimator
                .on_sized_arrival(now, fragment.grace, bytes.len());
        } else {
            self.estimator.on_arrival_after_gap(now);
        }
        if let Some(forecaster) = &mut self.forecaster {
            forecaster.on_arrival(now, bytes.len(), fragment.grace, in_sequence);
        }
        self.last_arrival = Some((fragment.id(), fragment.count));
        self.highest = self.highest.max(Some(fragment.id()));
        self.process_pending(now);
        self.send_ack(now, fragment.id());
        Ok(())
    }

    /// Time has passed: gives up on frames that waited out the reorder window.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.process_pending(now) {
            // Tell the sender about the loss now rather than at the next fragment.
            self.send_ack(now, self.highest.unwrap_or_default());
        }
    }

    /// The next thing to do; ends with [`ReceiverOutput::Timeout`].
    pub fn poll_output(&mut self) -> ReceiverOutput<D::Picture> {
        if let Some(datagram) = self.transmits.pop_front() {
            return ReceiverOutput::Transmit(datagram);
        }
        if let Some(event) = self.events.pop_front() {
            return ReceiverOutput::Event(event);
        }
        ReceiverOutput::Timeout(self.next_deadline().unwrap_or(Instant::FAR_FUTURE))
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SalsifyReceiverStats {
        SalsifyReceiverStats {
            states_held: self.states.len(),
            max_states_held: self.states.max_held(),
            pending_frames: self.pending.len(),
            ..self.stats
        }
    }

    /// The hash of the state of the last frame shown.
    pub fn current_state(&self) -> StateHash {
        self.current
    }

    /// The receiver's inter-arrival estimate.
    pub fn mean_interarrival(&self) -> Option<Duration> {
        self.estimator.mean()
    }

    /// True if `f` is the fragment the sender sent right after the last one accepted (the
    /// next index of the same frame, or the first of the next frame). Otherwise packets in
    /// between were lost or reordered, and the time since the last arrival — which may span
    /// a whole outage — is no inter-arrival sample: one such gap of a second would otherwise
    /// add 100 ms to tau and shut the budget for many packets after the link comes back.
    fn follows_last_arrival(&self, f: &DataFragment<'_>) -> bool {
        let Some((last, count)) = self.last_arrival else {
            return true;
        };
        if f.frame == last.frame {
            f.index == last.index.wrapping_add(1)
        } else {
            f.frame == last.frame.wrapping_add(1) && f.index == 0 && last.index + 1 == count
        }
    }

    fn count_rejection(&mut self, why: &DatagramRejected) {
        let counter = match why {
            DatagramRejected::ForeignConnection(_) => &mut self.stats.foreign,
            DatagramRejected::Stale(_) => &mut self.stats.stale,
            DatagramRejected::Duplicate { .. } => &mut self.stats.duplicates,
            DatagramRejected::Inconsistent(_) => &mut self.stats.inconsistent,
            DatagramRejected::BufferFull(_) => &mut self.stats.buffer_full,
            _ => &mut self.stats.malformed,
        };
        *counter += 1;
    }

    /// Files a fragment into its frame, or says why not.
    fn accept(&mut self, f: &DataFragment<'_>, now: Instant) -> Result<(), DatagramRejected> {
        if self.connection_id.is_some_and(|id| id != f.connection_id) {
            return Err(DatagramRejected::ForeignConnection(f.connection_id));
        }
        if u64::from(f.frame) < self.resolved_below {
            return Err(DatagramRejected::Stale(f.frame));
        }
        self.make_room_for(f.frame)?;
        let frame = self
            .pending
            .entry(f.frame)
            .or_insert_with(|| PartialFrame::new(f));
        let header = (frame.connection_id, frame.count, frame.source, frame.target);
        if header != (f.connection_id, f.count, f.source, f.target) {
            return Err(DatagramRejected::Inconsistent(f.frame));
        }
        // In range: the parser checked index < count, and count matches this frame's.
        let slot = &mut frame.fragments[usize::from(f.index)];
        if slot.is_some() {
            return Err(DatagramRejected::Duplicate {
                frame: f.frame,
                index: f.index,
            });
        }
        *slot = Some(f.payload.to_vec());
        frame.received += 1;
        frame.first_sent_at = frame.first_sent_at.min(f.sent_at);
        if frame.received == frame.count {
            frame.complete_at = Some(now);
        }
        self.stats.fragments_accepted += 1;
        self.ack_connection_id = f.connection_id;
        Ok(())
    }

    /// Keeps the reassembly buffer bounded: a new frame pushes out the oldest one.
    fn make_room_for(&mut self, frame: u32) -> Result<(), DatagramRejected> {
        if self.pending.contains_key(&frame) || self.pending.len() < self.config.max_pending_frames
        {
            return Ok(());
        }
        match self.pending.first_key_value() {
            Some((&oldest, _)) if oldest < frame => {
                self.pending.remove(&oldest);
                Ok(())
            }
            _ => Err(DatagramRejected::BufferFull(frame)),
        }
    }

    /// Decodes and gives up on frames until nothing more can happen now.
    /// Returns true if any frame was given up on.
    fn process_pending(&mut self, now: Instant) -> bool {
        let mut gave_up = false;
        loop {
            match self.next_step(now) {
                NextStep::Decode(frame) => gave_up |= !self.decode_and_display(now, frame),
                NextStep::GiveUp(frame) => {
                    self.resolve_through(now, frame, false);
                    gave_up = true;
                }
                NextStep::Wait => return gave_up,
            }
        }
    }

    /// The oldest complete frame that can be decoded; else the oldest complete frame that
    /// has waited out the reorder window; else wait.
    fn next_step(&self, now: Instant) -> NextStep {
        let complete = || self.pending.iter().filter(|(_, p)| p.is_complete());
        if let Some((&n, _)) = complete().find(|(_, p)| self.holds(p.source)) {
            return NextStep::Decode(n);
        }
        let expired = |p: &PartialFrame| {
            p.complete_at
                .is_some_and(|t| t + self.config.reorder_window <= now)
        };
        match complete().find(|(_, p)| expired(p)) {
            Some((&n, _)) => NextStep::GiveUp(n),
            None => NextStep::Wait,
        }
    }

    fn holds(&self, source: StateHash) -> bool {
        source == StateHash::INITIAL || self.states.contains(source)
    }

    /// When the oldest waiting complete frame's reorder window ends.
    fn next_deadline(&self) -> Option<Instant> {
        self.pending
            .values()
            .filter_map(|p| p.complete_at)
            .min()
            .map(|t| t + self.config.reorder_window)
    }

    /// Decodes complete frame `n` and shows it; on failure gives up on it.
    /// Returns true if it was shown.
    fn decode_and_display(&mut self, now: Instant, n: u32) -> bool {
        let Some(frame) = self.pending.remove(&n) else {
            return false;
        };
        let source_state = if frame.source == StateHash::INITIAL {
            self.decoder.initial_state()
        } else {
            match self.states.get(frame.source) {
                Some(s) => s.clone(),
                None => return false, // next_step checked it is held; stay safe regardless
            }
        };
        let bytes = frame.bytes();
        let decoded = match self.decoder.decode(&source_state, &bytes) {
            Ok((state, picture)) if state.hash() == frame.target => Some((state, picture)),
            _ => None,
        };
        let Some((state, picture)) = decoded else {
            self.stats.decode_failures += 1;
            self.resolve_through(now, n, false);
            return false;
        };
        self.keep_state(frame.source, state);
        self.current = frame.target;
        self.connection_id = Some(frame.connection_id);
        self.ack_connection_id = frame.connection_id;
        self.resolve_through(now, n, true);
        self.stats.frames_displayed += 1;
        self.events.push_back(ReceiverEvent::Display(Displayed {
            frame: n,
            at: now,
            picture,
            bytes: bytes.len(),
            coded: Arc::from(self.decoder.plain_frame(&bytes)),
            keyframe: frame.source == StateHash::INITIAL,
            first_sent_at: Some(frame.first_sent_at),
            states: Some((frame.source, frame.target)),
        }));
        true
    }

    /// Stores the state a frame from `source` reached, dropping states the sender has moved
    /// past but the `states_behind` newest of them (see [`ReceiverConfig::states_behind`]).
    fn keep_state(&mut self, source: StateHash, reached: D::State) {
        let reached_hash = reached.hash();
        self.states
            .evict_older_than_keeping(source, self.config.states_behind);
        // The source may be the sender's acknowledged reference for frames still to come
        // (not under the first round's rule, `states_behind = 0`, kept as it was).
        if self.config.states_behind > 0 {
            self.states.insert_keeping(reached, source);
        } else {
            self.states.insert(reached);
        }
        if source == StateHash::INITIAL {
            self.states.evict_older_than(reached_hash);
        }
    }

    /// Marks every frame up to `n` done; counts the ones not shown as lost.
    fn resolve_through(&mut self, now: Instant, n: u32, shown: bool) {
        let end = u64::from(n) + 1;
        if !shown && end > self.resolved_below + u64::from(MAX_SKIP_AHEAD) {
            // Implausibly far ahead for a frame nobody could decode: drop it alone.
            self.pending.remove(&n);
            self.count_lost(now, n, 1);
            return;
        }
        let lost = end
            .saturating_sub(self.resolved_below)
            .saturating_sub(u64::from(shown));
        self.resolved_below = self.resolved_below.max(end);
        self.pending = self.pending.split_off(&n.saturating_add(1));
        if n == u32::MAX {
            self.pending.clear();
        }
        if lost > 0 {
            let through = if shown { n.saturating_sub(1) } else { n };
            self.count_lost(now, through, u32::try_from(lost).unwrap_or(u32::MAX));
        }
    }

    fn count_lost(&mut self, now: Instant, through: u32, count: u32) {
        self.stats.frames_lost = self.stats.frames_lost.saturating_add(count);
        self.events.push_back(ReceiverEvent::FramesLost {
            through,
            count,
            at: now,
        });
    }

    fn send_ack(&mut self, now: Instant, acked: FragmentId) {
        let forecast = self.forecaster.as_mut().and_then(|f| f.new_forecast(now));
        let ack = Ack {
            connection_id: self.ack_connection_id,
            ack_number: self.ack_number,
            acked,
            highest: self.highest.unwrap_or_default(),
            mean_interarrival: self.estimator.mean(),
            current_state: self.current,
            frames_lost: self.stats.frames_lost,
            held_states: self.states.newest_hashes(self.config.acked_states),
            forecast,
        };
        self.ack_number = self.ack_number.wrapping_add(1);
        let mut out = Vec::with_capacity(ack.encoded_len());
        // Invariant: acked_states <= MAX_HELD_STATES (ReceiverConfig::validate).
        ack.emit(&mut out).expect("receiver builds only valid ACKs");
        self.stats.acks_sent += 1;
        self.transmits.push_back(out);
    }
}
