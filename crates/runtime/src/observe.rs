//! What the loops report to whoever watches them (the demo's monitor, a dashboard, the
//! tests): a channel of [`Observation`]s. Sending never blocks: an unbounded channel, or a
//! bounded one that drops (and counts) what does not fit. A loop with no observer skips it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TrySendError};
use std::sync::Arc;

use salsify_codec::Image;
use salsify_endpoint::{Diagnostic, ReceiverStats, SenderStats, SentFrame};
use salsify_time::{Duration, Instant};

/// How often the loops report their counters ([`Observation::SenderState`] and the like)
/// to an observer.
pub const STATE_EVERY: Duration = Duration::from_millis(100);

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
        /// When its first datagram was sent, where the scheme's wire says (on one machine,
        /// `at` minus this is the frame's network and decode delay).
        sent_at: Option<Instant>,
    },
    /// The relay's emulated links started (their traces and outages count from here).
    LinkStarted {
        /// When.
        at: Instant,
    },
    /// The sender's counters and its scheme's own gauges, every [`STATE_EVERY`].
    SenderState {
        /// When.
        at: Instant,
        /// Summed over every session.
        stats: SenderStats,
        /// The current session's scheme's gauges (`SenderEndpoint::diagnostics`).
        diagnostics: Vec<Diagnostic>,
    },
    /// The receiver's counters, every [`STATE_EVERY`].
    ReceiverState {
        /// When.
        at: Instant,
        /// Frames shown over all sessions.
        shown: u64,
        /// The current session's counters (from zero again in a new session).
        stats: ReceiverStats,
        /// Datagrams the secure layer refused before any session saw them.
        rejected: u64,
    },
    /// The receiver's audio over the second just past (in a call that carries audio).
    AudioSecond {
        /// When.
        at: Instant,
        /// The figures.
        audio: crate::audio_receive::AudioSecond,
    },
    /// The receiver played an audio frame (in a call that carries audio).
    AudioPlayed(salsify_audio::PlayedFrame),
    /// The receiver's audio figures for the whole call, as it ends (if it heard audio).
    AudioSummary(salsify_audio::AudioSummary),
    /// The relay's video direction, every [`STATE_EVERY`]: counters since its link started.
    LinkState {
        /// When.
        at: Instant,
        /// Bytes the link could have carried (its delivery opportunities); `None` without a
        /// link (forwarded at once).
        capacity_bytes: Option<u64>,
        /// Bytes delivered (`None` without a link).
        delivered_bytes: Option<u64>,
        /// Bytes waiting in the link's queue now.
        queued_bytes: u64,
        /// Datagrams the link dropped (queue full or a loss model).
        dropped: u64,
        /// Datagrams the relay refused (from outside loopback when it keeps to loopback).
        refused: u64,
    },
}

/// Where an observer's reports go.
#[derive(Debug, Clone)]
enum Channel {
    Unbounded(mpsc::Sender<Observation>),
    /// Full: the report is dropped and counted.
    Bounded(mpsc::SyncSender<Observation>, Arc<AtomicU64>),
}

/// An optional observer.
#[derive(Debug, Clone, Default)]
pub struct Observer(Option<Channel>);

impl Observer {
    /// Reports to `tx`.
    pub fn new(tx: mpsc::Sender<Observation>) -> Observer {
        Observer(Some(Channel::Unbounded(tx)))
    }

    /// Reports to `tx` while it has room; a report that does not fit is dropped and counted
    /// in `dropped` (for a watcher that must never hold the loop up, such as a dashboard).
    pub fn bounded(tx: mpsc::SyncSender<Observation>, dropped: Arc<AtomicU64>) -> Observer {
        Observer(Some(Channel::Bounded(tx, dropped)))
    }

    /// Whether anyone listens (so callers can skip building observations).
    pub fn active(&self) -> bool {
        self.0.is_some()
    }

    /// Reports `o`; a gone observer is ignored.
    pub fn report(&self, o: Observation) {
        match &self.0 {
            None => {}
            Some(Channel::Unbounded(tx)) => {
                let _ = tx.send(o);
            }
            Some(Channel::Bounded(tx, dropped)) => {
                if let Err(TrySendError::Full(_)) = tx.try_send(o) {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bounded observer never waits: what does not fit is counted and dropped.
    #[test]
    fn a_bounded_observer_drops_when_full() {
        let (tx, rx) = mpsc::sync_channel(2);
        let dropped = Arc::new(AtomicU64::new(0));
        let o = Observer::bounded(tx, dropped.clone());
        for _ in 0..5 {
            o.report(Observation::LinkStarted { at: Instant::ZERO });
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        assert_eq!(rx.try_iter().count(), 2);
    }
}
