//! The receiver every baseline shares, as a [`ReceiverEndpoint`]: the transport half (in
//! `jitter.rs`) and a plain VP8 decoder.
//!
//! - Feedback: every transport sequence number from the last one reported up to the newest
//!   received, with its arrival time or "lost": every `feedback_interval` (GCC), or after
//!   each packet (`None`: Copa needs per-packet ACKs).
//! - NACK: a gap in media sequence numbers is NACKed at once and again every `nack_retry`,
//!   up to `max_nack_retries` times (libwebrtc `NackRequester`: `kMaxNackRetries` = 10);
//!   then the receiver gives up on the frame and asks for a keyframe. More than
//!   [`MAX_MISSING`] missing packets at once: a keyframe request at once.
//! - Frames: frame `n` is decoded when complete and `n - 1` was; a complete keyframe further
//!   ahead lets it skip the frames in between (counted lost). A keyframe of another size (a
//!   resolution ladder) re-opens the decoder at that size. After a decode error or a give-up,
//!   it waits for a keyframe, repeating the PLI every `pli_interval`.
//!   Simplification: no playout delay from a jitter estimate (libwebrtc's jitter buffer adds
//!   its Kalman-filtered jitter before rendering), so a frame is shown as soon as it is
//!   decoded, slightly flattering the conventional schemes' delay.
//!
//! A frame is decoded when the driver drains it ([`ReceiverEndpoint::poll_output`]), in the
//! order the jitter buffer releases frames, so a frame that fails to decode asks for a
//! keyframe behind the outputs already queued.

use salsify_codec::{Image, PlainDecoder};
use salsify_endpoint::{
    DatagramError, Displayed, ReceiverEndpoint, ReceiverEvent, ReceiverOutput, ReceiverStats,
};
use salsify_time::Instant;

use crate::error::{datagram_error, ReceiverBuildError};
use crate::jitter::{JitterReceiver, Output};
use crate::stats::ReceiverCounters;
use crate::wire_id::WireId;

pub use crate::jitter::{Footprint, MAX_MISSING};
pub use crate::receiver_config::ReceiverConfig;

/// The baseline receiver: jitter buffer, feedback, NACK and PLI, and its VP8 decoder.
pub struct BaselineReceiver {
    inner: JitterReceiver,
    decoder: PlainDecoder,
    /// The size the decoder was opened for (a keyframe of another size re-opens it).
    decoder_size: (u32, u32),
    displayed: u64,
    decode_failures: u64,
    datagrams_sent: u64,
}

impl std::fmt::Debug for BaselineReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineReceiver")
            .field("inner", &self.inner)
            .field("decoder_size", &self.decoder_size)
            .finish_non_exhaustive()
    }
}

impl BaselineReceiver {
    /// A receiver expecting `size` = (width, height) pictures (until a keyframe of another
    /// size arrives); the configuration is checked.
    pub fn new(config: ReceiverConfig, size: (u32, u32)) -> Result<Self, ReceiverBuildError> {
        config.validate()?;
        let decoder =
            PlainDecoder::new(size.0, size.1).map_err(|source| ReceiverBuildError::Decoder {
                width: size.0,
                height: size.1,
                source,
            })?;
        Ok(BaselineReceiver {
            inner: JitterReceiver::new(config),
            decoder,
            decoder_size: size,
            displayed: 0,
            decode_failures: 0,
            datagrams_sent: 0,
        })
    }

    /// The scheme named by the first media datagram, once one arrived.
    pub fn sender_scheme(&self) -> Option<WireId> {
        self.inner.scheme()
    }

    /// The size the decoder is open for.
    pub fn decoder_size(&self) -> (u32, u32) {
        self.decoder_size
    }

    /// The receiver's own counters.
    pub fn counters(&self) -> ReceiverCounters {
        ReceiverCounters {
            frames_displayed: self.displayed,
            decode_failures: self.decode_failures,
            datagrams_sent: self.datagrams_sent,
            ..self.inner.stats()
        }
    }

    /// What the receiver holds now (bounded by its [`ReceiverConfig`] whatever arrives).
    pub fn footprint(&self) -> Footprint {
        self.inner.footprint()
    }

    /// Decodes the next frame; a keyframe of another size re-opens the decoder first.
    fn decode(&mut self, data: &[u8], keyframe: bool) -> Result<Image, salsify_codec::CodecError> {
        if let Some(size) = keyframe.then(|| vp8_keyframe_size(data)).flatten() {
            if size != self.decoder_size {
                self.decoder = PlainDecoder::new(size.0, size.1)?;
                self.decoder_size = size;
            }
        }
        self.decoder.decode(data)
    }
}

/// The picture size in a VP8 keyframe's header (RFC 6386 9.1), if `data` is a keyframe.
pub fn vp8_keyframe_size(data: &[u8]) -> Option<(u32, u32)> {
    if data.len() < 10 || data[0] & 1 != 0 || data[3..6] != [0x9d, 0x01, 0x2a] {
        return None;
    }
    let side = |i: usize| u32::from(u16::from_le_bytes([data[i], data[i + 1]]) & 0x3fff);
    Some((side(6), side(8)))
}

impl ReceiverEndpoint for BaselineReceiver {
    /// The sending scheme's name once a media datagram named it, `"baseline"` before.
    fn scheme(&self) -> &'static str {
        self.inner.scheme().map_or("baseline", WireId::name)
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.inner
            .handle_datagram(now, datagram)
            .map_err(datagram_error)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }

    fn poll_output(&mut self, now: Instant) -> ReceiverOutput {
        loop {
            return match self.inner.poll_output() {
                Output::Transmit(d) => {
                    self.datagrams_sent += 1;
                    ReceiverOutput::Transmit(d)
                }
                Output::Frame {
                    frame,
                    at,
                    data,
                    keyframe,
                } => match self.decode(&data, keyframe) {
                    Ok(picture) => {
                        self.displayed += 1;
                        ReceiverOutput::Event(ReceiverEvent::Display(Displayed {
                            frame,
                            at,
                            picture,
                            bytes: data.len(),
                            coded: data.into(),
                            keyframe,
                            first_sent_at: None,
                            states: None,
                        }))
                    }
                    Err(_) => {
                        self.decode_failures += 1;
                        self.inner.handle_decode_failed(now);
                        continue;
                    }
                },
                Output::FramesLost { through, count, at } => {
                    ReceiverOutput::Event(ReceiverEvent::FramesLost { through, count, at })
                }
                Output::Timeout(t) => ReceiverOutput::Timeout(t),
            };
        }
    }

    fn stats(&self) -> ReceiverStats {
        self.counters().common()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MediaHeader, Packet, TAG};
    use salsify_codec::{scale, CbrConfig, CbrEncoder, SyntheticSource};
    use salsify_time::Duration;

    /// One media datagram carrying a whole frame.
    fn datagram(n: u32, data: &[u8], keyframe: bool, scheme: WireId) -> Vec<u8> {
        Packet::Media {
            header: MediaHeader {
                transport_seq: n,
                media_seq: n,
                frame: n,
                fragment: 0,
                count: 1,
                keyframe,
                retransmission: false,
                scheme,
            },
            payload: data.to_vec(),
        }
        .emit()
        .unwrap()
    }

    fn drain(r: &mut BaselineReceiver, now: Instant) -> (Vec<ReceiverEvent>, Vec<Packet>) {
        let (mut ev, mut tx) = (vec![], vec![]);
        loop {
            match r.poll_output(now) {
                ReceiverOutput::Event(e) => ev.push(e),
                ReceiverOutput::Transmit(b) => tx.push(Packet::parse(&b).unwrap()),
                ReceiverOutput::Timeout(_) => return (ev, tx),
            }
        }
    }

    /// Frames are decoded and shown at the size they were coded; a keyframe of another size
    /// (a resolution ladder's rung) re-opens the decoder; a frame that does not decode makes
    /// the receiver ask for a keyframe. The scheme is learnt from the first media datagram.
    #[test]
    fn decodes_at_the_coded_size_follows_size_changes_and_asks_for_keyframes() {
        let (w, h) = (160, 96);
        let video = SyntheticSource::new(w, h, 30, 5).unwrap();
        let config = ReceiverConfig::for_scheme(WireId::Vidaptive);
        let mut r = BaselineReceiver::new(config, (w, h)).unwrap();
        assert_eq!(r.scheme(), "baseline");
        let mut n = 0u32;
        let mut shown = vec![];
        for size in [(w, h), (80, 48)] {
            let mut enc = CbrEncoder::new(size.0, size.1, CbrConfig::default()).unwrap();
            enc.set_target_bitrate(500).unwrap();
            for i in 0..3u64 {
                let picture = scale(&video.frame(i), size.0, size.1).unwrap();
                let f = enc.encode(&picture, i * 33_333, i == 0).unwrap().unwrap();
                let now = Instant::from_millis(u64::from(n) * 33);
                let d = datagram(n, &f.data, f.keyframe, WireId::Vidaptive);
                r.handle_datagram(now, &d).unwrap();
                n += 1;
                let (ev, _) = drain(&mut r, now);
                for e in ev {
                    let ReceiverEvent::Display(d) = e else {
                        panic!("{e:?}")
                    };
                    assert_eq!(d.bytes, f.data.len());
                    shown.push((d.frame, d.picture.width(), d.picture.height()));
                }
            }
        }
        assert_eq!(r.scheme(), "vidaptive");
        assert_eq!(r.sender_scheme(), Some(WireId::Vidaptive));
        assert_eq!(
            shown,
            [
                (0, 160, 96),
                (1, 160, 96),
                (2, 160, 96),
                (3, 80, 48),
                (4, 80, 48),
                (5, 80, 48)
            ]
        );
        assert_eq!(r.decoder_size(), (80, 48));
        // An undecodable inter frame: not shown, a PLI instead.
        let now = Instant::from_millis(1000);
        r.handle_datagram(now, &datagram(n, &[0xff; 40], false, WireId::Vidaptive))
            .unwrap();
        let (ev, tx) = drain(&mut r, now);
        assert!(ev.is_empty(), "{ev:?}");
        assert!(tx.contains(&Packet::Pli), "{tx:?}");
        let s = r.stats();
        assert_eq!((s.frames_displayed, s.decode_failures), (6, 1));
        // Per-packet feedback (Vidaptive): one report per datagram, plus the PLI.
        assert_eq!(s.feedback_sent, 7 + 1);
        // Another protocol's datagram is told apart from a malformed one.
        assert!(matches!(
            r.handle_datagram(now, &[1, 1, 0, 0]),
            Err(DatagramError::OtherProtocol { first_byte: 1 })
        ));
        assert!(matches!(
            r.handle_datagram(now, &[TAG, 1, 0]),
            Err(DatagramError::Rejected(_))
        ));
        assert_eq!(r.stats().bad_datagrams, 2);
    }

    #[test]
    fn a_receiver_needs_a_valid_config_and_size() {
        let bad = ReceiverConfig {
            pli_interval: Duration::ZERO,
            ..ReceiverConfig::default()
        };
        assert!(matches!(
            BaselineReceiver::new(bad, (64, 48)),
            Err(ReceiverBuildError::Config(e)) if e.field() == "pli_interval_ms"
        ));
        assert!(matches!(
            BaselineReceiver::new(ReceiverConfig::default(), (0, 48)),
            Err(ReceiverBuildError::Decoder { .. })
        ));
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
