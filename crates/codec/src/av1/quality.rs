//! AV1's quality scale: libaom's 0..=63 quantizer.
//!
//! AV1 frames carry a base quantizer index of 0..=255; libaom's `AOM_Q` mode takes a 0..=63
//! quantizer (`rc_min_quantizer` = `rc_max_quantizer`) and maps it through its own table, so
//! the 64 values of that scale are the ones an encoder can be asked for. This is not VP8's
//! scale: steps and ladders on it are AV1's own.

use crate::error::CodecError;

/// A libaom quantizer, 0..=63. Lower means finer quantisation: better quality, more bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Av1Quality(u8);

impl Av1Quality {
    /// The finest quantizer.
    pub const BEST: Av1Quality = Av1Quality(0);
    /// The coarsest quantizer.
    pub const WORST: Av1Quality = Av1Quality(63);

    /// A quantizer; an error above 63.
    pub fn new(q: u8) -> Result<Av1Quality, CodecError> {
        if q > Self::WORST.0 {
            return Err(CodecError::InvalidInput(format!(
                "AV1 quantizer {q} is outside 0..=63"
            )));
        }
        Ok(Av1Quality(q))
    }

    /// `q` clamped into `lo..=hi` (and into 0..=63); for stepping by signed amounts.
    pub fn clamped(q: i32, lo: Av1Quality, hi: Av1Quality) -> Av1Quality {
        Av1Quality(q.clamp(i32::from(lo.0), i32::from(hi.0)).clamp(0, 63) as u8)
    }

    /// The quantizer, 0..=63.
    pub fn index(self) -> u8 {
        self.0
    }
}

impl std::fmt::Display for Av1Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "aq{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_and_clamping() {
        assert!(Av1Quality::new(64).is_err());
        assert_eq!(Av1Quality::new(63).unwrap(), Av1Quality::WORST);
        let lo = Av1Quality::new(4).unwrap();
        assert_eq!(Av1Quality::clamped(-3, lo, Av1Quality::WORST), lo);
        assert_eq!(
            Av1Quality::clamped(99, lo, Av1Quality::WORST),
            Av1Quality::WORST
        );
        assert_eq!(Av1Quality::clamped(20, lo, Av1Quality::WORST).index(), 20);
    }
}
