//! The delay-based rate controller (draft-ietf-rmcat-gcc section 5.5, libwebrtc's
//! `AimdRateControl` and `LinkCapacityEstimator`).
//!
//! A three-state machine driven by the over-use detector: normal -> increase (from hold),
//! over-use -> decrease, under-use -> hold (let the queue drain). Increase is multiplicative,
//! [`INCREASE_PER_SECOND`] per second, until a link capacity estimate exists (set at every
//! decrease from the acknowledged rate); near that capacity (within three standard deviations)
//! it becomes additive: about one average packet per response time (RTT + 100 ms). A
//! decrease sets the rate to [`BETA`] x the acknowledged rate. The rate never climbs above
//! 1.5 x the acknowledged rate + 10 kb/s, so an application-limited flow does not inflate it.

use salsify_time::{Duration, Instant};

use super::trendline::BandwidthUsage;
use crate::rate::Bitrate;

/// Multiplicative decrease factor (draft: beta = 0.85; libwebrtc `kDefaultBackoffFactor`).
pub const BETA: f64 = 0.85;
/// Multiplicative increase per second (draft: eta = 1.08).
pub const INCREASE_PER_SECOND: f64 = 1.08;
/// Smallest multiplicative step (libwebrtc: 1 kb/s).
pub const MIN_INCREASE: Bitrate = Bitrate::bps(1000);
/// Smallest additive increase rate (libwebrtc: 4 kb/s per second).
pub const MIN_ADDITIVE_PER_SECOND: f64 = 4000.0;
/// Added to the RTT to get the response time (libwebrtc: 100 ms).
pub const RESPONSE_TIME_EXTRA: Duration = Duration::from_millis(100);
/// Frame interval assumed for the average packet size (libwebrtc: 30 fps).
pub const FRAME_INTERVAL: Duration = Duration::from_micros(33_333);
/// Packet size assumed for splitting a frame (libwebrtc: 1200 bytes).
pub const PACKET_BYTES: f64 = 1200.0;
/// Smoothing of the link capacity estimate (libwebrtc: 0.05).
pub const CAPACITY_ALPHA: f64 = 0.05;
/// Subtracted from `BETA` x the acknowledged rate at a decrease, when that is above it
/// (libwebrtc `AimdRateControl::ChangeBitrate`: 5 kb/s, "slightly lower than the measured
/// throughput to get rid of any self-induced delay").
pub const DECREASE_MARGIN: Bitrate = Bitrate::kbps(5);
/// While the detector stays in over-use, the rate is cut again only after this long since the
/// last change, the RTT clamped to this range (libwebrtc `TimeToReduceFurther`: 10..200 ms),
/// or at once if the acknowledged rate fell below half the estimate.
pub const REDUCTION_INTERVAL: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_millis(200));

/// EWMA of the acknowledged rate at each over-use, with its deviation (kb/s).
#[derive(Debug, Default, Clone, Copy)]
pub struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation: f64,
}

impl LinkCapacity {
    fn spread(&self, est: f64) -> f64 {
        3.0 * (self.deviation * est).sqrt()
    }
    /// Upper bound (estimate + 3 deviations), if there is an estimate.
    pub fn upper(&self) -> Option<f64> {
        self.estimate_kbps.map(|e| e + self.spread(e))
    }
    /// Lower bound (estimate - 3 deviations), if there is an estimate.
    pub fn lower(&self) -> Option<f64> {
        self.estimate_kbps.map(|e| (e - self.spread(e)).max(0.0))
    }
    /// The estimate.
    pub fn estimate(&self) -> Option<Bitrate> {
        self.estimate_kbps.map(|k| Bitrate::from_f64(k * 1000.0))
    }
    fn on_overuse(&mut self, acked: Bitrate) {
        let sample = acked.as_f64() / 1000.0;
        let est = match self.estimate_kbps {
            None => sample,
            Some(e) => (1.0 - CAPACITY_ALPHA) * e + CAPACITY_ALPHA * sample,
        };
        let err = est - sample;
        self.deviation = ((1.0 - CAPACITY_ALPHA) * self.deviation
            + CAPACITY_ALPHA * err * err / est.max(1.0))
        .clamp(0.4, 2.5);
        self.estimate_kbps = Some(est);
    }
    fn reset(&mut self) {
        self.estimate_kbps = None;
    }
}

/// The controller's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateControlState {
    /// Keep the rate.
    Hold,
    /// Raise it.
    Increase,
    /// Lower it.
    Decrease,
}

/// AIMD rate controller.
#[derive(Debug)]
pub struct AimdRateControl {
    rate: Bitrate,
    min: Bitrate,
    max: Bitrate,
    state: RateControlState,
    capacity: LinkCapacity,
    /// libwebrtc's `time_last_bitrate_change_`: set by increases, decreases and
    /// `set_estimate`, and to the present when an increase starts after a hold.
    last_change: Option<Instant>,
    rtt: Duration,
}

impl AimdRateControl {
    /// Starts at `start`, kept within `min..=max`.
    pub fn new(start: Bitrate, min: Bitrate, max: Bitrate) -> Self {
        AimdRateControl {
            rate: start.clamp_to(min, max),
            min,
            max,
            state: RateControlState::Hold,
            capacity: LinkCapacity::default(),
            last_change: None,
            // libwebrtc's kDefaultRtt before the first measurement.
            rtt: Duration::from_millis(200),
        }
    }

    /// The current rate.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }
    /// The state.
    pub fn state(&self) -> RateControlState {
        self.state
    }
    /// The link capacity estimate.
    pub fn capacity(&self) -> LinkCapacity {
        self.capacity
    }
    /// A new round-trip time measurement.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt;
    }

    /// Sets the rate outright (libwebrtc `SetEstimate`: a probe result, or the halving
    /// before any acknowledged rate exists).
    pub fn set_estimate(&mut self, rate: Bitrate, now: Instant) {
        self.rate = rate.clamp_to(self.min, self.max);
        self.last_change = Some(now);
    }

    /// While over-using: whether enough time has passed since the last change (the RTT,
    /// within [`REDUCTION_INTERVAL`]) to cut again, or the acknowledged rate `acked` fell
    /// below half the estimate (libwebrtc `TimeToReduceFurther`).
    pub fn time_to_reduce_further(&self, now: Instant, acked: Bitrate) -> bool {
        let interval = self.rtt.clamp(REDUCTION_INTERVAL.0, REDUCTION_INTERVAL.1);
        if self
            .last_change
            .is_none_or(|t| now.saturating_duration_since(t) >= interval)
        {
            return true;
        }
        acked < self.rate.mul_f64(0.5)
    }

    /// One detector verdict with the acknowledged rate; returns the new rate.
    pub fn update(
        &mut self,
        usage: BandwidthUsage,
        acked: Option<Bitrate>,
        now: Instant,
    ) -> Bitrate {
        self.state = match (usage, self.state) {
            (BandwidthUsage::Normal, RateControlState::Hold) => {
                // libwebrtc ChangeState: the increase is timed from here, not from the hold.
                self.last_change = Some(now);
                RateControlState::Increase
            }
            (BandwidthUsage::Normal, s) => s,
            (BandwidthUsage::Overusing, _) => RateControlState::Decrease,
            (BandwidthUsage::Underusing, _) => RateControlState::Hold,
        };
        let since = self
            .last_change
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        let mut rate = self.rate;
        match self.state {
            RateControlState::Hold => {}
            RateControlState::Increase => {
                if let (Some(a), Some(upper)) = (acked, self.capacity.upper()) {
                    if a.as_f64() / 1000.0 > upper {
                        self.capacity.reset();
                    }
                }
                let limit = acked.map(|a| a.mul_f64(1.5) + Bitrate::kbps(10));
                if limit.is_none_or(|l| rate < l) {
                    let inc = if self.capacity.estimate().is_some() {
                        self.additive_increase(since)
                    } else {
                        self.multiplicative_increase(since)
                    };
                    rate = rate + inc;
                    if let Some(l) = limit {
                        rate = rate.min(l);
                    }
                }
                self.last_change = Some(now);
            }
            RateControlState::Decrease => {
                if let Some(a) = acked {
                    let mut lower = a.mul_f64(BETA);
                    if lower > DECREASE_MARGIN {
                        lower = Bitrate::bps(lower.as_bps() - DECREASE_MARGIN.as_bps());
                    }
                    if lower > rate {
                        if let Some(c) = self.capacity.estimate() {
                            lower = c.mul_f64(BETA);
                        }
                    }
                    if lower < rate {
                        rate = lower;
                    }
                    if self
                        .capacity
                        .lower()
                        .is_some_and(|l| a.as_f64() / 1000.0 < l)
                    {
                        self.capacity.reset();
                    }
                    self.capacity.on_overuse(a);
                } else {
                    rate = rate.mul_f64(BETA);
                }
                // A decrease happens once per over-use signal; then wait (draft: hold).
                self.state = RateControlState::Hold;
                self.last_change = Some(now);
            }
        }
        self.rate = rate.clamp_to(self.min, self.max);
        self.rate
    }

    fn multiplicative_increase(&self, since: Duration) -> Bitrate {
        let alpha = INCREASE_PER_SECOND.powf(since.as_secs_f64().min(1.0));
        self.rate.mul_f64(alpha - 1.0).max(MIN_INCREASE)
    }

    fn additive_increase(&self, since: Duration) -> Bitrate {
        let frame_bits = self.rate.as_f64() * FRAME_INTERVAL.as_secs_f64();
        let packets = (frame_bits / (8.0 * PACKET_BYTES)).ceil().max(1.0);
        let avg_packet_bits = frame_bits / packets;
        let response = (self.rtt + RESPONSE_TIME_EXTRA).as_secs_f64();
        let per_second = (avg_packet_bits / response).max(MIN_ADDITIVE_PER_SECOND);
        Bitrate::from_f64(per_second * since.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(c: &mut AimdRateControl, usage: BandwidthUsage, acked: u64, ms: u64) -> Bitrate {
        c.update(usage, Some(Bitrate::kbps(acked)), Instant::from_millis(ms))
    }

    #[test]
    fn overuse_decreases_underuse_holds_normal_increases() {
        let mut c =
            AimdRateControl::new(Bitrate::kbps(1000), Bitrate::kbps(30), Bitrate::kbps(5000));
        step(&mut c, BandwidthUsage::Normal, 1000, 0);
        let up = step(&mut c, BandwidthUsage::Normal, 1000, 1000);
        assert!(
            up > Bitrate::kbps(1070) && up <= Bitrate::kbps(1082),
            "{up}"
        );
        let down = step(&mut c, BandwidthUsage::Overusing, 900, 1100);
        assert_eq!(
            down,
            Bitrate::kbps(760),
            "0.85 x the acknowledged rate - 5 kb/s"
        );
        let held = step(&mut c, BandwidthUsage::Underusing, 700, 1200);
        assert_eq!(held, down);
        let held = step(&mut c, BandwidthUsage::Underusing, 700, 1300);
        assert_eq!(held, down);
        // Normal again: increase, now additive near the capacity estimate (900 kb/s).
        step(&mut c, BandwidthUsage::Normal, 760, 1400);
        let after = step(&mut c, BandwidthUsage::Normal, 760, 2400);
        assert!(after > down, "increases");
        assert!(
            after < down.mul_f64(1.05),
            "additively, slower than 8 %/s: {after}"
        );
    }

    #[test]
    fn never_above_one_and_a_half_times_the_acknowledged_rate() {
        let mut c =
            AimdRateControl::new(Bitrate::kbps(100), Bitrate::kbps(30), Bitrate::kbps(5000));
        for i in 0..100 {
            step(&mut c, BandwidthUsage::Normal, 100, i * 1000);
        }
        assert_eq!(c.rate(), Bitrate::kbps(160));
        // Already above the cap (acknowledged rate fell): held, not cut.
        step(&mut c, BandwidthUsage::Normal, 50, 101_000);
        assert_eq!(c.rate(), Bitrate::kbps(160));
    }
}
