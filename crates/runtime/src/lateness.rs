//! How late a real-time loop did what it was due to do: a bounded histogram of lateness.
//!
//! The relay is the emulated link; when it forwards a datagram later than the link said it
//! arrives, the receiver stamps the lateness as queueing, and a delay-based controller
//! (GoogCC's trendline) reads it as congestion that no simulation of the same link has. The
//! relay counts it so that every live run says how faithful its link was.

use std::fmt;

use salsify_time::Duration;

/// Width of one bucket, µs.
const BUCKET_US: u64 = 10;
/// Buckets up to this lateness (µs); later ones share the last bucket (and set the maximum).
const RANGE_US: u64 = 50_000;

/// Counts of lateness in 10 µs buckets up to 50 ms; constant memory however long the run.
#[derive(Clone)]
pub struct Lateness {
    buckets: Vec<u64>,
    count: u64,
    max: Duration,
}

impl Default for Lateness {
    fn default() -> Self {
        let n = (RANGE_US / BUCKET_US) as usize + 1;
        Lateness {
            buckets: vec![0; n],
            count: 0,
            max: Duration::ZERO,
        }
    }
}

impl fmt::Debug for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lateness({})", self.summary())
    }
}

impl Lateness {
    /// Counts one event `late` after it was due.
    pub fn record(&mut self, late: Duration) {
        let us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
        let i = (us / BUCKET_US).min(self.buckets.len() as u64 - 1);
        self.buckets[i as usize] += 1;
        self.count += 1;
        self.max = self.max.max(late);
    }

    /// The lateness that a fraction `q` (0..=1) of events did not exceed, to the bucket's
    /// upper edge (the maximum when it falls in the last bucket); zero with no events.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                if i == self.buckets.len() - 1 {
                    return self.max;
                }
                let edge = Duration::from_micros((i as u64 + 1) * BUCKET_US);
                return edge.min(self.max);
            }
        }
        self.max
    }

    /// The figures a run reports.
    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            count: self.count,
            p50: self.quantile(0.5),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            max: self.max,
        }
    }
}

/// Count and quantiles of a [`Lateness`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatenessSummary {
    /// Events counted.
    pub count: u64,
    /// Median lateness.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Largest.
    pub max: Duration,
}

impl fmt::Display for LatenessSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} datagrams, late p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
            self.count,
            self.p50.as_micros(),
            self.p99.as_micros(),
            self.p999.as_micros(),
            self.max.as_micros()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_read_to_the_bucket_edge() {
        let mut l = Lateness::default();
        for us in 0..1000u64 {
            l.record(Duration::from_micros(us));
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50, Duration::from_micros(500));
        assert_eq!(s.p99, Duration::from_micros(990));
        assert_eq!(s.max, Duration::from_micros(999));
        assert!(s.p999 <= s.max);
    }

    #[test]
    fn lateness_past_the_range_reports_the_maximum() {
        let mut l = Lateness::default();
        l.record(Duration::from_micros(5));
        l.record(Duration::from_secs(2));
        assert_eq!(l.quantile(1.0), Duration::from_secs(2));
        assert_eq!(l.quantile(0.5), Duration::from_micros(10));
    }

    #[test]
    fn no_events_read_as_zero() {
        let s = Lateness::default().summary();
        assert_eq!(s, LatenessSummary::default());
    }
}
