//! The sliding replay window: which datagram counters of one session were already accepted.
//!
//! A counter is fresh when it is above every counter seen, or within the last [`WINDOW`] and
//! not seen yet. Checking is separate from recording so a datagram is recorded only once it
//! has been authenticated: a forgery with a fresh counter must not use it up.

/// Datagrams of reordering the window tolerates.
pub const WINDOW: u64 = 1024;

const WORDS: usize = (WINDOW / 64) as usize;

/// Accepted counters of one session, as a bitmap of the last [`WINDOW`] below the next
/// expected counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayWindow {
    /// One above the highest counter accepted (0: none yet).
    next: u64,
    /// Bit `c % WINDOW` is set when counter `c` (within the window) was accepted.
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            next: 0,
            bits: [0; WORDS],
        }
    }
}

impl ReplayWindow {
    /// Whether `counter` would be accepted (fresh and not too old).
    pub fn check(&self, counter: u64) -> bool {
        if counter >= self.next {
            return true;
        }
        self.next - counter <= WINDOW && !self.bit(counter)
    }

    /// Records `counter` as accepted; false (and no change) if it is not fresh.
    pub fn insert(&mut self, counter: u64) -> bool {
        if !self.check(counter) {
            return false;
        }
        if counter >= self.next {
            let advance = counter - self.next + 1;
            if advance >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for c in self.next..=counter {
                    self.set(c, false);
                }
            }
            self.next = counter + 1;
        }
        self.set(counter, true);
        true
    }

    /// One above the highest counter accepted.
    pub fn next(&self) -> u64 {
        self.next
    }

    fn bit(&self, counter: u64) -> bool {
        let i = counter % WINDOW;
        self.bits[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, counter: u64, on: bool) {
        let i = counter % WINDOW;
        let word = &mut self.bits[(i / 64) as usize];
        match on {
            true => *word |= 1 << (i % 64),
            false => *word &= !(1 << (i % 64)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn repeats_and_the_too_old_are_refused_reordering_within_the_window_is_not() {
        let mut w = ReplayWindow::default();
        assert!(w.insert(0));
        assert!(!w.insert(0));
        assert!(w.insert(5));
        assert!(w.insert(3), "late but inside the window");
        assert!(!w.insert(3));
        assert!(w.insert(5 + WINDOW - 1));
        assert!(!w.check(4), "4 fell out of the window");
        assert!(w.check(6) && w.insert(6));
        assert!(w.insert(u64::MAX - 1));
        assert!(!w.check(6));
    }

    proptest! {
        /// The window agrees with a set of every accepted counter: it accepts exactly the
        /// counters not accepted before that are within WINDOW of the highest so far.
        #[test]
        fn the_window_matches_a_model(ops in prop::collection::vec((0u64..3000, any::<bool>()), 1..400)) {
            let mut w = ReplayWindow::default();
            let mut seen = BTreeSet::new();
            for (counter, record) in ops {
                let next = seen.iter().next_back().map_or(0, |h| h + 1);
                let fresh = !seen.contains(&counter) && (counter >= next || next - counter <= WINDOW);
                prop_assert_eq!(w.check(counter), fresh);
                if record {
                    prop_assert_eq!(w.insert(counter), fresh);
                    if fresh {
                        seen.insert(counter);
                    }
                }
                prop_assert_eq!(w.next(), seen.iter().next_back().map_or(0, |h| h + 1));
            }
        }
    }
}
