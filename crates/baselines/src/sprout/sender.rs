//! The Sprout sender: Sprout's window over video frames sized to it, or over bulk filler.

use std::collections::VecDeque;

use salsify_codec::{EncodedFrame, Quality, State, StateHash};
use salsify_endpoint::{
    AudioMeter, Choice, DatagramError, Diagnostic, DropReason, EncodeFailed, EncodeJob,
    EncodeOutcome, EncodeRequest, InputError, SenderEndpoint, SenderEvent, SenderOutput,
    SenderStats, SentFrame,
};
use salsify_sprout_model::{ForecasterKind, SendLog, SenderWindow};
use salsify_time::{Duration, Instant};

use super::config::{scheme_name, SproutConfig, SproutMode};
use super::wire::{self, DataHeader, Datagram, Payload, DATA_HEADER};
use crate::error::ConfigError;

/// Most fragments in one frame (the wire's index is 16 bits; a frame this large is refused).
const MAX_FRAGMENTS: usize = 4096;
/// Sent states kept for recovery (frames not yet known decoded or lost).
const MAX_SENT_STATES: usize = 64;
/// Audio sent this recently is taken as still queued ahead of a new frame: Sprout's delay
/// target, the time within which its window means its bytes to arrive.
const AUDIO_HORIZON: Duration = Duration::from_millis(100);

/// The Sprout sender (video or bulk), on the one endpoint shape.
#[derive(Debug)]
pub struct SproutSender {
    config: SproutConfig,
    kind: ForecasterKind,
    session: u16,
    frame_interval: Duration,
    window: SenderWindow,
    log: SendLog,
    out: VecDeque<Vec<u8>>,
    events: VecDeque<SenderEvent>,
    /// The encode under way: (request id, picture, captured, window asked for).
    encoding: Option<(u64, u64, Instant, usize)>,
    /// The encode request not yet handed to the driver.
    pending_request: Option<EncodeRequest>,
    next_request: u64,
    next_frame: u32,
    /// The state the next frame is encoded from (the receiver's, as far as is known).
    source: State,
    /// States reached by frames sent and not yet known decoded, oldest first.
    sent_states: VecDeque<(u32, State)>,
    /// The newest frame the receiver decoded, and its state.
    acked: Option<(u32, State)>,
    /// Losses of frames before this one were handled already.
    recovered_from: u32,
    last_quality: Quality,
    last_send: Option<Instant>,
    stats: SenderStats,
    /// Payload bytes per datagram now: `config.fragment_payload` until the path is said to
    /// carry less ([`SenderEndpoint::set_max_datagram`]).
    payload: usize,
    /// The call's audio, sent by the driver on the same path.
    audio: AudioMeter,
}

impl SproutSender {
    /// A sender of session `session` for a camera delivering a picture every
    /// `frame_interval`; `kind` is the forecaster its receiver runs.
    pub fn new(
        config: SproutConfig,
        kind: ForecasterKind,
        session: u16,
        frame_interval: Duration,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let initial = kind.initial_forecast(&config.forecast);
        let window = SenderWindow::new(
            &config.forecast,
            config.lookahead_ticks,
            config.drain,
            initial,
            Instant::ZERO,
        );
        Ok(SproutSender {
            audio: AudioMeter::default(),
            payload: config.fragment_payload,
            config,
            kind,
            session,
            frame_interval,
            window,
            log: SendLog::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            encoding: None,
            pending_request: None,
            next_request: 0,
            next_frame: 0,
            source: State::initial(),
            sent_states: VecDeque::new(),
            acked: None,
            recovered_from: 0,
            last_quality: Quality::clamped(64, Quality::BEST, Quality::WORST),
            last_send: None,
            stats: SenderStats::default(),
        })
    }

    /// The forecaster the receiver runs.
    pub fn forecaster(&self) -> ForecasterKind {
        self.kind
    }

    /// Bytes the window allows now, less what waits to be sent.
    /// The window less what waits to be handed out and the audio that may still be ahead
    /// of a new frame in the queue (sent within Sprout's 100 ms delay target).
    fn room(&mut self, now: Instant) -> usize {
        let queued: usize = self.out.iter().map(Vec::len).sum();
        let audio = match self.audio.total() {
            0 => 0,
            _ => self
                .audio
                .bytes_since(now.checked_sub(AUDIO_HORIZON).unwrap_or(Instant::ZERO)),
        };
        self.window.window(now).saturating_sub(queued + audio)
    }

    fn header(&self, payload: Payload, frame: u32, fragment: u16, fragments: u16) -> DataHeader {
        DataHeader {
            session: self.session,
            payload,
            forecaster: self.kind,
            seq: 0,
            throwaway: 0,
            time_to_next_ms: 0,
            sent_at_us: 0,
            frame,
            fragment,
            fragments,
        }
    }

    /// Stamps sequence, throwaway and send time on a datagram as it leaves, and counts it.
    fn transmit(&mut self, now: Instant, mut h: DataHeader, payload: &[u8], ttn: Duration) {
        h.seq = self.window.next_seq();
        h.throwaway = self.log.on_send(now, h.seq).min(u64::from(u32::MAX)) as u32;
        h.time_to_next_ms = ttn.as_millis().min(u128::from(u16::MAX)) as u16;
        h.sent_at_us = now.as_micros();
        let datagram = wire::emit_data(&h, payload);
        self.window.on_sent(datagram.len());
        self.stats.datagrams_sent += 1;
        self.last_send = Some(now);
        self.out.push_back(datagram);
    }

    fn heartbeat_due(&self, now: Instant) -> bool {
        self.last_send
            .is_none_or(|t| now >= t + self.config.heartbeat_interval)
    }

    fn send_heartbeat(&mut self, now: Instant) {
        let h = self.header(Payload::Heartbeat, 0, 0, 0);
        self.transmit(now, h, &[], self.config.heartbeat_interval);
    }

    /// Bulk: filler while the window allows; the last datagram of a burst says the sender
    /// may be idle until its heartbeat.
    fn send_bulk(&mut self, now: Instant) {
        let mut room = self.room(now);
        let full = DATA_HEADER + self.payload;
        let filler = vec![0u8; self.payload];
        while room > DATA_HEADER {
            let size = room.min(full);
            room -= size;
            let last = room <= DATA_HEADER;
            let ttn = if last {
                self.config.heartbeat_interval
            } else {
                Duration::ZERO
            };
            let h = self.header(Payload::Filler, 0, 0, 0);
            self.transmit(now, h, &filler[..size - DATA_HEADER], ttn);
        }
    }

    fn send_frame(
        &mut self,
        now: Instant,
        picture: u64,
        captured: Instant,
        budget: usize,
        f: &EncodedFrame,
    ) {
        let frame = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        let chunks: Vec<&[u8]> = f.bytes.chunks(self.payload).collect();
        let n = chunks.len() as u16;
        for (i, chunk) in chunks.iter().enumerate() {
            let ttn = if i + 1 == chunks.len() {
                self.frame_interval
            } else {
                Duration::ZERO
            };
            let h = self.header(Payload::Fragment, frame, i as u16, n);
            self.transmit(now, h, chunk, ttn);
        }
        self.source = f.target.clone();
        self.sent_states.push_back((frame, f.target.clone()));
        while self.sent_states.len() > MAX_SENT_STATES {
            self.sent_states.pop_front();
        }
        self.last_quality = f.quality;
        self.stats.frames_sent += 1;
        self.stats.keyframes += u64::from(f.keyframe);
        self.stats.quality = Some(f.quality);
        self.stats.states_held = self.sent_states.len() + usize::from(self.acked.is_some());
        self.stats.max_states_held = self.stats.max_states_held.max(self.stats.states_held);
        self.events.push_back(SenderEvent::FrameSent(SentFrame {
            frame,
            picture,
            captured,
            at: now,
            bytes: f.len(),
            fragments: n,
            quality: f.quality,
            keyframe: f.keyframe,
            choice: Choice::Only,
            budget: Some(budget),
            recovery: false,
            states: Some((f.source, f.target.hash())),
        }));
    }

    fn drop_picture(&mut self, now: Instant, picture: u64, reason: DropReason) {
        self.stats.dropped += 1;
        self.events.push_back(SenderEvent::PictureDropped {
            picture,
            at: now,
            reason,
        });
    }

    /// What the receiver said it decoded and lost: acknowledged states, and recovery from
    /// the newest of them after a loss of a frame sent since the last recovery.
    fn learn_states(&mut self, now: Instant, decoded: Option<(u32, StateHash)>, lost: Option<u32>) {
        if let Some((frame, hash)) = decoded {
            let newer = self.acked.as_ref().is_none_or(|(f, _)| frame > *f);
            if newer {
                if let Some(pos) = self
                    .sent_states
                    .iter()
                    .position(|(f, s)| *f == frame && s.hash() == hash)
                {
                    let (f, s) = self.sent_states[pos].clone();
                    self.sent_states.drain(..=pos);
                    self.acked = Some((f, s));
                }
            }
        }
        if let Some(frame) = lost {
            if frame >= self.recovered_from && frame < self.next_frame {
                self.recover(now);
            }
        }
    }

    /// A frame sent since the last recovery is lost: the next is encoded from the newest
    /// state the receiver acknowledged (the initial state, a keyframe, if none), and losses
    /// of the frames sent before now are handled.
    fn recover(&mut self, now: Instant) {
        self.source = self
            .acked
            .as_ref()
            .map_or_else(State::initial, |(_, s)| s.clone());
        self.recovered_from = self.next_frame;
        self.stats.recoveries += 1;
        self.events.push_back(SenderEvent::RecoveryStarted {
            at: now,
            until: now,
        });
    }
}

impl SenderEndpoint for SproutSender {
    fn scheme(&self) -> &'static str {
        scheme_name(self.kind, self.config.mode)
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.stats.pictures += 1;
        if self.config.mode == SproutMode::Bulk {
            return;
        }
        if self.encoding.is_some() {
            self.drop_picture(now, picture, DropReason::EncoderBusy);
            return;
        }
        let room = self.room(now);
        if room < self.config.min_frame_bytes {
            self.stats.skipped += 1;
            self.events.push_back(SenderEvent::PictureSkipped {
                picture,
                captured,
                at: now,
                budget: Some(room),
            });
            return;
        }
        // Leave room for the headers of the fragments the frame will need.
        let fragments = room.div_ceil(DATA_HEADER + self.payload);
        let bytes = room.saturating_sub(fragments * DATA_HEADER);
        let id = self.next_request;
        self.next_request += 1;
        self.encoding = Some((id, picture, captured, room));
        // The request itself goes out through poll_output.
        self.pending_request = Some(EncodeRequest {
            id,
            picture,
            captured,
            job: EncodeJob::SizeTarget {
                source: self.source.clone(),
                bytes,
                hint: self.last_quality,
            },
        });
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let (picture, captured, budget) = match self.encoding {
            Some((i, p, c, b)) if i == id => (p, c, b),
            _ => return Err(InputError::UnknownRequest(id)),
        };
        self.encoding = None;
        let frame = match result {
            Ok(EncodeOutcome::Functional(mut frames)) if frames.len() == 1 => frames.remove(0),
            Ok(_) => {
                self.drop_picture(now, picture, DropReason::Failed);
                return Err(InputError::WrongResult {
                    id,
                    why: "expected one functional frame".into(),
                });
            }
            Err(_) => {
                self.drop_picture(now, picture, DropReason::Failed);
                return Ok(());
            }
        };
        if frame.source != StateHash::INITIAL && frame.source != self.source.hash() {
            // Recovery moved the source while this encode ran: its frame would not decode.
            self.drop_picture(now, picture, DropReason::Failed);
            return Ok(());
        }
        if frame.len().div_ceil(self.payload) > MAX_FRAGMENTS {
            self.drop_picture(now, picture, DropReason::Failed);
            return Ok(());
        }
        self.send_frame(now, picture, captured, budget, &frame);
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        let parsed = wire::parse(datagram).map_err(|e| match e {
            wire::SproutWireError::Tag(first_byte) => DatagramError::OtherProtocol { first_byte },
            e => {
                self.stats.bad_datagrams += 1;
                DatagramError::rejected(e)
            }
        })?;
        let Datagram::Feedback(f) = parsed else {
            self.stats.bad_datagrams += 1;
            return Err(DatagramError::rejected(wire::SproutWireError::Field(
                "kind (data at a sender)",
            )));
        };
        if f.session != self.session {
            self.stats.bad_datagrams += 1;
            return Err(DatagramError::rejected(wire::SproutWireError::Field(
                "session",
            )));
        }
        if self
            .window
            .on_forecast(now, f.tick, f.received_or_lost, &f.counts)
        {
            self.stats.feedback += 1;
            self.learn_states(now, f.decoded, f.lost);
        } else {
            self.stats.stale_feedback += 1;
        }
        Ok(())
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.audio.on_sent(now, bytes);
    }

    /// Datagrams of at most `fragment_payload` or what the path carries, whichever is less
    /// (one payload byte at least), from now on: frames are cut and the window's room turned
    /// into fragments at that size, and bulk filler fills it. After a decrease the datagrams
    /// waiting to be handed out that no longer fit are dropped, with every other waiting
    /// fragment of their frames (they cannot arrive whole); a frame so dropped is a loss the
    /// sender knows of at once, and it recovers as from a reported one.
    fn set_max_datagram(&mut self, now: Instant, bytes: usize) {
        let payload =
            salsify_endpoint::fragment_payload(self.config.fragment_payload, bytes, DATA_HEADER);
        if payload == self.payload {
            return;
        }
        self.payload = payload;
        let max = DATA_HEADER + payload;
        let frame_of = |d: &[u8]| match wire::parse(d) {
            Ok(Datagram::Data(h, _)) if h.payload == Payload::Fragment => Some(h.frame),
            _ => None,
        };
        let lost: Vec<u32> = self
            .out
            .iter()
            .filter(|d| d.len() > max)
            .filter_map(|d| frame_of(d))
            .collect();
        let before = self.out.len();
        self.out
            .retain(|d| d.len() <= max && frame_of(d).is_none_or(|f| !lost.contains(&f)));
        let dropped = (before - self.out.len()) as u64;
        self.stats.datagrams_sent = self.stats.datagrams_sent.saturating_sub(dropped);
        if !lost.is_empty() {
            self.recover(now);
        }
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        if let Some(req) = self.pending_request.take() {
            return SenderOutput::Encode(req);
        }
        if self.config.mode == SproutMode::Bulk && self.out.is_empty() {
            self.send_bulk(now);
        }
        if self.out.is_empty() && self.heartbeat_due(now) {
            self.send_heartbeat(now);
        }
        if let Some(d) = self.out.pop_front() {
            return SenderOutput::Transmit(d);
        }
        if let Some(e) = self.events.pop_front() {
            return SenderOutput::Event(e);
        }
        let heartbeat = self
            .last_send
            .map_or(now, |t| t + self.config.heartbeat_interval);
        let next = match self.config.mode {
            SproutMode::Bulk => heartbeat.min(self.window.next_change()),
            SproutMode::Video => heartbeat,
        };
        // Never a deadline that has passed: the driver would call back at once, forever.
        SenderOutput::Timeout(next.max(now + Duration::from_micros(1)))
    }

    fn stats(&self) -> SenderStats {
        self.stats
    }

    fn diagnostics(&self) -> Vec<Diagnostic> {
        let counts = self.window.counts();
        vec![
            Diagnostic {
                name: "queue_estimate_bytes",
                value: self.window.queue_estimate(),
            },
            Diagnostic {
                name: "forecast_100ms_packets",
                value: f64::from(counts.get(4).copied().unwrap_or(0)),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use salsify_codec::Image;

    use super::*;

    fn sender(mode: SproutMode) -> SproutSender {
        let config = SproutConfig {
            mode,
            ..SproutConfig::default()
        };
        SproutSender::new(config, ForecasterKind::Sprout, 7, Duration::from_millis(33)).unwrap()
    }

    /// A functional frame of `len` bytes on the wire.
    fn frame(len: usize) -> EncodedFrame {
        let mut bytes = vec![0; salsify_codec::frame::HEADER_LEN];
        bytes.resize(len, 1);
        EncodedFrame {
            bytes,
            source: StateHash::INITIAL,
            target: State::from_reference(Image::new(16, 16).unwrap()),
            quality: Quality::new(40).unwrap(),
            keyframe: true,
        }
    }

    /// The datagrams, events and encode requests until the next deadline.
    fn drain(s: &mut SproutSender, now: Instant) -> (Vec<Vec<u8>>, Vec<SenderEvent>, Vec<u64>) {
        let (mut datagrams, mut events, mut requests) = (vec![], vec![], vec![]);
        loop {
            match s.poll_output(now) {
                SenderOutput::Transmit(d) => datagrams.push(d),
                SenderOutput::Event(e) => events.push(e),
                SenderOutput::Encode(r) => requests.push(r.id),
                SenderOutput::Timeout(_) => return (datagrams, events, requests),
            }
        }
    }

    /// Frames of 3000 bytes, coded for picture `picture` at `now`; the datagrams they make.
    fn send(s: &mut SproutSender, now: Instant, picture: u64) -> Vec<Vec<u8>> {
        s.handle_picture(now, picture, now);
        let (_, _, requests) = drain(s, now);
        let id = *requests.first().expect("the window has room for a frame");
        let outcome = EncodeOutcome::Functional(vec![frame(3000)]);
        s.handle_encoded(now, id, Ok(outcome)).unwrap();
        drain(s, now).0
    }

    #[test]
    fn datagrams_fit_a_smaller_path_and_frames_cut_for_a_larger_one_are_recovered_from() {
        let t = Instant::ZERO;
        // Told first: a 3000-byte frame goes in 564-byte fragments behind the 36-byte header.
        let mut s = sender(SproutMode::Video);
        s.set_max_datagram(t, 600);
        let sent = send(&mut s, t, 0);
        assert_eq!(sent.len(), 3000usize.div_ceil(564));
        assert!(sent.iter().all(|d| d.len() <= 600));
        assert_eq!(sent[0].len(), 600);
        // Told while the frame's datagrams wait to be handed out: they are dropped (none
        // would fit), not counted as sent, and the sender recovers as from a loss.
        let mut s = sender(SproutMode::Video);
        s.handle_picture(t, 0, t);
        let id = drain(&mut s, t).2[0];
        let outcome = EncodeOutcome::Functional(vec![frame(3000)]);
        s.handle_encoded(t, id, Ok(outcome)).unwrap();
        s.set_max_datagram(t, 600);
        let (datagrams, events, _) = drain(&mut s, t);
        assert!(datagrams.is_empty(), "{:?}", datagrams.len());
        assert!(events
            .iter()
            .any(|e| matches!(e, SenderEvent::RecoveryStarted { .. })));
        // Sent: the heartbeat the first poll made, before the picture.
        assert_eq!((s.stats.datagrams_sent, s.stats.recoveries), (1, 1));
        // A path larger than the configured size: the configured 1400 bytes of payload.
        let mut s = sender(SproutMode::Video);
        s.set_max_datagram(t, 9000);
        let sent = send(&mut s, t, 0);
        assert_eq!(sent[0].len(), DATA_HEADER + 1400);
        // Bulk filler fills the smaller datagrams.
        let mut s = sender(SproutMode::Bulk);
        s.set_max_datagram(t, 600);
        let (filler, _, _) = drain(&mut s, t);
        assert!(!filler.is_empty() && filler.iter().all(|d| d.len() <= 600));
    }
}
