//! Spaces a sender's fragments out in time and measures its idle time (the grace period).
//!
//! A frame's fragments are released one per `gap`, where the sender sets `gap` from the
//! receiver's inter-arrival estimate (by default 5x faster than packets arrive, at most 2 ms
//! apart; the original also kept them at least 0.5 ms apart). Why pace at all: a keyframe or a big frame sent as one
//! burst would land in the bottleneck queue at once — overflowing a small DropTail queue and
//! making the receiver's inter-arrival samples of the burst meaningless. Pacing faster than the
//! link drains keeps the bottleneck busy (the budget, not the pacer, limits the rate) while
//! spreading bursts over a few milliseconds.
//!
//! The grace period of a fragment is how long the pacer sat idle with nothing to send before
//! it: `(departure - previous departure) - gap` for the first fragment after an empty queue,
//! zero for fragments that waited behind others.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

/// A FIFO of items released no closer together than `gap`.
#[derive(Debug, Clone)]
pub struct Pacer<T> {
    queue: VecDeque<(T, bool)>,
    gap: Duration,
    last_departure: Option<Instant>,
}

impl<T> Pacer<T> {
    /// An empty pacer releasing one item per `gap`.
    pub fn new(gap: Duration) -> Self {
        Pacer {
            queue: VecDeque::new(),
            gap,
            last_departure: None,
        }
    }

    /// Changes the spacing for items not yet released.
    pub fn set_gap(&mut self, gap: Duration) {
        self.gap = gap;
    }

    /// Queues `item`.
    pub fn push(&mut self, item: T) {
        let after_idle = self.queue.is_empty();
        self.queue.push_back((item, after_idle));
    }

    /// When the next item may leave; `None` if nothing is queued.
    pub fn next_departure(&self) -> Option<Instant> {
        if self.queue.is_empty() {
            return None;
        }
        Some(self.last_departure.map_or(Instant::ZERO, |t| t + self.gap))
    }

    /// Releases the next item if it is due at `now`, with its grace period.
    pub fn poll(&mut self, now: Instant) -> Option<(T, Duration)> {
        if self.next_departure()? > now {
            return None;
        }
        let (item, after_idle) = self.queue.pop_front()?;
        let grace = match (after_idle, self.last_departure) {
            (true, Some(last)) => now.saturating_duration_since(last).saturating_sub(self.gap),
            _ => Duration::ZERO,
        };
        self.last_departure = Some(now);
        Some((item, grace))
    }

    /// The items waiting, next first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.queue.iter().map(|(item, _)| item)
    }

    /// Keeps only the items waiting for which `keep` is true; returns how many were dropped.
    /// An item after a dropped one that had followed an idle pacer inherits that idleness:
    /// its grace period still counts the time the pacer sat idle.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) -> usize {
        let before = self.queue.len();
        let mut idle = false;
        self.queue.retain_mut(|(item, after_idle)| {
            if !keep(item) {
                idle |= *after_idle;
                return false;
            }
            *after_idle |= std::mem::take(&mut idle);
            true
        });
        before - self.queue.len()
    }

    /// Items waiting (the unit tests' view of the queue).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_items_and_reports_idle_time_as_grace() {
        let ms = Duration::from_millis;
        let mut p = Pacer::new(ms(1));
        let t0 = Instant::from_millis(100);
        p.push('a');
        p.push('b');
        assert_eq!(p.poll(t0), Some(('a', Duration::ZERO)));
        assert_eq!(p.poll(t0), None);
        assert_eq!(p.next_departure(), Some(t0 + ms(1)));
        assert_eq!(p.poll(t0 + ms(1)), Some(('b', Duration::ZERO)));
        assert_eq!(p.next_departure(), None);
        // Idle for 30 ms: the next item goes at once with 29 ms of grace.
        p.push('c');
        p.push('d');
        assert_eq!(p.poll(t0 + ms(31)), Some(('c', ms(29))));
        assert_eq!(p.poll(t0 + ms(32)), Some(('d', Duration::ZERO)));
    }

    #[test]
    fn items_dropped_from_the_queue_pass_their_idle_time_on() {
        let ms = Duration::from_millis;
        let mut p = Pacer::new(ms(1));
        let t0 = Instant::from_millis(100);
        p.push('a');
        assert_eq!(p.poll(t0), Some(('a', Duration::ZERO)));
        // Idle, then three items; the first (the one after the idle time) is dropped.
        p.push('b');
        p.push('c');
        p.push('d');
        assert_eq!(p.retain(|&c| c != 'b'), 1);
        assert_eq!(p.len(), 2);
        assert_eq!(p.poll(t0 + ms(21)), Some(('c', ms(20))));
        assert_eq!(p.poll(t0 + ms(22)), Some(('d', Duration::ZERO)));
        assert_eq!(p.retain(|_| false), 0);
    }
}
