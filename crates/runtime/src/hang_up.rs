//! When a call is over: the peer said goodbye, said it is busy, went silent, or never
//! answered. Every loop keeps one [`HangUpWatch`], tells it what it heard and when, and
//! ends (or, a receiver with `--stay`, waits for the next caller) when it names a reason;
//! as it ends on its own it says goodbye ([`say_goodbye`]).
//!
//! Plain state, time passed in: the loops' clocks drive it.

use salsify_call::control::{Control, GOODBYE_COPIES};
use salsify_time::{Duration, Instant};

use crate::loop_link::LoopLink;

/// How long a loop waits before it takes its peer as gone or absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HangUpConfig {
    /// A peer heard from once and then silent this long is gone (it crashed, or its
    /// goodbyes were lost). Default 10 s: longer than the path's keep-alive interval and a
    /// sender's session restart (2 s), so an outage of a few seconds is ridden out.
    pub gone_after: Option<Duration>,
    /// A side that dials and has heard nothing at all from its peer this long gives up
    /// (nothing listens there, or it wants keys). Default 5 s, well within the 15 s a person
    /// waits for a call to start. `None`: wait (a side that listens).
    pub no_answer_after: Option<Duration>,
}

impl Default for HangUpConfig {
    fn default() -> Self {
        HangUpConfig {
            gone_after: Some(Duration::from_secs(10)),
            no_answer_after: Some(Duration::from_secs(5)),
        }
    }
}

/// Why a call ended on the peer's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerEnded {
    /// It said goodbye.
    HungUp,
    /// It said it is in another call.
    Busy,
    /// It was heard, then nothing for this long.
    Silent(Duration),
    /// Nothing was ever heard from it in this long.
    NoAnswer(Duration),
}

impl PeerEnded {
    /// Whether the call failed (rather than ended): the command exits non-zero.
    pub fn failed(self) -> bool {
        matches!(self, PeerEnded::Busy | PeerEnded::NoAnswer(_))
    }

    /// What happened, for a person: `peer` names the other side ("the sender").
    pub fn say(self, peer: &str) -> String {
        match self {
            PeerEnded::HungUp => format!("{peer} hung up"),
            PeerEnded::Busy => format!("{peer} is busy (in another call)"),
            PeerEnded::Silent(d) => format!("{peer} went silent {:.0} s ago", d.as_secs_f64()),
            PeerEnded::NoAnswer(d) => format!("no answer from {peer} in {:.0} s", d.as_secs_f64()),
        }
    }
}

/// What a loop heard of its peer, and whether the call is over.
#[derive(Debug, Clone)]
pub struct HangUpWatch {
    config: HangUpConfig,
    started: Instant,
    last_heard: Option<Instant>,
    ended: Option<PeerEnded>,
}

impl HangUpWatch {
    /// A watch from `now`.
    pub fn new(config: HangUpConfig, now: Instant) -> Self {
        HangUpWatch {
            config,
            started: now,
            last_heard: None,
            ended: None,
        }
    }

    /// Something of the peer's (authenticated, or from the session's address) came at `at`.
    pub fn on_heard(&mut self, at: Instant) {
        self.last_heard = Some(self.last_heard.map_or(at, |t| t.max(at)));
    }

    /// A control message from the peer.
    pub fn on_control(&mut self, control: Control) {
        self.ended.get_or_insert(match control {
            Control::Goodbye => PeerEnded::HungUp,
            Control::Busy => PeerEnded::Busy,
        });
    }

    /// Starts over, as for a new caller (a receiver with `--stay`).
    pub fn reset(&mut self, now: Instant) {
        self.started = now;
        self.last_heard = None;
        self.ended = None;
    }

    /// Whether the peer was ever heard.
    pub fn heard(&self) -> bool {
        self.last_heard.is_some()
    }

    /// Why the call is over at `now`, if it is.
    pub fn check(&mut self, now: Instant) -> Option<PeerEnded> {
        if self.ended.is_none() {
            self.ended = match self.last_heard {
                Some(t) => self
                    .config
                    .gone_after
                    .filter(|&d| now.saturating_duration_since(t) >= d)
                    .map(PeerEnded::Silent),
                None => self
                    .config
                    .no_answer_after
                    .filter(|&d| now.saturating_duration_since(self.started) >= d)
                    .map(PeerEnded::NoAnswer),
            };
        }
        self.ended
    }

    /// When [`HangUpWatch::check`] may next name a reason.
    pub fn next_at(&self) -> Instant {
        let at = match self.last_heard {
            Some(t) => self.config.gone_after.map(|d| t + d),
            None => self.config.no_answer_after.map(|d| self.started + d),
        };
        at.unwrap_or(Instant::FAR_FUTURE)
    }
}

/// Says goodbye to the peer: [`GOODBYE_COPIES`] copies, sealed, no answer awaited. Nothing
/// when the peer cannot be sent to (no session, nobody met).
pub fn say_goodbye(link: &mut LoopLink, now: Instant) {
    if !link.ready(now) {
        return;
    }
    for _ in 0..GOODBYE_COPIES {
        link.send_control(now, &Control::Goodbye.encode());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    #[test]
    fn a_goodbye_ends_at_once_and_silence_after_the_timeout() {
        let mut w = HangUpWatch::new(HangUpConfig::default(), at(0));
        w.on_heard(at(1));
        assert_eq!(w.check(at(10)), None);
        assert_eq!(
            w.check(at(11)),
            Some(PeerEnded::Silent(Duration::from_secs(10)))
        );
        let mut w = HangUpWatch::new(HangUpConfig::default(), at(0));
        w.on_heard(at(1));
        w.on_control(Control::Goodbye);
        assert_eq!(w.check(at(1)), Some(PeerEnded::HungUp));
        w.on_control(Control::Busy);
        assert_eq!(
            w.check(at(1)),
            Some(PeerEnded::HungUp),
            "the first reason stays"
        );
    }

    #[test]
    fn a_dialer_that_hears_nothing_gives_up_and_a_listener_waits() {
        let mut dialer = HangUpWatch::new(HangUpConfig::default(), at(0));
        assert_eq!(dialer.next_at(), at(5));
        assert_eq!(dialer.check(at(4)), None);
        let ended = dialer.check(at(5)).unwrap();
        assert!(ended.failed());
        assert_eq!(
            ended.say("the receiver"),
            "no answer from the receiver in 5 s"
        );
        let listening = HangUpConfig {
            no_answer_after: None,
            ..HangUpConfig::default()
        };
        let mut listener = HangUpWatch::new(listening, at(0));
        assert_eq!(listener.check(at(3600)), None);
        assert_eq!(listener.next_at(), Instant::FAR_FUTURE);
        listener.on_heard(at(3600));
        listener.reset(at(3601));
        assert!(!listener.heard());
    }
}
