//! Sprout's datagrams on this project's wire: data (video fragments, bulk filler, heartbeats)
//! one way, feedback carrying the forecast the other.
//!
//! Layout (big-endian), after the common head `[tag 0x53] [version 1] [kind] [session u16]`:
//! - data (kind 0): `[flags u8] [seq u64] [throwaway u32] [time_to_next ms u16]
//!   [sent_at us u64] [frame u32] [fragment u16] [fragments u16]` then the payload (a slice of
//!   the frame; filler for bulk; nothing for a heartbeat). Flags: bit 0 filler, bit 1
//!   heartbeat, bit 2 the receiver is to run Sprout-EWMA; others must be zero.
//! - feedback (kind 1): `[received_or_lost u64] [tick u64] [n u8] [n x count u32]
//!   [decoded: flag u8, frame u32, state u64] [lost: flag u8, frame u32]`.
//!
//! Every field is checked: a datagram parses whole or not at all.

use salsify_codec::StateHash;
use salsify_sprout_model::ForecasterKind;

/// First byte of every Sprout datagram.
pub const SPROUT_WIRE_TAG: u8 = salsify_endpoint::SPROUT_WIRE_TAG;
/// The wire version.
pub const VERSION: u8 = 1;
/// Bytes before a data datagram's payload.
pub const DATA_HEADER: usize = 36;
/// Most forecast counts a feedback datagram carries.
pub const MAX_COUNTS: usize = 64;

const KIND_DATA: u8 = 0;
const KIND_FEEDBACK: u8 = 1;
const FLAG_FILLER: u8 = 1;
const FLAG_HEARTBEAT: u8 = 2;
const FLAG_EWMA: u8 = 4;

/// What a data datagram carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// A fragment of a video frame.
    Fragment,
    /// Bulk filler (no video).
    Filler,
    /// Nothing: a heartbeat.
    Heartbeat,
}

/// A data datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// The sending session.
    pub session: u16,
    /// What the payload is.
    pub payload: Payload,
    /// The forecaster the receiver is to run.
    pub forecaster: ForecasterKind,
    /// Byte offset of this datagram in the session's stream.
    pub seq: u64,
    /// How far back the oldest datagram sent within the reorder limit starts.
    pub throwaway: u32,
    /// Milliseconds until the sender's next datagram (0: at once).
    pub time_to_next_ms: u16,
    /// When it was sent, sender's clock, microseconds.
    pub sent_at_us: u64,
    /// Frame number (fragments).
    pub frame: u32,
    /// Fragment index within the frame.
    pub fragment: u16,
    /// Fragments in the frame.
    pub fragments: u16,
}

/// A feedback datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feedback {
    /// The session it answers.
    pub session: u16,
    /// Bytes received or written off.
    pub received_or_lost: u64,
    /// The receiver tick the forecast was made in (receiver's clock, microseconds).
    pub tick: u64,
    /// The cumulative forecast, in packet units.
    pub counts: Vec<u32>,
    /// The newest frame decoded, and the state it reached.
    pub decoded: Option<(u32, StateHash)>,
    /// The newest frame given up on (lost or undecodable).
    pub lost: Option<u32>,
}

/// Why a datagram did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SproutWireError {
    /// Not a Sprout datagram.
    #[error("not a Sprout datagram (first byte {0:#04x})")]
    Tag(u8),
    /// Another version.
    #[error("Sprout wire version {0}, expected {VERSION}")]
    Version(u8),
    /// Too short for its kind, or bytes left over.
    #[error("{kind} datagram of {len} bytes has the wrong length")]
    Length {
        /// The kind.
        kind: &'static str,
        /// Its length.
        len: usize,
    },
    /// A field out of range.
    #[error("bad {0}")]
    Field(&'static str),
}

/// A parsed datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// Data, with its payload.
    Data(DataHeader, &'a [u8]),
    /// Feedback.
    Feedback(Feedback),
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.bytes.get(self.at..self.at + N)?;
        self.at += N;
        b.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_be_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_be_bytes)
    }
    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at.min(self.bytes.len())..]
    }
}

/// Parses any Sprout datagram.
pub fn parse(bytes: &[u8]) -> Result<Datagram<'_>, SproutWireError> {
    let first = *bytes.first().ok_or(SproutWireError::Length {
        kind: "empty",
        len: 0,
    })?;
    if first != SPROUT_WIRE_TAG {
        return Err(SproutWireError::Tag(first));
    }
    let mut r = Reader { bytes, at: 1 };
    let short = |kind| SproutWireError::Length {
        kind,
        len: bytes.len(),
    };
    let version = r.u8().ok_or(short("head"))?;
    if version != VERSION {
        return Err(SproutWireError::Version(version));
    }
    let kind = r.u8().ok_or(short("head"))?;
    let session = r.u16().ok_or(short("head"))?;
    match kind {
        KIND_DATA => parse_data(&mut r, session)
            .ok_or(short("data"))
            .and_then(|x| x),
        KIND_FEEDBACK => parse_feedback(&mut r, session)
            .ok_or(short("feedback"))
            .and_then(|x| x),
        _ => Err(SproutWireError::Field("kind")),
    }
}

fn parse_data<'a>(
    r: &mut Reader<'a>,
    session: u16,
) -> Option<Result<Datagram<'a>, SproutWireError>> {
    let flags = r.u8()?;
    let header = DataHeader {
        session,
        forecaster: match flags & FLAG_EWMA {
            0 => ForecasterKind::Sprout,
            _ => ForecasterKind::Ewma,
        },
        payload: match flags & !FLAG_EWMA {
            0 => Payload::Fragment,
            FLAG_FILLER => Payload::Filler,
            FLAG_HEARTBEAT => Payload::Heartbeat,
            _ => return Some(Err(SproutWireError::Field("flags"))),
        },
        seq: r.u64()?,
        throwaway: r.u32()?,
        time_to_next_ms: r.u16()?,
        sent_at_us: r.u64()?,
        frame: r.u32()?,
        fragment: r.u16()?,
        fragments: r.u16()?,
    };
    let payload = r.rest();
    let bad = match header.payload {
        Payload::Fragment => {
            header.fragments == 0 || header.fragment >= header.fragments || payload.is_empty()
        }
        Payload::Heartbeat => !payload.is_empty(),
        Payload::Filler => false,
    };
    if bad {
        return Some(Err(SproutWireError::Field("fragment")));
    }
    Some(Ok(Datagram::Data(header, payload)))
}

fn parse_feedback<'a>(
    r: &mut Reader<'a>,
    session: u16,
) -> Option<Result<Datagram<'a>, SproutWireError>> {
    let received_or_lost = r.u64()?;
    let tick = r.u64()?;
    let n = usize::from(r.u8()?);
    if n == 0 || n > MAX_COUNTS {
        return Some(Err(SproutWireError::Field("forecast length")));
    }
    let counts: Vec<u32> = (0..n).map(|_| r.u32()).collect::<Option<_>>()?;
    if counts.windows(2).any(|w| w[1] < w[0]) {
        return Some(Err(SproutWireError::Field("forecast (not cumulative)")));
    }
    let decoded = match (r.u8()?, r.u32()?, r.u64()?) {
        (0, 0, 0) => None,
        (1, frame, hash) => Some((frame, StateHash(hash))),
        _ => return Some(Err(SproutWireError::Field("decoded"))),
    };
    let lost = match (r.u8()?, r.u32()?) {
        (0, 0) => None,
        (1, frame) => Some(frame),
        _ => return Some(Err(SproutWireError::Field("lost"))),
    };
    if !r.rest().is_empty() {
        return None;
    }
    Some(Ok(Datagram::Feedback(Feedback {
        session,
        received_or_lost,
        tick,
        counts,
        decoded,
        lost,
    })))
}

fn head(out: &mut Vec<u8>, kind: u8, session: u16) {
    out.extend_from_slice(&[SPROUT_WIRE_TAG, VERSION, kind]);
    out.extend_from_slice(&session.to_be_bytes());
}

/// Writes a data datagram.
pub fn emit_data(h: &DataHeader, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(DATA_HEADER + payload.len());
    head(&mut out, KIND_DATA, h.session);
    let kind = match h.forecaster {
        ForecasterKind::Sprout => 0,
        ForecasterKind::Ewma => FLAG_EWMA,
    };
    out.push(
        kind | match h.payload {
            Payload::Fragment => 0,
            Payload::Filler => FLAG_FILLER,
            Payload::Heartbeat => FLAG_HEARTBEAT,
        },
    );
    out.extend_from_slice(&h.seq.to_be_bytes());
    out.extend_from_slice(&h.throwaway.to_be_bytes());
    out.extend_from_slice(&h.time_to_next_ms.to_be_bytes());
    out.extend_from_slice(&h.sent_at_us.to_be_bytes());
    out.extend_from_slice(&h.frame.to_be_bytes());
    out.extend_from_slice(&h.fragment.to_be_bytes());
    out.extend_from_slice(&h.fragments.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Writes a feedback datagram (at most [`MAX_COUNTS`] counts are sent).
pub fn emit_feedback(f: &Feedback) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + 4 * f.counts.len());
    head(&mut out, KIND_FEEDBACK, f.session);
    out.extend_from_slice(&f.received_or_lost.to_be_bytes());
    out.extend_from_slice(&f.tick.to_be_bytes());
    let counts = &f.counts[..f.counts.len().min(MAX_COUNTS)];
    out.push(counts.len() as u8);
    for c in counts {
        out.extend_from_slice(&c.to_be_bytes());
    }
    let (flag, frame, hash) = f.decoded.map_or((0, 0, 0), |(fr, h)| (1, fr, h.0));
    out.push(flag);
    out.extend_from_slice(&frame.to_be_bytes());
    out.extend_from_slice(&hash.to_be_bytes());
    let (flag, frame) = f.lost.map_or((0, 0), |fr| (1, fr));
    out.push(flag);
    out.extend_from_slice(&frame.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header(payload: Payload) -> DataHeader {
        DataHeader {
            session: 7,
            payload,
            forecaster: ForecasterKind::Ewma,
            seq: 1 << 40,
            throwaway: 3000,
            time_to_next_ms: 16,
            sent_at_us: 123_456,
            frame: 9,
            fragment: 1,
            fragments: 3,
        }
    }

    #[test]
    fn data_and_feedback_round_trip() {
        let h = header(Payload::Fragment);
        let bytes = emit_data(&h, b"abc");
        assert_eq!(bytes.len(), DATA_HEADER + 3);
        assert_eq!(parse(&bytes).unwrap(), Datagram::Data(h, b"abc"));
        let beat = header(Payload::Heartbeat);
        assert_eq!(
            parse(&emit_data(&beat, &[])).unwrap(),
            Datagram::Data(beat, &[])
        );
        let f = Feedback {
            session: 7,
            received_or_lost: 99,
            tick: 20_000,
            counts: vec![1, 2, 3, 3],
            decoded: Some((4, StateHash(77))),
            lost: Some(2),
        };
        assert_eq!(parse(&emit_feedback(&f)).unwrap(), Datagram::Feedback(f));
    }

    #[test]
    fn malformed_datagrams_are_refused_with_a_reason() {
        let good = emit_data(&header(Payload::Fragment), b"x");
        assert_eq!(parse(&[0xB1, 1]), Err(SproutWireError::Tag(0xB1)));
        assert!(matches!(
            parse(&good[..20]),
            Err(SproutWireError::Length { .. })
        ));
        let mut v = good.clone();
        v[1] = 9;
        assert_eq!(parse(&v), Err(SproutWireError::Version(9)));
        let mut bad_flags = good.clone();
        bad_flags[5] = 0x80;
        assert_eq!(parse(&bad_flags), Err(SproutWireError::Field("flags")));
        // A heartbeat with a payload, a fragment index past the count.
        assert!(parse(&emit_data(&header(Payload::Heartbeat), b"x")).is_err());
        let past = DataHeader {
            fragment: 3,
            ..header(Payload::Fragment)
        };
        assert!(parse(&emit_data(&past, b"x")).is_err());
        let f = Feedback {
            session: 1,
            received_or_lost: 0,
            tick: 0,
            counts: vec![3, 2],
            decoded: None,
            lost: None,
        };
        assert!(parse(&emit_feedback(&f)).is_err(), "not cumulative");
        let mut trailing = emit_feedback(&Feedback {
            counts: vec![1],
            ..f
        });
        trailing.push(0);
        assert!(parse(&trailing).is_err());
    }

    proptest! {
        #[test]
        fn any_bytes_parse_or_fail_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
            let mut tagged = bytes.clone();
            tagged.splice(0..0, [SPROUT_WIRE_TAG, VERSION]);
            let _ = parse(&tagged);
        }

        #[test]
        fn every_feedback_round_trips(
            rol in any::<u64>(), tick in any::<u64>(),
            steps in proptest::collection::vec(0u32..1000, 1..MAX_COUNTS),
            decoded in proptest::option::of((any::<u32>(), any::<u64>())),
            lost in proptest::option::of(any::<u32>()),
        ) {
            let counts: Vec<u32> = steps.iter().scan(0u32, |s, x| { *s += x; Some(*s) }).collect();
            let f = Feedback { session: 3, received_or_lost: rol, tick, counts,
                decoded: decoded.map(|(a, b)| (a, StateHash(b))), lost };
            let bytes = emit_feedback(&f);
            prop_assert_eq!(parse(&bytes).unwrap(), Datagram::Feedback(f));
        }
    }
}
