//! [`Path`]: the peer's address, the path MTU prober, reports and keep-alives of one side of
//! a call, as one state machine a driver feeds.

use std::collections::VecDeque;
use std::net::SocketAddr;

use salsify_time::{Duration, Instant};

use crate::config::PathConfig;
use crate::peer::{Origin, PeerChange, PeerPath};
use crate::pmtu::Prober;
use crate::wire::{self, Message};

/// A dialer's plaintext hello is sent this often until the peer is heard.
const HELLO_EVERY: Duration = Duration::from_millis(500);

/// How a side found its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contact {
    /// It dialed the peer at this address (so trusts it).
    Dial(SocketAddr),
    /// It listens: the peer is whoever authenticates first (encrypted), or answers a
    /// challenge (plaintext).
    Listen,
    /// It listens and its driver says who the peer is ([`Path::follow`]): a plaintext
    /// receiver, whose session rules pick the sender (and which sends far less than it gets).
    Follow,
}

/// Something for the driver to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathEvent {
    /// The peer's address changed or was validated.
    Peer(PeerChange),
    /// The largest datagram to send changed (UDP payload bytes).
    MaxDatagram {
        /// The size before.
        from: usize,
        /// The size now.
        to: usize,
        /// Datagrams above the base vanished (the path shrank with no ICMP to say so).
        black_hole: bool,
    },
}

/// A path message to send: seal it (in an encrypted session) and send it to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where.
    pub to: SocketAddr,
    /// The message's bytes (a probe is padded so that, sealed, it has the probed size).
    pub message: Vec<u8>,
}

/// Counters of a path's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Moves of the peer to another address.
    pub moves: u64,
    /// Candidate addresses that never answered their challenges (a stranger's replay of a
    /// datagram the path lost, or a peer that moved on again).
    pub unanswered: u64,
    /// Probes sent.
    pub probes: u64,
    /// Keep-alives (and hellos) sent.
    pub keepalives: u64,
}

/// One side's view of the path to its peer (see the crate docs).
#[derive(Debug, Clone)]
pub struct Path {
    config: PathConfig,
    contact: Contact,
    secure: bool,
    peer: PeerPath,
    prober: Prober,
    out: VecDeque<Transmit>,
    events: VecDeque<PathEvent>,
    last_sent: Instant,
    /// Datagrams received from the peer, and of them above the base size (wrapping); the
    /// highest secure-layer counters received, of any and of a large one.
    received: u32,
    large: u32,
    newest: u64,
    newest_large: u64,
    /// `received` at the last report, and when the next may go.
    reported: u32,
    next_report: Instant,
    /// Plaintext dialer: when to say hello next, until the peer is heard.
    next_hello: Option<Instant>,
    stats: PathStats,
}

impl Path {
    /// A side that reached its peer as `contact` says; `secure`: datagrams are sealed, so
    /// an authenticated datagram may move the peer.
    pub fn new(config: PathConfig, contact: Contact, secure: bool, now: Instant) -> Self {
        let peer = match contact {
            Contact::Dial(to) => Some(to),
            Contact::Listen | Contact::Follow => None,
        };
        let next_hello = (peer.is_some() && !secure).then_some(now);
        Path {
            peer: PeerPath::new(config.clone(), peer, now),
            prober: Prober::new(config.clone(), now),
            config,
            contact,
            secure,
            out: VecDeque::new(),
            events: VecDeque::new(),
            last_sent: now,
            received: 0,
            large: 0,
            newest: 0,
            newest_large: 0,
            reported: 0,
            next_report: now,
            next_hello,
            stats: PathStats::default(),
        }
    }

    /// Where the peer is, if known.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer.current()
    }

    /// When the peer was last heard from (any datagram of its, at its current address).
    pub fn last_heard(&self) -> Instant {
        self.peer.last_heard()
    }

    /// Counters so far.
    pub fn stats(&self) -> PathStats {
        self.stats
    }

    /// The largest datagram to send (UDP payload bytes, sealing included).
    pub fn max_datagram(&self) -> usize {
        self.prober.max_datagram()
    }

    /// The next change to report.
    pub fn poll_event(&mut self) -> Option<PathEvent> {
        self.events.pop_front()
    }

    /// A datagram of `size` bytes (as it arrived, sealed or not) from `from`, opened where the
    /// session is encrypted (under secure-layer `counter`). Returns whether it is the peer's:
    /// `false` means drop it (path messages excepted: give those to [`Path::handle_message`]
    /// either way).
    pub fn handle_received(
        &mut self,
        now: Instant,
        from: SocketAddr,
        size: usize,
        origin: Origin,
        counter: Option<u64>,
    ) -> bool {
        let (ours, change) = match (self.contact, origin) {
            (Contact::Follow, Origin::Plain) => (true, None),
            _ => self.peer.on_received(now, from, size, origin),
        };
        if let Some(change) = change {
            self.on_peer_change(now, change);
        }
        if ours {
            self.next_hello = None;
            self.received = self.received.wrapping_add(1);
            let large = size > self.config.base_datagram;
            if large {
                self.large = self.large.wrapping_add(1);
            }
            if let Some(c) = counter {
                // A new session's counters start again below the old ones.
                if c < self.newest.saturating_sub(1 << 20) {
                    (self.newest, self.newest_large) = (0, 0);
                }
                self.newest = self.newest.max(c);
                if large {
                    self.newest_large = self.newest_large.max(c);
                }
            }
        }
        ours
    }

    /// The peer is at `to` from now on, as the driver found (a connectivity check proved the
    /// path): no challenge, no new MTU search unless the address is another host's.
    pub fn switch(&mut self, now: Instant, to: SocketAddr) {
        if let Some(change) = self.peer.move_to(now, to) {
            self.on_peer_change(now, change);
        }
    }

    /// The way to the peer changed under the same address (through a relay now, or no
    /// longer): what datagrams it carries is searched again from the base.
    pub fn restart_search(&mut self, now: Instant) {
        let before = self.max_datagram();
        self.prober.restart(now);
        self.push_size_change(before, self.max_datagram(), false);
    }

    /// The driver's session rules chose the peer at `to` ([`Contact::Follow`] only).
    pub fn follow(&mut self, now: Instant, to: SocketAddr) {
        if self.contact != Contact::Follow {
            return;
        }
        if let Some(change) = self.peer.follow(now, to) {
            self.on_peer_change(now, change);
        }
    }

    fn on_peer_change(&mut self, now: Instant, change: PeerChange) {
        match change {
            PeerChange::Moved {
                from: Some(from),
                to,
            } => {
                self.stats.moves += 1;
                // Another network may carry less: search again from the base. A new port on
                // the same address (a NAT's new mapping) is the same path.
                if from.ip() != to.ip() {
                    let before = self.max_datagram();
                    self.prober.restart(now);
                    self.push_size_change(before, self.max_datagram(), false);
                }
            }
            PeerChange::Moved { from: None, .. } => {}
            PeerChange::Unanswered(_) => self.stats.unanswered += 1,
        }
        self.events.push_back(PathEvent::Peer(change));
    }

    fn push_size_change(&mut self, from: usize, to: usize, black_hole: bool) {
        if from != to {
            self.events.push_back(PathEvent::MaxDatagram {
                from,
                to,
                black_hole,
            });
        }
    }

    /// A path message from `from` that arrived as `origin`.
    pub fn handle_message(
        &mut self,
        now: Instant,
        from: SocketAddr,
        message: Message,
        origin: Origin,
    ) {
        let authenticated = matches!(origin, Origin::Authenticated { .. });
        let from_peer = self.peer.current() == Some(from);
        let trusted = authenticated || from_peer;
        match message {
            Message::Probe { id, .. } if trusted => self.queue(from, Message::ProbeAck { id }),
            Message::ProbeAck { id } => {
                self.prober.on_ack(now, id);
                self.take_prober_changes();
            }
            Message::KeepAlive { len } if !self.secure && self.contact == Contact::Listen => {
                self.peer.on_hello(now, from, len);
            }
            Message::Challenge { token } if trusted => {
                self.queue(from, Message::Response { token });
            }
            Message::Response { token } => {
                if let Some(change) = self.peer.on_response(now, from, token) {
                    self.on_peer_change(now, change);
                }
            }
            Message::Report {
                received,
                large,
                newest,
                newest_large,
            } if trusted && from_peer => {
                let counters = (newest > 0).then_some((newest, newest_large));
                self.prober.on_report(now, received, large, counters);
                self.take_prober_changes();
            }
            _ => {}
        }
    }

    /// An encrypted session's handshake completed at this side (the dialer's): a keep-alive
    /// at once confirms the keys to the listener, which may then send.
    pub fn on_established(&mut self) {
        self.keep_alive_now();
    }

    /// A keep-alive to the peer at once (a side that found a new pair tells the peer which
    /// way it comes).
    pub fn keep_alive_now(&mut self) {
        if let Some(to) = self.peer.current() {
            self.queue(to, Message::KeepAlive { len: 2 });
        }
    }

    fn queue(&mut self, to: SocketAddr, message: Message) {
        self.out.push_back(Transmit {
            to,
            message: wire::emit(&message),
        });
    }

    fn take_prober_changes(&mut self) {
        while let Some((from, to, black_hole)) = self.prober.take_change() {
            self.push_size_change(from, to, black_hole);
        }
    }

    /// A scheme's datagram of `size` bytes went to the peer (sealed under `counter` in an
    /// encrypted session).
    pub fn on_sent(&mut self, now: Instant, size: usize, counter: Option<u64>) {
        self.prober.on_sent(now, size, counter);
        self.last_sent = now;
    }

    /// Time passed: challenges, probes, reports, keep-alives and hellos that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(change) = self.peer.handle_timeout(now) {
            self.on_peer_change(now, change);
        }
        let Some(peer) = self.peer.current() else {
            return;
        };
        self.prober.handle_timeout(now);
        self.take_prober_changes();
        if self.received != self.reported && now >= self.next_report {
            self.reported = self.received;
            self.next_report = now + self.config.report_every;
            let report = Message::Report {
                received: self.received,
                large: self.large,
                newest: self.newest,
                newest_large: self.newest_large,
            };
            self.queue(peer, report);
        }
        if let Some(at) = self.next_hello.filter(|at| now >= *at) {
            let _ = at;
            self.next_hello = Some(now + HELLO_EVERY);
            self.stats.keepalives += 1;
            let len = wire::CHALLENGE_LEN;
            self.queue(peer, Message::KeepAlive { len });
        } else if now.saturating_duration_since(self.last_sent) >= self.config.keepalive_after {
            self.stats.keepalives += 1;
            self.queue(peer, Message::KeepAlive { len: 2 });
        }
    }

    /// The next path message to send (seal it first in an encrypted session).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let t = if let Some((to, token)) = self.peer.poll_challenge() {
            Transmit {
                to,
                message: wire::emit(&Message::Challenge { token }),
            }
        } else if let Some(probe) = self.prober.poll_probe() {
            self.stats.probes += 1;
            let len = probe.size.saturating_sub(self.config.seal_overhead);
            Transmit {
                to: self.peer.current()?,
                message: wire::emit(&Message::Probe { id: probe.id, len }),
            }
        } else {
            self.out.pop_front()?
        };
        if Some(t.to) == self.peer.current() {
            self.last_sent = now;
        }
        Some(t)
    }

    /// When [`Path::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.peer.poll_timeout();
        if self.peer.current().is_none() {
            return t;
        }
        t = t.min(self.prober.poll_timeout());
        if self.received != self.reported {
            t = t.min(self.next_report);
        }
        if let Some(hello) = self.next_hello {
            t = t.min(hello);
        }
        t.min(self.last_sent + self.config.keepalive_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([198, 51, 100, 4], port))
    }

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    fn drain(p: &mut Path, now: Instant) -> Vec<(SocketAddr, Message)> {
        let mut out = vec![];
        while let Some(t) = p.poll_transmit(now) {
            out.push((t.to, wire::parse(&t.message).expect("a path message")));
        }
        out
    }

    #[test]
    fn a_plaintext_dialer_says_hello_until_heard_and_a_listener_adopts_it_by_challenge() {
        let (dialer_addr, listener_addr) = (addr(1), addr(2));
        let mut dialer = Path::new(
            PathConfig::default(),
            Contact::Dial(listener_addr),
            false,
            ms(0),
        );
        let mut listener = Path::new(PathConfig::default(), Contact::Listen, false, ms(0));
        dialer.handle_timeout(ms(0));
        let hello = drain(&mut dialer, ms(0));
        assert!(
            matches!(hello[..], [(to, Message::KeepAlive { len: wire::CHALLENGE_LEN })] if to == listener_addr)
        );
        // The listener answers the hello with a challenge no larger than it, and nothing else.
        let m = hello[0].1;
        assert!(!listener.handle_received(
            ms(1),
            dialer_addr,
            wire::CHALLENGE_LEN,
            Origin::Plain,
            None
        ));
        listener.handle_message(ms(1), dialer_addr, m, Origin::Plain);
        let challenge = drain(&mut listener, ms(1));
        let [(to, Message::Challenge { token })] = challenge[..] else {
            panic!("{challenge:?}");
        };
        assert_eq!(to, dialer_addr);
        assert_eq!(listener.peer(), None, "not before the answer");
        // The dialer answers a challenge from the address it dialed.
        assert!(dialer.handle_received(ms(2), listener_addr, 10, Origin::Plain, None));
        dialer.handle_message(
            ms(2),
            listener_addr,
            Message::Challenge { token },
            Origin::Plain,
        );
        let response = drain(&mut dialer, ms(2));
        assert_eq!(response, vec![(listener_addr, Message::Response { token })]);
        listener.handle_message(ms(3), dialer_addr, response[0].1, Origin::Plain);
        assert_eq!(listener.peer(), Some(dialer_addr));
        // Heard: no more hellos.
        dialer.handle_timeout(ms(600));
        let later = drain(&mut dialer, ms(600));
        assert!(
            later
                .iter()
                .all(|(_, m)| !matches!(m, Message::KeepAlive { .. })),
            "{later:?}"
        );
    }

    #[test]
    fn an_authenticated_roam_moves_after_the_new_address_answers() {
        let mut p = Path::new(PathConfig::default(), Contact::Dial(addr(1)), true, ms(0));
        let roam = Origin::Authenticated { newest: true };
        assert!(p.handle_received(ms(10), addr(7), 90, roam, Some(5)));
        assert_eq!(p.poll_event(), None, "not before it answers");
        assert_eq!(p.peer(), Some(addr(1)));
        p.handle_timeout(ms(10));
        let out = drain(&mut p, ms(10));
        let token = out
            .iter()
            .find_map(|(to, m)| match m {
                Message::Challenge { token } if *to == addr(7) => Some(*token),
                _ => None,
            })
            .expect("a challenge to the new address");
        p.handle_message(ms(30), addr(7), Message::Response { token }, roam);
        assert_eq!(
            p.poll_event(),
            Some(PathEvent::Peer(PeerChange::Moved {
                from: Some(addr(1)),
                to: addr(7)
            }))
        );
        assert_eq!(
            p.poll_event(),
            None,
            "same address, another port: no new MTU search"
        );
        assert_eq!(p.peer(), Some(addr(7)));
        assert_eq!(p.stats().moves, 1);
    }

    #[test]
    fn a_quiet_side_keeps_its_nat_open_and_a_receiving_side_reports() {
        let config = PathConfig::default();
        let mut p = Path::new(config.clone(), Contact::Dial(addr(1)), true, ms(0));
        p.handle_received(
            ms(5),
            addr(1),
            1400,
            Origin::Authenticated { newest: true },
            Some(3),
        );
        p.handle_timeout(ms(5));
        let out = drain(&mut p, ms(5));
        assert!(out.contains(&(
            addr(1),
            Message::Report {
                received: 1,
                large: 1,
                newest: 3,
                newest_large: 3
            }
        )));
        let quiet = ms(5) + config.keepalive_after;
        assert!(p.poll_timeout() <= quiet);
        p.handle_timeout(quiet);
        assert_eq!(
            drain(&mut p, quiet),
            vec![(addr(1), Message::KeepAlive { len: 2 })]
        );
        assert_eq!(p.stats().keepalives, 1);
        // Sending resets the keep-alive clock.
        p.on_sent(quiet + Duration::from_secs(1), 100, Some(9));
        p.handle_timeout(quiet + Duration::from_secs(5));
        assert!(drain(&mut p, quiet + Duration::from_secs(5)).is_empty());
    }

    #[test]
    fn probes_are_padded_to_the_probed_size_less_the_seal() {
        let config = PathConfig {
            seal_overhead: 29,
            ..PathConfig::default()
        };
        let mut p = Path::new(config, Contact::Dial(addr(1)), true, ms(0));
        p.on_sent(ms(0), 1200, Some(0));
        p.handle_timeout(ms(0));
        let probe = p.poll_transmit(ms(0)).unwrap();
        assert_eq!(probe.message.len() + 29, 1472);
        let Ok(Message::Probe { id, .. }) = wire::parse(&probe.message) else {
            panic!("a probe");
        };
        p.handle_message(
            ms(30),
            addr(1),
            Message::ProbeAck { id },
            Origin::Authenticated { newest: true },
        );
        assert_eq!(p.max_datagram(), 1472);
        assert_eq!(
            p.poll_event(),
            Some(PathEvent::MaxDatagram {
                from: 1200,
                to: 1472,
                black_hole: false
            })
        );
    }

    #[test]
    fn a_stranger_cannot_make_a_dialer_answer_or_report() {
        let mut p = Path::new(PathConfig::default(), Contact::Dial(addr(1)), false, ms(0));
        let _ = drain(&mut p, ms(0));
        for m in [
            Message::Challenge { token: 1 },
            Message::Probe { id: 2, len: 1400 },
            Message::KeepAlive { len: 10 },
        ] {
            p.handle_message(ms(1), addr(66), m, Origin::Plain);
        }
        assert!(drain(&mut p, ms(1)).iter().all(|(to, _)| *to != addr(66)));
    }

    /// Issue 57: a path draws only from its seed, so a dialer and a listener with one seed
    /// exchange the same datagrams again (challenge tokens, probe ids); another seed changes
    /// them.
    #[test]
    fn one_seed_replays_a_path_exactly() {
        let transcript = |seed: u64| {
            let config = PathConfig {
                seed,
                ..PathConfig::default()
            };
            let (dialer_addr, listener_addr) = (addr(1), addr(2));
            let mut dialer = Path::new(config.clone(), Contact::Dial(listener_addr), false, ms(0));
            let mut listener = Path::new(config, Contact::Listen, false, ms(0));
            let mut sent = Vec::new();
            for t in (0..3_000).step_by(10) {
                dialer.handle_timeout(ms(t));
                listener.handle_timeout(ms(t));
                let from_dialer = drain(&mut dialer, ms(t));
                let from_listener = drain(&mut listener, ms(t));
                for (_, m) in &from_dialer {
                    listener.handle_received(ms(t), dialer_addr, 64, Origin::Plain, None);
                    listener.handle_message(ms(t), dialer_addr, *m, Origin::Plain);
                }
                for (_, m) in &from_listener {
                    dialer.handle_received(ms(t), listener_addr, 64, Origin::Plain, None);
                    dialer.handle_message(ms(t), listener_addr, *m, Origin::Plain);
                }
                sent.extend(from_dialer);
                sent.extend(from_listener);
            }
            sent
        };
        let first = transcript(7);
        assert!(
            first
                .iter()
                .any(|(_, m)| matches!(m, Message::Challenge { .. })),
            "{first:?}"
        );
        assert_eq!(first, transcript(7));
        assert_ne!(first, transcript(9));
    }
}
