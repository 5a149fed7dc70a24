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
//!
//! With [`InterArrivalEstimator::windowed`] the mean is taken over the samples of the last
//! `window` of arrival time instead (sum of grace-corrected gaps over sum of sizes): a
//! per-packet EWMA with alpha 0.1 remembers about ten packets, which on a cellular link that
//! delivers in clumps of several packets per millisecond spans a few milliseconds of one
//! scheduling burst, and the budget, linear in `1 / tau`, overshoots on every short clump.
//! A window of time weighs a slow stretch by how long it lasted, not by how few packets it
//! carried. (`results/causal-frontier`: an idealised sender that knew the link's exact past
//! did best with 100-300 ms of it.)

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::base_rtt::WindowedMin;

/// What one arrival says of the link's time per packet (`[salsify_receiver] estimate_samples`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SampleRule {
    /// The paper's: the gap since the previous arrival less the sender's idle time before the
    /// packet (its grace period). After an idle spell the sample is the change in queueing
    /// wait between the two packets, which is zero (clamped) whenever the earlier one waited
    /// longer: on a link that delivers in clumps with a short queue, most samples are zero
    /// and the link looks several times as fast as it is.
    #[default]
    Grace,
    /// The time the link took for this packet: the gap since the previous arrival, but no
    /// more than the packet's own wait at the bottleneck (its one-way delay above the least of
    /// the last 10 s, from the sender's timestamp). Behind other packets the gap is the link's
    /// service time; into an empty queue the wait is how long the link made it wait for a
    /// delivery opportunity, which the gap (holding the sender's idle time) overstates and the
    /// grace rule understates.
    QueueWait,
}

/// The fewest samples a windowed estimate keeps however old they are: on a slow link a
/// 200 ms window holds one or two packets, and an estimate that forgets the slow stretch
/// after one fast arrival let the sender queue seconds (slow suite, 3g preset: p95 529 ms
/// with the EWMA, 6469 ms with a bare 200 ms window). Ten is what the EWMA's weight of 0.1
/// remembers.
const MIN_WINDOW_SAMPLES: usize = 10;

/// EWMA of inter-arrival times, grace subtracted.
#[derive(Debug, Clone)]
pub struct InterArrivalEstimator {
    alpha: f64,
    last_arrival: Option<Instant>,
    mean_micros: Option<f64>,
    /// EWMA of datagram sizes (bytes) and the largest seen, when size-aware.
    sizes: Option<SizeMean>,
    /// The samples of the last `window` of arrival time, when windowed.
    window: Option<SampleWindow>,
    /// Under [`SampleRule::QueueWait`], the least one-way delay (µs, receiver clock less the
    /// sender's timestamp) of the last 10 s.
    owd_floor: Option<WindowedMin<i64>>,
}

/// The samples of a windowed estimate: (arrival, grace-corrected gap µs, datagram bytes).
#[derive(Debug, Clone)]
struct SampleWindow {
    span: Duration,
    samples: VecDeque<(Instant, f64, usize)>,
    largest: usize,
}

impl SampleWindow {
    /// Keeps `sample`, forgetting those older than the span (the newest always stays).
    fn push(&mut self, at: Instant, gap_us: f64, size: usize) {
        self.samples.push_back((at, gap_us, size));
        self.largest = self.largest.max(size);
        while let Some(&(first, ..)) = self.samples.front() {
            if self.samples.len() > MIN_WINDOW_SAMPLES
                && at.saturating_duration_since(first) > self.span
            {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// Microseconds per full-size datagram over the window.
    fn mean_micros(&self) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        let gaps: f64 = self.samples.iter().map(|s| s.1).sum();
        let bytes: usize = self.samples.iter().map(|s| s.2).sum();
        match bytes {
            0 => Some(gaps / self.samples.len() as f64),
            _ => Some(gaps * self.largest as f64 / bytes as f64),
        }
    }
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
            window: None,
            owd_floor: None,
        }
    }

    /// The same estimator sampling by `rule` (see [`SampleRule`]).
    pub fn sampling(self, rule: SampleRule) -> Self {
        InterArrivalEstimator {
            owd_floor: (rule == SampleRule::QueueWait).then(WindowedMin::default),
            ..self
        }
    }

    /// The sample of an arrival at `now` (µs): see [`SampleRule`]. `None` for the first.
    fn sample(&mut self, now: Instant, grace: Duration, sent_at: Instant) -> Option<f64> {
        let gap = now.saturating_duration_since(self.last_arrival?);
        let Some(floor) = self.owd_floor.as_mut() else {
            return Some(gap.saturating_sub(grace).as_secs_f64() * 1e6);
        };
        let owd = now.as_micros() as i64 - sent_at.as_micros() as i64;
        floor.push(now, owd);
        let wait = owd.saturating_sub(floor.get().unwrap_or(owd)).max(0) as f64;
        Some((gap.as_secs_f64() * 1e6).min(wait))
    }

    /// An estimator per full-size datagram over the samples of the last `span` of arrival
    /// time (see the module docs).
    pub fn windowed(span: Duration) -> Self {
        InterArrivalEstimator {
            window: Some(SampleWindow {
                span,
                samples: VecDeque::new(),
                largest: 0,
            }),
            ..Self::new(1.0)
        }
    }

    /// An estimator per full-size datagram (see the module docs).
    pub fn size_aware(alpha: f64) -> Self {
        InterArrivalEstimator {
            sizes: Some(SizeMean::default()),
            ..Self::new(alpha)
        }
    }

    /// [`Self::on_arrival`] for a datagram of `size` bytes the sender stamped `sent_at` (its
    /// clock; read only under [`SampleRule::QueueWait`]).
    pub fn on_sized_arrival(
        &mut self,
        now: Instant,
        grace: Duration,
        sent_at: Instant,
        size: usize,
    ) {
        let sample = self.sample(now, grace, sent_at);
        if let (Some(window), Some(sample)) = (self.window.as_mut(), sample) {
            window.push(now, sample, size);
        }
        self.take_sample(now, sample);
        if let (Some(sizes), true) = (self.sizes.as_mut(), sample.is_some()) {
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
        let sample = self.sample(now, grace, now);
        self.take_sample(now, sample);
    }

    /// Folds `sample` (µs) into the EWMA and keeps `now` as the last arrival.
    fn take_sample(&mut self, now: Instant, sample: Option<f64>) {
        if let Some(sample) = sample {
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
        if let Some(window) = &self.window {
            return window
                .mean_micros()
                .map(|us| Duration::from_micros(us.round().max(0.0) as u64));
        }
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
    fn a_window_weighs_a_slow_stretch_by_its_time() {
        let t = Instant::from_millis(10);
        let us = Duration::from_micros;
        let (mut windowed, mut ewma) = (
            InterArrivalEstimator::windowed(Duration::from_millis(100)),
            InterArrivalEstimator::size_aware(0.1),
        );
        // A clumped link: 10 full datagrams in 1 ms, then 9 ms with nothing: 1 ms each on
        // average. The EWMA, right after a clump, has forgotten most of the gap (0.6 ms:
        // the link looks 1.6x as fast); the window sees 1 ms.
        let mut at = t;
        for burst in 0..20 {
            for i in 0..10 {
                at = t + us(10_000 * burst + 100 * i);
                windowed.on_sized_arrival(at, Duration::ZERO, at, 1400);
                ewma.on_sized_arrival(at, Duration::ZERO, at, 1400);
            }
        }
        let w = windowed.mean().unwrap().as_micros();
        assert!((900..=1100).contains(&w), "{w} µs");
        assert!(ewma.mean().unwrap().as_micros() < 700, "{:?}", ewma.mean());
        // Older samples leave the window: 100 ms of 2 ms gaps later it says 2 ms.
        for i in 1..=60 {
            windowed.on_sized_arrival(at + us(2000 * i), Duration::ZERO, Instant::ZERO, 1400);
        }
        assert_eq!(windowed.mean(), Some(us(2000)));
        // Half-size datagrams at the same pace count as half a full one each.
        let last = at + us(2000 * 60);
        for i in 1..=60 {
            windowed.on_sized_arrival(last + us(2000 * i), Duration::ZERO, Instant::ZERO, 700);
        }
        assert_eq!(windowed.mean(), Some(us(4000)));
        // A gap after a loss is no sample; grace is subtracted as in the EWMA.
        let end = last + us(2000 * 60);
        windowed.on_arrival_after_gap(end + Duration::from_secs(1));
        assert_eq!(windowed.mean(), Some(us(4000)));
    }

    #[test]
    fn a_window_keeps_enough_samples_on_a_slow_link() {
        let t = Instant::from_millis(10);
        let mut windowed = InterArrivalEstimator::windowed(Duration::from_millis(200));
        // One full datagram every 500 ms, then one 1 ms after the last: a 200 ms window of
        // arrival time holds two samples (mean 250 ms); the window keeps ten (450 ms).
        for i in 0..13 {
            windowed.on_sized_arrival(t + Duration::from_millis(500 * i), Duration::ZERO, Instant::ZERO, 1400);
        }
        windowed.on_sized_arrival(t + Duration::from_millis(6001), Duration::ZERO, Instant::ZERO, 1400);
        let mean = windowed.mean().unwrap().as_micros();
        assert_eq!(mean, (9 * 500_000 + 1000) / 10, "{mean} µs");
    }

    #[test]
    fn size_aware_mean_counts_full_size_datagrams() {
        let t = Instant::from_millis(10);
        let us = Duration::from_micros;
        // Full 1400-byte datagrams 1 ms apart: the same as the plain mean.
        let mut e = InterArrivalEstimator::size_aware(0.1);
        for i in 0..50 {
            e.on_sized_arrival(t + us(1000 * i), Duration::ZERO, Instant::ZERO, 1400);
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
            sized.on_sized_arrival(at, Duration::ZERO, Instant::ZERO, size);
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
