//! The baselines' own wire format (one UDP datagram each), in the spirit of RTP with the
//! transport-wide sequence number extension and RTCP transport feedback, NACK and PLI, but
//! much simpler. All integers are big-endian.
//!
//! ```text
//! every datagram: 0 tag (0xB1, salsify_endpoint::BASELINE_WIRE_TAG) | 1 kind
//! kind 1 media (header 20 B, then the payload):
//!   2 transport_seq u32 | 6 media_seq u32 | 10 frame u32 | 14 fragment u16 | 16 count u16
//!   18 flags u8 (bit 0 keyframe, bit 1 retransmission)
//!   19 scheme u8 (1 conventional, 2 vidaptive, 3 oracle; 4 was a retired scheme's
//!   and is unknown now: see `scheme_of`)
//! kind 2 padding: 2 transport_seq u32, then any filler (ignored)
//! kind 3 feedback: 2 base_seq u32 | 6 count u16 | then `count` arrival times, u64 each:
//!   microseconds on the receiver's clock of transport_seq base_seq + i, or u64::MAX = not
//!   received
//! kind 4 nack: 2 count u16 | then `count` media_seq u32
//! kind 5 pli (picture loss indication: send a keyframe): no body
//! ```
//!
//! Every packet of the transport (media, retransmission, padding) takes the next
//! `transport_seq`: feedback reports them all, which is what send-side estimation needs.
//! Retransmissions keep their `media_seq`, so the receiver can tell which holes they fill.
//!
//! The first byte tells baseline datagrams from Salsify's (whose first byte is its wire
//! version, 1; see [`salsify_endpoint::WireFamily`]). Byte 19 of every media datagram names
//! the sending [`WireId`], so a receiver learns from the first media datagram which scheme it
//! serves, and so which feedback that scheme needs: [`scheme_of`], [`WireId::feedback_interval`].

use salsify_time::Instant;

pub use crate::error::WireError;
use crate::wire_id::WireId;

/// The first byte of every baseline datagram.
pub const TAG: u8 = salsify_endpoint::BASELINE_WIRE_TAG;
/// Bytes before a media payload.
pub const MEDIA_HEADER_LEN: usize = 20;
/// Bytes of a padding datagram's header.
pub const PADDING_HEADER_LEN: usize = 6;
/// Most arrival times in one feedback datagram (8 + 8 x 180 = 1448 bytes).
pub const MAX_FEEDBACK_ENTRIES: usize = 180;
/// Most sequence numbers in one NACK datagram.
pub const MAX_NACK_ENTRIES: usize = 300;
/// Largest fragment count a frame may have.
pub const MAX_FRAGMENTS: u16 = 4096;

const KIND_MEDIA: u8 = 1;
const KIND_PADDING: u8 = 2;
const KIND_FEEDBACK: u8 = 3;
const KIND_NACK: u8 = 4;
const KIND_PLI: u8 = 5;
const FLAG_KEYFRAME: u8 = 1;
const FLAG_RETRANSMISSION: u8 = 2;
const NOT_RECEIVED: u64 = u64::MAX;

/// The header of a media packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MediaHeader {
    /// Transport-wide sequence number (every packet sent).
    pub transport_seq: u32,
    /// Media sequence number (first transmissions; a retransmission repeats it).
    pub media_seq: u32,
    /// Frame number (frames actually sent, consecutive).
    pub frame: u32,
    /// Fragment index within the frame.
    pub fragment: u16,
    /// Fragments in the frame.
    pub count: u16,
    /// The frame is a keyframe.
    pub keyframe: bool,
    /// This is a retransmission.
    pub retransmission: bool,
    /// The scheme that sent it.
    pub scheme: WireId,
}

/// Transport feedback: arrival times of consecutive transport sequence numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feedback {
    /// The first sequence number reported.
    pub base_seq: u32,
    /// Arrival time (receiver's clock) of `base_seq + i`, `None` if not received.
    pub arrivals: Vec<Option<Instant>>,
}

/// One datagram, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    /// Part of a video frame.
    Media {
        /// Header.
        header: MediaHeader,
        /// Fragment bytes.
        payload: Vec<u8>,
    },
    /// Filler that only probes the path.
    Padding {
        /// Transport sequence number.
        transport_seq: u32,
        /// Total datagram length.
        len: usize,
    },
    /// Per-packet arrival feedback.
    Feedback(Feedback),
    /// Please retransmit these media sequence numbers.
    Nack(Vec<u32>),
    /// Please send a keyframe.
    Pli,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

fn need(kind: &'static str, b: &[u8], n: usize) -> Result<(), WireError> {
    if b.len() < n {
        Err(WireError::Truncated {
            kind,
            len: b.len(),
            need: n,
        })
    } else {
        Ok(())
    }
}

impl Packet {
    /// Its kind's name (for errors and logs).
    pub fn kind(&self) -> &'static str {
        match self {
            Packet::Media { .. } => "media",
            Packet::Padding { .. } => "padding",
            Packet::Feedback(_) => "feedback",
            Packet::Nack(_) => "nack",
            Packet::Pli => "pli",
        }
    }

    /// Parses a datagram. Never panics.
    pub fn parse(b: &[u8]) -> Result<Packet, WireError> {
        need("any", b, 2)?;
        if b[0] != TAG {
            return Err(WireError::Tag(b[0]));
        }
        match b[1] {
            KIND_MEDIA => {
                need("media", b, MEDIA_HEADER_LEN)?;
                let (fragment, count) = (u16_at(b, 14), u16_at(b, 16));
                if count == 0 || count > MAX_FRAGMENTS || fragment >= count {
                    return Err(WireError::Fragment {
                        index: fragment,
                        count,
                    });
                }
                let flags = b[18];
                if flags & !(FLAG_KEYFRAME | FLAG_RETRANSMISSION) != 0 {
                    return Err(WireError::Reserved(flags));
                }
                let scheme = WireId::from_wire_id(b[19]).ok_or(WireError::Scheme(b[19]))?;
                Ok(Packet::Media {
                    header: MediaHeader {
                        transport_seq: u32_at(b, 2),
                        media_seq: u32_at(b, 6),
                        frame: u32_at(b, 10),
                        fragment,
                        count,
                        keyframe: flags & FLAG_KEYFRAME != 0,
                        retransmission: flags & FLAG_RETRANSMISSION != 0,
                        scheme,
                    },
                    payload: b[MEDIA_HEADER_LEN..].to_vec(),
                })
            }
            KIND_PADDING => {
                need("padding", b, PADDING_HEADER_LEN)?;
                Ok(Packet::Padding {
                    transport_seq: u32_at(b, 2),
                    len: b.len(),
                })
            }
            KIND_FEEDBACK => {
                need("feedback", b, 8)?;
                let count = usize::from(u16_at(b, 6));
                if count > MAX_FEEDBACK_ENTRIES {
                    return Err(WireError::TooManyEntries(count));
                }
                let len = 8 + 8 * count;
                need("feedback", b, len)?;
                if b.len() > len {
                    return Err(WireError::Trailing(b.len() - len));
                }
                let arrivals = (0..count)
                    .map(|i| match u64_at(b, 8 + 8 * i) {
                        NOT_RECEIVED => None,
                        us => Some(Instant::from_micros(us)),
                    })
                    .collect();
                Ok(Packet::Feedback(Feedback {
                    base_seq: u32_at(b, 2),
                    arrivals,
                }))
            }
            KIND_NACK => {
                need("nack", b, 4)?;
                let count = usize::from(u16_at(b, 2));
                if count > MAX_NACK_ENTRIES {
                    return Err(WireError::TooManyEntries(count));
                }
                let len = 4 + 4 * count;
                need("nack", b, len)?;
                if b.len() > len {
                    return Err(WireError::Trailing(b.len() - len));
                }
                Ok(Packet::Nack(
                    (0..count).map(|i| u32_at(b, 4 + 4 * i)).collect(),
                ))
            }
            KIND_PLI => {
                if b.len() > 2 {
                    return Err(WireError::Trailing(b.len() - 2));
                }
                Ok(Packet::Pli)
            }
            k => Err(WireError::Kind(k)),
        }
    }

    /// The datagram's bytes. Lists longer than the format allows are an error.
    pub fn emit(&self) -> Result<Vec<u8>, WireError> {
        let mut out = vec![TAG];
        match self {
            Packet::Media { header, payload } => {
                if header.count == 0
                    || header.count > MAX_FRAGMENTS
                    || header.fragment >= header.count
                {
                    return Err(WireError::Fragment {
                        index: header.fragment,
                        count: header.count,
                    });
                }
                out.push(KIND_MEDIA);
                out.extend_from_slice(&header.transport_seq.to_be_bytes());
                out.extend_from_slice(&header.media_seq.to_be_bytes());
                out.extend_from_slice(&header.frame.to_be_bytes());
                out.extend_from_slice(&header.fragment.to_be_bytes());
                out.extend_from_slice(&header.count.to_be_bytes());
                let mut flags = 0;
                if header.keyframe {
                    flags |= FLAG_KEYFRAME;
                }
                if header.retransmission {
                    flags |= FLAG_RETRANSMISSION;
                }
                out.push(flags);
                out.push(header.scheme.wire_id());
                out.extend_from_slice(payload);
            }
            Packet::Padding { transport_seq, len } => {
                out.push(KIND_PADDING);
                out.extend_from_slice(&transport_seq.to_be_bytes());
                out.resize((*len).max(PADDING_HEADER_LEN), 0);
            }
            Packet::Feedback(f) => {
                if f.arrivals.len() > MAX_FEEDBACK_ENTRIES {
                    return Err(WireError::TooManyEntries(f.arrivals.len()));
                }
                out.push(KIND_FEEDBACK);
                out.extend_from_slice(&f.base_seq.to_be_bytes());
                out.extend_from_slice(&(f.arrivals.len() as u16).to_be_bytes());
                for a in &f.arrivals {
                    // An arrival at u64::MAX µs (585 000 years) cannot happen in a run.
                    let us = a.map_or(NOT_RECEIVED, |t| t.as_micros().min(NOT_RECEIVED - 1));
                    out.extend_from_slice(&us.to_be_bytes());
                }
            }
            Packet::Nack(seqs) => {
                if seqs.len() > MAX_NACK_ENTRIES {
                    return Err(WireError::TooManyEntries(seqs.len()));
                }
                out.push(KIND_NACK);
                out.extend_from_slice(&(seqs.len() as u16).to_be_bytes());
                for s in seqs {
                    out.extend_from_slice(&s.to_be_bytes());
                }
            }
            Packet::Pli => out.push(KIND_PLI),
        }
        Ok(out)
    }
}

/// The scheme that sent `datagram`, if it is a baseline media datagram (tag, kind, a whole
/// header) whose byte 19 names one. Reads nothing else, so a receiver can learn the scheme
/// (and so its feedback mode) before it builds its endpoint.
pub fn scheme_of(datagram: &[u8]) -> Option<WireId> {
    match datagram {
        [TAG, KIND_MEDIA, ..] if datagram.len() >= MEDIA_HEADER_LEN => {
            WireId::from_wire_id(datagram[19])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn packet() -> impl Strategy<Value = Packet> {
        let media = (
            any::<(u32, u32, u32)>(),
            1u16..=MAX_FRAGMENTS,
            any::<u16>(),
            (
                any::<(bool, bool)>(),
                proptest::sample::select(WireId::ALL.to_vec()),
            ),
            proptest::collection::vec(any::<u8>(), 0..64),
        )
            .prop_map(
                |((t, m, f), count, i, ((k, r), scheme), payload)| Packet::Media {
                    header: MediaHeader {
                        transport_seq: t,
                        media_seq: m,
                        frame: f,
                        fragment: i % count,
                        count,
                        keyframe: k,
                        retransmission: r,
                        scheme,
                    },
                    payload,
                },
            );
        let padding = (any::<u32>(), PADDING_HEADER_LEN..300)
            .prop_map(|(transport_seq, len)| Packet::Padding { transport_seq, len });
        let feedback = (
            any::<u32>(),
            proptest::collection::vec(
                proptest::option::of((0..u64::MAX - 1).prop_map(Instant::from_micros)),
                0..MAX_FEEDBACK_ENTRIES,
            ),
        )
            .prop_map(|(base_seq, arrivals)| Packet::Feedback(Feedback { base_seq, arrivals }));
        let nack =
            proptest::collection::vec(any::<u32>(), 0..MAX_NACK_ENTRIES).prop_map(Packet::Nack);
        prop_oneof![media, padding, feedback, nack, Just(Packet::Pli)]
    }

    proptest! {
        #[test]
        fn round_trip(p in packet()) {
            let bytes = p.emit().unwrap();
            prop_assert_eq!(Packet::parse(&bytes).unwrap(), p);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Packet::parse(&b);
            let _ = scheme_of(&b);
        }

        /// Every datagram starts with the baseline tag, and a media datagram's scheme is
        /// read back by `scheme_of` (nothing else has one).
        #[test]
        fn tagged_and_scheme_readable(p in packet()) {
            let bytes = p.emit().unwrap();
            prop_assert_eq!(bytes[0], TAG);
            prop_assert_eq!(
                salsify_endpoint::WireFamily::of(&bytes),
                Some(salsify_endpoint::WireFamily::Baseline)
            );
            let expected = match &p {
                Packet::Media { header, .. } => Some(header.scheme),
                _ => None,
            };
            prop_assert_eq!(scheme_of(&bytes), expected);
        }
    }

    #[test]
    fn typed_errors() {
        assert_eq!(
            Packet::parse(&[]),
            Err(WireError::Truncated {
                kind: "any",
                len: 0,
                need: 2
            })
        );
        // Salsify's first byte (its version, 1) is not ours.
        assert_eq!(Packet::parse(&[1, 1]), Err(WireError::Tag(1)));
        assert_eq!(Packet::parse(&[TAG, 9]), Err(WireError::Kind(9)));
        let mut media = Packet::Media {
            header: MediaHeader {
                transport_seq: 1,
                media_seq: 2,
                frame: 3,
                fragment: 0,
                count: 1,
                keyframe: true,
                retransmission: false,
                scheme: WireId::Vidaptive,
            },
            payload: vec![7],
        }
        .emit()
        .unwrap();
        // 20-byte header + 1 payload byte, as before the scheme byte existed.
        assert_eq!(media.len(), MEDIA_HEADER_LEN + 1);
        assert_eq!(media[19], 2);
        assert_eq!(scheme_of(&media), Some(WireId::Vidaptive));
        let mut bad_scheme = media.clone();
        // Codes 128-255 are plugged-in controllers (`WireId::Plugin`); below, only 1-3 exist.
        for b in [0, 5, 127] {
            bad_scheme[19] = b;
            assert_eq!(Packet::parse(&bad_scheme), Err(WireError::Scheme(b)));
            assert_eq!(scheme_of(&bad_scheme), None);
        }
        bad_scheme[19] = 255;
        assert_eq!(scheme_of(&bad_scheme), Some(WireId::Plugin(127)));
        assert_eq!(scheme_of(&media[..MEDIA_HEADER_LEN - 1]), None);
        let mut flags = media.clone();
        flags[18] = 4;
        assert_eq!(Packet::parse(&flags), Err(WireError::Reserved(4)));
        media[15] = 1; // fragment 1 of 1
        assert!(matches!(
            Packet::parse(&media),
            Err(WireError::Fragment { .. })
        ));
        assert_eq!(Packet::parse(&[TAG, 5, 0]), Err(WireError::Trailing(1)));
        assert_eq!(scheme_of(&Packet::Pli.emit().unwrap()), None);
    }
}
