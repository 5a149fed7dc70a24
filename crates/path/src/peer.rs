//! Where the peer is: roaming on an authenticated session, with path validation before a
//! move and the anti-amplification limit on an address not yet validated.
//!
//! The rules (see the crate docs for why):
//! - A datagram that **authenticates** from a new address, and is the newest its session has
//!   accepted ([`Origin::Authenticated`] `newest`; a replayed, late or reordered datagram is
//!   not), makes that address a candidate: it is challenged, and the peer moves there, with
//!   no new session, as soon as it answers. Until then the peer stays where it was, and the
//!   candidate gets nothing but challenges, at most `amplification` times the bytes that
//!   came from it. A stranger who replays a datagram the path lost (which the replay window
//!   cannot refuse: it never arrived) draws a challenge it cannot answer, and nothing else.
//! - Every authenticated datagram is the peer's, wherever it came from: it goes to the
//!   scheme (the secure layer refused the replays).
//! - **Plaintext** datagrams move nothing: a plaintext dialer talks to the address it dialed;
//!   a plaintext listener adopts a peer only after it answered a challenge sent in reply to
//!   its hello (a reply no larger than the hello), and another address only once the peer
//!   has been silent for [`crate::PathConfig::takeover_after`].
//! - A listener's first authenticated datagram gives it its peer at once: the handshake's
//!   round trip was made from there.
//! - A copy that beat the peer's own datagram there (an on-path stranger forwarding what it
//!   sees, as in RFC 9000 section 9.3.3) is found out when the peer's next newest datagram
//!   comes from where it was: the candidate is dropped. An address dropped or given up on is
//!   not challenged again for [`crate::PathConfig::rechallenge_after`], doubling each time,
//!   so such a stranger draws a few challenges in a call, not one for each race it wins.

use std::net::SocketAddr;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use salsify_time::{Duration, Instant};

use crate::config::PathConfig;
use crate::wire::CHALLENGE_LEN;

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

/// An address being validated before the peer may move there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Candidate {
    to: SocketAddr,
    token: u64,
    /// Challenges sent.
    tries: u32,
    /// When to send the next challenge, or give up.
    next: Instant,
    /// Bytes received from it, and sent to it (challenges).
    received: u64,
    sent: u64,
}

/// What changed about the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerChange {
    /// The peer is now at `to` (first known, or moved after answering a challenge).
    Moved {
        /// Where it was.
        from: Option<SocketAddr>,
        /// Where it is.
        to: SocketAddr,
    },
    /// A candidate address never answered its challenges: the peer stays where it is.
    Unanswered(SocketAddr),
}

/// The peer tracker's random stream of [`PathConfig::seed`].
const RNG_STREAM: u64 = 1;

/// Addresses remembered as held off: a stranger with more addresses than this draws at most
/// its amplification credit's challenges at each.
const HELD_OFF: usize = 8;

/// An address given up on: not challenged before `until`; `wait` is the last hold-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeldOff {
    addr: SocketAddr,
    until: Instant,
    wait: Duration,
}

/// The peer's address and the candidate it may move to.
#[derive(Debug, Clone)]
pub struct PeerPath {
    config: PathConfig,
    current: Option<SocketAddr>,
    candidate: Option<Candidate>,
    /// A challenge to send now: (to, token).
    pending: Option<(SocketAddr, u64)>,
    last_heard: Instant,
    /// Draws the challenges' tokens ([`PathConfig::seed`]).
    rng: ChaCha8Rng,
    /// Addresses given up on, each with when it may be challenged again.
    held_off: Vec<HeldOff>,
}

impl PeerPath {
    /// A peer at `peer` (the address dialed: chosen, so trusted), or none yet (a listener).
    pub fn new(config: PathConfig, peer: Option<SocketAddr>, now: Instant) -> Self {
        PeerPath {
            rng: config.rng(RNG_STREAM),
            config,
            current: peer,
            candidate: None,
            pending: None,
            last_heard: now,
            held_off: Vec::new(),
        }
    }

    /// Where the peer is, if known.
    pub fn current(&self) -> Option<SocketAddr> {
        self.current
    }

    /// When the peer was last heard from at its current address.
    pub fn last_heard(&self) -> Instant {
        self.last_heard
    }

    /// The address being validated, if any.
    pub fn candidate(&self) -> Option<SocketAddr> {
        self.candidate.map(|c| c.to)
    }

    /// A datagram of `size` bytes from `from`. Returns whether it is the peer's (to pass on),
    /// and the change it made.
    pub fn on_received(
        &mut self,
        now: Instant,
        from: SocketAddr,
        size: usize,
        origin: Origin,
    ) -> (bool, Option<PeerChange>) {
        if self.current == Some(from) {
            self.last_heard = now;
            if origin == (Origin::Authenticated { newest: true }) {
                // The peer is still here: the candidate's datagram was a copy that won a race.
                if let Some(c) = self.candidate.take() {
                    self.hold_off(now, c.to);
                }
            }
            return (true, None);
        }
        let Origin::Authenticated { newest } = origin else {
            return (false, None);
        };
        if self.current.is_none() {
            self.current = Some(from);
            self.last_heard = now;
            self.candidate = None;
            return (
                true,
                Some(PeerChange::Moved {
                    from: None,
                    to: from,
                }),
            );
        }
        let held_off = self.is_held_off(now, from);
        match &mut self.candidate {
            Some(c) if c.to == from => c.received += size as u64,
            _ if newest && !held_off => self.challenge(now, from, size, false),
            _ => {}
        }
        (true, None)
    }

    /// Makes `to` the candidate, with `received` bytes of credit; `once`: one challenge, sent
    /// at once (a plaintext hello buys no more).
    fn challenge(&mut self, now: Instant, to: SocketAddr, received: usize, once: bool) {
        self.candidate = Some(Candidate {
            to,
            token: self.rng.gen(),
            tries: 0,
            next: now,
            received: received as u64,
            sent: 0,
        });
        if once {
            self.handle_timeout(now);
            if let Some(c) = &mut self.candidate {
                c.tries = self.config.challenge_tries;
                c.next = now + self.config.challenge_every * self.config.challenge_tries;
            }
        }
    }

    /// The peer is at `to` from now on (the driver validated it another way).
    pub fn move_to(&mut self, now: Instant, to: SocketAddr) -> Option<PeerChange> {
        self.follow(now, to)
    }

    /// A plaintext listener that follows its driver's choice (a receiver whose session rules
    /// pick the sender): the peer is `to` from now on.
    pub fn follow(&mut self, now: Instant, to: SocketAddr) -> Option<PeerChange> {
        if self.current == Some(to) {
            return None;
        }
        let from = self.current.replace(to);
        self.candidate = None;
        self.held_off.retain(|h| h.addr != to);
        self.last_heard = now;
        Some(PeerChange::Moved { from, to })
    }

    /// Plaintext listener: a hello of `size` bytes from `from`. Challenges it (no more
    /// bytes than the hello) if it may take the peer's place.
    pub fn on_hello(&mut self, now: Instant, from: SocketAddr, size: usize) {
        if self.current == Some(from) || size < CHALLENGE_LEN {
            return;
        }
        let free = self.current.is_none()
            || now.saturating_duration_since(self.last_heard) >= self.config.takeover_after;
        if free {
            self.challenge(now, from, size, true);
        }
    }

    /// A response with `token` from `from`: the candidate answered, the peer moves there.
    pub fn on_response(
        &mut self,
        now: Instant,
        from: SocketAddr,
        token: u64,
    ) -> Option<PeerChange> {
        self.candidate
            .filter(|c| c.to == from && c.token == token)?;
        self.candidate = None;
        self.held_off.retain(|h| h.addr != from);
        let old = self.current.replace(from);
        self.last_heard = now;
        Some(PeerChange::Moved {
            from: old,
            to: from,
        })
    }

    /// Time passed: challenges due, a candidate given up on.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<PeerChange> {
        let c = self.candidate.as_mut()?;
        if now < c.next {
            return None;
        }
        let size = (CHALLENGE_LEN + self.config.seal_overhead) as u64;
        let credit = self.config.amplification * c.received;
        if c.tries >= self.config.challenge_tries || c.sent + size > credit {
            if c.tries >= self.config.challenge_tries {
                let gone = c.to;
                self.candidate = None;
                self.hold_off(now, gone);
                return Some(PeerChange::Unanswered(gone));
            }
            // Out of credit: wait for more from it, or give up at the usual time.
            c.tries += 1;
            c.next = now + self.config.challenge_every;
            return None;
        }
        c.tries += 1;
        c.sent += size;
        c.next = now + self.config.challenge_every;
        self.pending = Some((c.to, c.token));
        None
    }

    /// `addr` is not challenged again for a while: the first time for
    /// [`PathConfig::rechallenge_after`], then twice the last wait, up to its maximum.
    fn hold_off(&mut self, now: Instant, addr: SocketAddr) {
        let first = self.config.rechallenge_after;
        let longest = self.config.max_rechallenge_after.max(first);
        match self.held_off.iter_mut().find(|h| h.addr == addr) {
            Some(h) => {
                h.wait = (h.wait * 2).min(longest);
                h.until = now + h.wait;
            }
            None => {
                if self.held_off.len() == HELD_OFF {
                    // Forget the one free soonest.
                    if let Some(i) = (0..HELD_OFF).min_by_key(|&i| self.held_off[i].until) {
                        self.held_off.swap_remove(i);
                    }
                }
                self.held_off.push(HeldOff {
                    addr,
                    until: now + first,
                    wait: first,
                });
            }
        }
    }

    fn is_held_off(&self, now: Instant, addr: SocketAddr) -> bool {
        self.held_off
            .iter()
            .any(|h| h.addr == addr && now < h.until)
    }

    /// A challenge to send now: (to, token).
    pub fn poll_challenge(&mut self) -> Option<(SocketAddr, u64)> {
        self.pending.take()
    }

    /// When [`PeerPath::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Instant {
        self.candidate.map_or(Instant::FAR_FUTURE, |c| c.next)
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
    fn a_newest_datagram_from_a_new_address_is_challenged_and_the_answer_moves_the_peer() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        let (ours, change) = p.on_received(t0, addr(2), 100, NEWEST);
        assert!(ours, "authenticated: the scheme's");
        assert_eq!(change, None, "no move before the answer");
        assert_eq!(p.current(), Some(addr(1)));
        p.handle_timeout(t0);
        let (to, token) = p.poll_challenge().unwrap();
        assert_eq!(to, addr(2));
        assert_eq!(p.on_response(t0, addr(3), token), None, "from elsewhere");
        assert_eq!(p.on_response(t0, addr(2), token ^ 1), None, "wrong token");
        assert_eq!(
            p.on_response(t0, addr(2), token),
            Some(PeerChange::Moved {
                from: Some(addr(1)),
                to: addr(2)
            })
        );
        assert_eq!(p.current(), Some(addr(2)));
    }

    #[test]
    fn replays_late_datagrams_and_plaintext_challenge_nothing() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        assert_eq!(p.on_received(t0, addr(9), 100, OLD), (true, None));
        assert_eq!(
            p.on_received(t0, addr(9), 100, Origin::Plain),
            (false, None)
        );
        p.handle_timeout(t0);
        assert_eq!(p.poll_challenge(), None);
        assert_eq!(p.current(), Some(addr(1)));
    }

    #[test]
    fn an_address_that_never_answers_is_given_up_and_the_peer_never_left() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        p.on_received(t0, addr(66), 100, NEWEST);
        let mut t = t0;
        let mut challenges = 0;
        let mut given_up = None;
        for _ in 0..40 {
            if let Some(c) = p.handle_timeout(t) {
                given_up = Some(c);
                break;
            }
            challenges += usize::from(p.poll_challenge().is_some());
            t += Duration::from_millis(100);
        }
        assert_eq!(given_up, Some(PeerChange::Unanswered(addr(66))));
        assert_eq!(p.current(), Some(addr(1)));
        // 100 bytes from it buy at most 300 bytes of 10-byte challenges: all 5 tries here.
        assert_eq!(challenges, 5);
        assert!(t <= t0 + Duration::from_millis(1200), "{t:?}");
    }

    /// The peer sends a newest datagram every 10 ms from where it is; a stranger's copy of
    /// every 7th beats it there from the stranger's address (the original then refused as a
    /// replay). The stranger draws a few challenges over 20 s, not one for each race won.
    #[test]
    fn copies_that_win_the_race_draw_a_few_challenges_not_one_each() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        let (mut challenges, mut copies) = (0, 0);
        for i in 1..=2000u64 {
            let t = t0 + Duration::from_millis(10 * i);
            if i % 7 == 0 {
                copies += 1;
                assert_eq!(p.on_received(t, addr(66), 1000, NEWEST), (true, None));
            } else {
                assert_eq!(p.on_received(t, addr(1), 1000, NEWEST), (true, None));
            }
            assert!(!matches!(
                p.handle_timeout(t),
                Some(PeerChange::Moved { .. })
            ));
            challenges += usize::from(p.poll_challenge().is_some());
            assert_eq!(p.current(), Some(addr(1)));
        }
        // Held off 1, 2, 4, 8 s after each: five challenges in 20 s, for 285 copies.
        assert_eq!(copies, 285);
        assert!(challenges <= 6, "{challenges} challenges");
    }

    /// An address held off because a stranger's copies came from it can still be the peer's
    /// later: once its hold-off is over, its newest datagram is challenged and the answer moves
    /// the peer.
    #[test]
    fn an_address_held_off_is_challenged_again_after_its_wait() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
        p.on_received(t0, addr(2), 100, NEWEST);
        p.handle_timeout(t0);
        assert!(p.poll_challenge().is_some());
        let t1 = t0 + Duration::from_millis(10);
        p.on_received(t1, addr(1), 100, NEWEST);
        assert_eq!(p.candidate(), None, "the peer's own newer datagram: a copy");
        let t2 = t1 + Duration::from_millis(500);
        p.on_received(t2, addr(2), 100, NEWEST);
        assert_eq!(p.candidate(), None, "held off for 1 s");
        let t3 = t1 + Duration::from_millis(1001);
        p.on_received(t3, addr(2), 100, NEWEST);
        p.handle_timeout(t3);
        let (to, token) = p.poll_challenge().expect("challenged after its wait");
        assert_eq!(to, addr(2));
        assert!(matches!(
            p.on_response(t3, addr(2), token),
            Some(PeerChange::Moved { .. })
        ));
        assert_eq!(p.current(), Some(addr(2)));
    }

    #[test]
    fn challenges_to_a_candidate_stay_within_three_times_what_it_sent() {
        let config = PathConfig {
            seal_overhead: 29,
            ..PathConfig::default()
        };
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(config, Some(addr(1)), t0);
        // 45 bytes from it: 135 bytes of credit, three 39-byte challenges.
        p.on_received(t0, addr(66), 45, NEWEST);
        let mut sent = 0;
        for i in 0..10 {
            p.handle_timeout(t0 + Duration::from_millis(200 * i));
            sent += 39 * usize::from(p.poll_challenge().is_some());
        }
        assert_eq!(sent, 3 * 39);
    }

    #[test]
    fn a_listener_takes_its_first_authenticated_peer() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), None, t0);
        let (ours, change) = p.on_received(t0, addr(5), 61, OLD);
        assert!(ours);
        assert_eq!(
            change,
            Some(PeerChange::Moved {
                from: None,
                to: addr(5)
            })
        );
    }

    #[test]
    fn a_plaintext_listener_adopts_only_an_address_that_answers() {
        let t0 = Instant::from_millis(0);
        let mut p = PeerPath::new(PathConfig::default(), None, t0);
        p.on_hello(t0, addr(5), 4);
        assert_eq!(
            p.poll_challenge(),
            None,
            "a hello smaller than a challenge gets none"
        );
        p.on_hello(t0, addr(5), 10);
        let (to, token) = p.poll_challenge().unwrap();
        assert_eq!(to, addr(5));
        assert_eq!(p.current(), None);
        // One hello, one challenge: no repeats.
        p.handle_timeout(t0 + Duration::from_millis(300));
        assert_eq!(p.poll_challenge(), None);
        assert_eq!(
            p.on_response(t0, addr(5), token),
            Some(PeerChange::Moved {
                from: None,
                to: addr(5)
            })
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
        /// Nothing but an answered challenge ever moves the peer; replays, late datagrams,
        /// plaintext, hellos and wrong responses never do.
        #[test]
        fn strangers_never_move_the_peer(
            events in proptest::collection::vec((0u8..5, 1u16..5, 1usize..1500), 0..200)
        ) {
            let t0 = Instant::from_millis(0);
            let mut p = PeerPath::new(PathConfig::default(), Some(addr(1)), t0);
            let mut t = t0;
            for (kind, port, size) in events {
                t += Duration::from_millis(37);
                let change = match kind {
                    0 => p.on_received(t, addr(port), size, OLD).1,
                    1 => p.on_received(t, addr(port), size, Origin::Plain).1,
                    2 => p.on_received(t, addr(port), size, NEWEST).1,
                    3 => { p.on_hello(t, addr(port), size); None }
                    _ => p.on_response(t, addr(port), size as u64),
                };
                let moved = matches!(change, Some(PeerChange::Moved { .. }));
                prop_assert!(!moved);
                let _ = p.handle_timeout(t);
                let _ = p.poll_challenge();
                prop_assert_eq!(p.current(), Some(addr(1)));
            }
        }

        /// A candidate never gets more than three times the bytes that came from it.
        #[test]
        fn a_candidate_draws_at_most_thrice(
            events in proptest::collection::vec((any::<bool>(), 1usize..200, 0u64..400), 0..200)
        ) {
            let config = PathConfig { seal_overhead: 29, ..PathConfig::default() };
            let t0 = Instant::from_millis(0);
            let mut p = PeerPath::new(config, Some(addr(1)), t0);
            let (mut received, mut sent) = (0u64, 0u64);
            let mut t = t0;
            for (incoming, size, dt) in events {
                t += Duration::from_millis(dt);
                if incoming {
                    p.on_received(t, addr(2), size, NEWEST);
                    if p.candidate() == Some(addr(2)) {
                        received += size as u64;
                    }
                }
                let _ = p.handle_timeout(t);
                if p.poll_challenge().is_some() {
                    sent += 39;
                }
                prop_assert!(sent <= 3 * received, "{} > 3 x {}", sent, received);
            }
        }
    }
}
