//! PSNR of one plane or of a whole I420 picture.
//!
//! `PSNR = 10 log10(255^2 / MSE)`. Identical pictures have MSE 0 and infinite PSNR, which
//! breaks means and JSON, so values are capped at [`PSNR_CAP_DB`] (libvpx's convention).

use super::ssim::{same_size, PlaneView};
use super::MetricsError;
use salsify_codec::{Image, PlaneId};
use serde::{Deserialize, Serialize};

/// Largest PSNR reported, in dB. A 720p luma plane with one sample off by one scores about
/// 108 dB, so only (near-)identical pictures reach it; lossy video sits at 25-50 dB.
pub const PSNR_CAP_DB: f64 = 100.0;

/// Sum of squared differences over the visible samples (exact integer).
pub fn sse_plane(a: PlaneView<'_>, b: PlaneView<'_>) -> Result<u64, MetricsError> {
    same_size(&a, &b)?;
    let mut total = 0u64;
    for y in 0..a.height() {
        // |d| <= 255, so d^2 fits in u16 (fast 16-bit multiplies), and a run of 16384
        // squares sums to under 2^30 in u32; rows of any width are cut into such runs.
        for (ra, rb) in a.row(y).chunks(1 << 14).zip(b.row(y).chunks(1 << 14)) {
            let run: u32 = ra
                .iter()
                .zip(rb)
                .map(|(&x, &y)| {
                    let d = u16::from(x.abs_diff(y));
                    u32::from(d * d)
                })
                .sum();
            total += u64::from(run);
        }
    }
    Ok(total)
}

/// PSNR in dB from a sum of squared errors over `samples` 8-bit samples, capped at
/// [`PSNR_CAP_DB`]. Zero samples give the cap (nothing differs).
pub fn psnr_to_db(sse: u64, samples: u64) -> f64 {
    if sse == 0 || samples == 0 {
        return PSNR_CAP_DB;
    }
    let mse = sse as f64 / samples as f64;
    (10.0 * (255.0 * 255.0 / mse).log10()).min(PSNR_CAP_DB)
}

/// PSNR of two planes of the same size, in dB.
pub fn psnr_plane(a: PlaneView<'_>, b: PlaneView<'_>) -> Result<f64, MetricsError> {
    let sse = sse_plane(a, b)?;
    Ok(psnr_to_db(sse, (a.width() * a.height()) as u64))
}

/// Luma PSNR of two codec images (visible area only).
pub fn psnr_luma(a: &Image, b: &Image) -> Result<f64, MetricsError> {
    psnr_plane(PlaneView::from_plane(a.y()), PlaneView::from_plane(b.y()))
}

/// PSNR of each plane and of the whole picture, in dB.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct YuvPsnr {
    /// Luma.
    pub y: f64,
    /// Blue-difference chroma.
    pub u: f64,
    /// Red-difference chroma.
    pub v: f64,
    /// All samples pooled (total squared error over total samples, so luma weighs 4x each
    /// chroma plane, as in ffmpeg's `psnr` filter "average").
    pub all: f64,
}

/// PSNR of all three planes of two codec images.
pub fn psnr_yuv(a: &Image, b: &Image) -> Result<YuvPsnr, MetricsError> {
    let mut db = [0.0; 3];
    let (mut sse_all, mut samples_all) = (0u64, 0u64);
    for (i, id) in PlaneId::ALL.into_iter().enumerate() {
        let (pa, pb) = (
            PlaneView::from_plane(a.plane(id)),
            PlaneView::from_plane(b.plane(id)),
        );
        let sse = sse_plane(pa, pb)?;
        let samples = (pa.width() * pa.height()) as u64;
        db[i] = psnr_to_db(sse, samples);
        sse_all += sse;
        samples_all += samples;
    }
    Ok(YuvPsnr {
        y: db[0],
        u: db[1],
        v: db[2],
        all: psnr_to_db(sse_all, samples_all),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // Every sample off by 1: MSE 1, PSNR = 20 log10(255) = 48.13 dB.
        let (a, b) = (vec![100u8; 64], vec![101u8; 64]);
        let va = PlaneView::new(&a, 8, 8, 8).unwrap();
        let vb = PlaneView::new(&b, 8, 8, 8).unwrap();
        let p = psnr_plane(va, vb).unwrap();
        assert!((p - 20.0 * 255f64.log10()).abs() < 1e-12, "{p}");
        assert_eq!(psnr_plane(va, va).unwrap(), PSNR_CAP_DB);
        // Every sample off by 255: MSE 255^2, 0 dB.
        let (z, f) = (vec![0u8; 64], vec![255u8; 64]);
        let p = psnr_plane(
            PlaneView::new(&z, 8, 8, 8).unwrap(),
            PlaneView::new(&f, 8, 8, 8).unwrap(),
        )
        .unwrap();
        assert_eq!(p, 0.0);
    }

    #[test]
    fn yuv_pools_all_samples() {
        let a = Image::new(16, 16).unwrap();
        let mut b = a.clone();
        for y in 0..8 {
            b.plane_mut(PlaneId::U).row_mut(y).fill(130); // chroma off by 2, 64 samples
        }
        let p = psnr_yuv(&a, &b).unwrap();
        assert_eq!(p.y, PSNR_CAP_DB);
        assert_eq!(p.v, PSNR_CAP_DB);
        assert!((p.u - psnr_to_db(4 * 64, 64)).abs() < 1e-12);
        // 256 + 64 + 64 samples, squared error 256 in all.
        assert!((p.all - psnr_to_db(256, 384)).abs() < 1e-12);
        assert!(p.all > p.u);
        assert_eq!(psnr_luma(&a, &b).unwrap(), PSNR_CAP_DB);
    }

    #[test]
    fn very_wide_rows_do_not_overflow() {
        let w = 70_000; // 70 000 * 255^2 exceeds u32
        let (a, b) = (vec![0u8; w], vec![255u8; w]);
        let sse = sse_plane(
            PlaneView::new(&a, w, 1, w).unwrap(),
            PlaneView::new(&b, w, 1, w).unwrap(),
        )
        .unwrap();
        assert_eq!(sse, 70_000 * 255 * 255);
    }

    proptest! {
        #[test]
        fn symmetric_and_capped(a in proptest::collection::vec(any::<u8>(), 48),
                                b in proptest::collection::vec(any::<u8>(), 48)) {
            let (va, vb) = (PlaneView::new(&a, 8, 6, 8).unwrap(), PlaneView::new(&b, 8, 6, 8).unwrap());
            let ab = psnr_plane(va, vb).unwrap();
            prop_assert_eq!(ab, psnr_plane(vb, va).unwrap());
            prop_assert!((0.0..=PSNR_CAP_DB).contains(&ab));
            prop_assert_eq!(ab == PSNR_CAP_DB, a == b);
        }
    }
}
