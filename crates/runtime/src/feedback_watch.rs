//! When a sender should start over: the sender loop's session rule, for every scheme.
//!
//! A sender whose receiver went away (restarted, or its path gone for long) waits forever in
//! most schemes: Salsify keeps encoding from states the new receiver never had, a
//! window-based scheme stops once its window is full. The loop cannot see into the scheme,
//! but it sees the feedback: if none is accepted for `reset_after` after something was
//! sent, or the receiver's feedback keeps being refused (a restarted Salsify receiver counts
//! its ACKs from zero again, which the old sender calls stale), the loop replaces the sender
//! with a fresh endpoint, whose first frame is a keyframe any receiver can decode.
//!
//! The silence rule can be turned off (`reset_after` `None`): where the receiver cannot
//! restart without the sender knowing (`salsify demo` and the evaluation's live cells run
//! both in one process), a silence is the link's outage, which the scheme must ride out as
//! it does in the simulator; a fresh sender there throws away the congestion controller's
//! state and costs a keyframe (measured: on the Verizon LTE trace's 30 s from 50 s, whose
//! 1.4 s gap one way and 1.7 s the other silence the feedback for over 2 s, the live
//! conventional sender was reset twice in each of two runs, which the simulation never does:
//! results/sim-vs-live).
//!
//! Feedback counts as refused when the sender rejects it or counts it as stale
//! (`SenderStats::stale_feedback`): a Salsify sender accepts stale ACKs, since they reorder
//! harmlessly, but a restarted receiver's ACKs are all stale to the old sender.

use salsify_time::{Duration, Instant};

/// Refused feedback datagrams in a row, with none accepted, that mean the receiver
/// restarted (reordering makes a few; a restarted receiver makes about one per datagram).
pub const REFUSED_FEEDBACK_LIMIT: u64 = 64;

/// Why the sender should start over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetReason {
    /// No feedback accepted for this long while sending.
    Silent(Duration),
    /// This many feedback datagrams in a row were refused.
    RefusedFeedback(u64),
}

impl std::fmt::Display for ResetReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResetReason::Silent(d) => {
                write!(f, "no feedback for {:.1} s while sending", d.as_secs_f64())
            }
            ResetReason::RefusedFeedback(n) => write!(f, "{n} feedback datagrams refused in a row"),
        }
    }
}

/// Watches one session's feedback.
#[derive(Debug, Clone)]
pub struct FeedbackWatch {
    /// Silence that means the receiver is gone; `None`: silence never does.
    reset_after: Option<Duration>,
    /// The first datagram sent since feedback was last accepted (the session's start counts
    /// as feedback): silence counts from here, so an idle sender is never reset.
    waiting_since: Option<Instant>,
    refused_streak: u64,
}

impl FeedbackWatch {
    /// A watch for a session starting now; `reset_after` `None` turns the silence rule off
    /// (refused feedback still resets).
    pub fn new(reset_after: Option<Duration>) -> Self {
        FeedbackWatch {
            reset_after,
            waiting_since: None,
            refused_streak: 0,
        }
    }

    /// A datagram was sent at `now`.
    pub fn on_sent(&mut self, now: Instant) {
        self.waiting_since.get_or_insert(now);
    }

    /// A feedback datagram was used (`true`), or refused or found stale by the sender.
    pub fn on_feedback(&mut self, accepted: bool) {
        if accepted {
            self.waiting_since = None;
            self.refused_streak = 0;
        } else {
            self.refused_streak += 1;
        }
    }

    /// Whether the session should be replaced at `now`.
    pub fn check(&self, now: Instant) -> Option<ResetReason> {
        if self.refused_streak >= REFUSED_FEEDBACK_LIMIT {
            return Some(ResetReason::RefusedFeedback(self.refused_streak));
        }
        let limit = self.reset_after?;
        let silent = now.saturating_duration_since(self.waiting_since?);
        (silent >= limit).then_some(ResetReason::Silent(silent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESET: Option<Duration> = Some(Duration::from_secs(2));

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn silence_counts_from_the_first_unanswered_send() {
        let mut w = FeedbackWatch::new(RESET);
        assert_eq!(w.check(at(10_000)), None, "idle: never reset");
        w.on_sent(at(10_000));
        w.on_sent(at(11_000));
        assert_eq!(w.check(at(11_999)), None);
        assert_eq!(
            w.check(at(12_000)),
            Some(ResetReason::Silent(Duration::from_secs(2)))
        );
        w.on_feedback(true);
        assert_eq!(w.check(at(20_000)), None, "answered");
    }

    #[test]
    fn a_stream_of_refused_feedback_resets_and_one_accepted_clears_it() {
        let mut w = FeedbackWatch::new(RESET);
        for _ in 0..REFUSED_FEEDBACK_LIMIT - 1 {
            w.on_feedback(false);
        }
        assert_eq!(w.check(at(0)), None);
        w.on_feedback(true);
        for _ in 0..REFUSED_FEEDBACK_LIMIT - 1 {
            w.on_feedback(false);
        }
        assert_eq!(w.check(at(0)), None, "the streak started again");
        w.on_feedback(false);
        assert_eq!(
            w.check(at(0)),
            Some(ResetReason::RefusedFeedback(REFUSED_FEEDBACK_LIMIT))
        );
    }

    /// Without a silence limit a sender that hears nothing for a minute (a link outage) is
    /// kept, but a stream of refused feedback still resets it.
    #[test]
    fn without_a_silence_limit_only_refused_feedback_resets() {
        let mut w = FeedbackWatch::new(None);
        w.on_sent(at(1_000));
        assert_eq!(w.check(at(61_000)), None, "a minute of silence");
        for _ in 0..REFUSED_FEEDBACK_LIMIT {
            w.on_feedback(false);
        }
        assert_eq!(
            w.check(at(61_000)),
            Some(ResetReason::RefusedFeedback(REFUSED_FEEDBACK_LIMIT))
        );
    }
}
