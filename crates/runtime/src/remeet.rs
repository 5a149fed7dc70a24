//! Meeting the peer again during a call met through a rendezvous, when its path goes silent:
//! the TURN server restarted and took the allocation with it, a NAT dropped its mappings, the
//! network changed under both sides. A fresh meeting (a new run, a new STUN mapping, a new
//! TURN allocation) finds a pair while the secure session goes on, as ICE's restart does;
//! the hang-up watch (10 s of silence) ends the call only if no pair is found by then.
//!
//! This module is the policy (when to start one, when to give one up); the link
//! ([`crate::peer_link::PeerLink`]) drives the meeting.

use salsify_time::{Duration, Instant};

use crate::meet_phase::Helpers;

/// When a call meets its peer again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemeetConfig {
    /// Silence from the peer that starts a new meeting: 3 s, ten times a media call's gap
    /// between datagrams and well inside the hang-up watch's 10 s.
    pub after: Duration,
    /// A meeting that has found no pair this long after its start is given up, and (still
    /// silent) another starts, each wait twice the last: 5 s (a relayed meeting takes about
    /// 0.6 s once both sides have registered again).
    pub give_up_after: Duration,
    /// The longest wait between two meetings of a silent peer (a receiver that stays for a
    /// caller who never comes back does not churn the servers): 30 s.
    pub max_every: Duration,
}

impl Default for RemeetConfig {
    fn default() -> Self {
        RemeetConfig {
            after: Duration::from_secs(3),
            give_up_after: Duration::from_secs(5),
            max_every: Duration::from_secs(30),
        }
    }
}

/// When the next meeting is due, from the peer's silence and the meetings tried.
#[derive(Debug, Clone)]
pub(crate) struct RemeetPolicy {
    config: RemeetConfig,
    /// Meetings started since the peer was last heard.
    tries: u32,
    last_start: Option<Instant>,
}

impl RemeetPolicy {
    pub(crate) fn new(config: RemeetConfig) -> Self {
        RemeetPolicy {
            config,
            tries: 0,
            last_start: None,
        }
    }

    /// The earliest time a meeting may start, given when the peer was last heard.
    pub(crate) fn next_at(&self, last_heard: Instant) -> Instant {
        let silent = last_heard + self.config.after;
        let (Some(start), true) = (self.last_start, self.tries > 0) else {
            return silent;
        };
        if last_heard >= start {
            return silent; // heard since: a fresh silence starts the count again
        }
        let wait = self.config.give_up_after * 2u32.saturating_pow(self.tries - 1);
        silent.max(start + wait.min(self.config.max_every))
    }

    /// A meeting is due at `now` (none running).
    pub(crate) fn due(&self, now: Instant, last_heard: Instant) -> bool {
        now >= self.next_at(last_heard)
    }

    /// One started at `now`; `last_heard` as in [`RemeetPolicy::next_at`].
    pub(crate) fn started(&mut self, now: Instant, last_heard: Instant) {
        if self.last_start.is_some_and(|s| last_heard >= s) {
            self.tries = 0;
        }
        self.tries = self.tries.saturating_add(1);
        self.last_start = Some(now);
    }

    /// When a meeting started at `since` has run too long without a pair.
    pub(crate) fn give_up_at(&self, since: Instant) -> Instant {
        since + self.config.give_up_after
    }

    /// Whether a meeting started at `since` has run too long without a pair.
    pub(crate) fn given_up(&self, now: Instant, since: Instant) -> bool {
        now >= self.give_up_at(since)
    }
}

/// A meeting run again during a call: its STUN binding and TURN allocation (the meeting
/// itself replaces the link's), and when it started.
pub(crate) struct Remeeting {
    pub(crate) helpers: Helpers,
    pub(crate) since: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn a_meeting_is_due_after_three_seconds_of_silence() {
        let p = RemeetPolicy::new(RemeetConfig::default());
        assert!(!p.due(s(12), s(10)));
        assert!(p.due(s(13), s(10)));
    }

    #[test]
    fn meetings_of_a_peer_still_silent_wait_longer_each_time_up_to_the_cap() {
        let mut p = RemeetPolicy::new(RemeetConfig::default());
        let heard = s(10);
        let mut starts = vec![];
        let mut t = s(10);
        while t < s(200) {
            if p.due(t, heard) {
                p.started(t, heard);
                starts.push(t.saturating_duration_since(heard).as_secs());
            }
            t += Duration::from_secs(1);
        }
        assert_eq!(&starts[..6], &[3, 8, 18, 38, 68, 98]);
    }

    #[test]
    fn a_peer_heard_again_resets_the_wait() {
        let mut p = RemeetPolicy::new(RemeetConfig::default());
        p.started(s(13), s(10));
        p.started(s(18), s(10));
        // Heard at 20, then silent again: 3 s of silence is enough once more.
        assert!(p.due(s(23), s(20)));
        p.started(s(23), s(20));
        assert!(!p.due(s(27), s(20)));
        assert!(p.due(s(28), s(20)));
    }

    #[test]
    fn a_meeting_without_a_pair_is_given_up_after_five_seconds() {
        let p = RemeetPolicy::new(RemeetConfig::default());
        assert!(!p.given_up(s(14), s(10)));
        assert!(p.given_up(s(15), s(10)));
    }
}
