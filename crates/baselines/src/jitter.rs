//! The transport half of the receiver every baseline shares ([`crate::BaselineReceiver`]):
//! transport feedback, NACK, keyframe requests (PLI) and a jitter buffer that hands out
//! complete frames in order, for the decoder.
//!
//! - Feedback: every transport sequence number from the last one reported up to the newest
//!   received, with its arrival time or "lost" — every `feedback_interval` (GCC), or after
//!   each packet (`None`: Copa needs per-packet ACKs).
//! - NACK: a gap in media sequence numbers is NACKed at once and again every `nack_retry`,
//!   up to `max_nack_retries` times (libwebrtc `NackRequester`: `kMaxNackRetries` = 10);
//!   then the receiver gives up on the frame and asks for a keyframe.
//! - Frames: frame `n` is handed out when complete and `n - 1` was; a complete keyframe
//!   further ahead lets it skip the frames in between (counted lost). After a decode error or
//!   a give-up, it waits for a keyframe, repeating the PLI every `pli_interval`.
//!   Simplification: no playout delay from a jitter estimate (libwebrtc's jitter buffer adds
//!   its Kalman-filtered jitter before rendering), so a frame is shown as soon as it is
//!   decodable — slightly flattering the conventional schemes' delay.

use std::collections::{BTreeMap, VecDeque};

use salsify_time::Instant;

use crate::error::PacketError;
use crate::receiver_config::ReceiverConfig;
use crate::stats::ReceiverCounters;
use crate::wire::{Feedback, MediaHeader, Packet, MAX_FEEDBACK_ENTRIES, MAX_NACK_ENTRIES};
use crate::wire_id::WireId;

/// Most missing packets tracked before giving up and asking for a keyframe (libwebrtc
/// `kMaxNackPackets` 1000).
pub const MAX_MISSING: usize = 1000;

/// What the jitter receiver hands out.
#[derive(Debug)]
pub(crate) enum Output {
    /// Send this datagram (feedback, NACK, PLI) to the sender.
    Transmit(Vec<u8>),
    /// Decode and show this frame now (frames come in order; a keyframe may jump ahead).
    /// If decoding fails, call `handle_decode_failed`.
    Frame {
        frame: u32,
        at: Instant,
        data: Vec<u8>,
        keyframe: bool,
    },
    /// Frames up to and including `through` will never be shown.
    FramesLost {
        through: u32,
        count: u32,
        at: Instant,
    },
    /// Nothing more until then (or the next datagram).
    Timeout(Instant),
}

/// What a receiver holds (see [`crate::BaselineReceiver::footprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Entries in its arrival, missing-packet and frame maps.
    pub entries: usize,
    /// Fragment slots of the frames being reassembled.
    pub fragment_slots: usize,
    /// Payload bytes held for reassembly.
    pub bytes: usize,
    /// Outputs waiting to be polled.
    pub queued: usize,
}

#[derive(Debug)]
struct Assembly {
    frags: Vec<Option<Vec<u8>>>,
    have: usize,
    keyframe: bool,
    /// Media sequence number of fragment 0.
    first_seq: u32,
}

impl Assembly {
    fn complete(&self) -> bool {
        self.have == self.frags.len()
    }
    fn last_seq(&self) -> u32 {
        self.first_seq.wrapping_add(self.frags.len() as u32 - 1)
    }
}

/// The jitter receiver.
#[derive(Debug)]
pub(crate) struct JitterReceiver {
    config: ReceiverConfig,
    /// The scheme named by the first media datagram.
    scheme: Option<WireId>,
    // Feedback.
    arrivals: BTreeMap<u32, Instant>,
    next_report: Option<u32>,
    highest_transport: Option<u32>,
    next_feedback: Option<Instant>,
    // NACK.
    highest_media: Option<u32>,
    missing: BTreeMap<u32, (u32, Instant)>,
    // Frames.
    frames: BTreeMap<u32, Assembly>,
    /// Payload bytes in `frames`.
    buffered_bytes: usize,
    /// Where the frame window starts: the first frame seen, then the next frame to show.
    frame_base: Option<u32>,
    next_frame: u32,
    want_keyframe: bool,
    next_pli: Option<Instant>,
    out: VecDeque<Output>,
    stats: ReceiverCounters,
}

impl JitterReceiver {
    /// A receiver waiting for the first keyframe.
    pub fn new(config: ReceiverConfig) -> Self {
        JitterReceiver {
            config,
            scheme: None,
            arrivals: BTreeMap::new(),
            next_report: None,
            highest_transport: None,
            next_feedback: None,
            highest_media: None,
            missing: BTreeMap::new(),
            frames: BTreeMap::new(),
            buffered_bytes: 0,
            frame_base: None,
            next_frame: 0,
            want_keyframe: true,
            next_pli: None,
            out: VecDeque::new(),
            stats: ReceiverCounters::default(),
        }
    }

    /// The scheme named by the first media datagram, once one arrived.
    pub fn scheme(&self) -> Option<WireId> {
        self.scheme
    }

    /// A datagram from the sender. Bad datagrams are counted and ignored (the error says
    /// why); feedback, frames and NACKs go on as for any datagram. Sequence and frame numbers
    /// are checked against the windows before anything is stored, so what one datagram costs
    /// is bounded by the configuration, not by the numbers it carries.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), PacketError> {
        self.stats.datagrams += 1;
        let result = match Packet::parse(datagram) {
            Ok(Packet::Media { header, payload }) => {
                self.check_media(&header, payload.len()).and_then(|()| {
                    self.scheme.get_or_insert(header.scheme);
                    self.on_transport(now, header.transport_seq);
                    self.on_media(now, header, payload)
                })
            }
            Ok(Packet::Padding { transport_seq, .. }) => self
                .check_transport(transport_seq)
                .map(|()| self.on_transport(now, transport_seq)),
            Ok(p) => Err(PacketError::Unexpected { kind: p.kind() }),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = &result {
            self.stats.bad_datagrams += 1;
            if matches!(e, PacketError::OutOfWindow { .. }) {
                self.stats.out_of_window += 1;
            }
        }
        if self.config.feedback_interval.is_none() {
            self.send_feedback();
        }
        self.release(now);
        self.send_nacks(now);
        result
    }

    /// What the receiver holds now: entries in its maps and payload bytes (for tests and
    /// fuzzing, which check it stays within the configuration).
    pub fn footprint(&self) -> Footprint {
        Footprint {
            entries: self.arrivals.len() + self.missing.len() + self.frames.len(),
            fragment_slots: self.frames.values().map(|a| a.frags.len()).sum(),
            bytes: self.buffered_bytes,
            queued: self.out.len(),
        }
    }

    /// The transport sequence number is within the window around the oldest unreported one.
    fn check_transport(&self, seq: u32) -> Result<(), PacketError> {
        let window = self.config.sequence_window;
        let ok = self.next_report.is_none_or(|base| {
            if seq >= base {
                seq - base < window
            } else {
                base - seq <= window
            }
        });
        ok.then_some(()).ok_or(PacketError::OutOfWindow {
            what: "transport sequence",
            value: seq,
        })
    }

    /// A media datagram's numbers are within the windows and its fragment fits the
    /// reassembly limits.
    fn check_media(&self, h: &MediaHeader, payload: usize) -> Result<(), PacketError> {
        self.check_transport(h.transport_seq)?;
        let window = self.config.sequence_window;
        if self
            .highest_media
            .is_some_and(|hi| h.media_seq.abs_diff(hi) > window)
        {
            return Err(PacketError::OutOfWindow {
                what: "media sequence",
                value: h.media_seq,
            });
        }
        let base = self.frame_base.unwrap_or(h.frame);
        if h.frame.wrapping_sub(base) >= self.config.frame_window && h.frame >= base {
            return Err(PacketError::OutOfWindow {
                what: "frame",
                value: h.frame,
            });
        }
        let new_frame = h.frame >= self.next_frame && !self.frames.contains_key(&h.frame);
        if (new_frame && self.frames.len() >= self.config.max_pending_frames)
            || self.buffered_bytes + payload > self.config.max_buffered_bytes
        {
            return Err(PacketError::OutOfWindow {
                what: "reassembly",
                value: h.frame,
            });
        }
        Ok(())
    }

    /// Decoding frame data handed out failed: ask for a keyframe.
    pub fn handle_decode_failed(&mut self, now: Instant) {
        self.request_keyframe(now);
    }

    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.next_feedback.is_some_and(|t| t <= now) {
            self.send_feedback();
            self.next_feedback = self
                .config
                .feedback_interval
                .map(|i| now + i)
                .filter(|_| self.highest_transport.is_some());
        }
        if self.want_keyframe && self.next_pli.is_some_and(|t| t <= now) {
            self.send_pli(now);
        }
        self.send_nacks(now);
        self.release(now);
    }

    /// The next output; ends with `Timeout`.
    pub fn poll_output(&mut self) -> Output {
        if let Some(o) = self.out.pop_front() {
            return o;
        }
        let nack = self.missing.values().map(|&(_, t)| t).min();
        let pli = self.next_pli.filter(|_| self.want_keyframe);
        let t = [self.next_feedback, nack, pli]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Instant::FAR_FUTURE);
        Output::Timeout(t)
    }

    /// Counters.
    pub fn stats(&self) -> ReceiverCounters {
        self.stats
    }

    fn on_transport(&mut self, now: Instant, seq: u32) {
        if self.next_report.is_none_or(|base| seq >= base) {
            self.arrivals.insert(seq, now);
        }
        if self.highest_transport.is_none_or(|h| seq > h) {
            self.highest_transport = Some(seq);
        }
        if self.next_report.is_none() {
            self.next_report = Some(seq);
        }
        if self.next_feedback.is_none() {
            self.next_feedback = self.config.feedback_interval.map(|i| now + i);
        }
    }

    fn send_feedback(&mut self) {
        let (Some(from), Some(to)) = (self.next_report, self.highest_transport) else {
            return;
        };
        // u64: `to` may be u32::MAX. The window keeps `to - from` below `sequence_window`.
        let (mut from, to) = (u64::from(from), u64::from(to));
        while from <= to {
            let n = (to - from + 1).min(MAX_FEEDBACK_ENTRIES as u64);
            let arrivals = (from..from + n)
                .map(|s| self.arrivals.get(&(s as u32)).copied())
                .collect();
            if let Ok(bytes) = Packet::Feedback(Feedback {
                base_seq: from as u32,
                arrivals,
            })
            .emit()
            {
                self.stats.feedback += 1;
                self.out.push_back(Output::Transmit(bytes));
            }
            from += n;
        }
        // Past u32::MAX nothing more can be reported; the window then refuses the rest.
        let next = u32::try_from(from).unwrap_or(u32::MAX);
        self.next_report = Some(next);
        self.arrivals = self.arrivals.split_off(&next);
    }

    fn on_media(
        &mut self,
        now: Instant,
        h: MediaHeader,
        payload: Vec<u8>,
    ) -> Result<(), PacketError> {
        let m = h.media_seq;
        if self.missing.remove(&m).is_some() {
            self.stats.recovered += 1;
        }
        match self.highest_media {
            Some(hi) if m > hi => {
                let gap = (m - hi - 1) as usize;
                if self.missing.len() + gap > MAX_MISSING {
                    self.missing.clear();
                    self.request_keyframe(now);
                } else {
                    for s in hi + 1..m {
                        self.missing.insert(s, (0, now));
                    }
                }
                self.highest_media = Some(m);
            }
            None => self.highest_media = Some(m),
            _ => {}
        }
        // The frame window starts at the first frame seen (a receiver may join a running
        // stream), then at the next frame to show.
        self.frame_base.get_or_insert(h.frame);
        if h.frame < self.next_frame {
            return Ok(()); // already shown or given up on
        }
        if self.want_keyframe && !h.keyframe && self.next_pli.is_none() {
            // Joined mid-stream (or after a gap the window refused): ask for a keyframe now
            // rather than wait for a loss to do it.
            self.request_keyframe(now);
        }
        let a = self.frames.entry(h.frame).or_insert_with(|| Assembly {
            frags: vec![None; usize::from(h.count)],
            have: 0,
            keyframe: h.keyframe,
            first_seq: m.wrapping_sub(u32::from(h.fragment)),
        });
        if a.frags.len() != usize::from(h.count) {
            return Err(PacketError::FragmentCount {
                frame: h.frame,
                expected: a.frags.len() as u16,
                got: h.count,
            });
        }
        let slot = &mut a.frags[usize::from(h.fragment)];
        if slot.is_none() {
            self.buffered_bytes += payload.len();
            *slot = Some(payload);
            a.have += 1;
        }
        Ok(())
    }

    fn send_nacks(&mut self, now: Instant) {
        let mut due = Vec::new();
        let mut give_up = false;
        for (&seq, entry) in self.missing.iter_mut() {
            if entry.1 > now {
                continue;
            }
            if entry.0 >= self.config.max_nack_retries {
                give_up = true;
                break;
            }
            entry.0 += 1;
            entry.1 = now + self.config.nack_retry;
            due.push(seq);
        }
        if give_up {
            self.missing.clear();
            self.request_keyframe(now);
            return;
        }
        for chunk in due.chunks(MAX_NACK_ENTRIES) {
            if let Ok(bytes) = Packet::Nack(chunk.to_vec()).emit() {
                self.stats.nacks += chunk.len() as u64;
                self.out.push_back(Output::Transmit(bytes));
            }
        }
    }

    fn request_keyframe(&mut self, now: Instant) {
        self.want_keyframe = true;
        if self.next_pli.is_none_or(|t| t <= now) {
            self.send_pli(now);
        }
    }

    fn send_pli(&mut self, now: Instant) {
        if let Ok(bytes) = Packet::Pli.emit() {
            self.stats.plis += 1;
            self.out.push_back(Output::Transmit(bytes));
        }
        self.next_pli = Some(now + self.config.pli_interval);
    }

    /// Forgets every frame being reassembled up to `frame`, and their bytes.
    fn drop_frames_through(&mut self, frame: u32) {
        let kept = match frame.checked_add(1) {
            Some(above) => self.frames.split_off(&above),
            None => BTreeMap::new(),
        };
        let dropped = std::mem::replace(&mut self.frames, kept);
        for a in dropped.values() {
            self.buffered_bytes -= a.frags.iter().flatten().map(Vec::len).sum::<usize>();
        }
    }

    /// Hands out every frame that can be shown now.
    fn release(&mut self, now: Instant) {
        loop {
            let next_ok = !self.want_keyframe
                && self
                    .frames
                    .get(&self.next_frame)
                    .is_some_and(Assembly::complete);
            let target = if next_ok {
                self.next_frame
            } else {
                // A complete keyframe at or after next_frame (for a fresh start, after loss).
                match self
                    .frames
                    .iter()
                    .find(|(_, a)| a.keyframe && a.complete())
                    .map(|(&f, _)| f)
                {
                    Some(k) if k > self.next_frame || self.want_keyframe => k,
                    _ => return,
                }
            };
            if target > self.next_frame {
                let count = target - self.next_frame;
                // Frames never seen at the start (before the first keyframe) are not "lost"
                // unless something of them arrived; count them all, as the runtime maps
                // frame numbers to pictures anyway.
                self.stats.frames_lost += u64::from(count);
                self.out.push_back(Output::FramesLost {
                    through: target - 1,
                    count,
                    at: now,
                });
            }
            let a = self.frames.remove(&target).expect("chosen above");
            self.drop_frames_through(target);
            let last = a.last_seq();
            self.missing = match last.checked_add(1) {
                Some(above) => self.missing.split_off(&above),
                None => BTreeMap::new(),
            };
            self.buffered_bytes -= a.frags.iter().flatten().map(Vec::len).sum::<usize>();
            self.next_frame = target.saturating_add(1);
            self.frame_base = Some(self.next_frame);
            if a.keyframe {
                self.want_keyframe = false;
                self.next_pli = None;
            }
            self.stats.frames += 1;
            let data = a.frags.into_iter().flatten().flatten().collect();
            self.out.push_back(Output::Frame {
                frame: target,
                at: now,
                data,
                keyframe: a.keyframe,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn media(t: u32, m: u32, frame: u32, fragment: u16, count: u16, key: bool) -> Vec<u8> {
        Packet::Media {
            header: MediaHeader {
                transport_seq: t,
                media_seq: m,
                frame,
                fragment,
                count,
                keyframe: key,
                retransmission: false,
                scheme: WireId::Conventional,
            },
            payload: vec![frame as u8; 3],
        }
        .emit()
        .unwrap()
    }

    fn drain(r: &mut JitterReceiver) -> (Vec<Output>, Vec<Packet>) {
        let (mut ev, mut tx) = (vec![], vec![]);
        loop {
            match r.poll_output() {
                Output::Transmit(b) => tx.push(Packet::parse(&b).unwrap()),
                Output::Timeout(_) => return (ev, tx),
                e => ev.push(e),
            }
        }
    }

    #[test]
    fn in_order_frames_nack_on_gap_and_recover() {
        let mut r = JitterReceiver::new(ReceiverConfig::default());
        let t = Instant::from_millis;
        assert_eq!(r.scheme(), None);
        r.handle_datagram(t(0), &media(0, 0, 0, 0, 2, true))
            .unwrap();
        assert_eq!(r.scheme(), Some(WireId::Conventional));
        r.handle_datagram(t(1), &media(1, 1, 0, 1, 2, true))
            .unwrap();
        let (ev, _) = drain(&mut r);
        assert!(matches!(
            ev[..],
            [Output::Frame {
                frame: 0,
                keyframe: true,
                ..
            }]
        ));
        // Media seq 2 (frame 1) lost; frame 2 arrives: NACK 2, frame 2 waits.
        r.handle_datagram(t(40), &media(3, 3, 2, 0, 1, false))
            .unwrap();
        let (ev, tx) = drain(&mut r);
        assert!(ev.is_empty());
        assert!(tx.contains(&Packet::Nack(vec![2])));
        // The retransmission fills the hole: frames 1 and 2 in order.
        r.handle_datagram(t(80), &media(4, 2, 1, 0, 1, false))
            .unwrap();
        let (ev, _) = drain(&mut r);
        let shown: Vec<u32> = ev
            .iter()
            .filter_map(|e| match e {
                Output::Frame { frame, .. } => Some(*frame),
                _ => None,
            })
            .collect();
        assert_eq!(shown, [1, 2]);
        assert_eq!(r.stats().recovered, 1);
        // Periodic feedback reports every transport seq, transport seq 2 as lost.
        r.handle_timeout(t(100));
        let (_, tx) = drain(&mut r);
        let Some(Packet::Feedback(f)) = tx.into_iter().find(|p| matches!(p, Packet::Feedback(_)))
        else {
            panic!("no feedback");
        };
        assert_eq!(f.base_seq, 0);
        assert_eq!(f.arrivals.len(), 5);
        assert_eq!(f.arrivals[2], None);
    }

    #[test]
    fn gives_up_after_retries_and_asks_for_a_keyframe() {
        let cfg = ReceiverConfig {
            max_nack_retries: 2,
            ..ReceiverConfig::default()
        };
        let mut r = JitterReceiver::new(cfg);
        let t = Instant::from_millis;
        r.handle_datagram(t(0), &media(0, 0, 0, 0, 1, true))
            .unwrap();
        r.handle_datagram(t(10), &media(2, 2, 2, 0, 1, false))
            .unwrap();
        drain(&mut r);
        r.handle_timeout(t(110));
        drain(&mut r);
        r.handle_timeout(t(210));
        let (_, tx) = drain(&mut r);
        assert!(tx.contains(&Packet::Pli), "{tx:?}");
        // A keyframe (frame 3) lets it continue; frames 1 and 2 are lost.
        r.handle_datagram(t(300), &media(3, 3, 3, 0, 1, true))
            .unwrap();
        let (ev, _) = drain(&mut r);
        assert!(matches!(
            ev[0],
            Output::FramesLost {
                through: 2,
                count: 2,
                ..
            }
        ));
        assert!(matches!(ev[1], Output::Frame { frame: 3, .. }));
    }

    /// Bad datagrams are counted, refused with a typed error, and feedback goes on.
    #[test]
    fn bad_datagrams_are_counted_and_named() {
        let cfg = ReceiverConfig {
            feedback_interval: None,
            ..ReceiverConfig::default()
        };
        let mut r = JitterReceiver::new(cfg);
        let t = Instant::from_millis;
        r.handle_datagram(t(0), &media(0, 0, 0, 0, 2, true))
            .unwrap();
        drain(&mut r);
        assert_eq!(
            r.handle_datagram(t(1), &media(1, 1, 0, 1, 3, true)),
            Err(PacketError::FragmentCount {
                frame: 0,
                expected: 2,
                got: 3
            })
        );
        // Per-packet feedback still reports it (it arrived).
        let (_, tx) = drain(&mut r);
        assert!(
            matches!(&tx[..], [Packet::Feedback(f)] if f.base_seq == 1),
            "{tx:?}"
        );
        assert!(matches!(
            r.handle_datagram(t(2), &Packet::Pli.emit().unwrap()),
            Err(PacketError::Unexpected { kind: "pli" })
        ));
        assert!(matches!(
            r.handle_datagram(t(3), &[1, 1, 0]),
            Err(PacketError::Wire(crate::wire::WireError::Tag(1)))
        ));
        let s = r.stats();
        assert_eq!((s.datagrams, s.bad_datagrams), (4, 3));
    }

    /// The probe's case: one valid datagram, then the same with its transport sequence
    /// number set to 0xf0000000. Before the window, feedback iterated over the whole gap
    /// (about 4e9 numbers) and never returned.
    #[test]
    fn a_sequence_jump_is_dropped_and_the_stream_goes_on() {
        for feedback_interval in [None, ReceiverConfig::default().feedback_interval] {
            let cfg = ReceiverConfig {
                feedback_interval,
                ..ReceiverConfig::default()
            };
            let mut r = JitterReceiver::new(cfg);
            let t = Instant::from_millis;
            r.handle_datagram(t(0), &media(0, 0, 0, 0, 1, true))
                .unwrap();
            drain(&mut r);
            for (tseq, mseq, frame) in [
                (0xf000_0000, 1, 1),
                (1, 0xf000_0000, 1),
                (1, 1, 0xf000_0000),
            ] {
                let e = r.handle_datagram(t(1), &media(tseq, mseq, frame, 0, 1, false));
                assert!(matches!(e, Err(PacketError::OutOfWindow { .. })), "{e:?}");
            }
            r.handle_timeout(t(200));
            let (_, tx) = drain(&mut r);
            assert!(tx.len() < 4, "{tx:?}");
            r.handle_datagram(t(210), &media(1, 1, 1, 0, 1, false))
                .unwrap();
            let (ev, _) = drain(&mut r);
            assert!(matches!(ev[..], [Output::Frame { frame: 1, .. }]), "{ev:?}");
            assert_eq!(r.stats().out_of_window, 3);
        }
    }

    /// A receiver that joins a stream mid-way takes frames numbered from where it joined,
    /// and asks for a keyframe at once.
    #[test]
    fn a_receiver_joining_mid_stream_asks_for_a_keyframe() {
        let mut r = JitterReceiver::new(ReceiverConfig::default());
        let t = Instant::from_millis;
        r.handle_datagram(t(0), &media(90_000, 90_000, 5000, 0, 1, false))
            .unwrap();
        let (_, tx) = drain(&mut r);
        assert!(tx.contains(&Packet::Pli), "{tx:?}");
        r.handle_datagram(t(30), &media(90_001, 90_001, 5001, 0, 1, true))
            .unwrap();
        let (ev, _) = drain(&mut r);
        assert!(
            ev.iter()
                .any(|e| matches!(e, Output::Frame { frame: 5001, .. })),
            "{ev:?}"
        );
    }

    mod bounded {
        use super::*;
        use crate::wire::{MAX_FEEDBACK_ENTRIES, MAX_NACK_ENTRIES};
        use proptest::prelude::*;

        /// A datagram of a valid stream (frame `i`, one or two fragments) or a mutation of
        /// it: any numbers, counts and flags.
        fn datagrams() -> impl Strategy<Value = Vec<(bool, u32, u32, u32, u16, u16, bool)>> {
            let mutated = (
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                any::<u16>(),
                1u16..=4096,
            );
            proptest::collection::vec(
                (any::<bool>(), mutated, any::<bool>())
                    .prop_map(|(valid, (a, b, c, d, e), k)| (valid, a, b, c, d, e, k)),
                1..200,
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            /// Whatever arrives, valid datagrams interleaved with mutated ones, what the
            /// receiver holds stays within its configuration and one datagram (or one
            /// timeout) causes a bounded number of outputs.
            #[test]
            fn memory_and_work_per_datagram_are_bounded(plan in datagrams(), per_packet in any::<bool>()) {
                let cfg = ReceiverConfig {
                    feedback_interval: (!per_packet).then(|| salsify_time::Duration::from_millis(50)),
                    sequence_window: 512,
                    frame_window: 64,
                    max_pending_frames: 8,
                    max_buffered_bytes: 4096,
                    ..ReceiverConfig::default()
                };
                let mut r = JitterReceiver::new(cfg);
                let max_outputs = cfg.sequence_window as usize / MAX_FEEDBACK_ENTRIES
                    + MAX_MISSING / MAX_NACK_ENTRIES
                    + 2 * cfg.max_pending_frames
                    + 8;
                let mut valid = 0u32;
                for (i, &(ok, t, m, f, frag, count, key)) in plan.iter().enumerate() {
                    let now = Instant::from_millis(i as u64 * 7);
                    let d = if ok {
                        valid += 1;
                        media(valid, valid, valid, 0, 1, valid % 10 == 1)
                    } else {
                        media(t, m, f, frag % count, count, key)
                    };
                    let _ = r.handle_datagram(now, &d);
                    let fp = r.footprint();
                    prop_assert!(fp.queued <= max_outputs, "{fp:?}");
                    let (ev, tx) = drain(&mut r);
                    prop_assert!(ev.len() + tx.len() <= max_outputs);
                    r.handle_timeout(now + salsify_time::Duration::from_millis(60));
                    let (ev, tx) = drain(&mut r);
                    prop_assert!(ev.len() + tx.len() <= max_outputs);
                    let fp = r.footprint();
                    prop_assert!(fp.bytes <= cfg.max_buffered_bytes);
                    prop_assert!(fp.fragment_slots <= cfg.max_pending_frames * 4096);
                    prop_assert!(
                        fp.entries
                            <= 2 * cfg.sequence_window as usize + 1
                                + MAX_MISSING
                                + cfg.max_pending_frames,
                        "{fp:?}"
                    );
                }
            }
        }
    }
}
