//! Where a repeating trace's delivery opportunities fall in absolute time.
//!
//! Opportunity `n` (counting from 0 across repetitions) of a trace started at `start` is at
//! `start + (n / len) * period + millis[n % len]`, exactly as Mahimahi's `LinkQueue` computes
//! `schedule_[next_delivery_] + base_timestamp_` with `base_timestamp_` advancing by one period
//! at each wrap. Keeping `n` as a plain counter lets the link skip an idle stretch in O(log len)
//! instead of walking every opportunity.

use salsify_time::Instant;

use crate::trace::Trace;

/// A cursor on the next unused opportunity of a trace.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    trace: Trace,
    start: Instant,
    next: u64,
}

impl Schedule {
    pub(crate) fn new(trace: Trace, start: Instant) -> Schedule {
        Schedule {
            trace,
            start,
            next: 0,
        }
    }

    /// Time of the next opportunity.
    pub(crate) fn next_time(&self) -> Instant {
        self.time_of(self.next)
    }

    /// Consumes the next opportunity.
    pub(crate) fn advance(&mut self) {
        self.next = self.next.saturating_add(1);
    }

    /// Skips every opportunity at or before `now` and returns how many were skipped.
    pub(crate) fn skip_through(&mut self, now: Instant) -> u64 {
        let Some(rel) = now.checked_duration_since(self.start) else {
            return 0;
        };
        let rel_us = salsify_time::duration_micros(rel);
        let len = self.trace.millis().len() as u64;
        let period_us = self.trace.period_ms() * 1000;
        let cycle = rel_us / period_us;
        let within_us = rel_us - cycle * period_us;
        let idx = self
            .trace
            .millis()
            .partition_point(|&ms| ms * 1000 <= within_us) as u64;
        // The first opportunity after `now`; idx == len rolls over to the next cycle, whose
        // first entry is at >= (cycle + 1) * period > rel.
        let first_after = cycle.saturating_mul(len).saturating_add(idx);
        let skipped = first_after.saturating_sub(self.next);
        self.next = self.next.max(first_after);
        skipped
    }

    fn time_of(&self, n: u64) -> Instant {
        let len = self.trace.millis().len() as u64;
        let cycle = n / len;
        let ms = self.trace.millis()[(n % len) as usize];
        let offset_us = cycle
            .saturating_mul(self.trace.period_ms() * 1000)
            .saturating_add(ms * 1000);
        Instant::from_micros(self.start.as_micros().saturating_add(offset_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(s: &mut Schedule, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let t = s.next_time().as_micros() / 1000;
                s.advance();
                t
            })
            .collect()
    }

    #[test]
    fn repeats_with_the_last_timestamp_as_period() {
        let trace = Trace::from_millis(vec![0, 3, 3, 7]).unwrap();
        let mut s = Schedule::new(trace, Instant::from_millis(100));
        assert_eq!(
            times(&mut s, 10),
            [100, 103, 103, 107, 107, 110, 110, 114, 114, 117]
        );
    }

    #[test]
    fn skipping_lands_on_the_first_opportunity_after_now() {
        let trace = Trace::from_millis(vec![0, 3, 3, 7]).unwrap();
        let mut walked = Schedule::new(trace.clone(), Instant::ZERO);
        for now_ms in [0u64, 2, 3, 6, 7, 8, 13, 14, 71, 1000] {
            let now = Instant::from_millis(now_ms);
            let mut skipped = Schedule::new(trace.clone(), Instant::ZERO);
            skipped.skip_through(now);
            while walked.next_time() <= now {
                walked.advance();
            }
            assert_eq!(skipped.next, walked.next, "now = {now_ms} ms");
            assert!(skipped.next_time() > now);
        }
    }

    #[test]
    fn skipping_never_goes_back_and_counts_what_it_skipped() {
        let trace = Trace::from_millis(vec![5, 10]).unwrap();
        let mut s = Schedule::new(trace, Instant::from_millis(1));
        assert_eq!(s.skip_through(Instant::ZERO), 0);
        assert_eq!(s.skip_through(Instant::from_millis(21)), 4);
        assert_eq!(s.skip_through(Instant::from_millis(3)), 0);
        assert_eq!(s.next_time(), Instant::from_millis(26));
    }
}
