//! The forecast interface and Sprout's stochastic forecaster behind it.

use std::sync::Arc;

use crate::belief::RateBelief;
use crate::config::ForecastConfig;
use crate::tables::ForecastModel;

/// What one tick showed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observation {
    /// Not observed (the sender said it would be idle): the rate only evolves.
    Skipped,
    /// Exactly this many packets (fractional) were delivered.
    Exact(f64),
    /// The sender went idle within the tick: the link could have delivered at least this
    /// many (the tick is application-limited, a censored observation).
    AtLeast(f64),
}

/// A forecast: `counts[i]` packets (in the config's packet units) will have been delivered
/// within `i + 1` ticks from the start of the tick it was made in. Cumulative, so
/// non-decreasing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeliveryForecast {
    /// Cumulative counts, one per tick of the horizon.
    pub counts: Vec<u32>,
}

/// Something that learns a link's delivery process one tick at a time and forecasts it.
/// Deterministic, no clock inside: the caller says when a tick has passed.
pub trait Forecaster: Send + std::fmt::Debug {
    /// One tick has passed, showing `observed`.
    fn advance(&mut self, observed: Observation);
    /// The forecast from the belief now.
    fn forecast(&mut self) -> DeliveryForecast;
    /// The forecaster's name (`sprout`, `sprout-ewma`), for logs.
    fn name(&self) -> &'static str;
    /// The mean rate believed now, packets per second (for logs).
    fn mean_rate(&self) -> f64;
}

/// The count an observation reports: rounded half up, except that any arrival at all counts
/// as one packet (the original's rule: "even one tiny packet" dispels an outage).
pub fn observed_count(count: f64) -> u32 {
    if count.is_nan() || count <= 0.0 {
        0
    } else if count < 1.0 {
        1
    } else {
        (count + 0.5).min(u32::MAX as f64) as u32
    }
}

/// Sprout's forecaster: Bayesian inference of a Poisson rate that follows Brownian motion
/// with a sticky outage state, forecasting the configured lower quantile of cumulative
/// deliveries over the horizon.
#[derive(Debug, Clone)]
pub struct SproutForecaster {
    model: Arc<ForecastModel>,
    belief: RateBelief,
    quantile: f64,
}

impl SproutForecaster {
    /// A forecaster with the uniform prior; its tables come from [`ForecastModel::shared`].
    pub fn new(config: &ForecastConfig) -> SproutForecaster {
        let model = ForecastModel::shared(config);
        let belief = RateBelief::uniform(model.grid().cells());
        SproutForecaster {
            model,
            belief,
            quantile: config.quantile(),
        }
    }

    /// The belief now.
    pub fn belief(&self) -> &RateBelief {
        &self.belief
    }
}

impl Forecaster for SproutForecaster {
    fn advance(&mut self, observed: Observation) {
        self.belief.evolve(self.model.transition());
        let (means, ln_means) = self.model.means();
        match observed {
            Observation::Skipped => {}
            Observation::Exact(count) => {
                self.belief.observe(means, ln_means, observed_count(count))
            }
            Observation::AtLeast(count) => {
                self.belief.observe_at_least(means, observed_count(count))
            }
        }
        self.belief.normalize();
    }

    fn forecast(&mut self) -> DeliveryForecast {
        let pmf = self.belief.pmf();
        let counts = (1..=self.model.horizon())
            .map(|h| self.model.lower_quantile(h, pmf, self.quantile))
            .collect();
        DeliveryForecast { counts }
    }

    fn name(&self) -> &'static str {
        "sprout"
    }

    fn mean_rate(&self) -> f64 {
        self.belief.mean_rate(self.model.grid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(steps: &[(usize, u32)]) -> Vec<u32> {
        let mut f = SproutForecaster::new(&ForecastConfig::default());
        for &(ticks, k) in steps {
            for _ in 0..ticks {
                f.advance(Observation::Exact(f64::from(k)));
            }
        }
        f.forecast().counts
    }

    // The vectors of SPROUT-NOTES 1.12 (uniform prior; per tick evolve, observe, normalise).
    #[test]
    fn the_prior_and_steady_traffic_give_the_notes_vectors() {
        assert_eq!(run(&[]), [1, 1, 3, 4, 5, 6, 8, 9]);
        assert_eq!(run(&[(1, 10)]), [4, 10, 16, 22, 28, 34, 40, 47]);
        assert_eq!(run(&[(30, 10)]), [5, 12, 20, 27, 35, 43, 51, 59]);
        assert_eq!(run(&[(30, 1)]), [0, 0, 0, 1, 1, 2, 3, 4]);
        assert_eq!(run(&[(30, 2)]), [0, 1, 2, 2, 4, 5, 6, 7]);
        assert_eq!(run(&[(30, 5)]), [2, 4, 8, 11, 14, 18, 21, 24]);
        assert_eq!(run(&[(30, 20)]), [12, 28, 44, 61, 77, 94, 111, 128]);
    }

    #[test]
    fn an_outage_collapses_the_forecast_and_recovery_follows_the_notes() {
        let steady = (30, 10);
        assert_eq!(run(&[steady, (1, 0)]), [4, 9, 15, 21, 27, 33, 38, 44]);
        assert_eq!(run(&[steady, (2, 0)]), [2, 6, 10, 13, 17, 21, 25, 29]);
        assert_eq!(run(&[steady, (3, 0)]), [1, 2, 4, 6, 8, 10, 12, 14]);
        assert_eq!(run(&[steady, (4, 0)]), [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(run(&[steady, (5, 0)]), [0; 8]);
        // The notes' recovery row matches an outage of 10 ticks (checked: after 5 zero ticks
        // the first tick of k = 10 gives [1, 3, 5, 7, 10, 12, 15, 17]).
        let out = (10, 0);
        assert_eq!(run(&[steady, out, (1, 10)]), [0, 2, 3, 4, 6, 7, 9, 11]);
        assert_eq!(run(&[steady, out, (5, 10)]), [2, 7, 11, 16, 21, 25, 30, 35]);
        assert_eq!(
            run(&[steady, out, (10, 10)]),
            [4, 10, 16, 22, 29, 35, 42, 49]
        );
        assert_eq!(
            run(&[steady, out, (30, 10)]),
            [5, 12, 20, 27, 35, 43, 51, 58]
        );
    }

    #[test]
    fn unobserved_ticks_drift_the_prior_upward_as_the_original_does() {
        let mut f = SproutForecaster::new(&ForecastConfig::default());
        for _ in 0..49 {
            f.advance(Observation::Skipped);
        }
        assert_eq!(f.forecast().counts, [2, 4, 7, 9, 12, 15, 17, 20]);
    }

    /// Ticks until the first-tick forecast is within one packet of the steady forecast at
    /// the new rate, after a step from `from` to `to` packets per tick.
    fn ticks_to_follow(from: u32, to: u32) -> usize {
        let target = run(&[(60, to)])[0];
        let mut f = SproutForecaster::new(&ForecastConfig::default());
        for _ in 0..60 {
            f.advance(Observation::Exact(f64::from(from)));
        }
        (1..=200)
            .find(|_| {
                f.advance(Observation::Exact(f64::from(to)));
                f.forecast().counts[0].abs_diff(target) <= 1
            })
            .unwrap_or(usize::MAX)
    }

    #[test]
    fn inference_follows_a_rate_step_within_a_few_ticks() {
        // Measured: up 5 -> 20 packets per tick in 13 ticks, down 20 -> 5 in 8; stated
        // bounds with a little room: 15 and 10 ticks (300 and 200 ms). Sprout follows a
        // drop faster than a rise, as its cautious quantile intends.
        let up = ticks_to_follow(5, 20);
        let down = ticks_to_follow(20, 5);
        assert!(up <= 15, "up-step took {up} ticks");
        assert!(down <= 10, "down-step took {down} ticks");
    }

    #[test]
    fn a_million_ticks_of_steady_traffic_leave_a_proper_belief() {
        let mut f = SproutForecaster::new(&ForecastConfig::default());
        for _ in 0..1_000_000 {
            f.advance(Observation::Exact(10.0));
        }
        let total: f64 = f.belief().pmf().iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "mass {total}");
        assert!(f.belief().pmf().iter().all(|p| p.is_finite() && *p >= 0.0));
        assert_eq!(f.forecast().counts, [5, 12, 20, 27, 35, 43, 51, 59]);
    }

    #[test]
    fn a_burst_of_300_packets_in_one_tick_leaves_a_proper_belief() {
        let mut f = SproutForecaster::new(&ForecastConfig::default());
        for _ in 0..30 {
            f.advance(Observation::Exact(10.0));
        }
        f.advance(Observation::Exact(300.0));
        let total: f64 = f.belief().pmf().iter().sum();
        assert!(
            (total - 1.0).abs() < 1e-9 && total.is_finite(),
            "mass {total}"
        );
        // The burst is far above the grid: the belief moves to its top (at least the
        // steady forecast of 20 packets per tick, whose first count is 12).
        let counts = f.forecast().counts;
        assert!(counts[0] >= 12, "{counts:?}");
        // And an impossible observation after certain outage does not poison it either.
        for _ in 0..50 {
            f.advance(Observation::Exact(0.0));
        }
        f.advance(Observation::Exact(1e9));
        assert!(f.belief().pmf().iter().all(|p| p.is_finite()));
    }

    #[test]
    fn an_application_limited_sender_does_not_talk_its_forecast_down() {
        // A sender putting 1 packet per tick on a link that could take 10: read as exact,
        // the forecast sinks to what was sent; read as "at least 1" it stays where the
        // prior and evolution put it.
        let mut exact = SproutForecaster::new(&ForecastConfig::default());
        let mut censored = SproutForecaster::new(&ForecastConfig::default());
        for _ in 0..100 {
            exact.advance(Observation::Exact(1.0));
            censored.advance(Observation::AtLeast(1.0));
        }
        assert_eq!(exact.forecast().counts, [0, 0, 0, 1, 1, 2, 3, 4]);
        let c = censored.forecast().counts;
        assert!(c[4] >= 10, "{c:?}");
        // Censored ticks never raise the belief above what exact ticks at the link's
        // rate then show.
        for _ in 0..30 {
            censored.advance(Observation::Exact(5.0));
        }
        assert_eq!(censored.forecast().counts, [2, 4, 8, 11, 14, 18, 21, 24]);
    }

    #[test]
    fn observed_counts_round_half_up_and_any_arrival_is_one() {
        assert_eq!(observed_count(0.0), 0);
        assert_eq!(observed_count(0.01), 1);
        assert_eq!(observed_count(1.49), 1);
        assert_eq!(observed_count(1.5), 2);
        assert_eq!(observed_count(f64::NAN), 0);
        assert_eq!(observed_count(-3.0), 0);
        assert_eq!(observed_count(1e300), u32::MAX);
    }
}
