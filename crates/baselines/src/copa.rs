//! Copa (Arun and Balakrishnan, NSDI 2018), the window-based delay-sensitive congestion
//! control Vidaptive runs (with delta = 0.9).
//!
//! Per ACK: `RTTstanding` = min RTT over the last sRTT/2, `RTTmin` = min over
//! [`RTT_MIN_WINDOW`], queueing delay `dq = RTTstanding - RTTmin`, target rate
//! `lambda_t = 1 / (delta x dq)` packets per second, current rate `lambda = cwnd /
//! RTTstanding`. If `lambda <= lambda_t` the window grows by `v / (delta x cwnd)` packets per
//! packet ACKed, else shrinks by as much. The velocity `v` doubles each RTT once the window
//! has moved the same way for [`VELOCITY_RTTS`] RTTs, and resets to 1 when the direction
//! changes. Slow start doubles the window each RTT until `lambda` first exceeds `lambda_t`.
//! Mode switching (optional, [`CopaConfig::mode_switching`]): if the queue was never nearly
//! empty (below 10 % of the recent maximum queueing delay) over [`MODE_RTTS`] RTTs, Copa
//! assumes buffer-filling competitors and goes competitive: `1/delta` grows by 1 per RTT and
//! halves on loss, never giving a delta above the configured one.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

/// Packet size the window is counted in (bytes).
pub const MSS: f64 = 1200.0;
/// RTTmin is the minimum over this window (Copa: 10 s).
pub const RTT_MIN_WINDOW: Duration = Duration::from_secs(10);
/// RTTs in one direction before the velocity starts doubling (Copa: 3).
pub const VELOCITY_RTTS: u32 = 3;
/// RTTs of history the mode switch looks at (Copa: 5).
pub const MODE_RTTS: u32 = 5;
/// "Nearly empty" queue: below this share of the recent max queueing delay (Copa: 0.1).
pub const NEARLY_EMPTY: f64 = 0.1;
/// Smallest window (packets).
pub const MIN_CWND: f64 = 2.0;
/// Largest velocity (keeps a runaway doubling finite).
pub const MAX_VELOCITY: f64 = 1024.0;

/// Copa's parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CopaConfig {
    /// Delta in default mode. Default 0.9 (Vidaptive's choice; Copa's paper uses 0.5).
    pub delta: f64,
    /// Switch to competitive mode when the queue never empties. Default false: Vidaptive
    /// runs Copa with a fixed delta.
    pub mode_switching: bool,
    /// Initial window in packets. Default 10.
    pub initial_cwnd: f64,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig {
            delta: 0.9,
            mode_switching: false,
            initial_cwnd: 10.0,
        }
    }
}

/// Default (delay-sensitive) or competitive mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Delta fixed at the configured value.
    Default,
    /// Delta adapted AIMD-style to compete with buffer-fillers.
    Competitive,
}

/// Direction the window moved over the last RTT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// Copa's state.
#[derive(Debug)]
pub struct Copa {
    config: CopaConfig,
    cwnd: f64,
    delta: f64,
    mode: Mode,
    velocity: f64,
    direction: Option<Direction>,
    same_direction_rtts: u32,
    rtt_start: Option<(Instant, f64)>,
    slow_start: bool,
    srtt: Option<Duration>,
    rtt_min: VecDeque<(Instant, Duration)>,
    rtt_standing: VecDeque<(Instant, Duration)>,
    /// (time, RTTstanding) over the mode window.
    recent: VecDeque<(Instant, Duration)>,
    lost_this_rtt: bool,
}

impl Copa {
    /// A fresh controller in slow start.
    pub fn new(config: CopaConfig) -> Self {
        Copa {
            cwnd: config.initial_cwnd.max(MIN_CWND),
            delta: config.delta,
            config,
            mode: Mode::Default,
            velocity: 1.0,
            direction: None,
            same_direction_rtts: 0,
            rtt_start: None,
            slow_start: true,
            srtt: None,
            rtt_min: VecDeque::new(),
            rtt_standing: VecDeque::new(),
            recent: VecDeque::new(),
            lost_this_rtt: false,
        }
    }

    /// The window in bytes.
    pub fn cwnd_bytes(&self) -> f64 {
        self.cwnd * MSS
    }
    /// The window in packets.
    pub fn cwnd_packets(&self) -> f64 {
        self.cwnd
    }
    /// Smoothed RTT.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// The velocity.
    pub fn velocity(&self) -> f64 {
        self.velocity
    }
    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// The delta in force.
    pub fn delta(&self) -> f64 {
        self.delta
    }
    /// Still in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }
    /// The minimum RTT seen in the window.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min.front().map(|&(_, r)| r)
    }

    /// CC-Rate = cwnd / sRTT, in bits per second (`None` before the first RTT sample).
    pub fn rate(&self) -> Option<crate::rate::Bitrate> {
        let s = self.srtt?.as_secs_f64().max(1e-4);
        Some(crate::rate::Bitrate::from_f64(self.cwnd_bytes() * 8.0 / s))
    }

    /// A packet of `bytes` was ACKed at `now` with RTT sample `rtt`.
    pub fn on_ack(&mut self, now: Instant, rtt: Duration, bytes: usize) {
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        let srtt = self.srtt.expect("set above");
        push_min(&mut self.rtt_min, now, rtt, RTT_MIN_WINDOW);
        push_min(&mut self.rtt_standing, now, rtt, srtt / 2);
        let rtt_min = self.rtt_min.front().expect("pushed").1;
        let standing = self.rtt_standing.front().expect("pushed").1;
        self.update_mode(now, standing, rtt_min, srtt);

        // With a smoothed RTT over 20 s the standing window (srtt / 2) outlasts the minimum's
        // (10 s), so the standing minimum can be the smaller: no queueing delay then.
        let dq = standing.saturating_sub(rtt_min).as_secs_f64();
        let packets = bytes as f64 / MSS;
        let current = self.cwnd / standing.as_secs_f64().max(1e-4);
        let target = if dq > 0.0 {
            1.0 / (self.delta * dq)
        } else {
            f64::INFINITY
        };
        if self.slow_start {
            if current <= target {
                self.cwnd += packets; // one more packet per packet ACKed: doubles per RTT
            } else {
                self.slow_start = false;
            }
        }
        if !self.slow_start {
            let step = self.velocity * packets / (self.delta * self.cwnd);
            if current <= target {
                self.cwnd += step;
            } else {
                self.cwnd -= step;
            }
        }
        self.cwnd = self.cwnd.max(MIN_CWND);
        self.update_velocity(now, srtt);
    }

    /// A packet was reported lost.
    pub fn on_loss(&mut self, _now: Instant) {
        self.lost_this_rtt = true;
        if self.mode == Mode::Competitive {
            // 1/delta halves.
            self.delta = (self.delta * 2.0).min(self.config.delta);
        }
    }

    fn update_velocity(&mut self, now: Instant, srtt: Duration) {
        let Some((start, cwnd_then)) = self.rtt_start else {
            self.rtt_start = Some((now, self.cwnd));
            return;
        };
        if now - start < srtt {
            return;
        }
        let dir = if self.cwnd > cwnd_then {
            Direction::Up
        } else {
            Direction::Down
        };
        if Some(dir) == self.direction {
            self.same_direction_rtts += 1;
            if self.same_direction_rtts >= VELOCITY_RTTS && !self.slow_start {
                self.velocity = (self.velocity * 2.0).min(MAX_VELOCITY);
            }
        } else {
            self.direction = Some(dir);
            self.same_direction_rtts = 0;
            self.velocity = 1.0;
        }
        if self.mode == Mode::Competitive && !self.lost_this_rtt {
            // 1/delta grows by one per RTT without loss.
            self.delta = 1.0 / (1.0 / self.delta + 1.0);
        }
        self.lost_this_rtt = false;
        self.rtt_start = Some((now, self.cwnd));
    }

    fn update_mode(&mut self, now: Instant, standing: Duration, rtt_min: Duration, srtt: Duration) {
        if !self.config.mode_switching {
            return;
        }
        let window = srtt * MODE_RTTS;
        self.recent.push_back((now, standing));
        while self.recent.front().is_some_and(|&(t, _)| now - t > window) {
            self.recent.pop_front();
        }
        // Only judge once the history spans the window.
        if self
            .recent
            .front()
            .is_none_or(|&(t, _)| now - t < window * 9 / 10)
        {
            return;
        }
        let max_dq = self
            .recent
            .iter()
            .map(|&(_, r)| r.saturating_sub(rtt_min))
            .max()
            .unwrap_or_default();
        let nearly_empty = self.recent.iter().any(|&(_, r)| {
            r.saturating_sub(rtt_min).as_secs_f64() <= NEARLY_EMPTY * max_dq.as_secs_f64()
        });
        match (self.mode, nearly_empty) {
            (Mode::Competitive, true) => {
                self.mode = Mode::Default;
                self.delta = self.config.delta;
            }
            (Mode::Default, false) => self.mode = Mode::Competitive,
            _ => {}
        }
    }
}

/// Pushes a sample into a sliding-window minimum (monotone deque).
fn push_min(q: &mut VecDeque<(Instant, Duration)>, now: Instant, v: Duration, window: Duration) {
    while q.back().is_some_and(|&(_, b)| b >= v) {
        q.pop_back();
    }
    q.push_back((now, v));
    while q.front().is_some_and(|&(t, _)| now - t > window) && q.len() > 1 {
        q.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ACKs one MSS every `gap` with RTT given by `rtt(t)`, for `n` ACKs from `start`.
    fn feed(c: &mut Copa, start: u64, n: u64, gap_us: u64, rtt: impl Fn(u64) -> u64) -> u64 {
        let mut t = start;
        for _ in 0..n {
            c.on_ack(
                Instant::from_micros(t),
                Duration::from_micros(rtt(t)),
                MSS as usize,
            );
            t += gap_us;
        }
        t
    }

    #[test]
    fn round_trips_beyond_twenty_seconds_do_not_panic() {
        // A queue growing without bound (an unbounded FIFO on a slow link): the smoothed RTT
        // passes 20 s, its standing window outlasts the 10 s minimum window. This panicked
        // with "overflow when subtracting durations" (Vidaptive on the EV-DO trace).
        let mut c = Copa::new(CopaConfig::default());
        let end = feed(&mut c, 0, 400, 100_000, |t| 1_000_000 + t / 2);
        feed(&mut c, end, 400, 100_000, |_| 30_000_000);
        assert!(c.rate().is_some());
    }

    #[test]
    fn slow_start_then_grows_with_doubling_velocity_on_an_empty_queue() {
        let mut c = Copa::new(CopaConfig::default());
        // Constant RTT: dq = 0, target rate infinite: the window only grows.
        let t = feed(&mut c, 0, 50, 1000, |_| 50_000);
        assert!(c.in_slow_start());
        assert!(c.cwnd_packets() > 50.0);
        // Leave slow start: a standing queue of 20 ms makes lambda > lambda_t.
        let t = feed(&mut c, t, 50, 1000, |_| 70_000);
        assert!(!c.in_slow_start());
        let before = c.cwnd_packets();
        let t = feed(&mut c, t, 200, 1000, |_| 70_000);
        assert!(c.cwnd_packets() < before, "shrinks while the queue stands");
        // Queue gone: the window grows, and after 3 RTTs in one direction v doubles.
        let mut vs = vec![];
        let mut t = t;
        for _ in 0..20 {
            t = feed(&mut c, t, 50, 1000, |_| 50_000);
            vs.push(c.velocity());
        }
        assert!(vs.iter().any(|&v| v >= 4.0), "velocity doubles: {vs:?}");
        // Direction change resets it to 1.
        let _ = feed(&mut c, t + 1_000_000, 400, 1000, |_| 300_000);
        assert!(
            c.velocity() <= 2.0,
            "reset on the way down: {}",
            c.velocity()
        );
    }

    #[test]
    fn equilibrium_queue_is_about_one_over_delta_packets() {
        // Fluid check of the target: at lambda = lambda_t, dq = 1 / (delta x lambda).
        let mut c = Copa::new(CopaConfig::default());
        c.slow_start = false;
        c.cwnd = 20.0;
        // 20 packets over a 50 ms standing RTT = 400 pkt/s; with RTTmin 40 ms dq = 10 ms,
        // target 1 / (0.9 x 0.01) = 111 pkt/s < 400: must shrink.
        c.on_ack(Instant::ZERO, Duration::from_millis(40), MSS as usize);
        let after_first = c.cwnd_packets();
        c.on_ack(
            Instant::from_millis(100),
            Duration::from_millis(50),
            MSS as usize,
        );
        assert!(c.cwnd_packets() < after_first);
    }

    #[test]
    fn switches_to_competitive_when_the_queue_never_drains_and_back() {
        let mut c = Copa::new(CopaConfig {
            mode_switching: true,
            ..CopaConfig::default()
        });
        let t = feed(&mut c, 0, 100, 1000, |_| 40_000);
        assert_eq!(c.mode(), Mode::Default);
        // A competitor keeps 60..80 ms of queue that never empties.
        let t = feed(&mut c, t, 3000, 1000, |t| 100_000 + (t / 7000 % 20) * 1000);
        assert_eq!(c.mode(), Mode::Competitive);
        assert!(c.delta() < 0.9, "1/delta grew: {}", c.delta());
        // The queue drains to empty now and then: default mode, delta restored.
        let _ = feed(&mut c, t, 3000, 1000, |t| {
            if t / 1000 % 50 == 0 {
                40_000
            } else {
                60_000
            }
        });
        assert_eq!(c.mode(), Mode::Default);
        assert_eq!(c.delta(), 0.9);
    }
}
