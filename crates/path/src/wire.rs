//! Path messages: datagrams of their own beside a scheme's, told apart by the first byte
//! (0xD7; Salsify's start with 1, the baselines' with 0xB1, Sprout's with 0x53, the secure
//! layer's with 0xE1-0xE3). Integers are big-endian.
//!
//! ```text
//!  0  1 tag = 0xD7
//!  1  1 kind
//!  probe      (1)  2  8 id u64, then any number of zero bytes: the probe's size is the test
//!  probe ack  (2)  2  8 id u64 of the probe that arrived
//!  keep-alive (3)  2  n zero bytes (a dialer pads its hello to the size of a challenge)
//!  challenge  (4)  2  8 token u64: answer with a response from the address it reached
//!  response   (5)  2  8 token u64 of the challenge
//!  report     (6)  2  4 datagrams received from the peer, u32, wrapping
//!                  6  4 of those larger than the base size, u32, wrapping
//!                 10  8 the highest secure-layer counter received (0: plaintext)
//!                 18  8 the highest counter of a datagram larger than the base (0: none)
//! ```
//! Parsing checks the shape only (kind, exact lengths); it never panics.

/// First byte of every path message.
pub const PATH_TAG: u8 = 0xD7;
const PROBE: u8 = 1;
const PROBE_ACK: u8 = 2;
const KEEPALIVE: u8 = 3;
const CHALLENGE: u8 = 4;
const RESPONSE: u8 = 5;
const REPORT: u8 = 6;
/// Bytes of a probe with no padding (its smallest size).
pub const PROBE_MIN_LEN: usize = 10;
/// Bytes of a challenge (and of a response, and of a dialer's hello).
pub const CHALLENGE_LEN: usize = 10;
/// Bytes of a report.
pub const REPORT_LEN: usize = 26;
/// Longest keep-alive accepted (its padding bounded so a keep-alive is never a flood).
pub const KEEPALIVE_MAX_LEN: usize = 64;

/// One path message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// A probe of its own size.
    Probe {
        /// Its id.
        id: u64,
        /// Its length in bytes, padding included.
        len: usize,
    },
    /// A probe arrived.
    ProbeAck {
        /// The probe's id.
        id: u64,
    },
    /// Nothing but keeping the path open (a dialer's hello is one).
    KeepAlive {
        /// Its length in bytes.
        len: usize,
    },
    /// Answer from the address this reached.
    Challenge {
        /// The token to send back.
        token: u64,
    },
    /// The answer to a challenge.
    Response {
        /// The challenge's token.
        token: u64,
    },
    /// What arrived from the peer so far.
    Report {
        /// Datagrams received, wrapping.
        received: u32,
        /// Of those, larger than the base size, wrapping.
        large: u32,
        /// The highest secure-layer counter received (0: none, or plaintext).
        newest: u64,
        /// The highest counter of a datagram larger than the base received (0: none).
        newest_large: u64,
    },
}

/// Why bytes are not a path message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Not a path message at all (first byte).
    #[error("not a path message")]
    NotPath,
    /// An unknown kind.
    #[error("unknown path message kind {0}")]
    UnknownKind(u8),
    /// Padding that is not all zero bytes.
    #[error("a path message padded with other than zero bytes")]
    BadPadding,
    /// A length the kind does not allow.
    #[error("a path message of kind {kind} cannot be {len} bytes")]
    BadLength {
        /// The kind.
        kind: u8,
        /// Its length.
        len: usize,
    },
}

/// Whether `datagram` is a path message (by its first byte).
pub fn is_path(datagram: &[u8]) -> bool {
    datagram.first() == Some(&PATH_TAG)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

/// Parses a path message. Never panics.
pub fn parse(datagram: &[u8]) -> Result<Message, WireError> {
    if !is_path(datagram) {
        return Err(WireError::NotPath);
    }
    let len = datagram.len();
    let kind = *datagram
        .get(1)
        .ok_or(WireError::BadLength { kind: 0, len })?;
    let bad = WireError::BadLength { kind, len };
    let zeros_from = |at: usize| datagram[at.min(len)..].iter().all(|b| *b == 0);
    match kind {
        PROBE | KEEPALIVE
            if len >= 2 && !zeros_from(if kind == PROBE { PROBE_MIN_LEN } else { 2 }) =>
        {
            Err(WireError::BadPadding)
        }
        PROBE if len >= PROBE_MIN_LEN => Ok(Message::Probe {
            id: u64_at(datagram, 2),
            len,
        }),
        PROBE_ACK if len == 10 => Ok(Message::ProbeAck {
            id: u64_at(datagram, 2),
        }),
        KEEPALIVE if (2..=KEEPALIVE_MAX_LEN).contains(&len) => Ok(Message::KeepAlive { len }),
        CHALLENGE if len == CHALLENGE_LEN => Ok(Message::Challenge {
            token: u64_at(datagram, 2),
        }),
        RESPONSE if len == CHALLENGE_LEN => Ok(Message::Response {
            token: u64_at(datagram, 2),
        }),
        REPORT if len == REPORT_LEN => Ok(Message::Report {
            received: u32_at(datagram, 2),
            large: u32_at(datagram, 6),
            newest: u64_at(datagram, 10),
            newest_large: u64_at(datagram, 18),
        }),
        PROBE | PROBE_ACK | KEEPALIVE | CHALLENGE | RESPONSE | REPORT => Err(bad),
        other => Err(WireError::UnknownKind(other)),
    }
}

/// The bytes of `message` (a probe padded to its `len`, at least [`PROBE_MIN_LEN`]; a
/// keep-alive to its `len`, within 2..=[`KEEPALIVE_MAX_LEN`]).
pub fn emit(message: &Message) -> Vec<u8> {
    let with_u64 = |kind: u8, x: u64| {
        let mut b = vec![PATH_TAG, kind];
        b.extend_from_slice(&x.to_be_bytes());
        b
    };
    match *message {
        Message::Probe { id, len } => {
            let mut b = with_u64(PROBE, id);
            b.resize(len.max(PROBE_MIN_LEN), 0);
            b
        }
        Message::ProbeAck { id } => with_u64(PROBE_ACK, id),
        Message::KeepAlive { len } => {
            let mut b = vec![PATH_TAG, KEEPALIVE];
            b.resize(len.clamp(2, KEEPALIVE_MAX_LEN), 0);
            b
        }
        Message::Challenge { token } => with_u64(CHALLENGE, token),
        Message::Response { token } => with_u64(RESPONSE, token),
        Message::Report {
            received,
            large,
            newest,
            newest_large,
        } => {
            let mut b = vec![PATH_TAG, REPORT];
            b.extend_from_slice(&received.to_be_bytes());
            b.extend_from_slice(&large.to_be_bytes());
            b.extend_from_slice(&newest.to_be_bytes());
            b.extend_from_slice(&newest_large.to_be_bytes());
            b
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_message() -> impl Strategy<Value = Message> {
        prop_oneof![
            (any::<u64>(), PROBE_MIN_LEN..2000).prop_map(|(id, len)| Message::Probe { id, len }),
            any::<u64>().prop_map(|id| Message::ProbeAck { id }),
            (2..=KEEPALIVE_MAX_LEN).prop_map(|len| Message::KeepAlive { len }),
            any::<u64>().prop_map(|token| Message::Challenge { token }),
            any::<u64>().prop_map(|token| Message::Response { token }),
            (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(
                |(received, large, newest, newest_large)| Message::Report {
                    received,
                    large,
                    newest,
                    newest_large
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn every_message_survives_the_wire(m in any_message()) {
            let bytes = emit(&m);
            prop_assert_eq!(parse(&bytes), Ok(m));
        }

        #[test]
        fn any_bytes_parse_or_fail_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn a_probe_is_as_long_as_asked(len in PROBE_MIN_LEN..3000usize) {
            prop_assert_eq!(emit(&Message::Probe { id: 7, len }).len(), len);
        }
    }

    #[test]
    fn wrong_lengths_and_kinds_are_refused() {
        assert_eq!(parse(&[]), Err(WireError::NotPath));
        assert_eq!(parse(&[1, 2, 3]), Err(WireError::NotPath));
        assert!(matches!(
            parse(&[PATH_TAG]),
            Err(WireError::BadLength { .. })
        ));
        assert_eq!(parse(&[PATH_TAG, 99]), Err(WireError::UnknownKind(99)));
        assert!(matches!(
            parse(&[PATH_TAG, CHALLENGE, 0, 0]),
            Err(WireError::BadLength {
                kind: CHALLENGE,
                ..
            })
        ));
        assert!(parse(&[PATH_TAG, KEEPALIVE]).is_ok());
        assert_eq!(
            parse(&[PATH_TAG, KEEPALIVE, 0, 1]),
            Err(WireError::BadPadding)
        );
        let mut probe = emit(&Message::Probe { id: 1, len: 20 });
        probe[19] = 5;
        assert_eq!(
            parse(&probe),
            Err(WireError::BadPadding),
            "padding found by the fuzzer"
        );
        assert!(parse(&[0; KEEPALIVE_MAX_LEN + 1]).is_err());
        let mut long_keepalive = vec![0; KEEPALIVE_MAX_LEN + 1];
        long_keepalive[..2].copy_from_slice(&[PATH_TAG, KEEPALIVE]);
        assert!(parse(&long_keepalive).is_err());
    }
}
