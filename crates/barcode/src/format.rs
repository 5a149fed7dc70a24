//! The barcode's sizes, which the code word ([`crate::code`]), the band ([`crate::band`])
//! and the errors that quote the limits all share.

/// Bits of frame id: 2^24 frames is 77 hours at 60 fps.
pub const ID_BITS: usize = 24;
/// Bits of check word.
pub const CHECK_BITS: usize = 16;
/// Bits of a code word.
pub const WORD_BITS: usize = ID_BITS + CHECK_BITS;
/// The largest frame id a barcode carries.
pub const MAX_FRAME_ID: u64 = (1 << ID_BITS) - 1;

/// Luma rows of the band.
pub const BAND_ROWS: u32 = 16;
/// Cells across the band, one per bit of the code word.
pub const CELLS: usize = WORD_BITS;
/// Narrowest picture: cells of at least 8 pixels.
pub const MIN_WIDTH: u32 = 8 * CELLS as u32;
/// Lowest picture: the band plus three times its height of picture to score.
pub const MIN_HEIGHT: u32 = 4 * BAND_ROWS;
