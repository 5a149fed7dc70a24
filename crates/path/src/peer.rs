//! Where the peer is: roaming on an authenticated session, path validation, and the
//! anti-amplification limit on an address not yet validated.
//!
//! The rules (see the crate docs for why):
//! - A datagram that **authenticates** from a new address moves the peer there if it is the
//!   newest its session has accepted ([`Origin::Authenticated`] `newest`); a replayed, late
//!   or reordered datagram moves nothing. The move is at once (no new session, no
//!   keyframe); the new address is challenged, and until it answers it gets at most
//!   `amplification` times the bytes received from it. An address that does not answer
//!   [`crate::PathConfig::challenge_tries`] challenges is given up on: the peer moves back
//!   to the last address that answered.
//! - Moving back to the last validated address needs no new challenge.
//! - **Plaintext** datagrams move nothing: a plaintext dialer talks to the address it
//!   dialed; a plaintext listener adopts a peer only after it answered a challenge sent in
//!   reply to its hello (a reply no larger than the hello), and another address only once
//!   the peer has been silent for [`crate::PathConfig::takeover_after`].

use std::net::SocketAddr;

use rand::Rng;
use salsify_time::Instant;

use crate::config::PathConfig;

/// How a datagram reached this side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Opened by the secure layer: only the peer could have sealed it. `newest`: its counter
    /// is above every counter its session accepted before.
    Authenticated {
        /// Newer than everything accepted before.
        newest: bool,
    },
    /// A plaintext datagram: anyone could have sent it.
    Plain,
}

/// A challenge out, waiting for its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Challenge {
    to: SocketAddr,
    token: u64,
    tries: u32,
    /// When to send it (again), or give up.
    next: Instant,
    /// A plaintext candidate's challenge (sent once per hello; not repeated).
    candidate: bool,
}

/// What changed about the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerChange {
    /// The peer is now at `to` (first known, or moved).
    Moved {
        /// Where it was.
        from: Option<SocketAddr>,
        /// Where it is.
        to: SocketAddr,
    },
    /// The address answered its challenge.
    Validated(SocketAddr),
    /// A new address never answered: back to the last one that did.
    Reverted {
        /// The address given up on.
        from: SocketAddr,
        /// Where the peer is again.
        to: SocketAddr,
    },
}

/// The peer's address and what is known of it.
#[derive(Debug, Clone)]
pub struct PeerPath {
    config: PathConfig,
    current: Option<SocketAddr>,
    validated: bool,
    /// The last validated address, while the current one is not.
    fallback: Option<SocketAddr>,
    /// Bytes received from and sent to the current address while it is not validated.
    unvalidated_received: u64,
    unvalidated_sent: u64,
    challenge: Option<Challenge>,
    /// A challenge to send now: (to, token).
    pending: Option<(SocketAddr, u64)>,
    last_heard: Instant,
}

impl PeerPath {
    /// A peer at `peer` (the address dialed: chosen, so trusted), or none yet (a listener).
    pub fn new(config: PathConfig, peer: Option<SocketAddr>, now: Instant) -> Self {
        PeerPath {
            config,
            current: peer,
            validated: true,
            fallback: None,
            unvalidated_received: 0,
            unvalidated_sent: 0,
            challenge: None,
            pending: None,
            last_heard: now,
        }
    }

    /// Where the peer is, if known.
    pub fn current(&self) -> Option<SocketAddr> {
        self.current
    }

    /// Whether the current address answered (or was chosen).
    pub fn is_validated(&self) -> bool {
        self.validated
    }

    /// When the peer was last heard from.
    pub fn last_heard(&self) -> Instant {
        self.last_heard
    }

    /// A datagram of `size` bytes from `from`. Returns whether it is from the peer (after any
    /// move it made), and the change it made.
    pub fn on_received(
        &mut self,
        now: Instant,
        from: SocketAddr,
        size: usize,
        origin: Origin,
    ) -> (bool, Option<PeerChange>) {
        if self.current == Some(from) {
            self.last_heard = now;
            if !self.validated {
                self.unvalidated_received += size as u64;
            }
            return (true, None);
        }
        let Origin::Authenticated { newest } = origin else {
            return (false, None);
        };
        let Some(old) = self.current else {
            // A listener's first authenticated datagram: the handshake's round trip was made
            // from there.
            self.current = Some(from);
            self.validated = true;
            self.last_heard = now;
            return (true, Some(PeerChange::Moved { from: None, to: from }));
        };
        if !newest {
            return (false, None);
        }
        self.last_heard = now;
        self.current = Some(from);
        if self.fallback == Some(from) {
            // Back where it was validated.
            self.validated = true;
            self.fallback = None;
            self.challenge = None;
            return (
                true,
                Some(PeerChange::Moved {
                    from: Some(old),
                    to: from,
                }),
            );
        }
        if self.validated {
            self.fallback = Some(old);
        }
        self.validated = false;
        self.unvalidated_received = size as u64;
        self.unvalidated_sent = 0;
        self.challenge = Some(Challenge {
            to: from,
            token: rand::thread_rng().gen(),
            tries: 0,
            next: now,
            candidate: false,
        });
        (
            true,
            Some(PeerChange::Moved {
                from: Some(old),
                to: from,
            }),
        )
    }

    /// A plaintext listener that follows its driver's choice (a receiver whose session rules
    /// pick the sender): the peer is `to` from now on.
    pub fn follow(&mut self, now: Instant, to: SocketAddr) -> Option<PeerChange> {
        if self.current == Some(to) {
            return None;
        }
        let from = self.current.replace(to);
        self.validated = true;
        self.fallback = None;
        self.challenge = None;
        self.last_heard = now;
        Some(PeerChange::Moved { from, to })
    }

    /// Plaintext listener: a hello of `size` bytes from `from`. Challenges it (no more
    /// bytes than the hello) if it may take the peer's place.
    pub fn on_hello(&mut self, now: Instant, from: SocketAddr, size: usize) {
        if self.current == Some(from) || size < crate::wire::CHALLENGE_LEN {
            return;
        }
        let free = self.current.is_none()
            || now.saturating_duration_since(self.last_heard) >= self.config.takeover_after;
        if !free {
            return;
        }
        let token = rand::thread_rng().gen();
        self.challenge = Some(Challenge {
            to: from,
            token,
            tries: self.config.challenge_tries,
            next: now + self.config.challenge_every * self.config.challenge_tries,
            candidate: true,
        });
        self.pending = Some((from, token));
    }

    /// A response with `token` from `from`.
    pub fn on_response(&mut self, now: Instant, from: SocketAddr, token: u64) -> Option<PeerChange> {
        let c = self.challenge.filter(|c| c.to == from && c.token == token)?;
        self.challenge = None;
        if c.candidate {
            let old = self.current.replace(from);
            self.validated = true;
            self.fallback = None;
            self.last_heard = now;
            return Some(PeerChange::Moved { from: old, to: from });
        }
        if self.current != Some(from) {
            return None;
        }
        self.validated = true;
        self.fallback = None;
        Some(PeerChange::Validated(from))
    }

    /// Whether `size` more bytes may go to the peer now (an unvalidated address gets at most
    /// `amplification` times what it sent).
    pub fn may_send(&self, size: usize) -> bool {
        self.current.is_some()
            && (self.validated
                || self.unvalidated_sent + size as u64
                    <= self.config.amplification * self.unvalidated_received)
    }

    /// `size` bytes went to the peer.
    pub fn on_sent(&mut self, size: usize) {
        if !self.validated {
            self.unvalidated_sent += size as u64;
        }
    }

    /// Time passed: challenges due, an address given up on.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<PeerChange> {
        let c = self.challenge?;
        if now < c.next {
            return None;
        }
        if c.tries >= self.config.challenge_tries {
            self.challenge = None;
            if c.candidate || self.current != Some(c.to) {
                return None;
            }
            let back = self.fallback.take()?;
            self.current = Some(back);
            self.validated = true;
            return Some(PeerChange::Reverted {
                from: c.to,
                to: back,
            });
        }
        self.pending = Some((c.to, c.token));
        self.challenge = Some(Challenge {
            tries: c.tries + 1,
            next: now + self.config.challenge_every,
            ..c
        });
        None
    }

    /// A challenge to send now: (to, token).
    pub fn poll_challenge(&mut self) -> Option<(SocketAddr, u64)> {
        self.pending.take()
    }

    /// When [`PeerPath::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Instant {
        self.challenge.map_or(Instant::FAR_FUTURE, |c| c.next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use salsify_time::Duration;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([203, 0, 113, 7], port))
    }
    const NEWEST: Origin = Origin::Authenticated { newest: true };
    const OLD: Origin = Origin::Authenticated { newest: false };

    #[test]
    fn an_authenticated_newest_datagram_moves_the_peer_and_challenges_it() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        let (ours, change) = p.on_received(t0, addr(2), 100, NEWEST);
        assert!(ours);
        assert_eq!(
            change,
            Some(PeerChange::Moved {
                from: Some(addr(1)),
                to: addr(2)
            })
        );
        assert_eq!(p.current(), Some(addr(2)));
        assert!(!p.is_validated());
        p.handle_timeout(t0);
        let (to, token) = p.poll_challenge().unwrap();
        assert_eq!(to, addr(2));
        // Anti-amplification: 300 bytes at most before it answers.
        assert!(p.may_send(300));
        p.on_sent(250);
        assert!(!p.may_send(100));
        assert_eq!(p.on_response(t0, addr(3), token), None, "from elsewhere");
        assert_eq!(p.on_response(t0, addr(2), token ^ 1), None, "wrong token");
        assert_eq!(
            p.on_response(t0, addr(2), token),
            Some(PeerChange::Validated(addr(2)))
        );
        assert!(p.may_send(1_000_000));
    }

    #[test]
    fn replays_late_datagrams_and_plaintext_move_nothing() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        assert_eq!(p.on_received(t0, addr(9), 100, OLD), (false, None));
        assert_eq!(p.on_received(t0, addr(9), 100, Origin::Plain), (false, None));
        assert_eq!(p.current(), Some(addr(1)));
        assert!(p.is_validated());
    }

    #[test]
    fn an_address_that_never_answers_is_given_up_for_the_last_validated_one() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        p.on_received(t0, addr(66), 100, NEWEST);
        let mut t = t0;
        let mut reverted = None;
        for _ in 0..20 {
            if let Some(c) = p.handle_timeout(t) {
                reverted = Some(c);
                break;
            }
            t = t + Duration::from_millis(100);
        }
        assert_eq!(
            reverted,
            Some(PeerChange::Reverted {
                from: addr(66),
                to: addr(1)
            })
        );
        assert!(p.is_validated());
        assert!(t <= t0 + Duration::from_millis(1200), "{t:?}");
    }

    #[test]
    fn the_real_peer_speaking_again_moves_back_at_once() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        p.on_received(t0, addr(66), 100, NEWEST);
        let (_, change) = p.on_received(t0, addr(1), 100, NEWEST);
        assert!(matches!(change, Some(PeerChange::Moved { to, .. }) if to == addr(1)));
        assert!(p.is_validated(), "its old address needs no new challenge");
    }

    #[test]
    fn a_listener_takes_its_first_authenticated_peer() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), None, t0);
        assert!(!p.may_send(1));
        let (ours, change) = p.on_received(t0, addr(5), 61, OLD);
        assert!(ours);
        assert_eq!(change, Some(PeerChange::Moved { from: None, to: addr(5) }));
        assert!(p.may_send(1400));
    }

    #[test]
    fn a_plaintext_listener_adopts_only_an_address_that_answers() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), None, t0);
        p.on_hello(t0, addr(5), 4);
        assert_eq!(p.poll_challenge(), None, "a hello smaller than a challenge gets none");
        p.on_hello(t0, addr(5), 10);
        let (to, token) = p.poll_challenge().unwrap();
        assert_eq!(to, addr(5));
        assert_eq!(p.current(), None);
        assert_eq!(
            p.on_response(t0, addr(5), token),
            Some(PeerChange::Moved { from: None, to: addr(5) })
        );
        // Another address while the peer talks: no challenge.
        let t1 = t0 + Duration::from_millis(100);
        p.on_received(t1, addr(5), 50, Origin::Plain);
        p.on_hello(t1, addr(6), 10);
        assert_eq!(p.poll_challenge(), None);
        // The peer silent past the takeover time: the newcomer is challenged.
        let t2 = t1 + Duration::from_millis(600);
        p.on_hello(t2, addr(6), 10);
        assert_eq!(p.poll_challenge().map(|c| c.0), Some(addr(6)));
    }

    proptest! {
        /// Nothing but an authenticated newest datagram, or an answered challenge, ever
        /// changes the peer.
        #[test]
        fn strangers_never_move_the_peer(
            events in proptest::collection::vec((0u8..4, 1u16..5, 1usize..1500), 0..200)
        ) {
            let t0 = Instant::from_millis(0);
            let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
            let mut t = t0;
            for (kind, port, size) in events {
                t = t + Duration::from_millis(37);
                let change = match kind {
                    0 => p.on_received(t, addr(port), size, OLD).1,
                    1 => p.on_received(t, addr(port), size, Origin::Plain).1,
                    2 => { p.on_hello(t, addr(port), size); None }
                    _ => p.on_response(t, addr(port), size as u64),
                };
                prop_assert_eq!(change, None);
                prop_assert_eq!(p.handle_timeout(t), None);
                prop_assert_eq!(p.current(), Some(addr(1)));
            }
        }

        /// A moved-to address that has not answered never gets more than three times the
        /// bytes that came from it.
        #[test]
        fn an_unvalidated_address_draws_at_most_thrice(
            events in proptest::collection::vec((any::<bool>(), 1usize..1500), 0..200)
        ) {
            let t0 = Instant::from_millis(0);
            let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
            p.on_received(t0, addr(2), 80, NEWEST);
            let (mut received, mut sent) = (80u64, 0u64);
            for (incoming, size) in events {
                if incoming {
                    p.on_received(t0, addr(2), size, OLD);
                    received += size as u64;
                } else if p.may_send(size) {
                    p.on_sent(size);
                    sent += size as u64;
                }
                prop_assert!(sent <= 3 * received);
            }
        }
    }
}
