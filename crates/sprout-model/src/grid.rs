//! The grid of link rates the belief is held over (`SampledFunction` in the original).
//!
//! `bins` cells of width `w = max_rate / bins` plus the code's extra top cell: 257 cells by
//! default. Cell 0 is the outage state, rate exactly 0; cell `i >= 1` has midpoint
//! `(i + 0.5) w`, so the top cell's is just above `max_rate`. The outer edges are +-1e6 so a
//! Gaussian's tails fall into the end cells.

/// Edge used for the outermost cells (the original's `BIG`).
const BIG: f64 = 1e6;

/// The rate grid.
#[derive(Debug, Clone, PartialEq)]
pub struct RateGrid {
    width: f64,
    cells: usize,
}

impl RateGrid {
    /// The grid of `bins` bins up to `max_rate` (packets/s).
    pub fn new(max_rate: f64, bins: u32) -> RateGrid {
        let width = max_rate / f64::from(bins);
        // The original sizes its vector as int(max / width) + 1.
        let cells = (max_rate / width) as usize + 1;
        RateGrid { width, cells }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The rate a cell stands for (0 for the outage cell).
    pub fn midpoint(&self, cell: usize) -> f64 {
        if cell == 0 {
            0.0
        } else {
            (cell as f64 + 0.5) * self.width
        }
    }

    /// Lower edge of a cell (-1e6 for cell 0).
    pub fn lower(&self, cell: usize) -> f64 {
        if cell == 0 {
            -BIG
        } else {
            cell as f64 * self.width
        }
    }

    /// Upper edge of a cell (+1e6 for the top cell).
    pub fn upper(&self, cell: usize) -> f64 {
        if cell + 1 >= self.cells {
            BIG
        } else {
            (cell + 1) as f64 * self.width
        }
    }

    /// The cell holding rate `x`: truncation toward zero, clamped to the grid.
    pub fn cell_of(&self, x: f64) -> usize {
        let i = (x / self.width).trunc();
        if i.is_nan() || i <= 0.0 {
            0
        } else {
            (i as usize).min(self.cells - 1)
        }
    }
}

/// ln of the Poisson probability of `k` arrivals at mean `mean` (`-inf` when impossible).
pub fn ln_poisson(k: u32, mean: f64) -> f64 {
    if mean <= 0.0 {
        return if k == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    let k = f64::from(k);
    k * mean.ln() - mean - libm::lgamma(k + 1.0)
}

/// The Poisson probability of `k` arrivals at mean `mean`.
pub fn poisson(k: u32, mean: f64) -> f64 {
    ln_poisson(k, mean).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grid_has_257_cells_with_an_exact_outage_cell() {
        let g = RateGrid::new(1000.0, 256);
        assert_eq!(g.cells(), 257);
        assert_eq!(g.midpoint(0), 0.0);
        assert!((g.midpoint(1) - 1.5 * 3.90625).abs() < 1e-12);
        assert!((g.midpoint(256) - 1001.953125).abs() < 1e-9);
        assert_eq!((g.lower(0), g.upper(256)), (-1e6, 1e6));
        assert_eq!(g.upper(0), g.lower(1));
        assert_eq!(g.cell_of(-5.0), 0);
        assert_eq!(g.cell_of(3.9), 0);
        assert_eq!(g.cell_of(3.91), 1);
        assert_eq!(g.cell_of(5e6), 256);
        assert_eq!(g.cell_of(f64::NAN), 0);
    }

    #[test]
    fn poisson_matches_its_definition() {
        assert_eq!(poisson(0, 0.0), 1.0);
        assert_eq!(poisson(3, 0.0), 0.0);
        let p = poisson(2, 1.5);
        assert!((p - 1.5f64.powi(2) / 2.0 * (-1.5f64).exp()).abs() < 1e-12);
        let total: f64 = (0..200).map(|k| poisson(k, 20.0)).sum();
        assert!((total - 1.0).abs() < 1e-9);
        // No overflow for a burst of 300 packets in one tick.
        assert!(ln_poisson(300, 20.0).is_finite());
    }
}
