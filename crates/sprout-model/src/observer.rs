//! The receiver's tick loop (the original `Receiver::advance_to`/`recv`): counts what
//! arrives per tick, observes each tick (or skips it while the sender said it would be
//! idle), and caches one forecast per tick.
//!
//! Orderings, as in the original: the clock starts at the first packet; a tick closes only
//! when `now > tick_start + tick`; a packet is counted in the tick open when it arrives;
//! a packet's time-to-next extends the idle window from the *start of the open tick*.

use salsify_time::{Duration, Instant};

use crate::config::ForecastConfig;
use crate::forecaster::{DeliveryForecast, Forecaster, Observation};

/// Most ticks caught up at once after a silence. Beyond this (20 s at the default tick) the
/// belief has long converged to what evolution alone gives; the clock then jumps ahead so a
/// receiver idle for hours costs nothing on its next packet.
const MAX_CATCH_UP_TICKS: u64 = 1000;

/// A forecast with the receiver tick it was made in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickForecast {
    /// Start of the receiver's tick (its clock); tells a new forecast from a repeat.
    pub tick_start: Instant,
    /// The forecast.
    pub forecast: DeliveryForecast,
}

/// The receiver side of Sprout's forecast.
#[derive(Debug)]
pub struct ArrivalObserver {
    forecaster: Box<dyn Forecaster>,
    tick: Duration,
    packet_bytes: f64,
    /// Start of the open tick; `None` before the first packet.
    tick_start: Option<Instant>,
    /// Ticks starting before this are not observed unless something arrived in them.
    score_time: Instant,
    /// Packets (fractional) counted in the open tick.
    count: f64,
    cached: Option<TickForecast>,
    ticks: u64,
    /// Read ticks in which the sender went idle as "at least" observations.
    censor_idle: bool,
    /// A datagram in the open tick announced a pause (its sender ran out of data).
    went_idle: bool,
}

impl ArrivalObserver {
    /// An observer running `forecaster` with `config`'s tick and packet unit.
    pub fn new(config: &ForecastConfig, forecaster: Box<dyn Forecaster>) -> ArrivalObserver {
        ArrivalObserver {
            forecaster,
            tick: config.tick,
            packet_bytes: f64::from(config.packet_bytes),
            tick_start: None,
            score_time: Instant::FAR_FUTURE,
            count: 0.0,
            cached: None,
            ticks: 0,
            censor_idle: false,
            went_idle: false,
        }
    }

    /// Reads a tick in which a datagram announced a pause (time-to-next > 0) as a censored
    /// observation: the sender ran out of data, so the link could have delivered at least
    /// what arrived. Off by default (the original reads every observed tick as exact, which
    /// suits a bulk sender); an application-limited sender (video) needs it, or its own
    /// small frames talk the forecast down to them and the window shrinks to nothing.
    pub fn with_censored_idle_ticks(mut self, on: bool) -> ArrivalObserver {
        self.censor_idle = on;
        self
    }

    /// A datagram of `bytes` arrived at `now`; its sender says the next one follows after
    /// `time_to_next` (zero: at once).
    pub fn on_arrival(&mut self, now: Instant, bytes: usize, time_to_next: Duration) {
        self.advance_to(now);
        let start = *self.tick_start.get_or_insert_with(|| {
            self.score_time = now;
            now
        });
        self.count += bytes as f64 / self.packet_bytes;
        self.went_idle |= !time_to_next.is_zero();
        self.score_time = self.score_time.max(start + time_to_next);
    }

    /// Closes every tick that ended before `now`.
    pub fn advance_to(&mut self, now: Instant) {
        let Some(mut start) = self.tick_start else {
            return;
        };
        let mut caught_up = 0;
        while start + self.tick < now {
            if caught_up == MAX_CATCH_UP_TICKS {
                let behind =
                    now.saturating_duration_since(start).as_micros() / self.tick.as_micros().max(1);
                start += self.tick * (behind.min(u128::from(u32::MAX)) as u32);
                break;
            }
            let observe = start >= self.score_time || self.count > 0.0;
            if !observe {
                self.forecaster.advance(Observation::Skipped);
            } else if self.censor_idle && self.went_idle {
                self.forecaster.advance(Observation::AtLeast(self.count));
            } else {
                self.forecaster.advance(Observation::Exact(self.count));
            }
            if observe {
                self.count = 0.0;
                self.went_idle = false;
            }
            start += self.tick;
            caught_up += 1;
            self.ticks += 1;
        }
        self.tick_start = Some(start);
    }

    /// The forecast for the tick open at `now` (computed once per tick); `None` before the
    /// first packet.
    pub fn forecast(&mut self, now: Instant) -> Option<TickForecast> {
        self.advance_to(now);
        let start = self.tick_start?;
        match &self.cached {
            Some(c) if c.tick_start == start => {}
            _ => {
                self.cached = Some(TickForecast {
                    tick_start: start,
                    forecast: self.forecaster.forecast(),
                })
            }
        }
        self.cached.clone()
    }

    /// When the open tick closes (the first instant after its end); `None` before the
    /// first packet.
    pub fn next_tick(&self) -> Option<Instant> {
        self.tick_start
            .map(|s| s + self.tick + Duration::from_micros(1))
    }

    /// Ticks closed so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// The forecaster's mean rate, packets per second.
    pub fn mean_rate(&self) -> f64 {
        self.forecaster.mean_rate()
    }

    /// The forecaster's name.
    pub fn forecaster_name(&self) -> &'static str {
        self.forecaster.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SproutForecaster;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    fn observer() -> ArrivalObserver {
        let c = ForecastConfig::default();
        ArrivalObserver::new(&c, Box::new(SproutForecaster::new(&c)))
    }

    #[test]
    fn steady_arrivals_reach_the_steady_forecast() {
        let mut o = observer();
        assert_eq!(o.forecast(ms(0)), None);
        // 10 full packets per 20 ms tick, spread over the tick.
        for i in 0..600u64 {
            o.on_arrival(ms(i * 2), 1500, Duration::ZERO);
        }
        let f = o.forecast(ms(1200)).unwrap();
        assert_eq!(f.forecast.counts, [5, 12, 20, 27, 35, 43, 51, 59]);
        assert_eq!(f.tick_start, ms(1180));
        assert_eq!(o.next_tick(), Some(ms(1200) + Duration::from_micros(1)));
    }

    #[test]
    fn announced_idle_ticks_are_not_observed_but_silence_beyond_them_is() {
        let mut steady = observer();
        let mut idle = observer();
        for i in 0..300u64 {
            steady.on_arrival(ms(i * 2), 1500, Duration::ZERO);
            idle.on_arrival(ms(i * 2), 1500, Duration::ZERO);
        }
        // The last packet says the sender is idle for 200 ms: the receiver keeps its belief.
        idle.on_arrival(ms(600), 1500, Duration::from_millis(200));
        let kept = idle.forecast(ms(760)).unwrap().forecast.counts;
        assert!(
            kept[7] >= 40,
            "idle ticks were observed as an outage: {kept:?}"
        );
        // Without the announcement the same silence reads as an outage.
        steady.on_arrival(ms(600), 1500, Duration::ZERO);
        assert_eq!(steady.forecast(ms(760)).unwrap().forecast.counts, [0; 8]);
    }

    #[test]
    fn a_long_silence_costs_a_bounded_number_of_ticks() {
        let mut o = observer();
        o.on_arrival(ms(0), 1500, Duration::ZERO);
        o.advance_to(ms(10_000_000));
        assert!(o.ticks() <= MAX_CATCH_UP_TICKS);
        assert!(o.next_tick().unwrap() > ms(10_000_000 - 40));
    }
}
