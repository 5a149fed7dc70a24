//! Frame-id barcodes for black-box measurement, as the Salsify paper scored unmodified
//! systems: every source picture carries its frame number in a band at its top, the receiver's
//! pictures are read back, and quality is scored outside the band.
//!
//! - [`code`]: the 40-bit code word (a 24-bit frame id and a CRC-16 over it);
//! - [`band`]: where the band lies in a picture ([`BandLayout`]) and how big it is;
//! - [`stamp`] / [`read`]: writing the code into a picture's luma, and reading it back,
//!   rejecting a damaged code (an ambiguous cell or a failed check) instead of guessing;
//! - [`score`]: luma SSIM of the rows below the band, so the band (identical in source and
//!   output when read) does not flatter the score.
//!
//! Layer 2 of the workspace (README, "Layout"): on `salsify-codec` and `salsify-metrics`; the
//! black-box peers (`salsify-peer`) and the command's `salsify barcode` use it.

pub mod band;
pub mod code;
mod error;
mod format;
pub mod score;

pub use band::{BandLayout, BAND_ROWS, CELLS, MIN_HEIGHT, MIN_WIDTH};
pub use code::{CodeWord, MAX_FRAME_ID};
pub use error::BarcodeError;
pub use score::{ssim_outside_band, BandScore};

use salsify_codec::Image;

/// Stamps `frame_id` into the band of `image` (luma cells, neutral chroma).
pub fn stamp(image: &mut Image, frame_id: u64) -> Result<(), BarcodeError> {
    let layout = BandLayout::for_size(image.width(), image.height())?;
    let word = CodeWord::new(frame_id)?;
    layout.paint(image, &word.bits());
    Ok(())
}

/// Reads the frame id from the band of `image`; an error if the band is damaged or absent.
pub fn read(image: &Image) -> Result<u32, BarcodeError> {
    let layout = BandLayout::for_size(image.width(), image.height())?;
    let bits = layout.sample(image)?;
    CodeWord::from_bits(&bits).map(|w| w.frame_id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::SyntheticSource;

    #[test]
    fn stamp_then_read_round_trips() {
        let mut image = SyntheticSource::new(640, 360, 30, 1).unwrap().frame(3);
        for id in [0u64, 1, 77, 123_456, MAX_FRAME_ID] {
            stamp(&mut image, id).unwrap();
            assert_eq!(read(&image).unwrap() as u64, id);
        }
    }

    #[test]
    fn a_picture_without_a_band_is_rejected() {
        let image = SyntheticSource::new(640, 360, 30, 1).unwrap().frame(3);
        assert!(read(&image).is_err());
        let black = Image::new(640, 360).unwrap();
        assert!(read(&black).is_err());
        let mut white = Image::new(640, 360).unwrap();
        white
            .plane_mut(salsify_codec::PlaneId::Y)
            .data_mut()
            .fill(235);
        assert!(read(&white).is_err());
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut small = Image::new(64, 32).unwrap();
        assert!(matches!(
            stamp(&mut small, 1),
            Err(BarcodeError::TooSmall { .. })
        ));
        let mut image = Image::new(320, 180).unwrap();
        assert_eq!(
            stamp(&mut image, MAX_FRAME_ID + 1),
            Err(BarcodeError::IdTooLarge(MAX_FRAME_ID + 1))
        );
    }
}
