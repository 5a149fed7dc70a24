//! [`StateHash`], the name of a decoder state on the wire and in errors: a plain value below
//! both the [`State`](crate::State) it names and the errors that quote it.

use std::fmt;

/// The 64-bit content hash that names a [`State`](crate::State) (xxh3 over the frame size and the stored
/// reference planes). [`StateHash::INITIAL`] names the state with no reference.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StateHash(pub u64);

impl StateHash {
    /// The initial state: no reference picture, so the next frame must be a keyframe.
    ///
    /// Keyframes name it as their source, since they decode from any state.
    pub const INITIAL: StateHash = StateHash(0);
}

impl fmt::Debug for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Display for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
