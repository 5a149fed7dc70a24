//! A leaky-bucket pacer: packets leave no faster than the pacing rate, retransmissions
//! first (as libwebrtc's `PacingController` prioritises them over new media).

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;
use crate::wire::MediaHeader;

/// Credit the pacer may bank while idle (libwebrtc's media budget keeps at most one
/// 5 ms interval: `kDefaultMaxDebtInTime`-style burst limits are of that order).
pub const MAX_BURST: Duration = Duration::from_millis(5);

/// A packet waiting in the pacer.
#[derive(Debug, Clone)]
pub struct Queued {
    /// Its header (transport sequence number filled in when it leaves).
    pub header: MediaHeader,
    /// Payload.
    pub payload: Vec<u8>,
    /// When it was queued.
    pub enqueued: Instant,
    /// When its frame was queued (for the frame's pacer delay).
    pub frame_enqueued: Instant,
}

impl Queued {
    /// Datagram size.
    pub fn size(&self) -> usize {
        crate::wire::MEDIA_HEADER_LEN + self.payload.len()
    }
}

/// The pacer.
#[derive(Debug, Default)]
pub struct Pacer {
    rtx: VecDeque<Queued>,
    media: VecDeque<Queued>,
    bytes: usize,
    rate: Bitrate,
    next_send: Instant,
}

impl Pacer {
    /// Sets the pacing rate.
    pub fn set_rate(&mut self, rate: Bitrate) {
        self.rate = rate;
    }
    /// The pacing rate.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }
    /// Queues new media.
    pub fn push(&mut self, q: Queued) {
        self.bytes += q.size();
        self.media.push_back(q);
    }
    /// Queues a retransmission (ahead of new media).
    pub fn push_retransmission(&mut self, q: Queued) {
        self.bytes += q.size();
        self.rtx.push_back(q);
    }
    /// Bytes waiting.
    pub fn queued_bytes(&self) -> usize {
        self.bytes
    }
    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.rtx.is_empty() && self.media.is_empty()
    }
    /// Enqueue time of the oldest packet waiting.
    pub fn oldest(&self) -> Option<Instant> {
        self.rtx
            .iter()
            .chain(self.media.iter())
            .map(|q| q.enqueued)
            .min()
    }
    /// Time to send everything queued at `rate`.
    pub fn queue_time(&self, rate: Bitrate) -> Duration {
        rate.time_for(self.bytes as u64)
    }
    /// Whether the bucket allows sending at `now`.
    pub fn may_send(&self, now: Instant) -> bool {
        now >= self.next_send
    }
    /// When the bucket next allows sending.
    pub fn next_send(&self) -> Instant {
        self.next_send
    }
    /// Charges `size` bytes sent at `now` to the bucket.
    pub fn charge(&mut self, now: Instant, size: usize) {
        let base = self.next_send.max(now - MAX_BURST);
        self.next_send = base + self.rate.time_for(size as u64);
    }
    /// The next packet, if the bucket allows it at `now`.
    pub fn pop(&mut self, now: Instant) -> Option<Queued> {
        if !self.may_send(now) {
            return None;
        }
        let q = self.rtx.pop_front().or_else(|| self.media.pop_front())?;
        self.bytes -= q.size();
        self.charge(now, q.size());
        Some(q)
    }
    /// Discards everything queued; returns the frames whose packets were dropped.
    pub fn drain(&mut self) -> Vec<u32> {
        let mut frames: Vec<u32> = self.media.iter().map(|q| q.header.frame).collect();
        frames.dedup();
        self.rtx.clear();
        self.media.clear();
        self.bytes = 0;
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(frame: u32, len: usize) -> Queued {
        Queued {
            header: MediaHeader {
                transport_seq: 0,
                media_seq: 0,
                frame,
                fragment: 0,
                count: 1,
                keyframe: false,
                retransmission: false,
            },
            payload: vec![0; len - crate::wire::MEDIA_HEADER_LEN],
            enqueued: Instant::ZERO,
            frame_enqueued: Instant::ZERO,
        }
    }

    #[test]
    fn paces_at_the_rate_retransmissions_first() {
        let mut p = Pacer::default();
        p.set_rate(Bitrate::kbps(800)); // 1000 bytes per 10 ms
        p.push(q(1, 1000));
        p.push(q(2, 1000));
        p.push_retransmission(q(0, 1000));
        let t = Instant::from_millis(100);
        assert_eq!(p.pop(t).unwrap().header.frame, 0);
        assert!(p.pop(t).is_none());
        // An idle pacer banks MAX_BURST of credit: the next slot is 10 ms after 95 ms.
        assert_eq!(p.next_send(), Instant::from_millis(105));
        assert_eq!(p.pop(Instant::from_millis(105)).unwrap().header.frame, 1);
        assert_eq!(p.queue_time(Bitrate::kbps(800)), Duration::from_millis(10));
        assert_eq!(p.drain(), vec![2]);
        assert!(p.is_empty());
    }
}
