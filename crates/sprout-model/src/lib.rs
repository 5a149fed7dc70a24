//! Sprout's forecast of a cellular link (Winstein, Sivaraman and Balakrishnan, "Stochastic
//! Forecasts Achieve High Throughput and Low Delay over Cellular Networks", NSDI 2013),
//! sans-IO: no clock, socket or thread inside; the caller says when time has passed.
//!
//! Sprout models a link's deliveries as a Poisson process whose rate follows Brownian motion,
//! with a sticky outage state. The receiver infers the rate's distribution tick by tick
//! (20 ms) from what arrives and forecasts, at the 5th percentile, the cumulative number of
//! packets the link will deliver over the next eight ticks; the sender sends only what that
//! forecast says drains within 100 ms, less what it believes is already queued.
//!
//! ```text
//!  receiver                                           sender
//!  ArrivalObserver ── on_arrival(now, bytes, ttn)     SenderWindow ── on_sent(bytes)
//!   ├ Forecaster (SproutForecaster | EwmaForecaster)   ├ on_forecast(now, tick, received_or_lost, counts)
//!   └ forecast(now) ── piggybacked on feedback ──────▶ └ window(now) -> bytes safe to send
//!  ReceivedOrLost ◀── (seq, throwaway window) ─────── SendLog
//! ```
//!
//! Modules, one concept each: [`config`] (every parameter, the paper's defaults, the packet
//! unit), [`grid`] (the rate grid), [`evolve`] (the per-tick kernel), [`belief`] (inference
//! over the grid), [`tables`] (the cumulative-delivery tables, built once per process),
//! [`forecaster`] (the interface and Sprout's forecaster), [`ewma`] (Sprout-EWMA),
//! [`observer`] (the receiver's tick loop), [`window`] (the sender's queue estimate and
//! window), [`accounting`] (received-or-lost bytes and the throwaway window).
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only; the Sprout scheme's
//! endpoints in `salsify-baselines` and the Salsify transport's forecast budget build on it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod accounting;
pub mod belief;
pub mod config;
pub mod evolve;
pub mod ewma;
pub mod forecaster;
pub mod grid;
pub mod observer;
pub mod tables;
pub mod window;

pub use accounting::{ReceivedOrLost, SendLog, REORDER_LIMIT};
pub use config::{ConfigError, ForecastConfig};
pub use ewma::EwmaForecaster;
pub use forecaster::{observed_count, DeliveryForecast, Forecaster, Observation, SproutForecaster};
pub use observer::{ArrivalObserver, TickForecast};
pub use tables::ForecastModel;
pub use window::{DrainRule, SenderWindow};

/// The forecaster a scheme runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForecasterKind {
    /// Sprout's stochastic forecast.
    #[default]
    Sprout,
    /// Sprout-EWMA.
    Ewma,
}

impl ForecasterKind {
    /// A fresh forecaster of this kind.
    pub fn build(self, config: &ForecastConfig) -> Box<dyn Forecaster> {
        match self {
            ForecasterKind::Sprout => Box::new(SproutForecaster::new(config)),
            ForecasterKind::Ewma => Box::new(EwmaForecaster::new(config)),
        }
    }

    /// The forecast a sender starts from before any feedback: its own local receiver's
    /// after the original's 1000 ms start-up clock (49 unobserved ticks), as upstream does.
    pub fn initial_forecast(self, config: &ForecastConfig) -> Vec<u32> {
        let mut f = self.build(config);
        for _ in 0..49 {
            f.advance(Observation::Skipped);
        }
        f.forecast().counts
    }
}
