//! The Sprout receiver: Sprout's tick loop and forecast feedback, frame reassembly, and
//! decoding only from the exact state a frame names.

use std::collections::VecDeque;
use std::sync::Arc;

use salsify_codec::frame::{parse_frame, HEADER_LEN};
use salsify_codec::{Decoder, State, StateHash};
use salsify_endpoint::{
    DatagramError, Displayed, ReceiverEndpoint, ReceiverEvent, ReceiverOutput, ReceiverStats,
};
use salsify_sprout_model::{ArrivalObserver, ForecasterKind, ReceivedOrLost};
use salsify_time::{Duration, Instant};

use super::config::{scheme_name, SproutConfig, SproutMode};
use super::wire::{self, DataHeader, Datagram, Feedback, Payload, SproutWireError};
use crate::error::ReceiverBuildError;

/// Decoded states kept (frames may be encoded from an older, acknowledged one after loss).
const STATES_KEPT: usize = 32;
/// Most bytes one frame may reassemble to (bounds memory against a hostile sender).
const MAX_FRAME_BYTES: usize = 16 << 20;

/// A frame being reassembled.
#[derive(Debug)]
struct Assembly {
    frame: u32,
    first_sent_at: Instant,
    fragments: Vec<Option<Vec<u8>>>,
    bytes: usize,
}

/// The Sprout receiver, on the one endpoint shape.
#[derive(Debug)]
pub struct SproutReceiver {
    config: SproutConfig,
    decoder: Vp8,
    /// Learned from the first data datagram: session and forecaster.
    session: Option<(u16, ForecasterKind, SproutMode)>,
    observer: Option<ArrivalObserver>,
    accounting: ReceivedOrLost,
    assembly: Option<Assembly>,
    /// Frames up to this one are done (shown, lost or refused).
    done_through: Option<u32>,
    states: VecDeque<(u32, State)>,
    lost: Option<u32>,
    last_arrival: Option<Instant>,
    last_feedback_tick: Option<Instant>,
    out: VecDeque<Vec<u8>>,
    events: VecDeque<ReceiverEvent>,
    stats: ReceiverStats,
}

impl SproutReceiver {
    /// A receiver with `config`'s forecast parameters (the forecaster itself is the one the
    /// sender names).
    pub fn new(config: SproutConfig) -> Result<Self, ReceiverBuildError> {
        config.validate()?;
        let decoder = Decoder::new()
            .map(Vp8)
            .map_err(|source| ReceiverBuildError::Decoder {
                width: 0,
                height: 0,
                source,
            })?;
        Ok(SproutReceiver {
            config,
            decoder,
            session: None,
            observer: None,
            accounting: ReceivedOrLost::default(),
            assembly: None,
            done_through: None,
            states: VecDeque::new(),
            lost: None,
            last_arrival: None,
            last_feedback_tick: None,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: ReceiverStats::default(),
        })
    }

    fn refuse(&mut self, e: SproutWireError) -> DatagramError {
        self.stats.bad_datagrams += 1;
        DatagramError::rejected(e)
    }

    fn on_data(&mut self, now: Instant, h: DataHeader, payload: &[u8], len: usize) {
        let censor = self
            .config
            .censor_idle_ticks
            .unwrap_or(h.payload != Payload::Filler);
        let observer = self.observer.get_or_insert_with(|| {
            ArrivalObserver::new(
                &self.config.forecast,
                h.forecaster.build(&self.config.forecast),
            )
            .with_censored_idle_ticks(censor)
        });
        observer.on_arrival(
            now,
            len,
            Duration::from_millis(u64::from(h.time_to_next_ms)),
        );
        self.accounting.on_datagram(
            h.seq,
            len.min(u32::MAX as usize) as u32,
            u64::from(h.throwaway),
        );
        self.last_arrival = Some(now);
        if h.payload == Payload::Fragment {
            self.on_fragment(now, h, payload);
        }
    }

    fn is_done(&self, frame: u32) -> bool {
        self.done_through.is_some_and(|d| frame <= d)
    }

    fn give_up(&mut self, now: Instant, frame: u32) {
        self.stats.frames_lost += 1;
        self.lost = Some(self.lost.map_or(frame, |l| l.max(frame)));
        self.done_through = Some(self.done_through.map_or(frame, |d| d.max(frame)));
        self.events.push_back(ReceiverEvent::FramesLost {
            through: frame,
            count: 1,
            at: now,
        });
    }

    fn on_fragment(&mut self, now: Instant, h: DataHeader, payload: &[u8]) {
        if self.is_done(h.frame) {
            return;
        }
        // A fragment of a newer frame: the one being assembled will not complete (FIFO).
        if let Some(a) = &self.assembly {
            if h.frame > a.frame {
                let old = a.frame;
                self.assembly = None;
                self.give_up(now, old);
            }
        }
        let a = self.assembly.get_or_insert_with(|| Assembly {
            frame: h.frame,
            first_sent_at: Instant::from_micros(h.sent_at_us),
            fragments: vec![None; usize::from(h.fragments)],
            bytes: 0,
        });
        if a.fragments.len() != usize::from(h.fragments)
            || a.bytes + payload.len() > MAX_FRAME_BYTES
        {
            self.stats.bad_datagrams += 1;
            return;
        }
        let slot = &mut a.fragments[usize::from(h.fragment)];
        if slot.is_none() {
            a.bytes += payload.len();
            *slot = Some(payload.to_vec());
        }
        if a.fragments.iter().all(Option::is_some) {
            let a = self.assembly.take().expect("assembly checked above");
            let bytes: Vec<u8> = a.fragments.into_iter().flatten().flatten().collect();
            self.decode(now, a.frame, a.first_sent_at, bytes);
        }
    }

    fn decode(&mut self, now: Instant, frame: u32, first_sent_at: Instant, bytes: Vec<u8>) {
        let source = match parse_frame(&bytes) {
            Ok(info) => info.source,
            Err(_) => {
                self.stats.decode_failures += 1;
                return self.give_up(now, frame);
            }
        };
        let state = if source == StateHash::INITIAL {
            State::initial()
        } else {
            match self.states.iter().rev().find(|(_, s)| s.hash() == source) {
                Some((_, s)) => s.clone(),
                // Encoded from a state this receiver never reached (an earlier loss).
                None => return self.give_up(now, frame),
            }
        };
        match self.decoder.0.decode(&state, &bytes) {
            Ok((next, picture)) => {
                let target = next.hash();
                self.states.push_back((frame, next));
                while self.states.len() > STATES_KEPT {
                    self.states.pop_front();
                }
                self.stats.states_held = self.states.len();
                self.stats.max_states_held = self.stats.max_states_held.max(self.states.len());
                self.done_through = Some(frame);
                self.stats.frames_displayed += 1;
                self.events.push_back(ReceiverEvent::Display(Displayed {
                    frame,
                    at: now,
                    picture,
                    bytes: bytes.len(),
                    coded: Arc::from(&bytes[HEADER_LEN..]),
                    keyframe: source == StateHash::INITIAL,
                    first_sent_at: Some(first_sent_at),
                    states: Some((source, target)),
                }));
            }
            Err(_) => {
                self.stats.decode_failures += 1;
                self.give_up(now, frame);
            }
        }
    }

    /// One feedback datagram per receiver tick while data keeps arriving.
    fn feedback(&mut self, now: Instant) {
        let (Some((session, _, _)), Some(observer), Some(last)) =
            (self.session, self.observer.as_mut(), self.last_arrival)
        else {
            return;
        };
        if now > last + self.config.feedback_idle_limit {
            return;
        }
        let Some(tf) = observer.forecast(now) else {
            return;
        };
        if self.last_feedback_tick == Some(tf.tick_start) {
            return;
        }
        self.last_feedback_tick = Some(tf.tick_start);
        let decoded = self.states.back().map(|(f, s)| (*f, s.hash()));
        self.out.push_back(wire::emit_feedback(&Feedback {
            session,
            received_or_lost: self.accounting.count(),
            tick: tf.tick_start.as_micros(),
            counts: tf.forecast.counts,
            decoded,
            lost: self.lost,
        }));
        self.stats.feedback_sent += 1;
    }
}

impl ReceiverEndpoint for SproutReceiver {
    fn scheme(&self) -> &'static str {
        match self.session {
            Some((_, kind, mode)) => scheme_name(kind, mode),
            None => "sprout",
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.stats.datagrams += 1;
        let parsed = match wire::parse(datagram) {
            Ok(p) => p,
            Err(SproutWireError::Tag(first_byte)) => {
                self.stats.bad_datagrams += 1;
                return Err(DatagramError::OtherProtocol { first_byte });
            }
            Err(e) => return Err(self.refuse(e)),
        };
        let Datagram::Data(h, payload) = parsed else {
            return Err(self.refuse(SproutWireError::Field("kind (feedback at a receiver)")));
        };
        let mode = match h.payload {
            Payload::Filler => SproutMode::Bulk,
            _ => SproutMode::Video,
        };
        match self.session {
            None => self.session = Some((h.session, h.forecaster, mode)),
            Some((s, k, _)) if s != h.session || k != h.forecaster => {
                return Err(self.refuse(SproutWireError::Field("session")));
            }
            Some((s, k, SproutMode::Video)) if mode == SproutMode::Bulk => {
                self.session = Some((s, k, mode));
            }
            Some(_) => {}
        }
        self.on_data(now, h, payload, datagram.len());
        self.feedback(now);
        Ok(())
    }

    fn handle_timeout(&mut self, now: Instant) {
        if let Some(o) = self.observer.as_mut() {
            o.advance_to(now);
        }
        self.feedback(now);
    }

    fn poll_output(&mut self, now: Instant) -> ReceiverOutput {
        self.feedback(now);
        if let Some(d) = self.out.pop_front() {
            return ReceiverOutput::Transmit(d);
        }
        if let Some(e) = self.events.pop_front() {
            return ReceiverOutput::Event(e);
        }
        let active = self
            .last_arrival
            .is_some_and(|t| now <= t + self.config.feedback_idle_limit);
        match self.observer.as_ref().and_then(ArrivalObserver::next_tick) {
            Some(t) if active => ReceiverOutput::Timeout(t),
            _ => ReceiverOutput::Timeout(Instant::FAR_FUTURE),
        }
    }

    fn stats(&self) -> ReceiverStats {
        self.stats
    }
}

/// libvpx's decoder, which has no `Debug` of its own.
struct Vp8(Decoder);

impl std::fmt::Debug for Vp8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vp8Decoder")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use salsify_sprout_model::ForecasterKind;

    fn data(frame: u32, fragment: u16, fragments: u16, seq: u64, payload: &[u8]) -> Vec<u8> {
        wire::emit_data(
            &DataHeader {
                session: 1,
                payload: Payload::Fragment,
                forecaster: ForecasterKind::Sprout,
                seq,
                throwaway: 0,
                time_to_next_ms: 0,
                sent_at_us: 0,
                frame,
                fragment,
                fragments,
            },
            payload,
        )
    }

    fn drain(r: &mut SproutReceiver, now: Instant) -> (usize, usize) {
        let (mut feedback, mut shown) = (0, 0);
        loop {
            match r.poll_output(now) {
                ReceiverOutput::Transmit(_) => feedback += 1,
                ReceiverOutput::Event(ReceiverEvent::Display(_)) => shown += 1,
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => {
                    assert!(t > now, "a deadline in the past would spin the driver");
                    return (feedback, shown);
                }
            }
        }
    }

    #[test]
    fn feedback_flows_once_per_tick_and_stops_when_data_does() {
        let mut r = SproutReceiver::new(SproutConfig::default()).unwrap();
        let mut feedback = 0;
        for ms in 0..200u64 {
            let now = Instant::from_millis(ms);
            if ms % 5 == 0 && ms < 100 {
                r.handle_datagram(now, &data(ms as u32, 0, 2, ms * 100, &[1; 64]))
                    .unwrap();
            }
            r.handle_timeout(now);
            feedback += drain(&mut r, now).0;
        }
        // About one per 20 ms tick over the 200 ms (the idle limit is 5 s).
        assert!((8..=11).contains(&feedback), "{feedback}");
        let far = Instant::from_millis(60_000);
        r.handle_timeout(far);
        assert_eq!(
            drain(&mut r, far).0,
            0,
            "no feedback long after the data stopped"
        );
        assert_eq!(r.stats().frames_displayed, 0);
        assert!(r.stats().frames_lost > 0, "incomplete frames are given up");
    }

    proptest! {
        /// Any sequence of well-formed but arbitrary data datagrams: no panic, no deadline in
        /// the past, and nothing shown (garbage never decodes from any state).
        #[test]
        fn arbitrary_fragments_never_panic_or_show_garbage(
            steps in proptest::collection::vec(
                (0u32..20, 0u16..4, 1u16..4, any::<u64>(), proptest::collection::vec(any::<u8>(), 1..64), 0u64..30),
                1..60,
            )
        ) {
            let mut r = SproutReceiver::new(SproutConfig::default()).unwrap();
            let mut now = Instant::ZERO;
            for (frame, fragment, fragments, seq, payload, gap) in steps {
                now += Duration::from_millis(gap);
                let _ = r.handle_datagram(now, &data(frame, fragment.min(fragments - 1), fragments, seq, &payload));
                r.handle_timeout(now);
                let (_, shown) = drain(&mut r, now);
                prop_assert_eq!(shown, 0);
            }
        }

        /// Valid datagrams interleaved with mutated ones (any frame, fragment count, index
        /// and byte offset, far ahead or behind): what the receiver holds stays bounded
        /// (one frame in reassembly within its byte limit, at most its kept states), and one
        /// datagram or timeout yields a bounded number of outputs.
        #[test]
        fn memory_and_work_per_datagram_are_bounded(
            steps in proptest::collection::vec(
                (any::<bool>(), any::<u32>(), any::<u16>(), 1u16..=u16::MAX, any::<u64>()),
                1..200,
            )
        ) {
            let mut r = SproutReceiver::new(SproutConfig::default()).unwrap();
            for (i, (valid, frame, fragment, fragments, seq)) in steps.into_iter().enumerate() {
                let now = Instant::from_millis(i as u64 * 7);
                let d = if valid {
                    data(i as u32, 0, 1, i as u64 * 1000, &[3; 900])
                } else {
                    data(frame, fragment % fragments, fragments, seq, &[3; 900])
                };
                let _ = r.handle_datagram(now, &d);
                r.handle_timeout(now);
                prop_assert!(r.out.len() + r.events.len() <= 4);
                drain(&mut r, now);
                prop_assert!(r.states.len() <= STATES_KEPT);
                prop_assert!(r.assembly.as_ref().is_none_or(|a| a.bytes <= MAX_FRAME_BYTES));
            }
        }
    }
}
