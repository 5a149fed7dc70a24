//! The Sprout sender: Sprout's window over video frames sized to it, or over bulk filler.

use std::collections::VecDeque;

use salsify_codec::{EncodedFrame, Quality, State, StateHash};
use salsify_endpoint::{
    Choice, DatagramError, Diagnostic, DropReason, EncodeFailed, EncodeJob, EncodeOutcome,
    EncodeRequest, InputError, SenderEndpoint, SenderEvent, SenderOutput, SenderStats, SentFrame,
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
    fn room(&mut self, now: Instant) -> usize {
        let queued: usize = self.out.iter().map(Vec::len).sum();
        self.window.window(now).saturating_sub(queued)
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
        let full = DATA_HEADER + self.config.fragment_payload;
        let filler = vec![0u8; self.config.fragment_payload];
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
        let chunks: Vec<&[u8]> = f.bytes.chunks(self.config.fragment_payload).collect();
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
        let fragments = room.div_ceil(DATA_HEADER + self.config.fragment_payload);
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
        if frame.len().div_ceil(self.config.fragment_payload) > MAX_FRAGMENTS {
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
