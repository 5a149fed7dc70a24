//! One peer over one socket, for both loops: the secure channel (when keyed) and the path
//! (`salsify-path`: where the peer is, how large a datagram reaches it, keep-alives).
//!
//! Whichever side dials is the handshake's initiator, whatever its role in the call; the
//! listener answers. Every datagram goes through [`PeerLink::receive`]: opened (or dropped,
//! logged), then shown to the path, which may move the peer (an authenticated, newest
//! datagram from a new address is challenged there, and the answer moves the peer: roaming)
//! and consumes path messages; what is left is the scheme's, from the peer. Everything the
//! scheme sends goes through [`PeerLink::send`]: sealed and sent to where the peer is now. [`PeerLink::flush`] sends what the channel
//! and the path have due and prints their news (a move, a path MTU change) as one line each.

use std::net::{SocketAddr, UdpSocket};

use salsify_meet::turn::TurnClient;
use salsify_meet::{MeetEvent, Meeting, Pair};
pub use salsify_path::Contact;
use salsify_path::{wire as path_wire, Origin, Path, PathConfig, PathEvent, PeerChange};
use salsify_secure::{SecureChannel, SecureConfig};
use salsify_time::Instant;

use crate::busy::{BusyConfig, BusyDesk, Decision};
use crate::meet_phase::Via;
use crate::remeet::{RemeetConfig, RemeetPolicy, Remeeting};
use crate::secure_io::{self, DropLog, Opened};
use crate::udp::{self, Received};

/// Without a datagram from the peer for this long, media stop until it is heard again (RFC
/// 7675's consent freshness: a peer that went away, or a path taken over, is not flooded);
/// keep-alives go on, so a peer that is still there is heard within one keep-alive.
pub const CONSENT_TIMEOUT: salsify_time::Duration = salsify_time::Duration::from_secs(30);

/// How a side of a call meets its peer: each of `salsify send` and `salsify recv` either
/// dials (`--to`) or listens (`--listen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connect {
    /// Dial the peer listening here; this side starts the handshake.
    To(SocketAddr),
    /// Listen here for the peer to dial.
    Listen(SocketAddr),
    /// Meet the peer through a rendezvous (both may be behind NATs): see
    /// [`crate::meet_phase`].
    Via(Via),
}

impl Connect {
    /// A socket for this side: bound to the listening address, or to an ephemeral port of the
    /// local address that reaches the peer.
    pub fn bind(&self) -> anyhow::Result<UdpSocket> {
        match self {
            Connect::To(peer) => udp::bind_for(*peer),
            Connect::Listen(addr) => udp::bind(*addr),
            Connect::Via(via) => crate::meet_phase::bind(via),
        }
    }
}

/// How a loop reaches its peer, before any meeting.
#[derive(Debug, Clone, Copy)]
pub enum Reach<'a> {
    /// It dials this address.
    Dial(SocketAddr),
    /// It listens (encrypted: the first to authenticate is the peer).
    Listen,
    /// It listens and its session rules pick the peer (a plaintext receiver).
    Follow,
    /// It meets the peer through a rendezvous first (needs keys).
    Via(&'a Via),
}

/// A socket, its peer, and what is between them.
pub struct PeerLink {
    socket: UdpSocket,
    secure: Option<SecureChannel>,
    path: Path,
    drops: DropLog,
    who: &'static str,
    /// Print the path's news.
    verbose: bool,
    /// A handshake completed at least once.
    keyed: bool,
    /// The meeting that found the peer (`--via`): it keeps answering the peer's checks.
    meeting: Option<Meeting>,
    /// The TURN allocation everything to the peer goes through (a relayed call), until a
    /// direct pair takes over.
    relay: Option<TurnClient>,
    /// A listener met on a relayed pair: the dialer's first handshake says which way it sends
    /// (through this side's allocation, kept, or straight, and the allocation goes back).
    relay_until_dialed: bool,
    /// What a meeting again needs (`--via`): where, and the keys its checks are sealed with.
    again: Option<(Via, SecureConfig)>,
    /// When to meet the peer again (its path silent).
    remeet_policy: RemeetPolicy,
    /// The meeting running again, if one is.
    remeeting: Option<Remeeting>,
    /// STUN and TURN servers the meeting used: what they send late is dropped quietly.
    servers: Vec<SocketAddr>,
    /// Datagrams the scheme gave that were not sent (no keys yet, or held back).
    pub unsent: u64,
    /// A listening side with keys: second callers told it is busy.
    busy: Option<BusyDesk>,
    /// The peer hung up: nobody is busy until a new handshake completes.
    peer_gone: bool,
}

impl std::fmt::Debug for PeerLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLink")
            .field("peer", &self.path.peer())
            .field("path", &self.path.stats())
            .finish()
    }
}

impl PeerLink {
    /// A link on `socket` reaching its peer as `contact` says; sealed with `secure` if given.
    /// `who` starts its log lines (`salsify send`); `verbose`: print moves and size changes.
    pub fn new(
        socket: UdpSocket,
        contact: Contact,
        secure: Option<SecureConfig>,
        who: &'static str,
        verbose: bool,
        now: Instant,
    ) -> Self {
        let overhead = if secure.is_some() {
            salsify_secure::OVERHEAD
        } else {
            0
        };
        let ipv6 = socket.local_addr().is_ok_and(|a| a.is_ipv6());
        let mut config = PathConfig {
            seal_overhead: overhead,
            seed: rand::random(),
            ..PathConfig::default()
        };
        if ipv6 {
            config = config.for_ipv6();
        }
        let busy = match (&secure, contact) {
            (Some(keys), Contact::Listen) => {
                Some(BusyDesk::new(BusyConfig::default(), keys.clone()))
            }
            _ => None,
        };
        let secure = secure.map(|c| match contact {
            Contact::Dial(_) => SecureChannel::initiator(c, now, secure_io::unix_nanos()),
            Contact::Listen | Contact::Follow => SecureChannel::responder(c, now),
        });
        PeerLink {
            socket,
            path: Path::new(config, contact, secure.is_some(), now),
            secure,
            drops: DropLog::new(who),
            who,
            verbose,
            keyed: false,
            unsent: 0,
            meeting: None,
            relay: None,
            relay_until_dialed: false,
            again: None,
            remeet_policy: RemeetPolicy::new(RemeetConfig::default()),
            remeeting: None,
            servers: Vec::new(),
            busy,
            peer_gone: false,
        }
    }

    /// The peer hung up (a receiver that stays for the next caller): the next caller is
    /// served, not told busy.
    pub fn peer_gone(&mut self) {
        self.peer_gone = true;
    }

    /// Second callers told the call is busy.
    pub fn busy_refused(&self) -> u64 {
        self.busy.as_ref().map_or(0, |b| b.refused)
    }

    /// A second caller's datagram while the call is live, answered by the busy desk: true
    /// when it took it.
    fn answer_busy(&mut self, d: &Received) -> bool {
        let (Some(desk), Some(peer)) = (&mut self.busy, self.path.peer()) else {
            return false;
        };
        let established = self.secure.as_ref().is_some_and(|c| c.is_established(d.at));
        let heard = self.path.last_heard();
        if self.peer_gone || !established {
            return false;
        }
        match desk.decide(d.at, d.from, &d.bytes, peer, heard) {
            Decision::Pass => return false,
            Decision::Hold => return true,
            Decision::Answer => {}
        }
        let newest_init = self
            .secure
            .as_ref()
            .map_or(0, |c| c.state().last_init_timestamp);
        match desk.handle(d.at, d.from, &d.bytes, newest_init) {
            Ok(answers) => {
                for answer in answers {
                    self.send_raw(d.at, &answer, d.from);
                }
            }
            Err(why) => {
                self.drops
                    .note(d.at, d.from, secure_io::Refusal::Secure(why));
            }
        }
        true
    }

    /// Deletes the TURN allocation (the dialer reaches this side without it).
    fn give_back_relay(&mut self, now: Instant) {
        if let Some(relay) = self.relay.take() {
            crate::meet_phase::give_back(&self.socket, relay, now);
        }
    }

    /// Sends `datagram` to `to`, through the relay when the call is relayed.
    fn send_raw(&mut self, now: Instant, datagram: &[u8], to: SocketAddr) {
        match &mut self.relay {
            Some(relay) => {
                if let Some(wrapped) = relay.wrap(now, to, datagram) {
                    udp::send(&self.socket, &wrapped, relay.server());
                }
            }
            None => {
                udp::send(&self.socket, datagram, to);
            }
        }
    }

    /// A link on `socket` that reaches its peer as `reach` says: for [`Reach::Via`] the peer is
    /// met first (on this socket, so before a reader thread takes it), and the side whose key
    /// sorts first dials the pair found; the meeting and any relay stay with the link.
    pub fn connect(
        socket: UdpSocket,
        reach: Reach<'_>,
        secure: Option<SecureConfig>,
        who: &'static str,
        verbose: bool,
        stop: &std::sync::atomic::AtomicBool,
    ) -> anyhow::Result<PeerLink> {
        let again = match (reach, &secure) {
            (Reach::Via(via), Some(keys)) => Some((via.clone(), keys.clone())),
            _ => None,
        };
        let met = match (reach, &secure) {
            (Reach::Via(via), Some(keys)) => {
                Some(crate::meet_phase::meet(via, &socket, keys, who, stop)?)
            }
            (Reach::Via(_), None) => {
                anyhow::bail!("meeting through a rendezvous (--via) needs keys")
            }
            _ => None,
        };
        let contact = match (reach, &met) {
            (Reach::Dial(to), _) => Contact::Dial(to),
            (_, Some(met)) if met.dials => Contact::Dial(met.pair.remote),
            (Reach::Follow, _) => Contact::Follow,
            _ => Contact::Listen,
        };
        let mut link = PeerLink::new(socket, contact, secure, who, verbose, crate::clock::now());
        if let Some(met) = met {
            link.meeting = Some(met.meeting);
            link.servers = met.servers;
            link.relay_until_dialed = met.relay.is_some() && !met.dials;
            link.relay = met.relay;
            link.again = again;
        }
        Ok(link)
    }

    /// The socket (for a reader thread).
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Where the peer is, if known.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.path.peer()
    }

    /// Whether the scheme's datagrams can reach the peer now: it is known and, with keys, a
    /// session is established (a dialer's held datagrams wait for it anyway).
    pub fn ready(&self, now: Instant) -> bool {
        self.peer().is_some() && self.secure.as_ref().is_none_or(|c| c.is_established(now))
    }

    /// Whether a handshake ever completed (always true without keys).
    pub fn keyed(&self) -> bool {
        self.secure.is_none() || self.keyed
    }

    /// Whether this side starts handshakes (it dialed, with keys).
    pub fn is_initiator(&self) -> bool {
        self.secure
            .as_ref()
            .is_some_and(|c| c.role() == salsify_secure::HandshakeRole::Initiator)
    }

    /// Datagrams refused on arrival.
    pub fn rejected(&self) -> u64 {
        self.drops.total
    }

    /// The path's counters.
    pub fn path_stats(&self) -> salsify_path::PathStats {
        self.path.stats()
    }

    /// The largest datagram the scheme may transmit now (before sealing).
    pub fn max_scheme_datagram(&self) -> usize {
        let overhead = match self.secure {
            Some(_) => salsify_secure::OVERHEAD,
            None => 0,
        };
        self.path.max_datagram().saturating_sub(overhead)
    }

    /// The session rules chose the sender at `to` (a [`Contact::Follow`] link).
    pub fn follow(&mut self, now: Instant, to: SocketAddr) {
        self.path.follow(now, to);
    }

    /// Starts a new handshake (a dialer whose peer may have restarted without the keys).
    pub fn restart_handshake(&mut self, now: Instant) {
        if let Some(c) = &mut self.secure {
            c.restart(now);
        }
    }

    /// Takes a datagram: the scheme's datagram in it and the peer's address, or `None`
    /// (a handshake, a path message, another address's, or refused and logged).
    pub fn receive(&mut self, d: &Received) -> Option<(SocketAddr, Vec<u8>)> {
        if let Some(r) = &mut self.remeeting {
            match r.helpers.intercept(d) {
                Some(Some((peer, payload))) => {
                    let unwrapped = Received {
                        from: peer,
                        bytes: payload,
                        ..d.clone()
                    };
                    return self.receive_direct(&unwrapped, true);
                }
                Some(None) => return None,
                None => {}
            }
        }
        if let Some(relay) = &mut self.relay {
            if d.from == relay.server() && TurnClient::is_turn(&d.bytes) {
                // The relay's own messages are consumed; a peer's datagram comes out of it.
                let (peer, payload) = relay.handle_datagram(d.at, &d.bytes)?;
                let unwrapped = Received {
                    from: peer,
                    bytes: payload,
                    ..d.clone()
                };
                return self.receive_direct(&unwrapped, true);
            }
        }
        if self.servers.contains(&d.from) && TurnClient::is_turn(&d.bytes) {
            return None; // a late answer of the meeting's STUN or TURN server
        }
        self.receive_direct(d, false)
    }

    /// [`PeerLink::receive`] of a datagram as the peer sent it (`via_relay`: it came out of the
    /// relay).
    fn receive_direct(&mut self, d: &Received, via_relay: bool) -> Option<(SocketAddr, Vec<u8>)> {
        if salsify_meet::meeting::is_meet(&d.bytes) {
            if let Some(meeting) = &mut self.meeting {
                meeting.handle_datagram(d.at, d.from, via_relay, &d.bytes);
            }
            self.drive_meeting(d.at);
            return None;
        }
        if self.answer_busy(d) {
            return None;
        }
        let (plain, origin) = match &mut self.secure {
            None => {
                if salsify_secure::is_secure(&d.bytes) {
                    secure_io::open(None, &mut self.drops, d);
                    return None;
                }
                (d.bytes.clone(), Origin::Plain)
            }
            Some(channel) => match secure_io::open(Some(channel), &mut self.drops, d) {
                Opened::Data(plain) => {
                    let newest = channel.last_opened_newest();
                    (plain, Origin::Authenticated { newest })
                }
                Opened::Reply(reply) => {
                    if std::mem::take(&mut self.relay_until_dialed) && !via_relay {
                        self.give_back_relay(d.at);
                    }
                    // The same size as the init it answers: no amplification.
                    self.send_raw(d.at, &reply, d.from);
                    if self.verbose {
                        eprintln!("{}: handshake from {}", self.who, d.from);
                    }
                    return None;
                }
                Opened::Established => {
                    self.keyed = true;
                    self.peer_gone = false;
                    self.path.on_established();
                    self.flush(d.at);
                    return None;
                }
                Opened::Dropped => return None,
            },
        };
        if matches!(origin, Origin::Authenticated { .. })
            && std::mem::take(&mut self.relay_until_dialed)
        {
            // The dialer's first word since the meeting: answer the way it came.
            if !via_relay && self.relay.is_some() {
                self.give_back_relay(d.at);
                self.path.restart_search(d.at);
                if self.verbose {
                    eprintln!("{}: the peer reaches this side straight", self.who);
                }
            }
            self.path.switch(d.at, d.from);
        }
        let counter = sealed_counter(&d.bytes);
        let from_peer = self
            .path
            .handle_received(d.at, d.from, d.bytes.len(), origin, counter);
        if path_wire::is_path(&plain) {
            if let Ok(message) = path_wire::parse(&plain) {
                self.path.handle_message(d.at, d.from, message, origin);
            }
            return None;
        }
        if !from_peer {
            return None;
        }
        if matches!(origin, Origin::Authenticated { .. }) {
            self.keyed = true;
        }
        // An encrypted session has one peer, wherever it is now; plaintext senders are
        // told apart by address.
        let from = match origin {
            Origin::Authenticated { .. } => self.path.peer().unwrap_or(d.from),
            Origin::Plain => d.from,
        };
        Some((from, plain))
    }

    /// Sends a scheme's datagram to the peer (`to`: a plaintext follower's session peer; any
    /// other link sends where the path says the peer is). Returns the bytes sent (0: held
    /// for a handshake, or not sent and counted in [`PeerLink::unsent`]).
    pub fn send(&mut self, now: Instant, bytes: &[u8], to: Option<SocketAddr>) -> usize {
        if self.keyed && now.saturating_duration_since(self.path.last_heard()) >= CONSENT_TIMEOUT {
            self.unsent += 1;
            return 0;
        }
        let sealed = match &mut self.secure {
            Some(channel) => channel.seal(now, bytes),
            None => Some(bytes.to_vec()),
        };
        let Some(datagram) = sealed else {
            // Held by a dialer until its handshake completes (sent from `flush`), or no keys.
            return 0;
        };
        let peer = match (self.secure.is_some(), to) {
            (false, Some(to)) => Some(to),
            _ => self.path.peer(),
        };
        let Some(peer) = peer else {
            self.unsent += 1;
            return 0;
        };
        self.send_raw(now, &datagram, peer);
        self.path
            .on_sent(now, datagram.len(), sealed_counter(&datagram));
        datagram.len()
    }

    /// Sends what is due (handshake messages, datagrams a handshake held, path messages) and
    /// prints the path's news. Returns the bytes sent.
    pub fn flush(&mut self, now: Instant) -> usize {
        let mut sent = 0;
        let peer = self.path.peer();
        if let Some(channel) = &mut self.secure {
            let mut due = vec![];
            while let Some(datagram) = channel.poll_transmit(now) {
                due.push(datagram);
            }
            if channel.is_established(now) {
                self.keyed = true;
            }
            for datagram in due {
                if let Some(peer) = peer {
                    self.send_raw(now, &datagram, peer);
                    sent += datagram.len();
                    if let Some(counter) = sealed_counter(&datagram) {
                        self.path.on_sent(now, datagram.len(), Some(counter));
                    }
                }
            }
        }
        if now >= self.path.poll_timeout() {
            self.path.handle_timeout(now);
        }
        self.check_remeet(now);
        if let Some(meeting) = &mut self.meeting {
            if now >= meeting.poll_timeout() {
                meeting.handle_timeout(now);
            }
            if let Some(r) = &mut self.remeeting {
                if now >= r.helpers.poll_timeout() {
                    r.helpers.tick(now, &self.socket, meeting);
                }
            }
        }
        sent += self.drive_meeting(now);
        if let Some(relay) = &mut self.relay {
            if now >= relay.poll_timeout() {
                relay.handle_timeout(now);
            }
            while let Some(d) = relay.poll_transmit(now) {
                udp::send(&self.socket, &d, relay.server());
            }
            while relay.poll_event().is_some() {}
        }
        while let Some(t) = self.path.poll_transmit(now) {
            let datagram = match &mut self.secure {
                Some(channel) => match channel.seal(now, &t.message) {
                    Some(d) => d,
                    None => continue, // no keys yet: the handshake comes first
                },
                None => t.message,
            };
            self.send_raw(now, &datagram, t.to);
            sent += datagram.len();
        }
        while let Some(event) = self.path.poll_event() {
            self.report(event);
        }
        sent
    }

    /// When [`PeerLink::flush`] next has something to do.
    pub fn deadline(&self) -> Instant {
        let secure = self
            .secure
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |c| c.poll_timeout());
        let meeting = self
            .meeting
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |m| m.poll_timeout());
        let relay = self
            .relay
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |r| r.poll_timeout());
        let remeet = match (&self.remeeting, &self.again) {
            (Some(r), _) => r
                .helpers
                .poll_timeout()
                .min(self.remeet_policy.give_up_at(r.since)),
            (None, Some(_)) if self.keyed && !self.peer_gone => {
                self.remeet_policy.next_at(self.path.last_heard())
            }
            _ => Instant::FAR_FUTURE,
        };
        secure
            .min(self.path.poll_timeout())
            .min(meeting)
            .min(relay)
            .min(remeet)
    }

    /// Starts a meeting again when the peer has been silent long enough (a call met through
    /// a rendezvous), and gives up one that found no pair in time.
    fn check_remeet(&mut self, now: Instant) {
        if self.again.is_none() {
            return;
        }
        if let Some(r) = &self.remeeting {
            if self.remeet_policy.given_up(now, r.since) {
                if let Some(t) = self.remeeting.take().and_then(|r| r.helpers.turn) {
                    crate::meet_phase::give_back(&self.socket, t, now);
                }
                eprintln!("{}: no pair found with the peer again yet", self.who);
            }
            return;
        }
        let heard = self.path.last_heard();
        if !self.keyed || self.peer_gone || !self.remeet_policy.due(now, heard) {
            return;
        }
        let silent = now.saturating_duration_since(heard).as_secs_f64();
        let started = match &self.again {
            Some((via, keys)) => {
                crate::meet_phase::start_meeting(via, &self.socket, keys, self.who, now)
            }
            None => return,
        };
        let (meeting, helpers) = match started {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{}: cannot meet the peer again: {e:#}", self.who);
                self.again = None;
                return;
            }
        };
        self.remeet_policy.started(now, heard);
        eprintln!(
            "{}: no word from the peer for {silent:.1} s: meeting it again through the rendezvous",
            self.who
        );
        // The old allocation goes first: the new one is made on the same socket and server.
        self.give_back_relay(now);
        self.relay_until_dialed = false;
        self.meeting = Some(meeting);
        self.remeeting = Some(Remeeting {
            helpers,
            since: now,
        });
    }

    /// A meeting run again found `pair`: the dialer sends there from now on (and says so
    /// with a keep-alive); the listener on a relayed pair waits for it, as at the start.
    fn finish_remeet(&mut self, now: Instant, pair: Pair) {
        let Some(r) = self.remeeting.take() else {
            return;
        };
        let dials = self.meeting.as_ref().is_some_and(|m| m.dials());
        let keep = pair.via_relay || (pair.relayed && !dials);
        self.relay = match r.helpers.turn {
            Some(t) if !keep => {
                crate::meet_phase::give_back(&self.socket, t, now);
                None
            }
            turn => turn,
        };
        // Through a relay now, or straight: the largest datagram may differ.
        self.path.restart_search(now);
        if dials || !pair.relayed {
            self.path.switch(now, pair.remote);
            self.path.keep_alive_now();
        } else {
            self.relay_until_dialed = true;
        }
        let how = if pair.relayed { "relayed" } else { "direct" };
        eprintln!(
            "{}: met the peer again at {} ({how}) in {:.2} s",
            self.who,
            pair.remote,
            now.saturating_duration_since(r.since).as_secs_f64()
        );
    }

    /// Sends what the meeting has to send (checks, answers: through the relay where they
    /// go that way), and takes a direct pair it finds during a relayed call: this side sends
    /// there from now on (the check proved the path), and the peer, seeing authenticated
    /// datagrams from here, validates and moves too.
    fn drive_meeting(&mut self, now: Instant) -> usize {
        let Some(meeting) = &mut self.meeting else {
            return 0;
        };
        let mut out = vec![];
        while let Some(o) = meeting.poll_transmit() {
            out.push(o);
        }
        let mut events = vec![];
        while let Some(event) = meeting.poll_event() {
            events.push(event);
        }
        let mut direct = None;
        let mut met_again = None;
        for event in events {
            match event {
                MeetEvent::Met(pair) if self.remeeting.is_some() => met_again = Some(pair),
                MeetEvent::Met(pair) if !pair.relayed => direct = Some(pair.remote),
                MeetEvent::Introduced(candidates) => {
                    if let Some(relay) = self.meeting_relay() {
                        for c in &candidates {
                            relay.permit(now, c.addr);
                        }
                    }
                }
                _ => {}
            }
        }
        let mut sent = 0;
        for o in out {
            sent += o.bytes.len();
            let socket = &self.socket;
            let relay = match &mut self.remeeting {
                Some(r) => r.helpers.turn.as_mut(),
                None => self.relay.as_mut(),
            };
            match (o.via_relay, relay) {
                (true, Some(relay)) => {
                    if let Some(wrapped) = relay.wrap(now, o.to, &o.bytes) {
                        udp::send(socket, &wrapped, relay.server());
                    }
                }
                (true, None) => {}
                (false, _) => {
                    match o.ttl {
                        Some(ttl) => udp::send_with_ttl(socket, &o.bytes, o.to, ttl),
                        None => udp::send(socket, &o.bytes, o.to),
                    };
                }
            }
        }
        if let Some(pair) = met_again {
            self.finish_remeet(now, pair);
            return sent;
        }
        if let Some(to) = direct.filter(|_| self.relay.is_some()) {
            self.relay = None;
            self.path.switch(now, to);
            if self.verbose {
                eprintln!(
                    "{}: a direct path to the peer at {to} takes over from the relay",
                    self.who
                );
            }
        }
        sent
    }

    /// The allocation the meeting's relayed checks go through: the running meeting's own
    /// while one runs again, else the call's.
    fn meeting_relay(&mut self) -> Option<&mut TurnClient> {
        match &mut self.remeeting {
            Some(r) => r.helpers.turn.as_mut(),
            None => self.relay.as_mut(),
        }
    }

    fn report(&self, event: PathEvent) {
        if !self.verbose {
            return;
        }
        let who = self.who;
        match event {
            PathEvent::Peer(PeerChange::Moved {
                from: Some(from),
                to,
            }) => eprintln!("{who}: peer moved to {to} (was {from}); same session"),
            PathEvent::Peer(PeerChange::Moved { from: None, .. })
            | PathEvent::Peer(PeerChange::Unanswered(_)) => {}
            PathEvent::MaxDatagram {
                from,
                to,
                black_hole,
            } => {
                let why = match black_hole {
                    true => ": larger datagrams stopped arriving",
                    false => "",
                };
                eprintln!("{who}: path MTU: datagrams of {to} bytes (were {from}){why}");
            }
        }
    }
}

/// The secure-layer counter of a sealed data datagram (`None`: plaintext, or a handshake).
fn sealed_counter(datagram: &[u8]) -> Option<u64> {
    match salsify_secure::wire::parse(datagram) {
        Ok(salsify_secure::wire::Packet::Data { counter, .. }) => Some(counter),
        _ => None,
    }
}
