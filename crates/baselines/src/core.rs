//! The parts a conventional media sender shares between schemes: frame numbering and
//! fragmentation, transport and media sequence numbers, the send history, the pacer, NACK
//! and PLI handling, RTT samples and the output queue. The schemes ([`crate::conventional`],
//! [`crate::vidaptive`]) own one and add their congestion control.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::endpoint::{
    DropReason, EncodeJob, EncodeRequest, EncodedFrame, SenderEvent, SenderOutput, SenderStats,
};
use crate::history::{PacketResult, SendHistory};
use crate::pacer::{Pacer, Queued};
use crate::wire::{MediaHeader, Packet, MAX_FRAGMENTS};

/// Payload bytes per fragment: 1400, as Salsify's fragments, so datagrams fit the 1500-byte
/// opportunities of the emulated link with room for the 20-byte header.
pub const FRAGMENT_PAYLOAD: usize = 1400;

/// A picture waiting for the encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Picture {
    pub picture: u64,
    pub captured: Instant,
}

/// What feedback or control a datagram carried, for the scheme to act on.
pub(crate) enum Incoming {
    Feedback(Vec<PacketResult>),
    Other,
}

/// Shared sender machinery.
#[derive(Debug, Default)]
pub(crate) struct Core {
    next_transport_seq: u32,
    next_media_seq: u32,
    next_frame: u32,
    next_request: u64,
    pub history: SendHistory,
    pub pacer: Pacer,
    pub out: VecDeque<SenderOutput>,
    /// The encode under way.
    pub encoding: Option<(u64, Picture)>,
    /// A keyframe is owed (start, PLI, reset).
    pub keyframe_owed: bool,
    /// Frames before this are superseded by a keyframe: not worth retransmitting.
    pub oldest_useful_frame: u32,
    /// Smoothed RTT (RFC 6298 gains, 1/8).
    pub srtt: Option<Duration>,
    pub stats: SenderStats,
}

impl Core {
    pub fn new() -> Self {
        Core {
            keyframe_owed: true,
            ..Core::default()
        }
    }

    pub fn event(&mut self, e: SenderEvent) {
        self.out.push_back(SenderOutput::Event(e));
    }

    pub fn dropped(&mut self, now: Instant, p: Picture, reason: DropReason) {
        self.stats.dropped += 1;
        self.event(SenderEvent::PictureDropped {
            picture: p.picture,
            at: now,
            reason,
        });
    }

    /// Asks the runtime to encode `p`.
    pub fn request(&mut self, p: Picture, job: EncodeJob) {
        let id = self.next_request;
        self.next_request += 1;
        self.encoding = Some((id, p));
        self.out.push_back(SenderOutput::Encode(EncodeRequest {
            id,
            picture: p.picture,
            captured: p.captured,
            job,
        }));
    }

    /// Takes the picture of encode `id`, if it is the one under way.
    pub fn finish_encode(&mut self, id: u64) -> Option<Picture> {
        match self.encoding {
            Some((i, p)) if i == id => {
                self.encoding = None;
                Some(p)
            }
            _ => None,
        }
    }

    /// Splits a frame into fragments and queues them; returns the frame number, or `None`
    /// (picture dropped) when it has too many fragments.
    pub fn queue_frame(&mut self, now: Instant, p: Picture, f: &EncodedFrame) -> Option<u32> {
        let count = f.data.len().div_ceil(FRAGMENT_PAYLOAD).max(1);
        if count > usize::from(MAX_FRAGMENTS) {
            self.dropped(now, p, DropReason::Failed);
            return None;
        }
        let frame = self.next_frame;
        self.next_frame += 1;
        let per = f.data.len().div_ceil(count).max(1);
        for (i, chunk) in f.data.chunks(per).enumerate() {
            let header = MediaHeader {
                transport_seq: 0,
                media_seq: self.next_media_seq,
                frame,
                fragment: i as u16,
                count: count as u16,
                keyframe: f.keyframe,
                retransmission: false,
            };
            self.next_media_seq += 1;
            self.pacer.push(Queued {
                header,
                payload: chunk.to_vec(),
                enqueued: now,
                frame_enqueued: now,
            });
        }
        if f.keyframe {
            self.keyframe_owed = false;
            self.oldest_useful_frame = frame;
            self.stats.keyframes += 1;
        }
        self.stats.frames_sent += 1;
        self.event(SenderEvent::FrameSent {
            frame,
            picture: p.picture,
            captured: p.captured,
            at: now,
            bytes: f.data.len(),
            quality: f.quality,
            keyframe: f.keyframe,
        });
        Some(frame)
    }

    /// Puts a media packet on the wire with the next transport sequence number.
    pub fn transmit(&mut self, now: Instant, mut q: Queued) {
        q.header.transport_seq = self.next_transport_seq;
        self.next_transport_seq = self.next_transport_seq.wrapping_add(1);
        if q.header.retransmission {
            self.stats.retransmissions += 1;
        } else {
            self.stats.media_packets += 1;
            self.history.store_media(q.header, q.payload.clone(), now);
        }
        let packet = Packet::Media {
            header: q.header,
            payload: q.payload,
        };
        // Emitting a header built here cannot fail (fragment < count <= MAX_FRAGMENTS).
        if let Ok(bytes) = packet.emit() {
            self.history
                .on_sent(q.header.transport_seq, now, bytes.len());
            self.out.push_back(SenderOutput::Transmit(bytes));
        }
    }

    /// Sends a padding datagram of `len` bytes.
    pub fn transmit_padding(&mut self, now: Instant, len: usize) {
        let seq = self.next_transport_seq;
        self.next_transport_seq = seq.wrapping_add(1);
        if let Ok(bytes) = (Packet::Padding {
            transport_seq: seq,
            len,
        })
        .emit()
        {
            self.stats.padding_packets += 1;
            self.stats.padding_bytes += bytes.len() as u64;
            self.history.on_sent(seq, now, bytes.len());
            self.out.push_back(SenderOutput::Transmit(bytes));
        }
    }

    /// Parses a datagram from the receiver and handles NACK and PLI itself.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Incoming {
        match Packet::parse(datagram) {
            Ok(Packet::Feedback(f)) => {
                self.stats.feedback += 1;
                let results = self.history.on_feedback(&f);
                // RTT from the newest packet reported received (its feedback left soon
                // after it arrived; with periodic feedback this overestimates by up to
                // one interval).
                if let Some(sent) = results
                    .iter()
                    .filter(|r| r.arrival.is_some())
                    .map(|r| r.sent)
                    .max()
                {
                    let sample = now - sent;
                    self.srtt = Some(match self.srtt {
                        None => sample,
                        Some(s) => (s * 7 + sample) / 8,
                    });
                }
                Incoming::Feedback(results)
            }
            Ok(Packet::Nack(seqs)) => {
                let min_interval = self.srtt.unwrap_or(Duration::from_millis(100)) / 2;
                for seq in seqs {
                    self.stats.nacked += 1;
                    if let Some((mut header, payload)) = self.history.retransmission(
                        seq,
                        now,
                        min_interval,
                        self.oldest_useful_frame,
                    ) {
                        header.retransmission = true;
                        self.pacer.push_retransmission(Queued {
                            header,
                            payload,
                            enqueued: now,
                            frame_enqueued: now,
                        });
                    }
                }
                Incoming::Other
            }
            Ok(Packet::Pli) => {
                self.stats.plis += 1;
                self.keyframe_owed = true;
                Incoming::Other
            }
            Ok(_) | Err(_) => {
                self.stats.bad_datagrams += 1;
                Incoming::Other
            }
        }
    }
}
