//! The acknowledged (delivered) bit rate, as libwebrtc's `BitrateEstimator` computes it: bytes
//! acknowledged over windows of [`INITIAL_WINDOW`] (first estimate) then [`WINDOW`], each
//! window's rate fused into the estimate by a scalar Bayesian update whose sample variance
//! grows with the sample's distance from the estimate (so outliers move it little).

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;

/// First window (libwebrtc `kInitialRateWindowMs`, 500 ms).
pub const INITIAL_WINDOW: Duration = Duration::from_millis(500);
/// Later windows (libwebrtc `kRateWindowMs`, 150 ms).
pub const WINDOW: Duration = Duration::from_millis(150);
/// Scale of a sample's uncertainty (libwebrtc's `uncertainty_scale`, 10).
pub const UNCERTAINTY_SCALE: f64 = 10.0;
/// Variance added per update (libwebrtc's process noise, 5 (kb/s)^2).
pub const PROCESS_NOISE: f64 = 5.0;

/// Acknowledged-rate estimator.
#[derive(Debug, Default)]
pub struct AckedBitrate {
    window_start: Option<Instant>,
    window_bytes: u64,
    estimate_kbps: Option<f64>,
    variance: f64,
}

impl AckedBitrate {
    /// `bytes` acknowledged as arriving at `at` (arrival order).
    pub fn update(&mut self, at: Instant, bytes: usize) {
        let start = *self.window_start.get_or_insert(at);
        let window = if self.estimate_kbps.is_some() {
            WINDOW
        } else {
            INITIAL_WINDOW
        };
        if at < start {
            return;
        }
        if at - start >= window {
            let sample = self.window_bytes as f64 * 8.0 / window.as_secs_f64() / 1000.0;
            self.fuse(sample);
            self.window_bytes = 0;
            // Windows tile time; an idle gap longer than a window restarts at `at`.
            let next = start + window;
            self.window_start = Some(if at - next >= window { at } else { next });
        }
        self.window_bytes += bytes as u64;
    }

    fn fuse(&mut self, sample: f64) {
        let Some(est) = self.estimate_kbps else {
            self.estimate_kbps = Some(sample);
            self.variance = 50.0;
            return;
        };
        let uncertainty = UNCERTAINTY_SCALE * (est - sample).abs() / est.max(1.0);
        let sample_var = uncertainty * uncertainty;
        let pred_var = self.variance + PROCESS_NOISE;
        let denom = (sample_var + pred_var).max(f64::MIN_POSITIVE);
        self.estimate_kbps = Some((sample_var * est + pred_var * sample) / denom);
        self.variance = sample_var * pred_var / denom;
    }

    /// The estimate, once one window has passed.
    pub fn estimate(&self) -> Option<Bitrate> {
        self.estimate_kbps.map(|k| Bitrate::from_f64(k * 1000.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_to_the_delivered_rate() {
        let mut a = AckedBitrate::default();
        // 1000 bytes every 10 ms = 800 kb/s for 3 s.
        for i in 0..300 {
            a.update(Instant::from_millis(i * 10), 1000);
        }
        let kbps = a.estimate().unwrap().as_kbps();
        assert!((760..=840).contains(&kbps), "{kbps}");
    }
}
