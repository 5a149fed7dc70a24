//! Before a call whose peer is met through a rendezvous (`--via`): register, learn the peer's
//! candidates, punch through both NATs with connectivity checks, and hand the socket and the
//! pair that works to the loop, whose [`crate::peer_link::PeerLink`] keeps answering the
//! peer's checks (it may still be looking for its side of the pair).
//!
//! The side whose public key sorts first dials the pair's address (it starts the handshake);
//! the other listens on the same socket.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use salsify_meet::turn::{Retransmits, StunBinding, TurnClient, TurnConfig, TurnEvent};
use salsify_meet::{Candidate, Kind, MeetConfig, MeetEvent, MeetKey, Meeting, Pair};
use salsify_secure::{Keypair, SecureConfig};
use salsify_time::{Duration, Instant};

use crate::clock;
use crate::udp;

/// How long to look for the peer before giving up: 15 s, what a person waits for a call to
/// start (the peer not there, or no pair that works).
pub const MEET_WITHIN: Duration = Duration::from_secs(15);
/// How long the rendezvous may take to answer the registration before the meeting fails
/// (it answers within a round trip; 5 s covers its retransmissions on a lossy path).
pub const RENDEZVOUS_ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// After a relayed pair works, how long to wait for a direct one before the call starts
/// (a direct pair found during the call does not replace it).
const SETTLE_RELAYED: Duration = Duration::from_millis(300);

/// Where the peers meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    /// The rendezvous server (`salsify rendezvous`).
    pub rendezvous: SocketAddr,
    /// A STUN server for this side's reflexive address (`--stun`); the rendezvous's view of
    /// it is a candidate too.
    pub stun: Option<SocketAddr>,
    /// A TURN server to relay through when no direct pair works (`--turn`).
    pub turn: Option<TurnServer>,
}

/// A TURN server and this side's credentials on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnServer {
    /// Its UDP address.
    pub server: SocketAddr,
    /// The long-term credentials' user.
    pub user: String,
    /// And password.
    pub password: String,
}

/// The outcome of a meeting.
#[derive(Debug)]
pub struct Met {
    /// The pair that works.
    pub pair: Pair,
    /// Whether this side dials (starts the handshake).
    pub dials: bool,
    /// The meeting, to keep answering the peer's checks.
    pub meeting: Meeting,
    /// The TURN allocation the pair goes through (this side relays), or, for a listener on
    /// a relayed pair, the one the dialer's handshake may come through.
    pub relay: Option<TurnClient>,
    /// The STUN and TURN servers used: their late answers are no one's datagrams.
    pub servers: Vec<SocketAddr>,
    /// How long it took.
    pub took: Duration,
}

/// A socket for a meeting: an ephemeral port on every interface of the rendezvous's family.
pub fn bind(via: &Via) -> Result<UdpSocket> {
    udp::bind_for(via.rendezvous)
}

/// The local address that routes to `to` (the host candidate), without sending anything.
fn local_ip_towards(to: SocketAddr) -> Option<IpAddr> {
    let probe = UdpSocket::bind(match to {
        SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        SocketAddr::V6(_) => "[::]:0".parse().ok()?,
    })
    .ok()?;
    probe.connect(to).ok()?;
    probe.local_addr().ok().map(|a| a.ip())
}

/// Meets the peer of `secure`'s keys through `via` on `socket`: returns when a pair works, or
/// fails after [`MEET_WITHIN`] or when `stop` is set.
pub fn meet(
    via: &Via,
    socket: &UdpSocket,
    secure: &SecureConfig,
    who: &str,
    stop: &AtomicBool,
) -> Result<Met> {
    let start = clock::now();
    let (mut meeting, mut helpers) = start_meeting(via, socket, secure, who, start)?;
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(5)))
        .context("cannot set the socket's read timeout")?;
    let mut buf = vec![0u8; udp::MAX_DATAGRAM];
    let mut met_at: Option<Instant> = None;
    let mut progress = Progress::default();
    loop {
        let now = clock::now();
        if stop.load(Ordering::Relaxed) {
            bail!("stopped before the peer was met");
        }
        progress.check(now.saturating_duration_since(start), via, &meeting)?;
        meeting.handle_timeout(now);
        helpers.tick(now, socket, &mut meeting);
        while let Some(out) = meeting.poll_transmit() {
            match out.ttl {
                Some(ttl) if !out.via_relay => {
                    udp::send_with_ttl(socket, &out.bytes, out.to, ttl);
                }
                _ => helpers.send(now, socket, out.to, out.via_relay, &out.bytes),
            }
        }
        while let Some(event) = meeting.poll_event() {
            match event {
                MeetEvent::Met(_) => {
                    met_at.get_or_insert(now);
                }
                MeetEvent::Introduced(candidates) => {
                    progress.introduced = true;
                    progress.answered = true;
                    helpers.permit(now, &candidates);
                }
                MeetEvent::Observed(_) => progress.answered = true,
            }
        }
        if let (Some(pair), Some(at)) = (meeting.best(), met_at) {
            if !pair.relayed || now.saturating_duration_since(at) >= SETTLE_RELAYED {
                let took = now.saturating_duration_since(start);
                let how = if pair.relayed { "relayed" } else { "direct" };
                eprintln!(
                    "{who}: met the peer at {} ({how}) in {:.2} s",
                    pair.remote,
                    took.as_secs_f64()
                );
                let dials = meeting.dials();
                // Each side picks the first pair acknowledged, so the two may pick different
                // relayed pairs (each sending straight to the other's relay). The dialer's
                // choice holds: a listener on a relayed pair keeps its allocation until the
                // dialer's handshake shows whether it comes through it.
                let relay = match helpers.turn.take() {
                    Some(t) if pair.via_relay || (pair.relayed && !dials) => Some(t),
                    Some(t) => {
                        give_back(socket, t, now); // not needed
                        None
                    }
                    None => None,
                };
                let servers = via
                    .stun
                    .into_iter()
                    .chain(via.turn.as_ref().map(|t| t.server))
                    .collect();
                return Ok(Met {
                    pair,
                    dials,
                    meeting,
                    relay,
                    servers,
                    took,
                });
            }
        }
        match udp::recv(socket, &mut buf) {
            Ok(Some(d)) => helpers.receive(&d, &mut meeting),
            Ok(None) => {}
            Err(e) => return Err(e).context("receiving while meeting the peer"),
        }
    }
}

/// A fresh meeting (a new run, fresh seed) with this side's host candidate, and its STUN
/// binding and TURN allocation: what [`meet`] drives before a call and a
/// [`crate::peer_link::PeerLink`] drives again when its path goes silent.
pub(crate) fn start_meeting(
    via: &Via,
    socket: &UdpSocket,
    secure: &SecureConfig,
    who: &str,
    now: Instant,
) -> Result<(Meeting, Helpers)> {
    let public = Keypair::from_private(secure.local.clone()).public;
    let key = MeetKey::new(secure.local.as_bytes(), &public.0, &secure.peer.0);
    let port = socket.local_addr().context("the socket's address")?.port();
    let host = local_ip_towards(via.rendezvous)
        .map(|ip| Candidate {
            kind: Kind::Host,
            addr: SocketAddr::new(ip, port),
        })
        .into_iter()
        .collect();
    // A fresh seed from the OS for every meeting: its seals' nonces must never repeat.
    let config = MeetConfig {
        seed: rand::random(),
        started_ms: crate::secure_io::unix_nanos() / 1_000_000,
        ..MeetConfig::new(via.rendezvous)
    };
    let meeting = Meeting::new(key, config, host, now);
    let helpers = Helpers {
        stun: via
            .stun
            .map(|server| StunBinding::new(server, Retransmits::default(), now)),
        turn: via.turn.as_ref().map(|t| {
            let config = TurnConfig::new(t.server, t.user.clone(), t.password.clone());
            TurnClient::new(config, now)
        }),
        who: who.to_string(),
    };
    Ok((meeting, helpers))
}

/// Deletes `turn`'s allocation on its server (the delete sent now, no answer awaited).
pub(crate) fn give_back(socket: &UdpSocket, mut turn: TurnClient, now: Instant) {
    turn.close(now);
    while let Some(d) = turn.poll_transmit(now) {
        udp::send(socket, &d, turn.server());
    }
}

/// How far a meeting got: what its failure says.
#[derive(Debug, Default)]
struct Progress {
    /// The rendezvous answered the registration.
    answered: bool,
    /// It introduced the peer (both registered with each other's keys).
    introduced: bool,
}

impl Progress {
    /// An error naming what is missing, once `elapsed` is past its limit.
    fn check(&self, elapsed: Duration, via: &Via, meeting: &Meeting) -> Result<()> {
        let rendezvous = via.rendezvous;
        if !self.answered && elapsed >= RENDEZVOUS_ANSWER_WITHIN {
            bail!(
                "the rendezvous at {rendezvous} did not answer in {} s: is `salsify rendezvous` \
                 running there, and reachable from here?",
                RENDEZVOUS_ANSWER_WITHIN.as_secs()
            );
        }
        if elapsed < MEET_WITHIN {
            return Ok(());
        }
        let within = MEET_WITHIN.as_secs();
        if !self.introduced {
            bail!(
                "the peer did not come to the rendezvous at {rendezvous} within {within} s: is it \
                 running with --via the same rendezvous and our public key as its --peer-key?"
            );
        }
        let checks = meeting.stats().checks;
        match &via.turn {
            None => bail!(
                "the rendezvous introduced the peer, but none of {checks} checks of the direct \
                 pairs was answered within {within} s: the NATs between us let no direct pair \
                 through, so the call needs a relay (--turn turn:HOST:PORT with --turn-user and \
                 --turn-password, on both sides)"
            ),
            Some(t) => bail!(
                "the rendezvous introduced the peer, but none of {checks} checks was answered \
                 within {within} s, direct or through the relay at {}: is the TURN server \
                 running, and do both sides give it?",
                t.server
            ),
        }
    }
}

/// The STUN binding and TURN allocation beside a meeting, on the same socket.
pub(crate) struct Helpers {
    stun: Option<StunBinding>,
    /// The allocation (taken by the link once the pair is known).
    pub(crate) turn: Option<TurnClient>,
    who: String,
}

impl Helpers {
    /// Their timers and requests, and the candidates they found.
    pub(crate) fn tick(&mut self, now: Instant, socket: &UdpSocket, meeting: &mut Meeting) {
        if let Some(b) = &mut self.stun {
            if now >= b.poll_timeout() {
                b.handle_timeout(now);
            }
            while let Some(d) = b.poll_transmit(now) {
                udp::send(socket, &d, b.server());
            }
            if let Some(mapped) = b.mapped() {
                meeting.add_local(
                    now,
                    Candidate {
                        kind: Kind::Reflexive,
                        addr: mapped,
                    },
                );
            }
        }
        let Some(t) = &mut self.turn else { return };
        if now >= t.poll_timeout() {
            t.handle_timeout(now);
        }
        while let Some(d) = t.poll_transmit(now) {
            udp::send(socket, &d, t.server());
        }
        while let Some(event) = t.poll_event() {
            match event {
                TurnEvent::Allocated { relayed, mapped } => {
                    meeting.add_local(
                        now,
                        Candidate {
                            kind: Kind::Relayed,
                            addr: relayed,
                        },
                    );
                    if let Some(mapped) = mapped {
                        meeting.add_local(
                            now,
                            Candidate {
                                kind: Kind::Reflexive,
                                addr: mapped,
                            },
                        );
                    }
                }
                TurnEvent::Failed(why) => {
                    eprintln!("{}: no TURN relay: {why}", self.who);
                    self.turn = None;
                    return;
                }
                _ => {}
            }
        }
    }

    /// When [`Helpers::tick`] next has something to do.
    pub(crate) fn poll_timeout(&self) -> Instant {
        let stun = self
            .stun
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |b| b.poll_timeout());
        let turn = self
            .turn
            .as_ref()
            .map_or(Instant::FAR_FUTURE, |t| t.poll_timeout());
        stun.min(turn)
    }

    /// During a call: a datagram from this meeting's STUN or TURN server. `None`: not
    /// theirs; `Some(None)`: theirs, consumed; `Some(Some((peer, payload)))`: a peer's
    /// datagram out of the relay.
    pub(crate) fn intercept(&mut self, d: &udp::Received) -> Option<Option<(SocketAddr, Vec<u8>)>> {
        if let Some(b) = &mut self.stun {
            if d.from == b.server() && b.handle_datagram(d.at, &d.bytes) {
                return Some(None);
            }
        }
        let t = self.turn.as_mut()?;
        if d.from != t.server() || !TurnClient::is_turn(&d.bytes) {
            return None;
        }
        Some(t.handle_datagram(d.at, &d.bytes))
    }

    /// Lets the peer's candidates reach this side through the relay.
    pub(crate) fn permit(&mut self, now: Instant, candidates: &[Candidate]) {
        if let Some(t) = &mut self.turn {
            for c in candidates.iter().filter(|c| c.kind != Kind::Relayed) {
                t.permit(now, c.addr);
            }
        }
    }

    pub(crate) fn send(
        &mut self,
        now: Instant,
        socket: &UdpSocket,
        to: SocketAddr,
        via_relay: bool,
        bytes: &[u8],
    ) {
        match (&mut self.turn, via_relay) {
            (Some(t), true) => {
                if let Some(d) = t.wrap(now, to, bytes) {
                    udp::send(socket, &d, t.server());
                }
            }
            (_, true) => {}
            (_, false) => {
                udp::send(socket, bytes, to);
            }
        }
    }

    /// A datagram: the STUN server's answer, the relay's (a peer's datagram unwrapped), or a
    /// meeting datagram straight from a peer or the rendezvous.
    pub(crate) fn receive(&mut self, d: &udp::Received, meeting: &mut Meeting) {
        if let Some(b) = &mut self.stun {
            if d.from == b.server() && b.handle_datagram(d.at, &d.bytes) {
                return;
            }
        }
        if let Some(t) = &mut self.turn {
            if d.from == t.server() && TurnClient::is_turn(&d.bytes) {
                if let Some((peer, payload)) = t.handle_datagram(d.at, &d.bytes) {
                    meeting.handle_datagram(d.at, peer, true, &payload);
                }
                return;
            }
        }
        meeting.handle_datagram(d.at, d.from, false, &d.bytes);
    }
}
