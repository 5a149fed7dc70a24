//! The quantizer walk from the budget (`[salsify] quality_walk = "budget"`): predict each
//! quantizer's frame size from the last encodes and pick the finest that fits.
//!
//! The paper's sender steps 17 finer and 23 coarser than the last quality sent. When the
//! budget changes a lot between frames (a cellular link, an ACK stall ending), those steps
//! swing the quantizer between its extremes (measured: q127 to q3 in 8 frames) and the
//! frames sized for the old budget wait in the queue. Here the size of a frame is modelled as
//! `size(q) = size(q0) x exp(-k (q - q0))`: VP8's frame size falls roughly exponentially with
//! the quantizer index, and every picture's two encodes give a fresh sample of the slope `k`
//! (smoothed), and a fresh reference `(q0, size(q0))`.

use salsify_codec::Quality;

/// Weight of a new slope sample.
const SLOPE_GAIN: f64 = 0.25;
/// The slope before any sample: sizes halve every 12 quantizer steps. Only a starting point
/// (not measured on libvpx here): the first picture's two encodes replace it.
const INITIAL_SLOPE: f64 = std::f64::consts::LN_2 / 12.0;
/// Slopes outside this are treated as noise (a scene cut between two encodes of one
/// picture cannot happen, but the smallest frames are dominated by headers).
const SLOPE_RANGE: (f64, f64) = (0.005, 0.5);

/// Sizes of recent encodes, as a model of size against quantizer.
#[derive(Debug, Clone)]
pub struct SizeModel {
    slope: f64,
    reference: Option<(u8, f64)>,
}

impl Default for SizeModel {
    fn default() -> Self {
        SizeModel {
            slope: INITIAL_SLOPE,
            reference: None,
        }
    }
}

impl SizeModel {
    /// One picture's options: `(quality, bytes)` each. The finest becomes the reference.
    pub fn observe(&mut self, options: &[(Quality, usize)]) {
        let finest = options.iter().min_by_key(|(q, _)| q.index());
        let coarsest = options.iter().max_by_key(|(q, _)| q.index());
        let (Some(&(qf, sf)), Some(&(qc, sc))) = (finest, coarsest) else {
            return;
        };
        if sf == 0 {
            return;
        }
        self.reference = Some((qf.index(), sf as f64));
        if qc.index() > qf.index() && sc > 0 && sf > sc {
            let k = (sf as f64 / sc as f64).ln() / f64::from(qc.index() - qf.index());
            if (SLOPE_RANGE.0..=SLOPE_RANGE.1).contains(&k) {
                self.slope += SLOPE_GAIN * (k - self.slope);
            }
        }
    }

    /// The predicted size at `q`, if anything was observed.
    pub fn predict(&self, q: Quality) -> Option<f64> {
        let (q0, s0) = self.reference?;
        Some(s0 * (-self.slope * (f64::from(q.index()) - f64::from(q0))).exp())
    }

    /// The two options for a `budget` of bytes within `[lo, hi]`: the finest quantizer whose
    /// predicted size fits, and the one whose predicted size is half of that (at least one
    /// step and at most `max_gap` coarser). `None` before anything was observed.
    pub fn options(
        &self,
        budget: usize,
        lo: Quality,
        hi: Quality,
        max_gap: u8,
    ) -> Option<(Quality, Quality)> {
        let (q0, s0) = self.reference?;
        let budget = (budget as f64).max(1.0);
        // size(q) <= budget  <=>  q >= q0 + ln(s0 / budget) / k
        let q = f64::from(q0) + (s0 / budget).ln() / self.slope;
        let better = Quality::clamped(q.ceil().clamp(-1.0, 200.0) as i32, lo, hi);
        let gap = (std::f64::consts::LN_2 / self.slope)
            .round()
            .clamp(1.0, f64::from(max_gap.max(1)));
        let worse = Quality::clamped(i32::from(better.index()) + gap as i32, lo, hi);
        Some((better, worse))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(i: u8) -> Quality {
        Quality::new(i).unwrap()
    }

    #[test]
    fn the_finest_fitting_quantizer_and_one_at_half_the_size() {
        let mut m = SizeModel::default();
        assert!(m.options(1000, q(3), q(127), 23).is_none());
        // Sizes halve every 10 steps: 8000 B at q20, 4000 at q30.
        for _ in 0..50 {
            m.observe(&[(q(20), 8000), (q(30), 4000)]);
        }
        assert!((m.predict(q(40)).unwrap() - 2000.0).abs() < 20.0);
        let (better, worse) = m.options(2000, q(3), q(127), 23).unwrap();
        assert!((39..=41).contains(&better.index()), "{better:?}");
        assert_eq!(worse.index(), better.index() + 10);
        // A budget above the finest's size: the finest allowed.
        let (better, _) = m.options(10_000_000, q(3), q(127), 23).unwrap();
        assert_eq!(better, q(3));
        // No budget at all: the coarsest.
        let (better, worse) = m.options(0, q(3), q(127), 23).unwrap();
        assert_eq!((better, worse), (q(127), q(127)));
    }

    #[test]
    fn implausible_slopes_are_ignored() {
        let mut m = SizeModel::default();
        m.observe(&[(q(20), 8000), (q(21), 100)]);
        assert_eq!(m.slope, INITIAL_SLOPE);
        m.observe(&[(q(20), 0), (q(40), 100)]);
        assert_eq!(m.slope, INITIAL_SLOPE);
    }
}
