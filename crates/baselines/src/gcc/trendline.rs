//! The delay-gradient estimate and the over-use detector with its adaptive threshold
//! (draft-ietf-rmcat-gcc sections 5.3-5.4 as libwebrtc implements them today:
//! `TrendlineEstimator`, which replaced the draft's Kalman filter).
//!
//! Each group delta adds `arrival_delta - send_delta` to an accumulated delay, which is
//! smoothed (exponential, [`SMOOTHING`]) and kept with its arrival time in a window of
//! [`WINDOW`] points; the least-squares slope of that window is the trend: how fast queueing
//! delay grows. The detector compares `min(n, 60) x trend x` [`THRESHOLD_GAIN`] with an
//! adaptive threshold `gamma`: over it for more than [`OVERUSE_TIME`] (and two deltas in a
//! row, trend not falling) is over-use; below `-gamma` is under-use; else normal. `gamma`
//! follows the modified trend, up at [`K_UP`] and down at [`K_DOWN`] per ms, within
//! [6, 600] ms, so that a competing loss-based flow cannot starve GCC.

use salsify_time::{Duration, Instant};

/// Points in the regression window (libwebrtc `kDefaultTrendlineWindowSize`).
pub const WINDOW: usize = 20;
/// Smoothing of the accumulated delay (libwebrtc `kDefaultTrendlineSmoothingCoeff`).
pub const SMOOTHING: f64 = 0.9;
/// Gain on the trend before comparing with the threshold (libwebrtc
/// `kDefaultTrendlineThresholdGain`).
pub const THRESHOLD_GAIN: f64 = 4.0;
/// Cap on the number of deltas multiplying the trend (libwebrtc `kMinNumDeltas`).
pub const MAX_DELTAS: f64 = 60.0;
/// Time over the threshold before declaring over-use (draft: overuse_time_th = 10 ms).
pub const OVERUSE_TIME: f64 = 10.0;
/// Threshold adaptation gains (draft: K_u = 0.01, K_d = 0.00018; libwebrtc's trendline
/// values 0.0087 and 0.039, used here).
pub const K_UP: f64 = 0.0087;
/// See [`K_UP`].
pub const K_DOWN: f64 = 0.039;
/// Initial threshold in ms (draft: del_var_th starts at 12.5 ms).
pub const INITIAL_THRESHOLD: f64 = 12.5;
/// Threshold range in ms (draft: clamped to [6, 600]).
pub const THRESHOLD_RANGE: (f64, f64) = (6.0, 600.0);
/// Samples further than this above the threshold do not move it (libwebrtc
/// `kMaxAdaptOffsetMs`, 15 ms): a sudden spike must not raise it.
pub const MAX_ADAPT_OFFSET: f64 = 15.0;
/// Longest time step used to adapt the threshold (draft and libwebrtc: 100 ms).
pub const MAX_ADAPT_STEP: Duration = Duration::from_millis(100);

/// The detector's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BandwidthUsage {
    /// Delay is stable.
    #[default]
    Normal,
    /// Delay is growing: the send rate exceeds the path's capacity.
    Overusing,
    /// Delay is shrinking: a queue is draining.
    Underusing,
}

/// Trendline filter plus over-use detector.
#[derive(Debug)]
pub struct Trendline {
    first_arrival: Option<Instant>,
    accumulated: f64,
    smoothed: f64,
    window: std::collections::VecDeque<(f64, f64)>,
    deltas: u32,
    prev_trend: f64,
    threshold: f64,
    last_threshold_update: Option<Instant>,
    time_over_using: f64,
    overuse_count: u32,
    state: BandwidthUsage,
    /// The latest modified trend (for logs and tests).
    pub modified_trend: f64,
}

impl Default for Trendline {
    fn default() -> Self {
        Trendline {
            first_arrival: None,
            accumulated: 0.0,
            smoothed: 0.0,
            window: Default::default(),
            deltas: 0,
            prev_trend: 0.0,
            threshold: INITIAL_THRESHOLD,
            last_threshold_update: None,
            time_over_using: -1.0,
            overuse_count: 0,
            state: BandwidthUsage::Normal,
            modified_trend: 0.0,
        }
    }
}

impl Trendline {
    /// The current verdict.
    pub fn state(&self) -> BandwidthUsage {
        self.state
    }

    /// The adaptive threshold in ms.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// One group delta; returns the verdict.
    pub fn update(
        &mut self,
        send_delta_ms: f64,
        arrival_delta_ms: f64,
        arrival: Instant,
    ) -> BandwidthUsage {
        self.deltas = self.deltas.saturating_add(1);
        let first = *self.first_arrival.get_or_insert(arrival);
        self.accumulated += arrival_delta_ms - send_delta_ms;
        self.smoothed = SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * self.accumulated;
        let x = (arrival - first).as_secs_f64() * 1000.0;
        self.window.push_back((x, self.smoothed));
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        let trend = if self.window.len() == WINDOW {
            slope(&self.window).unwrap_or(self.prev_trend)
        } else {
            self.prev_trend
        };
        self.detect(trend, send_delta_ms, arrival);
        self.state
    }

    fn detect(&mut self, trend: f64, ts_delta_ms: f64, now: Instant) {
        if self.deltas < 2 {
            return;
        }
        let modified = f64::from(self.deltas).min(MAX_DELTAS) * trend * THRESHOLD_GAIN;
        self.modified_trend = modified;
        if modified > self.threshold {
            if self.time_over_using < 0.0 {
                // First sample over: assume it has been over for half the interval.
                self.time_over_using = ts_delta_ms / 2.0;
            } else {
                self.time_over_using += ts_delta_ms;
            }
            self.overuse_count += 1;
            if self.time_over_using > OVERUSE_TIME
                && self.overuse_count > 1
                && trend >= self.prev_trend
            {
                self.time_over_using = 0.0;
                self.overuse_count = 0;
                self.state = BandwidthUsage::Overusing;
            }
        } else if modified < -self.threshold {
            self.time_over_using = -1.0;
            self.overuse_count = 0;
            self.state = BandwidthUsage::Underusing;
        } else {
            self.time_over_using = -1.0;
            self.overuse_count = 0;
            self.state = BandwidthUsage::Normal;
        }
        self.prev_trend = trend;
        self.adapt_threshold(modified, now);
    }

    fn adapt_threshold(&mut self, modified: f64, now: Instant) {
        let last = *self.last_threshold_update.get_or_insert(now);
        if modified.abs() > self.threshold + MAX_ADAPT_OFFSET {
            self.last_threshold_update = Some(now);
            return;
        }
        let k = if modified.abs() < self.threshold {
            K_DOWN
        } else {
            K_UP
        };
        let step_ms = (now - last).min(MAX_ADAPT_STEP).as_secs_f64() * 1000.0;
        self.threshold += k * (modified.abs() - self.threshold) * step_ms;
        self.threshold = self.threshold.clamp(THRESHOLD_RANGE.0, THRESHOLD_RANGE.1);
        self.last_threshold_update = Some(now);
    }
}

/// Least-squares slope of (x, y) points; `None` if all x are equal.
fn slope(points: &std::collections::VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(num, den), &(x, y)| {
        (num + (x - mx) * (y - my), den + (x - mx) * (x - mx))
    });
    (den != 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds groups 20 ms apart whose arrival spacing exceeds the send spacing by `extra` ms.
    fn run(t: &mut Trendline, start: u64, n: u64, extra: f64) -> BandwidthUsage {
        let mut arrival = start as f64;
        let mut verdict = BandwidthUsage::Normal;
        for _ in 0..n {
            arrival += 20.0 + extra;
            verdict = t.update(
                20.0,
                20.0 + extra,
                Instant::from_micros((arrival * 1000.0) as u64),
            );
        }
        verdict
    }

    #[test]
    fn growing_delay_is_overuse_shrinking_is_underuse_flat_is_normal() {
        let mut t = Trendline::default();
        assert_eq!(run(&mut t, 0, 40, 0.0), BandwidthUsage::Normal);
        assert_eq!(run(&mut t, 800, 30, 2.0), BandwidthUsage::Overusing);
        assert_eq!(run(&mut t, 2000, 30, -2.0), BandwidthUsage::Underusing);
        assert_eq!(run(&mut t, 3000, 60, 0.0), BandwidthUsage::Normal);
    }

    #[test]
    fn threshold_stays_in_range() {
        let mut t = Trendline::default();
        run(&mut t, 0, 500, 0.0);
        assert!((THRESHOLD_RANGE.0..=THRESHOLD_RANGE.1).contains(&t.threshold()));
        assert!(t.threshold() < INITIAL_THRESHOLD, "flat delay lowers it");
    }
}
