//! A size-only fake codec for tests and libvpx-free simulation.
//!
//! Frame sizes follow a simple model of a real encoder (bytes halve every `halving_step`
//! quantizer steps, keyframes cost more, content varies per picture), and states are just
//! hashes. Decoding checks the source state exactly like the real codec does, so the
//! transport's promise "never display a frame from a state it lacks" is tested the same way.
//!
//! Frame bytes: source hash, target hash, picture id (u64 little-endian each), then padding.

use salsify_codec::{Quality, StateHash};

use crate::codec::{CodecState, DecodeError, FrameDecoder, SendableFrame};

/// Bytes of a fake frame's header; also its minimum size.
pub const FAKE_HEADER_LEN: usize = 24;

/// A fake decoder state: only its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FakeState(pub StateHash);

impl CodecState for FakeState {
    fn hash(&self) -> StateHash {
        self.0
    }
}

/// A fake encoded frame.
#[derive(Clone, Debug)]
pub struct FakeFrame {
    /// Header and padding, as long as the size model says.
    pub bytes: Vec<u8>,
    /// Source state ([`StateHash::INITIAL`] for keyframes).
    pub source: StateHash,
    /// Target state.
    pub target: FakeState,
    /// Quantizer used (the picture id travels only in `bytes`, as the decoder reads it).
    pub quality: Quality,
}

impl SendableFrame for FakeFrame {
    type State = FakeState;
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    fn source(&self) -> StateHash {
        self.source
    }
    fn target(&self) -> &FakeState {
        &self.target
    }
    fn quality(&self) -> Quality {
        self.quality
    }
}

/// How big a fake frame is.
#[derive(Clone, Copy, Debug)]
pub struct SizeModel {
    /// Bytes of an inter frame at quantizer 64 for average content.
    pub bytes_at_q64: f64,
    /// Quantizer steps over which the size halves.
    pub halving_step: f64,
    /// Size of a keyframe relative to an inter frame.
    pub keyframe_factor: f64,
    /// Content complexity varies per picture by up to this fraction either way.
    pub content_spread: f64,
}

impl Default for SizeModel {
    fn default() -> Self {
        SizeModel {
            bytes_at_q64: 1500.0,
            halving_step: 12.0,
            keyframe_factor: 4.0,
            content_spread: 0.2,
        }
    }
}

impl SizeModel {
    /// Bytes of picture `picture` coded at `quality`.
    pub fn size(&self, quality: Quality, keyframe: bool, picture: u64) -> usize {
        let steps = (64.0 - f64::from(quality.index())) / self.halving_step;
        let unit = (mix(picture, 0x5eed) >> 11) as f64 / (1u64 << 53) as f64;
        let content = 1.0 + self.content_spread * (2.0 * unit - 1.0);
        let key = if keyframe { self.keyframe_factor } else { 1.0 };
        let bytes = self.bytes_at_q64 * steps.exp2() * content * key;
        (bytes.round() as usize).max(FAKE_HEADER_LEN)
    }
}

/// The fake encoder.
#[derive(Clone, Debug, Default)]
pub struct FakeEncoder {
    /// The size model.
    pub model: SizeModel,
}

impl FakeEncoder {
    /// Encodes picture `picture` from `source` at `quality`; a keyframe from the initial state.
    pub fn encode(&self, source: &FakeState, picture: u64, quality: Quality) -> FakeFrame {
        let keyframe = source.0 == StateHash::INITIAL;
        let size = self.model.size(quality, keyframe, picture);
        let target = match mix(mix(source.0 .0, picture), u64::from(quality.index())) {
            0 => StateHash(1),
            h => StateHash(h),
        };
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(&source.0 .0.to_le_bytes());
        bytes.extend_from_slice(&target.0.to_le_bytes());
        bytes.extend_from_slice(&picture.to_le_bytes());
        bytes.resize(size, 0xa5);
        FakeFrame {
            bytes,
            source: source.0,
            target: FakeState(target),
            quality,
        }
    }

    /// The finest quality in `lo..=hi` whose frame fits `target_bytes`, else `hi`: a perfect
    /// version of a conventional encoder's up-front quality prediction.
    pub fn quality_for_size(
        &self,
        source: &FakeState,
        picture: u64,
        target_bytes: usize,
        lo: Quality,
        hi: Quality,
    ) -> Quality {
        let keyframe = source.0 == StateHash::INITIAL;
        (lo.index()..=hi.index())
            .filter_map(|q| Quality::new(q).ok())
            .find(|&q| self.model.size(q, keyframe, picture) <= target_bytes)
            .unwrap_or(hi)
    }
}

/// What a fake decode shows: which picture, reached which state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FakePicture {
    /// The picture id the sender encoded.
    pub picture: u64,
    /// The state decoding reached.
    pub state: StateHash,
}

/// The fake decoder: checks the source and returns the target the frame names.
#[derive(Clone, Copy, Debug, Default)]
pub struct FakeDecoder;

impl FrameDecoder for FakeDecoder {
    type State = FakeState;
    type Picture = FakePicture;

    fn decode(
        &mut self,
        state: &FakeState,
        frame: &[u8],
    ) -> Result<(FakeState, FakePicture), DecodeError> {
        if frame.len() < FAKE_HEADER_LEN {
            return Err(DecodeError::Corrupt(format!("{} bytes", frame.len())));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&frame[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let (source, target, picture) = (StateHash(word(0)), StateHash(word(8)), word(16));
        if source != StateHash::INITIAL && source != state.0 {
            return Err(DecodeError::WrongSource {
                expected: source,
                given: state.0,
            });
        }
        if target == StateHash::INITIAL {
            return Err(DecodeError::Corrupt("target is the initial state".into()));
        }
        Ok((
            FakeState(target),
            FakePicture {
                picture,
                state: target,
            },
        ))
    }

    fn initial_state(&self) -> FakeState {
        FakeState(StateHash::INITIAL)
    }
}

/// splitmix64 of `a` combined with `b`: a cheap, well-spread hash.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(i: u8) -> Quality {
        Quality::new(i).unwrap()
    }

    #[test]
    fn finer_quality_means_more_bytes_and_decoding_checks_the_source() {
        let enc = FakeEncoder::default();
        let start = FakeState(StateHash::INITIAL);
        let key = enc.encode(&start, 1, q(40));
        assert!(enc.encode(&key.target, 2, q(30)).len() > enc.encode(&key.target, 2, q(60)).len());
        let inter = enc.encode(&key.target, 2, q(64));
        let mut dec = FakeDecoder;
        let (s1, _) = dec.decode(&FakeState(StateHash(77)), &key.bytes).unwrap();
        assert_eq!(s1, key.target);
        let (s2, pic) = dec.decode(&s1, &inter.bytes).unwrap();
        assert_eq!((s2, pic.picture), (inter.target, 2));
        assert!(matches!(
            dec.decode(&start, &inter.bytes),
            Err(DecodeError::WrongSource { .. })
        ));
        assert!(dec.decode(&s1, &inter.bytes[..10]).is_err());
    }

    #[test]
    fn quality_for_size_picks_the_finest_that_fits() {
        let enc = FakeEncoder::default();
        let s = FakeState(StateHash(5));
        let chosen = enc.quality_for_size(&s, 3, 2000, q(3), q(127));
        assert!(enc.model.size(chosen, false, 3) <= 2000);
        assert!(enc.model.size(q(chosen.index() - 1), false, 3) > 2000);
    }
}
