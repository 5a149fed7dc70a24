//! The functional encoder and decoder: `encode(state, image, quality)` and
//! `decode(state, frame)`.
//!
//! Each wraps one libvpx context and restores the given state into it before working, skipping
//! the restore when the context already holds that state (the common case of encoding or
//! decoding from the frame just made). The quantizer a frame is coded with is always the one
//! asked for, whatever the context encoded before (see `vpx::RC_TARGET_KBPS` for the libvpx
//! rate-control path that used to override it). The bytes are not reproducible for the same
//! arguments: libvpx carries mode-decision thresholds (from the last frame's prediction errors)
//! and the loop-filter search's starting level from frame to frame, which moves sizes by a few
//! percent (`examples/state_memory.rs` measures it). Decodability is exact: the decoder's
//! picture and state always equal the encoder's reconstruction, which `decode` checks by hash.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::error::CodecError;
use crate::frame::{parse_frame, EncodedFrame};
use crate::image::{check_size, Image};
use crate::state::{State, StateHash};
use crate::vpx::{DecoderContext, EncoderContext, EncoderSettings};
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

/// The functional VP8 encoder for one frame size.
pub struct Encoder {
    ctx: EncoderContext,
    config: EncoderConfig,
    /// The state the libvpx context's LAST buffer holds now, when known.
    loaded: Option<StateHash>,
}

impl Encoder {
    /// An encoder with default settings for `width` x `height` frames.
    pub fn new(width: u32, height: u32) -> Result<Self, CodecError> {
        Self::with_config(EncoderConfig::new(width, height))
    }

    /// An encoder with the given settings.
    pub fn with_config(config: EncoderConfig) -> Result<Self, CodecError> {
        config.validate()?;
        let mut ctx = EncoderContext::new(EncoderSettings {
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
        Ok(Encoder {
            ctx,
            config,
            loaded: None,
        })
    }

    /// The settings this encoder was made with.
    pub fn config(&self) -> &EncoderConfig {
        &self.config
    }

    /// Encodes `image` as a frame that decodes from `source` at quantizer `quality`.
    ///
    /// From the initial state, or a state of another size, the frame is a keyframe.
    pub fn encode(
        &mut self,
        source: &State,
        image: &Image,
        quality: Quality,
    ) -> Result<EncodedFrame, CodecError> {
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
        quality: Quality,
    ) -> Result<EncodedFrame, CodecError> {
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
        self.ctx.set_quantizer(quality.to_libvpx())?;
        self.loaded = None;
        let out = self.ctx.encode(image, keyframe)?;
        // The index the frame really carries (vpx.rs keeps libvpx's rate control from
        // overriding the one asked for; reporting what was coded keeps any slip visible).
        let coded = Quality::new(self.ctx.last_quantizer()?)?;
        debug_assert_eq!(coded, quality.effective(), "libvpx overrode the quantizer");
        let target = self.read_state()?;
        let source = if out.keyframe {
            StateHash::INITIAL
        } else {
            source.hash()
        };
        Ok(EncodedFrame::new(&out.data, source, target, coded))
    }
}

impl Encoder {
    /// Restores `state` into the libvpx context, unless it holds it already.
    ///
    /// `encode` does this itself; it is public so benchmarks can time the restore alone.
    pub fn load_state(&mut self, state: &State) -> Result<(), CodecError> {
        let size = (self.config.width, self.config.height);
        let reference = match state.reference() {
            Some(r) if (r.width(), r.height()) == size => r,
            _ => {
                return Err(CodecError::InvalidInput(format!(
                    "cannot load {state:?} into a {}x{} encoder",
                    size.0, size.1
                )))
            }
        };
        if self.loaded != Some(state.hash()) {
            self.loaded = None;
            self.ctx.set_last_reference(reference)?;
            self.loaded = Some(state.hash());
        }
        Ok(())
    }

    /// Reads the context's LAST reference back as a state (what `encode` does last).
    pub fn read_state(&mut self) -> Result<State, CodecError> {
        let mut recon = Image::new(self.config.width, self.config.height)?;
        self.loaded = None;
        self.ctx.copy_last_reference(&mut recon)?;
        let state = State::from_reference(recon);
        self.loaded = Some(state.hash());
        Ok(state)
    }
}

/// The functional VP8 decoder (any frame size).
pub struct Decoder {
    ctx: DecoderContext,
    /// The size of the last keyframe the context decoded: it accepts references of that size.
    primed_size: Option<(u32, u32)>,
    /// The state the context's LAST buffer holds now, when known.
    loaded: Option<StateHash>,
    /// A tiny keyframe per size, to prime a context that must decode from a given state.
    priming_frames: HashMap<(u32, u32), Vec<u8>>,
}

impl Decoder {
    /// A decoder with no state loaded.
    pub fn new() -> Result<Self, CodecError> {
        Ok(Decoder {
            ctx: DecoderContext::new()?,
            primed_size: None,
            loaded: None,
            priming_frames: HashMap::new(),
        })
    }

    /// Decodes `frame` (bytes from [`EncodedFrame::bytes`]) from `state`.
    ///
    /// Returns the new state and the picture to show. An error, and never a picture, when the
    /// frame is malformed, names another source state, or decodes to a state other than the
    /// encoder's. The decoder stays usable after any error.
    pub fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Image), CodecError> {
        let info = parse_frame(frame)?;
        let reference = match info.header.keyframe_size {
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
        let size = match (info.header.keyframe_size, reference) {
            (Some(size), _) => size,
            (None, Some(r)) => (r.width(), r.height()),
            (None, None) => {
                return Err(CodecError::CorruptFrame(
                    "inter frame from the initial state".into(),
                ))
            }
        };
        // A damaged frame can leave hidden state in libvpx (e.g. a saved probability
        // context) that makes the next good frame decode differently. So any failure resets
        // the context, and the frame gets one more try on a pristine one.
        let mut last_error = None;
        for _attempt in 0..2 {
            match self.run_libvpx(state, reference, info.vp8, size) {
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

    /// Replaces the libvpx context with a fresh one.
    fn reset(&mut self) -> Result<(), CodecError> {
        self.ctx = DecoderContext::new()?;
        self.primed_size = None;
        self.loaded = None;
        Ok(())
    }

    /// Loads the source state (for inter frames), decodes, and reads back the new state.
    fn run_libvpx(
        &mut self,
        state: &State,
        reference: Option<&Image>,
        vp8: &[u8],
        size: (u32, u32),
    ) -> Result<(State, Image), CodecError> {
        if let Some(reference) = reference {
            self.load(state, reference)?;
        }
        self.loaded = None;
        let mut picture = Image::new(size.0, size.1)?;
        self.ctx.decode(vp8, &mut picture)?;
        if reference.is_none() {
            self.primed_size = Some(size);
        }
        let mut recon = Image::new(size.0, size.1)?;
        self.ctx.copy_last_reference(&mut recon)?;
        let reached = State::from_reference(recon);
        self.loaded = Some(reached.hash());
        Ok((reached, picture))
    }

    /// Makes the context's LAST buffer hold `state`.
    fn load(&mut self, state: &State, reference: &Image) -> Result<(), CodecError> {
        if self.loaded == Some(state.hash()) {
            return Ok(());
        }
        let size = (reference.width(), reference.height());
        if self.primed_size != Some(size) {
            self.prime(size)?;
        }
        self.loaded = None;
        self.ctx.set_last_reference(reference)?;
        self.loaded = Some(state.hash());
        Ok(())
    }

    /// Decodes a throwaway keyframe of `size` so libvpx allocates buffers of that size.
    fn prime(&mut self, size: (u32, u32)) -> Result<(), CodecError> {
        let keyframe = match self.priming_frames.entry(size) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut encoder = Encoder::new(size.0, size.1)?;
                let blank = Image::new(size.0, size.1)?;
                let frame = encoder.encode(&State::initial(), &blank, Quality::WORST)?;
                e.insert(frame.vp8().to_vec())
            }
        };
        let mut picture = Image::new(size.0, size.1)?;
        self.ctx.decode(keyframe, &mut picture)?;
        self.primed_size = Some(size);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::PlaneId;

    /// A moving diagonal pattern: enough motion and texture for real inter prediction.
    fn picture(w: u32, h: u32, t: usize) -> Image {
        let mut img = Image::new(w, h).unwrap();
        for id in PlaneId::ALL {
            let plane = img.plane_mut(id);
            for y in 0..plane.height() {
                for (x, s) in plane.row_mut(y).iter_mut().enumerate() {
                    *s = ((x * 3 + y * 5 + t * 7) % 251) as u8 ^ ((x / 8 + y / 8) % 2 * 64) as u8;
                }
            }
        }
        img.extend_edges();
        img
    }

    #[test]
    fn decoder_matches_encoder_across_skips_and_jumps() {
        let (w, h) = (50, 34);
        let mut enc = Encoder::new(w, h).unwrap();
        let mut dec = Decoder::new().unwrap();
        let q = |i| Quality::new(i).unwrap();
        let k = enc
            .encode(&State::initial(), &picture(w, h, 0), q(40))
            .unwrap();
        assert!(k.keyframe);
        let (s1, p1) = dec.decode(&State::initial(), &k.bytes).unwrap();
        assert_eq!(s1.hash(), k.target.hash());
        assert!(p1.visible_eq(&k.target.picture().unwrap()));
        // Two candidates from one state; send the second; then jump back to the keyframe state.
        let a = enc.encode(&k.target, &picture(w, h, 1), q(20)).unwrap();
        let b = enc.encode(&k.target, &picture(w, h, 1), q(90)).unwrap();
        assert!(!a.keyframe && !b.keyframe);
        assert!(a.len() > b.len(), "finer quantizer should cost more bytes");
        let (s2, p2) = dec.decode(&s1, &b.bytes).unwrap();
        assert_eq!(s2.hash(), b.target.hash());
        assert!(p2.visible_eq(&b.target.picture().unwrap()));
        let c = enc.encode(&k.target, &picture(w, h, 2), q(60)).unwrap();
        let (s3, _) = dec.decode(&s1, &c.bytes).unwrap();
        assert_eq!(s3.hash(), c.target.hash());
        // A fresh decoder fed a state it never decoded still decodes exactly.
        let mut fresh = Decoder::new().unwrap();
        let (s4, _) = fresh
            .decode(
                &b.target,
                &enc.encode(&b.target, &picture(w, h, 3), q(50))
                    .unwrap()
                    .bytes,
            )
            .unwrap();
        assert!(!s4.is_initial());
    }

    /// The quantizer index the frame's header carries, read by a plain libvpx decoder.
    fn coded_index(decoder: &mut DecoderContext, frame: &EncodedFrame) -> u8 {
        let info = parse_frame(&frame.bytes).unwrap();
        let size = match (info.header.keyframe_size, frame.target.size()) {
            (Some(size), _) | (None, Some(size)) => size,
            (None, None) => unreachable!("an inter frame reaches a picture"),
        };
        let mut picture = Image::new(size.0, size.1).unwrap();
        decoder.decode(info.vp8, &mut picture).unwrap();
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

    #[test]
    fn wrong_state_and_garbage_are_errors() {
        let (w, h) = (32, 32);
        let mut enc = Encoder::new(w, h).unwrap();
        let mut dec = Decoder::new().unwrap();
        let k = enc
            .encode(
                &State::initial(),
                &picture(w, h, 0),
                Quality::new(40).unwrap(),
            )
            .unwrap();
        let i = enc
            .encode(&k.target, &picture(w, h, 1), Quality::new(40).unwrap())
            .unwrap();
        let err = dec.decode(&State::initial(), &i.bytes).unwrap_err();
        assert!(matches!(err, CodecError::WrongSourceState { .. }), "{err}");
        assert!(dec.decode(&i.target, &i.bytes).is_err());
        let mut garbage = i.bytes.clone();
        for b in &mut garbage[20..] {
            *b = b.wrapping_mul(31).wrapping_add(7);
        }
        assert!(dec.decode(&k.target, &garbage).is_err());
        assert!(dec
            .decode(&k.target, &i.bytes[..i.bytes.len() / 2])
            .is_err());
        // Still usable afterwards.
        let (s, _) = dec.decode(&k.target, &i.bytes).unwrap();
        assert_eq!(s.hash(), i.target.hash());
    }
}
