//! The jitter buffer's delay: the least playout delay that would have left at most a target
//! share of recent packets late, from a sliding window of their delays.

use std::collections::VecDeque;

use salsify_time::Duration;

/// How the jitter buffer sizes itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterConfig {
    /// The share of packets that may arrive after their playout time (and be concealed).
    /// Default 0.01 (1%).
    pub late_target: f64,
    /// Packets whose delay the buffer remembers. Default 75 (1.5 s of 20 ms frames): long
    /// enough to learn the jitter, short enough that one outage's burst of late packets
    /// does not hold the delay up for long after the link has recovered.
    pub window: usize,
    /// Added to the chosen delay for the time a packet takes from arrival to the sound
    /// card. Default 2 ms.
    pub margin: Duration,
    /// After a loss (a gap in the packets' sequence numbers), wait one frame more for this
    /// long, so the next packet is there to rebuild a lost one from its in-band FEC.
    /// Default 5 s.
    pub fec_hold: Duration,
    /// While the link has stalled (the next packet is late and nothing newer has arrived,
    /// neither audio nor video), the player waits for the late packet, playing concealment
    /// without moving on, for at most this long; then it conceals the frame and moves on.
    /// Default 1 s.
    pub max_stall: Duration,
    /// In a call without video (no picture to tell a stalled link from DTX's silence), it
    /// waits at most this long. Default 40 ms.
    pub max_stall_audio_only: Duration,
}

impl Default for JitterConfig {
    fn default() -> Self {
        JitterConfig {
            late_target: 0.01,
            window: 75,
            margin: Duration::from_millis(2),
            fec_hold: Duration::from_secs(5),
            max_stall: Duration::from_secs(1),
            max_stall_audio_only: Duration::from_millis(40),
        }
    }
}

/// The least delay `d` among `delays` such that at most `late_target` of them exceed `d`
/// (`None` for no delays). No smaller delay meets the target on the same packets.
pub fn least_delay(delays: &[Duration], late_target: f64) -> Option<Duration> {
    if delays.is_empty() {
        return None;
    }
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    let allowed_late = ((late_target.clamp(0.0, 1.0) * n as f64).floor() as usize).min(n - 1);
    Some(sorted[n - 1 - allowed_late])
}

/// The recent packets' delays (arrival minus capture).
#[derive(Debug, Clone)]
pub struct DelayWindow {
    config: JitterConfig,
    delays: VecDeque<Duration>,
}

impl DelayWindow {
    /// An empty window.
    pub fn new(config: JitterConfig) -> Self {
        DelayWindow {
            config,
            delays: VecDeque::new(),
        }
    }

    /// A packet arrived `delay` after its capture.
    pub fn push(&mut self, delay: Duration) {
        if self.delays.len() >= self.config.window.max(1) {
            self.delays.pop_front();
        }
        self.delays.push_back(delay);
    }

    /// Delays held (at most [`JitterConfig::window`]).
    pub fn held(&self) -> usize {
        self.delays.len()
    }

    /// The playout delay the buffer wants now: [`least_delay`] of the window plus the margin.
    pub fn playout_delay(&self) -> Option<Duration> {
        let delays: Vec<Duration> = self.delays.iter().copied().collect();
        least_delay(&delays, self.config.late_target).map(|d| d + self.config.margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn late(delays: &[Duration], d: Duration) -> usize {
        delays.iter().filter(|&&x| x > d).count()
    }

    proptest! {
        /// The trade: the chosen delay keeps lateness within the target, any smaller delay
        /// does not, and asking for less concealment never buys less delay.
        #[test]
        fn least_delay_is_the_least_that_meets_the_target(
            micros in proptest::collection::vec(0u64..400_000, 1..300),
            target in 0.0f64..0.2,
            looser in 0.0f64..0.2,
        ) {
            let delays: Vec<Duration> = micros.iter().map(|&m| Duration::from_micros(m)).collect();
            let n = delays.len() as f64;
            let d = least_delay(&delays, target).unwrap();
            prop_assert!(late(&delays, d) as f64 <= target * n + 1e-9);
            if let Some(smaller) = d.checked_sub(Duration::from_micros(1)) {
                prop_assert!(late(&delays, smaller) as f64 > target * n);
            }
            let looser = target + looser;
            prop_assert!(least_delay(&delays, looser).unwrap() <= d);
        }

        /// Played out, a buffer with a stricter target waits longer and conceals less on
        /// the same arrivals, and lateness stays near its target on a steady link.
        #[test]
        fn a_stricter_target_trades_delay_for_concealment(
            base in 20_000u64..80_000,
            jitter in proptest::collection::vec(0u64..60_000, 600..900),
        ) {
            let delays: Vec<Duration> = jitter.iter().map(|&j| Duration::from_micros(base + j)).collect();
            let play = |target: f64| {
                let mut window = DelayWindow::new(JitterConfig { late_target: target, ..JitterConfig::default() });
                let (mut late, mut total_delay) = (0usize, Duration::ZERO);
                for (i, &d) in delays.iter().enumerate() {
                    if i >= 100 {
                        let playout = window.playout_delay().unwrap();
                        late += usize::from(d > playout);
                        total_delay += playout;
                    }
                    window.push(d);
                }
                (late as f64 / (delays.len() - 100) as f64, total_delay)
            };
            let (strict_late, strict_delay) = play(0.005);
            let (loose_late, loose_delay) = play(0.10);
            prop_assert!(strict_delay >= loose_delay);
            prop_assert!(strict_late <= loose_late + 1e-9);
            prop_assert!(strict_late <= 0.04, "strict lateness {}", strict_late);
        }
    }
}
