//! Where the barcode lies: the top [`BAND_ROWS`] luma rows (one VP8 macroblock row), split
//! into [`CELLS`] equal cells across the width, one bit each (dark 16 = 0, bright 235 = 1,
//! video-range luma), centred; the rest of the band is mid grey and its chroma neutral.
//!
//! Cells are wide (16 pixels at 640x360, 32 at 1280x720) and a macroblock tall, so coarse
//! quantisation blurs their edges but not their middles. The reader averages each cell's
//! middle (its central half across, rows 4..12 down) and insists on a clear margin from mid
//! grey, so a damaged cell is rejected rather than guessed.
//!
//! The band takes `16 / height` of the picture: 4.4 % at 360 rows, 2.2 % at 720.

use salsify_codec::{Image, PlaneId};

use crate::error::BarcodeError;
pub use crate::format::{BAND_ROWS, CELLS, MIN_HEIGHT, MIN_WIDTH};

/// Luma of a 0 cell.
const DARK: u8 = 16;
/// Luma of a 1 cell.
const BRIGHT: u8 = 235;
/// Luma of the band outside the cells, and the threshold between 0 and 1.
const MID: u8 = 128;
/// How far from [`MID`] a cell's mean must be to count as read.
const MARGIN: f64 = 40.0;
/// Rows of a cell averaged by the reader.
const READ_ROWS: std::ops::Range<usize> = 4..12;

/// The band's geometry in a picture of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandLayout {
    /// Left edge of the first cell.
    pub left: usize,
    /// Width of one cell.
    pub cell_width: usize,
    /// Picture height, for the area share.
    pub height: u32,
}

impl BandLayout {
    /// The layout for a `width` x `height` picture; an error if it is too small.
    pub fn for_size(width: u32, height: u32) -> Result<BandLayout, BarcodeError> {
        if width < MIN_WIDTH || height < MIN_HEIGHT {
            return Err(BarcodeError::TooSmall { width, height });
        }
        let cell_width = width as usize / CELLS;
        Ok(BandLayout {
            left: (width as usize - cell_width * CELLS) / 2,
            cell_width,
            height,
        })
    }

    /// Share of the picture's area the band takes.
    pub fn area_share(&self) -> f64 {
        f64::from(BAND_ROWS) / f64::from(self.height)
    }

    /// Paints `bits` into the band of `image`.
    pub fn paint(&self, image: &mut Image, bits: &[bool; CELLS]) {
        let y = image.plane_mut(PlaneId::Y);
        for row in 0..BAND_ROWS as usize {
            let line = y.row_mut(row);
            line.fill(MID);
            for (cell, &bit) in bits.iter().enumerate() {
                let x = self.left + cell * self.cell_width;
                line[x..x + self.cell_width].fill(if bit { BRIGHT } else { DARK });
            }
        }
        for id in [PlaneId::U, PlaneId::V] {
            let plane = image.plane_mut(id);
            for row in 0..BAND_ROWS as usize / 2 {
                plane.row_mut(row).fill(MID);
            }
        }
    }

    /// Reads the band's bits; an error at the first cell that is not clearly dark or bright.
    pub fn sample(&self, image: &Image) -> Result<[bool; CELLS], BarcodeError> {
        let y = image.plane(PlaneId::Y);
        let inset = self.cell_width / 4;
        let mut bits = [false; CELLS];
        for (cell, bit) in bits.iter_mut().enumerate() {
            let x0 = self.left + cell * self.cell_width + inset;
            let x1 = self.left + (cell + 1) * self.cell_width - inset;
            let sum: u64 = READ_ROWS
                .map(|row| {
                    y.row(row)[x0..x1]
                        .iter()
                        .map(|&v| u64::from(v))
                        .sum::<u64>()
                })
                .sum();
            let mean = sum as f64 / ((x1 - x0) * READ_ROWS.len()) as f64;
            if (mean - f64::from(MID)).abs() < MARGIN {
                return Err(BarcodeError::AmbiguousCell { cell, mean });
            }
            *bit = mean > f64::from(MID);
        }
        Ok(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        let l = BandLayout::for_size(640, 360).unwrap();
        assert_eq!((l.left, l.cell_width), (0, 16));
        assert!((l.area_share() - 16.0 / 360.0).abs() < 1e-12);
        let l = BandLayout::for_size(1000, 720).unwrap();
        assert_eq!((l.left, l.cell_width), (0, 25));
        let l = BandLayout::for_size(330, 64).unwrap();
        assert_eq!((l.left, l.cell_width), (5, 8));
        assert!(BandLayout::for_size(318, 360).is_err());
        assert!(BandLayout::for_size(640, 62).is_err());
    }

    #[test]
    fn a_grey_cell_is_ambiguous() {
        let mut image = Image::new(640, 360).unwrap();
        let l = BandLayout::for_size(640, 360).unwrap();
        l.paint(&mut image, &[true; CELLS]);
        for row in 0..16 {
            image.plane_mut(PlaneId::Y).row_mut(row)[5 * 16..6 * 16].fill(140);
        }
        assert!(matches!(
            l.sample(&image),
            Err(BarcodeError::AmbiguousCell { cell: 5, .. })
        ));
    }
}
