//! Fuzzes the STUN/TURN readers and the TURN client and STUN binding behind them, with a sans-IO
//! TURN server (`turn-server-proto`) playing the real server: any sequence of datagrams from the
//! server's address, at any times, never panics; the client, allocated and with one peer
//! permitted (or still allocating), only ever unwraps data from the permitted peer's IP, keeps a
//! deadline that is not in the past, and sends only to the server; the binding's outcome, once
//! there, never changes.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use salsify_meet::turn::{is_turn, Retransmits, StunBinding, TurnClient, TurnConfig, TurnEvent};
use salsify_time::{Duration, Instant};
use turn_client_proto::stun::agent::Transmit;
use turn_client_proto::stun::Instant as StunInstant;
use turn_client_proto::types::TransportType;
use turn_server_proto::api::{TurnServerApi, TurnServerPollRet};
use turn_server_proto::server::TurnServer;

const CLIENT: SocketAddr = addr([203, 0, 113, 7], 40000);
const SERVER: SocketAddr = addr([198, 51, 100, 1], 3478);
const RELAY: SocketAddr = addr([198, 51, 100, 1], 50000);
const PEER: SocketAddr = addr([192, 0, 2, 9], 6000);

const fn addr(ip: [u8; 4], port: u16) -> SocketAddr {
    SocketAddr::new(
        std::net::IpAddr::V4(std::net::Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])),
        port,
    )
}

fn stun(now: Instant) -> StunInstant {
    StunInstant::from_nanos(i64::try_from(now.as_micros().saturating_mul(1000)).unwrap_or(i64::MAX))
}

struct Sim {
    now: Instant,
    client: TurnClient,
    server: TurnServer,
    permitted: bool,
}

impl Sim {
    fn new() -> Self {
        let now = Instant::from_millis(1);
        let mut server = TurnServer::new(TransportType::Udp, SERVER, "fuzz.test".into());
        server.add_user("user".into(), "pass".into());
        Sim {
            now,
            client: TurnClient::new(TurnConfig::new(SERVER, "user", "pass"), now),
            server,
            permitted: false,
        }
    }

    /// Exchanges what is due between client and server (the server's answers included).
    fn exchange(&mut self) {
        for _ in 0..16 {
            let mut any = false;
            while let Some(bytes) = self.client.poll_transmit(self.now) {
                any = true;
                let t = Transmit::new(bytes, TransportType::Udp, CLIENT, SERVER);
                if let Some(reply) = self.server.recv(t, stun(self.now)) {
                    let reply = reply.build();
                    if reply.to == CLIENT {
                        self.deliver(&reply.data);
                    }
                }
            }
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
                        Ok(RELAY),
                        stun(self.now),
                    ),
                    _ => break,
                }
            }
            while let Some(t) = self.server.poll_transmit(stun(self.now)) {
                any = true;
                if t.to == CLIENT {
                    self.deliver(&t.data);
                }
            }
            while let Some(event) = self.client.poll_event() {
                if let TurnEvent::PermissionCreated(ip) = event {
                    self.permitted |= ip == PEER.ip();
                }
            }
            if !any {
                return;
            }
        }
    }

    /// A datagram from the server's address to the client.
    fn deliver(&mut self, bytes: &[u8]) {
        if let Some((from, _)) = self.client.handle_datagram(self.now, bytes) {
            assert!(self.permitted, "peer data before any permission");
            assert_eq!(from.ip(), PEER.ip(), "peer data from an unpermitted IP");
        }
        assert!(self.client.poll_timeout() >= self.now);
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = is_turn(data);
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    let mut sim = Sim::new();
    if mode & 1 == 1 {
        // Allocated, the peer permitted and its channel bound, before the fuzzed datagrams.
        sim.exchange();
        sim.client.permit(sim.now, PEER);
        for _ in 0..4 {
            sim.now += Duration::from_millis(60);
            sim.client.handle_timeout(sim.now);
            sim.exchange();
        }
        assert!(sim.permitted && sim.client.relayed_address() == Some(RELAY));
    }
    let mut binding = StunBinding::new(SERVER, Retransmits::default(), sim.now);
    let mut outcome = None;
    // Each chunk: a time step byte (x 250 ms: refreshes come due), then a datagram up to the
    // next 0xFF.
    for chunk in rest.split(|b| *b == 0xFF) {
        let [step, bytes @ ..] = chunk else {
            continue;
        };
        sim.now += Duration::from_millis(250 * u64::from(*step));
        sim.client.handle_timeout(sim.now);
        sim.deliver(bytes);
        binding.handle_datagram(sim.now, bytes);
        binding.handle_timeout(sim.now);
        while binding.poll_transmit(sim.now).is_some() {}
        assert!(binding.poll_timeout() >= sim.now);
        if outcome.is_some() {
            assert_eq!(binding.outcome(), outcome);
        }
        outcome = binding.outcome();
        if mode & 2 == 2 {
            sim.exchange();
        }
    }
});
