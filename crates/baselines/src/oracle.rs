//! The oracle: a sender that reads the link's future (simulator only), an upper bound.
//!
//! It is the only traffic on the link and knows every future delivery opportunity, so it can
//! model the bottleneck exactly (same rules as `salsify-netem`: an opportunity carries
//! `opportunity_bytes` of the head packets; a packet cannot use an opportunity at the instant
//! it arrives; bytes of an opportunity with nothing queued are lost). For each camera
//! picture it computes how many bytes would arrive by `captured + delay_target` if sent when
//! the encode finishes, and asks for the finest quality whose frame is that small
//! ([`EncodeJob::MaxSize`], answered with the functional codec from the last frame sent).
//! If nothing fits it skips the picture. Packets go out at once (no pacing needed: the
//! model already knows when each one will depart), and it ignores feedback.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::core::{Picture, FRAGMENT_PAYLOAD};
use crate::endpoint::{
    DropReason, EncodeJob, EncodeRequest, EncodedFrame, SenderEvent, SenderOutput, SenderStats,
};
use crate::wire::{MediaHeader, Packet, MAX_FRAGMENTS, MEDIA_HEADER_LEN};

/// The oracle's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OracleConfig {
    /// Every frame must arrive within this time of its capture. Default 100 ms (Salsify's
    /// delay target).
    #[serde(rename = "delay_target_ms", with = "crate::serde_units::millis")]
    pub delay_target: Duration,
    /// Time an encode takes, charged before sending (the simulator's cost model).
    #[serde(rename = "encode_time_ms", with = "crate::serde_units::millis")]
    pub encode_time: Duration,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig {
            delay_target: Duration::from_millis(100),
            encode_time: Duration::ZERO,
        }
    }
}

/// The link's future, as the simulator knows it.
pub struct LinkForecast {
    /// Time of delivery opportunity `n` (0-based, non-decreasing).
    pub opportunity: Box<dyn Fn(u64) -> Instant + Send>,
    /// Bytes per opportunity.
    pub opportunity_bytes: u32,
    /// Propagation delay after the bottleneck.
    pub propagation: Duration,
}

impl std::fmt::Debug for LinkForecast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkForecast")
            .field("opportunity_bytes", &self.opportunity_bytes)
            .field("propagation", &self.propagation)
            .finish()
    }
}

/// The bottleneck as the oracle models it: the next opportunity with bytes left.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    next: u64,
    used: u32,
}

/// The oracle sender.
#[derive(Debug)]
pub struct OracleSender {
    config: OracleConfig,
    link: LinkForecast,
    cursor: Cursor,
    next_frame: u32,
    next_seq: u32,
    next_request: u64,
    encoding: Option<(u64, Picture)>,
    waiting: Option<Picture>,
    out: VecDeque<SenderOutput>,
    stats: SenderStats,
}

impl OracleConfig {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), String> {
        if self.delay_target.is_zero() {
            return Err("delay_target_ms must be positive".into());
        }
        Ok(())
    }
}

impl OracleSender {
    /// An oracle for `link`.
    pub fn new(config: OracleConfig, link: LinkForecast) -> Result<Self, String> {
        config.validate()?;
        if link.opportunity_bytes as usize <= MEDIA_HEADER_LEN {
            return Err(format!("{}-byte opportunities", link.opportunity_bytes));
        }
        Ok(OracleSender {
            config,
            link,
            cursor: Cursor { next: 0, used: 0 },
            next_frame: 0,
            next_seq: 0,
            next_request: 0,
            encoding: None,
            waiting: None,
            out: VecDeque::new(),
            stats: SenderStats::default(),
        })
    }

    /// The cursor moved past every opportunity at or before `t` (they pass unused).
    fn cursor_at(&self, t: Instant) -> Cursor {
        let mut c = self.cursor;
        while (self.link.opportunity)(c.next) <= t {
            c = Cursor {
                next: c.next + 1,
                used: 0,
            };
        }
        c
    }

    /// Sends `size` bytes from cursor `c`; returns the new cursor and when the last byte
    /// departs.
    fn serve(&self, mut c: Cursor, size: usize) -> (Cursor, Instant) {
        let cap = self.link.opportunity_bytes;
        let mut left = size as u64;
        let mut departs = (self.link.opportunity)(c.next);
        while left > 0 {
            let take = u64::from(cap - c.used).min(left);
            left -= take;
            c.used += take as u32;
            departs = (self.link.opportunity)(c.next);
            if c.used == cap {
                c = Cursor {
                    next: c.next + 1,
                    used: 0,
                };
            }
        }
        (c, departs)
    }

    /// Payload bytes that arrive by `deadline` if sent at `at`.
    fn budget(&self, at: Instant, deadline: Instant) -> usize {
        let Some(last_departure) = deadline.checked_sub(self.link.propagation) else {
            return 0;
        };
        let mut c = self.cursor_at(at);
        let mut bytes = 0u64;
        while (self.link.opportunity)(c.next) <= last_departure && bytes < 64 << 20 {
            bytes += u64::from(self.link.opportunity_bytes - c.used);
            c = Cursor {
                next: c.next + 1,
                used: 0,
            };
        }
        // Each datagram carries at most FRAGMENT_PAYLOAD bytes behind a header.
        let packets = bytes.div_ceil((FRAGMENT_PAYLOAD + MEDIA_HEADER_LEN) as u64);
        bytes.saturating_sub(packets * MEDIA_HEADER_LEN as u64) as usize
    }

    /// A camera picture.
    pub fn handle_frame(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.stats.pictures += 1;
        let p = Picture { picture, captured };
        if self.encoding.is_some() {
            if let Some(old) = self.waiting.replace(p) {
                self.drop_picture(now, old, DropReason::EncoderBusy);
            }
            return;
        }
        self.start(now, p);
    }

    fn start(&mut self, now: Instant, p: Picture) {
        let send_at = now + self.config.encode_time;
        let bytes = self.budget(send_at, p.captured + self.config.delay_target);
        if bytes == 0 {
            self.drop_picture(now, p, DropReason::WouldBeLate);
            return;
        }
        let id = self.next_request;
        self.next_request += 1;
        self.encoding = Some((id, p));
        self.out.push_back(SenderOutput::Encode(EncodeRequest {
            id,
            picture: p.picture,
            captured: p.captured,
            job: EncodeJob::MaxSize { bytes },
        }));
    }

    fn drop_picture(&mut self, now: Instant, p: Picture, reason: DropReason) {
        self.stats.dropped += 1;
        self.out
            .push_back(SenderOutput::Event(SenderEvent::PictureDropped {
                picture: p.picture,
                at: now,
                reason,
            }));
    }

    /// The encode's result (`None`: nothing fits).
    pub fn handle_encoded(&mut self, now: Instant, id: u64, frame: Option<EncodedFrame>) {
        let Some(p) = self.encoding.filter(|e| e.0 == id).map(|e| e.1) else {
            return;
        };
        self.encoding = None;
        match frame {
            Some(f) if f.data.len().div_ceil(FRAGMENT_PAYLOAD) <= usize::from(MAX_FRAGMENTS) => {
                self.send(now, p, &f)
            }
            Some(_) => self.drop_picture(now, p, DropReason::Failed),
            None => self.drop_picture(now, p, DropReason::WouldBeLate),
        }
        if let Some(next) = self.waiting.take() {
            self.start(now, next);
        }
    }

    /// The runtime could not encode request `id`.
    pub fn handle_encode_failed(&mut self, now: Instant, id: u64) {
        if let Some((i, p)) = self.encoding {
            if i == id {
                self.encoding = None;
                self.drop_picture(now, p, DropReason::Failed);
            }
        }
    }

    fn send(&mut self, now: Instant, p: Picture, f: &EncodedFrame) {
        let count = f.data.len().div_ceil(FRAGMENT_PAYLOAD).max(1);
        let per = f.data.len().div_ceil(count).max(1);
        let frame = self.next_frame;
        self.next_frame += 1;
        let mut c = self.cursor_at(now);
        for (i, chunk) in f.data.chunks(per).enumerate() {
            let packet = Packet::Media {
                header: MediaHeader {
                    transport_seq: self.next_seq,
                    media_seq: self.next_seq,
                    frame,
                    fragment: i as u16,
                    count: count as u16,
                    keyframe: f.keyframe,
                    retransmission: false,
                },
                payload: chunk.to_vec(),
            };
            self.next_seq += 1;
            if let Ok(bytes) = packet.emit() {
                c = self.serve(c, bytes.len()).0;
                self.stats.media_packets += 1;
                self.out.push_back(SenderOutput::Transmit(bytes));
            }
        }
        self.cursor = c;
        self.stats.frames_sent += 1;
        self.stats.keyframes += u64::from(f.keyframe);
        self.out
            .push_back(SenderOutput::Event(SenderEvent::FrameSent {
                frame,
                picture: p.picture,
                captured: p.captured,
                at: now,
                bytes: f.data.len(),
                quality: f.quality,
                keyframe: f.keyframe,
            }));
    }

    /// Feedback is ignored: the oracle already knows everything.
    pub fn handle_datagram(&mut self, _now: Instant, _datagram: &[u8]) {}

    /// Time passed.
    pub fn handle_timeout(&mut self, _now: Instant) {}

    /// The next output; ends with `Timeout`.
    pub fn poll_output(&mut self, _now: Instant) -> SenderOutput {
        self.out
            .pop_front()
            .unwrap_or(SenderOutput::Timeout(Instant::FAR_FUTURE))
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 1500-byte opportunity every millisecond (12 Mb/s), 20 ms propagation.
    fn oracle(target_ms: u64) -> OracleSender {
        OracleSender::new(
            OracleConfig {
                delay_target: Duration::from_millis(target_ms),
                encode_time: Duration::ZERO,
            },
            LinkForecast {
                opportunity: Box::new(|n| Instant::from_millis(n + 1)),
                opportunity_bytes: 1500,
                propagation: Duration::from_millis(20),
            },
        )
        .unwrap()
    }

    #[test]
    fn budget_counts_opportunities_before_the_deadline_minus_propagation() {
        let o = oracle(100);
        // Sent at 0: opportunities 1..=80 ms depart in time (80 x 1500 bytes).
        let b = o.budget(Instant::ZERO, Instant::from_millis(100));
        assert_eq!(b, 80 * 1500 - 85 * MEDIA_HEADER_LEN); // 85 datagrams of <= 1420 bytes
        assert_eq!(o.budget(Instant::ZERO, Instant::from_millis(20)), 0);
    }

    #[test]
    fn a_sent_frame_uses_up_the_budget() {
        let mut o = oracle(100);
        o.handle_frame(Instant::ZERO, 0, Instant::ZERO);
        let SenderOutput::Encode(req) = o.poll_output(Instant::ZERO) else {
            panic!()
        };
        let EncodeJob::MaxSize { bytes } = req.job else {
            panic!()
        };
        o.handle_encoded(
            Instant::ZERO,
            req.id,
            Some(EncodedFrame {
                data: vec![0; bytes],
                keyframe: true,
                quality: 10,
            }),
        );
        // The link is booked until 80 ms: a picture at 0 ms has nothing left.
        assert_eq!(o.budget(Instant::ZERO, Instant::from_millis(100)), 0);
        // One captured at 20 ms may use 81..=100 ms.
        assert!(o.budget(Instant::from_millis(20), Instant::from_millis(120)) > 19 * 1400);
    }
}
