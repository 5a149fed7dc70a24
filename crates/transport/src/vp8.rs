//! The real codecs ([`salsify_codec`]: VP8, or AV1 since issue 47) behind the transport's codec
//! traits. The decoder takes either codec's frames, each by the codec it is in, so a receiver
//! learns the call's codec from the stream.

use salsify_codec::frame::HEADER_LEN;
use salsify_codec::{
    CodecError, EncodedFrame as Vp8Frame, FunctionalDecoder, Image, Quality, State, StateHash,
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

/// The functional decoder as a [`FrameDecoder`] showing [`Image`]s: VP8 and AV1 frames alike,
/// so one receiver decodes whichever codec the call's sender chose.
pub struct VideoDecoder(FunctionalDecoder);

impl std::fmt::Debug for VideoDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VideoDecoder")
    }
}

impl VideoDecoder {
    /// A decoder; fails only if libvpx cannot create one (libaom's opens on the first AV1
    /// frame).
    pub fn new() -> Result<Self, CodecError> {
        FunctionalDecoder::new().map(VideoDecoder)
    }
}

impl FrameDecoder for VideoDecoder {
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
