//! [`TurnClient`]: one allocation on a TURN server, its permissions and channels, as a state
//! machine a driver feeds; `turn-client-proto`'s UDP client does the protocol.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use salsify_time::Instant;
use turn_client_proto::api::{
    CreatePermissionError, TurnConfig as ProtoConfig, TurnEvent as ProtoEvent, TurnPollRet,
    TurnRecvRet,
};
use turn_client_proto::prelude::TurnClientApi;
use turn_client_proto::stun::agent::Transmit;
use turn_client_proto::stun::types::message::TransactionId;
use turn_client_proto::types::message::ALLOCATE;
use turn_client_proto::types::{TransportType, TurnCredentials};
use turn_client_proto::udp::TurnClientUdp;

use super::config::TurnConfig;
use super::error::{ServerError, TurnError};
use super::wire::{self, from_stun, to_stun, LOCAL};

/// Something for the driver to act on or report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEvent {
    /// The relay is ready: peers send to `relayed` (tell the peer this address), once permitted.
    Allocated {
        /// The address on the server that relays to this client.
        relayed: SocketAddr,
        /// This client's address as the server saw it (XOR-MAPPED-ADDRESS): a server-reflexive
        /// candidate for free. `None` if the server left it out.
        mapped: Option<SocketAddr>,
    },
    /// Datagrams from this IP now pass the relay (and [`TurnClient::wrap`] works for it).
    PermissionCreated(IpAddr),
    /// The server refused the permission (or its refresh): the peer's datagrams are dropped.
    PermissionFailed(IpAddr),
    /// Datagrams to and from this peer now go as ChannelData (4 bytes of overhead, not 36).
    ChannelBound(SocketAddr),
    /// The channel could not be bound (or refreshed); Send and Data indications still work
    /// while the permission lasts.
    ChannelFailed(SocketAddr),
    /// There is no relay (any more). The client is done; build a new one to try again.
    Failed(TurnError),
}

/// Where the allocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Allocating,
    Allocated,
    /// [`TurnClient::close`] asked the server to delete it.
    Closing,
    Closed,
}

/// A TURN client over UDP (RFC 8656): allocates a relayed address on the server, permits peers,
/// and wraps and unwraps their datagrams; see the module docs for how a driver uses it.
///
/// Never panics on what the server (or anyone spoofing it) sends.
#[derive(Debug)]
pub struct TurnClient {
    server: SocketAddr,
    proto: TurnClientUdp,
    state: State,
    events: VecDeque<TurnEvent>,
    relayed: Option<SocketAddr>,
    /// The XOR-MAPPED-ADDRESS of the Allocate success response being handled.
    mapped_seen: Option<SocketAddr>,
    mapped: Option<SocketAddr>,
    /// Allocate requests sent with credentials: a 401 to one of these is a refusal (a 401 to
    /// the first, credential-less one is the server's challenge giving REALM and NONCE).
    authenticated_allocates: Vec<TransactionId>,
    last_error: Option<ServerError>,
    /// Peers permitted before the allocation was made: permitted once it is.
    waiting: Vec<SocketAddr>,
    next_timeout: Instant,
}

impl TurnClient {
    /// Bytes a ChannelData header adds to a datagram (no padding over UDP): what the path's
    /// datagram size loses once the channel is bound.
    pub const CHANNEL_OVERHEAD: usize = 4;
    /// Most bytes a Send indication adds: STUN header (20), XOR-PEER-ADDRESS of an IPv6 peer (24),
    /// DATA header (4) and padding (3). What to leave room for until the channel is bound.
    pub const SEND_OVERHEAD: usize = 20 + 24 + 4 + 3;
    /// Largest payload [`Self::wrap`] takes: wrapped, it must fit one UDP datagram (65507 bytes)
    /// and STUN's 16-bit length.
    pub const MAX_PAYLOAD: usize = 65_507 - Self::SEND_OVERHEAD;

    /// A client that starts allocating at once (its first request is in [`Self::poll_transmit`]).
    pub fn new(config: TurnConfig, now: Instant) -> Self {
        let r = config.retransmits.clamped();
        let mut proto_config =
            ProtoConfig::new(TurnCredentials::new(&config.username, &config.password));
        proto_config.set_request_retransmits(r.initial, r.max, r.sends, r.last_wait);
        let mut client = TurnClient {
            server: config.server,
            proto: TurnClientUdp::allocate(LOCAL, config.server, proto_config),
            state: State::Allocating,
            events: VecDeque::new(),
            relayed: None,
            mapped_seen: None,
            mapped: None,
            authenticated_allocates: Vec::new(),
            last_error: None,
            waiting: Vec::new(),
            next_timeout: now,
        };
        client.update(now);
        client
    }

    /// Whether a datagram is STUN or ChannelData ([`super::is_turn`]), to demultiplex one socket.
    pub fn is_turn(bytes: &[u8]) -> bool {
        wire::is_turn(bytes)
    }

    /// The server this client talks to: give it the datagrams from this address only.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// The relayed address while the allocation lasts.
    pub fn relayed_address(&self) -> Option<SocketAddr> {
        self.relayed
    }

    /// This client's address as the server saw it, once allocated.
    pub fn mapped_address(&self) -> Option<SocketAddr> {
        self.mapped
    }

    /// Whether the client is done ([`TurnEvent::Failed`] or [`Self::close`]).
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// A datagram that arrived from the TURN server (the driver gives only datagrams whose source
    /// is [`Self::server`]). Returns the peer's datagram it carried, unwrapped, with the peer's
    /// address: handle it as if the peer had sent it directly. Anything else (responses,
    /// garbage, data from unpermitted peers) returns `None`.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Option<(SocketAddr, Vec<u8>)> {
        // ChannelData changes no state: the data path skips the bookkeeping below.
        let channel_data = wire::is_channel_data(bytes);
        if !channel_data && self.note_response(bytes) {
            self.end();
            return None;
        }
        let transmit = Transmit::new(bytes, TransportType::Udp, self.server, LOCAL);
        let out = match self.proto.recv(transmit, to_stun(now)) {
            TurnRecvRet::PeerData(data) => Some((data.peer, data.data().to_vec())),
            TurnRecvRet::Handled | TurnRecvRet::Ignored(_) | TurnRecvRet::PeerIcmp { .. } => None,
        };
        if !channel_data {
            self.update(now);
            self.mapped_seen = None;
        }
        out
    }

    /// The next datagram to send to the server (requests, their retransmits, refreshes).
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.state == State::Closed {
            return None;
        }
        let bytes = self
            .proto
            .poll_transmit(to_stun(now))
            .map(|t| t.data.to_vec());
        if let Some(bytes) = &bytes {
            if self.state == State::Allocating {
                match wire::authenticated_allocate(bytes) {
                    // A retransmit has the same transaction.
                    Some(t) if !self.authenticated_allocates.contains(&t) => {
                        self.authenticated_allocates.push(t)
                    }
                    _ => {}
                }
            }
        }
        self.update(now);
        bytes
    }

    /// Time passed: requests are retransmitted or given up, refreshes come due.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.update(now);
    }

    /// When [`Self::handle_timeout`] is next due ([`Instant::FAR_FUTURE`] once closed).
    pub fn poll_timeout(&self) -> Instant {
        self.next_timeout
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<TurnEvent> {
        self.events.pop_front()
    }

    /// Lets datagrams from and to `peer` through the relay: a CreatePermission for its IP and a
    /// ChannelBind for its address (so data goes with a 4-byte header). Kept fresh until the
    /// client closes. Before the allocation is made, the peer waits for it.
    pub fn permit(&mut self, now: Instant, peer: SocketAddr) {
        match self.state {
            State::Allocating => {
                if !self.waiting.contains(&peer) {
                    self.waiting.push(peer);
                }
            }
            State::Allocated => {
                self.request_permit(now, peer);
                self.update(now);
            }
            State::Closing | State::Closed => {}
        }
    }

    /// Wraps a datagram for `peer` to send to the server: ChannelData once the channel is bound,
    /// a Send indication before. `None` if there is no allocation or no permission for the peer
    /// yet (wait for [`TurnEvent::PermissionCreated`]), or the payload is over
    /// [`Self::MAX_PAYLOAD`].
    pub fn wrap(&mut self, now: Instant, peer: SocketAddr, payload: &[u8]) -> Option<Vec<u8>> {
        if self.state != State::Allocated || payload.len() > Self::MAX_PAYLOAD {
            return None;
        }
        let build = self
            .proto
            .send_to(TransportType::Udp, peer, payload, to_stun(now))
            .ok()??;
        Some(build.build().data)
    }

    /// Deletes the allocation on the server (a Refresh with lifetime 0), to free it at the end of
    /// a call: drain [`Self::poll_transmit`] once more. No event follows.
    pub fn close(&mut self, now: Instant) {
        match self.state {
            State::Allocated => {
                self.state = if self.proto.delete(to_stun(now)).is_ok() {
                    State::Closing
                } else {
                    State::Closed
                };
                self.relayed = None;
            }
            State::Allocating => self.state = State::Closed,
            State::Closing | State::Closed => {}
        }
        self.update(now);
    }

    /// Notes what a response says that the protocol crate does not pass on: the mapped address of
    /// an Allocate success, the last error. Returns whether it refuses the allocation: a 401 to
    /// an Allocate sent with credentials (wrong user or password), which the crate would ignore
    /// (it carries no MESSAGE-INTEGRITY) until its retransmits ran out. Its transaction id is
    /// 96 random bits only the server has seen, so no one off the path can forge it.
    fn note_response(&mut self, bytes: &[u8]) -> bool {
        let Some(response) = wire::peek_response(bytes) else {
            return false;
        };
        if response.success && response.method == ALLOCATE {
            self.mapped_seen = response.mapped;
        }
        let Some(error) = response.error else {
            return false;
        };
        let refused = self.state == State::Allocating
            && response.method == ALLOCATE
            && self.authenticated_allocates.contains(&response.transaction);
        match error.code {
            // The stale nonce the crate answers by itself.
            438 => {}
            // The challenge.
            401 if !refused && response.method == ALLOCATE => {}
            _ => self.last_error = Some(error.clone()),
        }
        refused && error.code == 401
    }

    fn request_permit(&mut self, now: Instant, peer: SocketAddr) {
        let now = to_stun(now);
        match self
            .proto
            .create_permission(TransportType::Udp, peer.ip(), now)
        {
            // Already permitted, or on its way.
            Ok(()) | Err(CreatePermissionError::AlreadyExists) => {}
            // No allocation of the peer's address family.
            Err(_) => {
                self.events
                    .push_back(TurnEvent::PermissionFailed(peer.ip()));
                return;
            }
        }
        // A channel already bound (or being bound) stays; any other refusal (every channel
        // number in use, this address's old channel not yet reusable) leaves the peer on Send
        // and Data indications, which work as long as the permission does.
        let _ = self.proto.bind_channel(TransportType::Udp, peer, now);
    }

    /// Drains the crate's events and asks it when it is next due, until neither changes.
    fn update(&mut self, now: Instant) {
        if self.state == State::Closed {
            self.next_timeout = Instant::FAR_FUTURE;
            return;
        }
        // Events (an allocation made) can queue requests (waiting permits): poll again after.
        for _ in 0..4 {
            self.drain_events(now);
            let poll = self.proto.poll(to_stun(now));
            let more = self.drain_events(now);
            match poll {
                TurnPollRet::WaitUntil(t) => self.next_timeout = from_stun(t).max(now),
                TurnPollRet::Closed => {
                    self.end();
                    return;
                }
                // TCP only.
                TurnPollRet::AllocateTcpSocket { .. } | TurnPollRet::TcpClose { .. } => {}
            }
            if !more {
                return;
            }
        }
    }

    /// Takes the crate's events into this client's; returns whether there were any.
    fn drain_events(&mut self, now: Instant) -> bool {
        let mut any = false;
        while let Some(event) = self.proto.poll_event() {
            any = true;
            match event {
                ProtoEvent::AllocationCreated(_, relayed) => {
                    if self.state != State::Allocating {
                        continue;
                    }
                    self.state = State::Allocated;
                    self.relayed = Some(relayed);
                    self.mapped = self.mapped_seen;
                    self.last_error = None;
                    self.authenticated_allocates = Vec::new();
                    self.events.push_back(TurnEvent::Allocated {
                        relayed,
                        mapped: self.mapped,
                    });
                    for peer in std::mem::take(&mut self.waiting) {
                        self.request_permit(now, peer);
                    }
                }
                ProtoEvent::AllocationCreateFailed(_) => self.end(),
                ProtoEvent::PermissionCreated(_, ip) => {
                    self.events.push_back(TurnEvent::PermissionCreated(ip))
                }
                ProtoEvent::PermissionCreateFailed(_, ip) => {
                    self.events.push_back(TurnEvent::PermissionFailed(ip))
                }
                ProtoEvent::ChannelCreated(_, peer) => {
                    self.events.push_back(TurnEvent::ChannelBound(peer))
                }
                ProtoEvent::ChannelCreateFailed(_, peer) => {
                    self.events.push_back(TurnEvent::ChannelFailed(peer))
                }
                ProtoEvent::TcpConnected(_) | ProtoEvent::TcpConnectFailed(_) => {}
            }
        }
        any
    }

    /// The allocation failed or is gone: say so once (unless [`Self::close`] asked for it).
    fn end(&mut self) {
        let error = match self.state {
            State::Allocating => Some(TurnError::AllocateFailed(self.last_error.take())),
            State::Allocated => Some(TurnError::Ended(self.last_error.take())),
            State::Closing | State::Closed => None,
        };
        if let Some(error) = error {
            self.events.push_back(TurnEvent::Failed(error));
        }
        self.state = State::Closed;
        self.relayed = None;
        self.waiting.clear();
        self.next_timeout = Instant::FAR_FUTURE;
    }
}
