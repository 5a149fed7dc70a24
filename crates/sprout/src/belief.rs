//! The receiver's belief about the link's current rate: a probability mass over the grid.
//!
//! Per tick the original evolves, observes, and normalises only when a forecast is asked
//! for, which underflows to 0/0 within seconds of steady traffic (8 s at 10 packets per
//! tick) or at once on a large burst. Here [`RateBelief::observe`] scales the likelihoods by
//! their largest value (the posterior is scale-free, so nothing else changes) and the
//! observer normalises every tick: no NaN and no zero mass however long it runs.

use crate::evolve::Transition;
use crate::grid::RateGrid;

/// A probability mass over the cells of a [`RateGrid`].
#[derive(Debug, Clone, PartialEq)]
pub struct RateBelief {
    pmf: Vec<f64>,
    scratch: Vec<f64>,
}

impl RateBelief {
    /// The uniform prior over `cells` cells.
    pub fn uniform(cells: usize) -> RateBelief {
        RateBelief {
            pmf: vec![1.0 / cells as f64; cells],
            scratch: vec![0.0; cells],
        }
    }

    /// All mass on one cell (the forecast tables' components).
    pub fn certain(cells: usize, cell: usize) -> RateBelief {
        let mut b = RateBelief {
            pmf: vec![0.0; cells],
            scratch: vec![0.0; cells],
        };
        b.pmf[cell.min(cells - 1)] = 1.0;
        b
    }

    /// The mass per cell (normalised if [`RateBelief::normalize`] was called last).
    pub fn pmf(&self) -> &[f64] {
        &self.pmf
    }

    /// One tick of the rate's evolution (not normalised).
    pub fn evolve(&mut self, transition: &Transition) {
        transition.apply(&self.pmf, &mut self.scratch);
        std::mem::swap(&mut self.pmf, &mut self.scratch);
    }

    /// Bayes' rule for `k` packets seen in one tick, given each cell's expected count per
    /// tick (`means`) and its logarithm (not normalised; scaled so the most likely cell
    /// keeps its mass). The Poisson's `ln k!` is the same for every cell and cancels.
    pub fn observe(&mut self, means: &[f64], ln_means: &[f64], k: u32) {
        let kf = f64::from(k);
        let ln_likelihood = |i: usize| match (means[i] > 0.0, k) {
            (true, _) => kf * ln_means[i] - means[i],
            (false, 0) => 0.0,
            (false, _) => f64::NEG_INFINITY,
        };
        let top = (0..self.pmf.len())
            .filter(|&i| self.pmf[i] > 0.0)
            .map(ln_likelihood)
            .fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            // No cell with mass can explain k: the prior is refuted; start again from it.
            self.reset();
            return;
        }
        for i in 0..self.pmf.len() {
            self.pmf[i] *= (ln_likelihood(i) - top).exp();
        }
    }

    /// Scales the mass to sum to one; a belief with no finite mass left starts again from
    /// the uniform prior.
    pub fn normalize(&mut self) {
        let sum: f64 = self.pmf.iter().sum();
        if sum > 0.0 && sum.is_finite() {
            self.pmf.iter_mut().for_each(|p| *p /= sum);
        } else {
            self.reset();
        }
    }

    /// Mean rate (packets/s) of the normalised belief.
    pub fn mean_rate(&self, grid: &RateGrid) -> f64 {
        let sum: f64 = self.pmf.iter().sum();
        let m: f64 = (0..self.pmf.len()).map(|i| self.pmf[i] * grid.midpoint(i)).sum();
        if sum > 0.0 {
            m / sum
        } else {
            0.0
        }
    }

    fn reset(&mut self) {
        let n = self.pmf.len() as f64;
        self.pmf.iter_mut().for_each(|p| *p = 1.0 / n);
    }
}
