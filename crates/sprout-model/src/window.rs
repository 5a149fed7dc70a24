//! The sender's side: the queue estimate and the window (the original
//! `SproutConnection::window_size`).
//!
//! On each new forecast the queue estimate becomes `next_seq - received_or_lost` (bytes sent
//! that the receiver has neither received nor written off); each byte sent adds to it; each
//! tick that passes since the forecast arrived drains the forecast's count for that tick.
//! The window is what the forecast says will drain within the look-ahead (5 ticks, 100 ms)
//! from the current tick, minus the queue estimate.
//!
//! The original subtracts the *cumulative* count `counts[i]` at every tick advance, which
//! over-drains once a forecast is two or more ticks old; with a forecast every tick (as the
//! receivers here send) it hardly matters. It is kept for parity
//! ([`DrainRule::Original`], the default); [`DrainRule::Cumulative`] subtracts each tick's
//! own share.

use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::config::ForecastConfig;

/// How the queue estimate drains as a forecast ages (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainRule {
    /// The original's: the cumulative count at each tick advance.
    #[default]
    Original,
    /// Each tick's own share of the cumulative forecast.
    Cumulative,
}

/// Sprout's sender window.
#[derive(Debug, Clone)]
pub struct SenderWindow {
    unit: f64,
    tick: Duration,
    lookahead: usize,
    drain: DrainRule,
    counts: Vec<u32>,
    forecast_at: Instant,
    current_tick: usize,
    queue_estimate: f64,
    next_seq: u64,
    /// The newest forecast's receiver tick, so a repeat or an older one is not applied.
    newest: Option<u64>,
}

impl SenderWindow {
    /// A window starting from `initial` (cumulative counts; the original uses its own local
    /// receiver's forecast), as if it had arrived at `now`.
    pub fn new(
        config: &ForecastConfig,
        lookahead_ticks: u32,
        drain: DrainRule,
        initial: Vec<u32>,
        now: Instant,
    ) -> SenderWindow {
        SenderWindow {
            unit: f64::from(config.packet_bytes),
            tick: config.tick,
            lookahead: lookahead_ticks as usize,
            drain,
            counts: initial,
            forecast_at: now,
            current_tick: 0,
            queue_estimate: 0.0,
            next_seq: 0,
            newest: None,
        }
    }

    /// Byte offset of the next byte to send (the sequence number of the next datagram).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Bytes believed queued in the link.
    pub fn queue_estimate(&self) -> f64 {
        self.queue_estimate
    }

    /// The forecast in force.
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// A forecast arrived at `now`: made in receiver tick `tick_id`, when the receiver had
    /// received or written off `received_or_lost` bytes. Returns false (and changes nothing)
    /// for a forecast no newer than the last one applied, or one whose count of resolved
    /// bytes exceeds what was sent.
    pub fn on_forecast(
        &mut self,
        now: Instant,
        tick_id: u64,
        received_or_lost: u64,
        counts: &[u32],
    ) -> bool {
        if self.newest.is_some_and(|n| tick_id <= n) || received_or_lost > self.next_seq {
            return false;
        }
        if counts.is_empty() || counts.windows(2).any(|w| w[1] < w[0]) {
            return false;
        }
        self.newest = Some(tick_id);
        self.counts = counts.to_vec();
        self.forecast_at = now;
        self.current_tick = 0;
        self.queue_estimate = (self.next_seq - received_or_lost) as f64;
        self.update(now);
        true
    }

    /// `bytes` were sent (one datagram).
    pub fn on_sent(&mut self, bytes: usize) {
        self.next_seq += bytes as u64;
        self.queue_estimate += bytes as f64;
    }

    /// Bytes that may be sent now.
    pub fn window(&mut self, now: Instant) -> usize {
        self.update(now);
        let last = self.counts.len() - 1;
        let ahead = (self.current_tick + self.lookahead).min(last);
        let drains = f64::from(self.counts[ahead] - self.counts[self.current_tick.min(last)]);
        (drains * self.unit - self.queue_estimate).max(0.0) as usize
    }

    /// When the next tick of the forecast starts (the window may grow then).
    pub fn next_change(&self) -> Instant {
        self.forecast_at + self.tick * (self.current_tick as u32 + 1)
    }

    fn update(&mut self, now: Instant) {
        let last = self.counts.len() - 1;
        let elapsed = now.saturating_duration_since(self.forecast_at).as_micros()
            / self.tick.as_micros().max(1);
        let new_tick = (elapsed.min(last as u128)) as usize;
        while self.current_tick < new_tick {
            let drained = match self.drain {
                DrainRule::Original => self.counts[self.current_tick],
                DrainRule::Cumulative => {
                    let before = match self.current_tick {
                        0 => 0,
                        i => self.counts[i - 1],
                    };
                    self.counts[self.current_tick] - before
                }
            };
            self.queue_estimate = (self.queue_estimate - f64::from(drained) * self.unit).max(0.0);
            self.current_tick += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    const STEADY: [u32; 8] = [5, 12, 20, 27, 35, 43, 51, 59];

    fn window(drain: DrainRule) -> SenderWindow {
        SenderWindow::new(&ForecastConfig::default(), 5, drain, vec![0; 8], ms(0))
    }

    #[test]
    fn the_window_is_the_five_tick_drain_minus_the_queue() {
        let mut w = window(DrainRule::Original);
        assert_eq!(w.window(ms(0)), 0);
        assert!(w.on_forecast(ms(10), 1, 0, &STEADY));
        // 1500 x (43 - 5): the notes' worked window, in this project's packet unit.
        assert_eq!(w.window(ms(10)), 1500 * 38);
        for _ in 0..10 {
            w.on_sent(1500);
        }
        assert_eq!(w.window(ms(10)), 1500 * 28);
        // The receiver had got 4 of them: the estimate restarts from what it has not.
        assert!(w.on_forecast(ms(20), 2, 6000, &STEADY));
        assert_eq!(w.queue_estimate(), 9000.0);
        // A repeat or an older forecast is ignored; so is one claiming more than was sent.
        assert!(!w.on_forecast(ms(21), 2, 0, &STEADY));
        assert!(!w.on_forecast(ms(21), 3, 1 << 40, &STEADY));
        assert!(!w.on_forecast(ms(21), 3, 0, &[3, 2]));
    }

    #[test]
    fn an_aging_forecast_drains_the_queue_and_shrinks_the_look_ahead() {
        let mut original = window(DrainRule::Original);
        let mut cumulative = window(DrainRule::Cumulative);
        for w in [&mut original, &mut cumulative] {
            w.on_forecast(ms(0), 1, 0, &STEADY);
            for _ in 0..30 {
                w.on_sent(1500);
            }
        }
        // Two ticks later: the original has drained 5 + 12 packets, the cumulative rule 12.
        assert_eq!(original.window(ms(40)), 1500 * (59 - 20 - 13));
        assert_eq!(cumulative.window(ms(40)), 1500 * (59 - 20 - 18));
        // 140 ms without a forecast: nothing left to look ahead to.
        assert_eq!(original.window(ms(150)), 0);
        assert_eq!(original.next_change(), ms(160));
    }
}
