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
use salsify_meet::{Candidate, Kind, MeetConfig, MeetEvent, MeetKey, Meeting, Pair};
use salsify_secure::{Keypair, SecureConfig};
use salsify_time::{Duration, Instant};

use crate::clock;
use crate::udp;

/// How long to look for the peer before giving up.
pub const MEET_WITHIN: Duration = Duration::from_secs(30);
/// After a relayed pair works, how long to wait for a direct one before the call starts
/// (a direct pair found during the call does not replace it).
const SETTLE_RELAYED: Duration = Duration::from_millis(300);

/// Where the peers meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Via {
    /// The rendezvous server (`salsify rendezvous`).
    pub rendezvous: SocketAddr,
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
    let start = clock::now();
    let mut meeting = Meeting::new(key, MeetConfig::new(via.rendezvous), host, start);
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(5)))
        .context("cannot set the socket's read timeout")?;
    let mut buf = vec![0u8; udp::MAX_DATAGRAM];
    let mut met_at: Option<Instant> = None;
    loop {
        let now = clock::now();
        if stop.load(Ordering::Relaxed) {
            bail!("stopped before the peer was met");
        }
        if now.saturating_duration_since(start) >= MEET_WITHIN {
            bail!(
                "could not meet the peer through {} within {} s: is it running with --via the same \
                 rendezvous and our public key as its --peer-key? (both behind symmetric NATs need --turn)",
                via.rendezvous,
                MEET_WITHIN.as_secs()
            );
        }
        meeting.handle_timeout(now);
        while let Some(out) = meeting.poll_transmit() {
            udp::send(socket, &out.bytes, out.to);
        }
        while let Some(event) = meeting.poll_event() {
            if let MeetEvent::Met(_) = event {
                met_at.get_or_insert(now);
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
                return Ok(Met {
                    pair,
                    dials,
                    meeting,
                    took,
                });
            }
        }
        match udp::recv(socket, &mut buf) {
            Ok(Some(d)) => {
                meeting.handle_datagram(d.at, d.from, false, &d.bytes);
            }
            Ok(None) => {}
            Err(e) => return Err(e).context("receiving while meeting the peer"),
        }
    }
}
