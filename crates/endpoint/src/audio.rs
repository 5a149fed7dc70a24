//! The call's audio as a video scheme's controller sees it: the bytes the driver sent beside
//! the scheme's own datagrams, on the same path, and when.

use std::collections::VecDeque;

use salsify_time::{Bitrate, Duration, Instant};

/// How long sends are remembered: longer than any window a scheme asks about.
const KEEP: Duration = Duration::from_secs(2);
/// The window of [`AudioMeter::rate`], as libwebrtc's audio allocation follows the send rate.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// The audio sent lately: fed by [`crate::SenderEndpoint::handle_audio_sent`], asked how much
/// was sent since a time (what may still be in flight) or at what rate.
#[derive(Debug, Clone, Default)]
pub struct AudioMeter {
    sent: VecDeque<(Instant, usize)>,
    total: u64,
}

impl AudioMeter {
    /// `bytes` of audio sent at `now` (times never go back).
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        self.sent.push_back((now, bytes));
        self.total += bytes as u64;
        while self
            .sent
            .front()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) > KEEP)
        {
            self.sent.pop_front();
        }
    }

    /// Every audio byte sent.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Audio bytes sent after `since` (as far back as the meter remembers, 2 s).
    pub fn bytes_since(&self, since: Instant) -> usize {
        self.sent
            .iter()
            .rev()
            .take_while(|(at, _)| *at > since)
            .map(|(_, b)| b)
            .sum()
    }

    /// The audio's send rate over the last second.
    pub fn rate(&self, now: Instant) -> Bitrate {
        let since = now.checked_sub(RATE_WINDOW).unwrap_or(Instant::ZERO);
        let bits = self.bytes_since(since) as u64 * 8;
        Bitrate::bps(bits * 1_000_000 / RATE_WINDOW.as_micros() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_counts_recent_audio_and_its_rate() {
        let mut m = AudioMeter::default();
        assert_eq!(m.rate(Instant::from_millis(5)), Bitrate::bps(0));
        for i in 1..=100 {
            m.on_sent(Instant::from_millis(i * 20), 100);
        }
        let now = Instant::from_millis(2000);
        assert_eq!(m.total(), 10_000);
        // 50 packets of 100 bytes in the last second: 40 kb/s.
        assert_eq!(m.rate(now), Bitrate::bps(40_000));
        assert_eq!(m.bytes_since(Instant::from_millis(1940)), 300);
        assert_eq!(m.bytes_since(now), 0);
    }
}
