//! A bounded, ordered set of codec states, as both ends keep them.
//!
//! States are kept in the order they were reached (by frame number). Both ends drop states
//! older than one the peer is known to have moved past, and a hard cap bounds memory even if
//! the peer never says so. A state reached again (same hash) moves to the newest position.

use std::collections::VecDeque;

use salsify_codec::StateHash;

use crate::codec::CodecState;

/// States in the order they were reached, with the high-water mark of how many were held.
#[derive(Debug, Clone)]
pub struct StateStore<S> {
    entries: VecDeque<S>,
    cap: usize,
    max_held: usize,
}

impl<S: CodecState> StateStore<S> {
    /// An empty store holding at most `cap` states (at least one).
    pub fn new(cap: usize) -> Self {
        StateStore {
            entries: VecDeque::new(),
            cap: cap.max(1),
            max_held: 0,
        }
    }

    /// Adds `state` as the newest, dropping the oldest beyond the cap.
    pub fn insert(&mut self, state: S) {
        self.insert_sparing(state, None);
    }

    /// Adds `state` as the newest, as [`StateStore::insert`], but the cap never drops
    /// `reference`: a state still used as a reference must outlive the cap, however many
    /// states were reached from it since. (While the ACK path is down the sender encodes every
    /// probe from the same acknowledged state; with a plain cap the receiver dropped it after
    /// 16 probes and no later probe decoded.) The order is unchanged.
    pub fn insert_keeping(&mut self, state: S, reference: StateHash) {
        self.insert_sparing(state, Some(reference));
    }

    /// Adds `state` as the newest; beyond the cap drops the oldest states but `spare`.
    fn insert_sparing(&mut self, state: S, spare: Option<StateHash>) {
        let hash = state.hash();
        self.entries.retain(|s| s.hash() != hash);
        self.entries.push_back(state);
        while self.entries.len() > self.cap {
            match self.entries.iter().position(|s| Some(s.hash()) != spare) {
                Some(pos) => drop(self.entries.remove(pos)),
                None => break,
            }
        }
        self.max_held = self.max_held.max(self.entries.len());
    }

    /// The state named `hash`, if held.
    pub fn get(&self, hash: StateHash) -> Option<&S> {
        self.entries.iter().rev().find(|s| s.hash() == hash)
    }

    /// True if `hash` is held.
    pub fn contains(&self, hash: StateHash) -> bool {
        self.get(hash).is_some()
    }

    /// Drops every state older than `hash`; nothing if `hash` is not held.
    pub fn evict_older_than(&mut self, hash: StateHash) {
        if let Some(pos) = self.entries.iter().position(|s| s.hash() == hash) {
            self.entries.drain(..pos);
        }
    }

    /// Drops every state older than `hash` but the `keep` newest of them; nothing if `hash`
    /// is not held.
    pub fn evict_older_than_keeping(&mut self, hash: StateHash, keep: usize) {
        if let Some(pos) = self.entries.iter().position(|s| s.hash() == hash) {
            self.entries.drain(..pos.saturating_sub(keep));
        }
    }

    /// The newest state (the unit tests' view of the store).
    #[cfg(test)]
    pub fn newest(&self) -> Option<&S> {
        self.entries.back()
    }

    /// Hashes of the newest `n` states, oldest first.
    pub fn newest_hashes(&self, n: usize) -> Vec<StateHash> {
        let skip = self.entries.len().saturating_sub(n);
        self.entries.iter().skip(skip).map(|s| s.hash()).collect()
    }

    /// States held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Most states held at once so far.
    pub fn max_held(&self) -> usize {
        self.max_held
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeState;

    fn s(h: u64) -> FakeState {
        FakeState(StateHash(h))
    }

    #[test]
    fn keeps_order_evicts_and_caps() {
        let mut store = StateStore::new(3);
        for h in 1..=3 {
            store.insert(s(h));
        }
        assert_eq!(store.newest_hashes(8), [1, 2, 3].map(StateHash));
        store.insert(s(4));
        assert!(!store.contains(StateHash(1)));
        store.insert(s(2)); // reached again: moves to the newest position
        assert_eq!(store.newest_hashes(2), [4, 2].map(StateHash));
        store.evict_older_than(StateHash(4));
        assert_eq!(store.newest_hashes(8), [4, 2].map(StateHash));
        store.evict_older_than(StateHash(99));
        assert_eq!(store.len(), 2);
        assert_eq!(store.max_held(), 3);
        assert_eq!(store.newest(), Some(&s(2)));
    }

    #[test]
    fn a_reference_in_use_outlives_the_cap() {
        let mut store = StateStore::new(4);
        store.insert(s(1));
        for h in 10..30 {
            store.insert_keeping(s(h), StateHash(1)); // every new state reached from state 1
        }
        assert_eq!(store.newest_hashes(8), [1, 27, 28, 29].map(StateHash));
        store.insert_keeping(s(30), StateHash(99)); // not held: a plain insert
        assert_eq!(store.newest_hashes(8), [27, 28, 29, 30].map(StateHash));
        assert_eq!(store.max_held(), 4);
    }
}
