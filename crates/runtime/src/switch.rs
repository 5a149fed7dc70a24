//! A switch another thread turns (a call window's `m` and `v` keys), read by a call's
//! audio and picture sources each frame.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared on/off flag; two switches are equal when they are the same flag.
#[derive(Debug, Clone, Default)]
pub struct Switch(Arc<AtomicBool>);

impl Switch {
    /// A switch reading `flag`.
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        Switch(flag)
    }

    /// Whether it is on now.
    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Switch {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
