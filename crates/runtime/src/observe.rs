//! What the loops report to whoever watches them (the demo's monitor, the tests): a plain
//! channel of [`Observation`]s. Sending never blocks, and a loop with no observer skips it.

use std::sync::mpsc;
use std::sync::Arc;

use salsify_codec::Image;
use salsify_endpoint::SentFrame;
use salsify_time::Instant;

/// One thing that happened in a loop.
#[derive(Debug, Clone)]
pub enum Observation {
    /// The camera supplied a picture.
    Captured {
        /// Picture number.
        picture: u64,
        /// When.
        at: Instant,
        /// The picture (for scoring what is shown).
        image: Arc<Image>,
    },
    /// The sender committed a frame (of its current session).
    Sent(SentFrame),
    /// The sender started a session: its first, or a fresh endpoint after the receiver went
    /// silent. Frame numbers start again, so a watcher matching shown frames to sent ones
    /// forgets the previous session's.
    SenderSession {
        /// The sender's session number, from 1.
        session: u32,
        /// The scheme it runs.
        scheme: &'static str,
    },
    /// The receiver showed a frame.
    Shown {
        /// The receiver's session number, from 1.
        session: u32,
        /// Frame number within the session.
        frame: u32,
        /// When.
        at: Instant,
        /// The picture, at the size it was coded (a resolution ladder may make it smaller
        /// than the source).
        image: Arc<Image>,
    },
    /// The relay's emulated links started (their traces and outages count from here).
    LinkStarted {
        /// When.
        at: Instant,
    },
}

/// An optional observer.
#[derive(Debug, Clone, Default)]
pub struct Observer(Option<mpsc::Sender<Observation>>);

impl Observer {
    /// Reports to `tx`.
    pub fn new(tx: mpsc::Sender<Observation>) -> Observer {
        Observer(Some(tx))
    }

    /// Whether anyone listens (so callers can skip building observations).
    pub fn active(&self) -> bool {
        self.0.is_some()
    }

    /// Reports `o`; a gone observer is ignored.
    pub fn report(&self, o: Observation) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(o);
        }
    }
}
