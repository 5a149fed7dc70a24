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
//! One peek is scheme-specific, and kept here alone: a Salsify sender *accepts* stale ACKs
//! (they reorder harmlessly) and reports them nowhere in the common stats, so the watch reads
//! the ACK number itself ([`ack_number`]) and counts an ACK that does not advance it as
//! refused. It goes once `SenderEndpoint::handle_datagram` reports stale feedback as an
//! error (or `SenderStats` counts it).

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
    reset_after: Duration,
    /// The first datagram sent since feedback was last accepted (the session's start counts
    /// as feedback): silence counts from here, so an idle sender is never reset.
    waiting_since: Option<Instant>,
    refused_streak: u64,
    /// The highest ACK number accepted this session (Salsify feedback only).
    highest_ack: Option<u32>,
}

impl FeedbackWatch {
    /// A watch for a session starting now.
    pub fn new(reset_after: Duration) -> Self {
        FeedbackWatch {
            reset_after,
            waiting_since: None,
            refused_streak: 0,
            highest_ack: None,
        }
    }

    /// A datagram was sent at `now`.
    pub fn on_sent(&mut self, now: Instant) {
        self.waiting_since.get_or_insert(now);
    }

    /// A feedback datagram was accepted (`true`) or refused by the sender.
    pub fn on_feedback(&mut self, datagram: &[u8], accepted: bool) {
        let stale = match ack_number(datagram) {
            Some(n) if accepted => {
                let stale = self.highest_ack.is_some_and(|h| n <= h);
                self.highest_ack = Some(self.highest_ack.map_or(n, |h| h.max(n)));
                stale
            }
            _ => false,
        };
        if accepted && !stale {
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
        let silent = now.saturating_duration_since(self.waiting_since?);
        (silent >= self.reset_after).then_some(ResetReason::Silent(silent))
    }
}

/// The ACK number of a Salsify ACK.
pub fn ack_number(datagram: &[u8]) -> Option<u32> {
    match salsify_transport::wire::Datagram::parse(datagram) {
        Ok(salsify_transport::wire::Datagram::Ack(ack)) => Some(ack.ack_number),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESET: Duration = Duration::from_secs(2);

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
        w.on_feedback(b"", true);
        assert_eq!(w.check(at(20_000)), None, "answered");
    }

    #[test]
    fn a_stream_of_refused_feedback_resets_and_one_accepted_clears_it() {
        let mut w = FeedbackWatch::new(RESET);
        for _ in 0..REFUSED_FEEDBACK_LIMIT - 1 {
            w.on_feedback(b"", false);
        }
        assert_eq!(w.check(at(0)), None);
        w.on_feedback(b"", true);
        for _ in 0..REFUSED_FEEDBACK_LIMIT - 1 {
            w.on_feedback(b"", false);
        }
        assert_eq!(w.check(at(0)), None, "the streak started again");
        w.on_feedback(b"", false);
        assert_eq!(
            w.check(at(0)),
            Some(ResetReason::RefusedFeedback(REFUSED_FEEDBACK_LIMIT))
        );
    }

    fn salsify_ack(number: u32) -> Vec<u8> {
        use salsify_transport::wire::{Ack, FragmentId};
        let mut out = Vec::new();
        Ack {
            connection_id: 1,
            ack_number: number,
            acked: FragmentId::default(),
            highest: FragmentId::default(),
            mean_interarrival: None,
            current_state: salsify_codec::StateHash::INITIAL,
            frames_lost: 0,
            held_states: Vec::new(),
        }
        .emit(&mut out)
        .unwrap();
        out
    }

    /// A restarted Salsify receiver numbers its ACKs from zero again: the sender accepts
    /// them, the watch counts them as refused.
    #[test]
    fn salsify_acks_that_do_not_advance_count_as_refused() {
        let mut w = FeedbackWatch::new(RESET);
        w.on_feedback(&salsify_ack(500), true);
        assert_eq!(ack_number(&salsify_ack(7)), Some(7));
        for n in 0..REFUSED_FEEDBACK_LIMIT as u32 {
            assert_eq!(w.check(at(0)), None);
            w.on_feedback(&salsify_ack(n), true);
        }
        assert!(matches!(
            w.check(at(0)),
            Some(ResetReason::RefusedFeedback(_))
        ));
        w.on_feedback(&salsify_ack(501), true);
        assert_eq!(w.check(at(0)), None);
    }
}
