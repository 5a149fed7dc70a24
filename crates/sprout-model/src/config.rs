//! The forecaster's parameters, with Sprout's published defaults.

use salsify_time::Duration;
use serde::{Deserialize, Serialize};

/// Sprout's model and forecast parameters (read from the original source: `receiver.hh`,
/// `receiver.cc`, `sproutconn.h`). Every default is the paper's.
///
/// **Units (a deliberate deviation).** The original counts 1400-byte payloads at the
/// receiver, converts with 1440 bytes at the sender and advances its sequence numbers by
/// payload + 50. Here one *packet unit* is [`ForecastConfig::packet_bytes`] wire bytes, by
/// default 1500: one delivery opportunity of the emulated link (Cellsim's and the Mahimahi
/// traces' MTU). The receiver counts, the sender converts and the queue estimate runs in that
/// one unit, so a forecast of `n` packets means `n` delivery opportunities.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ForecastConfig {
    /// Length of one tick of the model (ms in files). Default 20 ms.
    #[serde(with = "salsify_time::serde_units::millis")]
    pub tick: Duration,
    /// Top of the rate grid, in packet units per second. Default 1000.
    pub max_rate: f64,
    /// Number of rate bins; the grid has one more cell (the code's top cell). Default 256.
    pub bins: u32,
    /// Brownian motion of the rate, packets/s per sqrt(s). Default 200.
    pub sigma: f64,
    /// Rate at which the outage state is left, per second. Default 1.
    pub outage_escape_rate: f64,
    /// Per-tick counts at or above this are left out of the forecast tables. Default 30.
    pub max_arrivals_per_tick: u32,
    /// Ticks forecast ahead. Default 8 (160 ms).
    pub horizon_ticks: u32,
    /// Probability that at least the forecast count is delivered. Default 0.95 (the
    /// forecast is the 5th percentile).
    pub confidence: f64,
    /// Bytes in one packet unit (see the type's doc). Default 1500.
    pub packet_bytes: u32,
    /// Sprout-EWMA's weight of the newest tick. Default 1/8.
    pub ewma_gain: f64,
}

impl Default for ForecastConfig {
    fn default() -> Self {
        ForecastConfig {
            tick: Duration::from_millis(20),
            max_rate: 1000.0,
            bins: 256,
            sigma: 200.0,
            outage_escape_rate: 1.0,
            max_arrivals_per_tick: 30,
            horizon_ticks: 8,
            confidence: 0.95,
            packet_bytes: 1500,
            ewma_gain: 1.0 / 8.0,
        }
    }
}

/// A parameter out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("sprout forecast: {field} {why}")]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// What is wrong with it.
    pub why: &'static str,
}

fn check(ok: bool, field: &'static str, why: &'static str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError { field, why })
    }
}

impl ForecastConfig {
    /// Checks every field (ranges that keep the tables finite and small).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let tick_ms = self.tick.as_secs_f64() * 1e3;
        check(
            (1.0..=1000.0).contains(&tick_ms),
            "tick",
            "must be 1 to 1000 ms",
        )?;
        check(
            self.max_rate.is_finite() && self.max_rate > 0.0 && self.max_rate <= 1e5,
            "max_rate",
            "must be above 0 and at most 100000 packets/s",
        )?;
        check((4..=4096).contains(&self.bins), "bins", "must be 4 to 4096")?;
        check(
            self.sigma.is_finite() && self.sigma > 0.0 && self.sigma <= 1e5,
            "sigma",
            "must be above 0 and at most 100000",
        )?;
        check(
            self.outage_escape_rate.is_finite() && self.outage_escape_rate >= 0.0,
            "outage_escape_rate",
            "must be a finite rate >= 0",
        )?;
        check(
            (1..=1000).contains(&self.max_arrivals_per_tick),
            "max_arrivals_per_tick",
            "must be 1 to 1000",
        )?;
        check(
            (2..=64).contains(&self.horizon_ticks),
            "horizon_ticks",
            "must be 2 to 64",
        )?;
        check(
            self.confidence > 0.0 && self.confidence < 1.0,
            "confidence",
            "must be strictly between 0 and 1",
        )?;
        check(
            (64..=65_535).contains(&self.packet_bytes),
            "packet_bytes",
            "must be 64 to 65535",
        )?;
        check(
            self.ewma_gain > 0.0 && self.ewma_gain <= 1.0,
            "ewma_gain",
            "must be above 0 and at most 1",
        )
    }

    /// The lower quantile the forecast reports (1 - confidence).
    pub fn quantile(&self) -> f64 {
        1.0 - self.confidence
    }

    /// The tick in seconds.
    pub fn tick_secs(&self) -> f64 {
        self.tick.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_papers_and_valid() {
        let c = ForecastConfig::default();
        c.validate().unwrap();
        assert_eq!(c.tick, Duration::from_millis(20));
        assert_eq!(
            (c.bins, c.horizon_ticks, c.max_arrivals_per_tick),
            (256, 8, 30)
        );
        assert!((c.quantile() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn bad_values_name_their_field() {
        let bad = [
            ForecastConfig {
                confidence: 1.0,
                ..Default::default()
            },
            ForecastConfig {
                sigma: f64::NAN,
                ..Default::default()
            },
            ForecastConfig {
                horizon_ticks: 0,
                ..Default::default()
            },
            ForecastConfig {
                tick: Duration::ZERO,
                ..Default::default()
            },
        ];
        let fields: Vec<_> = bad
            .iter()
            .map(|c| c.validate().unwrap_err().field)
            .collect();
        assert_eq!(fields, ["confidence", "sigma", "horizon_ticks", "tick"]);
    }

    #[test]
    fn reads_from_toml_in_milliseconds() {
        let c: ForecastConfig = toml::from_str("tick = 10\nconfidence = 0.75").unwrap();
        assert_eq!(c.tick, Duration::from_millis(10));
        assert_eq!(c.confidence, 0.75);
        assert_eq!(c.bins, 256);
        assert!(toml::from_str::<ForecastConfig>("sigmaa = 1").is_err());
    }
}
