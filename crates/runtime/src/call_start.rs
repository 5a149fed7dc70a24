//! The instant a call started, shared between the sender, which knows it (its first
//! picture), and the relay, which starts its links' traces then: a simulation starts the
//! trace with the camera's first picture, so a live run that does the same meets the same
//! part of the trace, however long its threads took to start.

use std::sync::{Arc, OnceLock};

use salsify_time::Instant;

/// Set once, by the first [`CallStart::mark`]; clones share it.
#[derive(Debug, Clone, Default)]
pub struct CallStart(Arc<OnceLock<Instant>>);

impl CallStart {
    /// A start not yet marked.
    pub fn new() -> Self {
        CallStart::default()
    }

    /// Marks the start at `at`, unless it is marked already.
    pub fn mark(&self, at: Instant) {
        let _ = self.0.set(at);
    }

    /// The start, once marked.
    pub fn get(&self) -> Option<Instant> {
        self.0.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_mark_stands_and_clones_see_it() {
        let start = CallStart::new();
        let seen = start.clone();
        assert_eq!(seen.get(), None);
        start.mark(Instant::from_micros(7));
        start.mark(Instant::from_micros(3));
        assert_eq!(seen.get(), Some(Instant::from_micros(7)));
    }
}
