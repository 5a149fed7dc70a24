//! A functional AV1 codec on libaom: `encode(state, image, quality)` and
//! `decode(state, frame)`, the shared body of [`crate::state_coding`] over AV1's own parts,
//! beside the VP8 one and with the same contract.
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

use crate::error::CodecError;
use crate::image::{check_size, Image};
use crate::state_coding::{
    CodecLibrary, EncoderSettings, LibraryFrame, StateDecoder, StateEncoder,
};
use context::{DecoderContext, EncoderContext, EncoderSettings as AomSettings};

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

impl EncoderSettings for Av1EncoderConfig {
    fn for_size(width: u32, height: u32) -> Self {
        Av1EncoderConfig::new(width, height)
    }

    fn frame_size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn check(&self) -> Result<(), CodecError> {
        self.validate()
    }
}

/// AV1 on libaom: what is AV1's own in the functional codec ([`StateEncoder`] and
/// [`StateDecoder`] are the rest). The state is buffer slot 0.
#[derive(Clone, Copy, Debug)]
pub struct Av1Library;

/// The functional AV1 encoder for one frame size.
pub type Av1Encoder = StateEncoder<Av1Library>;

/// The functional AV1 decoder (any frame size).
pub type Av1Decoder = StateDecoder<Av1Library>;

impl CodecLibrary for Av1Library {
    const NAME: &'static str = "AV1";
    type Config = Av1EncoderConfig;
    type Quality = Av1Quality;
    type Header = Av1Header;
    type EncoderContext = EncoderContext;
    type DecoderContext = DecoderContext;
    const PRIMING_QUALITY: Av1Quality = Av1Quality::WORST;

    fn open_encoder(config: &Av1EncoderConfig) -> Result<EncoderContext, CodecError> {
        let mut ctx = EncoderContext::new(AomSettings {
            width: config.width,
            height: config.height,
            cpu_used: config.cpu_used,
        })?;
        // libaom allocates its reference buffers on the first frame (always a keyframe);
        // spend that here so a state can be loaded before the first real inter frame.
        ctx.set_quantizer(u32::from(Av1Quality::WORST.index()))?;
        ctx.encode(&Image::new(config.width, config.height)?, true)?;
        Ok(ctx)
    }

    fn encode(
        ctx: &mut EncoderContext,
        image: &Image,
        keyframe: bool,
        quality: Av1Quality,
    ) -> Result<LibraryFrame<Av1Quality>, CodecError> {
        ctx.set_quantizer(u32::from(quality.index()))?;
        let out = ctx.encode(image, keyframe)?;
        if out.keyframe != keyframe {
            return Err(CodecError::Aom {
                call: "aom_codec_encode",
                message: format!("asked for keyframe={keyframe}, got {}", out.keyframe),
            });
        }
        let coded = ctx.last_quantizer()?;
        debug_assert_eq!(
            coded,
            u32::from(quality.index()),
            "libaom moved the quantizer"
        );
        Ok(LibraryFrame {
            data: out.data,
            keyframe,
            quality,
        })
    }

    fn open_decoder() -> Result<DecoderContext, CodecError> {
        DecoderContext::new()
    }

    fn decode(ctx: &mut DecoderContext, payload: &[u8], out: &mut Image) -> Result<(), CodecError> {
        ctx.decode(payload, out)
    }
}

#[cfg(test)]
mod tests;
