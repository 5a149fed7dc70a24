//! The functional codec a call uses, chosen by name: VP8 or AV1 behind one encoder and one
//! decoder type, so the layers above (the schemes' encode executor, the transport's
//! receiver) hold one value whatever the call's codec.
//!
//! Both codecs' frames are [`EncodedFrame`]s (16 bytes of state hashes, then the codec's own
//! frame) and both move between [`State`]s. A frame's [`Quality`] is a quantizer on the
//! codec's own scale: VP8's index 0..=127, or libaom's AV1 quantizer 0..=63 (an
//! [`Av1Quality`]); the sender's quality options for each codec keep to its scale.
//!
//! The decoder learns the codec from the stream: an AV1 temporal unit starts with a temporal
//! delimiter OBU (`0x12 0x00`), a first byte no VP8 frame of this project's encoder has (it
//! would be a VP8 keyframe of bitstream version 1; libvpx writes version 0).

use std::fmt;

use crate::av1::{Av1Decoder, Av1Encoder, Av1EncoderConfig, Av1Frame, Av1Quality};
use crate::codec::{Decoder, Encoder, EncoderConfig};
use crate::error::CodecError;
use crate::frame::{EncodedFrame, HEADER_LEN};
use crate::image::Image;
use crate::quality::Quality;
use crate::state::State;

/// Which functional codec a call uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FunctionalCodec {
    /// libvpx's VP8 (the default: every result before issue 47).
    #[default]
    Vp8,
    /// libaom's AV1.
    Av1,
}

impl FunctionalCodec {
    /// Every codec, in the order `--help` lists them.
    pub const ALL: [FunctionalCodec; 2] = [FunctionalCodec::Vp8, FunctionalCodec::Av1];

    /// The name in experiment files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FunctionalCodec::Vp8 => "vp8",
            FunctionalCodec::Av1 => "av1",
        }
    }

    /// The codec named `name` (`vp8` or `av1`).
    pub fn from_name(name: &str) -> Option<FunctionalCodec> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The coarsest quantizer on the codec's scale (127 for VP8, 63 for AV1).
    pub fn worst_quality(self) -> Quality {
        match self {
            FunctionalCodec::Vp8 => Quality::WORST,
            FunctionalCodec::Av1 => Quality::new(Av1Quality::WORST.index()).expect("63 < 128"),
        }
    }

    /// The codec of a frame's bytes ([`EncodedFrame::bytes`]), as the decoder tells it.
    pub fn of_frame(frame: &[u8]) -> FunctionalCodec {
        Self::of_plain_frame(frame.get(HEADER_LEN..).unwrap_or_default())
    }

    /// The codec of a frame without its state hashes (what a plain decoder or an IVF file
    /// takes: a VP8 frame, or an AV1 temporal unit).
    pub fn of_plain_frame(plain: &[u8]) -> FunctionalCodec {
        match plain.get(..2) {
            Some([0x12, 0x00]) => FunctionalCodec::Av1,
            _ => FunctionalCodec::Vp8,
        }
    }

    /// The fourcc naming the codec in an IVF file header.
    pub fn ivf_fourcc(self) -> [u8; 4] {
        match self {
            FunctionalCodec::Vp8 => *b"VP80",
            FunctionalCodec::Av1 => *b"AV01",
        }
    }

    /// The codec an IVF fourcc names, if one of these.
    pub fn from_ivf_fourcc(fourcc: [u8; 4]) -> Option<FunctionalCodec> {
        Self::ALL.into_iter().find(|c| c.ivf_fourcc() == fourcc)
    }
}

impl fmt::Display for FunctionalCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A functional encoder of either codec for one frame size.
pub enum FunctionalEncoder {
    /// VP8.
    Vp8(Box<Encoder>),
    /// AV1.
    Av1(Box<Av1Encoder>),
}

impl FunctionalEncoder {
    /// An encoder of `codec` for `width` x `height` pictures; `vp8_cpu_used` is libvpx's
    /// speed (VP8 only: AV1 runs at its own default, [`Av1EncoderConfig::new`]).
    pub fn new(
        codec: FunctionalCodec,
        width: u32,
        height: u32,
        vp8_cpu_used: i32,
    ) -> Result<Self, CodecError> {
        Ok(match codec {
            FunctionalCodec::Vp8 => {
                FunctionalEncoder::Vp8(Box::new(Encoder::with_config(EncoderConfig {
                    cpu_used: vp8_cpu_used,
                    ..EncoderConfig::new(width, height)
                })?))
            }
            FunctionalCodec::Av1 => FunctionalEncoder::Av1(Box::new(Av1Encoder::with_config(
                Av1EncoderConfig::new(width, height),
            )?)),
        })
    }

    /// The codec.
    pub fn codec(&self) -> FunctionalCodec {
        match self {
            FunctionalEncoder::Vp8(_) => FunctionalCodec::Vp8,
            FunctionalEncoder::Av1(_) => FunctionalCodec::Av1,
        }
    }

    /// Encodes `image` from `source` at `quality`, on the codec's own quantizer scale (an
    /// error above 63 for AV1).
    pub fn encode(
        &mut self,
        source: &State,
        image: &Image,
        quality: Quality,
    ) -> Result<EncodedFrame, CodecError> {
        match self {
            FunctionalEncoder::Vp8(e) => e.encode(source, image, quality),
            FunctionalEncoder::Av1(e) => {
                let frame = e.encode(source, image, Av1Quality::new(quality.index())?)?;
                Ok(av1_as_encoded(frame))
            }
        }
    }

    /// The VP8 encoder, for work only VP8 does (the ablations' size search).
    pub fn vp8(&mut self) -> Option<&mut Encoder> {
        match self {
            FunctionalEncoder::Vp8(e) => Some(e),
            FunctionalEncoder::Av1(_) => None,
        }
    }
}

/// An AV1 frame as the one frame type the layers above carry; its quantizer moves over as
/// the same number, on AV1's scale.
fn av1_as_encoded(frame: Av1Frame) -> EncodedFrame {
    EncodedFrame {
        quality: Quality::new(frame.quality.index()).expect("AV1 quantizers are below 64"),
        keyframe: frame.keyframe,
        source: frame.source,
        target: frame.target,
        bytes: frame.bytes,
    }
}

/// A decoder of either codec, each frame decoded by the codec it is in
/// ([`FunctionalCodec::of_frame`]); the AV1 decoder is opened on the first AV1 frame.
pub struct FunctionalDecoder {
    vp8: Decoder,
    av1: Option<Av1Decoder>,
}

impl FunctionalDecoder {
    /// A decoder with no state loaded.
    pub fn new() -> Result<Self, CodecError> {
        Ok(FunctionalDecoder {
            vp8: Decoder::new()?,
            av1: None,
        })
    }

    /// Decodes `frame` from `state`, as [`StateDecoder::decode`](crate::StateDecoder::decode) does
    /// for its codec.
    pub fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Image), CodecError> {
        match FunctionalCodec::of_frame(frame) {
            FunctionalCodec::Vp8 => self.vp8.decode(state, frame),
            FunctionalCodec::Av1 => {
                let av1 = match &mut self.av1 {
                    Some(d) => d,
                    None => self.av1.insert(Av1Decoder::new()?),
                };
                av1.decode(state, frame)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticSource;

    /// Each codec's frames are told apart and decode through the one decoder, either
    /// codec's stream after the other.
    #[test]
    fn one_decoder_follows_either_codec() {
        let source = SyntheticSource::new(96, 64, 30, 3).unwrap();
        let mut decoder = FunctionalDecoder::new().unwrap();
        for codec in [
            FunctionalCodec::Av1,
            FunctionalCodec::Vp8,
            FunctionalCodec::Av1,
        ] {
            let mut encoder = FunctionalEncoder::new(codec, 96, 64, -8).unwrap();
            assert_eq!(encoder.codec(), codec);
            let (mut sent, mut shown) = (State::initial(), State::initial());
            for i in 0..3 {
                let q = Quality::new(30).unwrap();
                let frame = encoder.encode(&sent, &source.frame(i), q).unwrap();
                assert_eq!(FunctionalCodec::of_frame(&frame.bytes), codec);
                assert_eq!(frame.quality, q);
                let (state, _) = decoder.decode(&shown, &frame.bytes).unwrap();
                assert_eq!(state, frame.target);
                sent = frame.target;
                shown = state;
            }
        }
    }

    #[test]
    fn av1_refuses_a_quantizer_off_its_scale() {
        let image = SyntheticSource::new(64, 64, 30, 3).unwrap().frame(0);
        let mut encoder = FunctionalEncoder::new(FunctionalCodec::Av1, 64, 64, -8).unwrap();
        let q = Quality::new(64).unwrap();
        assert!(encoder.encode(&State::initial(), &image, q).is_err());
        assert_eq!(FunctionalCodec::Av1.worst_quality().index(), 63);
    }

    #[test]
    fn names_round_trip() {
        for c in FunctionalCodec::ALL {
            assert_eq!(FunctionalCodec::from_name(c.name()), Some(c));
        }
        assert_eq!(FunctionalCodec::from_name("h264"), None);
        assert_eq!(FunctionalCodec::of_frame(&[0; 4]), FunctionalCodec::Vp8);
        assert_eq!(
            FunctionalCodec::of_plain_frame(&[0x12, 0, 0x0a]),
            FunctionalCodec::Av1
        );
        assert_eq!(FunctionalCodec::of_plain_frame(&[]), FunctionalCodec::Vp8);
        for c in FunctionalCodec::ALL {
            assert_eq!(FunctionalCodec::from_ivf_fourcc(c.ivf_fourcc()), Some(c));
        }
        assert_eq!(FunctionalCodec::from_ivf_fourcc(*b"VP90"), None);
    }
}
