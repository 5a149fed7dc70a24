//! The AV1 frame as the codec hands it out, and its parser.
//!
//! ```text
//! offset  size  field
//!      0     8  source state hash, u64 little-endian (StateHash::INITIAL for keyframes)
//!      8     8  target state hash, u64 little-endian (the state decoding reaches)
//!     16     n  one AV1 temporal unit: OBUs in the low-overhead format (each with a size)
//! ```
//!
//! The parser walks the OBUs before libaom sees them and accepts only what this codec's
//! encoder makes: exactly one shown frame, a keyframe or an inter frame, the keyframe with a
//! sequence header that gives its size, the inter frame without one (a new sequence header
//! would reset the decoder's state).

use super::quality::Av1Quality;
use crate::error::CodecError;
use crate::frame::{parse_framed, EncodedFrame, FrameInfo, PayloadHeader};

/// One encoded AV1 frame and what it means for the decoder's state: the temporal unit behind
/// the state hashes, its quantizer on AV1's scale.
pub type Av1Frame = EncodedFrame<Av1Quality>;

impl EncodedFrame<Av1Quality> {
    /// The temporal unit alone (what an IVF file stores).
    pub fn av1(&self) -> &[u8] {
        self.payload()
    }
}

/// A parsed AV1 frame: its state names and what its OBUs say.
pub type Av1FrameInfo<'a> = FrameInfo<'a, Av1Header>;

/// What the codec needs from a temporal unit's OBUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Av1Header {
    /// A keyframe, with the sequence header's frame size; `None` for an inter frame.
    pub keyframe_size: Option<(u32, u32)>,
}

impl PayloadHeader for Av1Header {
    const MIN_LEN: usize = 2;

    fn parse(payload: &[u8]) -> Result<Self, CodecError> {
        parse_temporal_unit(payload)
    }

    fn keyframe_size(&self) -> Option<(u32, u32)> {
        self.keyframe_size
    }
}

/// Splits AV1 frame bytes into their parts, checking everything that can be checked cheaply.
pub fn parse_av1_frame(bytes: &[u8]) -> Result<Av1FrameInfo<'_>, CodecError> {
    parse_framed(bytes)
}

const OBU_SEQUENCE_HEADER: u8 = 1;
const OBU_TEMPORAL_DELIMITER: u8 = 2;
const OBU_FRAME_HEADER: u8 = 3;
const OBU_TILE_GROUP: u8 = 4;
const OBU_METADATA: u8 = 5;
const OBU_FRAME: u8 = 6;
const OBU_PADDING: u8 = 15;

const KEY_FRAME: u32 = 0;
const INTER_FRAME: u32 = 1;

/// Walks a temporal unit's OBUs (AV1 spec 5.3) and reads the frame type and, for keyframes,
/// the size.
pub fn parse_temporal_unit(tu: &[u8]) -> Result<Av1Header, CodecError> {
    let corrupt = |m: String| Err(CodecError::CorruptFrame(m));
    let mut rest = tu;
    let mut sequence: Option<SequenceHeader> = None;
    let mut frame_type: Option<u32> = None;
    while !rest.is_empty() {
        let (obu_type, payload, after) = split_obu(rest)?;
        rest = after;
        match obu_type {
            OBU_SEQUENCE_HEADER => {
                if sequence.is_some() || frame_type.is_some() {
                    return corrupt("a sequence header out of place".into());
                }
                sequence = Some(parse_sequence_header(payload)?);
            }
            OBU_FRAME | OBU_FRAME_HEADER => {
                if frame_type.is_some() {
                    return corrupt("more than one frame in a temporal unit".into());
                }
                let reduced = sequence.is_some_and(|s| s.reduced_still_picture_header);
                frame_type = Some(parse_frame_type(payload, reduced)?);
            }
            OBU_TILE_GROUP if frame_type.is_some() => {}
            OBU_TEMPORAL_DELIMITER | OBU_METADATA | OBU_PADDING => {}
            other => return corrupt(format!("unexpected OBU of type {other}")),
        }
    }
    match (frame_type, sequence) {
        (None, _) => corrupt("temporal unit without a frame".into()),
        (Some(KEY_FRAME), Some(s)) => {
            if crate::image::check_size(s.width, s.height).is_err() {
                return corrupt(format!("keyframe of size {}x{}", s.width, s.height));
            }
            Ok(Av1Header {
                keyframe_size: Some((s.width, s.height)),
            })
        }
        (Some(KEY_FRAME), None) => corrupt("keyframe without a sequence header".into()),
        (Some(INTER_FRAME), None) => Ok(Av1Header {
            keyframe_size: None,
        }),
        (Some(INTER_FRAME), Some(_)) => corrupt("inter frame with a sequence header".into()),
        (Some(t), _) => corrupt(format!("frame type {t} (only key and inter frames)")),
    }
}

/// One OBU: its type, its payload and the bytes after it.
fn split_obu(bytes: &[u8]) -> Result<(u8, &[u8], &[u8]), CodecError> {
    let corrupt = |m: &str| CodecError::CorruptFrame(m.into());
    let header = bytes[0];
    if header & 0x80 != 0 {
        return Err(corrupt("OBU forbidden bit set"));
    }
    let obu_type = (header >> 3) & 0x0f;
    let extension = header & 0x04 != 0;
    let has_size = header & 0x02 != 0;
    if !has_size {
        return Err(corrupt("OBU without a size field"));
    }
    let mut at = 1 + usize::from(extension);
    if at > bytes.len() {
        return Err(corrupt("OBU header cut short"));
    }
    let (size, used) = read_leb128(&bytes[at..])?;
    at += used;
    let size = usize::try_from(size).map_err(|_| corrupt("OBU size overflows"))?;
    if size > bytes.len() - at {
        return Err(CodecError::CorruptFrame(format!(
            "OBU of {size} bytes with {} left",
            bytes.len() - at
        )));
    }
    Ok((obu_type, &bytes[at..at + size], &bytes[at + size..]))
}

/// An unsigned LEB128 number of at most 8 bytes that fits 32 bits (AV1 spec 4.10.5).
fn read_leb128(bytes: &[u8]) -> Result<(u64, usize), CodecError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().take(8).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            if value > u64::from(u32::MAX) {
                break;
            }
            return Ok((value, i + 1));
        }
    }
    Err(CodecError::CorruptFrame("bad OBU size".into()))
}

/// Reads bits most significant first; running out is an error.
struct BitReader<'a> {
    bytes: &'a [u8],
    bit: usize,
}

impl BitReader<'_> {
    fn bits(&mut self, n: u32) -> Result<u32, CodecError> {
        let mut v = 0u32;
        for _ in 0..n {
            let byte = self
                .bytes
                .get(self.bit / 8)
                .ok_or_else(|| CodecError::CorruptFrame("OBU payload cut short".into()))?;
            v = (v << 1) | u32::from((byte >> (7 - self.bit % 8)) & 1);
            self.bit += 1;
        }
        Ok(v)
    }

    fn flag(&mut self) -> Result<bool, CodecError> {
        Ok(self.bits(1)? == 1)
    }

    /// `uvlc()` (AV1 spec 4.10.3); the value is skipped.
    fn skip_uvlc(&mut self) -> Result<(), CodecError> {
        let mut zeros = 0;
        while !self.flag()? {
            zeros += 1;
            if zeros >= 32 {
                return Ok(());
            }
        }
        self.bits(zeros).map(|_| ())
    }
}

/// What the codec reads from a sequence header.
#[derive(Clone, Copy, Debug)]
struct SequenceHeader {
    reduced_still_picture_header: bool,
    width: u32,
    height: u32,
}

/// `sequence_header_obu()` up to `max_frame_height_minus_1` (AV1 spec 5.5.1).
fn parse_sequence_header(payload: &[u8]) -> Result<SequenceHeader, CodecError> {
    let mut r = BitReader {
        bytes: payload,
        bit: 0,
    };
    let _profile = r.bits(3)?;
    let _still_picture = r.flag()?;
    let reduced = r.flag()?;
    if reduced {
        r.bits(5)?;
    } else {
        let mut decoder_model_info = false;
        let mut buffer_delay_bits = 0;
        if r.flag()? {
            // timing_info()
            r.bits(32)?;
            r.bits(32)?;
            if r.flag()? {
                r.skip_uvlc()?;
            }
            decoder_model_info = r.flag()?;
            if decoder_model_info {
                buffer_delay_bits = r.bits(5)? + 1;
                r.bits(32)?;
                r.bits(5)?;
                r.bits(5)?;
            }
        }
        let initial_display_delay = r.flag()?;
        let operating_points = r.bits(5)? + 1;
        for _ in 0..operating_points {
            r.bits(12)?;
            if r.bits(5)? > 7 {
                r.bits(1)?;
            }
            if decoder_model_info && r.flag()? {
                r.bits(buffer_delay_bits)?;
                r.bits(buffer_delay_bits)?;
                r.bits(1)?;
            }
            if initial_display_delay && r.flag()? {
                r.bits(4)?;
            }
        }
    }
    let width_bits = r.bits(4)? + 1;
    let height_bits = r.bits(4)? + 1;
    let width = r.bits(width_bits)? + 1;
    let height = r.bits(height_bits)? + 1;
    Ok(SequenceHeader {
        reduced_still_picture_header: reduced,
        width,
        height,
    })
}

/// `frame_type` from the start of `uncompressed_header()` (AV1 spec 5.9.2); a frame that
/// shows an existing one, or is not shown, is refused (this codec never makes one).
fn parse_frame_type(payload: &[u8], reduced_still_picture: bool) -> Result<u32, CodecError> {
    if reduced_still_picture {
        return Ok(KEY_FRAME);
    }
    let mut r = BitReader {
        bytes: payload,
        bit: 0,
    };
    if r.flag()? {
        return Err(CodecError::CorruptFrame(
            "a frame that shows an existing one".into(),
        ));
    }
    let frame_type = r.bits(2)?;
    if !r.flag()? {
        return Err(CodecError::CorruptFrame("a frame not shown".into()));
    }
    Ok(frame_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::StateHash;

    /// An OBU with a one-byte size field.
    fn obu(obu_type: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![(obu_type << 3) | 0x02, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    /// A sequence header without timing info, one operating point, 16-bit sizes.
    fn sequence_header(w: u32, h: u32) -> Vec<u8> {
        // profile 0, not still, not reduced, no timing info, no initial display delay,
        // 0 extra operating points, idc 0 (12 bits), level 8 (5 bits, > 7: tier bit).
        let mut bits: Vec<u8> = Vec::new();
        let mut push = |v: u32, n: u32| {
            for i in (0..n).rev() {
                bits.push(((v >> i) & 1) as u8);
            }
        };
        push(0, 3);
        push(0, 1);
        push(0, 1);
        push(0, 1);
        push(0, 1);
        push(0, 5);
        push(0, 12);
        push(8, 5);
        push(0, 1);
        push(15, 4);
        push(15, 4);
        push(w - 1, 16);
        push(h - 1, 16);
        bits.chunks(8)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u8, |a, (i, &b)| a | (b << (7 - i)))
            })
            .collect()
    }

    fn frame_obu(frame_type: u8) -> Vec<u8> {
        // show_existing_frame 0, frame_type, show_frame 1.
        obu(OBU_FRAME, &[(frame_type << 5) | 0x10, 0xab, 0xcd])
    }

    fn with_hashes(source: u64, tu: &[u8]) -> Vec<u8> {
        let mut v = source.to_le_bytes().to_vec();
        v.extend_from_slice(&7u64.to_le_bytes());
        v.extend_from_slice(tu);
        v
    }

    fn keyframe_tu(w: u32, h: u32) -> Vec<u8> {
        let mut tu = obu(OBU_TEMPORAL_DELIMITER, &[]);
        tu.extend(obu(OBU_SEQUENCE_HEADER, &sequence_header(w, h)));
        tu.extend(frame_obu(0));
        tu
    }

    #[test]
    fn reads_keyframe_size_and_inter_frames() {
        let key = with_hashes(0, &keyframe_tu(640, 360));
        let info = parse_av1_frame(&key).unwrap();
        assert_eq!(info.header.keyframe_size, Some((640, 360)));
        assert_eq!(info.target, StateHash(7));
        let mut inter = obu(OBU_TEMPORAL_DELIMITER, &[]);
        inter.extend(frame_obu(1));
        let inter = with_hashes(5, &inter);
        let info = parse_av1_frame(&inter).unwrap();
        assert_eq!(info.header.keyframe_size, None);
    }

    #[test]
    fn refuses_what_the_encoder_never_makes() {
        let mut two_frames = keyframe_tu(64, 48);
        two_frames.extend(frame_obu(1));
        let mut intra_only = obu(OBU_SEQUENCE_HEADER, &sequence_header(64, 48));
        intra_only.extend(frame_obu(2));
        let mut inter_with_sequence = obu(OBU_SEQUENCE_HEADER, &sequence_header(64, 48));
        inter_with_sequence.extend(frame_obu(1));
        let mut no_size_field = keyframe_tu(64, 48);
        no_size_field[0] &= !0x02;
        let mut overlong = keyframe_tu(64, 48);
        overlong[1] = 0x7f;
        let cases = [
            with_hashes(0, &two_frames),
            with_hashes(0, &intra_only),
            with_hashes(3, &inter_with_sequence),
            with_hashes(0, &no_size_field),
            with_hashes(0, &overlong),
            with_hashes(0, &keyframe_tu(63, 48)),
            with_hashes(0, &frame_obu(0)),
            with_hashes(3, &keyframe_tu(64, 48)),
            with_hashes(0, &obu(OBU_TEMPORAL_DELIMITER, &[])),
            keyframe_tu(64, 48)[..10].to_vec(),
        ];
        for bytes in cases {
            assert!(parse_av1_frame(&bytes).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn leb128_sizes() {
        assert_eq!(read_leb128(&[0x05]).unwrap(), (5, 1));
        assert_eq!(read_leb128(&[0x80, 0x01]).unwrap(), (128, 2));
        assert!(read_leb128(&[0x80; 9]).is_err());
        assert!(read_leb128(&[0xff, 0xff, 0xff, 0xff, 0x7f]).is_err());
    }
}
