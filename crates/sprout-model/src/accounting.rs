//! Which bytes count as resolved: Sprout's "throwaway" rule, both ends.
//!
//! Sequence numbers are byte offsets. With every datagram the sender says how far back its
//! oldest datagram sent within the last 10 ms lies (the throwaway window); the receiver
//! writes off everything before that point that it has not received, assuming the network
//! never reorders datagrams sent more than 10 ms apart. It reports `received_or_lost`: the
//! bytes before the throwaway point plus those received after it, which the sender compares
//! with what it sent to estimate the queue.

use std::collections::{BTreeMap, VecDeque};

use salsify_time::{Duration, Instant};

/// The reordering the network is assumed to stay within (the original's `REORDER_LIMIT`).
pub const REORDER_LIMIT: Duration = Duration::from_millis(10);

/// Most datagrams tracked past the throwaway point; beyond it the oldest are written off, so
/// a sender that never advances the point cannot grow the receiver's memory.
const MAX_TRACKED: usize = 4096;

/// The sender's log of recent sends, for the throwaway window.
#[derive(Debug, Clone, Default)]
pub struct SendLog {
    recent: VecDeque<(Instant, u64)>,
}

impl SendLog {
    /// Records a datagram starting at byte `seq` sent at `now`, and returns its throwaway
    /// window: how many bytes before `seq` the oldest datagram sent within the reorder limit
    /// starts.
    pub fn on_send(&mut self, now: Instant, seq: u64) -> u64 {
        while let Some(&(t, _)) = self.recent.front() {
            if t + REORDER_LIMIT < now {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        self.recent.push_back((now, seq));
        let oldest = self.recent.front().map_or(seq, |&(_, s)| s);
        seq.saturating_sub(oldest)
    }
}

/// The receiver's count of bytes received or written off.
#[derive(Debug, Clone, Default)]
pub struct ReceivedOrLost {
    throwaway_before: u64,
    received: BTreeMap<u64, u32>,
    received_bytes: u64,
}

impl ReceivedOrLost {
    /// A datagram of `len` bytes starting at `seq`, whose sender's throwaway window was
    /// `throwaway`. Duplicates and datagrams already written off change nothing.
    pub fn on_datagram(&mut self, seq: u64, len: u32, throwaway: u64) {
        self.advance(seq.saturating_sub(throwaway));
        if seq >= self.throwaway_before && !self.received.contains_key(&seq) {
            self.received.insert(seq, len);
            self.received_bytes += u64::from(len);
        }
        while self.received.len() > MAX_TRACKED {
            if let Some((s, l)) = self.received.pop_first() {
                self.received_bytes -= u64::from(l);
                self.throwaway_before = self.throwaway_before.max(s.saturating_add(u64::from(l)));
            }
        }
    }

    /// Bytes received or written off.
    pub fn count(&self) -> u64 {
        self.throwaway_before.saturating_add(self.received_bytes)
    }

    fn advance(&mut self, point: u64) {
        if point <= self.throwaway_before {
            return;
        }
        self.throwaway_before = point;
        let kept = self.received.split_off(&point);
        self.received_bytes -= self.received.values().map(|&l| u64::from(l)).sum::<u64>();
        self.received = kept;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_loss_the_receiver_accounts_for_every_byte_sent() {
        let mut log = SendLog::default();
        let mut rx = ReceivedOrLost::default();
        let mut seq = 0;
        for i in 0..100u64 {
            let t = Instant::from_millis(i * 3);
            let w = log.on_send(t, seq);
            assert!(w <= seq);
            rx.on_datagram(seq, 1000, w);
            seq += 1000;
            assert_eq!(rx.count(), seq);
        }
    }

    #[test]
    fn a_loss_is_written_off_once_the_throwaway_point_passes_it() {
        let mut rx = ReceivedOrLost::default();
        rx.on_datagram(0, 100, 0);
        // 100..200 lost; 200 arrives saying its 10 ms window starts at 200 itself.
        rx.on_datagram(200, 100, 150);
        assert_eq!(
            rx.count(),
            50 + 100,
            "bytes before 50 written off, 200.. received"
        );
        rx.on_datagram(300, 100, 100);
        assert_eq!(rx.count(), 400);
        // Duplicates and stale datagrams change nothing.
        rx.on_datagram(300, 100, 100);
        rx.on_datagram(100, 100, 0);
        assert_eq!(rx.count(), 400);
    }

    #[test]
    fn a_sender_that_never_writes_off_cannot_grow_the_receivers_memory() {
        let mut rx = ReceivedOrLost::default();
        for i in 0..10_000u64 {
            rx.on_datagram(i * 10, 10, i * 10);
        }
        assert!(rx.received.len() <= MAX_TRACKED);
        assert_eq!(rx.count(), 100_000);
    }
}
