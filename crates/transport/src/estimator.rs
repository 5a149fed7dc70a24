//! The receiver's estimate of the link: an EWMA of packet inter-arrival times.
//!
//! `tau_i = alpha (T_i - T_{i-1} - grace_i) + (1 - alpha) tau_{i-1}`, each sample clamped at
//! zero. The grace period is the time the sender sat idle before the packet, so pauses between
//! frames are not mistaken for a slow link. Unlike the original (which started at 0 and so
//! claimed an infinitely fast link for its first packets), the first sample seeds the mean.

use salsify_time::{Duration, Instant};

/// EWMA of inter-arrival times, grace subtracted.
#[derive(Debug, Clone)]
pub struct InterArrivalEstimator {
    alpha: f64,
    last_arrival: Option<Instant>,
    mean_micros: Option<f64>,
}

impl InterArrivalEstimator {
    /// An estimator weighting new samples by `alpha`.
    pub fn new(alpha: f64) -> Self {
        InterArrivalEstimator {
            alpha,
            last_arrival: None,
            mean_micros: None,
        }
    }

    /// Records a packet arriving at `now` that the sender sent after idling for `grace`.
    pub fn on_arrival(&mut self, now: Instant, grace: Duration) {
        if let Some(last) = self.last_arrival {
            let sample = now.saturating_duration_since(last).saturating_sub(grace);
            let sample = sample.as_secs_f64() * 1e6;
            self.mean_micros = Some(match self.mean_micros {
                None => sample,
                Some(mean) => self.alpha * sample + (1.0 - self.alpha) * mean,
            });
        }
        self.last_arrival = Some(self.last_arrival.map_or(now, |l| l.max(now)));
    }

    /// Records a packet arriving at `now` whose predecessor on the wire never arrived (or
    /// arrived out of order): the gap since the last arrival spans the time the missing
    /// packets took, or an outage, so it says nothing about the link's rate. Only the arrival
    /// time is kept, as the base for the next sample.
    pub fn on_arrival_after_gap(&mut self, now: Instant) {
        self.last_arrival = Some(self.last_arrival.map_or(now, |l| l.max(now)));
    }

    /// The mean inter-arrival time, once there has been a sample.
    pub fn mean(&self) -> Option<Duration> {
        self.mean_micros
            .map(|us| Duration::from_micros(us.round().max(0.0) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewma_subtracts_grace_and_never_goes_negative() {
        let mut e = InterArrivalEstimator::new(0.1);
        let t = Instant::from_millis(10);
        e.on_arrival(t, Duration::ZERO);
        assert_eq!(e.mean(), None);
        e.on_arrival(t + Duration::from_micros(1000), Duration::ZERO);
        assert_eq!(e.mean(), Some(Duration::from_micros(1000)));
        // 30 ms gap, 29.5 ms of it the sender's idle time: sample 500 µs.
        e.on_arrival(
            t + Duration::from_micros(31_000),
            Duration::from_micros(29_500),
        );
        assert_eq!(e.mean(), Some(Duration::from_micros(950)));
        // Grace larger than the gap: sample clamps to 0.
        e.on_arrival(t + Duration::from_micros(32_000), Duration::from_secs(1));
        assert_eq!(e.mean(), Some(Duration::from_micros(855)));
        // A packet "from the past" (clock jitter) counts as a zero sample, not a panic.
        e.on_arrival(t, Duration::ZERO);
        assert_eq!(e.mean(), Some(Duration::from_micros(770)));
        // A one-second hole (an outage) is not a sample; the next gap is.
        e.on_arrival_after_gap(t + Duration::from_secs(1));
        assert_eq!(e.mean(), Some(Duration::from_micros(770)));
        e.on_arrival(t + Duration::from_micros(1_001_000), Duration::ZERO);
        assert_eq!(e.mean(), Some(Duration::from_micros(793)));
    }
}
