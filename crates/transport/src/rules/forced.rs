//! When a frame is forced out although the budget says skip, because feedback is starved.

use std::fmt::Debug;

use crate::decision;

/// A forced-send rule.
pub trait ForcedSend: Debug + Send {
    /// True when, after `consecutive_skips` skips in a row with `in_flight` fragments out, a
    /// frame must go anyway for feedback to flow.
    fn feedback_starved(&self, consecutive_skips: u32, in_flight: u64) -> bool;
}

/// The paper's ([`decision::paper_forced`]): after `max_consecutive_skips` skips, whether or
/// not fragments are in flight.
#[derive(Debug, Clone, Copy)]
pub struct PaperForced {
    max_consecutive_skips: u32,
}

impl PaperForced {
    /// Forced after `max_consecutive_skips` skips.
    pub fn new(max_consecutive_skips: u32) -> Self {
        PaperForced {
            max_consecutive_skips,
        }
    }
}

impl ForcedSend for PaperForced {
    fn feedback_starved(&self, consecutive_skips: u32, _in_flight: u64) -> bool {
        decision::paper_forced(consecutive_skips, self.max_consecutive_skips)
    }
}

/// The slow-link rules' ([`decision::feedback_starved`]): after `idle_link_skips` skips, and
/// only with nothing in flight (one fragment into an idle link queues behind nothing).
#[derive(Debug, Clone, Copy)]
pub struct IdleLinkForced {
    idle_link_skips: u32,
}

impl IdleLinkForced {
    /// Forced after `idle_link_skips` skips with nothing in flight.
    pub fn new(idle_link_skips: u32) -> Self {
        IdleLinkForced { idle_link_skips }
    }
}

impl ForcedSend for IdleLinkForced {
    fn feedback_starved(&self, consecutive_skips: u32, in_flight: u64) -> bool {
        decision::feedback_starved(consecutive_skips, self.idle_link_skips, in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_paper_forces_with_fragments_in_flight() {
        let paper = PaperForced::new(4);
        assert!(!paper.feedback_starved(3, 0));
        assert!(paper.feedback_starved(4, 7));
        let idle = IdleLinkForced::new(1);
        assert!(!idle.feedback_starved(0, 0));
        assert!(idle.feedback_starved(1, 0));
        assert!(!idle.feedback_starved(9, 1));
    }
}
