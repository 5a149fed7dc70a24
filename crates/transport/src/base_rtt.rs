//! The path's fixed delay: the least round trip (sender) or one-way delay (receiver) of the
//! last [`BASE_RTT_WINDOW`].
//!
//! A fragment's round trip is its wait in the bottleneck's queue plus the path's fixed delays
//! (propagation both ways, the receiver's turnaround). The least one seen lately is the fixed
//! part: what is in flight within one base round trip of being sent is on the wire, not in
//! the queue. A window, rather than the least ever, lets a route that got longer show. The
//! receiver keeps the same minimum of one-way delays (its clock less the sender's timestamp,
//! offset by whatever separates the two clocks, which the minimum's difference cancels).

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

/// How long a round trip sample counts. Ten seconds: long enough that a cellular link's
/// seconds of standing queue still leave an empty-queue sample in the window, short enough
/// that a longer route takes over soon (BBR keeps its minimum for the same span).
pub const BASE_RTT_WINDOW: Duration = Duration::from_secs(10);

/// Most samples kept: a monotone queue of rising round trips; beyond it the oldest go, which
/// can only make the minimum younger (and so larger), never smaller than a real sample.
const MAX_SAMPLES: usize = 4096;

/// The least round trip over a sliding window of time.
pub type BaseRtt = WindowedMin<Duration>;

/// The least value over a sliding [`BASE_RTT_WINDOW`] of time (a monotone queue: O(1) per
/// sample).
#[derive(Debug, Clone)]
pub struct WindowedMin<T> {
    /// (when, value), the values rising from front to back.
    samples: VecDeque<(Instant, T)>,
}

impl<T> Default for WindowedMin<T> {
    fn default() -> Self {
        WindowedMin {
            samples: VecDeque::new(),
        }
    }
}

impl<T: Ord + Copy> WindowedMin<T> {
    /// Takes the value `rtt` measured at `at`.
    pub fn push(&mut self, at: Instant, rtt: T) {
        while self.samples.back().is_some_and(|&(_, r)| r >= rtt) {
            self.samples.pop_back();
        }
        self.samples.push_back((at, rtt));
        if self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| at.saturating_duration_since(t) > BASE_RTT_WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// The least value of the window, `None` before the first sample.
    pub fn get(&self) -> Option<T> {
        self.samples.front().map(|&(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    #[test]
    fn the_least_sample_of_the_window_and_a_later_longer_route() {
        let mut b = BaseRtt::default();
        assert_eq!(b.get(), None);
        b.push(at(0), Duration::from_millis(50));
        b.push(at(10), Duration::from_millis(40));
        b.push(at(20), Duration::from_millis(90));
        assert_eq!(b.get(), Some(Duration::from_millis(40)));
        // Ten seconds on, the 40 ms sample has left the window.
        b.push(at(10_015), Duration::from_millis(70));
        assert_eq!(b.get(), Some(Duration::from_millis(70)));
    }

    #[test]
    fn memory_stays_bounded_under_rising_samples() {
        let mut b = BaseRtt::default();
        for i in 0..20_000u64 {
            b.push(at(i / 10), Duration::from_micros(1_000 + i));
        }
        assert!(b.samples.len() <= MAX_SAMPLES);
        assert!(b.get().unwrap() >= Duration::from_micros(1_000));
    }
}
