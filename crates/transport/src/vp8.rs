//! The real VP8 codec ([`salsify_codec`]) behind the transport's codec traits.

use std::sync::Arc;

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
}

/// A decoded frame with its plain VP8 data, as [`CodedVp8Decoder`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodedPicture {
    /// The decoded picture.
    pub picture: Image,
    /// The frame's VP8 data: the frame as sent without Salsify's state header, as any VP8
    /// decoder (and an IVF file) takes it.
    pub vp8: Arc<[u8]>,
}

/// [`Vp8Decoder`] that also hands back each decoded frame's plain VP8 data, so a receiver
/// can pass on what it showed (to an IVF file, say) without changing what it decodes.
pub struct CodedVp8Decoder(Vp8Decoder);

impl CodedVp8Decoder {
    /// A decoder; fails only if libvpx cannot create one.
    pub fn new() -> Result<Self, CodecError> {
        Vp8Decoder::new().map(CodedVp8Decoder)
    }
}

impl FrameDecoder for CodedVp8Decoder {
    type State = State;
    type Picture = CodedPicture;

    fn decode(
        &mut self,
        state: &State,
        frame: &[u8],
    ) -> Result<(State, CodedPicture), DecodeError> {
        let (next, picture) = self.0.decode(state, frame)?;
        // Decoding succeeded, so the frame has its header.
        let vp8 = Arc::from(frame.get(HEADER_LEN..).unwrap_or_default());
        Ok((next, CodedPicture { picture, vp8 }))
    }

    fn initial_state(&self) -> State {
        self.0.initial_state()
    }
}
