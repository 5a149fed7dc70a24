//! Fair quality scores for barcoded video: luma SSIM over the rows below the band.
//!
//! The band is flat and, once read, identical in source and output; counting it would lift
//! every frame's SSIM towards 1. Scoring only the picture beneath it measures what the viewer
//! sees of the video itself.

use salsify_codec::{Image, PlaneId};
use salsify_metrics::{psnr_plane, ssim_plane, PlaneView};

use crate::band::BAND_ROWS;
use crate::BarcodeError;

/// SSIM and PSNR of the picture outside the band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandScore {
    /// Luma SSIM (linear).
    pub ssim: f64,
    /// Luma PSNR, dB.
    pub psnr_db: f64,
}

/// Scores `shown` against `source` (same size) over the luma rows below the band.
pub fn ssim_outside_band(source: &Image, shown: &Image) -> Result<BandScore, BarcodeError> {
    if (source.width(), source.height()) != (shown.width(), shown.height()) {
        return Err(BarcodeError::Score(format!(
            "{}x{} picture scored against a {}x{} source",
            shown.width(),
            shown.height(),
            source.width(),
            source.height()
        )));
    }
    let (a, b) = (below_band(source)?, below_band(shown)?);
    let ssim = ssim_plane(a, b).map_err(|e| BarcodeError::Score(e.to_string()))?;
    let psnr_db = psnr_plane(a, b).map_err(|e| BarcodeError::Score(e.to_string()))?;
    Ok(BandScore { ssim, psnr_db })
}

/// The luma rows of `image` below the band.
fn below_band(image: &Image) -> Result<PlaneView<'_>, BarcodeError> {
    let plane = image.plane(PlaneId::Y);
    let skip = BAND_ROWS as usize * plane.stride();
    let rows = plane.height().saturating_sub(BAND_ROWS as usize);
    PlaneView::new(&plane.data()[skip..], plane.width(), rows, plane.stride())
        .map_err(|e| BarcodeError::Score(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::SyntheticSource;

    #[test]
    fn the_band_does_not_count() {
        let source = SyntheticSource::new(640, 360, 30, 1).unwrap().frame(0);
        let mut shown = source.clone();
        // Damage only the band: a perfect score.
        for row in 0..BAND_ROWS as usize {
            shown.plane_mut(PlaneId::Y).row_mut(row).fill(0);
        }
        let s = ssim_outside_band(&source, &shown).unwrap();
        assert!((s.ssim - 1.0).abs() < 1e-12, "{s:?}");
        // Damage below it: scored.
        shown.plane_mut(PlaneId::Y).row_mut(100).fill(0);
        assert!(ssim_outside_band(&source, &shown).unwrap().ssim < 1.0);
        let small = Image::new(320, 180).unwrap();
        assert!(ssim_outside_band(&source, &small).is_err());
    }
}
