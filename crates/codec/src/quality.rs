//! The quality scale: VP8's quantizer index.
//!
//! VP8 frames carry a quantizer index from 0 (finest: best picture, most bytes) to 127
//! (coarsest). Salsify's sender works on this scale (the original steps -17/+23 from the last
//! index sent). libvpx's public API takes a 0..=63 "quantizer" instead and translates it through
//! a fixed table (`q_trans` in libvpx's vp8/encoder/onyx_if.c, reproduced below as a fact of
//! the format mapping), so only 64 of the 128 indices are reachable. [`Quality::to_libvpx`]
//! picks the smallest libvpx value whose index is at least the one asked for — never a finer
//! quantizer than requested — and [`Quality::effective`] is the index actually coded.

use crate::error::CodecError;

/// libvpx's 0..=63 quantizer to VP8 quantizer index (libvpx's q_trans table).
const LIBVPX_TO_INDEX: [u8; 64] = [
    0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 15, 17, 18, 19, 20, 21, 23, 24, 25, 26, 27, 28, 29, 30,
    31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 64, 67, 70, 73, 76, 79, 82, 85,
    88, 91, 94, 97, 100, 103, 106, 109, 112, 115, 118, 121, 124, 127,
];

/// A VP8 quantizer index, 0..=127. Lower means finer quantisation: better quality, more bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quality(u8);

impl Quality {
    /// The finest quantizer.
    pub const BEST: Quality = Quality(0);
    /// The coarsest quantizer.
    pub const WORST: Quality = Quality(127);

    /// A quantizer index; an error above 127.
    pub fn new(index: u8) -> Result<Quality, CodecError> {
        if index > 127 {
            return Err(CodecError::InvalidInput(format!(
                "quality (VP8 quantizer index) {index} is above 127"
            )));
        }
        Ok(Quality(index))
    }

    /// `index` clamped into `lo..=hi` (and into 0..=127); for stepping by signed amounts.
    pub fn clamped(index: i32, lo: Quality, hi: Quality) -> Quality {
        Quality(index.clamp(i32::from(lo.0), i32::from(hi.0)).clamp(0, 127) as u8)
    }

    /// The quantizer index.
    pub fn index(self) -> u8 {
        self.0
    }

    /// libvpx's 0..=63 quantizer that codes this index, or the next coarser one.
    pub fn to_libvpx(self) -> u32 {
        LIBVPX_TO_INDEX
            .iter()
            .position(|&i| i >= self.0)
            .unwrap_or(63) as u32
    }

    /// The index libvpx will actually code for this request.
    pub fn effective(self) -> Quality {
        Quality(LIBVPX_TO_INDEX[self.to_libvpx() as usize])
    }
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "q{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_never_picks_a_finer_quantizer() {
        for q in 0..=127u8 {
            let e = Quality::new(q).unwrap().effective();
            assert!(e.index() >= q, "{q} -> {e}");
            assert!(e.index() - q <= 3, "{q} -> {e}");
            assert_eq!(e.effective(), e, "effective indices are fixed points");
        }
        assert_eq!(Quality::new(64).unwrap().to_libvpx(), 42);
        assert_eq!(Quality::new(6).unwrap().effective().index(), 7);
        assert_eq!(Quality::WORST.to_libvpx(), 63);
        assert!(Quality::new(128).is_err());
    }

    #[test]
    fn clamped_respects_bounds() {
        let lo = Quality::new(3).unwrap();
        assert_eq!(Quality::clamped(-20, lo, Quality::WORST), lo);
        assert_eq!(Quality::clamped(500, lo, Quality::WORST), Quality::WORST);
        assert_eq!(Quality::clamped(50, lo, Quality::WORST).index(), 50);
    }
}
