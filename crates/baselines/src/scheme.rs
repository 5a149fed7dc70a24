//! The comparison schemes on the one endpoint shape (`salsify-endpoint`): each sender wrapped
//! with what it needs to ask the driver for encodes by itself, so the driver knows no scheme.
//!
//! - CBR schemes (conventional, Vidaptive) name the picture size of every encode (Vidaptive's
//!   resolution ladder), their libvpx settings, and the target given to libvpx, with the
//!   10 % deadband below (one rule for both);
//! - the oracle keeps its functional codec state and last quantizer and asks for the finest
//!   frame that fits its bound from that state;
//! - the receiver owns its VP8 decoder and hands out pictures to show.

use salsify_codec::{CbrConfig, CbrFrame, PlainDecoder, Quality, State};
use salsify_endpoint as ep;
use salsify_time::{Bitrate, Instant};

use crate::endpoint::{DropReason, SenderOutput};
use crate::endpoint::{EncodeJob, EncodedFrame, ReceiverEvent, ReceiverOutput, SenderEvent};
use crate::receiver::{Receiver, ReceiverConfig};
use crate::sender::Sender;
use crate::vidaptive::ladder_size;
use crate::wire::Packet;
use crate::{GccConfig, GccSender, LinkForecast, OracleConfig, OracleSender};
use crate::{VidaptiveConfig, VidaptiveSender};

/// Vidaptive's CBR encoder is told at most two frame intervals passed between pictures: the
/// first picture after an encoder pause is budgeted as an ordinary frame, not as the whole
/// pause's worth of bits (measured on Verizon-LTE-short with real capture times: frames after
/// a 40-100 ms pause were 6.4x the per-frame budget (median), after 100-300 ms 10x, refilling
/// the pacer and pausing again; delay mean/p95 81/306 ms -> 69/218 ms with this cap).
pub const VIDAPTIVE_MAX_GAP_FRAMES: u32 = 2;

/// Why a scheme could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemeSetupError {
    /// A parameter is out of range.
    #[error("invalid parameter: {0}")]
    Config(String),
    /// The source size cannot be coded.
    #[error("a {0}x{1} source cannot be coded")]
    Size(u32, u32),
}

/// libvpx's CBR rate control clamps its buffer to the new (smaller) size on every decrease
/// and does not give it back on an increase, so a target that swings frame by frame ratchets
/// the output below the mean target (measured: a target alternating 2000/1000 kb/s every 3
/// frames yields 850 kb/s). Changes of 10 % or less are therefore not passed on; a new
/// picture size (a fresh encoder) always takes the current target.
#[derive(Debug, Default)]
struct TargetDeadband {
    applied: Option<(u64, (u32, u32))>,
}

impl TargetDeadband {
    fn target(&mut self, wanted: Bitrate, size: (u32, u32)) -> Bitrate {
        let kbps = wanted.as_kbps().min(u64::from(u32::MAX));
        let apply = match self.applied {
            Some((a, s)) if s == size => kbps.abs_diff(a) * 10 > a,
            _ => true,
        };
        if apply {
            self.applied = Some((kbps, size));
        }
        Bitrate::kbps(self.applied.map_or(kbps, |a| a.0))
    }
}

/// A comparison scheme's sender as a [`ep::SenderEndpoint`].
#[derive(Debug)]
pub struct BaselineSender {
    inner: Sender,
    source: (u32, u32),
    settings: ep::CbrSettings,
    deadband: TargetDeadband,
    /// The oracle's functional codec state and the quantizer of its last frame.
    oracle_state: (State, Quality),
}

impl BaselineSender {
    fn wrap(inner: Sender, source: (u32, u32), settings: ep::CbrSettings) -> Self {
        BaselineSender {
            inner,
            source,
            settings,
            deadband: TargetDeadband::default(),
            oracle_state: (
                State::initial(),
                Quality::new(64).expect("constant below 128"),
            ),
        }
    }

    /// The WebRTC-style sender for a `source` = (width, height) picture: libvpx's own frame
    /// dropper on (WebRTC's threshold 30) and the real gap between pictures.
    pub fn conventional(config: GccConfig, source: (u32, u32)) -> Result<Self, SchemeSetupError> {
        let inner = GccSender::new(config).map_err(SchemeSetupError::Config)?;
        let defaults = CbrConfig::default();
        let settings = ep::CbrSettings {
            dropframe_thresh: defaults.dropframe_thresh,
            max_gap_frames: defaults.max_gap_frames,
        };
        Ok(Self::wrap(Sender::Conventional(inner), source, settings))
    }

    /// The Vidaptive-style sender: libvpx's frame dropper off (its encoder pause replaces it:
    /// with both, a low alpha x CC-Rate makes libvpx drop frames, too few frames per second
    /// lower alpha further, and the stream starves) and at most two frame intervals of budget
    /// after a pause ([`VIDAPTIVE_MAX_GAP_FRAMES`]).
    pub fn vidaptive(
        config: VidaptiveConfig,
        source: (u32, u32),
    ) -> Result<Self, SchemeSetupError> {
        let inner = VidaptiveSender::new(config).map_err(SchemeSetupError::Config)?;
        let settings = ep::CbrSettings {
            dropframe_thresh: 0,
            max_gap_frames: VIDAPTIVE_MAX_GAP_FRAMES,
        };
        Ok(Self::wrap(Sender::Vidaptive(inner), source, settings))
    }

    /// The oracle, reading the link's future from `forecast`.
    pub fn oracle(config: OracleConfig, forecast: LinkForecast) -> Result<Self, SchemeSetupError> {
        let inner = OracleSender::new(config, forecast).map_err(SchemeSetupError::Config)?;
        let settings = ep::CbrSettings {
            dropframe_thresh: 0,
            max_gap_frames: 0,
        };
        Ok(Self::wrap(Sender::Oracle(inner), (0, 0), settings))
    }

    /// The scheme's state machine.
    pub fn inner(&self) -> &Sender {
        &self.inner
    }

    fn job(&mut self, job: EncodeJob) -> ep::EncodeJob {
        match job {
            EncodeJob::Cbr { target, keyframe } => {
                let step = match &self.inner {
                    Sender::Vidaptive(v) => v.encode_step(),
                    _ => 0,
                };
                let (width, height) = ladder_size(self.source.0, self.source.1, step);
                ep::EncodeJob::Cbr(ep::CbrJob {
                    target: self.deadband.target(target, (width, height)),
                    keyframe,
                    width,
                    height,
                    settings: self.settings,
                })
            }
            EncodeJob::MaxSize { bytes } => ep::EncodeJob::FinestFitting {
                source: self.oracle_state.0.clone(),
                bytes,
                start: self.oracle_state.1,
            },
        }
    }

    /// The frame an outcome carries, in the scheme's own terms.
    fn frame(&mut self, outcome: ep::EncodeOutcome) -> Result<Option<EncodedFrame>, String> {
        match outcome {
            ep::EncodeOutcome::Cbr(frame) => Ok(frame.map(|f: CbrFrame| EncodedFrame {
                data: f.data,
                keyframe: f.keyframe,
                quality: f.quality,
            })),
            ep::EncodeOutcome::Functional(mut frames) if frames.len() <= 1 => {
                Ok(frames.pop().map(|f| {
                    let data = f.vp8().to_vec();
                    let encoded = EncodedFrame {
                        data,
                        keyframe: f.keyframe,
                        quality: f.quality.index(),
                    };
                    self.oracle_state = (f.target, f.quality);
                    encoded
                }))
            }
            other => Err(format!("unexpected result {other:?}")),
        }
    }
}

fn drop_reason(r: DropReason) -> ep::DropReason {
    match r {
        DropReason::EncoderBusy => ep::DropReason::EncoderBusy,
        DropReason::PacerQueue => ep::DropReason::PacerQueue,
        DropReason::RateControl => ep::DropReason::RateControl,
        DropReason::Paused => ep::DropReason::Paused,
        DropReason::Reset => ep::DropReason::Reset,
        DropReason::WouldBeLate => ep::DropReason::WouldBeLate,
        _ => ep::DropReason::Failed,
    }
}

fn event(e: SenderEvent) -> ep::SenderEvent {
    match e {
        SenderEvent::FrameSent {
            frame,
            picture,
            captured,
            at,
            bytes,
            quality,
            keyframe,
        } => ep::SenderEvent::FrameSent(ep::SentFrame {
            frame,
            picture,
            captured,
            at,
            bytes,
            fragments: bytes.div_ceil(crate::core::FRAGMENT_PAYLOAD).max(1) as u16,
            quality: Quality::new(quality.min(127)).expect("clamped to 0..=127"),
            keyframe,
            choice: ep::Choice::Only,
            budget: None,
            recovery: false,
            states: None,
        }),
        SenderEvent::PictureDropped {
            picture,
            at,
            reason,
        } => ep::SenderEvent::PictureDropped {
            picture,
            at,
            reason: drop_reason(reason),
        },
        SenderEvent::Target {
            at,
            encoder,
            pacing,
        } => ep::SenderEvent::Target {
            at,
            encoder,
            pacing,
        },
    }
}

impl ep::SenderEndpoint for BaselineSender {
    fn scheme(&self) -> &'static str {
        match self.inner {
            Sender::Conventional(_) => "conventional",
            Sender::Vidaptive(_) => "vidaptive",
            Sender::Oracle(_) => "oracle",
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
        match result.map_err(|e| e.0).and_then(|o| self.frame(o)) {
            Ok(frame) => {
                self.inner.handle_encoded(now, id, frame);
                Ok(())
            }
            Err(why) => {
                self.inner.handle_encode_failed(now, id);
                Err(ep::InputError::WrongResult { id, why })
            }
        }
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        self.inner.handle_datagram(now, datagram);
        match ep::WireFamily::of(datagram) {
            Some(ep::WireFamily::Baseline) => Ok(()),
            _ => Err(ep::DatagramError::OtherProtocol {
                first_byte: datagram.first().copied().unwrap_or(0),
            }),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }

    fn poll_output(&mut self, now: Instant) -> ep::SenderOutput {
        match self.inner.poll_output(now) {
            SenderOutput::Encode(r) => ep::SenderOutput::Encode(ep::EncodeRequest {
                id: r.id,
                picture: r.picture,
                captured: r.captured,
                job: self.job(r.job),
            }),
            SenderOutput::Transmit(d) => ep::SenderOutput::Transmit(d),
            SenderOutput::Event(e) => ep::SenderOutput::Event(event(e)),
            SenderOutput::Timeout(t) => ep::SenderOutput::Timeout(t),
        }
    }

    fn stats(&self) -> ep::SenderStats {
        let s = self.inner.stats();
        ep::SenderStats {
            pictures: s.pictures,
            frames_sent: s.frames_sent,
            keyframes: s.keyframes,
            dropped: s.dropped,
            datagrams_sent: s.media_packets + s.retransmissions + s.padding_packets,
            feedback: s.feedback,
            bad_datagrams: s.bad_datagrams,
            recoveries: s.plis,
            target: (!matches!(self.inner, Sender::Oracle(_))).then_some(s.target),
            ..ep::SenderStats::default()
        }
    }

    fn diagnostics(&self) -> Vec<ep::Diagnostic> {
        let s = self.inner.stats();
        let d = |name, value: f64| ep::Diagnostic { name, value };
        let mut out = vec![
            d("retransmissions", s.retransmissions as f64),
            d("nacked", s.nacked as f64),
            d("padding_packets", s.padding_packets as f64),
            d("padding_bytes", s.padding_bytes as f64),
        ];
        if let Sender::Vidaptive(v) = &self.inner {
            out.extend([
                d("pauses", s.pauses as f64),
                d("resets", s.resets as f64),
                d("cwnd_packets", v.copa().cwnd_packets()),
                d(
                    "srtt_ms",
                    v.copa().srtt().map_or(0.0, |t| t.as_secs_f64() * 1e3),
                ),
                d("cc_rate_kbps", v.cc_rate().as_f64() / 1000.0),
                d("alpha", v.alpha()),
                d("pacer_bytes", v.pacer_bytes() as f64),
                d("in_flight", v.in_flight() as f64),
                d("resolution_step", v.encode_step() as f64),
                d("resolution_changes", v.resolution_changes() as f64),
            ]);
        }
        out
    }
}

/// The receiver every comparison scheme shares, with its VP8 decoder, as a
/// [`ep::ReceiverEndpoint`]. A keyframe of another size (a resolution ladder) re-opens the
/// decoder at that size; a frame that fails to decode makes the receiver ask for a keyframe.
pub struct BaselineReceiver {
    inner: Receiver,
    decoder: PlainDecoder,
    size: (u32, u32),
}

impl std::fmt::Debug for BaselineReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineReceiver")
            .field("stats", &self.inner.stats())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl BaselineReceiver {
    /// A receiver expecting `size` = (width, height) pictures first.
    pub fn new(config: ReceiverConfig, size: (u32, u32)) -> Result<Self, SchemeSetupError> {
        let decoder = PlainDecoder::new(size.0, size.1)
            .map_err(|_| SchemeSetupError::Size(size.0, size.1))?;
        Ok(BaselineReceiver {
            inner: Receiver::new(config),
            decoder,
            size,
        })
    }

    fn decode(&mut self, data: &[u8], keyframe: bool) -> Option<salsify_codec::Image> {
        if let Some(size) = keyframe.then(|| vp8_keyframe_size(data)).flatten() {
            if size != self.size {
                self.decoder = PlainDecoder::new(size.0, size.1).ok()?;
                self.size = size;
            }
        }
        self.decoder.decode(data).ok()
    }
}

/// The picture size in a VP8 keyframe's header (RFC 6386 9.1), if `data` is a keyframe.
fn vp8_keyframe_size(data: &[u8]) -> Option<(u32, u32)> {
    if data.len() < 10 || data[0] & 1 != 0 || data[3..6] != [0x9d, 0x01, 0x2a] {
        return None;
    }
    let side = |i: usize| u32::from(u16::from_le_bytes([data[i], data[i + 1]]) & 0x3fff);
    Some((side(6), side(8)))
}

impl ep::ReceiverEndpoint for BaselineReceiver {
    fn scheme(&self) -> &'static str {
        "baseline"
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), ep::DatagramError> {
        let before = self.inner.stats().bad_datagrams;
        self.inner.handle_datagram(now, datagram);
        if self.inner.stats().bad_datagrams == before {
            return Ok(());
        }
        Err(match Packet::parse(datagram) {
            Err(e) => ep::DatagramError::rejected(e),
            Ok(_) => ep::DatagramError::OtherProtocol {
                first_byte: datagram.first().copied().unwrap_or(0),
            },
        })
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }

    fn poll_output(&mut self, now: Instant) -> ep::ReceiverOutput {
        loop {
            return match self.inner.poll_output() {
                ReceiverOutput::Transmit(d) => ep::ReceiverOutput::Transmit(d),
                ReceiverOutput::Event(ReceiverEvent::Frame {
                    frame,
                    at,
                    data,
                    keyframe,
                }) => match self.decode(&data, keyframe) {
                    Some(picture) => {
                        ep::ReceiverOutput::Event(ep::ReceiverEvent::Display(ep::Displayed {
                            frame,
                            at,
                            picture,
                            bytes: data.len(),
                            keyframe,
                            first_sent_at: None,
                            states: None,
                        }))
                    }
                    None => {
                        self.inner.handle_decode_failed(now);
                        continue;
                    }
                },
                ReceiverOutput::Event(ReceiverEvent::FramesLost { through, count, at }) => {
                    ep::ReceiverOutput::Event(ep::ReceiverEvent::FramesLost { through, count, at })
                }
                ReceiverOutput::Timeout(t) => ep::ReceiverOutput::Timeout(t),
            };
        }
    }

    fn stats(&self) -> ep::ReceiverStats {
        let s = self.inner.stats();
        ep::ReceiverStats {
            datagrams: s.datagrams,
            bad_datagrams: s.bad_datagrams,
            frames_displayed: s.frames,
            frames_lost: s.frames_lost,
            feedback_sent: s.feedback,
            ..ep::ReceiverStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadband_passes_on_only_changes_over_ten_percent_or_a_new_size() {
        let mut d = TargetDeadband::default();
        let s = (320, 180);
        assert_eq!(d.target(Bitrate::kbps(1000), s), Bitrate::kbps(1000));
        assert_eq!(d.target(Bitrate::kbps(1090), s), Bitrate::kbps(1000));
        assert_eq!(d.target(Bitrate::kbps(1101), s), Bitrate::kbps(1101));
        assert_eq!(
            d.target(Bitrate::kbps(1050), (160, 90)),
            Bitrate::kbps(1050)
        );
    }

    #[test]
    fn keyframe_sizes_are_read_from_the_vp8_header() {
        let mut key = vec![0u8; 10];
        key[3..6].copy_from_slice(&[0x9d, 0x01, 0x2a]);
        key[6..8].copy_from_slice(&320u16.to_le_bytes());
        key[8..10].copy_from_slice(&180u16.to_le_bytes());
        assert_eq!(vp8_keyframe_size(&key), Some((320, 180)));
        key[0] = 1; // an inter frame
        assert_eq!(vp8_keyframe_size(&key), None);
        assert_eq!(vp8_keyframe_size(&[0; 3]), None);
    }
}
