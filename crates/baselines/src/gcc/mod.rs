//! Google Congestion Control, send-side (draft-ietf-rmcat-gcc-02 with libwebrtc's current
//! structure: `GoogCcNetworkController` = `DelayBasedBwe` (inter-arrival groups, trendline,
//! over-use detector, AIMD) + `SendSideBandwidthEstimation` (loss-based) + acknowledged-rate
//! estimation). One concept per file:
//! [`inter_arrival`], [`trendline`], [`aimd`], [`loss_based`], [`acked_bitrate`].
//!
//! Not modelled: probing (libwebrtc's `ProbeController` sends bursts at 3x and 6x the start
//! rate at the start of a call and when the configured maximum rises; a capacity that comes
//! back mid-call is found by the 8 %/s multiplicative increase as here), ALR detection, the
//! congestion-window pushback field trial, and `LossBasedBweV2`. So the start is slower than
//! libwebrtc's (about 16 s from 300 kb/s to 1 Mb/s instead of a probe's second or two).

pub mod acked_bitrate;
pub mod aimd;
pub mod inter_arrival;
pub mod loss_based;
pub mod trendline;

use salsify_time::{Duration, Instant};

use crate::history::PacketResult;
use crate::rate::Bitrate;
use acked_bitrate::AckedBitrate;
use aimd::AimdRateControl;
use inter_arrival::InterArrival;
use loss_based::LossBased;
use trendline::{BandwidthUsage, Trendline};

/// GCC's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GccConfig {
    /// Start rate. Default 300 kb/s (libwebrtc's default start bitrate).
    pub start: Bitrate,
    /// Floor. Default 30 kb/s (libwebrtc `kMinVideoBitrateBps`).
    pub min: Bitrate,
    /// Ceiling. Default 2.5 Mb/s (libwebrtc's default maximum for a 720p VP8 stream).
    pub max: Bitrate,
    /// Pacing rate = this x target (libwebrtc `kDefaultPaceMultiplier` 2.5).
    pub pacing_factor: f64,
    /// Drop a camera frame before encoding when the pacer holds more than this much time's
    /// worth of data at the target rate. Default 2 s (libwebrtc's pacer
    /// `kMaxExpectedQueueLength`: beyond it the pacer itself would speed up to drain).
    pub max_pacer_queue: Duration,
    /// How often the receiver sends transport feedback. Default 100 ms (libwebrtc
    /// `RemoteEstimatorProxy`'s default send interval).
    pub feedback_interval: Duration,
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
        }
    }
}

impl GccConfig {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.min.as_bps() == 0 || self.min > self.max || self.start > self.max {
            return Err(format!("rates {:?}", (self.min, self.start, self.max)));
        }
        if !(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0) {
            return Err(format!("pacing factor {}", self.pacing_factor));
        }
        if self.feedback_interval.is_zero() {
            return Err("feedback interval 0".into());
        }
        Ok(())
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
        }
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
        let mut received: Vec<&PacketResult> =
            results.iter().filter(|r| r.arrival.is_some()).collect();
        received.sort_by_key(|r| (r.arrival, r.seq));
        let lost = results.len() - received.len();
        let mut usage = self.trendline.state();
        let mut updated = false;
        for r in received {
            let arrival = r.arrival.expect("filtered above");
            self.acked.update(arrival, r.size);
            if let Some(d) = self.inter_arrival.on_packet(r.sent, arrival, r.size) {
                usage = self
                    .trendline
                    .update(d.send_delta_ms, d.arrival_delta_ms, d.arrival);
                updated = true;
            }
        }
        self.aimd.set_rtt(rtt);
        if updated {
            self.aimd.update(usage, self.acked.estimate(), now);
        }
        self.loss.on_report(lost as u32, results.len() as u32);
        self.target = self.loss.update(now, self.aimd.rate(), rtt);
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
