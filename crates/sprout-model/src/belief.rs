//! The receiver's belief about the link's current rate: a probability mass over the grid.
//!
//! Per tick the original evolves, observes, and normalises only when a forecast is asked
//! for, which underflows to 0/0 within seconds of steady traffic (8 s at 10 packets per
//! tick) or at once on a large burst. Here [`RateBelief::observe`] scales the likelihoods by
//! their largest value (the posterior is scale-free, so nothing else changes) and the
//! observer normalises every tick: no NaN and no zero mass however long it runs.

use crate::evolve::Transition;
use crate::grid::{ln_poisson, RateGrid};

/// ln P(N >= k) for N Poisson with mean `m`, accurate in both tails.
fn ln_tail(k: u32, m: f64) -> f64 {
    if m <= 0.0 {
        return if k == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if f64::from(k) > m {
        // Sum the terms from k up: each is the last times m / (c + 1), falling fast.
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        let mut c = f64::from(k);
        while term > 1e-17 * sum {
            c += 1.0;
            term *= m / c;
            sum += term;
        }
        ln_poisson(k, m) + sum.ln()
    } else {
        let below: f64 = (0..k).map(|c| ln_poisson(c, m).exp()).sum();
        (1.0 - below).max(f64::MIN_POSITIVE).ln()
    }
}

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

    /// Bayes' rule for a censored tick: the sender went idle within it, so the link could
    /// have delivered *at least* `k` packets (likelihood `P(N >= k)` at each cell's rate).
    /// Not normalised; scaled like [`RateBelief::observe`].
    pub fn observe_at_least(&mut self, means: &[f64], k: u32) {
        if k == 0 {
            return;
        }
        let ln: Vec<f64> = means.iter().map(|&m| ln_tail(k, m)).collect();
        let top = (0..self.pmf.len())
            .filter(|&i| self.pmf[i] > 0.0)
            .map(|i| ln[i])
            .fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            self.reset();
            return;
        }
        for (p, l) in self.pmf.iter_mut().zip(&ln) {
            *p *= (l - top).exp();
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
        let m: f64 = (0..self.pmf.len())
            .map(|i| self.pmf[i] * grid.midpoint(i))
            .sum();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::poisson;

    #[test]
    fn the_tail_matches_its_definition_on_both_sides_of_the_mean() {
        for (k, m) in [(1, 0.5), (3, 10.0), (30, 10.0), (12, 12.0), (200, 20.0)] {
            let direct: f64 = (k..k + 400).map(|c| poisson(c, m)).sum();
            let ours = ln_tail(k, m).exp();
            assert!(
                (ours - direct).abs() <= 1e-9 * direct.max(1e-300),
                "{k} {m}: {ours} {direct}"
            );
        }
        assert_eq!(ln_tail(0, 3.0), 0.0);
        assert_eq!(ln_tail(2, 0.0), f64::NEG_INFINITY);
    }
}
