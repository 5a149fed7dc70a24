//! Salsify on the one endpoint shape (`salsify-endpoint`), so the simulator and the real-time
//! runtime drive it exactly like every other scheme. [`Sender`] and [`Receiver`] already speak
//! the endpoint's vocabulary (generic over the codec only so that tests drive them with the
//! fake codec); on libvpx's frames they are [`SalsifySender`] and [`SalsifyReceiver`], and
//! this module implements the endpoint traits for them: the encode outcome unwrapped, a
//! rejected datagram told apart from another scheme's, the common counters read from their
//! own, and the gauges a dashboard draws. No policy here.

use salsify_codec::State;
use salsify_endpoint as ep;
use salsify_time::Instant;

use crate::config::{ConfigError, ReceiverConfig, SenderConfig, SenderMode, SenderRules};
use crate::error::DatagramRejected;
use crate::receiver::Receiver;
use crate::sender::Sender;
use crate::vp8::VideoDecoder;

/// The Salsify sender (or one of its ablations) on libvpx's frames: the [`Sender`] itself,
/// a [`ep::SenderEndpoint`] with no translation (it speaks the endpoint's vocabulary).
pub type SalsifySender = Sender<salsify_codec::EncodedFrame>;

/// The Salsify receiver decoding with libvpx: the [`Receiver`] itself, a
/// [`ep::ReceiverEndpoint`].
pub type SalsifyReceiver = Receiver<VideoDecoder>;

impl SalsifySender {
    /// A sender whose first frame is a keyframe (it starts from [`State::initial`]);
    /// `parallel` selects Salsify-2c (the two options encoded at once) over -1c.
    pub fn from_config(config: SenderConfig, parallel: bool) -> Result<Self, ConfigError> {
        Ok(Sender::new(config, State::initial())?.with_parallel_encodes(parallel))
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

impl ep::SenderEndpoint for SalsifySender {
    /// The name its builder gave it ([`Sender::with_name`]: the registry's scheme); else
    /// the ablation its config runs, in the registry's words.
    fn scheme(&self) -> &'static str {
        if let Some(name) = self.name() {
            return name;
        }
        let c = self.config();
        match c.mode {
            SenderMode::ConventionalCodec => "salsify-conventional-codec",
            SenderMode::ConventionalTransport { .. } => "salsify-conventional-transport",
            _ if !c.grace_period => "salsify-no-grace",
            _ if c.rules == SenderRules::Paper => "salsify-paper",
            _ if self.parallel_encodes() => "salsify-2c",
            _ => "salsify-1c",
        }
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.handle_frame(now, picture, captured);
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<ep::EncodeOutcome, ep::EncodeFailed>,
    ) -> Result<(), ep::InputError> {
        let unknown = |_| ep::InputError::UnknownRequest(id);
        match result {
            Ok(ep::EncodeOutcome::Functional(frames)) => {
                Sender::handle_encoded(self, now, id, frames).map_err(|e| {
                    ep::InputError::WrongResult {
                        id,
                        why: e.to_string(),
                    }
                })
            }
            Ok(_) => {
                self.handle_encode_failed(now, id).map_err(unknown)?;
                Err(ep::InputError::WrongResult {
                    id,
                    why: "Salsify needs frames of the functional codec".into(),
                })
            }
            Err(_) => self.handle_encode_failed(now, id).map_err(unknown),
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        Sender::handle_datagram(self, now, datagram).map_err(|why| datagram_error(datagram, why))
    }

    fn handle_timeout(&mut self, now: Instant) {
        Sender::handle_timeout(self, now);
    }

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        Sender::handle_audio_sent(self, now, bytes);
    }

    fn set_max_datagram(&mut self, now: Instant, bytes: usize) {
        Sender::set_max_datagram(self, now, bytes);
    }

    fn poll_output(&mut self, now: Instant) -> ep::SenderOutput {
        Sender::poll_output(self, now)
    }

    fn stats(&self) -> ep::SenderStats {
        let s = Sender::stats(self);
        ep::SenderStats {
            pictures: s.pictures,
            frames_sent: s.frames_sent(),
            keyframes: s.keyframes,
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
            // The sender's quality is the start quality until a frame goes out.
            quality: (s.frames_sent() > 0).then_some(s.quality),
        }
    }

    /// Fragments in flight (N), outage frames, the quality the next options step from, the
    /// delay target (d, ms), and once known the mean inter-arrival time (tau, ms) and the
    /// budget (bytes).
    fn diagnostics(&self) -> Vec<ep::Diagnostic> {
        let s = Sender::stats(self);
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
            value: self.config().delay_target.as_secs_f64() * 1000.0,
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
        if let Some(b) = self.budget() {
            d.push(ep::Diagnostic {
                name: "budget_bytes",
                value: b as f64,
            });
        }
        d
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
    /// A receiver with its own [`VideoDecoder`] (VP8 and AV1 frames alike).
    pub fn from_config(config: ReceiverConfig) -> Result<Self, ReceiverSetupError> {
        Ok(Receiver::new(config, VideoDecoder::new()?)?)
    }
}

impl ep::ReceiverEndpoint for SalsifyReceiver {
    fn scheme(&self) -> &'static str {
        "salsify"
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        Receiver::handle_datagram(self, now, datagram).map_err(|why| datagram_error(datagram, why))
    }

    fn handle_timeout(&mut self, now: Instant) {
        Receiver::handle_timeout(self, now);
    }

    fn poll_output(&mut self, _now: Instant) -> ep::ReceiverOutput {
        Receiver::poll_output(self)
    }

    fn stats(&self) -> ep::ReceiverStats {
        let s = Receiver::stats(self);
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
