//! One side's meeting: register at the rendezvous, learn the other side's candidates, and find
//! a pair of addresses that works by connectivity checks (ICE's, simplified: RFC 8445's
//! ordinary checks, triggered checks and peer-reflexive candidates, without its SDP or
//! nomination, since both ends already share a key).
//!
//! Checks and their acknowledgements are sealed with the peers' shared key, so a stranger can
//! neither answer a check nor start one; both are the same size (no amplification). A check
//! that arrives from an address not among the candidates (a NAT that gave this packet a new
//! port, the conntrack case) is acknowledged there and checked back from here: the two
//! sides' retries then find the pair. A check that arrived through this side's TURN
//! allocation is answered and checked back through it, which is how a peer behind a
//! symmetric NAT is reached. The pair whose check is acknowledged first is met; a direct pair
//! found later replaces a relayed one.
//!
//! **Openers.** A NAT that sees the peer's check arrive before its own host sent anything
//! to the peer keeps that arrival as a flow; Linux conntrack then gives the host's own first
//! packet to the peer a new port (the flow's reverse is taken), which the peer's NAT, open
//! only towards the announced port, drops, and the two sides' retries keep the stale flows
//! alive: neither ever hears the other. So each side first sends every new candidate an
//! *opener*, a check with a small IP TTL ([`MeetConfig::opener_ttl`]) that opens its own
//! NAT's mapping and dies on the way, before it reaches the peer's NAT; its checks proper
//! follow [`MeetConfig::opener_lead`] later, when the peer's opener has opened the other NAT
//! too. (RFC 5128 describes the technique; the rendezvous tells both sides of each other at
//! once so their openers leave together.) A check that arrives is answered at once: its
//! sender's NAT is open.
//!
//! ```text
//! check   0 tag 0xD9 | 1 kind 3 | 2 sealed { 1 (check) or 2 (ack), transaction u64, run u64 }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_time::{Duration, Instant};

use crate::intro::{Candidate, Introduction, Kind};
use crate::rendezvous::{self, MEET_TAG};
use crate::seal::MeetKey;

const CHECK: u8 = 3;
const IS_CHECK: u8 = 1;
const IS_ACK: u8 = 2;
/// Transactions remembered (their destinations), newest last.
const REMEMBERED: usize = 512;

/// A meeting's parameters.
#[derive(Debug, Clone)]
pub struct MeetConfig {
    /// The rendezvous server.
    pub rendezvous: SocketAddr,
    /// How often to register until met. Default 500 ms.
    pub register_every: Duration,
    /// How often to check each candidate. Default 50 ms.
    pub check_every: Duration,
    /// Checks sent to one candidate before it is given up (the peer's checks may still
    /// reach it later). Default 100 (5 s).
    pub checks_per_candidate: u32,
    /// The IP TTL of an opener: enough to leave this host's NAT, too little to reach the
    /// peer's. Default 2 (the host's NAT is its first hop).
    pub opener_ttl: u32,
    /// How long after its opener a candidate gets its first check. Default 200 ms.
    pub opener_lead: Duration,
    /// When this run started, by the wall clock (ms since the Unix epoch), told to the peer
    /// in the introduction ([`crate::Introduction::started_ms`]). Default 0; the runtime
    /// reads the clock for each meeting.
    pub started_ms: u64,
    /// Seeds everything the meeting draws at random: its run id, the checks' transaction
    /// ids, the seals' nonces. Default 0; the runtime draws one from the OS for each
    /// meeting. The same seed, key and inputs replay a meeting datagram for datagram, so a
    /// fixed seed is for tests and replays only: two live meetings under one key and one
    /// seed would seal under the same nonces.
    pub seed: u64,
}

impl MeetConfig {
    /// Defaults for everything but the rendezvous.
    pub fn new(rendezvous: SocketAddr) -> Self {
        MeetConfig {
            rendezvous,
            register_every: Duration::from_millis(500),
            check_every: Duration::from_millis(50),
            checks_per_candidate: 100,
            opener_ttl: 2,
            opener_lead: Duration::from_millis(200),
            started_ms: 0,
            seed: 0,
        }
    }
}

/// A pair that works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// The peer's address to send to.
    pub remote: SocketAddr,
    /// Through this side's TURN allocation (wrap what goes there).
    pub via_relay: bool,
    /// Whether a relay is on the path at either end.
    pub relayed: bool,
}

impl Pair {
    fn rank(&self) -> u8 {
        u8::from(!self.relayed)
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeetEvent {
    /// The rendezvous saw this side at this address (a reflexive candidate).
    Observed(SocketAddr),
    /// The peer's introduction (a new run, or new candidates): permit these on a TURN
    /// allocation.
    Introduced(Vec<Candidate>),
    /// A pair works (the first, or a better one than before).
    Met(Pair),
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Where.
    pub to: SocketAddr,
    /// Through this side's TURN allocation.
    pub via_relay: bool,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Send it with this IP TTL (an opener), not the socket's.
    pub ttl: Option<u32>,
}

#[derive(Debug, Clone)]
struct Remote {
    addr: SocketAddr,
    kind: Kind,
    via_relay: bool,
    next: Instant,
    sent: u32,
}

/// Whether a datagram is a meeting datagram (rendezvous or check), by its first byte.
pub fn is_meet(datagram: &[u8]) -> bool {
    datagram.first() == Some(&MEET_TAG)
}

/// Counters of a meeting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeetStats {
    /// Checks sent.
    pub checks: u64,
    /// Meeting datagrams refused (forged, reflected, malformed).
    pub refused: u64,
}

/// One side's meeting (see the module docs).
#[derive(Debug)]
pub struct Meeting {
    key: MeetKey,
    config: MeetConfig,
    run: u64,
    local: Vec<Candidate>,
    peer_run: Option<u64>,
    /// When the peer's run started ([`crate::Introduction::started_ms`]).
    peer_started_ms: u64,
    remotes: Vec<Remote>,
    transactions: VecDeque<(u64, SocketAddr, bool)>,
    /// Transactions of the peer's checks answered (newest last): a replayed check (a stranger
    /// resending a check it saw) is answered no second time, and starts nothing.
    answered: VecDeque<u64>,
    best: Option<Pair>,
    next_register: Instant,
    out: VecDeque<Outgoing>,
    events: VecDeque<MeetEvent>,
    stats: MeetStats,
    /// Everything drawn at random, from [`MeetConfig::seed`].
    rng: ChaCha8Rng,
}

impl Meeting {
    /// A meeting under `key` with `local` candidates so far (the host's own address; more
    /// come from the rendezvous, STUN and TURN).
    pub fn new(key: MeetKey, config: MeetConfig, local: Vec<Candidate>, now: Instant) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        Meeting {
            key,
            config,
            run: rng.gen(),
            local,
            peer_run: None,
            peer_started_ms: 0,
            remotes: Vec::new(),
            transactions: VecDeque::new(),
            answered: VecDeque::new(),
            best: None,
            next_register: now,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats: MeetStats::default(),
            rng,
        }
    }

    /// The best pair so far.
    pub fn best(&self) -> Option<Pair> {
        self.best
    }

    /// Counters so far.
    pub fn stats(&self) -> MeetStats {
        self.stats
    }

    /// Whether this side starts the handshake once met (its public key sorts first).
    pub fn dials(&self) -> bool {
        self.key.is_low()
    }

    /// Adds a local candidate (a reflexive address from STUN, a relayed one from TURN); the
    /// next registration carries it.
    pub fn add_local(&mut self, now: Instant, candidate: Candidate) {
        if !self.local.contains(&candidate) {
            self.local.push(candidate);
            self.next_register = now;
        }
    }

    /// A meeting datagram from `from` (`via_relay`: it came through this side's TURN
    /// allocation). Returns whether it was one (else it is for someone else).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        via_relay: bool,
        bytes: &[u8],
    ) -> bool {
        if !is_meet(bytes) {
            return false;
        }
        if from == self.config.rendezvous && !via_relay {
            match rendezvous::parse_peers(bytes) {
                Some(peers) => self.on_peers(now, peers),
                None => self.stats.refused += 1,
            }
            return true;
        }
        match self.open_check(bytes) {
            Some((kind, txid, run)) => self.on_check(now, from, via_relay, kind, txid, run),
            None => self.stats.refused += 1,
        }
        true
    }

    fn on_peers(&mut self, now: Instant, peers: rendezvous::Peers) {
        let observed = Candidate {
            kind: Kind::Reflexive,
            addr: peers.observed,
        };
        if !self.local.contains(&observed) {
            self.events.push_back(MeetEvent::Observed(peers.observed));
            self.add_local(now, observed);
        }
        // The rendezvous keeps the entries of the peer's earlier runs (a call ended and
        // made again) until they are idle: the run that started last is the live one (on
        // a tie, the first listed: the rendezvous lists the most recently registered
        // first), and one older than the run already followed is never taken. (Taking each
        // entry in turn left the oldest, a process gone, as the peer's run, and the live
        // run's checks were not followed.) Entries that do not open are a stranger's, or
        // our own reflected.
        let latest = peers
            .blobs
            .iter()
            .filter_map(|blob| self.key.open(blob).and_then(|b| Introduction::parse(&b)))
            .reduce(|best, i| {
                if i.started_ms > best.started_ms {
                    i
                } else {
                    best
                }
            });
        if let Some(intro) = latest {
            if self.peer_run.is_some() && intro.started_ms < self.peer_started_ms {
                return;
            }
            if self.peer_run != Some(intro.run) {
                // A new run of the peer: what was learnt of the old one is stale.
                self.peer_run = Some(intro.run);
                self.peer_started_ms = intro.started_ms;
                self.remotes.clear();
                self.best = None;
            }
            let fresh: Vec<Candidate> = intro
                .candidates
                .iter()
                .copied()
                .filter(|c| {
                    !self
                        .remotes
                        .iter()
                        .any(|r| r.addr == c.addr && !r.via_relay)
                })
                .collect();
            for c in &fresh {
                self.add_remote(now, c.addr, c.kind, false);
            }
            if !fresh.is_empty() {
                self.events
                    .push_back(MeetEvent::Introduced(intro.candidates));
            }
        }
    }

    fn add_remote(&mut self, now: Instant, addr: SocketAddr, kind: Kind, via_relay: bool) {
        if self
            .remotes
            .iter()
            .any(|r| r.addr == addr && r.via_relay == via_relay)
        {
            return;
        }
        // Through a relay nothing needs opening; otherwise the opener goes first.
        let next = match via_relay {
            true => now,
            false => {
                let txid: u64 = self.rng.gen();
                let bytes = self.check_bytes(IS_CHECK, txid);
                self.out.push_back(Outgoing {
                    to: addr,
                    via_relay,
                    bytes,
                    ttl: Some(self.config.opener_ttl),
                });
                now + self.config.opener_lead
            }
        };
        self.remotes.push(Remote {
            addr,
            kind,
            via_relay,
            next,
            sent: 0,
        });
    }

    fn open_check(&self, bytes: &[u8]) -> Option<(u8, u64, u64)> {
        if bytes.get(1) != Some(&CHECK) {
            return None;
        }
        let plain = self.key.open(&bytes[2..])?;
        if plain.len() != 17 {
            return None;
        }
        let txid = u64::from_be_bytes(plain[1..9].try_into().ok()?);
        let run = u64::from_be_bytes(plain[9..17].try_into().ok()?);
        Some((plain[0], txid, run))
    }

    fn check_bytes(&mut self, kind: u8, txid: u64) -> Vec<u8> {
        let mut plain = vec![kind];
        plain.extend_from_slice(&txid.to_be_bytes());
        plain.extend_from_slice(&self.run.to_be_bytes());
        let mut b = vec![MEET_TAG, CHECK];
        b.extend_from_slice(&self.key.seal(&plain, &mut self.rng));
        b
    }

    fn on_check(
        &mut self,
        now: Instant,
        from: SocketAddr,
        via_relay: bool,
        kind: u8,
        txid: u64,
        run: u64,
    ) {
        match kind {
            IS_CHECK => {
                if self.answered.contains(&txid) {
                    self.stats.refused += 1;
                    return;
                }
                if self.answered.len() == REMEMBERED {
                    self.answered.pop_front();
                }
                self.answered.push_back(txid);
                let ack = self.check_bytes(IS_ACK, txid);
                self.out.push_back(Outgoing {
                    to: from,
                    via_relay,
                    bytes: ack,
                    ttl: None,
                });
                // A triggered check back the way it came (a peer-reflexive candidate if it
                // is new: the NAT gave that packet a port nobody announced).
                if self.peer_run.is_none_or(|r| r == run) {
                    self.add_remote(now, from, Kind::Reflexive, via_relay);
                    if let Some(r) = self
                        .remotes
                        .iter_mut()
                        .find(|r| r.addr == from && r.via_relay == via_relay)
                    {
                        r.next = now;
                        r.sent = r
                            .sent
                            .min(self.config.checks_per_candidate.saturating_sub(5));
                    }
                }
            }
            IS_ACK => {
                let ours = self
                    .transactions
                    .iter()
                    .any(|(t, to, v)| *t == txid && *to == from && *v == via_relay);
                if !ours {
                    self.stats.refused += 1;
                    return;
                }
                let remote_relayed = self
                    .remotes
                    .iter()
                    .any(|r| r.addr == from && r.kind == Kind::Relayed);
                let pair = Pair {
                    remote: from,
                    via_relay,
                    relayed: via_relay || remote_relayed,
                };
                if self.best.is_none_or(|b| pair.rank() > b.rank()) {
                    self.best = Some(pair);
                    self.events.push_back(MeetEvent::Met(pair));
                }
            }
            _ => self.stats.refused += 1,
        }
    }

    /// Time passed: registrations and checks that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.best.is_none() && now >= self.next_register {
            self.next_register = now + self.config.register_every;
            let intro = Introduction {
                run: self.run,
                started_ms: self.config.started_ms,
                candidates: self.local.clone(),
            };
            if let Some(bytes) = rendezvous::emit_register(
                &self.key.id(),
                &self.key.seal(&intro.emit(), &mut self.rng),
            ) {
                self.out.push_back(Outgoing {
                    to: self.config.rendezvous,
                    via_relay: false,
                    bytes,
                    ttl: None,
                });
            }
        }
        // Once a direct pair works, nothing better is left to find.
        if self.best.is_some_and(|b| !b.relayed) {
            return;
        }
        let (every, limit) = (self.config.check_every, self.config.checks_per_candidate);
        let due: Vec<(SocketAddr, bool)> = self
            .remotes
            .iter_mut()
            .filter(|r| r.sent < limit && now >= r.next)
            .map(|r| {
                r.sent += 1;
                r.next = now + every;
                (r.addr, r.via_relay)
            })
            .collect();
        for (to, via_relay) in due {
            let txid: u64 = self.rng.gen();
            if self.transactions.len() == REMEMBERED {
                self.transactions.pop_front();
            }
            self.transactions.push_back((txid, to, via_relay));
            let bytes = self.check_bytes(IS_CHECK, txid);
            self.stats.checks += 1;
            self.out.push_back(Outgoing {
                to,
                via_relay,
                bytes,
                ttl: None,
            });
        }
    }

    /// When [`Meeting::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = match self.best {
            None => self.next_register,
            Some(_) => Instant::FAR_FUTURE,
        };
        if self.best.is_some_and(|b| !b.relayed) {
            return t;
        }
        for r in &self.remotes {
            if r.sent < self.config.checks_per_candidate {
                t = t.min(r.next);
            }
        }
        t
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<Outgoing> {
        self.out.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<MeetEvent> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests;
