//! Google Congestion Control, send-side (draft-ietf-rmcat-gcc-02 with libwebrtc's current
//! structure: `GoogCcNetworkController` = `DelayBasedBwe` (inter-arrival groups, trendline,
//! over-use detector, AIMD) + `SendSideBandwidthEstimation` (loss-based) + acknowledged-rate
//! estimation + `ProbeController` / `ProbeBitrateEstimator` + `AlrDetector`). One concept per
//! file: [`inter_arrival`], [`trendline`], [`aimd`], [`loss_based`], [`acked_bitrate`],
//! [`probe`], [`alr`].
//!
//! Per feedback report, as libwebrtc's `DelayBasedBwe::MaybeUpdateEstimate`: while the
//! detector says over-use, the AIMD cuts (again only after an RTT, see
//! [`aimd::AimdRateControl::time_to_reduce_further`]); otherwise a fresh probe result sets
//! the estimate outright (and the loss-based rate with it), else the AIMD steps.
//!
//! Not modelled: the congestion-window pushback field trial, `LossBasedBweV2`, network-state
//! estimates, and the probes libwebrtc sends when the application raises its maximum rate
//! (the maximum here is fixed).

pub mod acked_bitrate;
pub mod aimd;
pub mod alr;
pub mod inter_arrival;
pub mod loss_based;
pub mod probe;
pub mod trendline;

use salsify_codec::CbrConfig;
use salsify_endpoint::CbrSettings;
use salsify_time::{Duration, Instant};

use crate::error::ConfigError;
use crate::history::PacketResult;
use crate::rate::Bitrate;
use acked_bitrate::AckedBitrate;
use aimd::AimdRateControl;
use alr::AlrDetector;
use inter_arrival::InterArrival;
use loss_based::LossBased;
use probe::{ProbeBitrateEstimator, ProbeCluster, ProbeController, ProbePacket};
use trendline::{BandwidthUsage, Trendline};

/// The legacy conventional scheme's parameters (GCC, pacer, CBR encoder), as the
/// `[conventional_legacy]` table of an experiment file names them (durations in ms, rates in
/// kb/s; every field optional, unknown fields refused).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GccConfig {
    /// Start rate. Default 300 kb/s (libwebrtc's default start bitrate).
    #[serde(rename = "start_kbps", with = "crate::serde_units::kbps")]
    pub start: Bitrate,
    /// Floor. Default 30 kb/s (libwebrtc `kMinVideoBitrateBps`).
    #[serde(rename = "min_kbps", with = "crate::serde_units::kbps")]
    pub min: Bitrate,
    /// Ceiling. Default 2.5 Mb/s (libwebrtc's default maximum for a 720p VP8 stream).
    #[serde(rename = "max_kbps", with = "crate::serde_units::kbps")]
    pub max: Bitrate,
    /// Pacing rate = this x target (libwebrtc `kDefaultPaceMultiplier` 2.5).
    pub pacing_factor: f64,
    /// Drop a camera frame before encoding when the pacer holds more than this much time's
    /// worth of data at the target rate. Default 2 s (libwebrtc's pacer
    /// `kMaxExpectedQueueLength`: beyond it the pacer itself would speed up to drain).
    #[serde(rename = "max_pacer_queue_ms", with = "crate::serde_units::millis")]
    pub max_pacer_queue: Duration,
    /// How often the receiver sends transport feedback. Default 100 ms (libwebrtc
    /// `RemoteEstimatorProxy`'s default send interval).
    #[serde(rename = "feedback_interval_ms", with = "crate::serde_units::millis")]
    pub feedback_interval: Duration,
    /// Bandwidth probing ([`probe`]): initial exponential probes, further probes, probes
    /// after a drop around ALR. Default on, as in libwebrtc.
    pub probing: bool,
    /// Periodic probes while application-limited. Default off: libwebrtc enables them only
    /// for streams that ask (`requests_alr_probing`, screen share), not camera video.
    pub periodic_alr_probing: bool,
    /// libvpx's frame dropper threshold (percent of buffer; 0 never drops). Default 30,
    /// WebRTC's (libvpx's default, `CbrConfig::default`).
    pub dropframe_thresh: u32,
    /// Most frame intervals libvpx is told passed between two pictures (0: the real gap).
    /// Default 0, libvpx's default (`CbrConfig::default`).
    pub max_gap_frames: u32,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig {
            start: Bitrate::kbps(300),
            min: Bitrate::kbps(30),
            max: Bitrate::kbps(2500),
            pacing_factor: 2.5,
            max_pacer_queue: Duration::from_secs(2),
            feedback_interval: Duration::from_millis(100),
            probing: true,
            periodic_alr_probing: false,
            dropframe_thresh: CbrConfig::default().dropframe_thresh,
            max_gap_frames: CbrConfig::default().max_gap_frames,
        }
    }
}

impl GccConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.min.as_bps() == 0 {
            return Err(ConfigError::invalid("min_kbps", "must be above 0"));
        }
        if self.min > self.max {
            return Err(ConfigError::invalid(
                "min_kbps",
                format!("{} is above max_kbps {}", self.min, self.max),
            ));
        }
        if self.start > self.max {
            return Err(ConfigError::invalid(
                "start_kbps",
                format!("{} is above max_kbps {}", self.start, self.max),
            ));
        }
        if !(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0) {
            return Err(ConfigError::invalid(
                "pacing_factor",
                format!(
                    "{} is not a finite factor of at least 1",
                    self.pacing_factor
                ),
            ));
        }
        if self.feedback_interval.is_zero() {
            return Err(ConfigError::invalid(
                "feedback_interval_ms",
                "must be above 0",
            ));
        }
        if self.dropframe_thresh > 100 {
            return Err(ConfigError::invalid(
                "dropframe_thresh",
                format!("{} is not a percentage (0..=100)", self.dropframe_thresh),
            ));
        }
        Ok(())
    }

    /// The CBR encoder's settings.
    pub fn cbr_settings(&self) -> CbrSettings {
        CbrSettings {
            dropframe_thresh: self.dropframe_thresh,
            max_gap_frames: self.max_gap_frames,
        }
    }
}

/// The estimator: per-packet feedback in, target rate out.
#[derive(Debug)]
pub struct Gcc {
    inter_arrival: InterArrival,
    trendline: Trendline,
    aimd: AimdRateControl,
    loss: LossBased,
    acked: AckedBitrate,
    target: Bitrate,
    probing: bool,
    probes: ProbeController,
    probe_estimator: ProbeBitrateEstimator,
    alr: AlrDetector,
    pending_probes: Vec<ProbeCluster>,
    started: bool,
}

impl Gcc {
    /// A fresh estimator.
    pub fn new(config: &GccConfig) -> Self {
        Gcc {
            inter_arrival: InterArrival::default(),
            trendline: Trendline::default(),
            aimd: AimdRateControl::new(config.start, config.min, config.max),
            loss: LossBased::new(config.start, config.min, config.max),
            acked: AckedBitrate::default(),
            target: config.start,
            probing: config.probing,
            probes: ProbeController::new(config.start, config.max, config.periodic_alr_probing),
            probe_estimator: ProbeBitrateEstimator::default(),
            alr: {
                let mut a = AlrDetector::default();
                a.set_estimate(config.start);
                a
            },
            pending_probes: Vec::new(),
            started: false,
        }
    }

    /// Probe clusters to send now: the initial ones on the first call, then whatever
    /// feedback, ALR or the timers asked for since the last call.
    pub fn take_probes(&mut self, now: Instant) -> Vec<ProbeCluster> {
        if !self.probing {
            return Vec::new();
        }
        if !self.started {
            self.started = true;
            let initial = self.probes.on_start(now);
            self.pending_probes.extend(initial);
        }
        let due = self.probes.process(now);
        self.pending_probes.extend(due);
        std::mem::take(&mut self.pending_probes)
    }

    /// When [`Gcc::take_probes`] next has something to give without new input.
    pub fn next_probe_time(&self) -> Option<Instant> {
        if self.probing {
            self.probes.next_alr_probe()
        } else {
            None
        }
    }

    /// A datagram of `bytes` left at `now` (for ALR detection).
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        self.alr.on_sent(now, bytes);
        self.probes.set_alr(now, self.alr.started());
    }

    /// Whether the sender is application-limited.
    pub fn in_alr(&self) -> bool {
        self.alr.started().is_some()
    }

    /// The target rate: min(delay-based, loss-based).
    pub fn target(&self) -> Bitrate {
        self.target
    }
    /// The delay-based estimate.
    pub fn delay_based(&self) -> Bitrate {
        self.aimd.rate()
    }
    /// The detector's current verdict.
    pub fn usage(&self) -> BandwidthUsage {
        self.trendline.state()
    }
    /// The acknowledged rate.
    pub fn acked(&self) -> Option<Bitrate> {
        self.acked.estimate()
    }

    /// One feedback report (results in sequence order) at `now`, with the latest RTT.
    pub fn on_feedback(
        &mut self,
        now: Instant,
        results: &[PacketResult],
        rtt: Duration,
    ) -> Bitrate {
        self.on_feedback_with_probes(now, results, &[], rtt)
    }

    /// [`Gcc::on_feedback`] with the received probe packets among `results`.
    pub fn on_feedback_with_probes(
        &mut self,
        now: Instant,
        results: &[PacketResult],
        probes: &[ProbePacket],
        rtt: Duration,
    ) -> Bitrate {
        for &p in probes {
            self.probe_estimator.on_packet(p);
        }
        let mut received: Vec<&PacketResult> =
            results.iter().filter(|r| r.arrival.is_some()).collect();
        received.sort_by_key(|r| (r.arrival, r.seq));
        let lost = results.len() - received.len();
        let mut usage = self.trendline.state();
        let mut updated = false;
        let mut recovered_from_overuse = false;
        for r in received {
            let arrival = r.arrival.expect("filtered above");
            self.acked.update(arrival, r.size);
            if let Some(d) = self.inter_arrival.on_packet(r.sent, arrival, r.size) {
                let before = usage;
                usage = self
                    .trendline
                    .update(d.send_delta_ms, d.arrival_delta_ms, d.arrival);
                recovered_from_overuse |=
                    before == BandwidthUsage::Underusing && usage == BandwidthUsage::Normal;
                updated = true;
            }
        }
        self.aimd.set_rtt(rtt);
        let acked = self.acked.estimate();
        let mut probe = self.probe_estimator.take();
        if let (Some(p), Some(a)) = (probe, acked) {
            // libwebrtc (limit_probes_lower_than_throughput_estimate): a probe that read
            // low backs off no further than 0.85 x the acknowledged rate, and never raises
            // the estimate through that floor.
            let floor = self.aimd.rate().min(a.mul_f64(0.85));
            probe = Some(p.max(floor));
        }
        if usage == BandwidthUsage::Overusing {
            match acked {
                Some(a) if updated && self.aimd.time_to_reduce_further(now, a) => {
                    self.aimd.update(usage, acked, now);
                }
                // Over-use before any acknowledged rate: halve (libwebrtc
                // `InitialTimeToReduceFurther`).
                None if self
                    .aimd
                    .time_to_reduce_further(now, self.aimd.rate().mul_f64(0.5)) =>
                {
                    let half = self.aimd.rate().mul_f64(0.5);
                    self.aimd.set_estimate(half, now);
                }
                _ => {}
            }
        } else if let Some(p) = probe {
            self.aimd.set_estimate(p, now);
            self.loss.set_rate(self.aimd.rate());
        } else if updated {
            self.aimd.update(usage, acked, now);
        }
        self.loss.on_report(lost as u32, results.len() as u32);
        self.target = self.loss.update(now, self.aimd.rate(), rtt);
        self.alr.set_estimate(self.target);
        if self.probing {
            let further = self.probes.set_estimate(now, self.target);
            self.pending_probes.extend(further);
            if recovered_from_overuse {
                let back = self.probes.on_recovered_from_overuse(now);
                self.pending_probes.extend(back);
            }
        }
        self.target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feedback every 100 ms for packets of 1200 bytes sent every 10 ms (0.96 Mb/s), whose
    /// one-way delay grows by `growth_us` per packet. Returns the target after `reports`.
    fn run(
        gcc: &mut Gcc,
        start_ms: u64,
        reports: u64,
        growth_us: i64,
        base_delay: &mut i64,
    ) -> Bitrate {
        let mut seq = (start_ms / 10) as u32;
        let mut target = gcc.target();
        for r in 0..reports {
            let mut results = Vec::new();
            for _ in 0..10 {
                let sent = Instant::from_millis(u64::from(seq) * 10);
                *base_delay = (*base_delay + growth_us).max(20_000);
                results.push(PacketResult {
                    seq,
                    sent,
                    size: 1200,
                    arrival: Some(sent + Duration::from_micros(*base_delay as u64)),
                });
                seq += 1;
            }
            let now = Instant::from_millis(start_ms + (r + 1) * 100 + 30);
            target = gcc.on_feedback(now, &results, Duration::from_millis(50));
        }
        target
    }

    #[test]
    fn stable_delay_increases_growing_delay_decreases_draining_holds() {
        let mut gcc = Gcc::new(&GccConfig {
            start: Bitrate::kbps(1000),
            ..GccConfig::default()
        });
        let mut delay = 20_000;
        let up = run(&mut gcc, 0, 30, 0, &mut delay);
        assert!(up > Bitrate::kbps(1100), "normal -> increase: {up}");
        let down = run(&mut gcc, 3000, 10, 600, &mut delay);
        assert_eq!(gcc.usage(), BandwidthUsage::Overusing);
        assert!(down < up, "overuse -> decrease: {down} after {up}");
        let held = run(&mut gcc, 4000, 3, -800, &mut delay);
        assert_eq!(gcc.usage(), BandwidthUsage::Underusing);
        // (The first report or two may still read "normal" while the trend turns.)
        assert!(held < down.mul_f64(1.02), "{held} after {down}");
        let still = run(&mut gcc, 4300, 2, -800, &mut delay);
        assert_eq!(gcc.usage(), BandwidthUsage::Underusing);
        assert_eq!(still, held, "underuse -> hold");
    }
}
