//! The functional VP8 codec: `encode(state, image, quality)` and `decode(state, frame)` on
//! libvpx, the shared body of [`crate::state_coding`] over VP8's own parts.
//!
//! The quantizer a frame is coded with is always the one asked for, whatever the context
//! encoded before (see `vpx::RC_TARGET_KBPS` for the libvpx rate-control path that used to
//! override it). The bytes are not reproducible for the same arguments: libvpx carries
//! mode-decision thresholds (from the last frame's prediction errors) and the loop-filter
//! search's starting level from frame to frame, which moves sizes by a few percent
//! (`examples/state_memory.rs` measures it). Decodability is exact: the decoder's picture and
//! state always equal the encoder's reconstruction, which `decode` checks by hash.

use crate::error::CodecError;
use crate::frame::Vp8Header;
use crate::image::{check_size, Image};
use crate::state_coding::{
    CodecLibrary, EncoderSettings, LibraryFrame, StateDecoder, StateEncoder,
};
use crate::vpx::{DecoderContext, EncoderContext, EncoderSettings as VpxSettings};
use crate::Quality;

/// Encoder settings.
#[derive(Clone, Copy, Debug)]
pub struct EncoderConfig {
    /// Visible width of every frame (even).
    pub width: u32,
    /// Visible height of every frame (even).
    pub height: u32,
    /// libvpx `cpu-used`, negative: a fixed speed, larger magnitude is faster and coarser.
    /// Default -8: see `salsify bench codec` for the speed/quality trade at 1280x720.
    pub cpu_used: i32,
    /// libvpx static threshold (0 = off): skip the mode search for macroblocks that barely
    /// changed. Faster on static scenes; never affects decodability.
    pub static_threshold: u32,
}

impl EncoderConfig {
    /// Default settings for frames of `width` x `height`.
    pub fn new(width: u32, height: u32) -> Self {
        EncoderConfig {
            width,
            height,
            cpu_used: -8,
            static_threshold: 0,
        }
    }

    /// Checks the size and speed.
    pub fn validate(&self) -> Result<(), CodecError> {
        check_size(self.width, self.height)?;
        if !(-16..=-1).contains(&self.cpu_used) {
            return Err(CodecError::InvalidInput(format!(
                "cpu_used {} is outside -16..=-1 (negative: fixed speed)",
                self.cpu_used
            )));
        }
        Ok(())
    }
}

impl EncoderSettings for EncoderConfig {
    fn for_size(width: u32, height: u32) -> Self {
        EncoderConfig::new(width, height)
    }

    fn frame_size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn check(&self) -> Result<(), CodecError> {
        self.validate()
    }
}

/// VP8 on libvpx: what is VP8's own in the functional codec ([`StateEncoder`] and
/// [`StateDecoder`] are the rest). The state is the LAST reference buffer.
#[derive(Clone, Copy, Debug)]
pub struct Vp8Library;

/// The functional VP8 encoder for one frame size.
pub type Encoder = StateEncoder<Vp8Library>;

/// The functional VP8 decoder (any frame size).
pub type Decoder = StateDecoder<Vp8Library>;

impl CodecLibrary for Vp8Library {
    const NAME: &'static str = "VP8";
    type Config = EncoderConfig;
    type Quality = Quality;
    type Header = Vp8Header;
    type EncoderContext = EncoderContext;
    type DecoderContext = DecoderContext;
    const PRIMING_QUALITY: Quality = Quality::WORST;

    fn open_encoder(config: &EncoderConfig) -> Result<EncoderContext, CodecError> {
        let mut ctx = EncoderContext::new(VpxSettings {
            width: config.width,
            height: config.height,
            cpu_used: config.cpu_used,
            static_threshold: config.static_threshold,
        })?;
        // libvpx makes its first frame a keyframe whatever it is asked; spend that here so
        // the first real inter frame really is one. At the finest quantizer: libvpx starts
        // each frame's loop-filter search at the last frame's level, and a blank picture
        // keeps the level it starts from, so this leaves it at 0 rather than at the coarsest
        // quantizer's minimum of 15 (from which the search had stopped at levels 21-29 for
        // frames at quality 3, 3 dB of PSNR lost, measured with examples/state_memory.rs).
        ctx.set_quantizer(Quality::BEST.to_libvpx())?;
        ctx.encode(&Image::new(config.width, config.height)?, true)?;
        Ok(ctx)
    }

    fn encode(
        ctx: &mut EncoderContext,
        image: &Image,
        keyframe: bool,
        quality: Quality,
    ) -> Result<LibraryFrame<Quality>, CodecError> {
        ctx.set_quantizer(quality.to_libvpx())?;
        let out = ctx.encode(image, keyframe)?;
        // The index the frame really carries (vpx.rs keeps libvpx's rate control from
        // overriding the one asked for; reporting what was coded keeps any slip visible).
        let coded = Quality::new(ctx.last_quantizer()?)?;
        debug_assert_eq!(coded, quality.effective(), "libvpx overrode the quantizer");
        Ok(LibraryFrame {
            data: out.data,
            keyframe: out.keyframe,
            quality: coded,
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
mod tests {
    use super::*;
    use crate::frame::{parse_frame, EncodedFrame};
    use crate::state::State;

    /// The quantizer index the frame's header carries, read by a plain libvpx decoder.
    fn coded_index(decoder: &mut DecoderContext, frame: &EncodedFrame) -> u8 {
        let info = parse_frame(&frame.bytes).unwrap();
        let size = match (info.header.keyframe_size, frame.target.size()) {
            (Some(size), _) | (None, Some(size)) => size,
            (None, None) => unreachable!("an inter frame reaches a picture"),
        };
        let mut picture = Image::new(size.0, size.1).unwrap();
        decoder.decode(info.payload, &mut picture).unwrap();
        decoder.last_quantizer().unwrap()
    }

    /// Regression: libvpx's rate control, after 150 inter frames, floors the quantizer at a
    /// value derived from the average quantizer of every frame the context coded before, so a
    /// context that had coded a long coarse stretch coded "quality 3" at index 22-24 forever
    /// (small frames, blurred pictures). Encoding from a state at a quality must not depend
    /// on the encodes before: the coded index is the one asked for, and the frame matches
    /// what a fresh encoder makes from the same (state, picture, quality).
    #[test]
    fn coded_quantizer_does_not_depend_on_earlier_encodes() {
        // Big enough for the finest frames to overrun the old rate-control budget, which
        // the misbehaving path needs.
        let (w, h) = (320, 180);
        let source = crate::SyntheticSource::new(w, h, 30, 1).unwrap();
        let (fine, coarse) = (Quality::BEST, Quality::WORST);
        let mut enc = Encoder::new(w, h).unwrap();
        let mut check = DecoderContext::new().unwrap();
        let mut state = State::initial();
        for i in 0..160 {
            // Fine, a coarse stretch (a fade), then fine past libvpx's 150th inter frame.
            let quality = if (60..120).contains(&i) { coarse } else { fine };
            let picture = source.frame(i);
            let frame = enc.encode(&state, &picture, quality).unwrap();
            assert_eq!(frame.quality, quality.effective(), "frame {i}");
            assert_eq!(
                coded_index(&mut check, &frame),
                quality.effective().index(),
                "frame {i} asked for {quality}"
            );
            if i >= 150 {
                let fresh = Encoder::new(w, h)
                    .unwrap()
                    .encode(&state, &picture, quality)
                    .unwrap();
                let ratio = frame.len() as f64 / fresh.len() as f64;
                assert!(
                    (0.7..1.4).contains(&ratio),
                    "frame {i}: {} bytes, a fresh encoder {}",
                    frame.len(),
                    fresh.len()
                );
            }
            state = frame.target;
        }
    }
}
