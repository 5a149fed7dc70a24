//! The oracle: a sender that reads the link's future (simulator only), an upper bound.
//!
//! It is the only traffic on the link and knows every future delivery opportunity, so it can
//! model the bottleneck exactly (same rules as `salsify-netem`: an opportunity carries
//! `opportunity_bytes` of the head packets; a packet cannot use an opportunity at the instant
//! it arrives; bytes of an opportunity with nothing queued are lost). For each camera
//! picture it computes how many bytes would arrive by `captured + delay_target` if sent when
//! the encode finishes, and asks for the finest quality whose frame is that small
//! ([`EncodeJob::FinestFitting`] with the functional codec, from the state of the last frame
//! it sent and searched from that frame's quantizer; it keeps both). If nothing fits it
//! skips the picture. Packets go out at once (no pacing needed: the model already knows when
//! each one will depart), and it ignores feedback.

use std::collections::VecDeque;

use salsify_codec::{EncodedFrame, Quality, State, StateHash};
use salsify_endpoint::{
    Choice, DatagramError, DropReason, EncodeFailed, EncodeJob, EncodeOutcome, EncodeRequest,
    InputError, SenderEndpoint, SenderEvent, SenderOutput, SenderStats, SentFrame,
};
use salsify_time::{Duration, Instant};

use crate::core::{outcome_kind, Picture, FRAGMENT_PAYLOAD};
use crate::error::{datagram_error, ConfigError};
use crate::scheme::Scheme;
use crate::stats::SenderCounters;
use crate::wire::{MediaHeader, Packet, MAX_FRAGMENTS, MEDIA_HEADER_LEN};

/// The quantizer the first search starts from (the middle of the scale).
pub const FIRST_SEARCH_START: u8 = 64;

/// The oracle's parameters, the `[oracle]` table of an experiment file (durations in ms;
/// unknown fields refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OracleConfig {
    /// Every frame must arrive within this time of its capture. Default 100 ms (Salsify's
    /// delay target).
    #[serde(rename = "delay_target_ms", with = "crate::serde_units::millis")]
    pub delay_target: Duration,
    /// Time an encode takes, charged before sending. Set by the simulator from its cost
    /// model, so not read from experiment files. Default 0.
    #[serde(skip)]
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

impl OracleConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.delay_target.is_zero() {
            return Err(ConfigError::invalid("delay_target_ms", "must be above 0"));
        }
        Ok(())
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
    /// The functional codec state of the last frame sent (the receiver's), and its quantizer:
    /// the next search starts from both.
    state: State,
    last_quality: Quality,
    out: VecDeque<SenderOutput>,
    stats: SenderCounters,
}

impl OracleSender {
    /// An oracle for `link`; the configuration is checked.
    pub fn new(config: OracleConfig, link: LinkForecast) -> Result<Self, ConfigError> {
        config.validate()?;
        if link.opportunity_bytes as usize <= MEDIA_HEADER_LEN {
            return Err(ConfigError::invalid(
                "opportunity_bytes",
                format!(
                    "{}-byte opportunities cannot carry a {MEDIA_HEADER_LEN}-byte header",
                    link.opportunity_bytes
                ),
            ));
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
            state: State::initial(),
            last_quality: Quality::new(FIRST_SEARCH_START).unwrap_or(Quality::WORST),
            out: VecDeque::new(),
            stats: SenderCounters::default(),
        })
    }

    /// The scheme's own counters.
    pub fn counters(&self) -> SenderCounters {
        self.stats
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
            job: EncodeJob::FinestFitting {
                source: self.state.clone(),
                bytes,
                start: self.last_quality,
            },
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

    /// The frame the search found (at most one, encoded from the state asked for).
    fn found(&self, id: u64, outcome: EncodeOutcome) -> Result<Option<EncodedFrame>, InputError> {
        let wrong = |why: String| InputError::WrongResult { id, why };
        let mut frames = match outcome {
            EncodeOutcome::Functional(frames) => frames,
            other => {
                return Err(wrong(format!(
                    "a finest-fitting search answered with {}",
                    outcome_kind(&other)
                )))
            }
        };
        if frames.len() > 1 {
            return Err(wrong(format!("{} frames for one search", frames.len())));
        }
        let frame = frames.pop();
        if let Some(f) = &frame {
            if !f.keyframe && f.source != self.state.hash() {
                return Err(wrong(format!(
                    "a frame from state {:?}, not {:?}",
                    f.source,
                    self.state.hash()
                )));
            }
        }
        Ok(frame)
    }

    fn send(&mut self, now: Instant, p: Picture, f: &EncodedFrame) {
        let states = Some((f.source, f.target.hash()));
        self.send_vp8(now, p, f.vp8(), f.keyframe, f.quality, states);
    }

    /// Sends VP8 frame `data` at once, booking the link's opportunities it will use.
    fn send_vp8(
        &mut self,
        now: Instant,
        p: Picture,
        data: &[u8],
        keyframe: bool,
        quality: Quality,
        states: Option<(StateHash, StateHash)>,
    ) {
        let count = data.len().div_ceil(FRAGMENT_PAYLOAD).max(1);
        let per = data.len().div_ceil(count).max(1);
        let frame = self.next_frame;
        self.next_frame += 1;
        let mut c = self.cursor_at(now);
        for (i, chunk) in data.chunks(per).enumerate() {
            let packet = Packet::Media {
                header: MediaHeader {
                    transport_seq: self.next_seq,
                    media_seq: self.next_seq,
                    frame,
                    fragment: i as u16,
                    count: count as u16,
                    keyframe,
                    retransmission: false,
                    scheme: Scheme::Oracle,
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
        self.stats.keyframes += u64::from(keyframe);
        self.stats.quality = Some(quality);
        self.out
            .push_back(SenderOutput::Event(SenderEvent::FrameSent(SentFrame {
                frame,
                picture: p.picture,
                captured: p.captured,
                at: now,
                bytes: data.len(),
                fragments: count as u16,
                quality,
                keyframe,
                choice: Choice::Only,
                budget: None,
                recovery: false,
                states,
            })));
    }
}

impl SenderEndpoint for OracleSender {
    fn scheme(&self) -> &'static str {
        Scheme::Oracle.name()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
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

    /// A frame found becomes the codec state the next search starts from (with its
    /// quantizer), even if it is then too large to send. A failed encode (or a wrong result)
    /// drops its picture; a picture waiting meanwhile is encoded after the next picture
    /// arrives and its encode finishes.
    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let p = match self.encoding {
            Some((i, p)) if i == id => p,
            _ => return Err(InputError::UnknownRequest(id)),
        };
        self.encoding = None;
        let frame = match result.map(|o| self.found(id, o)) {
            Ok(Ok(frame)) => frame,
            Ok(Err(e)) => {
                self.drop_picture(now, p, DropReason::Failed);
                return Err(e);
            }
            Err(_) => {
                self.drop_picture(now, p, DropReason::Failed);
                return Ok(());
            }
        };
        match frame {
            Some(f) => {
                self.state = f.target.clone();
                self.last_quality = f.quality;
                if f.vp8().len().div_ceil(FRAGMENT_PAYLOAD) <= usize::from(MAX_FRAGMENTS) {
                    self.send(now, p, &f)
                } else {
                    self.drop_picture(now, p, DropReason::Failed)
                }
            }
            None => self.drop_picture(now, p, DropReason::WouldBeLate),
        }
        if let Some(next) = self.waiting.take() {
            self.start(now, next);
        }
        Ok(())
    }

    /// Feedback is ignored: the oracle already knows everything. Only another protocol's
    /// datagram is refused.
    fn handle_datagram(&mut self, _now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        match Packet::parse(datagram) {
            Ok(_) => Ok(()),
            Err(e) => Err(datagram_error(e.into())),
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, _now: Instant) -> SenderOutput {
        self.out
            .pop_front()
            .unwrap_or(SenderOutput::Timeout(Instant::FAR_FUTURE))
    }

    fn stats(&self) -> SenderStats {
        SenderStats {
            states_held: 1,
            max_states_held: 1,
            ..self.stats.common(None)
        }
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
        o.handle_picture(Instant::ZERO, 0, Instant::ZERO);
        let SenderOutput::Encode(req) = o.poll_output(Instant::ZERO) else {
            panic!()
        };
        let EncodeJob::FinestFitting { bytes, .. } = req.job else {
            panic!()
        };
        o.encoding = None;
        let p = Picture {
            picture: 0,
            captured: Instant::ZERO,
        };
        o.send_vp8(Instant::ZERO, p, &vec![0; bytes], true, Quality::BEST, None);
        // The link is booked until 80 ms: a picture at 0 ms has nothing left.
        assert_eq!(o.budget(Instant::ZERO, Instant::from_millis(100)), 0);
        // One captured at 20 ms may use 81..=100 ms.
        assert!(o.budget(Instant::from_millis(20), Instant::from_millis(120)) > 19 * 1400);
    }

    fn drain(o: &mut OracleSender) -> Vec<SenderOutput> {
        let mut out = vec![];
        loop {
            match o.poll_output(Instant::ZERO) {
                SenderOutput::Timeout(_) => return out,
                x => out.push(x),
            }
        }
    }

    /// The oracle keeps its codec state: each search starts from the state and quantizer of
    /// the last frame found, and its VP8 bytes (not the state-hash header) go on the wire.
    #[test]
    fn searches_continue_from_the_last_frame_found() {
        use salsify_codec::{search, Encoder, SyntheticSource};
        let (w, h) = (128, 96);
        let mut enc = Encoder::new(w, h).unwrap();
        let video = SyntheticSource::new(w, h, 30, 3).unwrap();
        let mut o = oracle(100);
        let mut last: Option<EncodedFrame> = None;
        for i in 0..3u64 {
            let now = Instant::from_millis(i * 33);
            o.handle_picture(now, i, now);
            let out = drain(&mut o);
            let Some(SenderOutput::Encode(req)) = out.into_iter().next() else {
                panic!("no request")
            };
            let EncodeJob::FinestFitting {
                source,
                bytes,
                start,
            } = req.job
            else {
                panic!("{:?}", req.job)
            };
            match &last {
                None => {
                    assert!(source.is_initial());
                    assert_eq!(start.index(), FIRST_SEARCH_START);
                }
                Some(f) => {
                    assert_eq!(source.hash(), f.target.hash());
                    assert_eq!(start, f.quality);
                }
            }
            let found =
                search::finest_fitting(&mut enc, &source, &video.frame(i), bytes / 4, start)
                    .unwrap()
                    .unwrap();
            let outcome = EncodeOutcome::Functional(vec![found.clone()]);
            o.handle_encoded(now, req.id, Ok(outcome)).unwrap();
            let out = drain(&mut o);
            let mut payload = vec![];
            for x in &out {
                if let SenderOutput::Transmit(d) = x {
                    let Ok(Packet::Media { header, payload: p }) = Packet::parse(d) else {
                        panic!()
                    };
                    assert_eq!(header.scheme, Scheme::Oracle);
                    payload.extend_from_slice(&p);
                }
            }
            assert_eq!(payload, found.vp8());
            let sent = out.iter().find_map(|x| match x {
                SenderOutput::Event(SenderEvent::FrameSent(s)) => Some(*s),
                _ => None,
            });
            let sent = sent.expect("frame sent");
            assert_eq!(sent.states, Some((found.source, found.target.hash())));
            assert_eq!(sent.bytes, found.vp8().len());
            last = Some(found);
        }
        assert_eq!(o.stats().frames_sent, 3);
    }

    #[test]
    fn wrong_results_are_refused_and_drop_the_picture() {
        let mut o = oracle(100);
        o.handle_picture(Instant::ZERO, 0, Instant::ZERO);
        let Some(SenderOutput::Encode(req)) = drain(&mut o).into_iter().next() else {
            panic!()
        };
        assert_eq!(
            o.handle_encoded(Instant::ZERO, req.id + 1, Ok(EncodeOutcome::Cbr(None))),
            Err(InputError::UnknownRequest(req.id + 1))
        );
        assert!(matches!(
            o.handle_encoded(Instant::ZERO, req.id, Ok(EncodeOutcome::Cbr(None))),
            Err(InputError::WrongResult { .. })
        ));
        assert!(matches!(
            drain(&mut o)[..],
            [SenderOutput::Event(SenderEvent::PictureDropped {
                reason: DropReason::Failed,
                ..
            })]
        ));
        // Nothing found: the picture would be late.
        o.handle_picture(Instant::ZERO, 1, Instant::ZERO);
        let Some(SenderOutput::Encode(req)) = drain(&mut o).into_iter().next() else {
            panic!()
        };
        o.handle_encoded(Instant::ZERO, req.id, Ok(EncodeOutcome::Functional(vec![])))
            .unwrap();
        assert!(matches!(
            drain(&mut o)[..],
            [SenderOutput::Event(SenderEvent::PictureDropped {
                reason: DropReason::WouldBeLate,
                ..
            })]
        ));
        assert_eq!(o.stats().dropped, 2);
        assert!(matches!(
            o.handle_datagram(Instant::ZERO, &[1, 2, 3]),
            Err(DatagramError::OtherProtocol { first_byte: 1 })
        ));
    }
}
