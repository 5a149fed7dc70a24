//! Once-a-second status lines for the standalone `send` and `recv` commands, from the common
//! stats every scheme keeps (and the bytes the loop itself put on the wire).

use salsify_endpoint::{ReceiverStats, SenderStats};
use salsify_time::{Duration, Instant};

/// Prints the sender's frames, rate and quality once a second (if enabled).
pub struct SenderStatus {
    enabled: bool,
    next: Instant,
    frames_before: u64,
    bytes: u64,
}

impl SenderStatus {
    /// Starting at `now`.
    pub fn new(now: Instant, enabled: bool) -> Self {
        SenderStatus {
            enabled,
            next: now + Duration::from_secs(1),
            frames_before: 0,
            bytes: 0,
        }
    }

    /// Counts a datagram sent.
    pub fn on_sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// A new session's counters start from zero.
    pub fn on_new_session(&mut self) {
        self.frames_before = 0;
    }

    /// Prints a line if a second has passed.
    pub fn tick(&mut self, now: Instant, stats: &SenderStats) {
        if !self.enabled || now < self.next {
            return;
        }
        self.next = now + Duration::from_secs(1);
        let q = stats
            .quality
            .map_or("-".to_string(), |q| q.index().to_string());
        let target = stats
            .target
            .map_or(String::new(), |t| format!(", target {t}"));
        eprintln!(
            "send: {:>3} frames/s, {:>6.0} kb/s, q {q:>3}{target}, skipped {}, dropped {}, recoveries {}",
            stats.frames_sent.saturating_sub(self.frames_before),
            self.bytes as f64 * 8.0 / 1e3,
            stats.skipped,
            stats.dropped,
            stats.recoveries,
        );
        self.frames_before = stats.frames_sent;
        self.bytes = 0;
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

    /// Prints a line if a second has passed. `shown` counts frames over all sessions;
    /// `stats` are the current session's.
    pub fn tick(&mut self, now: Instant, shown: u64, stats: &ReceiverStats, session: &str) {
        if !self.enabled || now < self.next {
            return;
        }
        self.next = now + Duration::from_secs(1);
        eprintln!(
            "recv: {:>3} frames/s, {:>6.0} kb/s shown, lost {}, bad datagrams {}, {session}",
            shown - self.shown_before,
            self.bytes as f64 * 8.0 / 1e3,
            stats.frames_lost,
            stats.bad_datagrams,
        );
        self.shown_before = shown;
        self.bytes = 0;
    }
}
