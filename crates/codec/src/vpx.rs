//! Thin owners of libvpx's VP8 encoder and decoder contexts (with `av1::context` and `av1::sys`
//! for libaom, the only `unsafe` in the project).
//!
//! Settings follow DESIGN.md's measured recipe for an explicit-state stream: error resilient
//! (no probability carry-over), LAST-only references, a fixed quantizer per encode, no
//! automatic keyframes, frame dropping, lag, noise reduction or cyclic refresh, one thread.
//!
//! Reference pictures cross the boundary as [`Image`]s whose 16-aligned storage matches
//! libvpx's internal frame buffers exactly: libvpx copies `d_w` x `d_h` samples, which must be
//! the aligned size (a visible size that is not a multiple of 16 overruns the copy), and the
//! border it extends is `(stride - w) / 2`, which is zero for our tightly strided planes.

use std::ffi::CStr;
use std::os::raw::{c_int, c_long, c_uint, c_ulong};
use std::ptr;

use vpx_sys as sys;

use crate::error::CodecError;
use crate::image::{Image, PlaneId};
use crate::state_coding::StateSlot;

/// Largest compressed frame handed to libvpx (its length argument is a C `unsigned int`).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// The bit rate (kb/s) and frame rate libvpx's rate control is told about.
///
/// The quantizer is fixed per encode, but libvpx's CBR rate control still runs, and one of its
/// paths ignores the fixed range: after 150 inter frames it derives a floor for the quantizer
/// from the average quantizer of *every* inter frame the context coded before, and never clips
/// that floor to `rc_max_quantizer` (libvpx 1.12 `encode_frame_to_data_rate`:
/// `active_best_quality = inter_minq[active_worst_quality]`, the latter from `ni_av_qi`). After
/// a fade coded at index 127, a reused context coded "quality 3" at index 22-24 for the rest of
/// its life. The floor is reset to `rc_min_quantizer` only while the rate-control buffer is
/// full. So the buffer starts full, and the budget per frame is more than any VP8 frame can
/// take: libvpx caps the rate at 24 bits per pixel per frame (twice an uncompressed I420
/// picture), and 1 Gb/s at 10 frames/s = 100 Mb per frame caps it again only above 4.2
/// megapixels, still more than such a picture uncompressed. The buffer never drains, and the
/// coded index is the one asked for whatever the context encoded before. (A larger budget
/// per frame would overflow libvpx's `int` keyframe targets, about 5.4 times the budget.)
const RC_TARGET_KBPS: u32 = 1_000_000;
/// See [`RC_TARGET_KBPS`].
const RC_FRAME_RATE: c_int = 10;

/// Encoder settings that are fixed for the life of a context.
#[derive(Clone, Copy, Debug)]
pub struct EncoderSettings {
    /// Visible width and height of every frame.
    pub width: u32,
    /// Visible height.
    pub height: u32,
    /// libvpx's `cpu-used` speed. Negative values fix the speed (positive ones let libvpx
    /// adapt it to measured encode time, which would make output depend on machine load).
    pub cpu_used: i32,
    /// libvpx's static threshold: macroblocks whose difference from the reference is below
    /// it are coded as skipped without a mode search (0 = off). Affects speed and size only.
    pub static_threshold: u32,
}

/// What one call to [`EncoderContext::encode`] produced.
pub struct EncodedBytes {
    /// The VP8 frame as libvpx wrote it.
    pub data: Vec<u8>,
    /// libvpx flagged it as a keyframe.
    pub keyframe: bool,
}

/// An owned libvpx VP8 encoder context.
pub struct EncoderContext {
    // Boxed so the context's address never changes while libvpx holds it.
    ctx: Box<sys::vpx_codec_ctx_t>,
    cfg: sys::vpx_codec_enc_cfg_t,
    pts: i64,
}

// SAFETY: a libvpx context has no thread affinity; it is used through `&mut self` only, so
// never from two threads at once, and with `g_threads = 1` libvpx starts no threads of its own.
unsafe impl Send for EncoderContext {}

impl EncoderContext {
    /// Opens an encoder for frames of the given visible size.
    pub fn new(settings: EncoderSettings) -> Result<Self, CodecError> {
        let mut cfg = default_vp8_config()?;
        cfg.g_w = settings.width;
        cfg.g_h = settings.height;
        cfg.g_threads = 1;
        // Each frame lasts one tick (see `encode`), so libvpx's rate control sees this rate.
        cfg.g_timebase = sys::vpx_rational {
            num: 1,
            den: RC_FRAME_RATE,
        };
        cfg.g_error_resilient = sys::VPX_ERROR_RESILIENT_DEFAULT;
        cfg.g_lag_in_frames = 0;
        cfg.rc_dropframe_thresh = 0;
        cfg.rc_resize_allowed = 0;
        cfg.rc_end_usage = sys::vpx_rc_mode::VPX_CBR;
        cfg.rc_target_bitrate = RC_TARGET_KBPS;
        // The buffer starts full and, with a budget no frame can exceed, stays full.
        cfg.rc_buf_initial_sz = cfg.rc_buf_sz;
        cfg.rc_buf_optimal_sz = cfg.rc_buf_sz;
        cfg.kf_mode = sys::vpx_kf_mode::VPX_KF_DISABLED;
        cfg.rc_min_quantizer = 32;
        cfg.rc_max_quantizer = 32;

        let ctx = open_vp8_encoder(&cfg)?;
        let mut enc = EncoderContext { ctx, cfg, pts: 0 };
        enc.control(
            sys::vp8e_enc_control_id::VP8E_SET_CPUUSED as c_int,
            settings.cpu_used,
        )?;
        enc.control(
            sys::vp8e_enc_control_id::VP8E_SET_NOISE_SENSITIVITY as c_int,
            0,
        )?;
        enc.control(
            sys::vp8e_enc_control_id::VP8E_SET_STATIC_THRESHOLD as c_int,
            settings.static_threshold as c_int,
        )?;
        enc.control(
            sys::vp8e_enc_control_id::VP8E_SET_TOKEN_PARTITIONS as c_int,
            0,
        )?;
        enc.control(
            sys::vp8e_enc_control_id::VP8E_SET_ENABLEAUTOALTREF as c_int,
            0,
        )?;
        enc.disable_cyclic_refresh()?;
        Ok(enc)
    }

    fn control(&mut self, id: c_int, value: c_int) -> Result<(), CodecError> {
        // SAFETY: every id passed here is an integer-valued VP8 encoder control, so libvpx
        // reads exactly one `int` from the variadic arguments.
        let res = unsafe { sys::vpx_codec_control_(&mut *self.ctx, id, value) };
        check_ctx("vpx_codec_control", &mut self.ctx, res)
    }

    /// External rate control turns off cyclic refresh (hidden segmentation state).
    /// libvpx resets it on every config change, so this is re-applied after each one.
    fn disable_cyclic_refresh(&mut self) -> Result<(), CodecError> {
        self.control(
            sys::vp8e_enc_control_id::VP8E_SET_RTC_EXTERNAL_RATECTRL as c_int,
            1,
        )
    }

    /// Fixes the quantizer (libvpx's 0..=63 scale) for the next encodes.
    pub fn set_quantizer(&mut self, q: u32) -> Result<(), CodecError> {
        if self.cfg.rc_min_quantizer == q && self.cfg.rc_max_quantizer == q {
            return Ok(());
        }
        self.cfg.rc_min_quantizer = q;
        self.cfg.rc_max_quantizer = q;
        // SAFETY: ctx is an initialised encoder and cfg a complete config for it.
        let res = unsafe { sys::vpx_codec_enc_config_set(&mut *self.ctx, &self.cfg) };
        check_ctx("vpx_codec_enc_config_set", &mut self.ctx, res)?;
        self.disable_cyclic_refresh()
    }

    /// Encodes one picture. Inter frames reference LAST only and update LAST only.
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
            sys::VPX_EFLAG_FORCE_KF
        } else {
            sys::VP8_EFLAG_NO_REF_GF
                | sys::VP8_EFLAG_NO_REF_ARF
                | sys::VP8_EFLAG_NO_UPD_GF
                | sys::VP8_EFLAG_NO_UPD_ARF
        };
        // The encoder reads `d_w` x `d_h` (the configured visible size) from the picture.
        // SAFETY (of the pointer casts inside): the view is only read by vpx_codec_encode.
        let view = unsafe { image_view(image, image.width(), image.height()) };
        self.pts += 1;
        // SAFETY: ctx is an initialised encoder; view points into `image`, which outlives
        // the call and matches the configured size; libvpx copies the samples before return.
        let res = unsafe {
            sys::vpx_codec_encode(
                &mut *self.ctx,
                &view,
                self.pts,
                1,
                flags as c_long,
                c_ulong::from(sys::VPX_DL_REALTIME),
            )
        };
        check_ctx("vpx_codec_encode", &mut self.ctx, res)?;
        self.collect_packets()
    }

    fn collect_packets(&mut self) -> Result<EncodedBytes, CodecError> {
        let out = collect_frame_packets(&mut self.ctx);
        if out.data.is_empty() {
            return Err(CodecError::Vpx {
                call: "vpx_codec_get_cx_data",
                message: "encoder produced no frame".into(),
            });
        }
        Ok(out)
    }

    /// The quantizer index (0..=127) libvpx coded the last frame with.
    pub fn last_quantizer(&mut self) -> Result<u8, CodecError> {
        let mut q: c_int = -1;
        // SAFETY: VP8E_GET_LAST_QUANTIZER takes an `int *` and writes one int through it.
        let res = unsafe {
            sys::vpx_codec_control_(
                &mut *self.ctx,
                sys::vp8e_enc_control_id::VP8E_GET_LAST_QUANTIZER as c_int,
                &mut q as *mut c_int,
            )
        };
        check_ctx("VP8E_GET_LAST_QUANTIZER", &mut self.ctx, res)?;
        u8::try_from(q)
            .ok()
            .filter(|&q| q <= 127)
            .ok_or_else(|| CodecError::Vpx {
                call: "VP8E_GET_LAST_QUANTIZER",
                message: format!("quantizer index {q} out of range"),
            })
    }
}

/// The state is the LAST reference: the encoder's reconstruction after an encode.
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
        // SAFETY: ctx was initialised by vpx_codec_enc_init and is destroyed exactly once.
        unsafe { sys::vpx_codec_destroy(&mut *self.ctx) };
    }
}

/// An owned libvpx VP8 decoder context.
pub struct DecoderContext {
    ctx: Box<sys::vpx_codec_ctx_t>,
}

// SAFETY: as for EncoderContext: no thread affinity, used through `&mut self` only, and the
// decoder is opened with one thread.
unsafe impl Send for DecoderContext {}

impl DecoderContext {
    /// Opens a single-threaded decoder without post-processing.
    pub fn new() -> Result<Self, CodecError> {
        // SAFETY: an all-zero context is the "uninitialised" state init expects.
        let mut ctx: Box<sys::vpx_codec_ctx_t> = Box::new(unsafe { std::mem::zeroed() });
        let cfg = sys::vpx_codec_dec_cfg {
            threads: 1,
            w: 0,
            h: 0,
        };
        // SAFETY: ctx and cfg are valid; the interface pointer is static; the ABI version is
        // the one the bindings were generated for.
        let res = unsafe {
            sys::vpx_codec_dec_init_ver(
                &mut *ctx,
                sys::vpx_codec_vp8_dx(),
                &cfg,
                0,
                sys::VPX_DECODER_ABI_VERSION as c_int,
            )
        };
        if res != sys::vpx_codec_err_t::VPX_CODEC_OK {
            return Err(vpx_error("vpx_codec_dec_init", &mut ctx, res));
        }
        Ok(DecoderContext { ctx })
    }

    /// Decodes one VP8 frame and copies the shown picture's visible area into `out`.
    ///
    /// `out` must have the frame's visible size; a frame of another size is an error.
    pub fn decode(&mut self, data: &[u8], out: &mut Image) -> Result<(), CodecError> {
        if data.is_empty() || data.len() > MAX_FRAME_BYTES {
            return Err(CodecError::CorruptFrame(format!(
                "{} bytes of VP8 data",
                data.len()
            )));
        }
        // SAFETY: ctx is an initialised decoder; data is a live slice whose length fits a
        // c_uint (checked above); libvpx does not keep the pointer after returning.
        let res = unsafe {
            sys::vpx_codec_decode(
                &mut *self.ctx,
                data.as_ptr(),
                data.len() as c_uint,
                ptr::null_mut(),
                0,
            )
        };
        check_ctx("vpx_codec_decode", &mut self.ctx, res)?;
        let mut iter: sys::vpx_codec_iter_t = ptr::null();
        // SAFETY: ctx is an initialised decoder and iter its iterator.
        let img = unsafe { sys::vpx_codec_get_frame(&mut *self.ctx, &mut iter) };
        if img.is_null() {
            return Err(CodecError::CorruptFrame("decoder showed no picture".into()));
        }
        // SAFETY: a non-null image stays valid until the next decode call on this context.
        let img = unsafe { &*img };
        copy_out_visible(img, out)
    }

    /// The quantizer index (0..=127) of the last frame decoded, as its header says.
    #[cfg(test)]
    pub fn last_quantizer(&mut self) -> Result<u8, CodecError> {
        let mut q: c_int = -1;
        // SAFETY: VPXD_GET_LAST_QUANTIZER takes an `int *` and writes one int through it.
        let res = unsafe {
            sys::vpx_codec_control_(
                &mut *self.ctx,
                sys::vp8_dec_control_id::VPXD_GET_LAST_QUANTIZER as c_int,
                &mut q as *mut c_int,
            )
        };
        check_ctx("VPXD_GET_LAST_QUANTIZER", &mut self.ctx, res)?;
        u8::try_from(q).map_err(|_| CodecError::CorruptFrame(format!("quantizer index {q}")))
    }
}

/// The state is the LAST reference. Setting it needs a keyframe of its size decoded first
/// (libvpx allocates its buffers then).
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
        // SAFETY: ctx was initialised by vpx_codec_dec_init and is destroyed exactly once.
        unsafe { sys::vpx_codec_destroy(&mut *self.ctx) };
    }
}

/// libvpx's default VP8 encoder configuration, for the caller to adjust.
fn default_vp8_config() -> Result<sys::vpx_codec_enc_cfg_t, CodecError> {
    // SAFETY: vpx_codec_vp8_cx returns a pointer to a static interface description.
    let iface = unsafe { sys::vpx_codec_vp8_cx() };
    let mut cfg = std::mem::MaybeUninit::<sys::vpx_codec_enc_cfg_t>::uninit();
    // SAFETY: iface is valid and cfg points to writable storage for one config, which
    // vpx_codec_enc_config_default fills completely on success.
    check("vpx_codec_enc_config_default", unsafe {
        sys::vpx_codec_enc_config_default(iface, cfg.as_mut_ptr(), 0)
    })?;
    // SAFETY: initialised by the successful call above.
    Ok(unsafe { cfg.assume_init() })
}

/// Opens a VP8 encoder context with `cfg`, boxed so its address never changes.
fn open_vp8_encoder(
    cfg: &sys::vpx_codec_enc_cfg_t,
) -> Result<Box<sys::vpx_codec_ctx_t>, CodecError> {
    // SAFETY: an all-zero context is the documented "uninitialised" state init expects.
    let mut ctx: Box<sys::vpx_codec_ctx_t> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: ctx and cfg are valid, the interface pointer is static, and the ABI version is
    // the one the bindings were generated for.
    let res = unsafe {
        sys::vpx_codec_enc_init_ver(
            &mut *ctx,
            sys::vpx_codec_vp8_cx(),
            cfg,
            0,
            sys::VPX_ENCODER_ABI_VERSION as c_int,
        )
    };
    if res != sys::vpx_codec_err_t::VPX_CODEC_OK {
        // libvpx leaves nothing to free when init fails.
        return Err(vpx_error("vpx_codec_enc_init", &mut ctx, res));
    }
    Ok(ctx)
}

/// Gathers the frame packets an encode produced (empty if the encoder dropped the frame).
fn collect_frame_packets(ctx: &mut sys::vpx_codec_ctx_t) -> EncodedBytes {
    let mut out = EncodedBytes {
        data: Vec::new(),
        keyframe: false,
    };
    let mut iter: sys::vpx_codec_iter_t = ptr::null();
    loop {
        // SAFETY: ctx is an initialised encoder and iter the iterator it hands out.
        let pkt = unsafe { sys::vpx_codec_get_cx_data(ctx, &mut iter) };
        if pkt.is_null() {
            break;
        }
        // SAFETY: a non-null packet is valid until the next call into the context.
        let pkt = unsafe { &*pkt };
        if pkt.kind != sys::vpx_codec_cx_pkt_kind::VPX_CODEC_CX_FRAME_PKT {
            continue;
        }
        // SAFETY: for frame packets the `frame` member of the union is the active one, and
        // buf/sz describe a buffer libvpx owns until the next call.
        let (buf, sz, flags) = unsafe {
            let f = &pkt.data.frame;
            (f.buf as *const u8, f.sz as usize, f.flags)
        };
        if sz > 0 {
            // SAFETY: buf is non-null and holds sz bytes whenever sz > 0 (see above).
            out.data
                .extend_from_slice(unsafe { std::slice::from_raw_parts(buf, sz) });
        }
        out.keyframe |= flags & sys::VPX_FRAME_IS_KEY != 0;
    }
    out
}

/// Copies the visible area of a decoded libvpx picture into `out`.
fn copy_out_visible(img: &sys::vpx_image_t, out: &mut Image) -> Result<(), CodecError> {
    if img.fmt != sys::vpx_img_fmt::VPX_IMG_FMT_I420
        || (img.d_w, img.d_h) != (out.width(), out.height())
    {
        return Err(CodecError::CorruptFrame(format!(
            "decoded {}x{} picture, expected {}x{}",
            img.d_w,
            img.d_h,
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
            // SAFETY: libvpx's I420 picture has at least d_h (d_h/2 for chroma) rows of
            // `stride` bytes, each with at least d_w (d_w/2) samples, and dst has that width.
            let src =
                unsafe { std::slice::from_raw_parts(img.planes[i].add(y * src_stride), dst.len()) };
            dst.copy_from_slice(src);
        }
    }
    out.extend_edges();
    Ok(())
}

fn set_reference(ctx: &mut sys::vpx_codec_ctx_t, reference: &Image) -> Result<(), CodecError> {
    let (w, h) = reference.aligned_size();
    let mut rf = sys::vpx_ref_frame_t {
        frame_type: sys::vpx_ref_frame_type::VP8_LAST_FRAME,
        // SAFETY (of the view): libvpx only reads from it for VP8_SET_REFERENCE.
        img: unsafe { image_view(reference, w, h) },
    };
    // SAFETY: VP8_SET_REFERENCE takes a `vpx_ref_frame_t *`; rf and the planes it points to
    // live for the whole call, and their aligned size is what libvpx's copy reads.
    let res = unsafe {
        sys::vpx_codec_control_(
            ctx,
            sys::vp8_com_control_id::VP8_SET_REFERENCE as c_int,
            &mut rf as *mut sys::vpx_ref_frame_t,
        )
    };
    check_ctx("VP8_SET_REFERENCE", ctx, res)
}

fn copy_reference(ctx: &mut sys::vpx_codec_ctx_t, out: &mut Image) -> Result<(), CodecError> {
    let (w, h) = out.aligned_size();
    let mut rf = sys::vpx_ref_frame_t {
        frame_type: sys::vpx_ref_frame_type::VP8_LAST_FRAME,
        // SAFETY (of the view): `out` is borrowed mutably, so writing through it is sound.
        img: unsafe { image_view(out, w, h) },
    };
    // SAFETY: VP8_COPY_REFERENCE takes a `vpx_ref_frame_t *` and writes d_w x d_h samples
    // (the aligned size, exactly the storage of `out`) with a zero border.
    let res = unsafe {
        sys::vpx_codec_control_(
            ctx,
            sys::vp8_com_control_id::VP8_COPY_REFERENCE as c_int,
            &mut rf as *mut sys::vpx_ref_frame_t,
        )
    };
    check_ctx("VP8_COPY_REFERENCE", ctx, res)
}

/// Describes `image`'s storage as a libvpx picture of `d_w` x `d_h` samples.
///
/// # Safety
/// The result holds raw pointers into `image`: it must not outlive it, and libvpx may write
/// through it only when the caller holds `image` mutably.
unsafe fn image_view(image: &Image, d_w: u32, d_h: u32) -> sys::vpx_image_t {
    let (aw, ah) = image.aligned_size();
    debug_assert!(d_w <= aw && d_h <= ah);
    // SAFETY: vpx_image_t is plain data (integers and raw pointers); zero is valid for all.
    let mut img: sys::vpx_image_t = unsafe { std::mem::zeroed() };
    img.fmt = sys::vpx_img_fmt::VPX_IMG_FMT_I420;
    img.bit_depth = 8;
    // `w` equal to the Y stride makes libvpx's inferred border (stride - w) / 2 zero.
    img.w = aw;
    img.h = ah;
    img.d_w = d_w;
    img.d_h = d_h;
    img.r_w = d_w;
    img.r_h = d_h;
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

fn check(call: &'static str, res: sys::vpx_codec_err_t) -> Result<(), CodecError> {
    if res == sys::vpx_codec_err_t::VPX_CODEC_OK {
        Ok(())
    } else {
        Err(CodecError::Vpx {
            call,
            message: format!("{res:?}"),
        })
    }
}

fn check_ctx(
    call: &'static str,
    ctx: &mut sys::vpx_codec_ctx_t,
    res: sys::vpx_codec_err_t,
) -> Result<(), CodecError> {
    if res == sys::vpx_codec_err_t::VPX_CODEC_OK {
        Ok(())
    } else {
        Err(vpx_error(call, ctx, res))
    }
}

/// libvpx's error text for a failed call, with its detail string when it has one.
fn vpx_error(
    call: &'static str,
    ctx: &mut sys::vpx_codec_ctx_t,
    res: sys::vpx_codec_err_t,
) -> CodecError {
    // SAFETY: vpx_codec_error accepts any context (even a failed one) and returns a pointer
    // to a static NUL-terminated string; err_detail is either null or a NUL-terminated
    // string owned by the context, alive until the next call into it.
    let message = unsafe {
        let text = CStr::from_ptr(sys::vpx_codec_error(ctx)).to_string_lossy();
        let detail = ctx.err_detail;
        if detail.is_null() {
            format!("{text} ({res:?})")
        } else {
            format!("{text}: {}", CStr::from_ptr(detail).to_string_lossy())
        }
    };
    CodecError::Vpx { call, message }
}

/// Settings of a libvpx VP8 encoder that runs its own rate control (one-pass CBR), the way a
/// WebRTC endpoint drives it. See `crate::cbr` for where each value comes from.
#[derive(Clone, Copy, Debug)]
pub struct RtcSettings {
    /// Visible width of every frame.
    pub width: u32,
    /// Visible height.
    pub height: u32,
    /// libvpx `cpu-used` (negative: fixed speed).
    pub cpu_used: i32,
    /// Initial target bit rate in kb/s.
    pub target_kbps: u32,
    /// `rc_dropframe_thresh`: buffer fullness (percent) below which libvpx drops frames.
    pub dropframe_thresh: u32,
    /// Finest libvpx quantizer (0..=63) rate control may use.
    pub min_quantizer: u32,
    /// Coarsest libvpx quantizer (0..=63) rate control may use.
    pub max_quantizer: u32,
    /// `rc_undershoot_pct`.
    pub undershoot_pct: u32,
    /// `rc_overshoot_pct`.
    pub overshoot_pct: u32,
    /// `rc_buf_initial_sz`, `rc_buf_optimal_sz`, `rc_buf_sz` in milliseconds.
    pub buffer_ms: [u32; 3],
    /// Automatic keyframes at most this many frames apart.
    pub keyframe_max_dist: u32,
    /// `VP8E_SET_MAX_INTRA_BITRATE_PCT`.
    pub max_intra_bitrate_pct: u32,
    /// `VP8E_SET_STATIC_THRESHOLD`.
    pub static_threshold: u32,
    /// The nominal frame rate: every frame is given a duration of one interval at it.
    pub max_fps: u32,
}

/// An owned libvpx VP8 encoder in real-time CBR mode: normal golden/altref use, not error
/// resilient, its own rate control. Its decoder state is hidden in libvpx (not functional).
pub struct RtcEncoderContext {
    ctx: Box<sys::vpx_codec_ctx_t>,
    cfg: sys::vpx_codec_enc_cfg_t,
    last_pts: Option<i64>,
    frame_duration_us: i64,
}

// SAFETY: as for EncoderContext: no thread affinity, `&mut self` only, `g_threads = 1`.
unsafe impl Send for RtcEncoderContext {}

impl RtcEncoderContext {
    /// Opens the encoder.
    pub fn new(s: RtcSettings) -> Result<Self, CodecError> {
        let mut cfg = default_vp8_config()?;
        cfg.g_w = s.width;
        cfg.g_h = s.height;
        cfg.g_threads = 1;
        // Microsecond timestamps: pts and durations are capture times.
        cfg.g_timebase = sys::vpx_rational {
            num: 1,
            den: 1_000_000,
        };
        cfg.g_error_resilient = 0;
        cfg.g_lag_in_frames = 0;
        cfg.g_pass = sys::vpx_enc_pass::VPX_RC_ONE_PASS;
        cfg.rc_dropframe_thresh = s.dropframe_thresh;
        cfg.rc_resize_allowed = 0;
        cfg.rc_end_usage = sys::vpx_rc_mode::VPX_CBR;
        cfg.rc_target_bitrate = s.target_kbps.max(1);
        cfg.rc_min_quantizer = s.min_quantizer;
        cfg.rc_max_quantizer = s.max_quantizer;
        cfg.rc_undershoot_pct = s.undershoot_pct;
        cfg.rc_overshoot_pct = s.overshoot_pct;
        cfg.rc_buf_initial_sz = s.buffer_ms[0];
        cfg.rc_buf_optimal_sz = s.buffer_ms[1];
        cfg.rc_buf_sz = s.buffer_ms[2];
        cfg.kf_mode = sys::vpx_kf_mode::VPX_KF_AUTO;
        cfg.kf_min_dist = 0;
        cfg.kf_max_dist = s.keyframe_max_dist;
        let ctx = open_vp8_encoder(&cfg)?;
        let mut enc = RtcEncoderContext {
            ctx,
            cfg,
            last_pts: None,
            frame_duration_us: (1_000_000 / i64::from(s.max_fps.max(1))).max(1),
        };
        use sys::vp8e_enc_control_id as id;
        for (control, value) in [
            (id::VP8E_SET_CPUUSED, s.cpu_used),
            (id::VP8E_SET_STATIC_THRESHOLD, s.static_threshold as c_int),
            (id::VP8E_SET_NOISE_SENSITIVITY, 0),
            (id::VP8E_SET_TOKEN_PARTITIONS, 0),
            (
                id::VP8E_SET_MAX_INTRA_BITRATE_PCT,
                s.max_intra_bitrate_pct as c_int,
            ),
        ] {
            // SAFETY: each id is an integer-valued VP8 encoder control, so libvpx reads
            // exactly one `int` from the variadic arguments.
            let res = unsafe { sys::vpx_codec_control_(&mut *enc.ctx, control as c_int, value) };
            check_ctx("vpx_codec_control", &mut enc.ctx, res)?;
        }
        Ok(enc)
    }

    /// Changes the rate control's target (kb/s), effective from the next frame.
    pub fn set_target_bitrate(&mut self, kbps: u32) -> Result<(), CodecError> {
        let kbps = kbps.max(1);
        if self.cfg.rc_target_bitrate == kbps {
            return Ok(());
        }
        self.cfg.rc_target_bitrate = kbps;
        // SAFETY: ctx is an initialised encoder and cfg a complete config for it.
        let res = unsafe { sys::vpx_codec_enc_config_set(&mut *self.ctx, &self.cfg) };
        check_ctx("vpx_codec_enc_config_set", &mut self.ctx, res)
    }

    /// Encodes a picture captured at `pts_us` (microseconds, increasing). Returns `None` when
    /// the rate control dropped the frame.
    pub fn encode(
        &mut self,
        image: &Image,
        pts_us: i64,
        force_keyframe: bool,
    ) -> Result<Option<EncodedBytes>, CodecError> {
        if (image.width(), image.height()) != (self.cfg.g_w, self.cfg.g_h) {
            return Err(CodecError::InvalidInput(format!(
                "{}x{} picture for a {}x{} encoder",
                image.width(),
                image.height(),
                self.cfg.g_w,
                self.cfg.g_h
            )));
        }
        // libvpx needs strictly increasing timestamps; its rate control budgets each frame
        // from the time since the previous one: it estimates the frame rate from the gaps
        // between successive `pts + duration` (vp8 `vp8_get_compressed_data`), jumping to the
        // instantaneous rate whenever that gap changes by 10 %. So `duration` must be the
        // same for every frame (libwebrtc passes one nominal interval, 90 kHz / max frame
        // rate); the gaps are then the capture gaps. (Passing the gap since the previous
        // frame instead made the estimate `gap + previous gap - the one before`, wrong by up
        // to 2x whenever pictures are skipped before encoding, and the output was half or
        // twice the target.)
        let pts = match self.last_pts {
            Some(last) => pts_us.max(last + 1),
            None => pts_us,
        };
        let duration = self.frame_duration_us;
        self.last_pts = Some(pts);
        let flags = if force_keyframe {
            sys::VPX_EFLAG_FORCE_KF
        } else {
            0
        };
        // SAFETY (of the pointer casts inside): the view is only read by vpx_codec_encode.
        let view = unsafe { image_view(image, image.width(), image.height()) };
        // SAFETY: ctx is an initialised encoder; view points into `image`, which outlives the
        // call and matches the configured size; libvpx copies the samples before returning.
        let res = unsafe {
            sys::vpx_codec_encode(
                &mut *self.ctx,
                &view,
                pts,
                duration as c_ulong,
                flags as c_long,
                c_ulong::from(sys::VPX_DL_REALTIME),
            )
        };
        check_ctx("vpx_codec_encode", &mut self.ctx, res)?;
        let out = collect_frame_packets(&mut self.ctx);
        Ok((!out.data.is_empty()).then_some(out))
    }

    /// The VP8 quantizer index (0..=127) of the last frame coded.
    pub fn last_quantizer(&mut self) -> Result<u8, CodecError> {
        let mut q: c_int = 0;
        // SAFETY: VP8E_GET_LAST_QUANTIZER takes an `int *`, which points to a live local.
        let res = unsafe {
            sys::vpx_codec_control_(
                &mut *self.ctx,
                sys::vp8e_enc_control_id::VP8E_GET_LAST_QUANTIZER as c_int,
                &mut q as *mut c_int,
            )
        };
        check_ctx("VP8E_GET_LAST_QUANTIZER", &mut self.ctx, res)?;
        Ok(q.clamp(0, 127) as u8)
    }
}

impl Drop for RtcEncoderContext {
    fn drop(&mut self) {
        // SAFETY: ctx was initialised by vpx_codec_enc_init and is destroyed exactly once.
        unsafe { sys::vpx_codec_destroy(&mut *self.ctx) };
    }
}
