//! The Salsify sender as a sans-IO state machine (the paper's Algorithms 1 and 2).
//!
//! Per camera picture the sender asks the runtime for two encodes from one source state: the
//! "better" option at `last - 17` (a finer VP8 quantizer: higher quality, more bytes) and the
//! "worse" option at `last + 23` (coarser, fewer bytes), both clamped to 3..=127, starting at
//! 64 — as the original's "improve" and "fail-small" jobs. When the encodes come back it
//! computes the budget `MTU x (d / tau - N)` and sends the larger frame that fits; if neither
//! fits it skips (the next picture is encoded from the same state) unless it has already
//! skipped `max_consecutive_skips` pictures in a row, in which case it sends the worse one so
//! feedback keeps flowing. The quality of the frame sent becomes the new "last". That choice
//! and the budget are the pure functions of [`crate::decision`], which this state machine only
//! feeds.
//!
//! Source state: the target of the last frame sent; in loss-recovery mode (5 s after the
//! receiver's ACKs report a lost frame) the newest state the receiver says it holds; a
//! keyframe when there is no such state. The same acknowledged state is used while an outage
//! is suspected — fragments in flight and no ACK for [`SenderConfig::outage_timeout`] — so
//! the first frame through after an outage decodes at once, without waiting a round trip for
//! the receiver to report the frames lost in it.
//!
//! [`SenderConfig::rules`] picks the rules beyond Algorithm 2. Under
//! [`SenderRules::SlowLink`] the silence that means an outage follows the link's pace
//! ([`decision::paced_ack_timeout`] over the fragments in flight when the silence began, with
//! the pace the longer of tau and the last per-fragment ACK interval), probes back off
//! exponentially, and a probe or forced send whose worse option is over its size limit asks
//! for one more encode of the same picture from the same source at `max_quality`
//! ([`EncodeJob::Qualities`] with that one quality); the options wait for it.
//!
//! Drive it like this: `handle_*` inputs, then drain [`Sender::poll_output`] until it returns
//! [`SenderOutput::Timeout`]; call again at that time or on the next input. Encoding is work
//! the sender asks for ([`SenderOutput::Encode`]), so the runtime decides whether the encodes
//! run in series (Salsify-1c) or in parallel (2c) and how long they take; it hands the frames
//! back through [`Sender::handle_encoded`] at the time they are done. While one request is
//! outstanding, newer pictures wait (only the newest is kept).

use std::collections::{HashMap, VecDeque};

use salsify_codec::{Quality, StateHash};
use salsify_time::{Duration, Instant};

use crate::base_rtt::BaseRtt;
use crate::codec::{CodecState, EncodedFrame};
use crate::config::{ConfigError, QualityWalk, SenderConfig, SenderMode, SenderRules};
use crate::conventional::IntervalQualityController;
use crate::decision;
use crate::delivery::{self, AckStall, BudgetSource, Curve, HeldForecast};
use crate::encode_time::EncodeTimeControl;
use crate::error::{DatagramRejected, SenderError};
use crate::pacer::Pacer;
use crate::resolution::{self, ResolutionStep};
use crate::size_model::SizeModel;
use crate::state_store::StateStore;
use crate::wire::{
    Ack, DataFragment, Datagram, FragmentId, DATA_HEADER_LEN, FORECAST_UNIT_BYTES, MAX_FRAGMENTS,
};

/// Sent-frame records kept to map ACKed fragments to sequence numbers.
const MAX_FRAME_RECORDS: usize = 4096;

/// Send times kept for fragments in flight (the oldest are dropped beyond it).
const MAX_SEND_TIMES: usize = 8192;

/// What to encode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeJob {
    /// One encode per quality, all from the same source; return the frames in this order.
    /// Salsify asks for `[better, worse]`; the conventional-transport ablation for one.
    Qualities(Vec<Quality>),
    /// Conventional-codec ablation: one encode at the quality the runtime predicts will make a
    /// frame of at most `bytes` (`hint` is the last quality sent, a starting point). The frame
    /// is sent whatever its size. `bytes` is 0 when the skip limit forces a send: encode as
    /// small as possible.
    SizeTarget {
        /// The transport's budget when the picture arrived.
        bytes: usize,
        /// The quality of the last frame sent.
        hint: Quality,
    },
}

impl EncodeJob {
    /// How many frames the runtime must hand back.
    pub fn frames_expected(&self) -> usize {
        match self {
            EncodeJob::Qualities(q) => q.len(),
            EncodeJob::SizeTarget { .. } => 1,
        }
    }
}

/// A request to encode one camera picture.
///
/// How long it takes is the runtime's business: Salsify-1c runs the job's encodes one after
/// the other (hand the frames back after the sum of their times), Salsify-2c in parallel
/// (after the longest). The sender does not look at its clock between request and answer.
#[derive(Debug, Clone)]
pub struct EncodeRequest<S> {
    /// Pass back to [`Sender::handle_encoded`].
    pub id: u64,
    /// The picture id given to [`Sender::handle_frame`].
    pub picture: u64,
    /// Its capture time.
    pub captured: Instant,
    /// The state to encode from (the initial state means: make a keyframe).
    pub source: S,
    /// What to encode.
    pub job: EncodeJob,
    /// Code the picture at its size halved this many times in each dimension (the slow-link
    /// rules' resolution step, [`crate::resolution`]); 0: the source size. When it differs
    /// from the size `source` was made at, `source` is the initial state (a keyframe).
    pub halvings: u8,
}

/// Which option a sent frame was: the one vocabulary of every scheme (Salsify's `Better`,
/// `Worse`, `ForcedWorse`; `Only` for the one-encode ablations).
pub use salsify_endpoint::Choice;

/// A frame the sender committed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentFrame {
    /// Frame number on the wire.
    pub frame: u32,
    /// The camera picture it encodes.
    pub picture: u64,
    /// When that picture was captured.
    pub captured: Instant,
    /// When the sender committed to it (fragments leave through the pacer from then on).
    pub at: Instant,
    /// Its quantizer.
    pub quality: Quality,
    /// Its size in bytes.
    pub bytes: usize,
    /// Fragments it was split into.
    pub fragments: u16,
    /// Source state ([`StateHash::INITIAL`] for keyframes).
    pub source: StateHash,
    /// Target state.
    pub target: StateHash,
    /// Which option it was.
    pub choice: Choice,
    /// The budget it was chosen against, `None` before the first estimate (no limit).
    pub budget: Option<usize>,
    /// Encoded from an acknowledged state in loss-recovery mode.
    pub recovery: bool,
}

/// Things the sender did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SenderEvent {
    /// A frame was committed to the wire.
    FrameSent(SentFrame),
    /// A picture was encoded but neither option fit the budget (or, in the
    /// conventional-codec ablation, the budget was zero before encoding).
    PictureSkipped {
        /// Picture id.
        picture: u64,
        /// Capture time.
        captured: Instant,
        /// When.
        at: Instant,
        /// The budget that was too small.
        budget: Option<usize>,
    },
    /// A picture never got encoded: a newer one arrived while the encoder was busy, or the
    /// runtime reported the encode as failed.
    PictureDropped {
        /// Picture id.
        picture: u64,
        /// When.
        at: Instant,
    },
    /// An ACK reported loss; the sender encodes from acknowledged states until `until`.
    RecoveryStarted {
        /// When.
        at: Instant,
        /// End of recovery mode unless more loss is reported.
        until: Instant,
    },
}

/// What the runtime must do next.
#[derive(Debug)]
pub enum SenderOutput<S> {
    /// Encode a picture and call [`Sender::handle_encoded`] with the frames.
    Encode(EncodeRequest<S>),
    /// Send this datagram to the receiver.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(SenderEvent),
    /// Nothing more until this time (or the next input). [`Instant::FAR_FUTURE`] if idle.
    Timeout(Instant),
}

/// A snapshot of the sender's counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderStats {
    /// Camera pictures offered.
    pub pictures: u64,
    /// Encode requests issued.
    pub encode_requests: u64,
    /// Frames sent, by choice.
    pub sent_better: u64,
    /// Frames sent as the worse option because only it fit.
    pub sent_worse: u64,
    /// Frames sent as the worse option after too many skips.
    pub sent_forced: u64,
    /// Frames sent in one-encode modes.
    pub sent_only: u64,
    /// Pictures skipped for lack of budget.
    pub skipped: u64,
    /// Pictures dropped (encoder busy, failed encode, or a frame with too many fragments).
    pub dropped: u64,
    /// Fragments handed to the wire.
    pub fragments_sent: u64,
    /// Valid ACKs received.
    pub acks: u64,
    /// ACKs older than one already used (counted, used only for the in-flight count).
    pub stale_acks: u64,
    /// Datagrams dropped as malformed, foreign or unexpected.
    pub rejected_datagrams: u64,
    /// Times loss-recovery mode was entered.
    pub recoveries: u64,
    /// Pictures encoded from an acknowledged state because the ACKs had gone silent (an outage).
    pub outage_frames: u64,
    /// States held now.
    pub states_held: usize,
    /// Most states held at once.
    pub max_states_held: usize,
    /// The receiver's latest mean inter-arrival time.
    pub mean_interarrival: Option<Duration>,
    /// Fragments sent but beyond the receiver's newest ACKed one (N).
    pub fragments_in_flight: u64,
    /// Quality of the last frame sent.
    pub quality: Quality,
    /// The finest quantizer the encode-time rule allows now (`None`: no limit).
    pub quality_floor: Option<Quality>,
    /// Halvings of the source size the next picture is coded at (the resolution step).
    pub halvings: u8,
    /// Resolution steps taken (down and up).
    pub resolution_changes: u64,
}

impl SenderStats {
    /// All frames sent.
    pub fn frames_sent(&self) -> u64 {
        self.sent_better + self.sent_worse + self.sent_forced + self.sent_only
    }
}

/// Why a picture was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropCause {
    /// A newer picture arrived while an encode was under way.
    EncoderBusy,
    /// The encode failed, came back wrong, or made a frame of too many fragments.
    Failed,
}

/// One fragment waiting in the pacer.
#[derive(Debug)]
struct QueuedFragment {
    frame: u32,
    index: u16,
    count: u16,
    source: StateHash,
    target: StateHash,
    payload: Vec<u8>,
}

/// The encode the sender is waiting for.
#[derive(Debug)]
struct InFlightEncode {
    id: u64,
    picture: u64,
    captured: Instant,
    source: StateHash,
    expected: usize,
    recovery: bool,
    /// The slow-link rules' extra encode at the coarsest quality (the options it completes
    /// wait in [`Sender::held_options`]).
    coarsest: bool,
    /// When the sender asked for it (its encodes' cost is measured from here).
    requested: Instant,
    /// The picture size it codes (see [`EncodeRequest::halvings`]).
    halvings: u8,
}

/// What the newest usable ACK said.
#[derive(Debug, Default)]
struct ReceiverView {
    ack_number: Option<u32>,
    mean_interarrival: Option<Duration>,
    held_states: Vec<StateHash>,
    frames_lost: u32,
    /// Sequence number (fragments since the start) of the newest fragment received.
    highest_seq: Option<u64>,
    /// The receiver's newest delivery forecast.
    forecast: Option<HeldForecast>,
    /// When the last ACK arrived.
    acked_at: Option<Instant>,
}

/// The Salsify sender. `F` is the codec's encoded-frame type.
#[derive(Debug)]
pub struct Sender<F: EncodedFrame> {
    config: SenderConfig,
    initial: F::State,
    states: StateStore<F::State>,
    pacer: Pacer<QueuedFragment>,
    /// Target of the last frame sent: the state the receiver is assumed to reach.
    last_target: Option<StateHash>,
    quality: Quality,
    consecutive_skips: u32,
    next_frame: u32,
    next_seq: u64,
    /// (frame number, sequence number of its fragment 0, fragment count), oldest first.
    frame_records: VecDeque<(u32, u64, u16)>,
    view: ReceiverView,
    recovery_until: Option<Instant>,
    /// When the last frame was committed.
    last_sent_at: Option<Instant>,
    /// Since when fragments have been in flight with no ACK coming back (None: not silent).
    silent_since: Option<Instant>,
    /// `silent_since` was set by an ACK (fragments were already out), not by a fragment sent
    /// into an idle link: the next ACK's interval then measures the link's pace.
    silence_from_ack: bool,
    /// Fragments in flight when `silent_since` was set: the slow-link rules' ACK timeout
    /// counts these, so that probes sent in a silence do not stretch it.
    silent_flight: u64,
    /// The last per-fragment ACK interval measured so (see [`decision::link_pace`]).
    ack_gap: Option<Duration>,
    /// Probes sent since the last ACK (slow-link rules: each doubles the probe interval).
    probes_in_silence: u32,
    /// Send times of the fragments out of the pacer and not yet reported received, oldest
    /// first, as (sequence number, time); at most [`MAX_SEND_TIMES`].
    send_times: VecDeque<(u64, Instant)>,
    /// The round trip of the newest fragment reported received, and when its ACK came.
    last_round_trip: Option<(Duration, Instant)>,
    /// The path's least recent round trip (kept when the budget reads it).
    base_rtt: BaseRtt,
    /// Mean lateness of ACKs against [`Self::ack_expected`] (gain 1/4, as TCP's RTTVAR):
    /// how much silence is usual on this path.
    ack_lateness: Duration,
    /// The picture size in force.
    resolution: ResolutionStep,
    /// The last coarsest-quality inter frame's size at the size in force (None after a
    /// step until one is made): with the smallest option, it bounds the coarsest frame from
    /// above while the quality is finer (see [`Self::observe_size`]).
    coarsest_seen: Option<usize>,
    /// The size (halvings) each state sent was made at, for the states not at the source
    /// size; pruned to the states held.
    state_halvings: HashMap<StateHash, u8>,
    /// The better and worse options of a picture waiting for its coarsest encode.
    held_options: Vec<F>,
    in_flight: Option<InFlightEncode>,
    waiting_picture: Option<(u64, Instant)>,
    next_request_id: u64,
    encodes: VecDeque<EncodeRequest<F::State>>,
    /// Events to hand out, each dropped picture with why (for [`crate::SalsifySender`]).
    events: VecDeque<(SenderEvent, Option<DropCause>)>,
    interval_quality: IntervalQualityController,
    encode_time: EncodeTimeControl,
    /// Frames sent in a row that took a small share of the budget (see
    /// [`crate::EncodeTimeConfig::single_encode_after`]).
    roomy_frames: u32,
    /// Sizes against quantizers, for `quality_walk = "budget"`.
    size_model: SizeModel,
    /// Frames sent since the last ACK (`ack_stall = "drain"` stops draining before the
    /// receiver's states older than the ones it acknowledged run out).
    frames_since_ack: u32,
    stats: SenderStats,
}

impl<F: EncodedFrame> Sender<F> {
    /// A sender starting from `initial` (the codec's initial state: first frame a keyframe).
    pub fn new(config: SenderConfig, initial: F::State) -> Result<Self, ConfigError> {
        config.validate()?;
        let interval = match config.mode {
            SenderMode::ConventionalTransport { update_interval } => update_interval,
            _ => Duration::from_secs(1),
        };
        Ok(Sender {
            states: StateStore::new(config.max_states),
            pacer: Pacer::new(config.pacing.max_gap),
            last_target: None,
            quality: config.start_quality,
            consecutive_skips: 0,
            next_frame: 0,
            next_seq: 0,
            frame_records: VecDeque::new(),
            view: ReceiverView::default(),
            recovery_until: None,
            last_sent_at: None,
            silent_since: None,
            silence_from_ack: false,
            silent_flight: 0,
            ack_gap: None,
            probes_in_silence: 0,
            send_times: VecDeque::new(),
            last_round_trip: None,
            base_rtt: BaseRtt::default(),
            ack_lateness: Duration::ZERO,
            resolution: ResolutionStep::new(),
            coarsest_seen: None,
            state_halvings: HashMap::new(),
            held_options: Vec::new(),
            in_flight: None,
            waiting_picture: None,
            next_request_id: 0,
            encodes: VecDeque::new(),
            events: VecDeque::new(),
            interval_quality: IntervalQualityController::new(interval, config.start_quality),
            encode_time: EncodeTimeControl::new(config.encode_time),
            roomy_frames: 0,
            size_model: SizeModel::default(),
            frames_since_ack: 0,
            stats: SenderStats {
                pictures: 0,
                encode_requests: 0,
                sent_better: 0,
                sent_worse: 0,
                sent_forced: 0,
                sent_only: 0,
                skipped: 0,
                dropped: 0,
                fragments_sent: 0,
                acks: 0,
                stale_acks: 0,
                rejected_datagrams: 0,
                recoveries: 0,
                outage_frames: 0,
                states_held: 0,
                max_states_held: 0,
                mean_interarrival: None,
                fragments_in_flight: 0,
                quality: config.start_quality,
                quality_floor: None,
                halvings: 0,
                resolution_changes: 0,
            },
            config,
            initial,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// A camera picture (the runtime keeps the image under `picture`) captured at `captured`.
    pub fn handle_frame(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.stats.pictures += 1;
        self.interval_quality.on_picture(captured);
        self.encode_time.on_picture(captured);
        if self.in_flight.is_some() {
            if let Some((old, _)) = self.waiting_picture.replace((picture, captured)) {
                self.drop_picture(now, old, DropCause::EncoderBusy);
            }
            return;
        }
        self.start_encode(now, picture, captured);
    }

    /// The frames of encode request `id`, in the order the job listed them, at the time the
    /// encodes finished.
    pub fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        frames: Vec<F>,
    ) -> Result<(), SenderError> {
        let request = match self.in_flight.take_if(|r| r.id == id) {
            Some(r) => r,
            None => return Err(SenderError::UnknownRequest(id)),
        };
        let checked = self.check_frames(&request, &frames);
        if checked.is_ok() {
            self.measure_encode(now, &request, &frames);
        }
        match checked {
            Ok(()) => self.commit_or_skip(now, &request, frames),
            Err(_) => {
                self.held_options.clear();
                self.drop_picture(now, request.picture, DropCause::Failed)
            }
        }
        // The slow-link rules may have asked for one more encode of the same picture.
        if self.in_flight.is_none() {
            self.start_waiting_picture(now);
        }
        checked
    }

    /// The runtime could not encode request `id`; the picture is dropped.
    pub fn handle_encode_failed(&mut self, now: Instant, id: u64) -> Result<(), SenderError> {
        let request = match self.in_flight.take_if(|r| r.id == id) {
            Some(r) => r,
            None => return Err(SenderError::UnknownRequest(id)),
        };
        self.held_options.clear();
        self.drop_picture(now, request.picture, DropCause::Failed);
        self.start_waiting_picture(now);
        Ok(())
    }

    /// A datagram from the receiver (an ACK). Bad ones are counted and dropped.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), DatagramRejected> {
        let ack = match Datagram::parse(bytes) {
            Ok(Datagram::Ack(ack)) if ack.connection_id == self.config.connection_id => ack,
            Ok(Datagram::Ack(ack)) => {
                return self.reject(DatagramRejected::ForeignConnection(ack.connection_id))
            }
            Ok(Datagram::Data(_)) => return self.reject(DatagramRejected::UnexpectedMessage),
            Err(e) => return self.reject(e.into()),
        };
        self.stats.acks += 1;
        self.view.acked_at = Some(now);
        self.frames_since_ack = 0;
        let before = self.view.highest_seq;
        let expected = self.ack_expected();
        self.note_received(ack.highest);
        self.measure_ack_gap(now, before);
        if self.tracks_round_trips() && self.view.highest_seq > before {
            if let (true, Some(expected)) = (self.silence_in_budget(), expected) {
                let late = now.saturating_duration_since(expected);
                self.ack_lateness = (self.ack_lateness * 3 + late) / 4;
            }
            self.note_round_trip(now);
        }
        // The ACKs are flowing: the silence clock restarts for whatever is still in flight.
        self.silent_since = (self.fragments_in_flight() > 0).then_some(now);
        self.silence_from_ack = self.silent_since.is_some();
        self.silent_flight = self.fragments_in_flight();
        self.probes_in_silence = 0;
        if self.view.ack_number.is_some_and(|n| ack.ack_number <= n) {
            self.stats.stale_acks += 1;
            return Ok(());
        }
        self.apply_ack(now, ack);
        Ok(())
    }

    /// Time has passed; due fragments come out of [`Self::poll_output`].
    pub fn handle_timeout(&mut self, _now: Instant) {}

    /// The next thing to do; ends with [`SenderOutput::Timeout`].
    pub fn poll_output(&mut self, now: Instant) -> SenderOutput<F::State> {
        self.poll_output_with_cause(now).0
    }

    /// [`Self::poll_output`], and for a [`SenderEvent::PictureDropped`] why the picture was
    /// dropped. Kept out of the public event so that event stays exactly as it was.
    pub(crate) fn poll_output_with_cause(
        &mut self,
        now: Instant,
    ) -> (SenderOutput<F::State>, Option<DropCause>) {
        if let Some(request) = self.encodes.pop_front() {
            return (SenderOutput::Encode(request), None);
        }
        if let Some((event, cause)) = self.events.pop_front() {
            return (SenderOutput::Event(event), cause);
        }
        if let Some((fragment, grace)) = self.pacer.poll(now) {
            return (
                SenderOutput::Transmit(self.emit_fragment(now, fragment, grace)),
                None,
            );
        }
        let next = self.pacer.next_departure().unwrap_or(Instant::FAR_FUTURE);
        (SenderOutput::Timeout(next), None)
    }

    /// The budget for the next frame in bytes, `MTU x (d / tau - N)` clamped at zero; `None`
    /// (no limit) before the first estimate while nothing is in flight. See
    /// [`decision::frame_budget`] and [`decision::paper_budget`].
    pub fn budget(&self) -> Option<usize> {
        if self.config.rules == SenderRules::Paper {
            return self.view.mean_interarrival.map(|tau| {
                decision::paper_budget(
                    self.config.fragment_payload,
                    self.config.delay_target,
                    tau,
                    self.fragments_in_flight(),
                )
            });
        }
        decision::frame_budget(
            self.config.fragment_payload,
            self.config.delay_target,
            self.view.mean_interarrival,
            self.fragments_in_flight(),
        )
    }

    /// The budget the sender would decide with at `now`, in bytes: [`Sender::budget`] as the
    /// configured rules, budget source and ACK-stall rule amend it (see [`crate::delivery`]).
    pub fn budget_now(&self, now: Instant) -> Option<usize> {
        self.budget_at(now)
    }

    /// True when the budget counts ACK silence (`[slow_link] silence_weight` above 0 under
    /// the slow-link rules); only then are send times and ACK lateness tracked.
    fn silence_in_budget(&self) -> bool {
        self.config.rules == SenderRules::SlowLink && self.config.slow_link.silence_weight > 0.0
    }

    /// True when send times are kept to measure round trips: for the silence rule above, or
    /// for the queue budget's base round trip.
    fn tracks_round_trips(&self) -> bool {
        self.silence_in_budget() || self.config.budget == BudgetSource::Queue
    }

    /// When the ACK for the oldest fragment in flight is due: one round trip (the last one
    /// measured) after it left, and not before `tau` after the last ACK. `None` with nothing
    /// in flight or nothing measured yet.
    fn ack_expected(&self) -> Option<Instant> {
        let (Some(tau), Some(&(_, sent)), Some((round_trip, acked_at))) = (
            self.view.mean_interarrival,
            self.send_times.front(),
            self.last_round_trip,
        ) else {
            return None;
        };
        Some((acked_at + tau).max(sent + round_trip))
    }

    /// The budget the sender decides with at `now`: [`Sender::budget`], but under the
    /// slow-link rules with tau as the receiver would report it if the fragment it waits for
    /// arrived now ([`decision::tau_after_silence`]). Silence counts from when that
    /// fragment's ACK is due ([`Self::ack_expected`]) plus `silence_jitter_factor` times the
    /// ACKs' usual lateness on this path — as TCP's retransmission timeout adds four times
    /// the RTT variation — so neither a fragment just sent, nor a standing queue, nor the
    /// bursty delivery of a cellular link counts as silence; a link whose rate fell at once
    /// does.
    fn budget_at(&self, now: Instant) -> Option<usize> {
        let sl = &self.config.slow_link;
        if self.config.budget == BudgetSource::Queue && self.config.rules != SenderRules::Paper {
            return self.queue_budget();
        }
        if let Some(budget) = self.curve_budget(now) {
            return Some(budget);
        }
        if !self.silence_in_budget() {
            return self.budget();
        }
        let (Some(tau), Some(expected)) = (self.view.mean_interarrival, self.ack_expected()) else {
            return self.budget();
        };
        let margin = self.ack_lateness.saturating_mul(sl.silence_jitter_factor);
        let overdue = now.saturating_duration_since(expected + margin);
        let tau = decision::tau_after_silence(tau, tau + overdue, sl.silence_weight);
        decision::frame_budget(
            self.config.fragment_payload,
            self.config.delay_target,
            Some(tau),
            self.fragments_in_flight(),
        )
    }

    /// Under `budget = "forecast"` or `ack_stall = "drain"` (slow-link rules), the budget from
    /// [`crate::delivery`]: what the link delivers between the last ACK and `now + d`, less
    /// what is in flight. `None` where the other rules apply (and before any estimate).
    fn curve_budget(&self, now: Instant) -> Option<usize> {
        let drain = self.drains_in_silence();
        let forecast = self.config.budget == BudgetSource::Forecast;
        if self.config.rules == SenderRules::Paper || !(drain || forecast) {
            return None;
        }
        let curve = match (&self.view.forecast, self.view.mean_interarrival) {
            (Some(f), _) if forecast => Curve::Forecast(f),
            (_, Some(tau)) => Curve::Ewma(tau),
            _ => return None,
        };
        let acked = self.view.acked_at?;
        let horizon = acked + self.config.delay_target;
        let mut deliverable = curve.between(acked, horizon);
        if let Some(overdue) = self.ack_overdue_since() {
            // No ACK since it was due: the link may have stopped then, so what the curve
            // delivers from then on is not counted until an ACK says it was delivered.
            deliverable -= curve.between(overdue.max(acked), now.min(horizon));
        }
        if let (true, Some(from)) = (drain, self.drain_decay_from()) {
            // ACKs overdue: the link is assumed to have drained at the estimate's rate since,
            // halving every half-life (nothing while ACKs merely slow down with the link).
            let half_life = self.config.slow_link.stall_half_life;
            deliverable += curve.between_decaying(from, now.max(from), from, half_life);
        }
        Some(delivery::budget_bytes(
            deliverable,
            self.fragments_in_flight(),
            self.config.fragment_payload,
        ))
    }

    /// Under `budget = "queue"`: [`delivery::queue_budget`] at the receiver's estimate and the
    /// path's base round trip (none measured yet: the target alone). Before the first
    /// estimate, as [`decision::frame_budget`].
    fn queue_budget(&self) -> Option<usize> {
        let in_flight = self.fragments_in_flight();
        let Some(tau) = self.view.mean_interarrival else {
            return (in_flight > 0).then_some(0);
        };
        Some(delivery::queue_budget(
            self.config.fragment_payload,
            tau,
            self.base_rtt.get().unwrap_or(Duration::ZERO),
            self.config.queue_target,
            in_flight,
        ))
    }

    /// Under the silence rule (`[slow_link] silence_weight` above 0), when the awaited ACK
    /// became overdue: due ([`Self::ack_expected`]) plus `silence_jitter_factor` times the
    /// ACKs' usual lateness. `None` while it is not due or nothing is awaited.
    fn ack_overdue_since(&self) -> Option<Instant> {
        if !self.silence_in_budget() {
            return None;
        }
        let margin = self
            .ack_lateness
            .saturating_mul(self.config.slow_link.silence_jitter_factor);
        Some(self.ack_expected()? + margin)
    }

    /// The slow-link rules' ACK timeout has passed with fragments in flight.
    fn ack_overdue(&self, now: Instant) -> bool {
        decision::paced_outage_suspected(
            now,
            self.silent_since,
            self.ack_timeout(),
            self.fragments_in_flight(),
        )
    }

    /// `ack_stall = "drain"` under the slow-link rules.
    fn drains_in_silence(&self) -> bool {
        self.config.rules == SenderRules::SlowLink
            && self.config.slow_link.ack_stall == AckStall::Drain
    }

    /// When the assumed drain starts decaying: once the ACK is overdue. `None` while the
    /// ACKs are not silent.
    fn drain_decay_from(&self) -> Option<Instant> {
        self.silent_since.map(|since| since + self.ack_timeout())
    }

    /// True while encoding from acknowledged states.
    pub fn in_recovery(&self, now: Instant) -> bool {
        self.recovery_until.is_some_and(|until| now < until)
    }

    /// True when fragments are in flight and the receiver has been silent for the outage
    /// timeout (see [`SenderConfig::outage_timeout`]): what is in flight is presumed lost.
    ///
    /// Under [`SenderRules::Paper`] never; under [`SenderRules::SlowLink`] the timeout follows
    /// the link's pace ([`decision::paced_ack_timeout`]).
    pub fn outage_suspected(&self, now: Instant) -> bool {
        match self.config.rules {
            SenderRules::Paper => false,
            SenderRules::SlowLink if self.drains_in_silence() => {
                self.ack_overdue(now)
                    && (self.frames_since_ack >= self.config.slow_link.max_drain_frames
                        || self.drain_decay_from().is_some_and(|from| {
                            delivery::drain_halvings(
                                now,
                                from,
                                self.config.slow_link.stall_half_life,
                            ) >= delivery::DRAIN_HALVINGS_TO_OUTAGE
                        }))
            }
            SenderRules::SlowLink => decision::paced_outage_suspected(
                now,
                self.silent_since,
                self.ack_timeout(),
                self.fragments_in_flight(),
            ),
            _ => decision::outage_suspected(
                now,
                self.silent_since,
                self.view.mean_interarrival,
                self.config.outage_timeout,
                self.fragments_in_flight(),
            ),
        }
    }

    /// The silence after which an outage is suspected under the slow-link rules.
    fn ack_timeout(&self) -> Duration {
        decision::paced_ack_timeout(
            self.config.outage_timeout,
            self.config.slow_link.ack_timeout_factor,
            decision::link_pace(self.view.mean_interarrival, self.ack_gap),
            self.silent_flight,
        )
    }

    /// Drops the send times of the fragments reported received, keeping the round trip of
    /// the newest of them.
    fn note_round_trip(&mut self, now: Instant) {
        let Some(highest) = self.view.highest_seq else {
            return;
        };
        while let Some(&(seq, sent)) = self.send_times.front() {
            if seq > highest {
                break;
            }
            if seq == highest {
                let round_trip = now.saturating_duration_since(sent);
                self.last_round_trip = Some((round_trip, now));
                self.base_rtt.push(now, round_trip);
            }
            self.send_times.pop_front();
        }
    }

    /// A fresh ACK after a silence that began with fragments already out: the time per
    /// fragment it advanced by is a sample of the link's pace.
    fn measure_ack_gap(&mut self, now: Instant, before: Option<u64>) {
        let (Some(since), Some(old), Some(new)) =
            (self.silent_since, before, self.view.highest_seq)
        else {
            return;
        };
        if !self.silence_from_ack || new <= old {
            return;
        }
        let advanced = u32::try_from(new - old).unwrap_or(u32::MAX);
        self.ack_gap = Some(now.saturating_duration_since(since) / advanced);
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SenderStats {
        SenderStats {
            states_held: self.states.len(),
            max_states_held: self.states.max_held(),
            mean_interarrival: self.view.mean_interarrival,
            fragments_in_flight: self.fragments_in_flight(),
            quality: self.quality,
            quality_floor: self.encode_time.floor(),
            halvings: self.resolution.halvings(),
            resolution_changes: self.resolution.changes(),
            ..self.stats
        }
    }

    /// Fragments handed to the pacer beyond the newest one the receiver has reported (N).
    /// Fragments still in the pacer count: they will add delay just the same.
    fn fragments_in_flight(&self) -> u64 {
        let received = self.view.highest_seq.map_or(0, |s| s + 1);
        self.next_seq.saturating_sub(received)
    }

    fn reject(&mut self, why: DatagramRejected) -> Result<(), DatagramRejected> {
        self.stats.rejected_datagrams += 1;
        Err(why)
    }

    fn drop_picture(&mut self, now: Instant, picture: u64, cause: DropCause) {
        self.stats.dropped += 1;
        self.events.push_back((
            SenderEvent::PictureDropped { picture, at: now },
            Some(cause),
        ));
    }

    fn start_waiting_picture(&mut self, now: Instant) {
        if let Some((picture, captured)) = self.waiting_picture.take() {
            self.start_encode(now, picture, captured);
        }
    }

    /// The state to encode from now, and whether that is a loss-recovery choice.
    fn choose_source(&self, now: Instant) -> (F::State, bool) {
        // While draining an ACK silence, frames are encoded from the newest acknowledged
        // state too: were it a real outage, the first frame through afterwards decodes at once
        // (from the last state sent it would not, and recovery would wait for the loss report:
        // 120 -> 200 ms on a 500 kbit/s link measured), and the receiver still holds that state
        // (see `max_drain_frames`).
        let draining = self.drains_in_silence() && self.ack_overdue(now);
        if self.in_recovery(now) || self.outage_suspected(now) || draining {
            let acknowledged = self
                .view
                .held_states
                .iter()
                .rev()
                .find_map(|h| self.states.get(*h));
            return (acknowledged.unwrap_or(&self.initial).clone(), true);
        }
        let last = self.last_target.and_then(|h| self.states.get(h));
        (last.unwrap_or(&self.initial).clone(), false)
    }

    fn start_encode(&mut self, now: Instant, picture: u64, captured: Instant) {
        let (mut source, recovery) = self.choose_source(now);
        let halvings = self.resolution.halvings();
        if self.halvings_of(source.hash()) != halvings {
            // A state of another size cannot be a reference: a keyframe at the new size.
            source = self.initial.clone();
        }
        if recovery && !self.in_recovery(now) {
            self.stats.outage_frames += 1;
        }
        let Some(job) = self.job_for(now) else {
            self.skip(now, picture, captured, Some(0));
            return;
        };
        let id = self.next_request_id;
        self.next_request_id += 1;
        self.stats.encode_requests += 1;
        self.in_flight = Some(InFlightEncode {
            id,
            picture,
            captured,
            source: source.hash(),
            expected: job.frames_expected(),
            recovery,
            coarsest: false,
            requested: now,
            halvings,
        });
        self.encodes.push_back(EncodeRequest {
            id,
            picture,
            captured,
            source,
            job,
            halvings,
        });
    }

    /// A job of the usual two options came back: what it cost goes to the encode-time rule.
    fn measure_encode(&mut self, now: Instant, request: &InFlightEncode, frames: &[F]) {
        if request.coarsest || self.config.mode != SenderMode::Salsify {
            return;
        }
        let Some(finest) = frames.iter().map(|f| f.quality()).min() else {
            return;
        };
        let bytes = frames.iter().map(|f| f.len()).sum();
        let range = (self.config.min_quality, self.config.max_quality);
        self.encode_time.on_job(
            now.saturating_duration_since(request.requested),
            bytes,
            finest,
            range,
        );
    }

    /// The size (halvings) `state` was made at; the initial state fits any size.
    fn halvings_of(&self, state: StateHash) -> u8 {
        if state == StateHash::INITIAL {
            return self.resolution.halvings();
        }
        self.state_halvings.get(&state).copied().unwrap_or(0)
    }

    /// The resolution step's observation of one picture's inter-frame options (see
    /// [`crate::resolution`]).
    fn observe_size(&mut self, now: Instant, request: &InFlightEncode, options: &[F]) {
        let config = self.config.slow_link.resolution;
        if !config.enabled || options.iter().any(|f| f.source() == StateHash::INITIAL) {
            return;
        }
        if request.halvings != self.resolution.halvings() {
            return;
        }
        let max = self.config.max_quality;
        let coarsest = options
            .iter()
            .filter(|f| f.quality() >= max)
            .map(|f| f.len())
            .min();
        if coarsest.is_some() {
            self.coarsest_seen = coarsest;
        }
        let Some(smallest) = options.iter().map(|f| f.len()).min() else {
            return;
        };
        // While the quality is finer than the coarsest, the last coarsest frame measured at
        // this size stands in for it (content changes it slowly; the smallest option caps it).
        let smallest = self.coarsest_seen.map_or(smallest, |c| c.min(smallest));
        let within = resolution::fit_horizon(
            self.config.delay_target,
            self.encode_time.frame_interval(),
            config.within_frame_interval,
        );
        let fit = resolution::classify(
            coarsest,
            smallest,
            self.config.fragment_payload,
            within,
            self.view.mean_interarrival,
            config.step_up_margin,
        );
        if self.resolution.observe(now, &config, request.halvings, fit) {
            self.coarsest_seen = None;
        }
    }

    /// The encodes to ask for in the configured mode; `None` to skip without encoding.
    fn job_for(&mut self, now: Instant) -> Option<EncodeJob> {
        let (lo, hi) = (self.config.min_quality, self.config.max_quality);
        // The finest quantizer whose encodes still fit the frame interval.
        let lo = self
            .encode_time
            .floor()
            .map_or(lo, |floor| floor.clamp(lo, hi));
        let step = |by: i32| Quality::clamped(i32::from(self.quality.index()) + by, lo, hi);
        match self.config.mode {
            SenderMode::Salsify if self.better_only(now) => Some(EncodeJob::Qualities(vec![step(
                -i32::from(self.config.better_step),
            )])),
            SenderMode::Salsify => {
                let walked = match (self.config.quality_walk, self.budget_at(now)) {
                    (QualityWalk::Budget, Some(budget)) => {
                        self.size_model
                            .options(budget, lo, hi, self.config.worse_step)
                    }
                    _ => None,
                };
                let (better, worse) = walked.unwrap_or_else(|| {
                    (
                        step(-i32::from(self.config.better_step)),
                        step(i32::from(self.config.worse_step)),
                    )
                });
                Some(EncodeJob::Qualities(vec![better, worse]))
            }
            SenderMode::ConventionalCodec => match self.budget_at(now) {
                None => Some(EncodeJob::Qualities(vec![self.quality])),
                Some(0) if !self.feedback_starved() => None,
                Some(bytes) => Some(EncodeJob::SizeTarget {
                    bytes,
                    hint: self.quality,
                }),
            },
            SenderMode::ConventionalTransport { .. } => {
                let rate = self
                    .view
                    .mean_interarrival
                    .map(|tau| (self.config.fragment_payload, tau));
                let q = self.interval_quality.quality(now, rate, lo, hi);
                Some(EncodeJob::Qualities(vec![q]))
            }
        }
    }

    /// The machine limits the quality, the link has had room to spare for a while, the
    /// picture is at its full size (the resolution step watches both options to step back up)
    /// and nothing is being recovered: the worse option would not be sent.
    fn better_only(&self, now: Instant) -> bool {
        let after = self.config.encode_time.single_encode_after;
        after > 0
            && self.encode_time.floor().is_some()
            && self.resolution.halvings() == 0
            && self.roomy_frames >= after
            && !self.in_recovery(now)
            && !self.outage_suspected(now)
    }

    fn check_frames(&self, request: &InFlightEncode, frames: &[F]) -> Result<(), SenderError> {
        if frames.len() != request.expected {
            return Err(SenderError::WrongFrameCount {
                expected: request.expected,
                got: frames.len(),
            });
        }
        match frames
            .iter()
            .find(|f| f.source() != request.source && f.source() != StateHash::INITIAL)
        {
            Some(f) => Err(SenderError::WrongSource {
                expected: request.source,
                got: f.source(),
            }),
            None => Ok(()),
        }
    }

    /// Algorithm 2 and this project's additions ([`decision::choose_frame`]): send the larger
    /// option that fits the budget now, else skip or force.
    fn commit_or_skip(&mut self, now: Instant, request: &InFlightEncode, mut frames: Vec<F>) {
        let budget = self.budget_at(now);
        let walks = self.config.quality_walk == QualityWalk::Budget;
        if walks && !request.coarsest && frames.iter().all(|f| f.source() == request.source) {
            let sizes: Vec<_> = frames.iter().map(|f| (f.quality(), f.len())).collect();
            self.size_model.observe(&sizes);
        }
        if self.config.mode == SenderMode::Salsify && !request.coarsest && frames.len() == 1 {
            // The better option alone (see `better_only`): sent if it fits, else skipped,
            // and the skip brings the two options back.
            let frame = frames.swap_remove(0);
            return match budget.is_none_or(|b| frame.len() <= b) {
                true => self.send_frame(now, request, frame, Choice::Better, budget),
                false => self.skip(now, request.picture, request.captured, budget),
            };
        }
        if self.config.rules == SenderRules::SlowLink
            && (request.coarsest || self.config.mode == SenderMode::Salsify)
        {
            return self.commit_slow_link(now, request, frames, budget);
        }
        let choice = match frames.as_slice() {
            [_] => Some(Choice::Only),
            [better, worse] => {
                decision::choose_frame(budget, better.len(), worse.len(), self.overrides(now))
            }
            // Cannot happen: every job asks for one or two frames and check_frames made sure
            // that many came back. Dropped rather than guessed at.
            _ => return self.drop_picture(now, request.picture, DropCause::Failed),
        };
        let Some(choice) = choice else {
            return self.skip(now, request.picture, request.captured, budget);
        };
        // [better, worse]: the better is first; the forced option is the worse.
        let index = usize::from(matches!(choice, Choice::Worse | Choice::ForcedWorse));
        let frame = frames.swap_remove(index);
        self.send_frame(now, request, frame, choice, budget);
    }

    /// The slow-link rules ([`decision::choose_slow_link`]): `frames` are `[better, worse]`,
    /// or the coarsest encode completing the options held back for it.
    fn commit_slow_link(
        &mut self,
        now: Instant,
        request: &InFlightEncode,
        frames: Vec<F>,
        budget: Option<usize>,
    ) {
        let mut options = std::mem::take(&mut self.held_options);
        if !request.coarsest {
            options.clear();
        }
        options.extend(frames);
        let (better_len, worse_len, coarsest_len) = match options.as_slice() {
            [b, w] if w.quality() >= self.config.max_quality => (b.len(), w.len(), Some(w.len())),
            [b, w] => (b.len(), w.len(), None),
            [b, w, c] => (b.len(), w.len(), Some(c.len())),
            _ => return self.drop_picture(now, request.picture, DropCause::Failed),
        };
        if self.config.mode == SenderMode::Salsify {
            self.observe_size(now, request, &options);
        }
        let overrides = self.overrides(now);
        let lift = self.consecutive_skips >= self.config.max_consecutive_skips.saturating_mul(2);
        let decision = decision::choose_slow_link(
            budget,
            self.config.fragment_payload,
            better_len,
            worse_len,
            coarsest_len,
            overrides,
            lift,
        );
        let (index, choice) = match decision {
            decision::SlowLinkDecision::Send(Choice::Better) => (0, Choice::Better),
            decision::SlowLinkDecision::Send(choice) => (1, choice),
            decision::SlowLinkDecision::SendCoarsest => (options.len() - 1, Choice::ForcedWorse),
            decision::SlowLinkDecision::EncodeCoarsest => {
                return self.encode_coarsest(now, request, options)
            }
            decision::SlowLinkDecision::Skip => {
                return self.skip(now, request.picture, request.captured, budget)
            }
        };
        if choice == Choice::ForcedWorse && !overrides.feedback_starved {
            self.probes_in_silence = self.probes_in_silence.saturating_add(1);
        }
        let frame = options.swap_remove(index);
        self.send_frame(now, request, frame, choice, budget);
    }

    /// Asks for the picture of `request` once more at the coarsest quality, from the same
    /// source; `options` wait for it. Skipped if that source is no longer held.
    fn encode_coarsest(&mut self, now: Instant, request: &InFlightEncode, options: Vec<F>) {
        let source = if request.source == StateHash::INITIAL {
            Some(self.initial.clone())
        } else {
            self.states.get(request.source).cloned()
        };
        let Some(source) = source else {
            return self.skip(now, request.picture, request.captured, self.budget_at(now));
        };
        self.held_options = options;
        let id = self.next_request_id;
        self.next_request_id += 1;
        self.stats.encode_requests += 1;
        self.in_flight = Some(InFlightEncode {
            id,
            picture: request.picture,
            captured: request.captured,
            source: request.source,
            expected: 1,
            recovery: request.recovery,
            coarsest: true,
            requested: now,
            halvings: request.halvings,
        });
        self.encodes.push_back(EncodeRequest {
            id,
            picture: request.picture,
            captured: request.captured,
            source,
            job: EncodeJob::Qualities(vec![self.config.max_quality]),
            halvings: request.halvings,
        });
    }

    /// When the sender sends although the paper would skip (see [`decision::Overrides`]).
    fn overrides(&self, now: Instant) -> decision::Overrides {
        let base = self.config.outage_probe_interval;
        let interval = match self.config.rules {
            SenderRules::SlowLink => {
                let sl = &self.config.slow_link;
                let cap = if sl.paced_probe_cap {
                    decision::probe_interval_cap(
                        base,
                        sl.max_probe_interval,
                        sl.ack_timeout_factor,
                        decision::link_pace(self.view.mean_interarrival, self.ack_gap),
                    )
                } else {
                    sl.max_probe_interval
                };
                decision::probe_interval(base, cap, self.probes_in_silence)
            }
            _ => base,
        };
        decision::Overrides {
            feedback_starved: self.feedback_starved(),
            probe_due: decision::probe_due(
                now,
                self.outage_suspected(now),
                self.last_sent_at,
                interval,
            ),
        }
    }

    /// See [`decision::feedback_starved`] (and [`decision::paper_forced`] under the paper's
    /// rules).
    fn feedback_starved(&self) -> bool {
        if self.config.rules == SenderRules::Paper {
            return decision::paper_forced(
                self.consecutive_skips,
                self.config.max_consecutive_skips,
            );
        }
        let skips = match self.config.rules {
            SenderRules::SlowLink => self.config.slow_link.idle_link_skips,
            _ => self.config.max_consecutive_skips,
        };
        decision::feedback_starved(self.consecutive_skips, skips, self.fragments_in_flight())
    }

    fn skip(&mut self, now: Instant, picture: u64, captured: Instant, budget: Option<usize>) {
        self.consecutive_skips += 1;
        self.roomy_frames = 0;
        self.stats.skipped += 1;
        let skipped = SenderEvent::PictureSkipped {
            picture,
            captured,
            at: now,
            budget,
        };
        self.events.push_back((skipped, None));
    }

    /// Commits `frame`: fragments into the pacer, target state into the store.
    fn send_frame(
        &mut self,
        now: Instant,
        request: &InFlightEncode,
        frame: F,
        choice: Choice,
        budget: Option<usize>,
    ) {
        let payload = self.config.fragment_payload;
        let count = frame.len().div_ceil(payload);
        let count = match u16::try_from(count) {
            Ok(c) if c > 0 && c <= MAX_FRAGMENTS => c,
            _ => return self.drop_picture(now, request.picture, DropCause::Failed),
        };
        let number = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        let (source, target) = (frame.source(), frame.target().hash());
        for (index, chunk) in frame.bytes().chunks(payload).enumerate() {
            self.pacer.push(QueuedFragment {
                frame: number,
                index: index as u16, // < count <= MAX_FRAGMENTS
                count,
                source,
                target,
                payload: chunk.to_vec(),
            });
        }
        self.frame_records.push_back((number, self.next_seq, count));
        if self.frame_records.len() > MAX_FRAME_RECORDS {
            self.frame_records.pop_front();
        }
        self.next_seq += u64::from(count);
        // As at the receiver: a reference still in use (the acknowledged state every probe
        // in an ACK stall starts from) outlives the cap (slow-link rules only, so the paper's
        // and the first round's senders stay as they were).
        if self.config.rules == SenderRules::SlowLink {
            self.states.insert_keeping(frame.target().clone(), source);
        } else {
            self.states.insert(frame.target().clone());
        }
        self.note_halvings(target, request.halvings);
        self.last_target = Some(target);
        self.quality = frame.quality();
        self.consecutive_skips = 0;
        self.last_sent_at = Some(now);
        self.frames_since_ack = self.frames_since_ack.saturating_add(1);
        let margin = self.config.encode_time.single_encode_margin;
        let roomy = budget.is_some_and(|b| frame.len() as f64 * margin <= b as f64);
        self.roomy_frames = match roomy {
            true => self.roomy_frames.saturating_add(1),
            false => 0,
        };
        self.interval_quality.on_sent(frame.len());
        self.count_choice(choice);
        let sent = SenderEvent::FrameSent(SentFrame {
            frame: number,
            picture: request.picture,
            captured: request.captured,
            at: now,
            quality: frame.quality(),
            bytes: frame.len(),
            fragments: count,
            source,
            target,
            choice,
            budget,
            recovery: request.recovery,
        });
        self.events.push_back((sent, None));
    }

    /// Records the size a state sent was made at (only states below the source size are
    /// kept, pruned to the states the store still holds).
    fn note_halvings(&mut self, target: StateHash, halvings: u8) {
        if halvings == 0 {
            self.state_halvings.remove(&target);
        } else {
            self.state_halvings.insert(target, halvings);
        }
        if self.state_halvings.len() > 2 * self.config.max_states.max(1) {
            let states = &self.states;
            self.state_halvings.retain(|h, _| states.contains(*h));
        }
    }

    fn count_choice(&mut self, choice: Choice) {
        let counter = match choice {
            Choice::Better => &mut self.stats.sent_better,
            Choice::Worse => &mut self.stats.sent_worse,
            Choice::ForcedWorse => &mut self.stats.sent_forced,
            Choice::Only => &mut self.stats.sent_only,
        };
        *counter += 1;
    }

    fn emit_fragment(&mut self, now: Instant, f: QueuedFragment, grace: Duration) -> Vec<u8> {
        if self.silent_since.is_none() {
            self.silent_since = Some(now);
            self.silent_flight = self.fragments_in_flight();
        }
        let fragment = DataFragment {
            connection_id: self.config.connection_id,
            frame: f.frame,
            index: f.index,
            count: f.count,
            source: f.source,
            target: f.target,
            grace: if self.config.grace_period {
                grace
            } else {
                Duration::ZERO
            },
            sent_at: now,
            payload: &f.payload,
        };
        let mut out = Vec::with_capacity(fragment.encoded_len());
        // Invariant: send_frame built index < count <= MAX_FRAGMENTS and payloads of
        // 1..=fragment_payload <= MAX_PAYLOAD bytes (checked by SenderConfig::validate).
        fragment
            .emit(&mut out)
            .expect("sender builds only valid fragments");
        self.stats.fragments_sent += 1;
        if self.tracks_round_trips() {
            // The pacer is first in, first out: this is the oldest fragment not yet emitted.
            let seq = self.next_seq - 1 - self.pacer.len() as u64;
            self.send_times.push_back((seq, now));
            if self.send_times.len() > MAX_SEND_TIMES {
                self.send_times.pop_front();
            }
        }
        out
    }

    /// Maps the receiver's newest received fragment to a sequence number (for N).
    fn note_received(&mut self, highest: FragmentId) {
        let Some(&(_, first, count)) = self
            .frame_records
            .iter()
            .find(|(frame, _, _)| *frame == highest.frame)
        else {
            return;
        };
        if highest.index >= count {
            return;
        }
        let seq = first + u64::from(highest.index);
        if self.view.highest_seq.is_none_or(|s| seq > s) {
            self.view.highest_seq = Some(seq);
            while self
                .frame_records
                .front()
                .is_some_and(|(frame, _, _)| *frame != highest.frame)
            {
                self.frame_records.pop_front();
            }
        }
    }

    /// Takes in a fresh ACK: estimate, loss report, held states, state eviction, pacing.
    fn apply_ack(&mut self, now: Instant, ack: Ack) {
        self.view.ack_number = Some(ack.ack_number);
        self.view.mean_interarrival = ack.mean_interarrival.or(self.view.mean_interarrival);
        if ack.frames_lost > self.view.frames_lost {
            let until = now + self.config.recovery_duration;
            self.recovery_until = Some(until);
            self.stats.recoveries += 1;
            self.events
                .push_back((SenderEvent::RecoveryStarted { at: now, until }, None));
        }
        self.view.frames_lost = self.view.frames_lost.max(ack.frames_lost);
        // The receiver keeps only states from its newest one the sender can use onward,
        // and the sender never encodes from anything older, so older states are dead.
        if let Some(newest) = ack
            .held_states
            .iter()
            .rev()
            .find(|h| self.states.contains(**h))
        {
            self.states.evict_older_than(*newest);
        }
        self.view.held_states = ack.held_states;
        if let Some(forecast) = &ack.forecast {
            let wire = self.config.fragment_payload + DATA_HEADER_LEN;
            self.view.forecast = Some(HeldForecast::new(now, forecast, FORECAST_UNIT_BYTES, wire));
        }
        if let Some(tau) = self.view.mean_interarrival {
            let p = &self.config.pacing;
            let gap = (tau / p.speedup).clamp(p.min_gap, p.max_gap);
            self.pacer.set_gap(gap);
        }
    }
}
