//! Bandwidth probing: libwebrtc's `ProbeController` (when to probe, at what rate) and
//! `ProbeBitrateEstimator` (what a probe cluster's transport feedback says).
//!
//! A probe cluster is a short burst the pacer sends at the probe rate instead of the pacing
//! rate, of at least [`MIN_PROBE_PACKETS`] packets and [`MIN_PROBE_DURATION`] x the rate in
//! bytes (media if queued, padding otherwise). Its feedback gives the rate the path
//! delivered it at; GCC then sets its estimate to that rate outright (`SetEstimate`).
//!
//! When (the defaults of libwebrtc's `ProbeControllerConfig`):
//! - at the start of the call, two clusters at [`FIRST_EXPONENTIAL_SCALE`] and
//!   [`SECOND_EXPONENTIAL_SCALE`] x the start rate;
//! - "further" probing: while waiting for a result (at most [`MAX_WAIT_FOR_RESULT`]), an
//!   estimate above [`FURTHER_PROBE_THRESHOLD`] x the last probe's rate probes again at
//!   [`FURTHER_SCALE`] x the estimate;
//! - after a large drop (estimate under [`DROP_THRESHOLD`] x the previous one), once the
//!   detector recovers from under-use, one cluster at [`FRACTION_AFTER_DROP`] x the rate
//!   before the drop, but only in or within [`ALR_ENDED_TIMEOUT`] after an
//!   application-limited region, within [`DROP_TIMEOUT`] of the drop, and at most every
//!   [`MIN_TIME_BETWEEN_DROP_PROBES`] (`RequestProbe`);
//! - periodic probes at [`ALR_PROBE_SCALE`] x the estimate every [`ALR_PROBING_INTERVAL`]
//!   while application-limited, only if enabled (libwebrtc enables it only for streams that
//!   request it: screen share, `requests_alr_probing`; not for camera video).
//!
//! No probe goes above the configured maximum rate (libwebrtc caps probes at the maximum, or
//! at twice the maximum allocated rate; the encoder's maximum here is that same ceiling).
//! A link whose capacity comes back mid-call while the sender is not application-limited
//! is therefore not probed: the estimate climbs back by the AIMD increase alone, as in
//! libwebrtc.

use std::collections::BTreeMap;

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;

/// First initial probe, x the start rate (libwebrtc `first_exponential_probe_scale`, 3).
pub const FIRST_EXPONENTIAL_SCALE: f64 = 3.0;
/// Second initial probe, x the start rate (libwebrtc `second_exponential_probe_scale`, 6).
pub const SECOND_EXPONENTIAL_SCALE: f64 = 6.0;
/// Further probes, x the estimate (libwebrtc `further_exponential_probe_scale`, 2).
pub const FURTHER_SCALE: f64 = 2.0;
/// Probe further when the estimate exceeds this share of the last probe rate (libwebrtc
/// `further_probe_threshold`, 0.7).
pub const FURTHER_PROBE_THRESHOLD: f64 = 0.7;
/// How long a probe's result is waited for (libwebrtc `kMaxWaitingTimeForProbingResult`).
pub const MAX_WAIT_FOR_RESULT: Duration = Duration::from_secs(1);
/// A drop to this share of the estimate or below is "large" (libwebrtc
/// `kBitrateDropThreshold`, 0.66).
pub const DROP_THRESHOLD: f64 = 0.66;
/// Probe after a large drop only within this time of it (libwebrtc `kBitrateDropTimeout`).
pub const DROP_TIMEOUT: Duration = Duration::from_secs(5);
/// Probe after a drop at this share of the rate before it (libwebrtc
/// `kProbeFractionAfterDrop`, 0.85).
pub const FRACTION_AFTER_DROP: f64 = 0.85;
/// Expected uncertainty of a probe result, as a share of its rate (libwebrtc
/// `kProbeUncertainty`, 0.05): no drop probe if the estimate is already that close.
pub const PROBE_UNCERTAINTY: f64 = 0.05;
/// A drop probe may follow an ALR that ended this recently (libwebrtc `kAlrEndedTimeout`).
pub const ALR_ENDED_TIMEOUT: Duration = Duration::from_secs(3);
/// Least time between drop probes (libwebrtc `kMinTimeBetweenAlrProbes`).
pub const MIN_TIME_BETWEEN_DROP_PROBES: Duration = Duration::from_secs(5);
/// Periodic ALR probe interval (libwebrtc `alr_probing_interval`, 5 s).
pub const ALR_PROBING_INTERVAL: Duration = Duration::from_secs(5);
/// Periodic ALR probe rate, x the estimate (libwebrtc `alr_probe_scale`, 2).
pub const ALR_PROBE_SCALE: f64 = 2.0;
/// Packets in a cluster, at least (libwebrtc `min_probe_packets_sent`, 5).
pub const MIN_PROBE_PACKETS: u32 = 5;
/// A cluster lasts at least this long at its rate (libwebrtc `min_probe_duration`, 15 ms).
pub const MIN_PROBE_DURATION: Duration = Duration::from_millis(15);

/// Share of a cluster's packets and bytes whose feedback must be in for an estimate
/// (libwebrtc `kMinReceivedProbesRatio`, `kMinReceivedBytesRatio`: 0.8).
pub const MIN_RECEIVED_RATIO: f64 = 0.8;
/// Longest send or receive span of a valid cluster (libwebrtc `kMaxProbeInterval`, 1 s).
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// A receive rate above this multiple of the send rate is invalid (libwebrtc
/// `kMaxValidRatio`, 2).
pub const MAX_VALID_RATIO: f64 = 2.0;
/// Received below this share of the send rate: the probe found the capacity (libwebrtc
/// `kMinRatioForUnsaturatedLink`, 0.9) ...
pub const MIN_RATIO_FOR_UNSATURATED_LINK: f64 = 0.9;
/// ... and the estimate is this share of the receive rate (libwebrtc
/// `kTargetUtilizationFraction`, 0.95).
pub const TARGET_UTILIZATION: f64 = 0.95;
/// Clusters are forgotten this long after their last arrival (libwebrtc
/// `kMaxClusterHistory`, 1 s).
pub const MAX_CLUSTER_HISTORY: Duration = Duration::from_secs(1);

/// One probe cluster to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCluster {
    /// Its id (carried with each packet's feedback).
    pub id: u32,
    /// The rate to send it at.
    pub rate: Bitrate,
    /// At least this many packets ...
    pub min_packets: u32,
    /// ... and this many bytes.
    pub min_bytes: usize,
}

impl ProbeCluster {
    fn new(id: u32, rate: Bitrate) -> Self {
        ProbeCluster {
            id,
            rate,
            min_packets: MIN_PROBE_PACKETS,
            min_bytes: (rate.as_f64() * MIN_PROBE_DURATION.as_secs_f64() / 8.0).ceil() as usize,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Init,
    WaitingForResult,
    Complete,
}

/// When to probe.
#[derive(Debug)]
pub struct ProbeController {
    state: State,
    start: Bitrate,
    max: Bitrate,
    estimate: Option<Bitrate>,
    min_to_probe_further: Option<Bitrate>,
    last_probe_started: Option<Instant>,
    next_id: u32,
    periodic_alr: bool,
    alr_start: Option<Instant>,
    alr_end: Option<Instant>,
    last_large_drop: Option<(Instant, Bitrate)>,
    last_drop_probe: Option<Instant>,
}

impl ProbeController {
    /// A controller for a call starting at `start` with ceiling `max`; `periodic_alr`
    /// enables periodic probes while application-limited.
    pub fn new(start: Bitrate, max: Bitrate, periodic_alr: bool) -> Self {
        ProbeController {
            state: State::Init,
            start,
            max,
            estimate: None,
            min_to_probe_further: None,
            last_probe_started: None,
            next_id: 1,
            periodic_alr,
            alr_start: None,
            alr_end: None,
            last_large_drop: None,
            last_drop_probe: None,
        }
    }

    fn initiate(&mut self, now: Instant, rates: &[Bitrate], further: bool) -> Vec<ProbeCluster> {
        let mut further = further;
        let mut out = Vec::new();
        for &r in rates {
            let r = if r >= self.max {
                further = false;
                self.max
            } else {
                r
            };
            out.push(ProbeCluster::new(self.next_id, r));
            self.next_id += 1;
        }
        self.last_probe_started = Some(now);
        if further {
            self.state = State::WaitingForResult;
            self.min_to_probe_further = rates.last().map(|r| r.mul_f64(FURTHER_PROBE_THRESHOLD));
        } else {
            self.state = State::Complete;
            self.min_to_probe_further = None;
        }
        out
    }

    /// The initial (exponential) probes, once, at the start of the call.
    pub fn on_start(&mut self, now: Instant) -> Vec<ProbeCluster> {
        if self.state != State::Init {
            return Vec::new();
        }
        let rates = [
            self.start.mul_f64(FIRST_EXPONENTIAL_SCALE),
            self.start.mul_f64(SECOND_EXPONENTIAL_SCALE),
        ];
        self.initiate(now, &rates, true)
    }

    /// The estimate changed (libwebrtc `SetEstimatedBitrate`); may probe further.
    pub fn set_estimate(&mut self, now: Instant, estimate: Bitrate) -> Vec<ProbeCluster> {
        if let Some(prev) = self.estimate {
            if estimate < prev.mul_f64(DROP_THRESHOLD) {
                self.last_large_drop = Some((now, prev));
            }
        }
        self.estimate = Some(estimate);
        self.expire(now);
        if self.state == State::WaitingForResult
            && self.min_to_probe_further.is_some_and(|m| estimate > m)
        {
            return self.initiate(now, &[estimate.mul_f64(FURTHER_SCALE)], true);
        }
        Vec::new()
    }

    /// The ALR detector's state: `Some(start)` while application-limited.
    pub fn set_alr(&mut self, now: Instant, alr_start: Option<Instant>) {
        if self.alr_start.is_some() && alr_start.is_none() {
            self.alr_end = Some(now);
        }
        self.alr_start = alr_start;
    }

    /// The detector recovered from under-use (libwebrtc `RequestProbe`): probe back towards
    /// the rate before a recent large drop, under the conditions in the module doc.
    pub fn on_recovered_from_overuse(&mut self, now: Instant) -> Vec<ProbeCluster> {
        self.expire(now);
        let alr_recent = self.alr_start.is_some()
            || self
                .alr_end
                .is_some_and(|t| now.saturating_duration_since(t) < ALR_ENDED_TIMEOUT);
        if !alr_recent || self.state != State::Complete {
            return Vec::new();
        }
        let (Some((dropped_at, before)), Some(estimate)) = (self.last_large_drop, self.estimate)
        else {
            return Vec::new();
        };
        let suggested = before.mul_f64(FRACTION_AFTER_DROP);
        if suggested.mul_f64(1.0 - PROBE_UNCERTAINTY) > estimate
            && now.saturating_duration_since(dropped_at) < DROP_TIMEOUT
            && self
                .last_drop_probe
                .is_none_or(|t| now.saturating_duration_since(t) > MIN_TIME_BETWEEN_DROP_PROBES)
        {
            self.last_drop_probe = Some(now);
            return self.initiate(now, &[suggested], false);
        }
        Vec::new()
    }

    fn expire(&mut self, now: Instant) {
        if self.state == State::WaitingForResult
            && self
                .last_probe_started
                .is_some_and(|t| now.saturating_duration_since(t) > MAX_WAIT_FOR_RESULT)
        {
            self.state = State::Complete;
            self.min_to_probe_further = None;
        }
    }

    /// When the next periodic ALR probe is due, if any.
    pub fn next_alr_probe(&self) -> Option<Instant> {
        if !self.periodic_alr || self.state == State::Init {
            return None;
        }
        let alr = self.alr_start?;
        Some(self.last_probe_started.map_or(alr, |t| t.max(alr)) + ALR_PROBING_INTERVAL)
    }

    /// Time passed (libwebrtc `Process`): result timeouts and periodic ALR probes.
    pub fn process(&mut self, now: Instant) -> Vec<ProbeCluster> {
        self.expire(now);
        if self.state != State::Complete {
            return Vec::new();
        }
        match (self.next_alr_probe(), self.estimate) {
            (Some(due), Some(est)) if now >= due => {
                self.initiate(now, &[est.mul_f64(ALR_PROBE_SCALE)], true)
            }
            _ => Vec::new(),
        }
    }
}

/// What the feedback said about one probe packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbePacket {
    /// Its cluster.
    pub cluster: ProbeCluster,
    /// Send time.
    pub sent: Instant,
    /// Arrival time.
    pub arrival: Instant,
    /// Datagram size.
    pub size: usize,
}

#[derive(Debug, Clone, Copy)]
struct Aggregate {
    first_send: Instant,
    last_send: Instant,
    first_arrival: Instant,
    last_arrival: Instant,
    size_last_send: usize,
    size_first_arrival: usize,
    size: usize,
    packets: u32,
}

/// Per-cluster send and receive rates from transport feedback.
#[derive(Debug, Default)]
pub struct ProbeBitrateEstimator {
    clusters: BTreeMap<u32, Aggregate>,
    last: Option<Bitrate>,
}

impl ProbeBitrateEstimator {
    /// One received probe packet; returns the cluster's estimate once it has enough
    /// feedback (libwebrtc `HandleProbeAndEstimateBitrate`).
    pub fn on_packet(&mut self, p: ProbePacket) -> Option<Bitrate> {
        self.clusters.retain(|_, c| {
            p.arrival.saturating_duration_since(c.last_arrival) <= MAX_CLUSTER_HISTORY
        });
        let c = self.clusters.entry(p.cluster.id).or_insert(Aggregate {
            first_send: p.sent,
            last_send: p.sent,
            first_arrival: p.arrival,
            last_arrival: p.arrival,
            size_last_send: p.size,
            size_first_arrival: p.size,
            size: 0,
            packets: 0,
        });
        if p.sent < c.first_send {
            c.first_send = p.sent;
        }
        if p.sent > c.last_send {
            c.last_send = p.sent;
            c.size_last_send = p.size;
        }
        if p.arrival < c.first_arrival {
            c.first_arrival = p.arrival;
            c.size_first_arrival = p.size;
        }
        if p.arrival > c.last_arrival {
            c.last_arrival = p.arrival;
        }
        c.size += p.size;
        c.packets += 1;
        let min_packets = (f64::from(p.cluster.min_packets) * MIN_RECEIVED_RATIO) as u32;
        let min_bytes = p.cluster.min_bytes as f64 * MIN_RECEIVED_RATIO;
        if c.packets < min_packets || (c.size as f64) < min_bytes {
            return None;
        }
        let send = c.last_send - c.first_send;
        let recv = c.last_arrival - c.first_arrival;
        if send.is_zero()
            || send > MAX_PROBE_INTERVAL
            || recv.is_zero()
            || recv > MAX_PROBE_INTERVAL
        {
            return None;
        }
        // The send span excludes the last packet's own transmission, the receive span the
        // first packet's.
        let send_rate = (c.size - c.size_last_send) as f64 * 8.0 / send.as_secs_f64();
        let recv_rate = (c.size - c.size_first_arrival) as f64 * 8.0 / recv.as_secs_f64();
        if recv_rate / send_rate > MAX_VALID_RATIO {
            return None;
        }
        let mut res = send_rate.min(recv_rate);
        if recv_rate < MIN_RATIO_FOR_UNSATURATED_LINK * send_rate {
            res = TARGET_UTILIZATION * recv_rate;
        }
        let res = Bitrate::from_f64(res);
        self.last = Some(res);
        Some(res)
    }

    /// The latest estimate, once (libwebrtc `FetchAndResetLastEstimatedBitrate`).
    pub fn take(&mut self) -> Option<Bitrate> {
        self.last.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(kbps: u64) -> ProbeCluster {
        ProbeCluster::new(7, Bitrate::kbps(kbps))
    }

    /// Six 1000-byte packets sent every `send_ms`, arriving every `recv_ms`.
    fn feed(e: &mut ProbeBitrateEstimator, c: ProbeCluster, send_ms: u64, recv_ms: u64) {
        for i in 0..6 {
            e.on_packet(ProbePacket {
                cluster: c,
                sent: Instant::from_millis(1000 + i * send_ms),
                arrival: Instant::from_millis(1050 + i * recv_ms),
                size: 1000,
            });
        }
    }

    #[test]
    fn unsaturated_probe_reads_its_send_rate() {
        let mut e = ProbeBitrateEstimator::default();
        // 1000 bytes per 4 ms = 2 Mb/s, received at the same spacing.
        feed(&mut e, cluster(2000), 4, 4);
        assert_eq!(e.take(), Some(Bitrate::kbps(2000)));
        assert_eq!(e.take(), None, "fetched once");
    }

    #[test]
    fn saturated_probe_reads_95_percent_of_its_receive_rate() {
        let mut e = ProbeBitrateEstimator::default();
        // Sent at 2 Mb/s, received at 1 Mb/s (8 ms apart).
        feed(&mut e, cluster(2000), 4, 8);
        assert_eq!(e.take(), Some(Bitrate::kbps(950)));
    }

    #[test]
    fn too_few_packets_or_too_fast_arrivals_give_nothing() {
        let mut e = ProbeBitrateEstimator::default();
        let c = cluster(2000);
        for i in 0..3 {
            e.on_packet(ProbePacket {
                cluster: c,
                sent: Instant::from_millis(i * 4),
                arrival: Instant::from_millis(50 + i * 4),
                size: 1000,
            });
        }
        assert_eq!(e.take(), None, "3 of 5 packets");
        // Received 4x faster than sent: not a valid measurement.
        let mut e = ProbeBitrateEstimator::default();
        feed(&mut e, cluster(2000), 8, 2);
        assert_eq!(e.take(), None);
    }

    #[test]
    fn initial_probes_then_further_probing_capped_at_the_maximum() {
        let t = Instant::from_millis;
        let mut p = ProbeController::new(Bitrate::kbps(300), Bitrate::kbps(2500), false);
        let first = p.on_start(t(0));
        let rates: Vec<u64> = first.iter().map(|c| c.rate.as_kbps()).collect();
        assert_eq!(rates, vec![900, 1800]);
        assert_eq!(first[0].min_packets, 5);
        assert_eq!(first[0].min_bytes, 1688, "15 ms at 900 kb/s");
        assert!(p.on_start(t(10)).is_empty(), "only once");
        // An estimate under 0.7 x 1800 kb/s: no further probe.
        assert!(p.set_estimate(t(300), Bitrate::kbps(1200)).is_empty());
        // Above it: probe at 2x, capped at the maximum, and then no more.
        let further = p.set_estimate(t(400), Bitrate::kbps(1700));
        assert_eq!(further.len(), 1);
        assert_eq!(further[0].rate, Bitrate::kbps(2500));
        assert!(p.set_estimate(t(600), Bitrate::kbps(2400)).is_empty());
    }

    #[test]
    fn further_probing_stops_after_a_second_without_result() {
        let t = Instant::from_millis;
        let mut p = ProbeController::new(Bitrate::kbps(100), Bitrate::kbps(10_000), false);
        p.on_start(t(0));
        assert!(p.set_estimate(t(1500), Bitrate::kbps(500)).is_empty());
    }

    #[test]
    fn drop_probe_only_around_alr_and_periodic_alr_probes_when_enabled() {
        let t = Instant::from_millis;
        let mut p = ProbeController::new(Bitrate::kbps(300), Bitrate::kbps(2500), false);
        p.on_start(t(0));
        p.set_estimate(t(2000), Bitrate::kbps(1000));
        p.set_estimate(t(3000), Bitrate::kbps(500)); // large drop
        assert!(
            p.on_recovered_from_overuse(t(3500)).is_empty(),
            "not in ALR"
        );
        p.set_alr(t(3600), Some(t(3600)));
        let c = p.on_recovered_from_overuse(t(3700));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].rate, Bitrate::kbps(850));
        assert!(p.process(t(20_000)).is_empty(), "periodic ALR probing off");

        let mut p = ProbeController::new(Bitrate::kbps(300), Bitrate::kbps(2500), true);
        p.on_start(t(0));
        p.set_estimate(t(2000), Bitrate::kbps(600));
        p.set_alr(t(2000), Some(t(2000)));
        assert_eq!(p.next_alr_probe(), Some(t(7000)));
        assert!(p.process(t(6999)).is_empty());
        let c = p.process(t(7000));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].rate, Bitrate::kbps(1200));
    }
}
