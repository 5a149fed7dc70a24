//! Application-limited region detection (libwebrtc `AlrDetector` with its `IntervalBudget`).
//!
//! A budget fills at [`USAGE_RATIO`] x the estimate and every byte sent drains it; unused
//! budget may build up to [`WINDOW`]'s worth. The sender is application-limited (it sends
//! well below what the estimate allows, so feedback cannot tell whether more would fit) from
//! when the budget is over [`START_RATIO`] full until it falls under [`STOP_RATIO`].

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;

/// Share of the estimate the budget fills at (libwebrtc `bandwidth_usage_ratio`, 0.65).
pub const USAGE_RATIO: f64 = 0.65;
/// ALR starts when the budget is fuller than this (libwebrtc `start_budget_level_ratio`).
pub const START_RATIO: f64 = 0.80;
/// ALR ends when the budget is emptier than this (libwebrtc `stop_budget_level_ratio`).
pub const STOP_RATIO: f64 = 0.50;
/// The budget holds at most this much time at its rate (libwebrtc `IntervalBudget`'s
/// `kWindowMs`, 500 ms).
pub const WINDOW: Duration = Duration::from_millis(500);

/// The detector.
#[derive(Debug, Default)]
pub struct AlrDetector {
    rate: Bitrate,
    remaining: f64,
    last_send: Option<Instant>,
    started: Option<Instant>,
}

impl AlrDetector {
    fn max_bytes(&self) -> f64 {
        self.rate.as_f64() * WINDOW.as_secs_f64() / 8.0
    }

    /// A new estimate.
    pub fn set_estimate(&mut self, estimate: Bitrate) {
        self.rate = estimate.mul_f64(USAGE_RATIO);
        let max = self.max_bytes();
        self.remaining = self.remaining.clamp(-max, max);
    }

    /// `bytes` left at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        let Some(last) = self.last_send.replace(now) else {
            return;
        };
        let max = self.max_bytes();
        self.remaining = (self.remaining - bytes as f64).max(-max);
        let earned = self.rate.as_f64() * now.saturating_duration_since(last).as_secs_f64() / 8.0;
        // `can_build_up_underuse` is set for the ALR budget: unused budget accumulates.
        self.remaining = (self.remaining + earned).min(max);
        let ratio = if max > 0.0 { self.remaining / max } else { 0.0 };
        if ratio > START_RATIO && self.started.is_none() {
            self.started = Some(now);
        } else if ratio < STOP_RATIO {
            self.started = None;
        }
    }

    /// When the current application-limited region started, if the sender is in one.
    pub fn started(&self) -> Option<Instant> {
        self.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sending_far_below_the_estimate_is_alr_sending_at_it_is_not() {
        let mut a = AlrDetector::default();
        a.set_estimate(Bitrate::kbps(1000));
        // 1000 bytes per 40 ms = 200 kb/s, well under 0.65 x 1 Mb/s.
        for i in 0..50 {
            a.on_sent(Instant::from_millis(i * 40), 1000);
        }
        assert!(a.started().is_some());
        // 1000 bytes per 8 ms = 1 Mb/s.
        for i in 0..200 {
            a.on_sent(Instant::from_millis(2000 + i * 8), 1000);
        }
        assert!(a.started().is_none());
    }
}
