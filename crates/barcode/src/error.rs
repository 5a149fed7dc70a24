//! Why a barcode cannot be stamped or read.

use crate::format::{MAX_FRAME_ID, MIN_HEIGHT, MIN_WIDTH};

/// Why a barcode could not be stamped or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BarcodeError {
    /// The picture is too small to carry the band.
    #[error("a {width}x{height} picture is too small for a barcode (needs at least {MIN_WIDTH}x{MIN_HEIGHT})")]
    TooSmall {
        /// Picture width.
        width: u32,
        /// Picture height.
        height: u32,
    },
    /// The frame id does not fit the code's 24 bits.
    #[error("frame id {0} does not fit in a barcode (at most {MAX_FRAME_ID})")]
    IdTooLarge(u64),
    /// A cell is neither clearly dark nor clearly bright: the band is damaged or absent.
    #[error("barcode cell {cell} is ambiguous (mean luma {mean:.0})")]
    AmbiguousCell {
        /// The first such cell, from the left.
        cell: usize,
        /// Its mean luma.
        mean: f64,
    },
    /// Every cell was clear but the check word does not match the id.
    #[error("barcode check failed (read id {id}, check {check:#06x}, expected {expected:#06x})")]
    Checksum {
        /// The id as read.
        id: u32,
        /// The check word as read.
        check: u16,
        /// The check word `id` should carry.
        expected: u16,
    },
    /// The pictures compared differ in size, or SSIM failed.
    #[error("scoring: {0}")]
    Score(String),
}
