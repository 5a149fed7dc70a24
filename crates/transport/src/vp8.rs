//! The real VP8 codec ([`salsify_codec`]) behind the transport's codec traits.

use salsify_codec::frame::HEADER_LEN;
use salsify_codec::{
    CodecError, Decoder, EncodedFrame as Vp8Frame, Image, Quality, State, StateHash,
};

use crate::codec::{CodecState, DecodeError, FrameDecoder, SendableFrame};

impl CodecState for State {
    fn hash(&self) -> StateHash {
        State::hash(self)
    }
}

impl SendableFrame for Vp8Frame {
    type State = State;
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }
    fn source(&self) -> StateHash {
        self.source
    }
    fn target(&self) -> &State {
        &self.target
    }
    fn quality(&self) -> Quality {
        self.quality
    }
}

/// The libvpx decoder as a [`FrameDecoder`] showing [`Image`]s.
pub struct Vp8Decoder(Decoder);

impl std::fmt::Debug for Vp8Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vp8Decoder")
    }
}

impl Vp8Decoder {
    /// A decoder; fails only if libvpx cannot create one.
    pub fn new() -> Result<Self, CodecError> {
        Decoder::new().map(Vp8Decoder)
    }
}

impl FrameDecoder for Vp8Decoder {
    type State = State;
    type Picture = Image;

    fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Image), DecodeError> {
        self.0.decode(state, frame).map_err(|e| match e {
            CodecError::WrongSourceState { expected, given } => {
                DecodeError::WrongSource { expected, given }
            }
            other => DecodeError::Corrupt(other.to_string()),
        })
    }

    fn initial_state(&self) -> State {
        State::initial()
    }

    fn plain_frame<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        frame.get(HEADER_LEN..).unwrap_or_default()
    }
}
