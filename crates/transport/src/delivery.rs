//! What the sender believes the link will deliver: the budget's two sources, as curves of
//! cumulative fragments over time, and the drain the sender assumes while ACKs are silent.
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
//! ACK's view (the paper's rule, and [`AckStall::Probe`]): nothing more is sent once `d` worth
//! is out, and once the ACK is overdue an outage is suspected and coarsest probes follow.
//! Under [`AckStall::Drain`], once the ACK is overdue the sender counts the link as having
//! delivered at the curve's rate since, the rate halving every `stall_half_life`: an uplink
//! that stalls for seconds while the downlink delivers (common on cellular drives) then
//! costs far less quality, and a downlink that really died receives at most
//! `rate x half-life / ln 2` more than the frozen budget allowed. ACKs that merely slow down
//! with the link are not overdue and drain nothing.

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
    /// A short queue at the bottleneck ([`queue_budget`]): what the link carries at the
    /// receiver's estimate within the base round trip plus `queue_target`, less what is in
    /// flight, and never more than `queue_target` of the link in one frame.
    Queue,
}

/// What the sender assumes the link does while ACKs are silent (`[slow_link] ack_stall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AckStall {
    /// The default: nothing is delivered that no ACK reported: the budget freezes, and once
    /// the ACK is overdue an outage is suspected and probes of the coarsest frames follow.
    #[default]
    Probe,
    /// The link keeps delivering at the last estimate, decaying by half every
    /// `stall_half_life` once the ACK is overdue (frames then encoded from the newest
    /// acknowledged state); an outage is suspected only when the rate has decayed to an
    /// eighth or `max_drain_frames` were sent since the last ACK.
    Drain,
}

/// Halvings of the assumed rate after which an ACK silence is treated as an outage under
/// [`AckStall::Drain`] (an eighth of the rate is left).
pub const DRAIN_HALVINGS_TO_OUTAGE: f64 = 3.0;

/// Step of the numeric integral of a decaying rate.
const DECAY_STEP: Duration = Duration::from_millis(5);

/// Longest decay integrated; beyond 40 half-lives nothing is left anyway.
const MAX_DECAY_STEPS: u64 = 8000;

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

    /// Like [`Self::between`], with the rate halving every `half_life` after `decay_from`.
    pub fn between_decaying(
        &self,
        from: Instant,
        to: Instant,
        decay_from: Instant,
        half_life: Duration,
    ) -> f64 {
        let full_until = to.min(decay_from.max(from));
        let mut total = self.between(from, full_until);
        let mut t = full_until;
        let hl = half_life.as_secs_f64().max(1e-6);
        let mut steps = 0;
        while t < to && steps < MAX_DECAY_STEPS {
            let next = (t + DECAY_STEP).min(to);
            let mid = t.saturating_duration_since(decay_from).as_secs_f64()
                + next.saturating_duration_since(t).as_secs_f64() / 2.0;
            total += self.between(t, next) * (-mid / hl).exp2();
            t = next;
            steps += 1;
        }
        total
    }
}

/// Halvings of the rate at `now` under [`AckStall::Drain`] when decay began at `decay_from`.
pub fn drain_halvings(now: Instant, decay_from: Instant, half_life: Duration) -> f64 {
    now.saturating_duration_since(decay_from).as_secs_f64() / half_life.as_secs_f64().max(1e-6)
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

/// The budget in bytes that leaves at most `queue_target` of the link queued at the
/// bottleneck once the frame is there: the link (one fragment every `tau`) holds
/// `(base_rtt + queue_target) / tau` fragments between the sender and the receiver's ACK, the
/// `in_flight` ones are already among them, and the frame itself takes at most
/// `queue_target / tau` (so an idle link is not handed a frame that alone queues for longer
/// than the target). The paper's `MTU x (d / tau - N)` is this with `d = base_rtt +
/// queue_target` and no cap: a fixed `d` spends part of itself on the path's round trip, so the
/// same `d` queues more on a short path than a long one.
pub fn queue_budget(
    mtu: usize,
    tau: Duration,
    base_rtt: Duration,
    queue_target: Duration,
    in_flight: u64,
) -> usize {
    let per_fragment = tau.as_secs_f64().max(1e-6);
    let pipe = (base_rtt + queue_target).as_secs_f64() / per_fragment;
    let frame_cap = (queue_target.as_secs_f64() / per_fragment).floor();
    let room = (pipe.floor() - in_flight as f64).min(frame_cap);
    if room.is_nan() || room <= 0.0 {
        return 0;
    }
    (room.min(1e9) as usize).saturating_mul(mtu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_budget_fills_the_pipe_to_the_target_and_caps_one_frame() {
        let ms = Duration::from_millis;
        // 1 ms per fragment, 40 ms round trip, 20 ms target: 60 fragments between the ends.
        assert_eq!(queue_budget(1000, ms(1), ms(40), ms(20), 50), 10_000);
        // An idle link: one frame may queue 20 ms, not the whole 60.
        assert_eq!(queue_budget(1000, ms(1), ms(40), ms(20), 0), 20_000);
        // A queue above the target: skip.
        assert_eq!(queue_budget(1000, ms(1), ms(40), ms(20), 61), 0);
        // Nothing overflows at the extremes.
        assert_eq!(queue_budget(1000, Duration::ZERO, ms(0), ms(0), 0), 0);
        assert!(queue_budget(usize::MAX, Duration::ZERO, ms(40), ms(20), 0) > 0);
    }

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
    fn a_decaying_rate_delivers_a_bounded_amount() {
        let tau = Curve::Ewma(Duration::from_millis(1));
        let hl = Duration::from_millis(500);
        let plain = tau.between(ms(0), ms(100));
        assert!((plain - 100.0).abs() < 1e-9);
        // Before the decay starts, the same.
        assert!((tau.between_decaying(ms(0), ms(100), ms(200), hl) - 100.0).abs() < 1e-9);
        // Half-life 500 ms at 1000 fragments/s: at most about 721 more, however long.
        let long = tau.between_decaying(ms(0), ms(20_000), ms(0), hl);
        assert!(
            (long - 500.0 / std::f64::consts::LN_2).abs() < 5.0,
            "{long}"
        );
        let one_hl = tau.between_decaying(ms(0), ms(500), ms(0), hl);
        assert!(
            (one_hl - 0.5 * 500.0 / std::f64::consts::LN_2).abs() < 3.0,
            "{one_hl}"
        );
    }

    #[test]
    fn budgets_count_whole_fragments_beyond_those_in_flight() {
        assert_eq!(budget_bytes(10.7, 3, 1400), 7 * 1400);
        assert_eq!(budget_bytes(2.0, 3, 1400), 0);
        assert_eq!(budget_bytes(f64::NAN, 0, 1400), 0);
        assert_eq!(
            drain_halvings(ms(1500), ms(500), Duration::from_millis(500)),
            2.0
        );
    }
}
