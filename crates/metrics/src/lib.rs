//! Per-frame metrics and run summaries, as the Salsify paper measured them.
//!
//! - [`ssim`]: luma SSIM (ffmpeg's `ssim` filter definition) and SSIM in dB;
//! - [`psnr`]: PSNR of one plane or of the whole YUV picture;
//! - [`delay`]: the paper's delay metric (a frame never shown gets the display time of the
//!   next frame shown);
//! - [`stats`]: mean and percentiles, one definition for every summary;
//! - [`record`]: the per-frame record a simulator (or a barcode reader) fills;
//! - [`blackbox`]: (barcode, capture time) and (barcode, display time, score) joined into
//!   records, for systems measured from outside;
//! - [`summary`]: a run's [`Summary`], serialisable to JSON;
//! - [`qoe`]: the paper's two fitted quality-of-experience models;
//! - [`packet_delay`]: Sprout's measurement of any scheme (delay function, self-inflicted
//!   delay against an omniscient sender, throughput against capacity).
//!
//! Everything here is a pure function of its inputs, so two runs with the same per-frame log
//! give the same summary bit for bit.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` and `salsify-codec`; the
//! simulator, the evaluation, the barcodes and the black-box peers score with it.

pub mod blackbox;
pub mod delay;
mod error;
pub mod fixed;
pub mod packet_delay;
pub mod psnr;
pub mod qoe;
pub mod record;
pub mod ssim;
pub mod stats;
pub mod summary;

pub use delay::display_delays;
pub use error::MetricsError;
pub use fixed::Fixed;
pub use packet_delay::{delay_function, LinkCapacity, PacketTiming, SproutMeasure};
pub use psnr::{psnr_luma, psnr_plane, psnr_to_db, psnr_yuv, YuvPsnr, PSNR_CAP_DB};
pub use qoe::QoeModel;
pub use record::{FrameOutcome, FrameRecord};
pub use ssim::{ssim_luma, ssim_plane, ssim_to_db, PlaneView, SSIM_DB_CAP};
pub use stats::{mean, percentile};
pub use summary::{
    record_delays, summarize, AudioFigures, LinkUsage, OutcomeCounts, RunInfo, Summary,
};
