//! The loss-based controller (draft-ietf-rmcat-gcc section 6; libwebrtc's classic
//! `SendSideBandwidthEstimation`, not its newer experimental `LossBasedBweV2`).
//!
//! Loss is measured over reports covering at least [`MIN_PACKETS`] packets. Below
//! [`LOW_LOSS`] the rate may grow to 1.08 x the lowest rate of the last second (+1 kb/s);
//! between [`LOW_LOSS`] and [`HIGH_LOSS`] it holds; above, it is cut to `rate x (1 - loss/2)`
//! at most once per [`DECREASE_INTERVAL`] + RTT. The result is capped by the delay-based
//! estimate, so the target is the minimum of the two controllers.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;

/// Loss below this may increase (draft: 2 %).
pub const LOW_LOSS: f64 = 0.02;
/// Loss above this decreases (draft: 10 %).
pub const HIGH_LOSS: f64 = 0.10;
/// Packets a loss measurement needs (libwebrtc `kLimitNumPackets`).
pub const MIN_PACKETS: u32 = 20;
/// Window of the rate history the increase starts from (libwebrtc `kBweIncreaseInterval`).
pub const INCREASE_WINDOW: Duration = Duration::from_millis(1000);
/// Least time between decreases, plus the RTT (libwebrtc `kBweDecreaseInterval`).
pub const DECREASE_INTERVAL: Duration = Duration::from_millis(300);
/// Increase factor (draft: 1.08) and additive part (libwebrtc: 1 kb/s).
pub const INCREASE: (f64, Bitrate) = (1.08, Bitrate::bps(1000));

/// Loss-based controller.
#[derive(Debug)]
pub struct LossBased {
    rate: Bitrate,
    min: Bitrate,
    max: Bitrate,
    lost: u32,
    expected: u32,
    loss: f64,
    history: VecDeque<(Instant, Bitrate)>,
    last_decrease: Option<Instant>,
}

impl LossBased {
    /// Starts at `start`, within `min..=max`.
    pub fn new(start: Bitrate, min: Bitrate, max: Bitrate) -> Self {
        LossBased {
            rate: start.clamp_to(min, max),
            min,
            max,
            lost: 0,
            expected: 0,
            loss: 0.0,
            history: VecDeque::new(),
            last_decrease: None,
        }
    }

    /// The last loss fraction measured.
    pub fn loss(&self) -> f64 {
        self.loss
    }

    /// The current rate.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }

    /// Sets the rate outright and forgets the history the increase starts from, so the new
    /// rate is not capped by older, lower ones (libwebrtc `SetSendBitrate`, called with a
    /// probe's result).
    pub fn set_rate(&mut self, rate: Bitrate) {
        self.rate = rate.clamp_to(self.min, self.max);
        self.history.clear();
    }

    /// A feedback report: `lost` of `expected` packets were lost.
    pub fn on_report(&mut self, lost: u32, expected: u32) {
        self.lost += lost;
        self.expected += expected;
        if self.expected >= MIN_PACKETS {
            self.loss = f64::from(self.lost) / f64::from(self.expected);
            self.lost = 0;
            self.expected = 0;
        }
    }

    /// Updates the rate at `now`, capped by the delay-based estimate; returns it.
    pub fn update(&mut self, now: Instant, delay_based: Bitrate, rtt: Duration) -> Bitrate {
        while self
            .history
            .front()
            .is_some_and(|&(t, _)| now - t > INCREASE_WINDOW)
        {
            self.history.pop_front();
        }
        if self.loss < LOW_LOSS {
            let floor = self
                .history
                .iter()
                .map(|&(_, r)| r)
                .min()
                .unwrap_or(self.rate);
            self.rate = floor.mul_f64(INCREASE.0) + INCREASE.1;
        } else if self.loss > HIGH_LOSS
            && self
                .last_decrease
                .is_none_or(|t| now - t >= DECREASE_INTERVAL + rtt)
        {
            self.rate = self.rate.mul_f64(1.0 - self.loss / 2.0);
            self.last_decrease = Some(now);
        }
        self.rate = self.rate.min(delay_based).clamp_to(self.min, self.max);
        self.history.push_back((now, self.rate));
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_loss_cuts_low_loss_grows_medium_holds() {
        let cap = Bitrate::kbps(10_000);
        let rtt = Duration::from_millis(50);
        let mut l = LossBased::new(Bitrate::kbps(1000), Bitrate::kbps(30), cap);
        l.on_report(5, 25); // 20 %
        assert_eq!(
            l.update(Instant::from_millis(0), cap, rtt),
            Bitrate::kbps(900)
        );
        assert_eq!(
            l.update(Instant::from_millis(100), cap, rtt),
            Bitrate::kbps(900)
        );
        l.on_report(1, 20); // 5 %: hold
        assert_eq!(
            l.update(Instant::from_millis(500), cap, rtt),
            Bitrate::kbps(900)
        );
        l.on_report(0, 20);
        let up = l.update(Instant::from_millis(2000), cap, rtt);
        assert_eq!(up, Bitrate::kbps(973));
        // Never above the delay-based estimate.
        assert_eq!(
            l.update(Instant::from_millis(3000), Bitrate::kbps(500), rtt),
            Bitrate::kbps(500)
        );
    }
}
