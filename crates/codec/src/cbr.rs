//! A conventional VP8 encoder and decoder: libvpx with its own CBR rate control and hidden
//! state, as WebRTC uses it. The comparison schemes (crate `salsify-baselines`) run on this;
//! Salsify itself uses the functional [`crate::Encoder`].
//!
//! The settings follow libwebrtc's `LibvpxVp8Encoder::InitEncode` (modules/video_coding/
//! codecs/vp8/libvpx_vp8_encoder.cc) for one spatial and one temporal layer:
//! one-pass CBR, not error resilient (only temporal layering turns that on), no lag,
//! `rc_dropframe_thresh = 30` (frame dropping on), quantizer range 2..=56 (WebRTC's default
//! VP8 qp-max), undershoot 100 % and overshoot 15 %, buffer initial/optimal/size
//! 500/600/1000 ms, automatic keyframes at most 3000 frames apart, static threshold 1,
//! and `VP8E_SET_MAX_INTRA_BITRATE_PCT` from its `MaxIntraTarget` (optimal buffer x 0.5 x
//! frame rate / 10, at least 300 %). Speed `cpu-used -8` is this project's choice (the
//! functional encoder's; libwebrtc uses -6 on desktop), and noise reduction is off as in the
//! functional encoder so the two see the same pictures.

use crate::error::CodecError;
use crate::image::{check_size, Image};
use crate::vpx::{DecoderContext, RtcEncoderContext, RtcSettings};

/// Settings of a [`CbrEncoder`]. Defaults: see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CbrConfig {
    /// libvpx `cpu-used` (negative, fixed speed). Default -8.
    pub cpu_used: i32,
    /// Initial target in kb/s. Default 300 (libwebrtc's default start bit rate).
    pub start_kbps: u32,
    /// The frame rate the source is expected to have (for the intra-frame cap, and the
    /// nominal duration given to every frame). Default 30.
    pub max_fps: u32,
    /// `rc_dropframe_thresh`; 0 disables libvpx's own frame dropping. Default 30.
    pub dropframe_thresh: u32,
    /// Finest libvpx quantizer (0..=63). Default 2.
    pub min_quantizer: u32,
    /// Coarsest libvpx quantizer (0..=63). Default 56.
    pub max_quantizer: u32,
    /// The most nominal frame intervals (`1 / max_fps`) libvpx is told passed between two
    /// encoded pictures; 0: no limit, libvpx sees the capture times (WebRTC's behaviour).
    /// libvpx budgets each frame by the time since the previous one (its frame-rate
    /// estimate jumps to the instantaneous rate when a gap changes by 10 %), so the first
    /// picture after a pause of `n` intervals gets about `n` frames' worth of bits; a sender
    /// that pauses the encoder because its queue is long (Vidaptive) wants an ordinary
    /// frame then. Default 0.
    pub max_gap_frames: u32,
}

impl Default for CbrConfig {
    fn default() -> Self {
        CbrConfig {
            cpu_used: -8,
            start_kbps: 300,
            max_fps: 30,
            dropframe_thresh: 30,
            min_quantizer: 2,
            max_quantizer: 56,
            max_gap_frames: 0,
        }
    }
}

/// One frame from a [`CbrEncoder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CbrFrame {
    /// The VP8 frame (RFC 6386).
    pub data: Vec<u8>,
    /// A keyframe (forced or chosen by libvpx).
    pub keyframe: bool,
    /// The VP8 quantizer index (0..=127) it was coded with.
    pub quality: u8,
}

/// libvpx VP8 in real-time CBR mode, one stream of one size.
pub struct CbrEncoder {
    ctx: RtcEncoderContext,
    size: (u32, u32),
    config: CbrConfig,
    /// The last picture's capture time and the time libvpx was given for it (µs).
    last: Option<(u64, u64)>,
}

impl CbrEncoder {
    /// An encoder for `width` x `height` pictures.
    pub fn new(width: u32, height: u32, config: CbrConfig) -> Result<Self, CodecError> {
        check_size(width, height)?;
        if !(-16..=-1).contains(&config.cpu_used)
            || config.min_quantizer > config.max_quantizer
            || config.max_quantizer > 63
            || config.dropframe_thresh > 100
            || config.max_fps == 0
        {
            return Err(CodecError::InvalidInput(format!(
                "CBR encoder settings {config:?}"
            )));
        }
        let optimal_ms = 600;
        let intra = (optimal_ms / 2 * config.max_fps / 10).max(300);
        let ctx = RtcEncoderContext::new(RtcSettings {
            width,
            height,
            cpu_used: config.cpu_used,
            target_kbps: config.start_kbps,
            dropframe_thresh: config.dropframe_thresh,
            min_quantizer: config.min_quantizer,
            max_quantizer: config.max_quantizer,
            undershoot_pct: 100,
            overshoot_pct: 15,
            buffer_ms: [500, optimal_ms, 1000],
            keyframe_max_dist: 3000,
            max_intra_bitrate_pct: intra,
            static_threshold: 1,
            max_fps: config.max_fps,
        })?;
        Ok(CbrEncoder {
            ctx,
            size: (width, height),
            config,
            last: None,
        })
    }

    /// The picture size.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Sets the rate control's target for the next frames.
    pub fn set_target_bitrate(&mut self, kbps: u32) -> Result<(), CodecError> {
        self.ctx.set_target_bitrate(kbps)
    }

    /// Encodes a picture captured `at_us` microseconds into the stream (increasing). `None`:
    /// the rate control dropped it (the buffer was too empty).
    pub fn encode(
        &mut self,
        image: &Image,
        at_us: u64,
        force_keyframe: bool,
    ) -> Result<Option<CbrFrame>, CodecError> {
        let stream_us = match self.last {
            Some((at, given)) if self.config.max_gap_frames > 0 => {
                let nominal = 1_000_000 / u64::from(self.config.max_fps);
                let cap = nominal * u64::from(self.config.max_gap_frames);
                given + at_us.saturating_sub(at).clamp(1, cap.max(1))
            }
            _ => at_us,
        };
        self.last = Some((at_us, stream_us));
        let pts = i64::try_from(stream_us).unwrap_or(i64::MAX / 2);
        let Some(out) = self.ctx.encode(image, pts, force_keyframe)? else {
            return Ok(None);
        };
        let quality = self.ctx.last_quantizer()?;
        Ok(Some(CbrFrame {
            data: out.data,
            keyframe: out.keyframe,
            quality,
        }))
    }
}

/// A plain VP8 decoder: decodes a normal stream in order (state hidden in libvpx).
pub struct PlainDecoder {
    ctx: DecoderContext,
    size: (u32, u32),
}

impl PlainDecoder {
    /// A decoder for a stream of `width` x `height` frames.
    pub fn new(width: u32, height: u32) -> Result<Self, CodecError> {
        check_size(width, height)?;
        Ok(PlainDecoder {
            ctx: DecoderContext::new()?,
            size: (width, height),
        })
    }

    /// Decodes the next frame of the stream. A corrupt frame, or one of another size, is an
    /// error (and the stream needs a keyframe to recover).
    pub fn decode(&mut self, data: &[u8]) -> Result<Image, CodecError> {
        let mut out = Image::new(self.size.0, self.size.1)?;
        self.ctx.decode(data, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticSource;

    #[test]
    fn cbr_stream_decodes_in_order_and_follows_the_target() {
        let (w, h) = (160, 96);
        let mut source = SyntheticSource::new(w, h, 30, 3).unwrap();
        let mut enc = CbrEncoder::new(w, h, CbrConfig::default()).unwrap();
        let mut dec = PlainDecoder::new(w, h).unwrap();
        let mut bytes = [0usize; 2];
        for (phase, kbps) in [100u32, 800].into_iter().enumerate() {
            enc.set_target_bitrate(kbps).unwrap();
            for i in 0..60u64 {
                let n = phase as u64 * 60 + i;
                let img = source.next_frame().image;
                if let Some(f) = enc.encode(&img, n * 33_333, n == 0).unwrap() {
                    assert_eq!(f.keyframe, n == 0 || f.keyframe);
                    let shown = dec.decode(&f.data).unwrap();
                    assert_eq!((shown.width(), shown.height()), (w, h));
                    if i >= 30 {
                        bytes[phase] += f.data.len();
                    }
                }
            }
        }
        // A higher target gives more bytes (30 frames = 1 s at each rate).
        assert!(bytes[1] > bytes[0] * 2, "{bytes:?}");
        assert!(dec.decode(&[1, 2, 3]).is_err());
    }

    /// The output follows the target whatever the frame rate and however many pictures are
    /// skipped before encoding (libvpx derives its per-frame budget from the timestamps; a
    /// wrong `duration` once doubled the output at 60 fps and starved the stream when
    /// pictures were skipped).
    #[test]
    fn cbr_output_matches_the_target_at_60_fps_and_with_skips() {
        let (w, h) = (160, 96);
        let source = SyntheticSource::new(w, h, 60, 1).unwrap();
        for every in [1u64, 2, 3] {
            let mut enc = CbrEncoder::new(
                w,
                h,
                CbrConfig {
                    max_fps: 60,
                    ..CbrConfig::default()
                },
            )
            .unwrap();
            enc.set_target_bitrate(200).unwrap();
            let mut bytes = 0;
            for i in (0..240u64).step_by(every as usize) {
                let f = enc
                    .encode(&source.frame(i), i * 1_000_000 / 60, i == 0)
                    .unwrap();
                if i >= 120 {
                    bytes += f.map_or(0, |f| f.data.len());
                }
            }
            let kbps = bytes * 8 / 2 / 1000;
            assert!(
                (150..=250).contains(&kbps),
                "every {every}: {kbps} kb/s for 200"
            );
        }
    }

    /// With `max_gap_frames`, the first picture after a pause is an ordinary frame; without,
    /// libvpx budgets it by the pause (about one frame's bits per interval skipped).
    #[test]
    fn capped_gap_keeps_the_frame_after_a_pause_ordinary() {
        let (w, h) = (160, 96);
        let source = SyntheticSource::new(w, h, 30, 1).unwrap();
        let after_pause = |max_gap_frames: u32| {
            let mut enc = CbrEncoder::new(
                w,
                h,
                CbrConfig {
                    max_gap_frames,
                    dropframe_thresh: 0,
                    ..CbrConfig::default()
                },
            )
            .unwrap();
            enc.set_target_bitrate(300).unwrap();
            let mut sizes = vec![];
            // 3 s at 30 fps, then a 20-interval pause, then 5 frames.
            for i in (0..90u64).chain(110..115) {
                let f = enc.encode(&source.frame(i), i * 33_333, i == 0).unwrap();
                sizes.push(f.map_or(0, |f| f.data.len()));
            }
            let normal = sizes[60..90].iter().sum::<usize>() / 30;
            (normal, sizes[90])
        };
        let (normal, first) = after_pause(1);
        assert!(first < normal * 3, "capped: {first} bytes vs {normal}");
        let (normal, first) = after_pause(0);
        assert!(first > normal * 4, "uncapped: {first} bytes vs {normal}");
    }
}
