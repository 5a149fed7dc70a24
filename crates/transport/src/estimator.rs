//! The receiver's estimate of the link: an EWMA of packet inter-arrival times.
//!
//! `tau_i = alpha (T_i - T_{i-1} - grace_i) + (1 - alpha) tau_{i-1}`, each sample clamped at
//! zero. The grace period is the time the sender sat idle before the packet, so pauses between
//! frames are not mistaken for a slow link. Unlike the original (which started at 0 and so
//! claimed an infinitely fast link for its first packets), the first sample seeds the mean.

//!
//! With [`InterArrivalEstimator::size_aware`] (this project's default; the paper's scheme
//! keeps the plain mean) the estimate is per *full-size* datagram: an EWMA of the sizes runs
//! beside the EWMA of the gaps, and `tau = mean gap x largest size / mean size`. The budget
//! counts whole fragments (`MTU x d / tau`), but a frame's last fragment is usually short and
//! crosses a byte-rate link in a fraction of a full one's time; a plain per-packet mean
//! then overstates the link by up to 2x for two-fragment frames. With full-size datagrams
//! only, both estimates are the same.

use salsify_time::{Duration, Instant};

/// EWMA of inter-arrival times, grace subtracted.
#[derive(Debug, Clone)]
pub struct InterArrivalEstimator {
    alpha: f64,
    last_arrival: Option<Instant>,
    mean_micros: Option<f64>,
    /// EWMA of datagram sizes (bytes) and the largest seen, when size-aware.
    sizes: Option<SizeMean>,
}

/// The size side of a size-aware estimate.
#[derive(Debug, Clone, Copy, Default)]
struct SizeMean {
    mean: Option<f64>,
    largest: usize,
}

impl InterArrivalEstimator {
    /// An estimator weighting new samples by `alpha`.
    pub fn new(alpha: f64) -> Self {
        InterArrivalEstimator {
            alpha,
            last_arrival: None,
            mean_micros: None,
            sizes: None,
        }
    }

    /// An estimator per full-size datagram (see the module docs).
    pub fn size_aware(alpha: f64) -> Self {
        InterArrivalEstimator {
            sizes: Some(SizeMean::default()),
            ..Self::new(alpha)
        }
    }

    /// [`Self::on_arrival`] for a datagram of `size` bytes.
    pub fn on_sized_arrival(&mut self, now: Instant, grace: Duration, size: usize) {
        let sampled = self.last_arrival.is_some();
        self.on_arrival(now, grace);
        if let (Some(sizes), true) = (self.sizes.as_mut(), sampled) {
            let size = size as f64;
            sizes.mean = Some(match sizes.mean {
                None => size,
                Some(mean) => self.alpha * size + (1.0 - self.alpha) * mean,
            });
        }
        if let Some(sizes) = self.sizes.as_mut() {
            sizes.largest = sizes.largest.max(size);
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

    /// The mean inter-arrival time (per full-size datagram when size-aware), once there has
    /// been a sample.
    pub fn mean(&self) -> Option<Duration> {
        let scale = match self.sizes {
            Some(SizeMean {
                mean: Some(mean),
                largest,
            }) if mean > 0.0 => largest as f64 / mean,
            _ => 1.0,
        };
        self.mean_micros
            .map(|us| Duration::from_micros((us * scale).round().max(0.0) as u64))
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

    #[test]
    fn size_aware_mean_counts_full_size_datagrams() {
        let t = Instant::from_millis(10);
        let us = Duration::from_micros;
        // Full 1400-byte datagrams 1 ms apart: the same as the plain mean.
        let mut e = InterArrivalEstimator::size_aware(0.1);
        for i in 0..50 {
            e.on_sized_arrival(t + us(1000 * i), Duration::ZERO, 1400);
        }
        assert_eq!(e.mean(), Some(us(1000)));
        // A byte-rate link, frames of one full and one 140-byte fragment: 1 ms then 0.1 ms.
        let (mut sized, mut plain) = (
            InterArrivalEstimator::size_aware(0.1),
            InterArrivalEstimator::new(0.1),
        );
        let mut at = t;
        for i in 0..200 {
            let (gap, size) = if i % 2 == 0 { (1000, 1400) } else { (100, 140) };
            at += us(gap);
            sized.on_sized_arrival(at, Duration::ZERO, size);
            plain.on_arrival(at, Duration::ZERO);
        }
        let per_full = sized.mean().unwrap().as_micros();
        assert!(
            (980..=1020).contains(&per_full),
            "{per_full} µs per full datagram"
        );
        assert!(
            plain.mean().unwrap().as_micros() < 600,
            "the plain mean halves it"
        );
    }
}
