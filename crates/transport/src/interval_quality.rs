//! The "conventional transport + codec" ablation's rate control: like WebRTC, the sender
//! averages the link rate and updates one encoder quality once per interval, instead of
//! choosing per frame after encoding.

use salsify_codec::Quality;
use salsify_time::{Duration, Instant};

/// Quantizer steps that roughly double or halve a VP8 frame's size.
const STEPS_PER_DOUBLING: f64 = 12.0;
/// Aim below the measured rate so the bottleneck queue drains between updates.
const TARGET_UTILISATION: f64 = 0.9;
/// Weight of the newest rate sample in the averaged rate (the original used 0.8).
const RATE_WEIGHT: f64 = 0.8;
/// Largest quality change in one update.
const MAX_STEP: f64 = 32.0;

/// A quality updated once per interval from the averaged rate and the frame sizes seen.
#[derive(Debug, Clone)]
pub(crate) struct IntervalQualityController {
    interval: Duration,
    next_update: Option<Instant>,
    quality: Quality,
    rate_bytes_per_sec: Option<f64>,
    last_capture: Option<Instant>,
    frame_interval_secs: Option<f64>,
    bytes_sent: usize,
    frames_sent: usize,
}

impl IntervalQualityController {
    pub(crate) fn new(interval: Duration, start: Quality) -> Self {
        IntervalQualityController {
            interval,
            next_update: None,
            quality: start,
            rate_bytes_per_sec: None,
            last_capture: None,
            frame_interval_secs: None,
            bytes_sent: 0,
            frames_sent: 0,
        }
    }

    /// Tracks the camera's frame interval (EWMA, so a skipped capture barely matters).
    pub(crate) fn on_picture(&mut self, captured: Instant) {
        if let Some(last) = self.last_capture {
            let dt = captured.saturating_duration_since(last).as_secs_f64();
            if dt > 0.0 {
                let prev = self.frame_interval_secs.unwrap_or(dt);
                self.frame_interval_secs = Some(0.9 * prev + 0.1 * dt);
            }
        }
        self.last_capture = Some(captured);
    }

    pub(crate) fn on_sent(&mut self, bytes: usize) {
        self.bytes_sent += bytes;
        self.frames_sent += 1;
    }

    /// The quality to encode at now, updating it if an interval has passed.
    /// `fragment_rate` is (payload bytes, mean inter-arrival) from the latest ACK.
    pub(crate) fn quality(
        &mut self,
        now: Instant,
        fragment_rate: Option<(usize, Duration)>,
        lo: Quality,
        hi: Quality,
    ) -> Quality {
        let due = *self.next_update.get_or_insert(now + self.interval);
        if now >= due {
            self.update(fragment_rate, lo, hi);
            self.next_update = Some(now + self.interval);
        }
        self.quality
    }

    fn update(&mut self, fragment_rate: Option<(usize, Duration)>, lo: Quality, hi: Quality) {
        let (Some((payload, tau)), Some(frame_secs)) = (fragment_rate, self.frame_interval_secs)
        else {
            return;
        };
        let rate = payload as f64 / tau.as_secs_f64().max(1e-6);
        let avg = self
            .rate_bytes_per_sec
            .map_or(rate, |a| RATE_WEIGHT * rate + (1.0 - RATE_WEIGHT) * a);
        self.rate_bytes_per_sec = Some(avg);
        if self.frames_sent > 0 {
            let target = (TARGET_UTILISATION * avg * frame_secs).max(1.0);
            let observed = (self.bytes_sent as f64 / self.frames_sent as f64).max(1.0);
            let step = (STEPS_PER_DOUBLING * (observed / target).log2()).clamp(-MAX_STEP, MAX_STEP);
            let index = i32::from(self.quality.index()) + step.round() as i32;
            self.quality = Quality::clamped(index, lo, hi);
        }
        self.bytes_sent = 0;
        self.frames_sent = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_moves_once_per_interval_toward_the_rate() {
        let q = |i| Quality::new(i).unwrap();
        let mut c = IntervalQualityController::new(Duration::from_secs(1), q(64));
        let rate = Some((1000, Duration::from_millis(1))); // 1 MB/s
        for i in 0..30u64 {
            c.on_picture(Instant::from_millis(i * 33));
        }
        assert_eq!(c.quality(Instant::ZERO, rate, q(3), q(127)), q(64));
        c.on_sent(100_000); // far above the ~30 kB per frame the link carries
        assert_eq!(
            c.quality(Instant::from_millis(500), rate, q(3), q(127)),
            q(64)
        );
        let coarser = c.quality(Instant::from_millis(1000), rate, q(3), q(127));
        assert!(coarser > q(64), "{coarser}");
        c.on_sent(1_000);
        assert_eq!(
            c.quality(Instant::from_millis(1500), rate, q(3), q(127)),
            coarser
        );
        assert!(c.quality(Instant::from_millis(2000), rate, q(3), q(127)) < coarser);
    }
}
