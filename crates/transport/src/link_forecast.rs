//! The receiver's forecast of the link for the sender's forecast budget (`[salsify] budget =
//! "forecast"`): Sprout's stochastic forecaster, fed with the arrivals Salsify's receiver
//! sees, on a clock from which the sender's idle time is removed.
//!
//! Salsify's sender is application-limited: it sends a frame, then nothing until the next
//! picture. A forecaster that counted arrivals per tick of real time would read those idle
//! gaps as a slow link and talk its forecast down to the video's own rate. Salsify's answer
//! for its inter-arrival estimate is the grace period (how long the sender sat idle before a
//! fragment, carried in the fragment); this module applies the same correction to the
//! forecaster's clock: each in-sequence fragment's grace (at most the gap since the previous
//! arrival) is taken out of the time the forecaster sees. While the sender is idle the
//! forecaster's clock stands still; while the link is slow or out, it runs, and the empty
//! ticks tell the forecaster so.

use salsify_sprout_model::{ArrivalObserver, ForecastConfig, ForecasterKind};
use salsify_time::{Duration, Instant};

use crate::wire::{AckForecast, FORECAST_UNIT_BYTES, MAX_FORECAST_TICKS};

/// Sprout's forecaster on the grace-corrected clock.
#[derive(Debug)]
pub struct LinkForecaster {
    observer: ArrivalObserver,
    /// Grace taken out of the clock so far.
    removed: Duration,
    last_arrival: Option<Instant>,
    /// The tick of the last forecast handed out, so each is sent once.
    last_sent_tick: Option<Instant>,
    tick: Duration,
    /// Wire units per forecaster packet unit.
    scale: f64,
}

impl LinkForecaster {
    /// A forecaster with Sprout's model and forecast parameters `config`.
    pub fn new(config: &ForecastConfig) -> LinkForecaster {
        let forecaster = ForecasterKind::Sprout.build(config);
        LinkForecaster {
            observer: ArrivalObserver::new(config, forecaster),
            removed: Duration::ZERO,
            last_arrival: None,
            last_sent_tick: None,
            tick: config.tick,
            scale: f64::from(config.packet_bytes) / f64::from(FORECAST_UNIT_BYTES),
        }
    }

    /// A datagram of `bytes` arrived at `now`; `grace` is the sender's idle time before it,
    /// counted only when the datagram followed the previous one in sequence (`in_sequence`):
    /// otherwise packets between were lost and the gap is the link's.
    pub fn on_arrival(&mut self, now: Instant, bytes: usize, grace: Duration, in_sequence: bool) {
        let gap = self
            .last_arrival
            .map_or(Duration::ZERO, |last| now.saturating_duration_since(last));
        if in_sequence {
            self.removed += grace.min(gap);
        }
        self.last_arrival = Some(now);
        let clock = self.clock(now);
        self.observer.on_arrival(clock, bytes, Duration::ZERO);
    }

    /// The forecast of the open tick if it has not been handed out yet.
    pub fn new_forecast(&mut self, now: Instant) -> Option<AckForecast> {
        let clock = self.clock(now.max(self.last_arrival?));
        let made = self.observer.forecast(clock)?;
        if self.last_sent_tick == Some(made.tick_start) {
            return None;
        }
        self.last_sent_tick = Some(made.tick_start);
        let counts = made
            .forecast
            .counts
            .iter()
            .take(MAX_FORECAST_TICKS)
            .map(|&c| (f64::from(c) * self.scale).min(f64::from(u16::MAX)) as u16)
            .collect();
        Some(AckForecast {
            tick: self.tick,
            counts,
        })
    }

    /// The forecaster's clock at `now`: real time less the grace removed.
    fn clock(&self, now: Instant) -> Instant {
        Instant::from_micros(
            now.as_micros()
                .saturating_sub(self.removed.as_micros() as u64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_micros(t * 1000)
    }

    /// One 1500-byte datagram every `gap_us` for `count` datagrams from `start`; returns the
    /// time after the last.
    fn steady(f: &mut LinkForecaster, start: u64, gap_us: u64, count: u64, grace: u64) -> u64 {
        let mut t = start;
        for i in 0..count {
            let g = if i == 0 { grace } else { 0 };
            f.on_arrival(
                Instant::from_micros(t),
                1500,
                Duration::from_micros(g),
                true,
            );
            t += gap_us;
        }
        t
    }

    fn fifth_tick(f: &mut LinkForecaster, at_us: u64) -> u16 {
        let mut last = None;
        // Several calls in one tick give one forecast.
        for _ in 0..3 {
            if let Some(made) = f.new_forecast(Instant::from_micros(at_us)) {
                assert!(last.is_none(), "one forecast per tick");
                last = Some(made);
            }
        }
        last.map_or(0, |made| made.counts[4])
    }

    #[test]
    fn idle_gaps_announced_by_grace_do_not_talk_the_forecast_down() {
        let config = ForecastConfig::default();
        let (mut idle, mut honest) = (LinkForecaster::new(&config), LinkForecaster::new(&config));
        // 500 packets/s while sending: bursts of 5 packets 2 ms apart, then 40 ms idle.
        let (mut a, mut b) = (0, 0);
        for _ in 0..60 {
            let end_a = steady(&mut idle, a, 2000, 5, 40_000);
            let end_b = steady(&mut honest, b, 2000, 5, 0);
            a = end_a + 40_000;
            b = end_b + 40_000;
        }
        let with_grace = fifth_tick(&mut idle, a - 40_000);
        let without = fifth_tick(&mut honest, b - 40_000);
        assert!(
            with_grace > 2 * without.max(1),
            "grace-corrected {with_grace} vs uncorrected {without}"
        );
    }

    #[test]
    fn an_outage_collapses_the_forecast() {
        let mut f = LinkForecaster::new(&ForecastConfig::default());
        let t = steady(&mut f, 0, 2000, 1000, 0);
        let before = fifth_tick(&mut f, t);
        assert!(before > 20, "{before}");
        // One second with nothing while the sender kept sending (no grace).
        let after_us = t + 1_000_000;
        f.on_arrival(Instant::from_micros(after_us), 1500, Duration::ZERO, true);
        let after = fifth_tick(&mut f, after_us);
        assert!(
            after < before / 4,
            "{after} after an outage, {before} before"
        );
    }

    #[test]
    fn nothing_is_forecast_before_the_first_arrival() {
        let mut f = LinkForecaster::new(&ForecastConfig::default());
        assert!(f.new_forecast(ms(5)).is_none());
    }
}
