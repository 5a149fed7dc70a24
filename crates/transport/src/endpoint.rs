//! Salsify on the one endpoint shape (`salsify-endpoint`), so the simulator and the real-time
//! runtime drive it exactly like every other scheme. A thin adapter over the generic
//! [`Sender`] and [`Receiver`] (which tests drive with the fake codec): it translates requests,
//! results, events and counters, and adds no policy — the datagrams, deadlines and decisions
//! are the inner state machines' own, unchanged.

use salsify_codec::{State, StateHash};
use salsify_endpoint as ep;
use salsify_time::Instant;

use crate::config::{ConfigError, ReceiverConfig, SenderConfig, SenderMode, SenderRules};
use crate::error::DatagramRejected;
use crate::receiver::{Receiver, ReceiverEvent, ReceiverOutput};
use crate::sender::{EncodeJob, Sender, SenderEvent, SenderOutput};
use crate::vp8::{CodedPicture, CodedVp8Decoder};

/// The Salsify sender (or one of its ablations) as a [`ep::SenderEndpoint`], with the real
/// VP8 codec's frames.
#[derive(Debug)]
pub struct SalsifySender {
    inner: Sender<salsify_codec::EncodedFrame>,
    /// The two options may be encoded at once (Salsify-2c) rather than in series (1c).
    parallel: bool,
    /// Keyframes among the frames handed out so far (the inner sender has no such counter,
    /// and adding one would change its stats).
    keyframes: u64,
}

impl SalsifySender {
    /// A sender whose first frame is a keyframe (it starts from [`State::initial`]);
    /// `parallel` selects Salsify-2c (the two options encoded at once) over -1c.
    pub fn new(config: SenderConfig, parallel: bool) -> Result<Self, ConfigError> {
        Ok(SalsifySender {
            inner: Sender::new(config, State::initial())?,
            parallel,
            keyframes: 0,
        })
    }

    /// The state machine inside (its own stats, budget, recovery state), for tests and logs.
    pub fn inner(&self) -> &Sender<salsify_codec::EncodedFrame> {
        &self.inner
    }

    /// True for Salsify-2c: encode jobs say the options may run in parallel.
    pub fn parallel(&self) -> bool {
        self.parallel
    }
}

/// A rejected datagram, told apart from one of another scheme's protocol (which fails
/// Salsify's parse on its first byte) so a driver can say what went wrong.
fn datagram_error(datagram: &[u8], why: DatagramRejected) -> ep::DatagramError {
    match (datagram.first(), &why) {
        (Some(&first_byte), DatagramRejected::Malformed(_))
            if ep::WireFamily::of(datagram) == Some(ep::WireFamily::Baseline) =>
        {
            ep::DatagramError::OtherProtocol { first_byte }
        }
        _ => ep::DatagramError::rejected(why),
    }
}

fn sender_event(e: SenderEvent, cause: Option<ep::DropReason>) -> ep::SenderEvent {
    match e {
        SenderEvent::FrameSent(f) => ep::SenderEvent::FrameSent(ep::SentFrame {
            frame: f.frame,
            picture: f.picture,
            captured: f.captured,
            at: f.at,
            bytes: f.bytes,
            fragments: f.fragments,
            quality: f.quality,
            keyframe: f.source == StateHash::INITIAL,
            choice: f.choice,
            budget: f.budget,
            recovery: f.recovery,
            states: Some((f.source, f.target)),
        }),
        SenderEvent::PictureSkipped {
            picture,
            captured,
            at,
            budget,
        } => ep::SenderEvent::PictureSkipped {
            picture,
            captured,
            at,
            budget,
        },
        SenderEvent::PictureDropped { picture, at } => ep::SenderEvent::PictureDropped {
            picture,
            at,
            // The inner sender gives a reason with every drop; `None` cannot happen.
            reason: cause.unwrap_or(ep::DropReason::Failed),
        },
        SenderEvent::RecoveryStarted { at, until } => {
            ep::SenderEvent::RecoveryStarted { at, until }
        }
    }
}

impl ep::SenderEndpoint for SalsifySender {
    fn scheme(&self) -> &'static str {
        let c = self.inner.config();
        match c.mode {
            SenderMode::ConventionalCodec => "salsify-conventional-codec",
            SenderMode::ConventionalTransport { .. } => "salsify-conventional-transport",
            _ if !c.grace_period => "salsify-no-grace",
            _ if c.rules == SenderRules::Paper => "salsify-paper",
            _ if self.parallel => "salsify-2c",
            _ => "salsify-1c",
        }
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.inner.handle_frame(now, picture, captured);
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<ep::EncodeOutcome, ep::EncodeFailed>,
    ) -> Result<(), ep::InputError> {
        let unknown = |_| ep::InputError::UnknownRequest(id);
        match result {
            Ok(ep::EncodeOutcome::Functional(frames)) => self
                .inner
                .handle_encoded(now, id, frames)
                .map_err(|e| ep::InputError::WrongResult {
                    id,
                    why: e.to_string(),
                }),
            Ok(_) => {
                self.inner.handle_encode_failed(now, id).map_err(unknown)?;
                Err(ep::InputError::WrongResult {
                    id,
                    why: "Salsify needs frames of the functional codec".into(),
                })
            }
            Err(_) => self.inner.handle_encode_failed(now, id).map_err(unknown),
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        self.inner
            .handle_datagram(now, datagram)
            .map_err(|why| datagram_error(datagram, why))
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }

    fn poll_output(&mut self, now: Instant) -> ep::SenderOutput {
        let (output, cause) = self.inner.poll_output_with_cause(now);
        match output {
            SenderOutput::Encode(r) => {
                let job = match r.job {
                    EncodeJob::Qualities(qualities) => ep::EncodeJob::Qualities {
                        source: r.source,
                        qualities,
                        parallel: self.parallel,
                        halvings: r.halvings,
                    },
                    EncodeJob::SizeTarget { bytes, hint } => ep::EncodeJob::SizeTarget {
                        source: r.source,
                        bytes,
                        hint,
                    },
                };
                ep::SenderOutput::Encode(ep::EncodeRequest {
                    id: r.id,
                    picture: r.picture,
                    captured: r.captured,
                    job,
                })
            }
            SenderOutput::Transmit(d) => ep::SenderOutput::Transmit(d),
            SenderOutput::Event(e) => {
                if matches!(e, SenderEvent::FrameSent(f) if f.source == StateHash::INITIAL) {
                    self.keyframes += 1;
                }
                ep::SenderOutput::Event(sender_event(e, cause))
            }
            SenderOutput::Timeout(t) => ep::SenderOutput::Timeout(t),
        }
    }

    fn stats(&self) -> ep::SenderStats {
        let s = self.inner.stats();
        ep::SenderStats {
            pictures: s.pictures,
            frames_sent: s.frames_sent(),
            keyframes: self.keyframes,
            sent_better: s.sent_better,
            sent_worse: s.sent_worse + s.sent_forced,
            skipped: s.skipped,
            dropped: s.dropped,
            datagrams_sent: s.fragments_sent,
            feedback: s.acks - s.stale_acks,
            stale_feedback: s.stale_acks,
            bad_datagrams: s.rejected_datagrams,
            recoveries: s.recoveries,
            states_held: s.states_held,
            max_states_held: s.max_states_held,
            target: None,
            // The inner sender's quality is the start quality until a frame goes out.
            quality: (s.frames_sent() > 0).then_some(s.quality),
        }
    }

    /// Fragments in flight (N), outage frames, the quality the next options step from, the
    /// delay target (d, ms), and once known the mean inter-arrival time (tau, ms) and the
    /// budget (bytes).
    fn diagnostics(&self) -> Vec<ep::Diagnostic> {
        let s = self.inner.stats();
        let mut d = vec![
            ep::Diagnostic {
                name: "fragments_in_flight",
                value: s.fragments_in_flight as f64,
            },
            ep::Diagnostic {
                name: "outage_frames",
                value: s.outage_frames as f64,
            },
            ep::Diagnostic {
                name: "quality",
                value: f64::from(s.quality.index()),
            },
            ep::Diagnostic {
                name: "halvings",
                value: f64::from(s.halvings),
            },
            ep::Diagnostic {
                name: "resolution_changes",
                value: s.resolution_changes as f64,
            },
        ];
        // The `d` of the budget, for a dashboard drawing the budget beside what it allows.
        d.push(ep::Diagnostic {
            name: "delay_target_ms",
            value: self.inner.config().delay_target.as_secs_f64() * 1000.0,
        });
        if let Some(tau) = s.mean_interarrival {
            d.push(ep::Diagnostic {
                name: "mean_interarrival_ms",
                value: tau.as_secs_f64() * 1000.0,
            });
        }
        if let Some(floor) = s.quality_floor {
            d.push(ep::Diagnostic {
                name: "quality_floor",
                value: f64::from(floor.index()),
            });
        }
        if let Some(b) = self.inner.budget() {
            d.push(ep::Diagnostic {
                name: "budget_bytes",
                value: b as f64,
            });
        }
        d
    }
}

/// The Salsify receiver, decoding with libvpx, as a [`ep::ReceiverEndpoint`].
pub struct SalsifyReceiver {
    inner: Receiver<CodedVp8Decoder>,
}

impl std::fmt::Debug for SalsifyReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SalsifyReceiver")
            .field("stats", &self.inner.stats())
            .finish_non_exhaustive()
    }
}

/// Why a receiver could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiverSetupError {
    /// A parameter is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// libvpx's decoder could not be opened.
    #[error("cannot open the VP8 decoder: {0}")]
    Codec(salsify_codec::CodecError),
}

// By hand rather than `#[from]`, which would also make it the error's source: the message
// already says it, and an error chain would print it twice.
impl From<salsify_codec::CodecError> for ReceiverSetupError {
    fn from(e: salsify_codec::CodecError) -> Self {
        ReceiverSetupError::Codec(e)
    }
}

impl SalsifyReceiver {
    /// A receiver with its own VP8 decoder.
    pub fn new(config: ReceiverConfig) -> Result<Self, ReceiverSetupError> {
        Ok(SalsifyReceiver {
            inner: Receiver::new(config, CodedVp8Decoder::new()?)?,
        })
    }

    /// The state machine inside.
    pub fn inner(&self) -> &Receiver<CodedVp8Decoder> {
        &self.inner
    }
}

impl ep::ReceiverEndpoint for SalsifyReceiver {
    fn scheme(&self) -> &'static str {
        "salsify"
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        self.inner
            .handle_datagram(now, datagram)
            .map_err(|why| datagram_error(datagram, why))
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }

    fn poll_output(&mut self, _now: Instant) -> ep::ReceiverOutput {
        match self.inner.poll_output() {
            ReceiverOutput::Transmit(d) => ep::ReceiverOutput::Transmit(d),
            ReceiverOutput::Event(ReceiverEvent::Display {
                frame,
                at,
                picture: CodedPicture { picture, vp8 },
                source,
                target,
                first_sent_at,
                bytes,
            }) => ep::ReceiverOutput::Event(ep::ReceiverEvent::Display(ep::Displayed {
                frame,
                at,
                picture,
                bytes,
                coded: vp8,
                keyframe: source == StateHash::INITIAL,
                first_sent_at: Some(first_sent_at),
                states: Some((source, target)),
            })),
            ReceiverOutput::Event(ReceiverEvent::FramesLost { through, count, at }) => {
                ep::ReceiverOutput::Event(ep::ReceiverEvent::FramesLost { through, count, at })
            }
            ReceiverOutput::Timeout(t) => ep::ReceiverOutput::Timeout(t),
        }
    }

    fn stats(&self) -> ep::ReceiverStats {
        let s = self.inner.stats();
        ep::ReceiverStats {
            datagrams: s.datagrams,
            bad_datagrams: s.malformed
                + s.foreign
                + s.stale
                + s.duplicates
                + s.inconsistent
                + s.buffer_full,
            frames_displayed: s.frames_displayed,
            frames_lost: u64::from(s.frames_lost),
            decode_failures: s.decode_failures,
            feedback_sent: s.acks_sent,
            states_held: s.states_held,
            max_states_held: s.max_states_held,
        }
    }
}
