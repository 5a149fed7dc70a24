//! Functional VP8 (libvpx) and AV1 (libaom) codecs: the decoder's state is an explicit value.
//!
//! `Encoder::encode(&State, &Image, Quality)` and `Decoder::decode(&State, &[u8])` behave as
//! pure functions as far as decodability goes: the decoder's picture and state hash equal the
//! encoder's reconstruction for every frame, whatever order states are used in. Also here:
//! the I420 [`Image`], Y4M and IVF files, and a synthetic video source.
//!
//! Layer 0 of the workspace (README, "Layout"): it depends on no other Salsify crate; the endpoint
//! shape, the schemes, the metrics, the barcodes and the window build on it.

pub mod av1;
pub mod cbr;
mod codec;
pub mod error;
pub mod frame;
mod functional;
pub mod image;
pub mod ivf;
pub mod output;
pub mod quality;
pub mod scale;
pub mod search;
pub mod state;
pub mod state_coding;
mod state_hash;
pub mod synthetic;
mod vpx;
pub mod y4m;

pub use av1::{Av1Decoder, Av1Encoder, Av1EncoderConfig, Av1Frame, Av1Library, Av1Quality};
pub use cbr::{CbrConfig, CbrEncoder, CbrFrame, PlainDecoder};
pub use codec::{Decoder, Encoder, EncoderConfig, Vp8Library};
pub use error::CodecError;
pub use frame::EncodedFrame;
pub use functional::{FunctionalCodec, FunctionalDecoder, FunctionalEncoder};
pub use image::{Image, Plane, PlaneId};
pub use ivf::{IvfFrame, IvfHeader, IvfReader, IvfWriter};
pub use quality::Quality;
pub use scale::{halved_size, scale};
pub use state::{State, StateHash};
pub use state_coding::{CodecLibrary, StateDecoder, StateEncoder};
pub use synthetic::{SyntheticFrame, SyntheticSource};
pub use y4m::{Rational, Y4mHeader, Y4mReader, Y4mWriter};
