//! What the TURN client and the STUN binding share on the wire: telling STUN and ChannelData from
//! other datagrams, a look at a response before the protocol crate takes it, and the clock
//! conversion to the protocol crates' `Instant`.

use std::net::{Ipv4Addr, SocketAddr};

use salsify_time::Instant;
use turn_client_proto::stun::types::attribute::{
    AttributeStaticType, ErrorCode, MessageIntegrity, MessageIntegritySha256, XorMappedAddress,
};
use turn_client_proto::stun::types::message::{Message, MessageClass, Method, TransactionId};
use turn_client_proto::stun::Instant as StunInstant;
use turn_client_proto::types::message::ALLOCATE;

use super::error::ServerError;

/// STUN's magic cookie (RFC 8489 section 5): bytes 4..8 of every STUN message.
const MAGIC_COOKIE: [u8; 4] = [0x21, 0x12, 0xA4, 0x42];
/// Bytes of a STUN header.
const STUN_HEADER: usize = 20;
/// Bytes of a ChannelData header.
const CHANNEL_HEADER: usize = 4;

/// The local address the protocol crates are told: the driver gives only the server's datagrams,
/// so the crates' own address checks have nothing to check and see this one constant.
pub(crate) const LOCAL: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// Whether a datagram is STUN or TURN ChannelData, to tell it from the call's own datagrams on one
/// socket: a STUN message starts with a byte 0x00..=0x3F and has the magic cookie and a length
/// that matches; ChannelData starts with 0x40..=0x7F (its channel number) and has a length that
/// fits. Only the server's datagrams should be asked: a peer's Sprout datagram (0x53...) looks
/// like ChannelData; Salsify's (first byte 1) never has the cookie.
pub fn is_turn(bytes: &[u8]) -> bool {
    match bytes {
        [0x00..=0x3F, _, hi, lo, c0, c1, c2, c3, ..] => {
            let length = usize::from(u16::from_be_bytes([*hi, *lo]));
            [*c0, *c1, *c2, *c3] == MAGIC_COOKIE
                && length % 4 == 0
                && STUN_HEADER + length == bytes.len()
        }
        [0x40..=0x7F, _, hi, lo, ..] => {
            CHANNEL_HEADER + usize::from(u16::from_be_bytes([*hi, *lo])) <= bytes.len()
        }
        _ => false,
    }
}

/// Whether a datagram is ChannelData (its first byte a channel number): data from a bound peer,
/// which changes no state of the client.
pub(crate) fn is_channel_data(bytes: &[u8]) -> bool {
    matches!(bytes.first(), Some(0x40..=0x7F))
}

/// What a STUN response says, read before (and whatever) the protocol crate decides about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub method: Method,
    pub transaction: TransactionId,
    pub success: bool,
    /// XOR-MAPPED-ADDRESS: the client's address as the server saw it.
    pub mapped: Option<SocketAddr>,
    /// ERROR-CODE of an error response.
    pub error: Option<ServerError>,
}

/// A STUN response's method, class, mapped address and error; `None` for anything else (a
/// request, an indication, ChannelData, garbage). Never panics.
pub(crate) fn peek_response(bytes: &[u8]) -> Option<Response> {
    let msg = Message::from_bytes(bytes).ok()?;
    if !msg.is_response() {
        return None;
    }
    let transaction = msg.transaction_id();
    Some(Response {
        method: msg.method(),
        transaction,
        success: msg.has_class(MessageClass::Success),
        mapped: msg
            .attribute::<XorMappedAddress>()
            .ok()
            .map(|a| a.addr(transaction)),
        error: msg
            .attribute::<ErrorCode>()
            .ok()
            .filter(|_| msg.has_class(MessageClass::Error))
            .map(|e| ServerError::new(e.code(), e.reason())),
    })
}

/// The transaction of an Allocate request that carries credentials (MESSAGE-INTEGRITY), as the
/// client sends it.
pub(crate) fn authenticated_allocate(bytes: &[u8]) -> Option<TransactionId> {
    let msg = Message::from_bytes(bytes).ok()?;
    (msg.has_class(MessageClass::Request)
        && msg.has_method(ALLOCATE)
        && (msg.has_attribute(MessageIntegrity::TYPE)
            || msg.has_attribute(MessageIntegritySha256::TYPE)))
    .then(|| msg.transaction_id())
}

/// The latest time handed to the protocol crates (about 73 years): they add server-chosen
/// lifetimes (up to 2^32 s) to it in `i64` nanoseconds, which must not overflow.
const MAX_NANOS: u64 = 1 << 61;

/// The project's time as the protocol crates' (nanoseconds in an `i64`).
pub(crate) fn to_stun(now: Instant) -> StunInstant {
    let nanos = now.as_micros().saturating_mul(1000).min(MAX_NANOS);
    StunInstant::from_nanos(i64::try_from(nanos).unwrap_or(i64::MAX))
}

/// The protocol crates' time as the project's, rounded up to the microsecond so that a driver
/// woken at it is never early.
pub(crate) fn from_stun(t: StunInstant) -> Instant {
    let nanos = u64::try_from(t.as_nanos()).unwrap_or(0);
    Instant::from_micros(nanos.div_ceil(1000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use turn_client_proto::stun::types::message::BINDING;

    /// RFC 5769 section 2.2: a Binding success response (IPv4), with MESSAGE-INTEGRITY and
    /// FINGERPRINT.
    pub(crate) const RFC5769_RESPONSE: [u8; 80] = [
        0x01, 0x01, 0x00, 0x3c, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6,
        0x86, 0xfa, 0x87, 0xdf, 0xae, 0x80, 0x22, 0x00, 0x0b, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76,
        0x65, 0x63, 0x74, 0x6f, 0x72, 0x20, 0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1,
        0x12, 0xa6, 0x43, 0x00, 0x08, 0x00, 0x14, 0x2b, 0x91, 0xf5, 0x99, 0xfd, 0x9e, 0x90, 0xc3,
        0x8c, 0x74, 0x89, 0xf9, 0x2a, 0xf9, 0xba, 0x53, 0xf0, 0x6b, 0xe7, 0xd7, 0x80, 0x28, 0x00,
        0x04, 0xc0, 0x7d, 0x4c, 0x96,
    ];

    #[test]
    fn rfc5769_response_is_read() {
        assert!(is_turn(&RFC5769_RESPONSE));
        let r = peek_response(&RFC5769_RESPONSE).unwrap();
        assert_eq!(r.method, BINDING);
        assert!(r.success);
        assert_eq!(r.mapped, Some("192.0.2.1:32853".parse().unwrap()));
        assert_eq!(r.error, None);
        // A flipped bit fails the FINGERPRINT: not read at all.
        let mut bad = RFC5769_RESPONSE;
        bad[45] ^= 1;
        assert_eq!(peek_response(&bad), None);
    }

    /// RFC 5769 section 2.4: a request with long-term credentials. The key is
    /// MD5(username:realm:password) (the password SASLprep'd to "TheMatrIX"), the integrity
    /// HMAC-SHA1 over the message: the crate's check agrees with the RFC's bytes.
    #[test]
    fn rfc5769_long_term_integrity() {
        use turn_client_proto::stun::types::message::LongTermKeyCredentials;
        let data: [u8; 116] = [
            0x00, 0x01, 0x00, 0x60, 0x21, 0x12, 0xa4, 0x42, 0x78, 0xad, 0x34, 0x33, 0xc6, 0xad,
            0x72, 0xc0, 0x29, 0xda, 0x41, 0x2e, 0x00, 0x06, 0x00, 0x12, 0xe3, 0x83, 0x9e, 0xe3,
            0x83, 0x88, 0xe3, 0x83, 0xaa, 0xe3, 0x83, 0x83, 0xe3, 0x82, 0xaf, 0xe3, 0x82, 0xb9,
            0x00, 0x00, 0x00, 0x15, 0x00, 0x1c, 0x66, 0x2f, 0x2f, 0x34, 0x39, 0x39, 0x6b, 0x39,
            0x35, 0x34, 0x64, 0x36, 0x4f, 0x4c, 0x33, 0x34, 0x6f, 0x4c, 0x39, 0x46, 0x53, 0x54,
            0x76, 0x79, 0x36, 0x34, 0x73, 0x41, 0x00, 0x14, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d,
            0x70, 0x6c, 0x65, 0x2e, 0x6f, 0x72, 0x67, 0x00, 0x00, 0x08, 0x00, 0x14, 0xf6, 0x70,
            0x24, 0x65, 0x6d, 0xd6, 0x4a, 0x3e, 0x02, 0xb8, 0xe0, 0x71, 0x2e, 0x85, 0xc9, 0xa2,
            0x8c, 0xa8, 0x96, 0x66,
        ];
        let msg = Message::from_bytes(&data).unwrap();
        let key = |password: &str| {
            LongTermKeyCredentials::new(
                "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}".to_owned(),
                password.to_owned(),
                "example.org".to_owned(),
            )
            .into()
        };
        assert!(msg.validate_integrity(&key("TheMatrIX")).is_ok());
        assert!(msg.validate_integrity(&key("TheMatrix")).is_err());
        assert!(is_turn(&data));
        assert_eq!(peek_response(&data), None, "a request is no response");
    }

    #[test]
    fn demultiplexes() {
        // ChannelData, channel 0x4000, 3 bytes of 4 (padding is allowed).
        assert!(is_turn(&[0x40, 0x00, 0x00, 0x03, 1, 2, 3, 0]));
        assert!(!is_turn(&[0x40, 0x00, 0x00, 0x05, 1, 2, 3, 0]));
        // Salsify's datagrams start with 1, the secure layer's with 0xE1..=0xE3, path messages
        // with 0xD7: none is TURN.
        assert!(!is_turn(&[1; 40]));
        assert!(!is_turn(&[0xE3; 40]));
        assert!(!is_turn(&[0xD7, 3, 0, 0]));
        assert!(!is_turn(&[]));
        // A STUN header whose length does not match.
        let mut short = RFC5769_RESPONSE.to_vec();
        short.pop();
        assert!(!is_turn(&short));
        assert!(is_channel_data(&[0x4F]) && !is_channel_data(&[0x3F]));
    }

    #[test]
    fn clock_round_trips() {
        for micros in [0, 1, 999, 1_000_000, 86_400_000_000] {
            let t = Instant::from_micros(micros);
            assert_eq!(from_stun(to_stun(t)), t);
        }
        // Far times saturate instead of overflowing.
        assert_eq!(
            to_stun(Instant::FAR_FUTURE),
            StunInstant::from_nanos(1 << 61)
        );
        assert_eq!(from_stun(StunInstant::from_nanos(-5)), Instant::ZERO);
        assert_eq!(
            from_stun(StunInstant::from_nanos(1)),
            Instant::from_micros(1)
        );
    }

    proptest! {
        #[test]
        fn readers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = is_turn(&bytes);
            let _ = peek_response(&bytes);
        }

        #[test]
        fn stun_shaped_readers_never_panic(
            kind in 0u16..0x4000,
            transaction in any::<[u8; 12]>(),
            body in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            // A valid header over random attributes: the attribute parsers are what is tested.
            let mut bytes = kind.to_be_bytes().to_vec();
            bytes.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
            bytes.extend_from_slice(&MAGIC_COOKIE);
            bytes.extend_from_slice(&transaction);
            bytes.extend_from_slice(&body);
            let _ = is_turn(&bytes);
            let _ = peek_response(&bytes);
        }
    }
}
