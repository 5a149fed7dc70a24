//! The secure wire format: every datagram of an encrypted session is one of three, told apart
//! by the first byte (which no scheme's plaintext datagram starts with: Salsify's is 1, the
//! baselines' 0xB1). Integers are big-endian.
//!
//! ```text
//! handshake init (initiator -> responder), 61 bytes
//!      0    1 type = 0xE1
//!      1   60 Noise_KK message 1               e (32) + sealed (timestamp u64, initiator's
//!                                              random session index u32) + tag (16)
//!
//! handshake response (responder -> initiator), 61 bytes
//!      0    1 type = 0xE2
//!      1    4 initiator's session index       u32, the init's: finds the handshake
//!      5   56 Noise_KK message 2               e (32) + sealed (responder's random session
//!                                              index u32, initiator's u32) + tag (16)
//!
//! data (either way), 29 bytes + the datagram it carries
//!      0    1 type = 0xE3
//!      1    4 recipient's session index       u32: selects the keys
//!      5    8 counter                          u64: the AEAD nonce, the replay window's key
//!     13  n+16 ChaCha20-Poly1305(datagram)      the scheme's datagram, sealed, with its tag
//! ```
//!
//! Every handshake byte is authenticated by Noise but the response's clear index, which only
//! finds the handshake (and must match the sealed copy). The data header is not fed to the AEAD as associated data, yet it cannot be altered: the index
//! selects the key and the counter is the nonce, so changing either makes the open fail.
//! Parsing only checks shape (type, lengths); all else is the channel's.

/// Type of a handshake init.
pub const TYPE_INIT: u8 = 0xE1;
/// Type of a handshake response.
pub const TYPE_RESPONSE: u8 = 0xE2;
/// Type of a data datagram.
pub const TYPE_DATA: u8 = 0xE3;
/// Bytes of the Noise part of a handshake init.
pub const INIT_NOISE_LEN: usize = 32 + INIT_PAYLOAD_LEN + TAG_LEN;
/// Bytes of the Noise part of a handshake response.
pub const RESPONSE_NOISE_LEN: usize = 32 + RESPONSE_PAYLOAD_LEN + TAG_LEN;
/// Bytes sealed in a handshake init: timestamp and the initiator's index.
pub const INIT_PAYLOAD_LEN: usize = 8 + 4;
/// Bytes sealed in a handshake response: the responder's and the initiator's index.
pub const RESPONSE_PAYLOAD_LEN: usize = 4 + 4;
/// Bytes of a handshake init.
pub const INIT_LEN: usize = 1 + INIT_NOISE_LEN;
/// Bytes of a handshake response.
pub const RESPONSE_LEN: usize = 1 + 4 + RESPONSE_NOISE_LEN;
/// Bytes before a data datagram's sealed payload.
pub const DATA_HEADER_LEN: usize = 1 + 4 + 8;
/// Bytes of the AEAD tag.
pub const TAG_LEN: usize = 16;
/// Bytes a sealed datagram adds to the datagram it carries (header + tag).
pub const OVERHEAD: usize = DATA_HEADER_LEN + TAG_LEN;
/// Longest datagram a data datagram may carry (Noise's message limit less the tag).
pub const MAX_PLAINTEXT: usize = 65535 - TAG_LEN;

/// Why bytes are not a secure datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// An empty datagram.
    #[error("empty datagram")]
    Empty,
    /// A first byte that is no secure type: a plaintext datagram, or garbage.
    #[error("not an encrypted Salsify datagram (first byte {0:#04x})")]
    NotSecure(u8),
    /// A length the type does not allow.
    #[error("a {kind} of {got} bytes (must be {expected})")]
    BadLength {
        /// Which type.
        kind: &'static str,
        /// What the type requires.
        expected: &'static str,
        /// What came.
        got: usize,
    },
}

/// One parsed secure datagram, borrowing from the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    /// First handshake message.
    Init {
        /// Noise message 1 ([`INIT_NOISE_LEN`] bytes).
        noise: &'a [u8],
    },
    /// Second handshake message.
    Response {
        /// The initiator's session index it answers.
        receiver: u32,
        /// Noise message 2 ([`RESPONSE_NOISE_LEN`] bytes).
        noise: &'a [u8],
    },
    /// A sealed datagram.
    Data {
        /// The recipient's session index.
        receiver: u32,
        /// The nonce.
        counter: u64,
        /// Ciphertext and tag (at least [`TAG_LEN`] bytes).
        sealed: &'a [u8],
    },
}

/// Whether `datagram` starts like a secure datagram (so a receiver without keys can say why
/// it ignores it).
pub fn is_secure(datagram: &[u8]) -> bool {
    matches!(
        datagram.first(),
        Some(&(TYPE_INIT | TYPE_RESPONSE | TYPE_DATA))
    )
}

/// Parses `datagram`'s shape. Never panics.
pub fn parse(datagram: &[u8]) -> Result<Packet<'_>, WireError> {
    let (&kind, rest) = datagram.split_first().ok_or(WireError::Empty)?;
    let len = datagram.len();
    let bad = |kind, expected| WireError::BadLength {
        kind,
        expected,
        got: len,
    };
    match kind {
        TYPE_INIT if len == INIT_LEN => Ok(Packet::Init { noise: rest }),
        TYPE_INIT => Err(bad("handshake init", "61")),
        TYPE_RESPONSE if len == RESPONSE_LEN => Ok(Packet::Response {
            receiver: be32(&rest[0..4]),
            noise: &rest[4..],
        }),
        TYPE_RESPONSE => Err(bad("handshake response", "61")),
        TYPE_DATA
            if (DATA_HEADER_LEN + TAG_LEN..=DATA_HEADER_LEN + TAG_LEN + MAX_PLAINTEXT)
                .contains(&len) =>
        {
            let mut counter = [0u8; 8];
            counter.copy_from_slice(&rest[4..12]);
            Ok(Packet::Data {
                receiver: be32(&rest[0..4]),
                counter: u64::from_be_bytes(counter),
                sealed: &rest[12..],
            })
        }
        TYPE_DATA => Err(bad("data datagram", "29..=65548")),
        other => Err(WireError::NotSecure(other)),
    }
}

/// A handshake init around Noise message 1.
pub fn emit_init(noise: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(INIT_LEN);
    out.push(TYPE_INIT);
    out.extend_from_slice(noise);
    out
}

/// A handshake response around Noise message 2.
pub fn emit_response(receiver: u32, noise: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RESPONSE_LEN);
    out.push(TYPE_RESPONSE);
    out.extend_from_slice(&receiver.to_be_bytes());
    out.extend_from_slice(noise);
    out
}

/// A data datagram's header, with room for `sealed_len` more bytes.
pub fn data_header(receiver: u32, counter: u64, sealed_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(DATA_HEADER_LEN + sealed_len);
    out.push(TYPE_DATA);
    out.extend_from_slice(&receiver.to_be_bytes());
    out.extend_from_slice(&counter.to_be_bytes());
    out
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_type_round_trips_and_wrong_lengths_are_refused() {
        let noise1 = [7u8; INIT_NOISE_LEN];
        let init = emit_init(&noise1);
        assert_eq!(init.len(), INIT_LEN);
        assert_eq!(parse(&init), Ok(Packet::Init { noise: &noise1 }));
        let noise2 = [9u8; RESPONSE_NOISE_LEN];
        let response = emit_response(2, &noise2);
        assert_eq!(
            parse(&response),
            Ok(Packet::Response {
                receiver: 2,
                noise: &noise2
            })
        );
        let mut data = data_header(3, 1 << 40, 20);
        data.extend_from_slice(&[5u8; 20]);
        assert_eq!(
            parse(&data),
            Ok(Packet::Data {
                receiver: 3,
                counter: 1 << 40,
                sealed: &[5u8; 20]
            })
        );
        assert!(parse(&init[..INIT_LEN - 1]).is_err());
        assert!(parse(&response[..RESPONSE_LEN - 1]).is_err());
        assert!(parse(&data[..DATA_HEADER_LEN + TAG_LEN - 1]).is_err());
        assert_eq!(parse(&[]), Err(WireError::Empty));
        assert_eq!(parse(&[1, 1, 0]), Err(WireError::NotSecure(1)));
        assert!(!is_secure(&[0xB1]) && is_secure(&data));
    }

    proptest! {
        /// Any bytes parse or are refused without panicking, and what parses has the
        /// lengths its type promises.
        #[test]
        fn any_bytes_parse_or_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            match parse(&bytes) {
                Ok(Packet::Init { noise, .. }) => prop_assert_eq!(noise.len(), INIT_NOISE_LEN),
                Ok(Packet::Response { noise, .. }) => prop_assert_eq!(noise.len(), RESPONSE_NOISE_LEN),
                Ok(Packet::Data { sealed, .. }) => {
                    prop_assert!(sealed.len() >= TAG_LEN);
                    prop_assert_eq!(sealed.len() + DATA_HEADER_LEN, bytes.len());
                }
                Err(_) => {}
            }
        }
    }
}
