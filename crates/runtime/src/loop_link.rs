//! The link a loop talks through: a [`PeerLink`] of its own (`salsify send`, `salsify recv`),
//! or its side's share of a call's one link (`salsify call`), where the sender's media go
//! out as they are and the receiver's feedback is marked as feedback
//! ([`salsify_call::wire`]) and rides on the next media datagram sent in the same turn of
//! the call's loop when it fits, else goes alone when the turn ends
//! ([`CallLink::flush_feedback`]): never later than it would have gone on its own link.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use salsify_call::wire;
use salsify_time::Instant;

use crate::peer_link::PeerLink;
use crate::udp::Received;

/// Which loop of a call a share belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The side's sender: its media and data go out unmarked, with feedback riding on them.
    Sender,
    /// The side's receiver: what it sends is feedback.
    Receiver,
}

/// Counters of a call's link beyond the [`PeerLink`]'s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallLinkStats {
    /// Feedback datagrams that rode on a media datagram.
    pub feedback_bundled: u64,
    /// Feedback datagrams that went alone.
    pub feedback_alone: u64,
}

/// A call's one link, shared by its two loops (one thread: the call's loop).
#[derive(Debug)]
pub struct CallLink {
    link: PeerLink,
    /// Feedback the receiver emitted this turn, marked, waiting for a media datagram.
    feedback: Vec<Vec<u8>>,
    /// Bytes of feedback (and bundle framing) that rode on media this turn: the sender's
    /// endpoint counted its media datagram, not these.
    riding: usize,
    stats: CallLinkStats,
}

impl CallLink {
    /// A call's link over `link`.
    pub fn new(link: PeerLink) -> Rc<RefCell<CallLink>> {
        Rc::new(RefCell::new(CallLink {
            link,
            feedback: Vec::new(),
            riding: 0,
            stats: CallLinkStats::default(),
        }))
    }

    /// The link itself.
    pub fn link(&mut self) -> &mut PeerLink {
        &mut self.link
    }

    /// Whether the peer can be sent to now ([`PeerLink::ready`]).
    pub fn link_ready(&self, now: Instant) -> bool {
        self.link.ready(now)
    }

    /// The counters.
    pub fn stats(&self) -> CallLinkStats {
        self.stats
    }

    /// Sends the feedback no media datagram took this turn, each alone; returns the bytes
    /// of each (before sealing), and of what rode on media, for the sender's budget.
    pub fn flush_feedback(&mut self, now: Instant) -> Vec<usize> {
        let mut sizes = Vec::new();
        if self.riding > 0 {
            sizes.push(std::mem::take(&mut self.riding));
        }
        for f in std::mem::take(&mut self.feedback) {
            if self.link.send(now, &f, None) > 0 {
                self.stats.feedback_alone += 1;
                sizes.push(f.len());
            }
        }
        sizes
    }

    /// Sends `media`, with as much waiting feedback on it as fits in a datagram the path
    /// carries. Returns the bytes sent.
    fn send_media(&mut self, now: Instant, media: &[u8]) -> usize {
        if self.feedback.is_empty() || media.first() == Some(&wire::BUNDLE_TAG) {
            return self.link.send(now, media, None);
        }
        let max = self.link.max_scheme_datagram();
        let mut parts: Vec<&[u8]> = vec![media];
        let mut size = wire::bundle_overhead(1) + media.len();
        let mut taken = 0;
        for f in &self.feedback {
            if size + 2 + f.len() > max {
                break;
            }
            size += 2 + f.len();
            parts.push(f);
            taken += 1;
        }
        if taken == 0 {
            return self.link.send(now, media, None);
        }
        let Some(bundle) = wire::bundle(&parts) else {
            return self.link.send(now, media, None);
        };
        let sent = self.link.send(now, &bundle, None);
        if sent > 0 {
            self.feedback.drain(..taken);
            self.stats.feedback_bundled += taken as u64;
            self.riding += bundle.len() - media.len();
        }
        sent
    }
}

/// A loop's link: its own, or its side's share of a call's.
#[derive(Debug)]
pub enum LoopLink {
    /// A link of its own (boxed: a link is large, a share is a pointer).
    Own(Box<PeerLink>),
    /// One side of a call's link.
    Shared(Rc<RefCell<CallLink>>, Side),
}

impl LoopLink {
    /// Runs `f` on the [`PeerLink`] underneath.
    fn with<T>(&self, f: impl FnOnce(&PeerLink) -> T) -> T {
        match self {
            LoopLink::Own(l) => f(l),
            LoopLink::Shared(c, _) => f(&c.borrow().link),
        }
    }

    fn with_mut<T>(&mut self, f: impl FnOnce(&mut PeerLink) -> T) -> T {
        match self {
            LoopLink::Own(l) => f(l),
            LoopLink::Shared(c, _) => f(&mut c.borrow_mut().link),
        }
    }

    /// See [`PeerLink::receive`] (a call's loop opens datagrams itself and hands the parts on).
    pub fn receive(&mut self, d: &Received) -> Option<(SocketAddr, Vec<u8>)> {
        self.with_mut(|l| l.receive(d))
    }

    /// Sends a datagram of this loop's: see [`PeerLink::send`]. In a call, a receiver's is
    /// held as feedback for the turn (reported as its size: it is sent this turn).
    pub fn send(&mut self, now: Instant, bytes: &[u8], to: Option<SocketAddr>) -> usize {
        match self {
            LoopLink::Own(l) => l.send(now, bytes, to),
            LoopLink::Shared(c, Side::Receiver) => {
                let marked = wire::feedback(bytes);
                let len = marked.len();
                c.borrow_mut().feedback.push(marked);
                len
            }
            LoopLink::Shared(c, Side::Sender) => c.borrow_mut().send_media(now, bytes),
        }
    }

    /// Sends a control message of the call's (a goodbye): unmarked, alone, in any share.
    pub fn send_control(&mut self, now: Instant, bytes: &[u8]) -> usize {
        self.with_mut(|l| l.send(now, bytes, None))
    }

    /// Whether this is a share of a call's link (whose loop watches the peer for both).
    pub fn is_shared(&self) -> bool {
        matches!(self, LoopLink::Shared(..))
    }

    /// See [`PeerLink::flush`].
    pub fn flush(&mut self, now: Instant) -> usize {
        self.with_mut(|l| l.flush(now))
    }

    /// See [`PeerLink::ready`].
    pub fn ready(&self, now: Instant) -> bool {
        self.with(|l| l.ready(now))
    }

    /// See [`PeerLink::deadline`].
    pub fn deadline(&self) -> Instant {
        self.with(PeerLink::deadline)
    }

    /// See [`PeerLink::busy_refused`].
    pub fn busy_refused(&self) -> u64 {
        self.with(PeerLink::busy_refused)
    }

    /// See [`PeerLink::rejected`].
    pub fn rejected(&self) -> u64 {
        self.with(PeerLink::rejected)
    }

    /// See [`PeerLink::is_initiator`].
    pub fn is_initiator(&self) -> bool {
        self.with(PeerLink::is_initiator)
    }

    /// See [`PeerLink::restart_handshake`]. A call's receiver never restarts it (its
    /// sender's sessions do).
    pub fn restart_handshake(&mut self, now: Instant) {
        self.with_mut(|l| l.restart_handshake(now));
    }

    /// See [`PeerLink::max_scheme_datagram`].
    pub fn max_scheme_datagram(&self) -> usize {
        self.with(PeerLink::max_scheme_datagram)
    }

    /// See [`PeerLink::follow`].
    pub fn follow(&mut self, now: Instant, to: SocketAddr) {
        self.with_mut(|l| l.follow(now, to));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's tags are no one else's first byte: not a scheme's, the audio's, the path's,
    /// the meeting's or the secure layer's.
    #[test]
    fn call_tags_are_no_other_layers_first_byte() {
        let others = [
            salsify_endpoint::SALSIFY_WIRE_TAG,
            salsify_endpoint::BASELINE_WIRE_TAG,
            salsify_endpoint::SPROUT_WIRE_TAG,
            salsify_audio::AUDIO_WIRE_TAG,
            salsify_path::wire::PATH_TAG,
            salsify_meet::rendezvous::MEET_TAG,
        ];
        for tag in [
            wire::FEEDBACK_TAG,
            wire::BUNDLE_TAG,
            wire::DATA_TAG,
            wire::CONTROL_TAG,
        ] {
            assert!(!others.contains(&tag), "{tag:#04x} is taken");
            assert!(
                !salsify_secure::is_secure(&[tag]),
                "{tag:#04x} is the secure layer's"
            );
            assert!(!salsify_meet::meeting::is_meet(&[tag]));
        }
    }
}
