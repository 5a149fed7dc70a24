//! The compressed frame as the codec hands it out: the codec's own frame behind its two
//! state names.
//!
//! ```text
//! offset  size  field
//!      0     8  source state hash, u64 little-endian (StateHash::INITIAL for keyframes)
//!      8     8  target state hash, u64 little-endian (the state decoding reaches)
//!     16     n  one VP8 frame (RFC 6386), as an IVF file or RTP payload would carry it, or
//!               one AV1 temporal unit (see `av1::frame`)
//! ```
//!
//! The hashes let the decoder refuse a frame given the wrong state, and check after decoding
//! that it reached exactly the encoder's reconstruction, so a picture from a wrong or diverged
//! state is never returned.

use std::fmt;

use crate::error::CodecError;
use crate::state::{State, StateHash};
use crate::Quality;

/// Bytes before the codec's own frame.
pub const HEADER_LEN: usize = 16;

/// One encoded frame and what it means for the decoder's state; `Q` is the quantizer on the
/// codec's own scale (VP8's [`Quality`] by default; [`crate::Av1Frame`] is the AV1 one).
#[derive(Clone, Debug)]
pub struct EncodedFrame<Q = Quality> {
    /// The frame as sent: [`HEADER_LEN`] bytes of state hashes, then the codec's frame.
    pub bytes: Vec<u8>,
    /// The state this frame decodes from ([`StateHash::INITIAL`] for keyframes: any state).
    pub source: StateHash,
    /// The state the decoder reaches, holding the encoder's reconstruction.
    pub target: State,
    /// The quantizer the frame was coded with.
    pub quality: Q,
    /// A keyframe: decodable from any state.
    pub keyframe: bool,
}

impl<Q> EncodedFrame<Q> {
    /// Builds the frame bytes from the codec's frame and the two states.
    pub(crate) fn new(payload: &[u8], source: StateHash, target: State, quality: Q) -> Self {
        let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
        bytes.extend_from_slice(&source.0.to_le_bytes());
        bytes.extend_from_slice(&target.hash().0.to_le_bytes());
        bytes.extend_from_slice(payload);
        let keyframe = source == StateHash::INITIAL;
        EncodedFrame {
            bytes,
            source,
            target,
            quality,
            keyframe,
        }
    }

    /// The codec's frame alone, without the state hashes (what an IVF file stores).
    pub fn payload(&self) -> &[u8] {
        &self.bytes[HEADER_LEN..]
    }

    /// Size on the wire in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true for a frame the encoder made; here for API completeness.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl EncodedFrame<Quality> {
    /// The VP8 frame alone (what an IVF file stores).
    pub fn vp8(&self) -> &[u8] {
        self.payload()
    }
}

/// The header of a codec's own frame, as far as the functional codec reads it.
pub trait PayloadHeader: Copy + fmt::Debug {
    /// The fewest bytes a frame of the codec has.
    const MIN_LEN: usize;
    /// Parses the codec's frame, checking what can be checked cheaply.
    fn parse(payload: &[u8]) -> Result<Self, CodecError>;
    /// A keyframe's visible size; `None` for an inter frame.
    fn keyframe_size(&self) -> Option<(u32, u32)>;
}

/// A parsed frame: its state names and its header (VP8's by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo<'a, H = Vp8Header> {
    /// The state the frame decodes from.
    pub source: StateHash,
    /// The state decoding reaches.
    pub target: StateHash,
    /// The codec's frame.
    pub payload: &'a [u8],
    /// What the codec's header says.
    pub header: H,
}

/// The first bytes of a VP8 frame (RFC 6386 section 9.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vp8Header {
    /// A keyframe, with its visible size; `None` for an inter frame.
    pub keyframe_size: Option<(u32, u32)>,
}

impl PayloadHeader for Vp8Header {
    const MIN_LEN: usize = 3;

    fn parse(payload: &[u8]) -> Result<Self, CodecError> {
        parse_vp8_header(payload)
    }

    fn keyframe_size(&self) -> Option<(u32, u32)> {
        self.keyframe_size
    }
}

/// Splits VP8 frame bytes into their parts, checking everything that can be checked cheaply.
pub fn parse_frame(bytes: &[u8]) -> Result<FrameInfo<'_>, CodecError> {
    parse_framed(bytes)
}

/// Splits frame bytes of the codec whose header is `H` into their parts: the state hashes,
/// checked against the frame type (keyframes name the initial state), and the codec's frame.
pub fn parse_framed<H: PayloadHeader>(bytes: &[u8]) -> Result<FrameInfo<'_, H>, CodecError> {
    if bytes.len() < HEADER_LEN + H::MIN_LEN {
        return Err(CodecError::CorruptFrame(format!(
            "{} bytes is shorter than the smallest frame",
            bytes.len()
        )));
    }
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        StateHash(u64::from_le_bytes(b))
    };
    let (source, target) = (word(0), word(8));
    let payload = &bytes[HEADER_LEN..];
    let header = H::parse(payload)?;
    if header.keyframe_size().is_some() != (source == StateHash::INITIAL) {
        return Err(CodecError::CorruptFrame(format!(
            "source state {source} does not match the frame type (keyframes name the initial state)"
        )));
    }
    if target == StateHash::INITIAL {
        return Err(CodecError::CorruptFrame(
            "target is the initial state".into(),
        ));
    }
    Ok(FrameInfo {
        source,
        target,
        payload,
        header,
    })
}

/// Parses the VP8 frame tag and, for keyframes, the start code and size.
pub fn parse_vp8_header(vp8: &[u8]) -> Result<Vp8Header, CodecError> {
    let corrupt = |m: String| Err(CodecError::CorruptFrame(m));
    if vp8.len() < 3 {
        return corrupt(format!("VP8 frame of {} bytes", vp8.len()));
    }
    let tag = u32::from(vp8[0]) | u32::from(vp8[1]) << 8 | u32::from(vp8[2]) << 16;
    let keyframe = tag & 1 == 0;
    let version = (tag >> 1) & 7;
    let first_partition = (tag >> 5) as usize;
    if version > 3 {
        return corrupt(format!("VP8 version {version}"));
    }
    let header_len = if keyframe { 10 } else { 3 };
    if vp8.len() < header_len || first_partition > vp8.len() - header_len {
        return corrupt(format!(
            "first partition of {first_partition} bytes in a {}-byte frame",
            vp8.len()
        ));
    }
    if !keyframe {
        return Ok(Vp8Header {
            keyframe_size: None,
        });
    }
    if vp8[3..6] != [0x9d, 0x01, 0x2a] {
        return corrupt("keyframe without the VP8 start code".into());
    }
    let width = u32::from(u16::from_le_bytes([vp8[6], vp8[7]]) & 0x3fff);
    let height = u32::from(u16::from_le_bytes([vp8[8], vp8[9]]) & 0x3fff);
    if crate::image::check_size(width, height).is_err() {
        return corrupt(format!("keyframe of size {width}x{height}"));
    }
    Ok(Vp8Header {
        keyframe_size: Some((width, height)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyframe_bytes(w: u16, h: u16) -> Vec<u8> {
        let mut v = 0u64.to_le_bytes().to_vec();
        v.extend_from_slice(&7u64.to_le_bytes());
        // tag: keyframe, version 0, shown, first partition of 1 byte
        v.extend_from_slice(&[0x10 | (1 << 5), 0, 0, 0x9d, 0x01, 0x2a]);
        v.extend_from_slice(&w.to_le_bytes());
        v.extend_from_slice(&h.to_le_bytes());
        v.push(0);
        v
    }

    #[test]
    fn parses_a_keyframe_header() {
        let bytes = keyframe_bytes(320, 180);
        let info = parse_frame(&bytes).unwrap();
        assert_eq!(info.header.keyframe_size, Some((320, 180)));
        assert_eq!(info.target, StateHash(7));
    }

    #[test]
    fn rejects_inconsistent_or_short_frames() {
        let mut bad_source = keyframe_bytes(320, 180);
        bad_source[0] = 1;
        let mut bad_start = keyframe_bytes(320, 180);
        bad_start[HEADER_LEN + 3] = 0;
        let mut bad_partition = keyframe_bytes(320, 180);
        bad_partition[HEADER_LEN + 1] = 0xff;
        let cases = [
            bad_source,
            bad_start,
            bad_partition,
            keyframe_bytes(0, 180),
            keyframe_bytes(321, 180),
            keyframe_bytes(320, 180)[..HEADER_LEN + 5].to_vec(),
            vec![0; 10],
        ];
        for bytes in cases {
            assert!(parse_frame(&bytes).is_err(), "{bytes:?}");
        }
    }
}
