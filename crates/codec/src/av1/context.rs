//! Thin owners of libaom's AV1 encoder and decoder contexts (with `vpx.rs`, the project's
//! only `unsafe`).
//!
//! The settings are issue 47's feasibility recipe for an explicit-state AV1 stream: realtime
//! usage, one thread, no lag, a constant quantizer (`AOM_Q`, min = max, set again through the
//! config before each encode: libaom 3.6 has no per-frame quantizer control), no order hints,
//! no reference-frame motion vectors, no adaptive quantisation, no temporal model, global
//! motion or loop restoration. Each inter frame references LAST only, with every reference
//! pointing at buffer slot 0 and only slot 0 refreshed, and carries the per-frame flags
//! error resilient, primary reference none and no reference-frame MVs: nothing but slot 0's
//! picture carries from one frame to the next. (The global `g_error_resilient` would add frame
//! ids, decoder state that cannot be exported, so it stays off.)
//!
//! Reference pictures cross the boundary as [`Image`]s: libaom's frame buffers are the visible
//! size rounded up to a multiple of 8, its copies read and write `w` x `h` samples (so `w`,
//! `h` are that rounded size, which the 16-aligned storage of an [`Image`] holds) and extend
//! a border of `(stride - align32(w)) / 2`, clamped at zero, which is zero for our tightly
//! strided planes.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr;

use super::sys;
use crate::error::CodecError;
use crate::image::{Image, PlaneId};
use crate::state_coding::StateSlot;

/// Largest compressed frame handed to libaom.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// The buffer slot that holds the state (LAST).
const STATE_SLOT: c_int = 0;

/// Encoder settings fixed for the life of a context.
#[derive(Clone, Copy, Debug)]
pub struct EncoderSettings {
    /// Visible width of every frame.
    pub width: u32,
    /// Visible height.
    pub height: u32,
    /// libaom's realtime `cpu-used` speed, 0..=10.
    pub cpu_used: i32,
}

/// What one encode produced.
pub struct EncodedBytes {
    /// The temporal unit as libaom wrote it (OBUs with size fields).
    pub data: Vec<u8>,
    /// libaom flagged it as a keyframe.
    pub keyframe: bool,
}

/// An owned libaom AV1 encoder context.
pub struct EncoderContext {
    // Boxed so the context's address never changes while libaom holds it.
    ctx: Box<sys::aom_codec_ctx_t>,
    cfg: sys::aom_codec_enc_cfg_t,
    pts: i64,
}

// SAFETY: a libaom context has no thread affinity; it is used through `&mut self` only, and
// with `g_threads = 1` libaom starts no threads of its own.
unsafe impl Send for EncoderContext {}

impl EncoderContext {
    /// Opens an encoder for frames of the given visible size.
    pub fn new(settings: EncoderSettings) -> Result<Self, CodecError> {
        // SAFETY: the interface pointer is static.
        let iface = unsafe { sys::aom_codec_av1_cx() };
        let mut cfg = std::mem::MaybeUninit::<sys::aom_codec_enc_cfg_t>::uninit();
        // SAFETY: iface is valid and cfg is writable storage for one config (its layout is
        // pinned by sys's tests), which libaom fills completely on success.
        check("aom_codec_enc_config_default", unsafe {
            sys::aom_codec_enc_config_default(iface, cfg.as_mut_ptr(), sys::AOM_USAGE_REALTIME)
        })?;
        // SAFETY: initialised by the successful call above.
        let mut cfg = unsafe { cfg.assume_init() };
        cfg.g_w = settings.width;
        cfg.g_h = settings.height;
        cfg.g_threads = 1;
        cfg.g_timebase = sys::aom_rational_t { num: 1, den: 30 };
        cfg.g_error_resilient = 0;
        cfg.g_lag_in_frames = 0;
        cfg.rc_dropframe_thresh = 0;
        cfg.rc_resize_mode = 0;
        cfg.rc_superres_mode = sys::AOM_SUPERRES_NONE;
        cfg.rc_end_usage = sys::AOM_Q;
        cfg.rc_min_quantizer = 32;
        cfg.rc_max_quantizer = 32;
        cfg.kf_mode = sys::AOM_KF_DISABLED;
        // kf_min_dist / kf_max_dist keep their defaults: with both 0, libaom 3.6 crashed
        // (SIGSEGV inside aom_codec_encode) on this crate's unit tests' first encodes. Not
        // isolated: a minimal C program with these settings on a flat picture ran fine.
        // SAFETY: an all-zero context is the "uninitialised" state init expects.
        let mut ctx: Box<sys::aom_codec_ctx_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: ctx and cfg are valid, the interface pointer static, and the ABI version the
        // one of the headers the declarations were read from.
        let res = unsafe {
            sys::aom_codec_enc_init_ver(&mut *ctx, iface, &cfg, 0, sys::AOM_ENCODER_ABI_VERSION)
        };
        if res != sys::AOM_CODEC_OK {
            return Err(aom_error("aom_codec_enc_init", &ctx, res));
        }
        let mut enc = EncoderContext { ctx, cfg, pts: 0 };
        use sys::ctrl;
        for (id, value) in [
            (ctrl::AOME_SET_CPUUSED, settings.cpu_used),
            (ctrl::AV1E_SET_ENABLE_ORDER_HINT, 0),
            (ctrl::AV1E_SET_ENABLE_REF_FRAME_MVS, 0),
            (ctrl::AV1E_SET_ALLOW_REF_FRAME_MVS, 0),
            (ctrl::AV1E_SET_AQ_MODE, 0),
            (ctrl::AV1E_SET_DELTAQ_MODE, 0),
            (ctrl::AV1E_SET_ENABLE_TPL_MODEL, 0),
            (ctrl::AV1E_SET_ENABLE_GLOBAL_MOTION, 0),
            (ctrl::AV1E_SET_ENABLE_RESTORATION, 0),
        ] {
            enc.control_int(id, value)?;
        }
        Ok(enc)
    }

    fn control_int(&mut self, id: c_int, value: c_int) -> Result<(), CodecError> {
        // SAFETY: every id passed here is an integer-valued AV1 encoder control, so libaom
        // reads exactly one `int` from the variadic arguments.
        let res = unsafe { sys::aom_codec_control(&mut *self.ctx, id, value) };
        check_ctx("aom_codec_control", &self.ctx, res)
    }

    /// Fixes the quantizer (libaom's 0..=63 scale) for the next encodes.
    pub fn set_quantizer(&mut self, q: u32) -> Result<(), CodecError> {
        if self.cfg.rc_min_quantizer == q && self.cfg.rc_max_quantizer == q {
            return Ok(());
        }
        self.cfg.rc_min_quantizer = q;
        self.cfg.rc_max_quantizer = q;
        // SAFETY: ctx is an initialised encoder and cfg a complete config for it.
        let res = unsafe { sys::aom_codec_enc_config_set(&mut *self.ctx, &self.cfg) };
        check_ctx("aom_codec_enc_config_set", &self.ctx, res)
    }

    /// Encodes one picture: a keyframe, or an inter frame from slot 0 into slot 0 alone.
    pub fn encode(&mut self, image: &Image, keyframe: bool) -> Result<EncodedBytes, CodecError> {
        if (image.width(), image.height()) != (self.cfg.g_w, self.cfg.g_h) {
            return Err(CodecError::InvalidInput(format!(
                "{}x{} picture for a {}x{} encoder",
                image.width(),
                image.height(),
                self.cfg.g_w,
                self.cfg.g_h
            )));
        }
        let flags = if keyframe {
            sys::AOM_EFLAG_FORCE_KF
        } else {
            self.reference_slot_zero_only()?;
            sys::AOM_EFLAG_ERROR_RESILIENT
                | sys::AOM_EFLAG_SET_PRIMARY_REF_NONE
                | sys::AOM_EFLAG_NO_REF_FRAME_MVS
        };
        // SAFETY (of the view): libaom only reads the input picture.
        let view = unsafe { image_view(image) };
        self.pts += 1;
        // SAFETY: ctx is an initialised encoder; view points into `image`, which outlives the
        // call and has the configured size; libaom copies the samples before returning.
        let res = unsafe { sys::aom_codec_encode(&mut *self.ctx, &view, self.pts, 1, flags) };
        check_ctx("aom_codec_encode", &self.ctx, res)?;
        let out = self.collect_packets();
        if out.data.is_empty() {
            return Err(CodecError::Aom {
                call: "aom_codec_get_cx_data",
                message: "encoder produced no frame".into(),
            });
        }
        Ok(out)
    }

    /// The next frame references LAST only, every reference names slot 0, and only slot 0
    /// is refreshed.
    fn reference_slot_zero_only(&mut self) -> Result<(), CodecError> {
        let mut config = sys::aom_svc_ref_frame_config_t::default();
        config.reference[0] = 1;
        config.refresh[STATE_SLOT as usize] = 1;
        // SAFETY: AV1E_SET_SVC_REF_FRAME_CONFIG takes an `aom_svc_ref_frame_config_t *`
        // (layout pinned by sys's tests), read during the call only.
        let res = unsafe {
            sys::aom_codec_control(
                &mut *self.ctx,
                sys::ctrl::AV1E_SET_SVC_REF_FRAME_CONFIG,
                &mut config as *mut sys::aom_svc_ref_frame_config_t,
            )
        };
        check_ctx("AV1E_SET_SVC_REF_FRAME_CONFIG", &self.ctx, res)
    }

    fn collect_packets(&mut self) -> EncodedBytes {
        let mut out = EncodedBytes {
            data: Vec::new(),
            keyframe: false,
        };
        let mut iter: *const std::os::raw::c_void = ptr::null();
        loop {
            // SAFETY: ctx is an initialised encoder and iter the iterator it hands out.
            let pkt = unsafe { sys::aom_codec_get_cx_data(&mut *self.ctx, &mut iter) };
            if pkt.is_null() {
                break;
            }
            // SAFETY: a non-null packet is valid until the next call into the context.
            let pkt = unsafe { &*pkt };
            if pkt.kind != sys::AOM_CODEC_CX_FRAME_PKT {
                continue;
            }
            // SAFETY: for frame packets the `frame` member of the union is the active one.
            let frame = unsafe { pkt.data.frame };
            if frame.sz > 0 && !frame.buf.is_null() {
                // SAFETY: buf holds sz bytes, owned by libaom until the next call.
                out.data.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(frame.buf as *const u8, frame.sz)
                });
            }
            out.keyframe |= frame.flags & sys::AOM_FRAME_IS_KEY != 0;
        }
        out
    }

    /// The quantizer (0..=63 scale) libaom coded the last frame with.
    pub fn last_quantizer(&mut self) -> Result<u32, CodecError> {
        let mut q: c_int = -1;
        // SAFETY: AOME_GET_LAST_QUANTIZER_64 takes an `int *` and writes one int through it.
        let res = unsafe {
            sys::aom_codec_control(
                &mut *self.ctx,
                sys::ctrl::AOME_GET_LAST_QUANTIZER_64,
                &mut q as *mut c_int,
            )
        };
        check_ctx("AOME_GET_LAST_QUANTIZER_64", &self.ctx, res)?;
        u32::try_from(q)
            .ok()
            .filter(|&q| q <= 63)
            .ok_or_else(|| CodecError::Aom {
                call: "AOME_GET_LAST_QUANTIZER_64",
                message: format!("quantizer {q} out of range"),
            })
    }
}

/// The state is slot 0: the reconstruction after an encode.
impl StateSlot for EncoderContext {
    fn set_state_reference(&mut self, reference: &Image) -> Result<(), CodecError> {
        set_reference(&mut self.ctx, reference)
    }

    fn copy_state_reference(&mut self, out: &mut Image) -> Result<(), CodecError> {
        copy_reference(&mut self.ctx, out)
    }
}

impl Drop for EncoderContext {
    fn drop(&mut self) {
        // SAFETY: ctx was initialised by aom_codec_enc_init and is destroyed exactly once.
        unsafe { sys::aom_codec_destroy(&mut *self.ctx) };
    }
}

/// An owned libaom AV1 decoder context.
pub struct DecoderContext {
    ctx: Box<sys::aom_codec_ctx_t>,
}

// SAFETY: as for EncoderContext: no thread affinity, `&mut self` only, one thread.
unsafe impl Send for DecoderContext {}

impl DecoderContext {
    /// Opens a single-threaded 8-bit decoder.
    pub fn new() -> Result<Self, CodecError> {
        // SAFETY: an all-zero context is the "uninitialised" state init expects.
        let mut ctx: Box<sys::aom_codec_ctx_t> = Box::new(unsafe { std::mem::zeroed() });
        // allow_lowbitdepth: 8-bit buffers, the format the encoder's references have (else
        // the decoder keeps 16-bit samples and its references cannot be exchanged).
        let cfg = sys::aom_codec_dec_cfg_t {
            threads: 1,
            w: 0,
            h: 0,
            allow_lowbitdepth: 1,
        };
        // SAFETY: ctx and cfg are valid; the interface pointer is static; the ABI version is
        // the headers'.
        let res = unsafe {
            sys::aom_codec_dec_init_ver(
                &mut *ctx,
                sys::aom_codec_av1_dx(),
                &cfg,
                0,
                sys::AOM_DECODER_ABI_VERSION,
            )
        };
        if res != sys::AOM_CODEC_OK {
            return Err(aom_error("aom_codec_dec_init", &ctx, res));
        }
        Ok(DecoderContext { ctx })
    }

    /// Decodes one temporal unit and copies the shown picture's visible area into `out`.
    pub fn decode(&mut self, data: &[u8], out: &mut Image) -> Result<(), CodecError> {
        if data.is_empty() || data.len() > MAX_FRAME_BYTES {
            return Err(CodecError::CorruptFrame(format!(
                "{} bytes of AV1 data",
                data.len()
            )));
        }
        // SAFETY: ctx is an initialised decoder; data is a live slice; libaom does not keep
        // the pointer after returning.
        let res = unsafe {
            sys::aom_codec_decode(&mut *self.ctx, data.as_ptr(), data.len(), ptr::null_mut())
        };
        check_ctx("aom_codec_decode", &self.ctx, res)?;
        let mut iter: *const std::os::raw::c_void = ptr::null();
        // SAFETY: ctx is an initialised decoder and iter its iterator.
        let img = unsafe { sys::aom_codec_get_frame(&mut *self.ctx, &mut iter) };
        if img.is_null() {
            return Err(CodecError::CorruptFrame("decoder showed no picture".into()));
        }
        // SAFETY: a non-null image stays valid until the next call into this context; the
        // picture is copied out here, before any AV1_SET_REFERENCE could overwrite it.
        let img = unsafe { &*img };
        copy_out_visible(img, out)
    }

    /// The base quantizer index (0..=255) of the last frame decoded, as its header says.
    #[cfg(test)]
    pub fn last_qindex(&mut self) -> Result<u32, CodecError> {
        let mut q: c_int = -1;
        // SAFETY: AOMD_GET_LAST_QUANTIZER takes an `int *` and writes one int through it.
        let res = unsafe {
            sys::aom_codec_control(
                &mut *self.ctx,
                sys::ctrl::AOMD_GET_LAST_QUANTIZER,
                &mut q as *mut c_int,
            )
        };
        check_ctx("AOMD_GET_LAST_QUANTIZER", &self.ctx, res)?;
        u32::try_from(q).map_err(|_| CodecError::CorruptFrame(format!("qindex {q}")))
    }
}

/// The state is slot 0. Setting it needs a keyframe of its size decoded first (libaom
/// allocates its buffers then).
impl StateSlot for DecoderContext {
    fn set_state_reference(&mut self, reference: &Image) -> Result<(), CodecError> {
        set_reference(&mut self.ctx, reference)
    }

    fn copy_state_reference(&mut self, out: &mut Image) -> Result<(), CodecError> {
        copy_reference(&mut self.ctx, out)
    }
}

impl Drop for DecoderContext {
    fn drop(&mut self) {
        // SAFETY: ctx was initialised by aom_codec_dec_init and is destroyed exactly once.
        unsafe { sys::aom_codec_destroy(&mut *self.ctx) };
    }
}

/// Copies the visible area of a decoded 8-bit I420 picture into `out`.
fn copy_out_visible(img: &sys::aom_image_t, out: &mut Image) -> Result<(), CodecError> {
    if img.fmt != sys::AOM_IMG_FMT_I420
        || img.bit_depth != 8
        || img.monochrome != 0
        || (img.d_w, img.d_h) != (out.width(), out.height())
    {
        return Err(CodecError::CorruptFrame(format!(
            "decoded a {}x{} picture of format {:#x}, expected {}x{} 8-bit I420",
            img.d_w,
            img.d_h,
            img.fmt,
            out.width(),
            out.height()
        )));
    }
    for id in PlaneId::ALL {
        let i = id as usize;
        let src_stride = img.stride[i] as usize;
        let plane = out.plane_mut(id);
        for y in 0..plane.height() {
            let dst = plane.row_mut(y);
            // SAFETY: libaom's 8-bit I420 picture has at least d_h (d_h/2 for chroma) rows of
            // `stride` bytes, each with at least d_w (d_w/2) samples, and dst has that width.
            let src =
                unsafe { std::slice::from_raw_parts(img.planes[i].add(y * src_stride), dst.len()) };
            dst.copy_from_slice(src);
        }
    }
    out.extend_edges();
    Ok(())
}

fn set_reference(ctx: &mut sys::aom_codec_ctx_t, reference: &Image) -> Result<(), CodecError> {
    let mut rf = sys::av1_ref_frame_t {
        idx: STATE_SLOT,
        use_external_ref: 0,
        // SAFETY (of the view): libaom only reads from it for AV1_SET_REFERENCE.
        img: unsafe { image_view(reference) },
    };
    // SAFETY: AV1_SET_REFERENCE takes an `av1_ref_frame_t *`; rf and the planes it points to
    // live for the whole call, and hold the 8-aligned area libaom's copy reads.
    let res = unsafe {
        sys::aom_codec_control(
            ctx,
            sys::ctrl::AV1_SET_REFERENCE,
            &mut rf as *mut sys::av1_ref_frame_t,
        )
    };
    check_ctx("AV1_SET_REFERENCE", ctx, res)
}

fn copy_reference(ctx: &mut sys::aom_codec_ctx_t, out: &mut Image) -> Result<(), CodecError> {
    let mut rf = sys::av1_ref_frame_t {
        idx: STATE_SLOT,
        use_external_ref: 0,
        // SAFETY (of the view): `out` is borrowed mutably, so writing through it is sound.
        img: unsafe { image_view(out) },
    };
    // SAFETY: AV1_COPY_REFERENCE takes an `av1_ref_frame_t *` and writes the 8-aligned area
    // (inside `out`'s 16-aligned storage) with a zero border.
    let res = unsafe {
        sys::aom_codec_control(
            ctx,
            sys::ctrl::AV1_COPY_REFERENCE,
            &mut rf as *mut sys::av1_ref_frame_t,
        )
    };
    check_ctx("AV1_COPY_REFERENCE", ctx, res)
}

/// Rounds up to a multiple of 8: libaom's frame buffer size for a visible size.
const fn align8(n: u32) -> u32 {
    (n + 7) & !7
}

/// Describes `image`'s storage as a libaom picture: visible size `d_w` x `d_h`, stored size
/// (what reference copies touch) rounded up to 8.
///
/// # Safety
/// The result holds raw pointers into `image`: it must not outlive it, and libaom may write
/// through it only when the caller holds `image` mutably.
unsafe fn image_view(image: &Image) -> sys::aom_image_t {
    let (aw, ah) = image.aligned_size();
    let (w8, h8) = (align8(image.width()), align8(image.height()));
    debug_assert!(w8 <= aw && h8 <= ah);
    // SAFETY: aom_image_t is plain data (integers and raw pointers); zero is valid for all,
    // and null metadata / frame-buffer pointers mean "none".
    let mut img: sys::aom_image_t = unsafe { std::mem::zeroed() };
    img.fmt = sys::AOM_IMG_FMT_I420;
    img.cp = sys::AOM_CICP_UNSPECIFIED;
    img.tc = sys::AOM_CICP_UNSPECIFIED;
    img.mc = sys::AOM_CICP_UNSPECIFIED;
    img.bit_depth = 8;
    img.w = w8;
    img.h = h8;
    img.d_w = image.width();
    img.d_h = image.height();
    img.r_w = image.width();
    img.r_h = image.height();
    img.x_chroma_shift = 1;
    img.y_chroma_shift = 1;
    img.bps = 12;
    for id in PlaneId::ALL {
        let plane = image.plane(id);
        img.planes[id as usize] = plane.data().as_ptr() as *mut u8;
        img.stride[id as usize] = plane.stride() as c_int;
    }
    img
}

fn check(call: &'static str, res: sys::aom_codec_err_t) -> Result<(), CodecError> {
    if res == sys::AOM_CODEC_OK {
        Ok(())
    } else {
        // SAFETY: aom_codec_err_to_string returns a static NUL-terminated string.
        let text = unsafe { CStr::from_ptr(sys::aom_codec_err_to_string(res)) };
        Err(CodecError::Aom {
            call,
            message: text.to_string_lossy().into_owned(),
        })
    }
}

fn check_ctx(
    call: &'static str,
    ctx: &sys::aom_codec_ctx_t,
    res: sys::aom_codec_err_t,
) -> Result<(), CodecError> {
    if res == sys::AOM_CODEC_OK {
        Ok(())
    } else {
        Err(aom_error(call, ctx, res))
    }
}

/// libaom's error text for a failed call, with its detail string when it has one.
fn aom_error(
    call: &'static str,
    ctx: &sys::aom_codec_ctx_t,
    res: sys::aom_codec_err_t,
) -> CodecError {
    // SAFETY: aom_codec_error accepts any context (even a failed one) and returns a static
    // NUL-terminated string; err_detail is null or a NUL-terminated string the context owns
    // until the next call into it.
    let message = unsafe {
        let text = CStr::from_ptr(sys::aom_codec_error(ctx)).to_string_lossy();
        let detail = ctx.err_detail;
        if detail.is_null() {
            format!("{text} (error {res})")
        } else {
            format!("{text}: {}", CStr::from_ptr(detail).to_string_lossy())
        }
    };
    CodecError::Aom { call, message }
}
