//! Sprout-EWMA: the same receiver loop and sender, with the stochastic forecast replaced by
//! an exponentially weighted moving average of the per-tick count that "simply predicts that
//! the link will continue at that speed for the next eight ticks" (branch `ewma-noforecast`).
//!
//! Deviation: the original averages the fractional count, starting at 0, so a sender whose
//! first window is 0 sends only tiny heartbeats and never gets a non-zero forecast. Here an
//! observed tick counts as [`crate::observed_count`] does for Sprout (any arrival is at least
//! one packet), which lets a one-way flow start; above one packet per tick the two agree
//! within rounding.

use crate::config::ForecastConfig;
use crate::forecaster::{observed_count, DeliveryForecast, Forecaster, Observation};

/// The EWMA forecaster.
#[derive(Debug, Clone)]
pub struct EwmaForecaster {
    gain: f64,
    ewma: f64,
    horizon: usize,
    tick_secs: f64,
}

impl EwmaForecaster {
    /// Starts at 0 packets per tick.
    pub fn new(config: &ForecastConfig) -> EwmaForecaster {
        EwmaForecaster {
            gain: config.ewma_gain,
            ewma: 0.0,
            horizon: config.horizon_ticks as usize,
            tick_secs: config.tick_secs(),
        }
    }

    /// Packets per tick, averaged.
    pub fn per_tick(&self) -> f64 {
        self.ewma
    }
}

impl Forecaster for EwmaForecaster {
    fn advance(&mut self, observed: Observation) {
        let update = |ewma: f64, count: f64| {
            let k = f64::from(observed_count(count));
            (1.0 - self.gain) * ewma + self.gain * k
        };
        self.ewma = match observed {
            Observation::Skipped => self.ewma,
            Observation::Exact(count) => update(self.ewma, count),
            // The link could take at least `count`: only a rise is learned.
            Observation::AtLeast(count) => self.ewma.max(update(self.ewma, count)),
        };
    }

    fn forecast(&mut self) -> DeliveryForecast {
        let counts = (1..=self.horizon)
            .map(|i| (self.ewma * i as f64).min(u32::MAX as f64) as u32)
            .collect();
        DeliveryForecast { counts }
    }

    fn name(&self) -> &'static str {
        "sprout-ewma"
    }

    fn mean_rate(&self) -> f64 {
        self.ewma / self.tick_secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_to_the_steady_rate_and_forecasts_it_linearly() {
        let mut f = EwmaForecaster::new(&ForecastConfig::default());
        assert_eq!(f.forecast().counts, [0; 8]);
        for _ in 0..200 {
            f.advance(Observation::Exact(10.0));
        }
        assert_eq!(f.forecast().counts, [9, 19, 29, 39, 49, 59, 69, 79]);
        // Unobserved ticks change nothing; an observed empty tick decays by 1/8.
        f.advance(Observation::Skipped);
        assert!((f.per_tick() - 10.0).abs() < 1e-6);
        f.advance(Observation::Exact(0.0));
        assert!((f.per_tick() - 8.75).abs() < 1e-6);
        assert!((f.mean_rate() - 437.5).abs() < 1e-3);
    }

    #[test]
    fn a_censored_tick_only_raises_the_average() {
        let mut f = EwmaForecaster::new(&ForecastConfig::default());
        for _ in 0..100 {
            f.advance(Observation::Exact(8.0));
        }
        f.advance(Observation::AtLeast(1.0));
        assert!((f.per_tick() - 8.0).abs() < 1e-3);
        f.advance(Observation::AtLeast(16.0));
        assert!((f.per_tick() - 9.0).abs() < 1e-3);
    }

    #[test]
    fn a_heartbeat_alone_starts_the_average() {
        let mut f = EwmaForecaster::new(&ForecastConfig::default());
        f.advance(Observation::Exact(0.02));
        assert!(f.per_tick() > 0.1);
    }
}
