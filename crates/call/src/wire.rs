//! What a call's datagram holds, told apart by its first byte.
//!
//! ```text
//! first byte  what follows                         goes to
//!   0xFB      a feedback datagram of the scheme    this side's sender
//!   0xBD      a bundle: parts, each u16 length     each part as if it came alone
//!             (big-endian) then its bytes; no
//!             bundle inside a bundle
//!   0xDA      a data-channel message or ACK        the data channel (see `data`)
//!   0xC0      a control message (hang-up, busy)    the call itself (see `control`)
//!   other     the peer's media (video, audio)      this side's receiver
//! ```
//!
//! No datagram of a scheme or a lower layer starts with 0xFB, 0xBD, 0xDA or 0xC0 (Salsify 0x01,
//! the baselines 0xB1, Sprout 0x53, audio 0xA7, the path's 0xD7, the meeting's 0xD9, the
//! secure layer's 0xE1-0xE3; the runtime's tests check it), so media pass unmarked and a
//! one-way receiver reads a call's media unchanged.

/// First byte of a feedback datagram in a call.
pub const FEEDBACK_TAG: u8 = 0xFB;
/// First byte of a bundle.
pub const BUNDLE_TAG: u8 = 0xBD;
/// First byte of every data-channel datagram.
pub const DATA_TAG: u8 = 0xDA;
/// First byte of a control message.
pub const CONTROL_TAG: u8 = 0xC0;
/// Bytes a bundle adds to its parts: its tag, and a length before each part.
pub const fn bundle_overhead(parts: usize) -> usize {
    1 + 2 * parts
}

/// One part of a received datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// The peer's media, for this side's receiver (as the peer's sender emitted it).
    Media(&'a [u8]),
    /// Feedback for this side's sender (the tag removed).
    Feedback(&'a [u8]),
    /// A data-channel datagram (whole, tag included).
    Data(&'a [u8]),
    /// A control message (whole, tag included).
    Control(&'a [u8]),
}

/// Why a datagram is not a call's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallWireError {
    /// Nothing at all.
    #[error("empty datagram")]
    Empty,
    /// A feedback tag with nothing after it, or an empty part in a bundle.
    #[error("empty part")]
    EmptyPart,
    /// A bundle's part runs past the datagram's end.
    #[error("bundle part of {len} bytes at offset {at} runs past the datagram's {total} bytes")]
    Truncated {
        /// Where the part's length field is.
        at: usize,
        /// The length it gives.
        len: usize,
        /// The datagram's length.
        total: usize,
    },
    /// A bundle inside a bundle.
    #[error("a bundle inside a bundle")]
    Nested,
    /// A bundle with no parts.
    #[error("a bundle with no parts")]
    EmptyBundle,
}

/// The parts of `datagram`, in the order they were put in.
pub fn split(datagram: &[u8]) -> Result<Vec<Part<'_>>, CallWireError> {
    match datagram.first() {
        None => Err(CallWireError::Empty),
        Some(&BUNDLE_TAG) => split_bundle(datagram),
        Some(_) => Ok(vec![part(datagram)?]),
    }
}

fn split_bundle(datagram: &[u8]) -> Result<Vec<Part<'_>>, CallWireError> {
    let mut parts = Vec::new();
    let mut at = 1;
    while at < datagram.len() {
        let Some(head) = datagram.get(at..at + 2) else {
            return Err(CallWireError::Truncated {
                at,
                len: 2,
                total: datagram.len(),
            });
        };
        let len = usize::from(u16::from_be_bytes([head[0], head[1]]));
        let body = datagram
            .get(at + 2..at + 2 + len)
            .ok_or(CallWireError::Truncated {
                at,
                len,
                total: datagram.len(),
            })?;
        parts.push(part(body)?);
        at += 2 + len;
    }
    if parts.is_empty() {
        return Err(CallWireError::EmptyBundle);
    }
    Ok(parts)
}

fn part(bytes: &[u8]) -> Result<Part<'_>, CallWireError> {
    match bytes.first() {
        None => Err(CallWireError::EmptyPart),
        // `split` takes an outer bundle apart before it gets here.
        Some(&BUNDLE_TAG) => Err(CallWireError::Nested),
        Some(&FEEDBACK_TAG) if bytes.len() == 1 => Err(CallWireError::EmptyPart),
        Some(&FEEDBACK_TAG) => Ok(Part::Feedback(&bytes[1..])),
        Some(&DATA_TAG) => Ok(Part::Data(bytes)),
        Some(&CONTROL_TAG) => Ok(Part::Control(bytes)),
        Some(_) => Ok(Part::Media(bytes)),
    }
}

/// `feedback` marked as feedback, to go alone.
pub fn feedback(feedback: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + feedback.len());
    out.push(FEEDBACK_TAG);
    out.extend_from_slice(feedback);
    out
}

/// One datagram holding `parts` (each already marked: a media datagram as it is, feedback
/// through [`feedback`]). Parts over 65,535 bytes cannot be bundled: `None`.
pub fn bundle(parts: &[&[u8]]) -> Option<Vec<u8>> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(bundle_overhead(parts.len()) + total);
    out.push(BUNDLE_TAG);
    for p in parts {
        let len = u16::try_from(p.len()).ok()?;
        if p.is_empty() || p[0] == BUNDLE_TAG {
            return None;
        }
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(p);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn media_pass_unmarked_and_feedback_is_told_apart() {
        let media = [0x01, 2, 3];
        assert_eq!(split(&media), Ok(vec![Part::Media(&media)]));
        let fb = feedback(&[0x02, 9]);
        assert_eq!(split(&fb), Ok(vec![Part::Feedback(&[0x02, 9])]));
        assert_eq!(split(&[DATA_TAG, 1]), Ok(vec![Part::Data(&[DATA_TAG, 1])]));
    }

    #[test]
    fn a_bundle_gives_back_its_parts_in_order() {
        let media = [0xA7u8, 1, 2, 3];
        let fb = feedback(&[0x02, 7, 7]);
        let b = bundle(&[&media, &fb]).unwrap();
        assert_eq!(b.len(), media.len() + fb.len() + bundle_overhead(2));
        assert_eq!(
            split(&b),
            Ok(vec![Part::Media(&media), Part::Feedback(&[0x02, 7, 7])])
        );
    }

    #[test]
    fn malformed_datagrams_are_refused() {
        assert_eq!(split(&[]), Err(CallWireError::Empty));
        assert_eq!(split(&[FEEDBACK_TAG]), Err(CallWireError::EmptyPart));
        assert_eq!(split(&[BUNDLE_TAG]), Err(CallWireError::EmptyBundle));
        assert!(matches!(
            split(&[BUNDLE_TAG, 0, 5, 1]),
            Err(CallWireError::Truncated { .. })
        ));
        assert_eq!(
            split(&[BUNDLE_TAG, 0, 2, BUNDLE_TAG, 1]),
            Err(CallWireError::Nested)
        );
        assert_eq!(split(&[BUNDLE_TAG, 0, 0]), Err(CallWireError::EmptyPart));
        assert_eq!(bundle(&[&[BUNDLE_TAG, 1]]), None);
    }

    proptest! {
        #[test]
        fn split_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = split(&bytes);
        }

        #[test]
        fn bundles_round_trip(parts in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 1..40), 1..5)) {
            let parts: Vec<Vec<u8>> = parts
                .into_iter()
                .map(|mut p| {
                    if p[0] == BUNDLE_TAG { p[0] = 0x01; }
                    if p == [FEEDBACK_TAG] { p.push(0); }
                    p
                })
                .collect();
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            let b = bundle(&refs).unwrap();
            let back = split(&b).unwrap();
            prop_assert_eq!(back.len(), parts.len());
            for (got, want) in back.iter().zip(&parts) {
                let want = match want[0] {
                    FEEDBACK_TAG => Part::Feedback(&want[1..]),
                    DATA_TAG => Part::Data(want),
                    CONTROL_TAG => Part::Control(want),
                    _ => Part::Media(want),
                };
                prop_assert_eq!(*got, want);
            }
        }
    }
}
