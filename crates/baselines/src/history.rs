//! What the sender remembers about packets it sent: per transport sequence number (send time
//! and size, matched against feedback) and, per media sequence number, the packet itself for
//! retransmission on NACK.

use std::collections::{BTreeMap, VecDeque};

use salsify_time::{Duration, Instant};

use crate::wire::{Feedback, MediaHeader};

/// How long a sent packet waits for feedback before it is forgotten (and no longer counted in
/// flight): libwebrtc's `TransportFeedbackAdapter` keeps 60 s; here 5 s, ample for every
/// link in the testbed.
pub const FEEDBACK_HORIZON: Duration = Duration::from_secs(5);
/// How long a media packet is kept for retransmission (libwebrtc `RtpPacketHistory`:
/// at least 1 s, or 3 RTTs when larger).
pub const RETRANSMIT_HORIZON: Duration = Duration::from_secs(1);

/// A sent packet with what the feedback said about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketResult {
    /// Transport sequence number.
    pub seq: u32,
    /// When it was sent.
    pub sent: Instant,
    /// Datagram size.
    pub size: usize,
    /// Arrival on the receiver's clock, `None` if reported lost.
    pub arrival: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Stored {
    header: MediaHeader,
    payload: Vec<u8>,
    first_sent: Instant,
    last_sent: Instant,
}

/// The sender's packet memory.
#[derive(Debug, Default)]
pub struct SendHistory {
    sent: BTreeMap<u32, (Instant, usize)>,
    in_flight: usize,
    media: BTreeMap<u32, Stored>,
    media_order: VecDeque<(Instant, u32)>,
}

impl SendHistory {
    /// A packet left with transport sequence number `seq`.
    pub fn on_sent(&mut self, seq: u32, at: Instant, size: usize) {
        if self.sent.insert(seq, (at, size)).is_none() {
            self.in_flight += size;
        }
        while let Some((&old, &(t, s))) = self.sent.iter().next() {
            if at - t <= FEEDBACK_HORIZON {
                break;
            }
            self.sent.remove(&old);
            self.in_flight -= s;
        }
    }

    /// Bytes sent and not yet reported on.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Matches feedback with the packets sent; unknown or already reported numbers are
    /// ignored. Results come in sequence order.
    pub fn on_feedback(&mut self, f: &Feedback) -> Vec<PacketResult> {
        let mut out = Vec::with_capacity(f.arrivals.len());
        for (i, arrival) in f.arrivals.iter().enumerate() {
            let seq = f.base_seq.wrapping_add(i as u32);
            if let Some((sent, size)) = self.sent.remove(&seq) {
                self.in_flight -= size;
                out.push(PacketResult {
                    seq,
                    sent,
                    size,
                    arrival: *arrival,
                });
            }
        }
        out
    }

    /// Keeps a media packet for retransmission.
    pub fn store_media(&mut self, header: MediaHeader, payload: Vec<u8>, at: Instant) {
        self.media.insert(
            header.media_seq,
            Stored {
                header,
                payload,
                first_sent: at,
                last_sent: at,
            },
        );
        self.media_order.push_back((at, header.media_seq));
        while let Some(&(t, seq)) = self.media_order.front() {
            if at - t <= RETRANSMIT_HORIZON {
                break;
            }
            self.media_order.pop_front();
            self.media.remove(&seq);
        }
    }

    /// A packet to retransmit for a NACK of `media_seq`, unless it is unknown, too old, of a
    /// frame before `oldest_frame` (superseded by a keyframe), or was (re)sent less than
    /// `min_interval` ago.
    pub fn retransmission(
        &mut self,
        media_seq: u32,
        now: Instant,
        min_interval: Duration,
        oldest_frame: u32,
    ) -> Option<(MediaHeader, Vec<u8>)> {
        let p = self.media.get_mut(&media_seq)?;
        if p.header.frame < oldest_frame
            || now - p.first_sent > RETRANSMIT_HORIZON
            || now - p.last_sent < min_interval
        {
            return None;
        }
        p.last_sent = now;
        Some((p.header, p.payload.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_matches_and_clears_in_flight() {
        let mut h = SendHistory::default();
        for s in 0..4 {
            h.on_sent(s, Instant::from_millis(u64::from(s)), 100);
        }
        assert_eq!(h.in_flight(), 400);
        let r = h.on_feedback(&Feedback {
            base_seq: 1,
            arrivals: vec![Some(Instant::from_millis(30)), None, Some(Instant::ZERO)],
        });
        assert_eq!(r.len(), 3);
        assert_eq!(r[1].arrival, None);
        assert_eq!(h.in_flight(), 100);
        // Reported twice: ignored.
        assert!(h
            .on_feedback(&Feedback {
                base_seq: 1,
                arrivals: vec![None]
            })
            .is_empty());
    }
}
