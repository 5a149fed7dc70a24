//! The conventional scheme: libwebrtc's own congestion controller, the `goog_cc` crate's
//! line-by-line port of `GoogCcNetworkController` (libwebrtc revision da2a3d6c4d), with
//! libwebrtc's camera-video sender around it. [`WebrtcSender`] feeds the controller as
//! `RtpTransportControllerSend` does (modules/congestion_controller/rtp/ and
//! call/rtp_transport_controller_send.cc):
//!
//! - at start: the constraints (start/min/max), the stream config (pacing factor, the
//!   allocation's min and max), network available, then `OnProcessInterval` every 25 ms with
//!   the pacer's queue;
//! - every packet that leaves: `OnSentPacket` (transport sequence number, size, data in
//!   flight, the probe cluster it belongs to);
//! - every transport feedback: `OnTransportPacketsFeedback` (per packet: send time, size,
//!   receive time or lost), as `TransportFeedbackAdapter` builds it;
//! - every `rtcp_interval_ms`: what an RTCP receiver report would carry (RTT without the
//!   feedback's wait, loss counts), computed from the feedback since;
//!
//! and obeys every field of each `NetworkControlUpdate`: the target rate (with its
//! congestion-window reduction ratio, applied by dropping frames as
//! `VideoStreamEncoder::UpdateTargetBitrate`), the pacer's rate and padding rate, probe
//! clusters (sent by the [`crate::pacer`] as `BitrateProber`), and the congestion window
//! (which blocks the pacer when pushback is off). The pacer drains long queues
//! (`PacingController`'s queue time limit) instead of pausing the encoder.
//!
//! Around the encoder ([`video`]): the allocation is the target capped at the encoder's
//! maximum for the coded size and less the packets' header overhead (libwebrtc subtracts
//! RTP overhead); every change is passed to the encoder (no deadband); the coded size
//! starts small when the start rate is low and follows a QP-based quality scaler.
//!
//! Deviations, each forced by the crate or the testbed's wire:
//! - receive times are mapped onto the sender's clock (offset from the first report,
//!   re-anchored on jumps, clamped between send time and feedback time) so that malformed
//!   feedback cannot reach the crate's assertions;
//! - a report in which every packet is lost is held and passed with the next report that
//!   has a received packet (the port unwraps the newest receive time, where libwebrtc uses
//!   minus infinity);
//! - the receiver-report RTT is the smallest feedback-derived RTT of the period (the wire
//!   has no RTCP sender/receiver reports), so it includes the part of the feedback interval
//!   that the best-placed packet of the period waited.

pub mod adjuster;
pub mod config;
mod controller;
pub mod video;

use std::collections::BTreeMap;

use goog_cc::network_control::{NetworkControllerConfig, NetworkControllerInterface};
use goog_cc::transport::{
    NetworkAvailability, NetworkControlUpdate, PacedPacketInfo, PacketResult, ProcessInterval,
    RoundTripTimeUpdate, SentPacket, StreamsConfig, TargetRateConstraints, TransportLossReport,
    TransportPacketsFeedback,
};
use goog_cc::units::{DataRate, DataSize, TimeDelta, Timestamp};
use goog_cc::{GoogCcConfig, GoogCcNetworkController};
use salsify_endpoint::{
    CbrJob, DatagramError, Diagnostic, DropReason, EncodeFailed, EncodeOutcome, InputError,
    SenderEndpoint, SenderEvent, SenderOutput, SenderStats,
};
use salsify_time::{Bitrate, Duration, Instant};

use crate::core::{Core, Incoming, Picture};
use crate::error::{datagram_error, ConfigError};
use crate::history::PacketResult as SentResult;
use crate::pacer::{Paced, ProbeCluster};
use crate::stats::SenderCounters;
use crate::wire::{Packet, MEDIA_HEADER_LEN};
use crate::wire_id::WireId;
pub use config::ConventionalConfig;
use video::{Admit, CwndFrameDropper, Resolution};

/// Probe packets remembered for their feedback, at most.
const MAX_PROBE_PACKETS: usize = 4096;
/// Lost results held while no report has a received packet, at most.
const MAX_HELD_LOST: usize = 4096;
/// Padding datagram size (libwebrtc pads with small packets; 200 bytes here, the pacer's
/// smallest probe padding).
const PADDING_SIZE: usize = 200;
/// A report whose receive times, mapped with the current offset, land further than this
/// after the feedback arrived re-anchors the receiver's clock.
const CLOCK_JUMP: Duration = Duration::from_secs(1);

fn ts(t: Instant) -> Timestamp {
    Timestamp::from_micros(t.as_micros().min(i64::MAX as u64 / 2) as i64)
}

fn rate_of(b: Bitrate) -> DataRate {
    DataRate::from_bits_per_sec(b.as_bps().min(i64::MAX as u64 / 4) as i64)
}

fn bitrate_of(r: DataRate) -> Bitrate {
    Bitrate::bps(r.bps_or(0).max(0) as u64)
}

/// A window of `size` per `time` as a rate (zero when not finite).
fn window_rate(size: DataSize, time: TimeDelta) -> Bitrate {
    let (bytes, us) = (size.bytes_or(0), time.us_or(0));
    if bytes <= 0 || us <= 0 {
        return Bitrate::ZERO;
    }
    Bitrate::bps((bytes as u128 * 8_000_000 / us as u128).min(u64::MAX as u128) as u64)
}

/// Maps the receiver's clock onto the sender's (`TransportFeedbackAdapter` keeps an offset
/// too, and resets it when the feedback's base time jumps).
#[derive(Debug, Default)]
struct FeedbackClock {
    /// sender time = receiver time + offset (µs).
    offset: Option<i128>,
}

impl FeedbackClock {
    /// Receive times of `results` on the sender's clock (µs), `None` for lost packets.
    fn map(&mut self, now: Instant, results: &[SentResult]) -> Vec<Option<i64>> {
        let now_us = i128::from(now.as_micros());
        let newest = results
            .iter()
            .filter_map(|r| r.arrival)
            .map(|a| i128::from(a.as_micros()))
            .max();
        if let Some(newest) = newest {
            let jump = self.offset.is_none_or(|o| {
                let mapped = newest + o;
                mapped > now_us + CLOCK_JUMP.as_micros() as i128
                    || mapped < now_us - 60 * CLOCK_JUMP.as_micros() as i128
            });
            if jump {
                self.offset = Some(now_us - newest);
            }
        }
        let offset = self.offset.unwrap_or(0);
        results
            .iter()
            .map(|r| {
                r.arrival.map(|a| {
                    let sent = i128::from(r.sent.as_micros());
                    let mapped = (i128::from(a.as_micros()) + offset).clamp(sent, now_us.max(sent));
                    mapped.min(i64::MAX as i128 / 2) as i64
                })
            })
            .collect()
    }
}

/// What an RTCP receiver report would tell, gathered from the feedback of one period.
#[derive(Debug, Default)]
struct ReportPeriod {
    lost: u64,
    received: u64,
    start: Option<Instant>,
    min_rtt: Option<Duration>,
}

/// The WebRTC sender: libwebrtc's GoogCC, pacer and video-sender policies.
pub struct WebrtcSender {
    config: ConventionalConfig,
    source: (u32, u32),
    core: Core,
    /// Built at the first call with a time (its constraints carry one).
    cc: Option<controller::Controller>,
    /// The controller's target rate.
    target: Bitrate,
    cwnd_reduce_ratio: f64,
    pacing_rate: Bitrate,
    padding_rate: Bitrate,
    next_padding: Instant,
    congestion_window: Option<usize>,
    next_process: Instant,
    next_report: Instant,
    period: ReportPeriod,
    resolution: Resolution,
    cwnd_dropper: CwndFrameDropper,
    /// The allocation's maximum the controller was last told.
    told_max: Bitrate,
    /// The encoder target last computed.
    encoder_target: Bitrate,
    waiting: Option<Picture>,
    probe_packets: BTreeMap<u32, PacedPacketInfo>,
    /// The probe cluster a packet was last sent for, and how many clusters were sent from
    /// (for the gauges: a probe lasts tens of milliseconds, less than a gauge's period).
    last_probe: Option<ProbeCluster>,
    probe_clusters: u64,
    clock: FeedbackClock,
    held_lost: Vec<PacketResult>,
    media_sent: bool,
    /// The (encoder, pacing) rates last reported in an event.
    last_event: Option<(Bitrate, Bitrate)>,
    /// `EncoderBitrateAdjuster`, made anew for each coded size (when enabled).
    adjuster: adjuster::BitrateAdjuster,
    adjuster_size: (u32, u32),
    /// The last adjustment: (target in, link allocation in, when, target out).
    adjusted: Option<(Bitrate, Bitrate, Instant, Bitrate)>,
    framerate: adjuster::InputFramerate,
}

impl std::fmt::Debug for WebrtcSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebrtcSender")
            .field("config", &self.config)
            .field("source", &self.source)
            .field("target", &self.target)
            .field("pacing_rate", &self.pacing_rate)
            .field("size", &self.resolution.size())
            .finish_non_exhaustive()
    }
}

impl WebrtcSender {
    /// A sender for a `source` = (width, height) camera; the configuration is checked.
    pub fn new(config: ConventionalConfig, source: (u32, u32)) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut core = Core::new(WireId::Conventional);
        let pacing_rate = config.start.mul_f64(config.pacing_factor);
        core.pacer.set_rate(pacing_rate);
        core.stats.target = config.start;
        Ok(WebrtcSender {
            resolution: Resolution::new(source, config.initial_frame_drop, config.quality_scaler),
            config,
            source,
            core,
            cc: None,
            target: config.start,
            cwnd_reduce_ratio: 0.0,
            pacing_rate,
            padding_rate: Bitrate::ZERO,
            next_padding: Instant::ZERO,
            congestion_window: None,
            next_process: Instant::ZERO,
            next_report: Instant::ZERO,
            period: ReportPeriod::default(),
            cwnd_dropper: CwndFrameDropper::default(),
            told_max: Bitrate::ZERO,
            encoder_target: config.start,
            waiting: None,
            probe_packets: BTreeMap::new(),
            last_probe: None,
            probe_clusters: 0,
            clock: FeedbackClock::default(),
            held_lost: Vec::new(),
            media_sent: false,
            last_event: None,
            adjuster: adjuster::BitrateAdjuster::new(config.min, true),
            adjuster_size: (0, 0),
            adjusted: None,
            framerate: adjuster::InputFramerate::default(),
        })
    }

    /// The controller's current target rate.
    pub fn target(&self) -> Bitrate {
        self.target
    }

    /// The pacing rate the controller asked for.
    pub fn pacing_rate(&self) -> Bitrate {
        self.pacing_rate
    }

    /// The target the encoder was last given.
    pub fn encoder_target(&self) -> Bitrate {
        self.encoder_target
    }

    /// The coded picture size.
    pub fn coded_size(&self) -> (u32, u32) {
        self.resolution.size()
    }

    /// The congestion window the controller set (only when pushback is off).
    pub fn congestion_window(&self) -> Option<usize> {
        self.congestion_window
    }

    /// The scheme's own counters.
    pub fn counters(&self) -> SenderCounters {
        self.core.stats
    }

    /// Builds the controller at `now`, as `RtpTransportControllerSend::MaybeCreateControllers`:
    /// initial constraints and stream config, network available, a first process interval.
    fn ensure_started(&mut self, now: Instant) {
        if self.cc.is_some() {
            return;
        }
        let c = &self.config;
        let size = self.resolution.size();
        let alloc_max = c.encoder_max_for(size.0, size.1);
        self.told_max = alloc_max;
        let mut field_trials = goog_cc::experiments::FieldTrials::default();
        match c.congestion_window {
            Some(w) => {
                field_trials.congestion_window.queue_size_ms = w.as_millis() as i64;
                field_trials.congestion_window.min_bitrate_bps = c.pushback_min.as_bps() as i64;
                field_trials.congestion_window.drop_frame_only = c.pushback_drop_frame;
            }
            None => field_trials.congestion_window.queue_size_ms = 0,
        }
        let config = NetworkControllerConfig {
            field_trials,
            constraints: TargetRateConstraints {
                at_time: ts(now),
                min_data_rate: Some(rate_of(c.min)),
                max_data_rate: c.max.map(rate_of),
                starting_rate: Some(rate_of(c.start)),
            },
            stream_based_config: StreamsConfig {
                at_time: ts(now),
                requests_alr_probing: Some(c.alr_probing),
                enable_repeated_initial_probing: None,
                pacing_factor: Some(c.pacing_factor),
                min_total_allocated_bitrate: Some(rate_of(c.min)),
                max_padding_rate: Some(DataRate::zero()),
                max_total_allocated_bitrate: Some(rate_of(alloc_max)),
            },
        };
        let mut cc = GoogCcNetworkController::new(
            config,
            GoogCcConfig {
                feedback_only: c.feedback_only,
            },
        );
        let available = cc.on_network_availability(NetworkAvailability {
            at_time: ts(now),
            network_available: true,
        });
        self.cc = Some(controller::Controller::new(cc));
        self.next_process = now;
        self.next_report = now + self.config.rtcp_interval;
        self.period.start = Some(now);
        self.apply(now, available);
        self.run_timers(now);
    }

    /// Runs the process interval and the receiver-report period when due.
    fn run_timers(&mut self, now: Instant) {
        if self.cc.is_none() {
            return;
        }
        if now >= self.next_process {
            let queue = self.core.pacer.queued_bytes();
            let u = self.cc_mut().on_process_interval(ProcessInterval {
                at_time: ts(now),
                pacer_queue: Some(DataSize::from_bytes(queue as i64)),
            });
            self.apply(now, u);
            // Skip missed intervals rather than running them in a burst.
            self.next_process = (self.next_process + self.config.process_interval)
                .max(now + self.config.process_interval / 2);
        }
        if now >= self.next_report {
            self.send_report(now);
            self.next_report = now + self.config.rtcp_interval;
        }
    }

    fn cc_mut(&mut self) -> &mut GoogCcNetworkController {
        self.cc.as_mut().expect("started before use").get_mut()
    }

    /// What a receiver report would carry for the period ending now.
    fn send_report(&mut self, now: Instant) {
        let p = std::mem::take(&mut self.period);
        self.period.start = Some(now);
        if self.config.feedback_only {
            return;
        }
        if let Some(rtt) = p.min_rtt {
            let rtt = rtt.max(Duration::from_millis(1));
            let u = self
                .cc_mut()
                .on_round_trip_time_update(RoundTripTimeUpdate {
                    receive_time: ts(now),
                    round_trip_time: TimeDelta::from_micros(rtt.as_micros() as i64),
                    smoothed: false,
                });
            self.apply(now, u);
        }
        if p.lost + p.received > 0 {
            let u = self.cc_mut().on_transport_loss_report(TransportLossReport {
                receive_time: ts(now),
                start_time: ts(p.start.unwrap_or(now)),
                end_time: ts(now),
                packets_lost_delta: p.lost,
                packets_received_delta: p.received,
            });
            self.apply(now, u);
        }
    }

    /// Obeys a controller update.
    fn apply(&mut self, now: Instant, u: NetworkControlUpdate) {
        if let Some(w) = u.congestion_window {
            self.congestion_window = Some(w.bytes_or(i64::MAX).max(0) as usize);
        }
        if let Some(p) = u.pacer_config {
            self.pacing_rate = window_rate(p.data_window, p.time_window);
            self.padding_rate = window_rate(p.pad_window, p.time_window);
        }
        for c in u.probe_cluster_configs {
            let rate = bitrate_of(c.target_data_rate);
            let bytes = rate.bytes_in(Duration::from_micros(
                c.target_duration.us_or(0).max(0) as u64
            ));
            self.core.pacer.add_probe(
                now,
                ProbeCluster {
                    id: c.id.max(0) as u32,
                    rate,
                    min_packets: c.target_probe_count.max(1) as u32,
                    min_bytes: (bytes as usize).max(1),
                },
            );
        }
        if let Some(t) = u.target_rate {
            self.target = bitrate_of(t.target_rate);
            self.cwnd_reduce_ratio = if t.cwnd_reduce_ratio.is_finite() {
                t.cwnd_reduce_ratio.clamp(0.0, 1.0)
            } else {
                0.0
            };
            self.core.stats.target = self.target;
        }
        let encoder = self.compute_encoder_target(now);
        self.report_target(now, encoder);
    }

    /// Tells the log the encoder's and the pacer's rate when either changed: from a
    /// controller update, or from an encode's own computation (the bitrate adjuster refreshes
    /// by time, so the target an encode gets can differ from the last update's).
    fn report_target(&mut self, now: Instant, encoder: Bitrate) {
        if self.last_event != Some((encoder, self.pacing_rate)) {
            self.last_event = Some((encoder, self.pacing_rate));
            self.core.event(SenderEvent::Target {
                at: now,
                encoder,
                pacing: self.pacing_rate,
            });
        }
    }

    /// The encoder's target: the allocation (target capped at the encoder's maximum for the
    /// coded size, at least the stream's minimum) less the packets' header overhead, less
    /// the congestion window's reduction.
    fn compute_encoder_target(&mut self, now: Instant) -> Bitrate {
        let (w, h) = self.resolution.size();
        let max = self.config.encoder_max_for(w, h);
        let allocation = self
            .core
            .less_audio(now, self.target, self.config.min)
            .min(max)
            .max(self.config.min);
        let fragment = self.core.payload();
        let payload_share = fragment as f64 / (fragment + MEDIA_HEADER_LEN) as f64;
        let payload = allocation.mul_f64(payload_share);
        let target = self
            .cwnd_dropper
            .update(payload, self.cwnd_reduce_ratio, self.config.min);
        let target = if self.config.bitrate_adjuster {
            let link = self.target.max(self.config.min).mul_f64(payload_share);
            self.adjust(now, (w, h), target, link)
        } else {
            target
        };
        self.encoder_target = target;
        target
    }

    /// `EncoderBitrateAdjuster::AdjustRateAllocation`, run as `VideoStreamEncoder` runs it:
    /// when the target or the link allocation changes, and at least every second; a new
    /// adjuster for every coded size (`ReconfigureEncoder`).
    fn adjust(
        &mut self,
        now: Instant,
        size: (u32, u32),
        target: Bitrate,
        link: Bitrate,
    ) -> Bitrate {
        if size != self.adjuster_size {
            self.adjuster_size = size;
            self.adjuster = adjuster::BitrateAdjuster::new(self.config.min, true);
            self.adjusted = None;
        }
        if let Some((t, l, when, out)) = self.adjusted {
            if t == target && l == link && now < when + adjuster::REFRESH {
                return out;
            }
        }
        let fps = self.framerate.fps(now);
        let out = self.adjuster.adjust(now, target, link, fps);
        self.adjusted = Some((target, link, now, out));
        out
    }

    /// Tells the controller of a new allocation maximum (the coded size changed), as the
    /// bitrate allocator does through `OnStreamsConfig`.
    fn update_allocation_limits(&mut self, now: Instant) {
        let (w, h) = self.resolution.size();
        let max = self.config.encoder_max_for(w, h);
        if max == self.told_max || self.cc.is_none() {
            return;
        }
        self.told_max = max;
        let u = self.cc_mut().on_streams_config(StreamsConfig {
            at_time: ts(now),
            max_total_allocated_bitrate: Some(rate_of(max)),
            ..StreamsConfig::default()
        });
        self.apply(now, u);
    }

    fn start_encode(&mut self, now: Instant, p: Picture) {
        let target = self.compute_encoder_target(now);
        let size = match self.resolution.admit(now, target) {
            Admit::Encode(size) => size,
            Admit::DropInitial => {
                // `DropDueToSize`: libwebrtc's encoder-side drop (counted as rate control).
                self.core.dropped(now, p, DropReason::RateControl);
                self.update_allocation_limits(now);
                return;
            }
        };
        if self.cwnd_dropper.drop_picture() {
            // Congestion-window pushback's frame drop.
            self.core.dropped(now, p, DropReason::PacerQueue);
            if self.resolution.on_dropped(now) {
                self.update_allocation_limits(now);
            }
            return;
        }
        let target = self.compute_encoder_target(now);
        self.report_target(now, target);
        let job = CbrJob {
            target,
            keyframe: self.core.keyframe_owed,
            width: size.0,
            height: size.1,
            settings: self.config.cbr_settings(),
        };
        self.core.request_cbr(p, job);
    }

    fn on_feedback(&mut self, now: Instant, results: &[SentResult]) {
        if results.is_empty() || self.cc.is_none() {
            return;
        }
        let mapped = self.clock.map(now, results);
        let mut packets: Vec<PacketResult> = std::mem::take(&mut self.held_lost);
        let in_flight = self.core.history.in_flight();
        let mut received = 0u64;
        for (r, arrival) in results.iter().zip(mapped) {
            let pacing_info = self.probe_packets.remove(&r.seq).unwrap_or_default();
            let receive_time = match arrival {
                Some(us) => {
                    received += 1;
                    Timestamp::from_micros(us)
                }
                None => Timestamp::plus_infinity(),
            };
            packets.push(PacketResult {
                sent_packet: SentPacket {
                    send_time: ts(r.sent),
                    size: DataSize::from_bytes(r.size as i64),
                    pacing_info,
                    sequence_number: i64::from(r.seq),
                    ..SentPacket::default()
                },
                receive_time,
                ..PacketResult::default()
            });
        }
        self.period.received += received;
        self.period.lost += results.len() as u64 - received;
        if received == 0 {
            // The port unwraps the newest receive time: hold the losses for the next report.
            packets.truncate(MAX_HELD_LOST);
            self.held_lost = packets;
            return;
        }
        // The RTT an RTCP report would measure: feedback time - send time - time the packet
        // waited at the receiver for the newest one in the report.
        let newest = packets
            .iter()
            .filter(|p| p.is_received())
            .map(|p| p.receive_time.us())
            .max()
            .unwrap_or(0);
        for p in packets.iter().filter(|p| p.is_received()) {
            let waited = newest - p.receive_time.us();
            let rtt_us = ts(now).us() - p.sent_packet.send_time.us() - waited;
            if rtt_us > 0 {
                let rtt = Duration::from_micros(rtt_us as u64);
                self.period.min_rtt = Some(self.period.min_rtt.map_or(rtt, |m| m.min(rtt)));
            }
        }
        let report = TransportPacketsFeedback {
            feedback_time: ts(now),
            data_in_flight: DataSize::from_bytes(in_flight as i64),
            packet_feedbacks: packets,
            sendless_arrival_times: Vec::new(),
        };
        let u = self.cc_mut().on_transport_packets_feedback(report);
        self.apply(now, u);
    }

    /// Reports a datagram that just left to the controller.
    fn on_sent(&mut self, now: Instant, probe: Option<ProbeCluster>) {
        let Some(SenderOutput::Transmit(bytes)) = self.core.out.back() else {
            return;
        };
        let size = bytes.len();
        let seq = match Packet::parse(bytes) {
            Ok(Packet::Media { header, .. }) => header.transport_seq,
            Ok(Packet::Padding { transport_seq, .. }) => transport_seq,
            _ => return,
        };
        let pacing_info = match probe {
            Some(c) => {
                if self.last_probe.map(|p| p.id) != Some(c.id) {
                    self.probe_clusters += 1;
                }
                self.last_probe = Some(c);
                let mut info = PacedPacketInfo::new(
                    c.id as i32,
                    i64::from(c.min_packets.max(1)),
                    (c.min_bytes.max(1)) as i64,
                );
                info.send_bitrate = rate_of(c.rate);
                self.probe_packets.insert(seq, info);
                while self.probe_packets.len() > MAX_PROBE_PACKETS {
                    self.probe_packets.pop_first();
                }
                info
            }
            None => PacedPacketInfo::default(),
        };
        let in_flight = self.core.history.in_flight();
        let u = self.cc_mut().on_sent_packet(SentPacket {
            send_time: ts(now),
            size: DataSize::from_bytes(size as i64),
            pacing_info,
            sequence_number: i64::from(seq),
            data_in_flight: DataSize::from_bytes(in_flight as i64),
            ..SentPacket::default()
        });
        self.apply(now, u);
    }

    /// The pacer's media rate now: the controller's pacing rate, raised so that the queue
    /// leaves within the queue time limit (`PacingController::
    /// MaybeUpdateMediaRateDueToLongQueue`).
    fn media_rate(&self, now: Instant) -> Bitrate {
        let mut rate = self.pacing_rate;
        if let Some(limit) = self.config.max_pacing_delay {
            let bytes = self.core.pacer.queued_bytes();
            if bytes > 0 {
                let avg = self.core.pacer.average_queue_time(now);
                let left = limit.saturating_sub(avg).max(Duration::from_millis(1));
                rate = rate.max(Bitrate::from_bytes_per(bytes as u64, left));
            }
        }
        rate
    }

    fn congested(&self) -> bool {
        self.congestion_window
            .is_some_and(|w| self.core.history.in_flight() >= w)
    }

    /// Sends what the pacer lets out now: media and probes, else padding when due.
    fn pace(&mut self, now: Instant) {
        if self.congested() {
            return;
        }
        let rate = self.media_rate(now);
        self.core.pacer.set_rate(rate);
        if let Some((paced, probe)) = self.core.pacer.pop_paced(now) {
            match paced {
                Paced::Packet(q) => {
                    self.media_sent = true;
                    self.core.transmit(now, q)
                }
                Paced::Padding(len) => self.core.transmit_padding(now, len),
            }
            self.on_sent(now, probe);
            return;
        }
        if self.padding_due(now) == Some(now) {
            let size = self.core.padding_len(PADDING_SIZE);
            self.core.transmit_padding(now, size);
            self.next_padding =
                now.max(self.next_padding) + self.padding_rate.time_for(size as u64);
            self.on_sent(now, None);
        }
    }

    /// When padding may next be sent: only with a padding rate, after media was sent, with
    /// nothing queued and no probe under way.
    fn padding_due(&self, now: Instant) -> Option<Instant> {
        if self.padding_rate == Bitrate::ZERO
            || !self.media_sent
            || !self.core.pacer.is_empty()
            || self.core.pacer.probing()
        {
            return None;
        }
        Some(self.next_padding.max(now))
    }
}

impl SenderEndpoint for WebrtcSender {
    fn scheme(&self) -> &'static str {
        WireId::Conventional.name()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.ensure_started(now);
        self.framerate.on_picture(now);
        let p = Picture { picture, captured };
        if let Some(p) = self.core.admit(now, &mut self.waiting, p) {
            self.start_encode(now, p);
        }
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let Some((p, frame)) = self.core.take_cbr_result(now, id, result)? else {
            return Ok(());
        };
        let resized = match frame {
            Some(f) => {
                let qp = u32::from(f.quality);
                if self.config.bitrate_adjuster {
                    self.adjuster.on_encoded(now, f.data.len());
                }
                self.core.queue_frame(now, p, &f);
                self.resolution.on_encoded(now, Some(qp))
            }
            None => {
                self.core.dropped(now, p, DropReason::RateControl);
                self.resolution.on_encoded(now, None)
            }
        };
        if resized {
            self.update_allocation_limits(now);
        }
        if let Some(next) = self.waiting.take() {
            self.start_encode(now, next);
        }
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.ensure_started(now);
        match self.core.handle_datagram(now, datagram) {
            Incoming::Feedback(results) => self.on_feedback(now, &results),
            Incoming::Other => {}
            Incoming::Bad(e) => return Err(datagram_error(e)),
        }
        Ok(())
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.ensure_started(now);
        self.run_timers(now);
    }

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.core.audio.on_sent(now, bytes);
    }

    /// The shared core's: fragments (and padding) of at most the size the path carries, and
    /// what waits over a lowered size dropped with a keyframe next; the encoder's share of
    /// the target follows the header overhead of the smaller fragments.
    fn set_max_datagram(&mut self, _now: Instant, bytes: usize) {
        self.core.set_max_datagram(bytes);
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        if let Some(o) = self.core.out.pop_front() {
            return o;
        }
        self.ensure_started(now);
        self.run_timers(now);
        if let Some(o) = self.core.out.pop_front() {
            return o;
        }
        self.pace(now);
        if let Some(o) = self.core.out.pop_front() {
            return o;
        }
        let mut wake = self.next_process.min(self.next_report);
        if !self.congested() {
            if let Some(t) = self.core.pacer.next_wake(now) {
                wake = wake.min(t);
            }
            if let Some(t) = self.padding_due(now) {
                wake = wake.min(t);
            }
        }
        SenderOutput::Timeout(wake.max(now))
    }

    fn stats(&self) -> SenderStats {
        self.core.stats.common(Some(self.target))
    }

    /// Padding, retransmissions and NACKs (counters); the controller's target, the
    /// encoder's target, the pacing and padding rates, the congestion window, bytes in
    /// flight and queued, the coded size and the smoothed RTT (gauges).
    fn diagnostics(&self) -> Vec<Diagnostic> {
        let s = &self.core.stats;
        let d = |name, value: f64| Diagnostic { name, value };
        let kbps = |b: Bitrate| b.as_f64() / 1000.0;
        let (w, h) = self.resolution.size();
        vec![
            d("padding_packets", s.padding_packets as f64),
            d("padding_bytes", s.padding_bytes as f64),
            d("retransmissions", s.retransmissions as f64),
            d("nacked", s.nacked as f64),
            d("target_kbps", kbps(self.target)),
            d("encoder_target_kbps", kbps(self.encoder_target)),
            d("pacing_kbps", kbps(self.pacing_rate)),
            d("padding_kbps", kbps(self.padding_rate)),
            d("probe_kbps", self.last_probe.map_or(0.0, |c| kbps(c.rate))),
            d("probe_clusters", self.probe_clusters as f64),
            d(
                "congestion_window_bytes",
                self.congestion_window.map_or(0.0, |w| w as f64),
            ),
            d("in_flight_bytes", self.core.history.in_flight() as f64),
            d("pacer_bytes", self.core.pacer.queued_bytes() as f64),
            d("coded_width", f64::from(w)),
            d("coded_height", f64::from(h)),
            d("resolution_changes", self.resolution.adaptations() as f64),
            d(
                "srtt_ms",
                self.core.srtt.map_or(0.0, |t| t.as_secs_f64() * 1e3),
            ),
        ]
    }
}

#[cfg(test)]
mod tests;
