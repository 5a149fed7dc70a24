//! The few libaom (3.6, Debian's `libaom-dev`) declarations the AV1 codec calls, written by
//! hand from `/usr/include/aom/*.h` (bindgen would need libclang).
//!
//! Layouts are `#[repr(C)]` copies of the header structs; the tests at the bottom pin every
//! size and the offset of every field the codec writes to the values the installed headers
//! give (read with a C compiler's `sizeof`/`offsetof` on x86-64 Linux), so a layout slip fails
//! a test rather than corrupting memory. Constants carry the headers' names.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_long, c_uint, c_ulong, c_void};

/// `aom_codec_err_t`: an `int`-sized enum; 0 is success.
pub type aom_codec_err_t = c_int;
/// `AOM_CODEC_OK`.
pub const AOM_CODEC_OK: aom_codec_err_t = 0;

/// `AOM_ENCODER_ABI_VERSION` (10 + AOM_CODEC_ABI_VERSION 16 + AOM_EXT_PART_ABI_VERSION 3).
pub const AOM_ENCODER_ABI_VERSION: c_int = 29;
/// `AOM_DECODER_ABI_VERSION` (6 + AOM_CODEC_ABI_VERSION 16).
pub const AOM_DECODER_ABI_VERSION: c_int = 22;

/// `AOM_USAGE_REALTIME`.
pub const AOM_USAGE_REALTIME: c_uint = 1;
/// `AOM_Q` of `enum aom_rc_mode`: a constant quantizer.
pub const AOM_Q: c_int = 3;
/// `AOM_KF_DISABLED` of `enum aom_kf_mode`.
pub const AOM_KF_DISABLED: c_int = 0;
/// `AOM_SUPERRES_NONE`.
pub const AOM_SUPERRES_NONE: c_int = 0;
/// `AOM_IMG_FMT_I420` (`AOM_IMG_FMT_PLANAR | 2`).
pub const AOM_IMG_FMT_I420: c_int = 0x102;
/// The `AOM_CICP_*_UNSPECIFIED` colour description (2 for primaries, transfer and matrix).
pub const AOM_CICP_UNSPECIFIED: c_int = 2;

/// `AOM_CODEC_CX_FRAME_PKT`.
pub const AOM_CODEC_CX_FRAME_PKT: c_int = 0;
/// `AOM_FRAME_IS_KEY`.
pub const AOM_FRAME_IS_KEY: u32 = 0x1;

/// `AOM_EFLAG_FORCE_KF`.
pub const AOM_EFLAG_FORCE_KF: c_long = 1 << 0;
/// `AOM_EFLAG_NO_REF_FRAME_MVS`: no motion vectors projected from references.
pub const AOM_EFLAG_NO_REF_FRAME_MVS: c_long = 1 << 27;
/// `AOM_EFLAG_ERROR_RESILIENT`: this frame is error resilient (without the global setting's
/// frame ids).
pub const AOM_EFLAG_ERROR_RESILIENT: c_long = 1 << 28;
/// `AOM_EFLAG_SET_PRIMARY_REF_NONE`: entropy and other context from defaults, not a reference.
pub const AOM_EFLAG_SET_PRIMARY_REF_NONE: c_long = 1 << 30;

/// Encoder controls (`aome_enc_control_id`, `aom_com_control_id`), all taking an `int` unless
/// noted.
pub mod ctrl {
    use std::os::raw::c_int;
    /// `AOME_SET_CPUUSED`.
    pub const AOME_SET_CPUUSED: c_int = 13;
    /// `AOME_GET_LAST_QUANTIZER_64` (`int *`): the last frame's quantizer, 0..=63 scale.
    pub const AOME_GET_LAST_QUANTIZER_64: c_int = 20;
    /// `AV1E_SET_ENABLE_TPL_MODEL`.
    pub const AV1E_SET_ENABLE_TPL_MODEL: c_int = 35;
    /// `AV1E_SET_AQ_MODE`.
    pub const AV1E_SET_AQ_MODE: c_int = 40;
    /// `AV1E_SET_ENABLE_RESTORATION`.
    pub const AV1E_SET_ENABLE_RESTORATION: c_int = 59;
    /// `AV1E_SET_ENABLE_ORDER_HINT`.
    pub const AV1E_SET_ENABLE_ORDER_HINT: c_int = 79;
    /// `AV1E_SET_ENABLE_REF_FRAME_MVS`.
    pub const AV1E_SET_ENABLE_REF_FRAME_MVS: c_int = 84;
    /// `AV1E_SET_ALLOW_REF_FRAME_MVS`.
    pub const AV1E_SET_ALLOW_REF_FRAME_MVS: c_int = 85;
    /// `AV1E_SET_ENABLE_GLOBAL_MOTION`.
    pub const AV1E_SET_ENABLE_GLOBAL_MOTION: c_int = 95;
    /// `AV1E_SET_DELTAQ_MODE`.
    pub const AV1E_SET_DELTAQ_MODE: c_int = 107;
    /// `AV1E_SET_SVC_REF_FRAME_CONFIG` (`aom_svc_ref_frame_config_t *`).
    pub const AV1E_SET_SVC_REF_FRAME_CONFIG: c_int = 133;
    /// `AV1_SET_REFERENCE` (`av1_ref_frame_t *`), encoder and decoder.
    pub const AV1_SET_REFERENCE: c_int = 231;
    /// `AV1_COPY_REFERENCE` (`av1_ref_frame_t *`), encoder and decoder.
    pub const AV1_COPY_REFERENCE: c_int = 232;
    /// `AOMD_GET_LAST_QUANTIZER` (`int *`): the last decoded frame's base qindex, 0..=255.
    #[cfg(test)]
    pub const AOMD_GET_LAST_QUANTIZER: c_int = 269;
}

/// `aom_codec_ctx_t`.
#[repr(C)]
pub struct aom_codec_ctx_t {
    /// Printable interface name.
    pub name: *const c_char,
    /// Interface pointers.
    pub iface: *const c_void,
    /// Last returned error.
    pub err: aom_codec_err_t,
    /// Detailed error text, or null.
    pub err_detail: *const c_char,
    /// Flags passed at init.
    pub init_flags: c_long,
    /// The configuration pointer (a union of pointers).
    pub config: *const c_void,
    /// Algorithm private storage.
    pub priv_: *mut c_void,
}

/// `aom_rational_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aom_rational_t {
    /// Numerator.
    pub num: c_int,
    /// Denominator.
    pub den: c_int,
}

/// `aom_fixed_buf_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aom_fixed_buf_t {
    /// Data, not owned.
    pub buf: *mut c_void,
    /// Length in bytes.
    pub sz: usize,
}

/// `aom_codec_enc_cfg_t`, field for field (the 35 `cfg_options_t` words at the end kept as an
/// array: the codec never touches them).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aom_codec_enc_cfg_t {
    pub g_usage: c_uint,
    pub g_threads: c_uint,
    pub g_profile: c_uint,
    pub g_w: c_uint,
    pub g_h: c_uint,
    pub g_limit: c_uint,
    pub g_forced_max_frame_width: c_uint,
    pub g_forced_max_frame_height: c_uint,
    pub g_bit_depth: c_int,
    pub g_input_bit_depth: c_uint,
    pub g_timebase: aom_rational_t,
    pub g_error_resilient: u32,
    pub g_pass: c_int,
    pub g_lag_in_frames: c_uint,
    pub rc_dropframe_thresh: c_uint,
    pub rc_resize_mode: c_uint,
    pub rc_resize_denominator: c_uint,
    pub rc_resize_kf_denominator: c_uint,
    pub rc_superres_mode: c_int,
    pub rc_superres_denominator: c_uint,
    pub rc_superres_kf_denominator: c_uint,
    pub rc_superres_qthresh: c_uint,
    pub rc_superres_kf_qthresh: c_uint,
    pub rc_end_usage: c_int,
    pub rc_twopass_stats_in: aom_fixed_buf_t,
    pub rc_firstpass_mb_stats_in: aom_fixed_buf_t,
    pub rc_target_bitrate: c_uint,
    pub rc_min_quantizer: c_uint,
    pub rc_max_quantizer: c_uint,
    pub rc_undershoot_pct: c_uint,
    pub rc_overshoot_pct: c_uint,
    pub rc_buf_sz: c_uint,
    pub rc_buf_initial_sz: c_uint,
    pub rc_buf_optimal_sz: c_uint,
    pub rc_2pass_vbr_bias_pct: c_uint,
    pub rc_2pass_vbr_minsection_pct: c_uint,
    pub rc_2pass_vbr_maxsection_pct: c_uint,
    pub fwd_kf_enabled: c_int,
    pub kf_mode: c_int,
    pub kf_min_dist: c_uint,
    pub kf_max_dist: c_uint,
    pub sframe_dist: c_uint,
    pub sframe_mode: c_uint,
    pub large_scale_tile: c_uint,
    pub monochrome: c_uint,
    pub full_still_picture_hdr: c_uint,
    pub save_as_annexb: c_uint,
    pub tile_width_count: c_int,
    pub tile_height_count: c_int,
    pub tile_widths: [c_int; 64],
    pub tile_heights: [c_int; 64],
    pub use_fixed_qp_offsets: c_uint,
    pub fixed_qp_offsets: [c_int; 5],
    pub encoder_cfg: [c_uint; 35],
}

/// `aom_image_t`.
#[repr(C)]
pub struct aom_image_t {
    pub fmt: c_int,
    pub cp: c_int,
    pub tc: c_int,
    pub mc: c_int,
    pub monochrome: c_int,
    pub csp: c_int,
    pub range: c_int,
    pub w: c_uint,
    pub h: c_uint,
    pub bit_depth: c_uint,
    pub d_w: c_uint,
    pub d_h: c_uint,
    pub r_w: c_uint,
    pub r_h: c_uint,
    pub x_chroma_shift: c_uint,
    pub y_chroma_shift: c_uint,
    pub planes: [*mut u8; 3],
    pub stride: [c_int; 3],
    pub sz: usize,
    pub bps: c_int,
    pub temporal_id: c_int,
    pub spatial_id: c_int,
    pub user_priv: *mut c_void,
    pub img_data: *mut u8,
    pub img_data_owner: c_int,
    pub self_allocd: c_int,
    pub metadata: *mut c_void,
    pub fb_priv: *mut c_void,
}

/// The `frame` member of `aom_codec_cx_pkt_t`'s data union.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct aom_cx_frame_t {
    pub buf: *mut c_void,
    pub sz: usize,
    pub pts: i64,
    pub duration: c_ulong,
    pub flags: u32,
    pub partition_id: c_int,
    pub vis_frame_size: usize,
}

/// `aom_codec_cx_pkt_t`: the kind, then a union whose largest member (the PSNR packet, 160
/// bytes) sets the size; only `frame` is read.
#[repr(C)]
pub struct aom_codec_cx_pkt_t {
    pub kind: c_int,
    pub data: aom_cx_pkt_data,
}

/// The data union of [`aom_codec_cx_pkt_t`].
#[repr(C)]
pub union aom_cx_pkt_data {
    pub frame: aom_cx_frame_t,
    /// The PSNR packet's storage, which sets the union's size.
    pub psnr: [u64; 20],
}

/// `aom_codec_dec_cfg_t`.
#[repr(C)]
pub struct aom_codec_dec_cfg_t {
    pub threads: c_uint,
    pub w: c_uint,
    pub h: c_uint,
    pub allow_lowbitdepth: c_uint,
}

/// `av1_ref_frame_t`.
#[repr(C)]
pub struct av1_ref_frame_t {
    /// Reference buffer slot.
    pub idx: c_int,
    /// Decoder only: use the picture in place (0 here: copy).
    pub use_external_ref: c_int,
    pub img: aom_image_t,
}

/// `aom_svc_ref_frame_config_t`.
#[repr(C)]
#[derive(Default)]
pub struct aom_svc_ref_frame_config_t {
    /// Whether each of LAST, LAST2, LAST3, GOLDEN, BWDREF, ALTREF2, ALTREF is referenced.
    pub reference: [c_int; 7],
    /// The buffer slot each of the seven references reads.
    pub ref_idx: [c_int; 7],
    /// Whether each of the eight slots is refreshed with this frame.
    pub refresh: [c_int; 8],
}

#[link(name = "aom")]
extern "C" {
    pub fn aom_codec_av1_cx() -> *const c_void;
    pub fn aom_codec_av1_dx() -> *const c_void;
    pub fn aom_codec_enc_config_default(
        iface: *const c_void,
        cfg: *mut aom_codec_enc_cfg_t,
        usage: c_uint,
    ) -> aom_codec_err_t;
    pub fn aom_codec_enc_init_ver(
        ctx: *mut aom_codec_ctx_t,
        iface: *const c_void,
        cfg: *const aom_codec_enc_cfg_t,
        flags: c_long,
        ver: c_int,
    ) -> aom_codec_err_t;
    pub fn aom_codec_enc_config_set(
        ctx: *mut aom_codec_ctx_t,
        cfg: *const aom_codec_enc_cfg_t,
    ) -> aom_codec_err_t;
    pub fn aom_codec_encode(
        ctx: *mut aom_codec_ctx_t,
        img: *const aom_image_t,
        pts: i64,
        duration: c_ulong,
        flags: c_long,
    ) -> aom_codec_err_t;
    pub fn aom_codec_get_cx_data(
        ctx: *mut aom_codec_ctx_t,
        iter: *mut *const c_void,
    ) -> *const aom_codec_cx_pkt_t;
    pub fn aom_codec_dec_init_ver(
        ctx: *mut aom_codec_ctx_t,
        iface: *const c_void,
        cfg: *const aom_codec_dec_cfg_t,
        flags: c_long,
        ver: c_int,
    ) -> aom_codec_err_t;
    pub fn aom_codec_decode(
        ctx: *mut aom_codec_ctx_t,
        data: *const u8,
        data_sz: usize,
        user_priv: *mut c_void,
    ) -> aom_codec_err_t;
    pub fn aom_codec_get_frame(
        ctx: *mut aom_codec_ctx_t,
        iter: *mut *const c_void,
    ) -> *const aom_image_t;
    pub fn aom_codec_control(ctx: *mut aom_codec_ctx_t, ctrl_id: c_int, ...) -> aom_codec_err_t;
    pub fn aom_codec_destroy(ctx: *mut aom_codec_ctx_t) -> aom_codec_err_t;
    pub fn aom_codec_error(ctx: *const aom_codec_ctx_t) -> *const c_char;
    pub fn aom_codec_err_to_string(err: aom_codec_err_t) -> *const c_char;
    #[cfg(test)]
    pub fn aom_codec_version() -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    /// Sizes and offsets printed by `sizeof`/`offsetof` against /usr/include/aom (libaom 3.6).
    #[test]
    fn layouts_match_the_installed_headers() {
        assert_eq!(size_of::<aom_codec_ctx_t>(), 56);
        assert_eq!(offset_of!(aom_codec_ctx_t, err), 16);
        assert_eq!(offset_of!(aom_codec_ctx_t, err_detail), 24);
        assert_eq!(offset_of!(aom_codec_ctx_t, priv_), 48);

        assert_eq!(size_of::<aom_codec_enc_cfg_t>(), 904);
        assert_eq!(align_of::<aom_codec_enc_cfg_t>(), 8);
        let c = |o: usize, want: usize| assert_eq!(o, want);
        c(offset_of!(aom_codec_enc_cfg_t, g_threads), 4);
        c(offset_of!(aom_codec_enc_cfg_t, g_w), 12);
        c(offset_of!(aom_codec_enc_cfg_t, g_h), 16);
        c(offset_of!(aom_codec_enc_cfg_t, g_timebase), 40);
        c(offset_of!(aom_codec_enc_cfg_t, g_error_resilient), 48);
        c(offset_of!(aom_codec_enc_cfg_t, g_pass), 52);
        c(offset_of!(aom_codec_enc_cfg_t, g_lag_in_frames), 56);
        c(offset_of!(aom_codec_enc_cfg_t, rc_dropframe_thresh), 60);
        c(offset_of!(aom_codec_enc_cfg_t, rc_resize_mode), 64);
        c(offset_of!(aom_codec_enc_cfg_t, rc_superres_mode), 76);
        c(offset_of!(aom_codec_enc_cfg_t, rc_end_usage), 96);
        c(offset_of!(aom_codec_enc_cfg_t, rc_twopass_stats_in), 104);
        c(offset_of!(aom_codec_enc_cfg_t, rc_target_bitrate), 136);
        c(offset_of!(aom_codec_enc_cfg_t, rc_min_quantizer), 140);
        c(offset_of!(aom_codec_enc_cfg_t, rc_max_quantizer), 144);
        c(offset_of!(aom_codec_enc_cfg_t, fwd_kf_enabled), 180);
        c(offset_of!(aom_codec_enc_cfg_t, kf_mode), 184);
        c(offset_of!(aom_codec_enc_cfg_t, kf_max_dist), 192);
        c(offset_of!(aom_codec_enc_cfg_t, tile_widths), 228);
        c(offset_of!(aom_codec_enc_cfg_t, use_fixed_qp_offsets), 740);
        c(offset_of!(aom_codec_enc_cfg_t, encoder_cfg), 764);

        assert_eq!(size_of::<aom_image_t>(), 168);
        c(offset_of!(aom_image_t, w), 28);
        c(offset_of!(aom_image_t, d_w), 40);
        c(offset_of!(aom_image_t, x_chroma_shift), 56);
        c(offset_of!(aom_image_t, planes), 64);
        c(offset_of!(aom_image_t, stride), 88);
        c(offset_of!(aom_image_t, sz), 104);
        c(offset_of!(aom_image_t, bps), 112);
        c(offset_of!(aom_image_t, user_priv), 128);
        c(offset_of!(aom_image_t, img_data), 136);
        c(offset_of!(aom_image_t, metadata), 152);
        c(offset_of!(aom_image_t, fb_priv), 160);

        assert_eq!(size_of::<aom_codec_cx_pkt_t>(), 168);
        c(offset_of!(aom_codec_cx_pkt_t, data), 8);
        c(8 + offset_of!(aom_cx_frame_t, sz), 16);
        c(8 + offset_of!(aom_cx_frame_t, flags), 40);

        assert_eq!(size_of::<aom_codec_dec_cfg_t>(), 16);
        assert_eq!(size_of::<av1_ref_frame_t>(), 176);
        c(offset_of!(av1_ref_frame_t, img), 8);
        assert_eq!(size_of::<aom_svc_ref_frame_config_t>(), 88);
    }

    /// The library linked is the 3.x series these declarations were read from.
    #[test]
    fn linked_library_is_libaom_3() {
        // SAFETY: aom_codec_version takes no arguments and returns an int.
        let version = unsafe { aom_codec_version() };
        assert_eq!(version >> 16, 3, "libaom {version:#x}");
    }
}
