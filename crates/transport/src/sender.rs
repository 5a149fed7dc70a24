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
//! [`SenderConfig::rules`] picks the rules beyond Algorithm 2, built once into one rule per
//! seam ([`crate::rules`]): the budget source, the outage-and-probe rule, the forced-send rule
//! and the quality walk. The sender feeds them and does what they say; it never asks which
//! rule set it runs. Under the slow-link rules a probe or forced send whose worse option is
//! over its size limit asks for one more encode of the same picture from the same source at
//! `max_quality` ([`EncodeJob::Qualities`] with that one quality); the options wait for it.
//!
//! What it asks for and reports is the endpoint's vocabulary ([`EncodeRequest`],
//! [`SenderEvent`], [`SentFrame`]), generic only over the codec state so that tests drive it
//! with the fake codec; [`crate::SalsifySender`] is this machine on libvpx's frames.
//!
//! Drive it like this: `handle_*` inputs, then drain [`Sender::poll_output`] until it returns
//! [`SenderOutput::Timeout`]; call again at that time or on the next input. Encoding is work
//! the sender asks for ([`SenderOutput::Encode`]), so the runtime decides whether the encodes
//! run in series (Salsify-1c) or in parallel (2c) and how long they take; it hands the frames
//! back through [`Sender::handle_encoded`] at the time they are done. While one request is
//! outstanding, newer pictures wait (only the newest is kept).

use std::collections::{HashMap, VecDeque};

use salsify_codec::{Quality, StateHash};
use salsify_endpoint::{
    AudioMeter, Choice, DropReason, EncodeJob, EncodeRequest, SenderEvent, SenderOutput, SentFrame,
};
use salsify_time::{Duration, Instant};

use crate::codec::{CodecState, SendableFrame};
use crate::config::{ConfigError, SenderConfig, SenderMode};
use crate::decision;
use crate::delivery::HeldForecast;
use crate::encode_time::EncodeTimeControl;
use crate::error::{DatagramRejected, SenderError};
use crate::interval_quality::IntervalQualityController;
use crate::pacer::Pacer;
use crate::resolution::{self, ResolutionStep};
use crate::rules::walk::{OptionSize, Pick};
use crate::rules::{LinkView, Rules};
use crate::state_store::StateStore;
use crate::wire::{AckForecast, DataFragment, Datagram, FragmentId, MAX_FRAGMENTS};

mod acks;
mod max_datagram;
mod types;

pub use types::SalsifySenderStats;

/// Sent-frame records kept to map ACKed fragments to sequence numbers.
const MAX_FRAME_RECORDS: usize = 4096;
/// Fragments whose send time is kept for the audio count (a bound, as for frame records).
const MAX_EMITTED_KEPT: usize = 4096;

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
    /// The picture size it codes (halvings of the source size, as in [`EncodeJob::Qualities`]).
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
    /// The receiver's newest delivery forecast, in fragments of the size in use.
    forecast: Option<HeldForecast>,
    /// That forecast as the ACK carried it (packet units), to convert again when the
    /// fragment size changes.
    forecast_units: Option<AckForecast>,
    /// When the last ACK arrived.
    acked_at: Option<Instant>,
}

/// The Salsify sender. `F` is the codec's encoded-frame type.
#[derive(Debug)]
pub struct Sender<F: SendableFrame> {
    config: SenderConfig,
    /// The scheme's name as its registry knows it, when the builder said it
    /// ([`Sender::with_name`]).
    name: Option<&'static str>,
    /// Payload bytes per fragment now: `config.fragment_payload` until the path is said to
    /// carry less ([`Sender::set_max_datagram`]).
    payload: usize,
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
    /// The rules, one per seam, chosen from `config` once.
    rules: Rules,
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
    /// Events to hand out.
    events: VecDeque<SenderEvent>,
    /// The two options may be encoded at once (Salsify-2c) rather than one after the other
    /// (1c): said in every request, for the driver to schedule and charge.
    parallel: bool,
    interval_quality: IntervalQualityController,
    encode_time: EncodeTimeControl,
    /// Frames sent in a row that took a small share of the budget (see
    /// [`crate::EncodeTimeConfig::single_encode_after`]).
    roomy_frames: u32,
    /// The call's audio sent beside the video on the same path.
    audio: AudioMeter,
    /// While there is audio: when each fragment went out, until the receiver reports it, so
    /// an ACK tells which audio (sent before the fragment it reports, on a first-in
    /// first-out path) has arrived.
    emitted: VecDeque<(FragmentId, Instant)>,
    /// When the newest fragment the receiver reported went out (while there is audio).
    acked_emitted_at: Option<Instant>,
    stats: SalsifySenderStats,
}

impl<F: SendableFrame> Sender<F> {
    /// A sender starting from `initial` (the codec's initial state: first frame a keyframe).
    pub fn new(config: SenderConfig, initial: F::State) -> Result<Self, ConfigError> {
        config.validate()?;
        // The codec's own quality options, in the fields the sender reads.
        let config = config.for_codec();
        let interval = match config.mode {
            SenderMode::ConventionalTransport { update_interval } => update_interval,
            _ => Duration::from_secs(1),
        };
        Ok(Sender {
            name: None,
            payload: config.fragment_payload,
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
            rules: Rules::new(&config),
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
            audio: AudioMeter::default(),
            emitted: VecDeque::new(),
            acked_emitted_at: None,
            parallel: false,
            stats: SalsifySenderStats {
                pictures: 0,
                keyframes: 0,
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

    /// The same sender asking for its two options to be encoded at once (Salsify-2c) when
    /// `parallel`, else one after the other (1c, the default).
    pub fn with_parallel_encodes(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    /// The same sender calling itself `name` (the scheme it was built as) in its reports.
    pub fn with_name(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// The name it was given ([`Sender::with_name`]), if any.
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// True for Salsify-2c: requests say the options may be encoded at once.
    pub fn parallel_encodes(&self) -> bool {
        self.parallel
    }

    /// The configuration in force.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// Payload bytes per fragment now (the budget's MTU): the configured `fragment_payload`,
    /// or less after [`Self::set_max_datagram`].
    pub fn fragment_payload(&self) -> usize {
        self.payload
    }

    /// A camera picture (the runtime keeps the image under `picture`) captured at `captured`.
    pub fn handle_frame(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.stats.pictures += 1;
        self.interval_quality.on_picture(captured);
        self.encode_time.on_picture(captured);
        if self.in_flight.is_some() {
            if let Some((old, _)) = self.waiting_picture.replace((picture, captured)) {
                self.drop_picture(now, old, DropReason::EncoderBusy);
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
                self.drop_picture(now, request.picture, DropReason::Failed)
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
        self.drop_picture(now, request.picture, DropReason::Failed);
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
        let before = self.view.highest_seq;
        self.note_received(ack.highest);
        let (after, in_flight) = (self.view.highest_seq, self.fragments_in_flight());
        self.rules.outage.on_ack(now, before, after, in_flight);
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
        if let Some(request) = self.encodes.pop_front() {
            return SenderOutput::Encode(request);
        }
        if let Some(event) = self.events.pop_front() {
            return SenderOutput::Event(event);
        }
        if let Some((fragment, grace)) = self.pacer.poll(now) {
            return SenderOutput::Transmit(self.emit_fragment(now, fragment, grace));
        }
        let next = self.pacer.next_departure().unwrap_or(Instant::FAR_FUTURE);
        SenderOutput::Timeout(next)
    }

    /// The budget for the next frame in bytes, `MTU x (d / tau - N)` clamped at zero; `None`
    /// (no limit) before the first estimate while nothing is in flight (under the paper's
    /// rules: before the first estimate). See `decision::frame_budget` and
    /// `decision::paper_budget`.
    pub fn budget(&self) -> Option<usize> {
        self.rules.budget.formula(&self.link())
    }

    /// The budget the sender would decide with at `now`, in bytes: [`Sender::budget`] as the
    /// configured budget source amends it (see `crate::rules::budget`).
    pub fn budget_now(&self, now: Instant) -> Option<usize> {
        let budget = self.rules.budget.budget(&self.link());
        budget.map(|b| b.saturating_sub(self.audio_in_flight(now)))
    }

    /// The call's audio sent `bytes` at `now` on the same path: counted in flight (taken from
    /// the budget) until an ACK reports a fragment sent after it, or for the delay target at
    /// most (audio that old has arrived if the link keeps to the target, and if it does not,
    /// the video in flight says so).
    pub fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.audio.on_sent(now, bytes);
    }

    /// Audio bytes that may still be in flight at `now` (see [`Sender::handle_audio_sent`]).
    pub fn audio_in_flight(&self, now: Instant) -> usize {
        if self.audio.total() == 0 {
            return 0;
        }
        let horizon = now
            .checked_sub(self.config.delay_target)
            .unwrap_or(Instant::ZERO);
        let since = self.acked_emitted_at.map_or(horizon, |t| t.max(horizon));
        self.audio.bytes_since(since)
    }

    /// What the rules are told of the link.
    fn link(&self) -> LinkView<'_> {
        LinkView {
            tau: self.view.mean_interarrival,
            forecast: self.view.forecast.as_ref(),
            acked_at: self.view.acked_at,
            in_flight: self.fragments_in_flight(),
            mtu: self.payload,
        }
    }

    /// True while encoding from acknowledged states.
    pub fn in_recovery(&self, now: Instant) -> bool {
        self.recovery_until.is_some_and(|until| now < until)
    }

    /// True when fragments are in flight and the receiver has been silent long enough that
    /// what is in flight is presumed lost (see [`SenderConfig::outage_timeout`] and
    /// `crate::rules::outage`; never under the paper's rules).
    pub fn outage_suspected(&self, now: Instant) -> bool {
        let (tau, in_flight) = (self.view.mean_interarrival, self.fragments_in_flight());
        self.rules.outage.outage_suspected(now, tau, in_flight)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SalsifySenderStats {
        SalsifySenderStats {
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

    fn drop_picture(&mut self, now: Instant, picture: u64, reason: DropReason) {
        self.stats.dropped += 1;
        self.events.push_back(SenderEvent::PictureDropped {
            picture,
            at: now,
            reason,
        });
    }

    fn start_waiting_picture(&mut self, now: Instant) {
        if let Some((picture, captured)) = self.waiting_picture.take() {
            self.start_encode(now, picture, captured);
        }
    }

    /// The state to encode from now, and whether that is a loss-recovery choice.
    fn choose_source(&self, now: Instant) -> (F::State, bool) {
        if self.in_recovery(now) || self.outage_suspected(now) {
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
        let source_hash = source.hash();
        let Some(job) = self.job_for(now, source, halvings) else {
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
            source: source_hash,
            expected: frames_expected(&job),
            recovery,
            coarsest: false,
            requested: now,
            halvings,
        });
        self.encodes.push_back(EncodeRequest {
            id,
            picture,
            captured,
            job,
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
        let config = self.rules.resolution;
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
        let within = self.config.delay_target;
        let fit = resolution::classify(
            coarsest,
            smallest,
            self.payload,
            within,
            self.view.mean_interarrival,
            config.step_up_margin,
        );
        if self.resolution.observe(now, &config, request.halvings, fit) {
            self.coarsest_seen = None;
        }
    }

    /// The encodes to ask for in the configured mode, from `source` at the size `halvings`
    /// says; `None` to skip without encoding.
    fn job_for(
        &mut self,
        now: Instant,
        source: F::State,
        halvings: u8,
    ) -> Option<EncodeJob<F::State>> {
        let (lo, hi) = (self.config.min_quality, self.config.max_quality);
        // The finest quantizer whose encodes still fit the frame interval.
        let lo = self
            .encode_time
            .floor()
            .map_or(lo, |floor| floor.clamp(lo, hi));
        let step = |by: i32| Quality::clamped(i32::from(self.quality.index()) + by, lo, hi);
        let qualities = match self.config.mode {
            SenderMode::Salsify if self.better_only(now) => {
                vec![step(-i32::from(self.config.better_step))]
            }
            SenderMode::Salsify => vec![
                step(-i32::from(self.config.better_step)),
                step(i32::from(self.config.worse_step)),
            ],
            SenderMode::ConventionalCodec => match self.budget_now(now) {
                None => vec![self.quality],
                Some(0) if !self.feedback_starved() => return None,
                // The size-targeted encode codes at the source size (it takes no halvings).
                Some(bytes) => {
                    return Some(EncodeJob::SizeTarget {
                        source,
                        bytes,
                        hint: self.quality,
                    })
                }
            },
            SenderMode::ConventionalTransport { .. } => {
                let rate = self.view.mean_interarrival.map(|tau| (self.payload, tau));
                vec![self.interval_quality.quality(now, rate, lo, hi)]
            }
        };
        Some(EncodeJob::Qualities {
            source,
            qualities,
            parallel: self.parallel,
            halvings,
        })
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

    /// Algorithm 2 and the rules' additions: the quality walk picks the option to send
    /// ([`crate::rules::walk`]), else skip or force.
    fn commit_or_skip(&mut self, now: Instant, request: &InFlightEncode, mut frames: Vec<F>) {
        let budget = self.budget_now(now);
        if self.config.mode == SenderMode::Salsify && !request.coarsest && frames.len() == 1 {
            // The better option alone (see `better_only`): sent if it fits, else skipped,
            // and the skip brings the two options back.
            let frame = frames.swap_remove(0);
            return match budget.is_none_or(|b| frame.len() <= b) {
                true => self.send_frame(now, request, frame, Choice::Better, budget),
                false => self.skip(now, request.picture, request.captured, budget),
            };
        }
        // The options held for a coarsest encode (only a walk that asks for one has any).
        let mut options = std::mem::take(&mut self.held_options);
        if !request.coarsest {
            options.clear();
        }
        options.extend(frames);
        if options.len() == 1 {
            // The one-encode ablations: sent whatever its size.
            let frame = options.swap_remove(0);
            return self.send_frame(now, request, frame, Choice::Only, budget);
        }
        if self.config.mode == SenderMode::Salsify {
            self.observe_size(now, request, &options);
        }
        let overrides = self.overrides(now);
        let sizes: Vec<OptionSize> = options
            .iter()
            .map(|f| OptionSize {
                len: f.len(),
                quality: f.quality(),
            })
            .collect();
        let pick = self.rules.walk.pick(
            budget,
            self.payload,
            &sizes,
            overrides,
            self.consecutive_skips,
        );
        match pick {
            Pick::Send { index, choice } => {
                if choice == Choice::ForcedWorse && !overrides.feedback_starved {
                    self.rules.outage.on_probe_sent();
                }
                let frame = options.swap_remove(index);
                self.send_frame(now, request, frame, choice, budget);
            }
            Pick::EncodeCoarsest => self.encode_coarsest(now, request, options),
            Pick::Skip => self.skip(now, request.picture, request.captured, budget),
            // Cannot happen: every job asks for one or two frames and check_frames made sure
            // that many came back. Dropped rather than guessed at.
            Pick::Drop => self.drop_picture(now, request.picture, DropReason::Failed),
        }
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
            return self.skip(now, request.picture, request.captured, self.budget_now(now));
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
            job: EncodeJob::Qualities {
                source,
                qualities: vec![self.config.max_quality],
                parallel: self.parallel,
                halvings: request.halvings,
            },
        });
    }

    /// When the sender sends although the paper would skip (see [`decision::Overrides`]).
    fn overrides(&self, now: Instant) -> decision::Overrides {
        let (tau, in_flight) = (self.view.mean_interarrival, self.fragments_in_flight());
        decision::Overrides {
            feedback_starved: self.feedback_starved(),
            probe_due: self
                .rules
                .outage
                .probe_due(now, self.last_sent_at, tau, in_flight),
        }
    }

    /// The forced-send rule's verdict ([`crate::rules::forced`]).
    fn feedback_starved(&self) -> bool {
        let in_flight = self.fragments_in_flight();
        self.rules
            .forced
            .feedback_starved(self.consecutive_skips, in_flight)
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
        self.events.push_back(skipped);
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
        let payload = self.payload;
        let count = frame.len().div_ceil(payload);
        let count = match u16::try_from(count) {
            Ok(c) if c > 0 && c <= MAX_FRAGMENTS => c,
            _ => return self.drop_picture(now, request.picture, DropReason::Failed),
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
        // in an ACK stall starts from) outlives the cap, where the outage rule probes.
        if self.rules.outage.keeps_probe_references() {
            self.states.insert_keeping(frame.target().clone(), source);
        } else {
            self.states.insert(frame.target().clone());
        }
        self.note_halvings(target, request.halvings);
        self.last_target = Some(target);
        self.quality = frame.quality();
        self.consecutive_skips = 0;
        self.last_sent_at = Some(now);
        let margin = self.config.encode_time.single_encode_margin;
        let roomy = budget.is_some_and(|b| frame.len() as f64 * margin <= b as f64);
        self.roomy_frames = match roomy {
            true => self.roomy_frames.saturating_add(1),
            false => 0,
        };
        self.interval_quality.on_sent(frame.len());
        self.count_choice(choice);
        let keyframe = source == StateHash::INITIAL;
        self.stats.keyframes += u64::from(keyframe);
        let sent = SenderEvent::FrameSent(SentFrame {
            frame: number,
            picture: request.picture,
            captured: request.captured,
            at: now,
            bytes: frame.len(),
            fragments: count,
            quality: frame.quality(),
            keyframe,
            choice,
            budget,
            recovery: request.recovery,
            states: Some((source, target)),
        });
        self.events.push_back(sent);
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
        if self.audio.total() > 0 {
            let id = FragmentId {
                frame: f.frame,
                index: f.index,
            };
            self.emitted.push_back((id, now));
            if self.emitted.len() > MAX_EMITTED_KEPT {
                self.emitted.pop_front();
            }
        }
        let in_flight = self.fragments_in_flight();
        self.rules.outage.on_fragment_sent(now, in_flight);
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
        // 1..=payload <= fragment_payload <= MAX_PAYLOAD bytes (checked by
        // SenderConfig::validate; set_max_datagram only lowers the payload, to 1 at least).
        fragment
            .emit(&mut out)
            .expect("sender builds only valid fragments");
        self.stats.fragments_sent += 1;
        out
    }
}

/// How many frames a job the sender asks for hands back.
fn frames_expected<S>(job: &EncodeJob<S>) -> usize {
    match job {
        EncodeJob::Qualities { qualities, .. } => qualities.len(),
        _ => 1,
    }
}
