//! The body every functional codec shares: an encoder that encodes from any state it is
//! given and a decoder that decodes from any state it is given, whatever the codec.
//!
//! Each wraps one library context (libvpx's, libaom's) and restores the given state into it
//! before working, skipping the restore when the context already holds that state (the common
//! case of encoding or decoding from the frame just made). The decoder refuses a frame that
//! names another source state, and checks by hash that it reached exactly the encoder's
//! reconstruction, so a picture from a wrong or diverged state is never returned; after any
//! failure it starts again on a fresh context (a damaged frame can leave hidden state in the
//! library). What is a codec's own (its library's contexts and settings, its quantizer scale,
//! its frame header) comes in through [`CodecLibrary`]: VP8's is
//! [`Vp8Library`](crate::Vp8Library), AV1's [`Av1Library`](crate::Av1Library).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use crate::error::CodecError;
use crate::frame::{parse_framed, EncodedFrame, PayloadHeader};
use crate::image::Image;
use crate::state::{State, StateHash};

/// A codec's encoder settings, as the shared body needs them.
pub trait EncoderSettings: Copy + fmt::Debug {
    /// The default settings for frames of `width` x `height`.
    fn for_size(width: u32, height: u32) -> Self;
    /// The visible size of every frame.
    fn frame_size(&self) -> (u32, u32);
    /// Checks the settings.
    fn check(&self) -> Result<(), CodecError>;
}

/// A library context that holds the decoder state in one reference buffer slot.
pub trait StateSlot {
    /// Replaces the slot's picture with `reference` (the context must have buffers of its
    /// size).
    fn set_state_reference(&mut self, reference: &Image) -> Result<(), CodecError>;
    /// Copies the slot's picture into `out` (aligned size).
    fn copy_state_reference(&mut self, out: &mut Image) -> Result<(), CodecError>;
}

/// What one library encode produced.
#[derive(Clone, Debug)]
pub struct LibraryFrame<Q> {
    /// The codec's frame as the library wrote it.
    pub data: Vec<u8>,
    /// The library made a keyframe.
    pub keyframe: bool,
    /// The quantizer the frame was coded with.
    pub quality: Q,
}

/// What is a codec's own in a functional codec.
pub trait CodecLibrary {
    /// The codec's name, for errors.
    const NAME: &'static str;
    /// The codec's encoder settings.
    type Config: EncoderSettings;
    /// A quantizer on the codec's own scale.
    type Quality: Copy + fmt::Debug + PartialEq;
    /// The header of the codec's own frame.
    type Header: PayloadHeader;
    /// The library's encoder context.
    type EncoderContext: StateSlot;
    /// The library's decoder context.
    type DecoderContext: StateSlot;
    /// The quantizer of the throwaway keyframe that primes a decoder for a frame size.
    const PRIMING_QUALITY: Self::Quality;

    /// Opens an encoder context ready to encode from a loaded state (the library's first
    /// frame, always a keyframe, spent).
    fn open_encoder(config: &Self::Config) -> Result<Self::EncoderContext, CodecError>;
    /// Encodes `image` at `quality`: a keyframe, or an inter frame from the state slot into
    /// the state slot alone.
    fn encode(
        ctx: &mut Self::EncoderContext,
        image: &Image,
        keyframe: bool,
        quality: Self::Quality,
    ) -> Result<LibraryFrame<Self::Quality>, CodecError>;
    /// Opens a decoder context.
    fn open_decoder() -> Result<Self::DecoderContext, CodecError>;
    /// Decodes one frame of the codec and copies the shown picture's visible area into `out`.
    fn decode(
        ctx: &mut Self::DecoderContext,
        payload: &[u8],
        out: &mut Image,
    ) -> Result<(), CodecError>;
}

/// The functional encoder of codec `L` for one frame size.
pub struct StateEncoder<L: CodecLibrary> {
    ctx: L::EncoderContext,
    config: L::Config,
    /// The state the context's state slot holds now, when known.
    loaded: Option<StateHash>,
    library: PhantomData<fn() -> L>,
}

impl<L: CodecLibrary> StateEncoder<L> {
    /// An encoder with default settings for `width` x `height` frames.
    pub fn new(width: u32, height: u32) -> Result<Self, CodecError> {
        Self::with_config(L::Config::for_size(width, height))
    }

    /// An encoder with the given settings.
    pub fn with_config(config: L::Config) -> Result<Self, CodecError> {
        config.check()?;
        Ok(StateEncoder {
            ctx: L::open_encoder(&config)?,
            config,
            loaded: None,
            library: PhantomData,
        })
    }

    /// The settings this encoder was made with.
    pub fn config(&self) -> &L::Config {
        &self.config
    }

    /// Encodes `image` as a frame that decodes from `source` at quantizer `quality`.
    ///
    /// From the initial state, or a state of another size, the frame is a keyframe.
    pub fn encode(
        &mut self,
        source: &State,
        image: &Image,
        quality: L::Quality,
    ) -> Result<EncodedFrame<L::Quality>, CodecError> {
        let result = self.encode_inner(source, image, quality);
        if result.is_err() {
            self.loaded = None;
        }
        result
    }

    fn encode_inner(
        &mut self,
        source: &State,
        image: &Image,
        quality: L::Quality,
    ) -> Result<EncodedFrame<L::Quality>, CodecError> {
        let size = self.config.frame_size();
        if (image.width(), image.height()) != size {
            return Err(CodecError::InvalidInput(format!(
                "{}x{} picture for a {}x{} encoder",
                image.width(),
                image.height(),
                size.0,
                size.1
            )));
        }
        let keyframe = source.size() != Some(size);
        if !keyframe {
            self.load_state(source)?;
        }
        self.loaded = None;
        let out = L::encode(&mut self.ctx, image, keyframe, quality)?;
        let target = self.read_state()?;
        let source = if out.keyframe {
            StateHash::INITIAL
        } else {
            source.hash()
        };
        Ok(EncodedFrame::new(&out.data, source, target, out.quality))
    }

    /// Restores `state` into the context's state slot, unless it holds it already.
    ///
    /// `encode` does this itself; it is public so benchmarks can time the restore alone.
    pub fn load_state(&mut self, state: &State) -> Result<(), CodecError> {
        let size = self.config.frame_size();
        let reference = match state.reference() {
            Some(r) if (r.width(), r.height()) == size => r,
            _ => {
                return Err(CodecError::InvalidInput(format!(
                    "cannot load {state:?} into a {}x{} {} encoder",
                    size.0,
                    size.1,
                    L::NAME
                )))
            }
        };
        if self.loaded != Some(state.hash()) {
            self.loaded = None;
            self.ctx.set_state_reference(reference)?;
            self.loaded = Some(state.hash());
        }
        Ok(())
    }

    /// Reads the state slot back as a state (what `encode` does last).
    pub fn read_state(&mut self) -> Result<State, CodecError> {
        let (width, height) = self.config.frame_size();
        let mut recon = Image::new(width, height)?;
        self.loaded = None;
        self.ctx.copy_state_reference(&mut recon)?;
        let state = State::from_reference(recon);
        self.loaded = Some(state.hash());
        Ok(state)
    }
}

/// The functional decoder of codec `L` (any frame size).
pub struct StateDecoder<L: CodecLibrary> {
    ctx: L::DecoderContext,
    /// The size of the last keyframe the context decoded: it accepts references of that size.
    primed_size: Option<(u32, u32)>,
    /// The state the context's state slot holds now, when known.
    loaded: Option<StateHash>,
    /// A small keyframe per size, to prime a context that must decode from a given state.
    priming_frames: HashMap<(u32, u32), Vec<u8>>,
    library: PhantomData<fn() -> L>,
}

impl<L: CodecLibrary> StateDecoder<L> {
    /// A decoder with no state loaded.
    pub fn new() -> Result<Self, CodecError> {
        Ok(StateDecoder {
            ctx: L::open_decoder()?,
            primed_size: None,
            loaded: None,
            priming_frames: HashMap::new(),
            library: PhantomData,
        })
    }

    /// Decodes `frame` (bytes from [`EncodedFrame::bytes`]) from `state`.
    ///
    /// Returns the new state and the picture to show. An error, and never a picture, when the
    /// frame is malformed, names another source state, or decodes to a state other than the
    /// encoder's. The decoder stays usable after any error, and `state` is a value: it is
    /// never changed.
    pub fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Image), CodecError> {
        let info = parse_framed::<L::Header>(frame)?;
        let keyframe_size = info.header.keyframe_size();
        let reference = match keyframe_size {
            Some(_) => None,
            None if info.source != state.hash() => {
                return Err(CodecError::WrongSourceState {
                    expected: info.source,
                    given: state.hash(),
                })
            }
            // An inter frame's source is never the initial state, so this state has a picture.
            None => state.reference(),
        };
        let size = match (keyframe_size, reference) {
            (Some(size), _) => size,
            (None, Some(r)) => (r.width(), r.height()),
            (None, None) => {
                return Err(CodecError::CorruptFrame(
                    "inter frame from the initial state".into(),
                ))
            }
        };
        // A damaged frame can leave hidden state in the library (e.g. a saved probability
        // context) that makes the next good frame decode differently. So any failure resets
        // the context, and the frame gets one more try on a pristine one.
        let mut last_error = None;
        for _attempt in 0..2 {
            match self.run_library(state, reference, info.payload, size) {
                Ok(reached) if reached.0.hash() == info.target => return Ok(reached),
                Ok(reached) => {
                    last_error = Some(CodecError::TargetMismatch {
                        expected: info.target,
                        decoded: reached.0.hash(),
                    })
                }
                Err(e) => last_error = Some(e),
            }
            self.reset()?;
        }
        Err(last_error.expect("the loop ran"))
    }

    /// Replaces the library context with a fresh one.
    fn reset(&mut self) -> Result<(), CodecError> {
        self.ctx = L::open_decoder()?;
        self.primed_size = None;
        self.loaded = None;
        Ok(())
    }

    /// Loads the source state (for inter frames), decodes, and reads back the new state.
    fn run_library(
        &mut self,
        state: &State,
        reference: Option<&Image>,
        payload: &[u8],
        size: (u32, u32),
    ) -> Result<(State, Image), CodecError> {
        if let Some(reference) = reference {
            self.load(state, reference)?;
        }
        self.loaded = None;
        let mut picture = Image::new(size.0, size.1)?;
        L::decode(&mut self.ctx, payload, &mut picture)?;
        if reference.is_none() {
            self.primed_size = Some(size);
        }
        let mut recon = Image::new(size.0, size.1)?;
        self.ctx.copy_state_reference(&mut recon)?;
        let reached = State::from_reference(recon);
        self.loaded = Some(reached.hash());
        Ok((reached, picture))
    }

    /// Makes the context's state slot hold `state`.
    fn load(&mut self, state: &State, reference: &Image) -> Result<(), CodecError> {
        if self.loaded == Some(state.hash()) {
            return Ok(());
        }
        let size = (reference.width(), reference.height());
        if self.primed_size != Some(size) {
            self.prime(size)?;
        }
        self.loaded = None;
        self.ctx.set_state_reference(reference)?;
        self.loaded = Some(state.hash());
        Ok(())
    }

    /// Decodes a throwaway keyframe of `size` so the library has the buffers (and for AV1 the
    /// sequence header) of that size.
    fn prime(&mut self, size: (u32, u32)) -> Result<(), CodecError> {
        let keyframe = match self.priming_frames.entry(size) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut encoder = StateEncoder::<L>::new(size.0, size.1)?;
                let blank = Image::new(size.0, size.1)?;
                let frame = encoder.encode(&State::initial(), &blank, L::PRIMING_QUALITY)?;
                e.insert(frame.payload().to_vec())
            }
        };
        let mut picture = Image::new(size.0, size.1)?;
        L::decode(&mut self.ctx, keyframe, &mut picture)?;
        self.primed_size = Some(size);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
