//! What the sender believes the link will deliver: the budget's two sources, as curves of
//! cumulative fragments over time (read by [`crate::rules::budget`]).
//!
//! - **EWMA** (the paper): one fragment every `tau`, the receiver's grace-corrected mean
//!   inter-arrival time.
//! - **Forecast** (`[salsify] budget = "forecast"`): the receiver's Sprout forecast of the
//!   link (see [`crate::link_forecast`]): at least `counts[i]` packet units delivered within
//!   `i + 1` ticks, with the receiver's confidence (95% by default). Beyond its horizon the
//!   last tick's increment continues. A falling link shows in the forecast within a tick or
//!   two, where an EWMA of 0.1 per packet needs many slow packets to follow it.
//!
//! The budget is what the curve delivers within `d` of the last ACK, less the fragments in
//! flight (sent beyond the newest one the receiver reported): while ACKs flow, "what drains
//! in the next `d`, less what is queued". When they stop, that budget freezes at the last
//! ACK's view (the paper's rule): nothing more is sent once `d` worth is out, and once the ACK
//! is overdue an outage is suspected and coarsest probes follow ([`crate::rules::outage`]).
//! (Counting the link as still draining while ACKs are overdue, `ack_stall = "drain"`, cost up
//! to 20% of p95 on links whose rate falls at once and was deleted in issue 37.)

use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::wire::AckForecast;

/// Where the sender's budget comes from (`[salsify] budget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum BudgetSource {
    /// The paper's: `MTU x (d / tau - N)` from the receiver's inter-arrival EWMA.
    #[default]
    Ewma,
    /// The receiver's Sprout forecast (bytes delivered within `d` with the receiver's
    /// confidence) less what is in flight. Until the first forecast arrives, the EWMA.
    Forecast,
}

/// The receiver's last forecast as the sender holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldForecast {
    /// When the ACK carrying it arrived (the curve starts here).
    pub received_at: Instant,
    /// Tick length.
    pub tick: Duration,
    /// Cumulative fragments within `1, 2, ...` ticks (converted from packet units).
    pub fragments: Vec<f64>,
}

impl HeldForecast {
    /// The forecast of `ack`, received at `now`, in fragments of `fragment_wire_bytes` (the
    /// payload plus the data header: what the receiver counts).
    pub fn new(
        now: Instant,
        forecast: &AckForecast,
        unit_bytes: u32,
        fragment_wire_bytes: usize,
    ) -> Self {
        let per_unit = f64::from(unit_bytes) / fragment_wire_bytes.max(1) as f64;
        HeldForecast {
            received_at: now,
            tick: forecast.tick,
            fragments: forecast
                .counts
                .iter()
                .map(|&c| f64::from(c) * per_unit)
                .collect(),
        }
    }

    /// Fragments delivered within `x` of the forecast's start: linear within each tick,
    /// and past the horizon at the last tick's increment.
    pub fn cumulative(&self, x: Duration) -> f64 {
        let tick = self.tick.as_secs_f64().max(1e-6);
        let ticks = x.as_secs_f64() / tick;
        let n = self.fragments.len();
        let at = |i: usize| if i == 0 { 0.0 } else { self.fragments[i - 1] };
        if n == 0 {
            return 0.0;
        }
        let whole = ticks.floor() as usize;
        if whole < n {
            let frac = ticks - whole as f64;
            return at(whole) + frac * (at(whole + 1) - at(whole));
        }
        let last_step = at(n) - at(n - 1);
        at(n) + (ticks - n as f64) * last_step
    }
}

/// The curve the budget reads.
#[derive(Debug, Clone, Copy)]
pub enum Curve<'a> {
    /// One fragment per `tau`.
    Ewma(Duration),
    /// The receiver's forecast.
    Forecast(&'a HeldForecast),
}

impl Curve<'_> {
    /// Fragments the link delivers between `from` and `to` (`to` before `from`: none).
    pub fn between(&self, from: Instant, to: Instant) -> f64 {
        if to <= from {
            return 0.0;
        }
        match self {
            Curve::Ewma(tau) => {
                to.saturating_duration_since(from).as_secs_f64() / tau.as_secs_f64().max(1e-6)
            }
            Curve::Forecast(f) => {
                let start = f.received_at;
                f.cumulative(to.saturating_duration_since(start))
                    - f.cumulative(from.saturating_duration_since(start))
            }
        }
    }
}

/// The budget in bytes: the whole fragments `deliverable` leaves beyond the `in_flight`
/// ones, times the fragment payload `mtu` (as the paper's formula counts whole fragments).
pub fn budget_bytes(deliverable: f64, in_flight: u64, mtu: usize) -> usize {
    let room = deliverable.floor() - in_flight as f64;
    if room.is_nan() || room <= 0.0 {
        return 0;
    }
    (room.min(1e9) as usize).saturating_mul(mtu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    fn forecast(counts: &[u16]) -> HeldForecast {
        HeldForecast::new(
            ms(1000),
            &AckForecast {
                tick: Duration::from_millis(20),
                counts: counts.to_vec(),
            },
            1500,
            1500,
        )
    }

    #[test]
    fn the_forecast_is_linear_within_ticks_and_continues_past_its_horizon() {
        let f = forecast(&[2, 6, 10]);
        assert_eq!(f.cumulative(Duration::ZERO), 0.0);
        assert_eq!(f.cumulative(Duration::from_millis(10)), 1.0);
        assert_eq!(f.cumulative(Duration::from_millis(30)), 4.0);
        assert_eq!(f.cumulative(Duration::from_millis(60)), 10.0);
        assert_eq!(f.cumulative(Duration::from_millis(80)), 14.0);
        let c = Curve::Forecast(&f);
        assert_eq!(c.between(ms(1010), ms(1030)), 3.0);
        assert_eq!(c.between(ms(1030), ms(1010)), 0.0);
    }

    #[test]
    fn packet_units_become_fragments_of_the_wire_size() {
        let f = HeldForecast::new(
            ms(0),
            &AckForecast {
                tick: Duration::from_millis(20),
                counts: vec![14],
            },
            1500,
            1442,
        );
        assert!((f.fragments[0] - 14.0 * 1500.0 / 1442.0).abs() < 1e-9);
    }

    #[test]
    fn budgets_count_whole_fragments_beyond_those_in_flight() {
        assert_eq!(budget_bytes(10.7, 3, 1400), 7 * 1400);
        assert_eq!(budget_bytes(2.0, 3, 1400), 0);
        assert_eq!(budget_bytes(f64::NAN, 0, 1400), 0);
    }
}
