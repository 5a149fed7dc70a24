//! The TURN client and the STUN binding against a sans-IO TURN server (`turn-server-proto`) in
//! virtual time: allocation, permissions and channels, data both ways, refreshes over an hour,
//! stale nonces, lost requests, refusals, and random datagrams. No sockets: every address is a
//! documentation address that nothing is ever sent to.

use std::net::SocketAddr;

use proptest::prelude::*;
use salsify_meet::turn::{
    BindingError, Retransmits, StunBinding, TurnClient, TurnConfig, TurnError, TurnEvent,
};
use salsify_time::{Duration, Instant};
use turn_client_proto::stun::agent::Transmit;
use turn_client_proto::stun::Instant as StunInstant;
use turn_client_proto::types::TransportType;
use turn_server_proto::api::{TurnServerApi, TurnServerPollRet};
use turn_server_proto::server::TurnServer;

const USER: &str = "test";
const PASS: &str = "secret";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn stun(now: Instant) -> StunInstant {
    StunInstant::from_nanos(i64::try_from(now.as_micros() * 1000).unwrap())
}

/// A client, a server and a peer on a lossless (or filtered) network.
struct Net {
    now: Instant,
    client: TurnClient,
    server: TurnServer,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    relay_addr: SocketAddr,
    peer_addr: SocketAddr,
    /// Everything the client sent, when.
    sent: Vec<(Instant, Vec<u8>)>,
    /// Datagrams the server forwarded to the peer: (from, bytes).
    at_peer: Vec<(SocketAddr, Vec<u8>)>,
    /// Peer datagrams the client unwrapped.
    unwrapped: Vec<(SocketAddr, Vec<u8>)>,
    events: Vec<TurnEvent>,
    /// Error codes the server answered with.
    errors: Vec<u16>,
    /// Drops a client datagram when it says so (the n-th datagram sent, from 0).
    drop_sent: Box<dyn FnMut(usize) -> bool>,
}

impl Net {
    fn new(password: &str) -> Self {
        Net::with(TurnConfig::new(addr("198.51.100.1:3478"), USER, password))
    }

    fn with(config: TurnConfig) -> Self {
        let now = Instant::from_millis(1000);
        let server_addr = addr("198.51.100.1:3478");
        let mut server = TurnServer::new(TransportType::Udp, server_addr, "salsify.test".into());
        server.add_user(USER.into(), PASS.into());
        Net {
            now,
            client: TurnClient::new(config, now),
            server,
            client_addr: addr("203.0.113.7:40000"),
            server_addr,
            relay_addr: addr("198.51.100.1:50000"),
            peer_addr: addr("192.0.2.9:6000"),
            sent: vec![],
            at_peer: vec![],
            unwrapped: vec![],
            events: vec![],
            errors: vec![],
            drop_sent: Box::new(|_| false),
        }
    }

    /// Runs both sides until `until`, jumping from deadline to deadline.
    fn run_until(&mut self, until: Instant) {
        let mut spins = 0;
        loop {
            let mut progress = false;
            while let Some(bytes) = self.client.poll_transmit(self.now) {
                progress = true;
                let n = self.sent.len();
                self.sent.push((self.now, bytes.clone()));
                if !(self.drop_sent)(n) {
                    self.deliver(self.client_addr, self.server_addr, bytes);
                }
            }
            let server_next = self.poll_server();
            while let Some(event) = self.client.poll_event() {
                progress = true;
                self.events.push(event);
            }
            let next = self.client.poll_timeout().min(server_next);
            if next > until {
                self.now = until;
                self.client.handle_timeout(self.now);
                return;
            }
            if next <= self.now && !progress {
                spins += 1;
                assert!(spins < 1000, "busy loop at {:?}", self.now);
            } else {
                spins = 0;
            }
            self.now = next.max(self.now);
            self.client.handle_timeout(self.now);
        }
    }

    fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// Polls the server, gives it sockets, routes what it sends; returns when it is next due.
    fn poll_server(&mut self) -> Instant {
        loop {
            match self.server.poll(stun(self.now)) {
                TurnServerPollRet::AllocateSocket {
                    transport,
                    listen_addr,
                    client_addr,
                    allocation_transport,
                    family,
                } => self.server.allocated_socket(
                    transport,
                    listen_addr,
                    client_addr,
                    allocation_transport,
                    family,
                    Ok(self.relay_addr),
                    stun(self.now),
                ),
                TurnServerPollRet::WaitUntil(t) => {
                    while let Some(t) = self.server.poll_transmit(stun(self.now)) {
                        self.route(t.from, t.to, t.data);
                    }
                    let micros = u64::try_from(t.as_nanos()).unwrap_or(0).div_ceil(1000);
                    return Instant::from_micros(micros).max(self.now);
                }
                _ => {}
            }
        }
    }

    fn deliver(&mut self, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        let reply = self
            .server
            .recv(
                Transmit::new(bytes, TransportType::Udp, from, to),
                stun(self.now),
            )
            .map(|t| t.build());
        if let Some(t) = reply {
            self.route(t.from, t.to, t.data);
        }
    }

    fn route(&mut self, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        if to == self.client_addr {
            assert_eq!(from, self.server_addr);
            if let Some(r) = error_code(&bytes) {
                self.errors.push(r);
            }
            if let Some(data) = self.client.handle_datagram(self.now, &bytes) {
                self.unwrapped.push(data);
            }
        } else if to == self.peer_addr {
            self.at_peer.push((from, bytes));
        } else {
            panic!("a datagram to {to}");
        }
    }

    /// The peer sends `bytes` to the relayed address.
    fn peer_sends(&mut self, bytes: &[u8]) {
        let (peer, relay) = (self.peer_addr, self.relay_addr);
        self.deliver(peer, relay, bytes.to_vec());
    }

    /// The client wraps `bytes` for the peer and sends them.
    fn client_sends(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        let wrapped = self.client.wrap(self.now, self.peer_addr, bytes)?;
        let (client, server) = (self.client_addr, self.server_addr);
        self.deliver(client, server, wrapped.clone());
        Some(wrapped)
    }

    fn allocated(&self) -> Option<(SocketAddr, Option<SocketAddr>)> {
        self.events.iter().find_map(|e| match e {
            TurnEvent::Allocated { relayed, mapped } => Some((*relayed, *mapped)),
            _ => None,
        })
    }

    fn failed(&self) -> Option<&TurnError> {
        self.events.iter().find_map(|e| match e {
            TurnEvent::Failed(e) => Some(e),
            _ => None,
        })
    }
}

/// The error code of a STUN error response.
fn error_code(bytes: &[u8]) -> Option<u16> {
    use turn_client_proto::stun::types::attribute::ErrorCode;
    use turn_client_proto::stun::types::message::{Message, MessageClass};
    let msg = Message::from_bytes(bytes).ok()?;
    if !msg.has_class(MessageClass::Error) {
        return None;
    }
    msg.attribute::<ErrorCode>().ok().map(|e| e.code())
}

/// A client allocated and with the peer permitted and bound.
fn ready() -> Net {
    let mut net = Net::new(PASS);
    net.run_for(Duration::from_secs(1));
    let peer = net.peer_addr;
    net.client.permit(net.now, peer);
    net.run_for(Duration::from_secs(1));
    assert!(
        net.events.contains(&TurnEvent::ChannelBound(peer)),
        "{:?}",
        net.events
    );
    net
}

#[test]
fn allocates_permits_and_relays_both_ways() {
    let mut net = Net::new(PASS);
    net.run_for(Duration::from_secs(1));
    let (relayed, mapped) = net.allocated().expect("allocated");
    assert_eq!(relayed, net.relay_addr);
    assert_eq!(mapped, Some(net.client_addr));
    assert_eq!(net.client.relayed_address(), Some(relayed));
    assert_eq!(net.errors, [401], "one challenge, then success");
    // Nothing to a peer that is not permitted.
    assert_eq!(net.client.wrap(net.now, net.peer_addr, b"early"), None);
    net.peer_sends(b"unpermitted");
    assert!(net.unwrapped.is_empty());

    let peer = net.peer_addr;
    net.client.permit(net.now, peer);
    net.run_for(Duration::from_secs(1));
    assert!(net
        .events
        .contains(&TurnEvent::PermissionCreated(peer.ip())));
    assert!(net.events.contains(&TurnEvent::ChannelBound(peer)));

    // Client to peer: ChannelData (4 bytes of header), arriving from the relayed address.
    let wrapped = net.client_sends(b"hello peer").unwrap();
    assert!(TurnClient::is_turn(&wrapped));
    assert_eq!(wrapped.len(), 4 + 10);
    assert_eq!(wrapped[0] & 0xC0, 0x40);
    assert_eq!(net.at_peer, [(relayed, b"hello peer".to_vec())]);
    // Peer to client, unwrapped.
    net.peer_sends(b"hello client");
    assert_eq!(net.unwrapped, [(peer, b"hello client".to_vec())]);
    assert_eq!(net.failed(), None);
}

#[test]
fn send_indications_before_the_channel_and_permits_wait_for_the_allocation() {
    let mut net = Net::new(PASS);
    let peer = net.peer_addr;
    // Permitted before the allocation exists: done once it does.
    net.client.permit(net.now, peer);
    // Drop the ChannelBind (the 4th datagram: allocate, allocate with credentials, permission,
    // channel) and its retransmits for a while: data goes in Send indications meanwhile.
    net.drop_sent = Box::new(|n| n == 3);
    net.run_for(Duration::from_millis(300));
    assert!(net.allocated().is_some());
    assert!(net
        .events
        .contains(&TurnEvent::PermissionCreated(peer.ip())));
    assert!(!net.events.contains(&TurnEvent::ChannelBound(peer)));
    let wrapped = net.client_sends(b"via send").unwrap();
    assert_eq!(wrapped[0], 0x00, "a Send indication");
    for len in [0, 1, 2, 3, 4, 1200, TurnClient::MAX_PAYLOAD] {
        let wrapped = net.client.wrap(net.now, peer, &vec![7; len]).unwrap();
        assert!(wrapped.len() <= len + TurnClient::SEND_OVERHEAD, "{len}");
        assert!(wrapped.len() <= 65_507);
    }
    let too_big = vec![7; TurnClient::MAX_PAYLOAD + 1];
    assert_eq!(net.client.wrap(net.now, peer, &too_big), None);
    assert_eq!(net.at_peer.last().unwrap().1, b"via send");
    net.peer_sends(b"via data");
    assert_eq!(net.unwrapped, [(peer, b"via data".to_vec())]);
    // The ChannelBind's retransmit (500 ms) gets through.
    net.run_for(Duration::from_secs(1));
    assert!(net.events.contains(&TurnEvent::ChannelBound(peer)));
    assert_eq!(net.client_sends(b"via channel").unwrap()[0] & 0xC0, 0x40);
    for len in [0, 1, 3, 1200, TurnClient::MAX_PAYLOAD] {
        let wrapped = net.client.wrap(net.now, peer, &vec![7; len]).unwrap();
        assert_eq!(wrapped.len(), len + TurnClient::CHANNEL_OVERHEAD);
    }
}

#[test]
fn refreshes_keep_the_relay_alive_for_hours() {
    let mut net = ready();
    let start = net.now;
    for minute in 1..=150 {
        net.run_until(start + Duration::from_secs(60 * minute));
        let n = net.unwrapped.len();
        net.peer_sends(format!("minute {minute}").as_bytes());
        assert_eq!(
            net.unwrapped.len(),
            n + 1,
            "peer data lost at minute {minute}"
        );
        net.client_sends(b"still here").expect("wraps");
    }
    assert_eq!(net.failed(), None, "{:?}", net.events);
    // Requests after setup: refreshes of the allocation (every ~9 min at 600 s, then every
    // 29 min at 1800 s), the permission (4 min), the channel (9 min); and nothing in a tight loop.
    let requests = net
        .sent
        .iter()
        .filter(|(t, b)| *t > start + Duration::from_secs(1) && b[0] < 0x40)
        .count();
    eprintln!("{requests} requests in 150 minutes");
    assert!(
        (40..=80).contains(&requests),
        "{requests} requests in 150 minutes"
    );
}

#[test]
fn stale_nonces_are_renewed() {
    let mut net = Net::new(PASS);
    net.server
        .set_nonce_expiry_duration(std::time::Duration::from_secs(30));
    net.run_for(Duration::from_secs(1));
    let peer = net.peer_addr;
    net.client.permit(net.now, peer);
    let start = net.now;
    net.run_until(start + Duration::from_secs(20 * 60));
    assert!(
        net.errors.contains(&438),
        "the server made the nonce stale: {:?}",
        net.errors
    );
    assert_eq!(net.failed(), None, "{:?}", net.events);
    net.peer_sends(b"after stale nonces");
    assert_eq!(net.unwrapped.last().unwrap().1, b"after stale nonces");
}

#[test]
fn lost_requests_are_sent_again_on_rfc_timing() {
    let mut net = Net::new(PASS);
    // The first three Allocate sends are lost.
    net.drop_sent = Box::new(|n| n < 3);
    net.run_for(Duration::from_secs(5));
    assert!(net.allocated().is_some());
    let times: Vec<u64> = net.sent[..4]
        .iter()
        .map(|(t, _)| (t.as_micros() - 1_000_000) / 1000)
        .collect();
    assert_eq!(times, [0, 500, 1500, 3500]);
    assert_eq!(
        net.sent[0].1, net.sent[1].1,
        "a retransmit is the same bytes"
    );
}

#[test]
fn a_wrong_password_fails_at_once() {
    let mut net = Net::new("wrong");
    net.run_for(Duration::from_millis(100));
    match net.failed() {
        Some(TurnError::AllocateFailed(Some(e))) => assert_eq!(e.code, 401),
        other => panic!("{other:?} in {:?}", net.events),
    }
    assert!(net.client.is_closed());
    assert_eq!(net.client.poll_timeout(), Instant::FAR_FUTURE);
    assert_eq!(net.client.relayed_address(), None);
    // Nothing more is sent.
    let n = net.sent.len();
    net.run_for(Duration::from_secs(60));
    assert_eq!(net.sent.len(), n);
    assert_eq!(n, 2, "the challenged Allocate and the one with credentials");
}

#[test]
fn a_forged_refusal_is_ignored() {
    let mut net = Net::new(PASS);
    // Before the server's answer to the Allocate with credentials, a 401 from "the server" with
    // another transaction id: the client goes on and allocates.
    let forged = {
        use turn_client_proto::stun::types::attribute::ErrorCode;
        use turn_client_proto::stun::types::message::MessageClass;
        use turn_client_proto::stun::types::message::{
            Message, MessageType, MessageWrite, MessageWriteExt, MessageWriteVec, TransactionId,
        };
        use turn_client_proto::types::message::ALLOCATE;
        let mut m = Message::builder(
            MessageType::from_class_method(MessageClass::Error, ALLOCATE),
            TransactionId::generate(),
            MessageWriteVec::new(),
        );
        m.add_attribute(
            &ErrorCode::builder(401)
                .reason("Unauthorized")
                .build()
                .unwrap(),
        )
        .unwrap();
        m.finish()
    };
    net.drop_sent = Box::new(|n| n == 1);
    net.run_for(Duration::from_millis(100));
    assert_eq!(net.client.handle_datagram(net.now, &forged), None);
    net.run_for(Duration::from_secs(1));
    assert!(net.allocated().is_some(), "{:?}", net.events);
    assert_eq!(net.failed(), None);
}

#[test]
fn a_silent_server_fails_when_retransmits_run_out() {
    let mut config = TurnConfig::new(addr("198.51.100.1:3478"), USER, PASS);
    config.retransmits = Retransmits::within(Duration::from_secs(5));
    let mut net = Net::with(config);
    net.drop_sent = Box::new(|_| true);
    net.run_for(Duration::from_secs(4));
    assert_eq!(net.failed(), None);
    net.run_for(Duration::from_secs(2));
    assert_eq!(net.failed(), Some(&TurnError::AllocateFailed(None)));
    assert_eq!(net.sent.len(), 4, "sends at 0, 0.5, 1.5 and 3.5 s");
}

#[test]
fn close_deletes_the_allocation_quietly() {
    let mut net = ready();
    let n = net.sent.len();
    net.client.close(net.now);
    net.run_for(Duration::from_secs(5));
    assert_eq!(net.sent.len(), n + 1, "one Refresh with lifetime 0");
    assert!(net.client.is_closed());
    assert_eq!(net.failed(), None);
    assert_eq!(net.client.wrap(net.now, net.peer_addr, b"x"), None);
    net.peer_sends(b"gone");
    assert!(net.unwrapped.is_empty());
}

#[test]
fn a_binding_finds_the_mapped_address() {
    let mut net = Net::new(PASS);
    let mut binding = StunBinding::new(net.server_addr, Retransmits::default(), net.now);
    assert_eq!(binding.poll_timeout(), net.now);
    let request = binding.poll_transmit(net.now).unwrap();
    assert!(TurnClient::is_turn(&request));
    assert_eq!(binding.poll_transmit(net.now), None);
    // A truncated answer is not an answer.
    let reply = net
        .server
        .recv(
            Transmit::new(
                request,
                TransportType::Udp,
                net.client_addr,
                net.server_addr,
            ),
            stun(net.now),
        )
        .unwrap()
        .build();
    assert!(!binding.handle_datagram(net.now, &reply.data[..reply.data.len() - 1]));
    assert!(binding.handle_datagram(net.now, &reply.data));
    assert_eq!(binding.outcome(), Some(Ok(net.client_addr)));
    assert_eq!(binding.mapped(), Some(net.client_addr));
    assert_eq!(binding.poll_timeout(), Instant::FAR_FUTURE);
    assert_eq!(binding.poll_transmit(net.now), None);
    // The server answers the TURN client too; the binding ignores what is not its answer.
    net.run_for(Duration::from_secs(1));
    assert!(net.allocated().is_some());
}

#[test]
fn an_unanswered_binding_gives_up_on_rfc_timing() {
    let start = Instant::from_millis(7);
    let mut binding = StunBinding::new(addr("198.51.100.1:3478"), Retransmits::default(), start);
    let mut now = start;
    let mut sends = vec![];
    while binding.outcome().is_none() {
        while binding.poll_transmit(now).is_some() {
            sends.push(now.saturating_duration_since(start).as_millis());
        }
        let next = binding.poll_timeout();
        assert!(next >= now);
        now = next;
        binding.handle_timeout(now);
        assert!(sends.len() <= 7);
    }
    assert_eq!(sends, [0, 500, 1500, 3500, 7500, 15500, 31500]);
    assert_eq!(
        now.saturating_duration_since(start),
        Duration::from_millis(39_500)
    );
    assert_eq!(binding.outcome(), Some(Err(BindingError::NoAnswer)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random datagrams from the server's address never panic the client, allocated or not,
    /// and never come out as peer data.
    #[test]
    fn random_datagrams_never_panic(
        datagrams in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..300), 1..20),
        allocate_first in any::<bool>(),
    ) {
        let mut net = if allocate_first { ready() } else { Net::new(PASS) };
        let mut binding = StunBinding::new(net.server_addr, Retransmits::default(), net.now);
        for d in &datagrams {
            prop_assert_eq!(net.client.handle_datagram(net.now, d), None);
            binding.handle_datagram(net.now, d);
            net.now += Duration::from_millis(10);
            net.client.handle_timeout(net.now);
            binding.handle_timeout(net.now);
        }
        net.run_for(Duration::from_secs(2));
        if allocate_first {
            prop_assert!(net.client.wrap(net.now, net.peer_addr, b"x").is_some());
        }
    }

    /// Mutations of the real server's answers (bits flipped, cut short) never panic either.
    #[test]
    fn mutated_answers_never_panic(flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..8),
                                   cut in any::<u16>()) {
        let mut net = Net::new(PASS);
        let mut answers = vec![];
        // Collect the server's answers to the client's first requests.
        for _ in 0..2 {
            while let Some(bytes) = net.client.poll_transmit(net.now) {
                if let Some(t) = net.server.recv(
                    Transmit::new(bytes, TransportType::Udp, net.client_addr, net.server_addr),
                    stun(net.now),
                ) {
                    let data = t.build().data;
                    answers.push(data.clone());
                    net.client.handle_datagram(net.now, &data);
                }
            }
            net.now += Duration::from_millis(100);
            net.client.handle_timeout(net.now);
        }
        let mut fresh = Net::new(PASS);
        fresh.run_for(Duration::from_millis(1));
        for answer in answers {
            let mut bytes = answer.clone();
            for (at, bits) in &flips {
                let i = usize::from(*at) % bytes.len();
                bytes[i] ^= bits;
            }
            bytes.truncate(usize::from(cut) % (bytes.len() + 1));
            fresh.client.handle_datagram(fresh.now, &bytes);
            fresh.client.handle_timeout(fresh.now);
        }
    }
}
