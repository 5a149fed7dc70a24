//! The forecast tables: for each horizon and each rate cell, the distribution of the number
//! of packets delivered over the next `h` ticks, built once per process and shared.
//!
//! As in the original (`processforecaster.cc`): each component starts certain at one cell;
//! per tick it is normalised, its per-tick count distribution (Poisson at each cell's rate,
//! counts `0..max_arrivals_per_tick`, the rest truncated) is convolved into the running
//! cumulative distribution, and it evolves one tick without observation. Horizon `h`'s table
//! is the prefix of the same walk, so all horizons come from one pass per component (the
//! original rebuilt each horizon from scratch; the tables are the same). Rows do not sum to
//! one (the truncation), as in the original.

use std::sync::{Arc, Mutex, OnceLock};

use crate::belief::RateBelief;
use crate::config::ForecastConfig;
use crate::evolve::Transition;
use crate::grid::{poisson, RateGrid};

/// One horizon's table, stored count-major (`values[c * cells + j]`) so a quantile walks
/// contiguous memory.
#[derive(Debug, Clone)]
struct HorizonTable {
    counts: usize,
    values: Vec<f64>,
}

/// The model a forecaster needs: grid, per-tick kernel and the cumulative-delivery tables.
/// Build it through [`ForecastModel::shared`] to pay its cost once per process.
#[derive(Debug, Clone)]
pub struct ForecastModel {
    grid: RateGrid,
    transition: Transition,
    tick_secs: f64,
    /// Expected packets per tick at each cell's rate, and their logarithms.
    means: Vec<f64>,
    ln_means: Vec<f64>,
    tables: Vec<HorizonTable>,
}

/// The parameters the tables depend on (the confidence and packet size do not).
#[derive(Debug, Clone, Copy, PartialEq)]
struct ModelKey {
    tick_secs: f64,
    max_rate: f64,
    bins: u32,
    sigma: f64,
    escape: f64,
    max_arrivals: u32,
    horizon: u32,
}

impl ModelKey {
    fn of(c: &ForecastConfig) -> ModelKey {
        ModelKey {
            tick_secs: c.tick_secs(),
            max_rate: c.max_rate,
            bins: c.bins,
            sigma: c.sigma,
            escape: c.outage_escape_rate,
            max_arrivals: c.max_arrivals_per_tick,
            horizon: c.horizon_ticks,
        }
    }
}

/// Models built so far, by the parameters they were built from.
type ModelCache = Mutex<Vec<(ModelKey, Arc<ForecastModel>)>>;

/// Models built so far in this process (a handful at most: one per parameter set swept).
static MODELS: OnceLock<ModelCache> = OnceLock::new();

impl ForecastModel {
    /// The model for `config`, built on first use and shared by every later caller in the
    /// process (building the default one takes a fraction of a second in a release build).
    pub fn shared(config: &ForecastConfig) -> Arc<ForecastModel> {
        let key = ModelKey::of(config);
        let models = MODELS.get_or_init(|| Mutex::new(Vec::new()));
        // A poisoned lock only means another thread panicked while building; the list
        // itself is always consistent, so carry on with it.
        let mut models = models.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, m)) = models.iter().find(|(k, _)| *k == key) {
            return m.clone();
        }
        let model = Arc::new(ForecastModel::build(config));
        models.push((key, model.clone()));
        model
    }

    /// Builds the model for `config` (prefer [`ForecastModel::shared`]).
    pub fn build(config: &ForecastConfig) -> ForecastModel {
        let grid = RateGrid::new(config.max_rate, config.bins);
        let tick_secs = config.tick_secs();
        let transition = Transition::new(
            &grid,
            config.sigma,
            config.outage_escape_rate,
            tick_secs,
            config.max_rate,
            config.bins,
        );
        let cells = grid.cells();
        let arrivals = config.max_arrivals_per_tick as usize;
        // per_tick[l * arrivals + c]: probability of c arrivals in a tick at cell l's rate.
        let per_tick: Vec<f64> = (0..cells)
            .flat_map(|l| {
                let mean = grid.midpoint(l) * tick_secs;
                (0..arrivals).map(move |c| poisson(c as u32, mean))
            })
            .collect();
        let horizon = config.horizon_ticks as usize;
        let mut tables: Vec<HorizonTable> = (1..=horizon)
            .map(|h| {
                let counts = (arrivals - 1) * h + 1;
                HorizonTable {
                    counts,
                    values: vec![0.0; counts * cells],
                }
            })
            .collect();
        let mut tick = vec![0.0; arrivals];
        for j in 0..cells {
            let mut component = RateBelief::certain(cells, j);
            let mut acc = vec![1.0];
            for table in tables.iter_mut() {
                component.normalize();
                tick.iter_mut().for_each(|t| *t = 0.0);
                for (l, &p) in component.pmf().iter().enumerate() {
                    if p == 0.0 {
                        continue;
                    }
                    let row = &per_tick[l * arrivals..(l + 1) * arrivals];
                    for (t, q) in tick.iter_mut().zip(row) {
                        *t += p * q;
                    }
                }
                acc = convolve(&acc, &tick);
                debug_assert_eq!(acc.len(), table.counts);
                for (c, v) in acc.iter().enumerate() {
                    table.values[c * cells + j] = *v;
                }
                component.evolve(&transition);
            }
        }
        let means: Vec<f64> = (0..cells).map(|i| grid.midpoint(i) * tick_secs).collect();
        let ln_means = means.iter().map(|m| m.ln()).collect();
        ForecastModel {
            grid,
            transition,
            tick_secs,
            means,
            ln_means,
            tables,
        }
    }

    /// The rate grid.
    pub fn grid(&self) -> &RateGrid {
        &self.grid
    }

    /// The per-tick kernel.
    pub fn transition(&self) -> &Transition {
        &self.transition
    }

    /// The tick in seconds.
    pub fn tick_secs(&self) -> f64 {
        self.tick_secs
    }

    /// Expected packets per tick at each cell's rate, and their logarithms.
    pub fn means(&self) -> (&[f64], &[f64]) {
        (&self.means, &self.ln_means)
    }

    /// Number of horizons (ticks forecast).
    pub fn horizon(&self) -> usize {
        self.tables.len()
    }

    /// Probability, under `table[h][cell]`, of exactly `count` packets in the next `h`
    /// ticks (`h` from 1); 0 outside the table.
    pub fn probability(&self, h: usize, cell: usize, count: usize) -> f64 {
        let cells = self.grid.cells();
        match self.tables.get(h.wrapping_sub(1)) {
            Some(t) if count < t.counts && cell < cells => t.values[count * cells + cell],
            _ => 0.0,
        }
    }

    /// The smallest count whose cumulative probability under the mixture `pmf` reaches
    /// `quantile`, for horizon `h` (from 1); the table's length if it never does (the rows
    /// sum to less than one).
    pub fn lower_quantile(&self, h: usize, pmf: &[f64], quantile: f64) -> u32 {
        let cells = self.grid.cells();
        let Some(table) = self.tables.get(h.wrapping_sub(1)) else {
            return 0;
        };
        let mut sum = 0.0;
        for c in 0..table.counts {
            let column = &table.values[c * cells..(c + 1) * cells];
            sum += column.iter().zip(pmf).map(|(v, p)| v * p).sum::<f64>();
            if sum >= quantile {
                return c as u32;
            }
        }
        table.counts as u32
    }
}

fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; a.len() + b.len() - 1];
    for (i, x) in a.iter().enumerate() {
        if *x == 0.0 {
            continue;
        }
        for (o, y) in out[i..].iter_mut().zip(b) {
            *o += x * y;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_the_originals_shape_and_row_sums() {
        let m = ForecastModel::shared(&ForecastConfig::default());
        assert_eq!(m.horizon(), 8);
        assert_eq!(m.grid().cells(), 257);
        // Sizes 30, 59, ..., 233: 257 x sum(29h + 1) doubles in all.
        let total: usize = m.tables.iter().map(|t| t.values.len()).sum();
        assert_eq!(total, 270_364);
        let row_sum = |h: usize, j: usize| (0..240).map(|c| m.probability(h, j, c)).sum::<f64>();
        // Rows of low-rate cells sum to one; the top cells lose the truncated tail
        // (the notes: worst 0.978 at h = 1, 0.869 at h = 8).
        assert!((row_sum(1, 10) - 1.0).abs() < 1e-9);
        assert!(
            (row_sum(1, 256) - 0.978).abs() < 0.005,
            "{}",
            row_sum(1, 256)
        );
        assert!(
            (row_sum(8, 256) - 0.869).abs() < 0.01,
            "{}",
            row_sum(8, 256)
        );
        // The outage cell delivers nothing in the next tick.
        assert!((m.probability(1, 0, 0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn one_model_per_parameter_set_per_process() {
        let a = ForecastModel::shared(&ForecastConfig::default());
        let b = ForecastModel::shared(&ForecastConfig {
            confidence: 0.5,
            ..Default::default()
        });
        assert!(
            Arc::ptr_eq(&a, &b),
            "the confidence does not change the tables"
        );
        let c = ForecastModel::shared(&ForecastConfig {
            horizon_ticks: 4,
            ..Default::default()
        });
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.horizon(), 4);
    }
}
