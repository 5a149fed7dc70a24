//! The little the transport needs to know about a codec.
//!
//! The sender and receiver are generic over these traits so their tests run on a size-only
//! fake codec (`crate::fake`, test-only) without libvpx, while the real VP8 codec plugs in through
//! [`crate::vp8`]. The sender never encodes: it asks the runtime for encodes (see
//! [`salsify_endpoint::EncodeRequest`]) and receives frames implementing [`SendableFrame`].

use salsify_codec::{Quality, StateHash};

/// A decoder state: a cheap-to-clone value named by its content hash.
pub trait CodecState: Clone + std::fmt::Debug {
    /// The hash naming this state on the wire ([`StateHash::INITIAL`] for the initial state).
    fn hash(&self) -> StateHash;
}

/// What the sender needs of one encoded frame, as the encoder handed it back (implemented by
/// the codec's [`salsify_codec::EncodedFrame`] struct and the fake codec's frame; named apart
/// from that struct so one name means one thing).
pub trait SendableFrame: std::fmt::Debug {
    /// The state type the frame moves between.
    type State: CodecState;
    /// The bytes to send.
    fn bytes(&self) -> &[u8];
    /// The state the frame decodes from ([`StateHash::INITIAL`] for keyframes).
    fn source(&self) -> StateHash;
    /// The state decoding reaches (the encoder's reconstruction).
    fn target(&self) -> &Self::State;
    /// The quantizer the frame was coded with.
    fn quality(&self) -> Quality;
    /// Size on the wire.
    fn len(&self) -> usize {
        self.bytes().len()
    }
    /// True if there are no bytes (never for a real frame).
    fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }
}

/// Decodes a frame from an explicit state. Called by the receiver inside `handle_datagram`.
pub trait FrameDecoder {
    /// The decoder's state type.
    type State: CodecState;
    /// What decoding shows (an image for the real codec).
    type Picture;
    /// Decodes `frame` from `state`. Must fail, never guess, when `state` is not the frame's
    /// source or the result is not the state the encoder reached.
    fn decode(
        &mut self,
        state: &Self::State,
        frame: &[u8],
    ) -> Result<(Self::State, Self::Picture), DecodeError>;
    /// The initial state (no reference): where keyframes decode from.
    fn initial_state(&self) -> Self::State;
    /// The part of a decoded `frame` a plain decoder of the codec takes (the real codec's
    /// frame without Salsify's state header), handed on with what is shown so a driver can
    /// write the stream shown to a file that plays elsewhere. The whole frame by default.
    fn plain_frame<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        frame
    }
}

/// Why a frame did not decode; the receiver counts these and never displays the frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The frame needs another source state.
    #[error("frame needs source state {expected}, decoder was given {given}")]
    WrongSource {
        /// The frame's source.
        expected: StateHash,
        /// The state given.
        given: StateHash,
    },
    /// The frame is malformed or decoded to a state other than the one it names.
    #[error("corrupt frame: {0}")]
    Corrupt(String),
}
