//! The bottleneck's DropTail queue, limited in packets, bytes, both, or not at all.
//!
//! Semantics follow Mahimahi's `DropTailPacketQueue` (src/packet/drop_tail_packet_queue.hh):
//! an arriving packet is accepted only if the queue *with it added* is within every configured
//! limit; otherwise the arriving packet (never a queued one) is dropped. The packet currently
//! being serialised onto the link has left the queue and does not count against the limit.

use std::collections::VecDeque;
use std::fmt;

/// Capacity of the DropTail queue. `None` in a field means "no limit of that kind".
///
/// The paper used 64, 256 and 1024 packets (256 for its main results).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct QueueLimit {
    /// Most packets the queue may hold.
    pub packets: Option<u32>,
    /// Most bytes the queue may hold.
    pub bytes: Option<u64>,
}

impl QueueLimit {
    /// A queue that never drops (Mahimahi's `infinite` queue).
    pub const UNLIMITED: QueueLimit = QueueLimit {
        packets: None,
        bytes: None,
    };

    /// A queue of at most `n` packets.
    pub const fn packets(n: u32) -> QueueLimit {
        QueueLimit {
            packets: Some(n),
            bytes: None,
        }
    }

    /// A queue of at most `n` bytes.
    pub const fn bytes(n: u64) -> QueueLimit {
        QueueLimit {
            packets: None,
            bytes: Some(n),
        }
    }

    /// A queue limited in both packets and bytes; a packet must fit both.
    pub const fn packets_and_bytes(packets: u32, bytes: u64) -> QueueLimit {
        QueueLimit {
            packets: Some(packets),
            bytes: Some(bytes),
        }
    }

    /// Whether a queue of `packets` packets and `bytes` bytes is within the limit.
    pub fn admits(&self, packets: usize, bytes: u64) -> bool {
        let too_many = matches!(self.packets, Some(max) if packets as u64 > u64::from(max));
        let too_big = matches!(self.bytes, Some(max) if bytes > max);
        !too_many && !too_big
    }
}

impl Default for QueueLimit {
    /// 256 packets, the queue of the paper's main experiments.
    fn default() -> Self {
        QueueLimit::packets(256)
    }
}

impl fmt::Display for QueueLimit {
    /// Mahimahi's description of a queue, as written in an mm-link log's `# queue:` line
    /// (`droptail [bytes=N, packets=M]` or `infinite`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.bytes, self.packets) {
            (None, None) => f.write_str("infinite"),
            (Some(b), None) => write!(f, "droptail [bytes={b}]"),
            (None, Some(p)) => write!(f, "droptail [packets={p}]"),
            (Some(b), Some(p)) => write!(f, "droptail [bytes={b}, packets={p}]"),
        }
    }
}

/// A FIFO of items with sizes, enforcing a [`QueueLimit`] on entry.
#[derive(Debug)]
pub(crate) struct DropTailQueue<T> {
    limit: QueueLimit,
    items: VecDeque<(T, u64)>,
    bytes: u64,
}

impl<T> DropTailQueue<T> {
    pub(crate) fn new(limit: QueueLimit) -> Self {
        DropTailQueue {
            limit,
            items: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Appends `item` of `size` bytes, or hands it back if the queue would exceed its limit.
    pub(crate) fn push(&mut self, item: T, size: u64) -> Result<(), T> {
        if !self.limit.admits(self.items.len() + 1, self.bytes + size) {
            return Err(item);
        }
        self.bytes += size;
        self.items.push_back((item, size));
        Ok(())
    }

    pub(crate) fn pop(&mut self) -> Option<(T, u64)> {
        let (item, size) = self.items.pop_front()?;
        self.bytes -= size;
        Some((item, size))
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_limit_drops_exactly_the_overflow() {
        let mut q = DropTailQueue::new(QueueLimit::packets(64));
        let rejected: Vec<u32> = (0..100).filter_map(|i| q.push(i, 1500).err()).collect();
        assert_eq!(rejected, (64..100).collect::<Vec<_>>());
        assert_eq!(q.len(), 64);
        assert_eq!(q.bytes(), 64 * 1500);
        // Freeing one slot admits exactly one more.
        assert_eq!(q.pop(), Some((0, 1500)));
        assert!(q.push(100, 1500).is_ok());
        assert_eq!(q.push(101, 1500), Err(101));
    }

    #[test]
    fn byte_limit_counts_the_arriving_packet() {
        let mut q = DropTailQueue::new(QueueLimit::bytes(3000));
        assert!(q.push('a', 1000).is_ok());
        assert!(q.push('b', 1000).is_ok());
        assert!(q.push('c', 1000).is_ok()); // exactly at the limit is fine
        assert_eq!(q.push('d', 1), Err('d'));
        assert_eq!(q.pop(), Some(('a', 1000)));
        assert_eq!(q.push('e', 1001), Err('e')); // a big one still does not fit
        assert!(q.push('f', 1000).is_ok());
    }

    #[test]
    fn both_limits_must_hold_and_unlimited_never_drops() {
        let mut q = DropTailQueue::new(QueueLimit::packets_and_bytes(10, 2500));
        assert!(q.push(1, 1200).is_ok());
        assert!(q.push(2, 1200).is_ok());
        assert_eq!(q.push(3, 200), Err(3));
        let mut q = DropTailQueue::new(QueueLimit::UNLIMITED);
        assert!((0..100_000).all(|i| q.push(i, 1500).is_ok()));
        assert_eq!(q.len(), 100_000);
    }

    #[test]
    fn displays_like_mahimahi() {
        assert_eq!(QueueLimit::UNLIMITED.to_string(), "infinite");
        assert_eq!(
            QueueLimit::packets(256).to_string(),
            "droptail [packets=256]"
        );
        assert_eq!(
            QueueLimit::packets_and_bytes(4, 90).to_string(),
            "droptail [bytes=90, packets=4]"
        );
    }
}
