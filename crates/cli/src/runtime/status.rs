//! Once-a-second status lines for the standalone `send` and `recv` commands.

use salsify_time::{Duration, Instant};
use salsify_transport::{ReceiverStats, SenderStats};

/// Prints the sender's rate, frames and quality once a second (if enabled).
pub struct SenderStatus {
    enabled: bool,
    next: Instant,
    last: Option<SenderStats>,
}

impl SenderStatus {
    /// Starting at `now`.
    pub fn new(now: Instant, enabled: bool) -> Self {
        SenderStatus {
            enabled,
            next: now + Duration::from_secs(1),
            last: None,
        }
    }

    /// Prints a line if a second has passed.
    pub fn tick(&mut self, now: Instant, stats: &SenderStats) {
        if !self.enabled || now < self.next {
            return;
        }
        self.next = now + Duration::from_secs(1);
        let (frames, fragments) = match &self.last {
            Some(l) => (
                stats.frames_sent().saturating_sub(l.frames_sent()),
                stats.fragments_sent.saturating_sub(l.fragments_sent),
            ),
            None => (stats.frames_sent(), stats.fragments_sent),
        };
        let tau = stats.mean_interarrival.map_or("-".to_string(), |t| {
            format!("{:.2} ms", t.as_secs_f64() * 1e3)
        });
        eprintln!(
            "send: {frames:>3} frames/s, ~{:>6.0} kb/s, q {:>3}, tau {tau}, skipped {}, recoveries {}",
            fragments as f64 * 1400.0 * 8.0 / 1e3,
            stats.quality.index(),
            stats.skipped,
            stats.recoveries,
        );
        self.last = Some(*stats);
    }
}

/// Prints the receiver's shown frames per second once a second (if enabled).
pub struct ReceiverStatus {
    enabled: bool,
    next: Instant,
    shown_before: u64,
    bytes: u64,
}

impl ReceiverStatus {
    /// Starting at `now`.
    pub fn new(now: Instant, enabled: bool) -> Self {
        ReceiverStatus {
            enabled,
            next: now + Duration::from_secs(1),
            shown_before: 0,
            bytes: 0,
        }
    }

    /// Counts a shown frame's bytes.
    pub fn on_shown(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// Prints a line if a second has passed. `shown` counts frames over all sessions.
    pub fn tick(&mut self, now: Instant, shown: u64, stats: &ReceiverStats, sessions: u32) {
        if !self.enabled || now < self.next {
            return;
        }
        self.next = now + Duration::from_secs(1);
        eprintln!(
            "recv: {:>3} frames/s, {:>6.0} kb/s shown, lost {}, malformed {}, session {sessions}",
            shown - self.shown_before,
            self.bytes as f64 * 8.0 / 1e3,
            stats.frames_lost,
            stats.malformed,
        );
        self.shown_before = shown;
        self.bytes = 0;
    }
}
