//! Once-a-second status lines for the standalone `send` and `recv` commands, from the common
//! stats every scheme keeps (and the bytes the loop itself put on the wire).

use salsify_endpoint::{ReceiverStats, SenderStats};
use salsify_time::{Duration, Instant};

use crate::audio_receive::AudioSecond;

/// Prints the sender's frames, rate and quality once a second (if enabled): every count is
/// for the second just past.
pub struct SenderStatus {
    enabled: bool,
    next: Instant,
    /// The counters at the last line (stats summed over sessions only grow).
    before: SenderStats,
    bytes: u64,
}

impl SenderStatus {
    /// Starting at `now`.
    pub fn new(now: Instant, enabled: bool) -> Self {
        SenderStatus {
            enabled,
            next: now + Duration::from_secs(1),
            before: SenderStats::default(),
            bytes: 0,
        }
    }

    /// Counts a datagram sent.
    pub fn on_sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// Prints a line if a second has passed. `stats` are summed over every session so far.
    pub fn tick(&mut self, now: Instant, stats: &SenderStats) {
        if let Some(line) = self.line(now, stats) {
            eprintln!("{line}");
        }
    }

    /// The line due at `now`, if any.
    fn line(&mut self, now: Instant, stats: &SenderStats) -> Option<String> {
        if !self.enabled || now < self.next {
            return None;
        }
        self.next = now + Duration::from_secs(1);
        let q = stats
            .quality
            .map_or("-".to_string(), |q| q.index().to_string());
        let target = stats
            .target
            .map_or(String::new(), |t| format!(", target {t}"));
        let b = &self.before;
        let line = format!(
            "send: {:>3} frames/s, {:>6.0} kb/s, q {q:>3}{target}, skipped {}, dropped {}, recoveries {}",
            stats.frames_sent.saturating_sub(b.frames_sent),
            self.bytes as f64 * 8.0 / 1e3,
            stats.skipped.saturating_sub(b.skipped),
            stats.dropped.saturating_sub(b.dropped),
            stats.recoveries.saturating_sub(b.recoveries),
        );
        self.before = *stats;
        self.bytes = 0;
        Some(line)
    }
}

/// Prints the receiver's shown frames per second once a second (if enabled).
pub struct ReceiverStatus {
    enabled: bool,
    next: Instant,
    shown_before: u64,
    /// The session's lost frames and bad datagrams at the last line.
    lost_before: u64,
    bad_before: u64,
    /// Datagrams the secure layer refused, at the last line (counted for the whole run).
    refused_before: u64,
    bytes: u64,
    /// The audio of the latest second, if the call carries audio.
    audio: Option<AudioSecond>,
}

impl ReceiverStatus {
    /// Starting at `now`.
    pub fn new(now: Instant, enabled: bool) -> Self {
        ReceiverStatus {
            enabled,
            next: now + Duration::from_secs(1),
            shown_before: 0,
            lost_before: 0,
            bad_before: 0,
            refused_before: 0,
            bytes: 0,
            audio: None,
        }
    }

    /// The audio of the latest second, for the next line.
    pub fn on_audio(&mut self, second: AudioSecond) {
        self.audio = Some(second);
    }

    /// Counts a shown frame's bytes.
    pub fn on_shown(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// Prints a line if a second has passed. `shown` counts frames over all sessions and
    /// `refused` the datagrams the secure layer refused over the run (the summary's
    /// "refused unauthenticated"); `stats` are the current session's. A line's bad datagrams
    /// are both kinds: the session's malformed ones and the refused ones.
    pub fn tick(
        &mut self,
        now: Instant,
        shown: u64,
        stats: &ReceiverStats,
        refused: u64,
        session: &str,
    ) {
        if let Some(line) = self.line(now, shown, stats, refused, session) {
            eprintln!("{line}");
        }
    }

    /// The line due at `now`, if any: counts for the second just past (a new session's
    /// counters start again from zero, so a fall counts from zero).
    fn line(
        &mut self,
        now: Instant,
        shown: u64,
        stats: &ReceiverStats,
        refused: u64,
        session: &str,
    ) -> Option<String> {
        if !self.enabled || now < self.next {
            return None;
        }
        self.next = now + Duration::from_secs(1);
        let delta = |now: u64, before: u64| if now >= before { now - before } else { now };
        let audio = self.audio.take().map_or(String::new(), |a| {
            format!(
                ", audio {:.0} ms, concealed {:.1}%",
                a.delay_mean_ms,
                a.concealed_fraction * 100.0
            )
        });
        let line = format!(
            "recv: {:>3} frames/s, {:>6.0} kb/s shown, lost {}, bad datagrams {}, {session}{audio}",
            shown.saturating_sub(self.shown_before),
            self.bytes as f64 * 8.0 / 1e3,
            delta(stats.frames_lost, self.lost_before),
            delta(stats.bad_datagrams, self.bad_before)
                + refused.saturating_sub(self.refused_before),
        );
        self.shown_before = shown;
        self.lost_before = stats.frames_lost;
        self.bad_before = stats.bad_datagrams;
        self.refused_before = refused;
        self.bytes = 0;
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipped, dropped and recoveries on a line are the second's, not running totals.
    #[test]
    fn sender_lines_count_per_second() {
        let t0 = Instant::ZERO;
        let mut status = SenderStatus::new(t0, true);
        let mut stats = SenderStats {
            frames_sent: 25,
            skipped: 5,
            dropped: 2,
            recoveries: 1,
            ..SenderStats::default()
        };
        let first = status.line(t0 + Duration::from_secs(1), &stats).unwrap();
        assert!(
            first.contains(" 25 frames/s") && first.contains("skipped 5, dropped 2, recoveries 1"),
            "{first}"
        );
        stats.frames_sent += 30;
        stats.skipped += 1;
        let second = status.line(t0 + Duration::from_secs(2), &stats).unwrap();
        assert!(
            second.contains(" 30 frames/s")
                && second.contains("skipped 1, dropped 0, recoveries 0"),
            "{second}"
        );
        assert!(status
            .line(t0 + Duration::from_millis(2500), &stats)
            .is_none());
    }

    /// Lost and bad datagrams on a receiver line are the second's too.
    #[test]
    fn receiver_lines_count_per_second() {
        let t0 = Instant::ZERO;
        let mut status = ReceiverStatus::new(t0, true);
        let mut stats = ReceiverStats {
            frames_lost: 3,
            bad_datagrams: 7,
            ..ReceiverStats::default()
        };
        let first = status
            .line(t0 + Duration::from_secs(1), 10, &stats, 0, "s")
            .unwrap();
        assert!(first.contains("lost 3, bad datagrams 7"), "{first}");
        stats.frames_lost += 1;
        let second = status
            .line(t0 + Duration::from_secs(2), 20, &stats, 0, "s")
            .unwrap();
        assert!(second.contains("lost 1, bad datagrams 0"), "{second}");
        assert!(!second.contains("audio"), "{second}");
        status.on_audio(AudioSecond {
            delay_mean_ms: 84.6,
            concealed_fraction: 0.012,
        });
        let third = status
            .line(t0 + Duration::from_secs(3), 20, &stats, 0, "s")
            .unwrap();
        assert!(
            third.ends_with(", s, audio 85 ms, concealed 1.2%"),
            "{third}"
        );
    }

    /// Datagrams the secure layer refused (the summary's "refused unauthenticated") are bad
    /// datagrams on the line as well, the second's, with or without a session.
    #[test]
    fn refused_datagrams_count_as_bad_on_the_line() {
        let t0 = Instant::ZERO;
        let mut status = ReceiverStatus::new(t0, true);
        let mut stats = ReceiverStats {
            bad_datagrams: 2,
            ..ReceiverStats::default()
        };
        let first = status
            .line(t0 + Duration::from_secs(1), 0, &stats, 5, "no session")
            .unwrap();
        assert!(first.contains("bad datagrams 7"), "{first}");
        stats.bad_datagrams += 1;
        let second = status
            .line(t0 + Duration::from_secs(2), 0, &stats, 9, "no session")
            .unwrap();
        assert!(second.contains("bad datagrams 5"), "{second}");
    }
}
