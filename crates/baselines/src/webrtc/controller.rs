//! The `goog_cc` controller as a value that may move between threads.
//!
//! [`SenderEndpoint`](salsify_endpoint::SenderEndpoint) is `Send` (the live runtime moves
//! senders onto their own threads), but `goog_cc` 0.1.4's `GoogCcNetworkController` is not:
//! it holds a `Box<dyn AcknowledgedBitrateEstimatorInterface>` whose trait has no `Send`
//! bound. Everything in it is owned data, so [`Controller`] asserts `Send` for it; see the
//! safety note.

use goog_cc::GoogCcNetworkController;

/// A `GoogCcNetworkController` (boxed: it is 7 kB) that may be sent to another thread (never
/// shared: no `Sync`).
pub struct Controller(Box<GoogCcNetworkController>);

// SAFETY: `GoogCcNetworkController` (goog_cc 0.1.4, pinned by Cargo.lock) is made only of
// owned values: numbers, `Option`s, `Vec`/`VecDeque`/`BTreeMap`s of numbers, its field-trial
// structs, and one `Box<dyn AcknowledgedBitrateEstimatorInterface>`, which the crate creates
// only in `AcknowledgedBitrateEstimator::create` as an `AcknowledgedBitrateEstimator` or a
// `RobustThroughputEstimator`, both again owned numbers and `VecDeque`s. The crate uses no
// `Rc`, `Cell`, `RefCell`, raw pointer or thread-local state (checked with grep over its
// source), so moving the whole value to another thread is sound; the `!Send` comes only from
// the trait object's missing bound. `Controller` is not `Sync` and is used through `&mut`.
#[allow(unsafe_code)]
unsafe impl Send for Controller {}

impl Controller {
    /// Wraps a controller.
    pub fn new(cc: GoogCcNetworkController) -> Self {
        Controller(Box::new(cc))
    }

    /// The controller.
    pub fn get_mut(&mut self) -> &mut GoogCcNetworkController {
        &mut self.0
    }
}
