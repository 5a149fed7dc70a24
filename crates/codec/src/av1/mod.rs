//! A functional AV1 codec on libaom: `encode(state, image, quality)` and
//! `decode(state, frame)`, beside the VP8 one and with the same contract.
//!
//! The state is buffer slot 0's picture: every inter frame predicts from slot 0 alone and
//! refreshes slot 0 alone, and is coded error resilient with no primary reference frame and
//! no reference-frame motion vectors, so nothing else carries over (see `context` for the
//! libaom settings, issue 47 for the feasibility check behind them). As for VP8, the decoder
//! checks by hash that it reached the encoder's reconstruction, and the bytes are not
//! reproducible for the same arguments (libaom carries speed features and rate-control
//! history between frames), but decodability is exact.

mod context;
mod frame;
mod quality;
mod sys;

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::error::CodecError;
use crate::image::{check_size, Image};
use crate::state::{State, StateHash};
use context::{DecoderContext, EncoderContext, EncoderSettings};

pub use frame::{parse_av1_frame, parse_temporal_unit, Av1Frame, Av1FrameInfo, Av1Header};
pub use quality::Av1Quality;

/// AV1 encoder settings.
#[derive(Clone, Copy, Debug)]
pub struct Av1EncoderConfig {
    /// Visible width of every frame (even).
    pub width: u32,
    /// Visible height of every frame (even).
    pub height: u32,
    /// libaom's realtime `cpu-used`, 0..=10: larger is faster and coarser. Default 10, the
    /// fastest (issue 47: 3.3 ms a 640x360 frame, against VP8's 1.1 ms at -8).
    pub cpu_used: i32,
}

impl Av1EncoderConfig {
    /// Default settings for frames of `width` x `height`.
    pub fn new(width: u32, height: u32) -> Self {
        Av1EncoderConfig {
            width,
            height,
            cpu_used: 10,
        }
    }

    /// Checks the size and speed.
    pub fn validate(&self) -> Result<(), CodecError> {
        check_size(self.width, self.height)?;
        if !(0..=10).contains(&self.cpu_used) {
            return Err(CodecError::InvalidInput(format!(
                "AV1 cpu_used {} is outside 0..=10",
                self.cpu_used
            )));
        }
        Ok(())
    }
}

/// The functional AV1 encoder for one frame size.
pub struct Av1Encoder {
    ctx: EncoderContext,
    config: Av1EncoderConfig,
    /// The state slot 0 of the libaom context holds now, when known.
    loaded: Option<StateHash>,
}

impl Av1Encoder {
    /// An encoder with default settings for `width` x `height` frames.
    pub fn new(width: u32, height: u32) -> Result<Self, CodecError> {
        Self::with_config(Av1EncoderConfig::new(width, height))
    }

    /// An encoder with the given settings.
    pub fn with_config(config: Av1EncoderConfig) -> Result<Self, CodecError> {
        config.validate()?;
        let mut ctx = EncoderContext::new(EncoderSettings {
            width: config.width,
            height: config.height,
            cpu_used: config.cpu_used,
        })?;
        // libaom allocates its reference buffers on the first frame (always a keyframe);
        // spend that here so a state can be loaded before the first real inter frame.
        ctx.set_quantizer(u32::from(Av1Quality::WORST.index()))?;
        ctx.encode(&Image::new(config.width, config.height)?, true)?;
        Ok(Av1Encoder {
            ctx,
            config,
            loaded: None,
        })
    }

    /// The settings this encoder was made with.
    pub fn config(&self) -> &Av1EncoderConfig {
        &self.config
    }

    /// Encodes `image` as a frame that decodes from `source` at quantizer `quality`.
    ///
    /// From the initial state, or a state of another size, the frame is a keyframe.
    pub fn encode(
        &mut self,
        source: &State,
        image: &Image,
        quality: Av1Quality,
    ) -> Result<Av1Frame, CodecError> {
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
        quality: Av1Quality,
    ) -> Result<Av1Frame, CodecError> {
        let size = (self.config.width, self.config.height);
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
        self.ctx.set_quantizer(u32::from(quality.index()))?;
        self.loaded = None;
        let out = self.ctx.encode(image, keyframe)?;
        if out.keyframe != keyframe {
            return Err(CodecError::Aom {
                call: "aom_codec_encode",
                message: format!("asked for keyframe={keyframe}, got {}", out.keyframe),
            });
        }
        let coded = self.ctx.last_quantizer()?;
        debug_assert_eq!(
            coded,
            u32::from(quality.index()),
            "libaom moved the quantizer"
        );
        let target = self.read_state()?;
        let source = if keyframe {
            StateHash::INITIAL
        } else {
            source.hash()
        };
        Ok(Av1Frame::new(&out.data, source, target, quality))
    }

    /// Restores `state` into slot 0, unless it holds it already.
    ///
    /// `encode` does this itself; it is public so benchmarks can time the restore alone.
    pub fn load_state(&mut self, state: &State) -> Result<(), CodecError> {
        let size = (self.config.width, self.config.height);
        let reference = match state.reference() {
            Some(r) if (r.width(), r.height()) == size => r,
            _ => {
                return Err(CodecError::InvalidInput(format!(
                    "cannot load {state:?} into a {}x{} AV1 encoder",
                    size.0, size.1
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

    /// Reads slot 0 back as a state (what `encode` does last).
    pub fn read_state(&mut self) -> Result<State, CodecError> {
        let mut recon = Image::new(self.config.width, self.config.height)?;
        self.loaded = None;
        self.ctx.copy_state_reference(&mut recon)?;
        let state = State::from_reference(recon);
        self.loaded = Some(state.hash());
        Ok(state)
    }
}

/// The functional AV1 decoder (any frame size).
pub struct Av1Decoder {
    ctx: DecoderContext,
    /// The size of the last keyframe the context decoded: it accepts references of that size.
    primed_size: Option<(u32, u32)>,
    /// The state slot 0 holds now, when known.
    loaded: Option<StateHash>,
    /// A small keyframe per size, to prime a context that must decode from a given state.
    priming_frames: HashMap<(u32, u32), Vec<u8>>,
}

impl Av1Decoder {
    /// A decoder with no state loaded.
    pub fn new() -> Result<Self, CodecError> {
        Ok(Av1Decoder {
            ctx: DecoderContext::new()?,
            primed_size: None,
            loaded: None,
            priming_frames: HashMap::new(),
        })
    }

    /// Decodes `frame` (bytes from [`Av1Frame::bytes`]) from `state`.
    ///
    /// Returns the new state and the picture to show. An error, and never a picture, when the
    /// frame is malformed, names another source state, or decodes to a state other than the
    /// encoder's. The decoder stays usable after any error, and `state` is a value: it is
    /// never changed.
    pub fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Image), CodecError> {
        let info = parse_av1_frame(frame)?;
        let reference = match info.header.keyframe_size {
            Some(_) => None,
            None if info.source != state.hash() => {
                return Err(CodecError::WrongSourceState {
                    expected: info.source,
                    given: state.hash(),
                })
            }
            None => state.reference(),
        };
        let size = match (info.header.keyframe_size, reference) {
            (Some(size), _) => size,
            (None, Some(r)) => (r.width(), r.height()),
            (None, None) => {
                return Err(CodecError::CorruptFrame(
                    "inter frame from the initial state".into(),
                ))
            }
        };
        // As for VP8: a damaged frame may leave hidden state in libaom, so any failure resets
        // the context and the frame gets one more try on a pristine one.
        let mut last_error = None;
        for _attempt in 0..2 {
            match self.run_libaom(state, reference, info.av1, size) {
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

    fn reset(&mut self) -> Result<(), CodecError> {
        self.ctx = DecoderContext::new()?;
        self.primed_size = None;
        self.loaded = None;
        Ok(())
    }

    /// Loads the source state (for inter frames), decodes, and reads back the new state.
    fn run_libaom(
        &mut self,
        state: &State,
        reference: Option<&Image>,
        av1: &[u8],
        size: (u32, u32),
    ) -> Result<(State, Image), CodecError> {
        if let Some(reference) = reference {
            self.load(state, reference)?;
        }
        self.loaded = None;
        let mut picture = Image::new(size.0, size.1)?;
        self.ctx.decode(av1, &mut picture)?;
        if reference.is_none() {
            self.primed_size = Some(size);
        }
        let mut recon = Image::new(size.0, size.1)?;
        self.ctx.copy_state_reference(&mut recon)?;
        let reached = State::from_reference(recon);
        self.loaded = Some(reached.hash());
        Ok((reached, picture))
    }

    /// Makes slot 0 hold `state`.
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

    /// Decodes a throwaway keyframe of `size` so libaom has the sequence header and buffers.
    fn prime(&mut self, size: (u32, u32)) -> Result<(), CodecError> {
        let keyframe = match self.priming_frames.entry(size) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut encoder = Av1Encoder::new(size.0, size.1)?;
                let blank = Image::new(size.0, size.1)?;
                let frame = encoder.encode(&State::initial(), &blank, Av1Quality::WORST)?;
                e.insert(frame.av1().to_vec())
            }
        };
        let mut picture = Image::new(size.0, size.1)?;
        self.ctx.decode(keyframe, &mut picture)?;
        self.primed_size = Some(size);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
