//! One tick of the rate's evolution: Brownian motion plus a sticky outage state.
//!
//! The kernel is constant for a given tick, so it is built once (as a band of weights per
//! source cell) and shared. As in the original (`process.cc`):
//! - the Gaussian CDF is a table of `bins x 128` samples over +-`max_rate`, looked up at the
//!   nearest sample without interpolation;
//! - from each cell `j` mass moves to the cells within +-5 standard deviations of its rate,
//!   each getting `Phi(upper - m_j) - Phi(lower - m_j)`;
//! - mass leaving the outage cell is scaled by the escape probability `1 - e^(-tick x rate)`,
//!   and mass staying in it by its complement. This does not conserve the outage cell's
//!   mass (it keeps about 0.55 of it per tick); the original does the same and the published
//!   results depend on it, so it is kept.

use crate::grid::RateGrid;

/// A sampled standard-normal CDF scaled by a standard deviation (the original's cache).
struct GaussianCdf {
    min: f64,
    width: f64,
    values: Vec<f64>,
}

impl GaussianCdf {
    fn new(stddev: f64, range: f64, samples: usize) -> GaussianCdf {
        let width = 2.0 * range / samples as f64;
        let cells = (2.0 * range / width) as usize + 1;
        let values = (0..cells)
            .map(|i| {
                let x = -range + (i as f64 + 0.5) * width;
                0.5 * libm::erfc(-x / (stddev * std::f64::consts::SQRT_2))
            })
            .collect();
        GaussianCdf {
            min: -range,
            width,
            values,
        }
    }

    fn at(&self, x: f64) -> f64 {
        let i = ((x - self.min) / self.width).trunc();
        let i = if i.is_nan() || i <= 0.0 {
            0
        } else {
            (i as usize).min(self.values.len() - 1)
        };
        self.values[i]
    }
}

/// The per-tick transition kernel: for each source cell, the first destination cell and the
/// weights to it and the cells after.
#[derive(Debug, Clone)]
pub struct Transition {
    bands: Vec<(usize, Vec<f64>)>,
}

impl Transition {
    /// The kernel for one tick of `tick_secs` on `grid`.
    pub fn new(
        grid: &RateGrid,
        sigma: f64,
        escape_rate: f64,
        tick_secs: f64,
        max_rate: f64,
        bins: u32,
    ) -> Transition {
        let stddev = sigma * tick_secs.sqrt();
        let cdf = GaussianCdf::new(stddev, max_rate, bins as usize * 128);
        let escape = 1.0 - (-tick_secs * escape_rate).exp();
        let bands = (0..grid.cells())
            .map(|j| {
                let m = grid.midpoint(j);
                let first = grid.cell_of(m - 5.0 * stddev);
                let last = grid.cell_of(m + 5.0 * stddev);
                let weights = (first..=last)
                    .map(|i| {
                        let w = cdf.at(grid.upper(i) - m) - cdf.at(grid.lower(i) - m);
                        let z = match (j, i) {
                            (0, 0) => 1.0 - escape,
                            (0, _) => escape,
                            _ => 1.0,
                        };
                        z * w
                    })
                    .collect();
                (first, weights)
            })
            .collect();
        Transition { bands }
    }

    /// `to = evolve(from)`; `to` is overwritten. No normalisation.
    pub fn apply(&self, from: &[f64], to: &mut [f64]) {
        to.iter_mut().for_each(|x| *x = 0.0);
        for (&p, (first, weights)) in from.iter().zip(&self.bands) {
            if p == 0.0 {
                continue;
            }
            for (t, w) in to[*first..].iter_mut().zip(weights) {
                *t += p * w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> (RateGrid, Transition) {
        let g = RateGrid::new(1000.0, 256);
        let t = Transition::new(&g, 200.0, 1.0, 0.02, 1000.0, 256);
        (g, t)
    }

    #[test]
    fn inner_cells_conserve_mass_and_the_outage_cell_keeps_about_055() {
        let (g, t) = kernel();
        let mut from = vec![0.0; g.cells()];
        let mut to = vec![0.0; g.cells()];
        from[128] = 1.0;
        t.apply(&from, &mut to);
        assert!((to.iter().sum::<f64>() - 1.0).abs() < 1e-3);
        // Spread symmetric about the source cell.
        assert!((to[120] - to[136]).abs() < 1e-3);
        from[128] = 0.0;
        from[0] = 1.0;
        t.apply(&from, &mut to);
        let kept: f64 = to.iter().sum();
        assert!((kept - 0.553).abs() < 0.01, "outage cell keeps {kept}");
    }
}
