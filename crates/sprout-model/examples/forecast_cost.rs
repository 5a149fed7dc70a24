//! What Sprout's forecaster costs on this machine: building the tables (once per process)
//! and one tick of inference plus one forecast, as a share of one core.
//!
//! `cargo run --release -p salsify-sprout-model --example forecast_cost`

use std::time::Instant;

use salsify_sprout_model::{ForecastConfig, ForecastModel, Forecaster, SproutForecaster};

fn main() {
    let config = ForecastConfig::default();
    let started = Instant::now();
    let model = ForecastModel::build(&config);
    let build = started.elapsed();
    // The shared copy the forecasters use (built again here: the one above is not cached).
    let _shared = ForecastModel::shared(&config);
    println!(
        "tables: {} horizons x {} cells, built in {:.3} s",
        model.horizon(),
        model.grid().cells(),
        build.as_secs_f64()
    );

    let mut f = SproutForecaster::new(&config);
    let ticks = 20_000u32;
    // A varying load: 0..20 packets per tick, so the forecast's quantile walk varies too.
    let counts: Vec<f64> = (0..ticks)
        .map(|i| f64::from((i * 7 + i / 50) % 21))
        .collect();
    let started = Instant::now();
    let mut checksum = 0u64;
    for &k in &counts {
        f.advance(salsify_sprout_model::Observation::Exact(k));
        checksum += u64::from(f.forecast().counts[7]);
    }
    let per_tick = started.elapsed().as_secs_f64() / f64::from(ticks);
    let tick = config.tick_secs();
    println!(
        "per tick (evolve + observe + normalise + forecast): {:.1} us = {:.2} % of one core at one tick per {:.0} ms (checksum {checksum})",
        per_tick * 1e6,
        100.0 * per_tick / tick,
        tick * 1e3
    );
}
