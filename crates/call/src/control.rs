//! A call's control messages: a side hanging up, and a busy side refusing a second caller.
//!
//! ```text
//! offset size field
//!      0    1 tag     = CONTROL_TAG (0xC0)
//!      1    1 kind    1 = goodbye (this side ends the call), 2 = busy (in another call)
//! ```
//! Exactly two bytes; sealed in the session like every datagram, so only the peer can hang
//! up its call. A goodbye is sent a few times ([`GOODBYE_COPIES`]) and needs no answer.

use crate::wire::CONTROL_TAG;

/// Copies of a goodbye a side sends as it ends (one may be lost; none is answered).
pub const GOODBYE_COPIES: usize = 3;

/// A control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The sending side ended the call (`--duration`, Ctrl-C, its window closed).
    Goodbye,
    /// The sending side is in a call with someone else and serves no other.
    Busy,
}

/// Why bytes are not a control message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// Not tagged as control, or of the wrong length.
    #[error("not a control datagram ({0} bytes)")]
    Malformed(usize),
    /// An unknown kind.
    #[error("unknown control kind {0}")]
    Kind(u8),
}

impl Control {
    /// The message's bytes.
    pub fn encode(self) -> [u8; 2] {
        let kind = match self {
            Control::Goodbye => 1,
            Control::Busy => 2,
        };
        [CONTROL_TAG, kind]
    }

    /// Parses a whole datagram.
    pub fn parse(bytes: &[u8]) -> Result<Self, ControlError> {
        match bytes {
            [CONTROL_TAG, 1] => Ok(Control::Goodbye),
            [CONTROL_TAG, 2] => Ok(Control::Busy),
            [CONTROL_TAG, kind] => Err(ControlError::Kind(*kind)),
            _ => Err(ControlError::Malformed(bytes.len())),
        }
    }

    /// Whether `bytes` is tagged as a control message (well-formed or not).
    pub fn is_control(bytes: &[u8]) -> bool {
        bytes.first() == Some(&CONTROL_TAG)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn messages_round_trip_and_others_are_refused() {
        for c in [Control::Goodbye, Control::Busy] {
            assert_eq!(Control::parse(&c.encode()), Ok(c));
            assert!(Control::is_control(&c.encode()));
        }
        assert_eq!(
            Control::parse(&[CONTROL_TAG, 9]),
            Err(ControlError::Kind(9))
        );
        assert_eq!(
            Control::parse(&[CONTROL_TAG, 1, 0]),
            Err(ControlError::Malformed(3))
        );
        assert_eq!(Control::parse(&[0x01, 1]), Err(ControlError::Malformed(2)));
        assert!(!Control::is_control(&[]));
    }

    proptest! {
        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            if let Ok(c) = Control::parse(&bytes) {
                let encoded = c.encode();
                prop_assert_eq!(encoded.as_slice(), bytes.as_slice());
            }
        }
    }
}
