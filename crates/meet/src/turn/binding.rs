//! [`StunBinding`]: one Binding request (RFC 8489) and its retransmits, to learn the address a
//! NAT shows the socket as; `stun-proto`'s agent keeps the retransmit schedule.

use std::net::SocketAddr;

use salsify_time::Instant;
use turn_client_proto::stun::agent::{StunAgent, StunAgentPollRet};
use turn_client_proto::stun::types::message::{
    Message, MessageWrite, MessageWriteExt, MessageWriteVec, TransactionId, BINDING,
};
use turn_client_proto::stun::types::TransportType;

use super::config::Retransmits;
use super::error::{BindingError, ServerError};
use super::wire::{self, from_stun, to_stun, LOCAL};

/// One STUN Binding request to a server, sent again until answered or the retransmits run out;
/// its answer is the socket's server-reflexive address (XOR-MAPPED-ADDRESS). Driven like the
/// other state machines: [`Self::poll_transmit`] to the server, [`Self::handle_datagram`] with
/// what the server sends, [`Self::handle_timeout`] at [`Self::poll_timeout`], then
/// [`Self::outcome`].
///
/// The answer is unauthenticated (Binding needs no credentials): someone on the path could
/// forge it, as they could rewrite the packets. Never panics on any input.
#[derive(Debug)]
pub struct StunBinding {
    server: SocketAddr,
    agent: StunAgent,
    transaction: TransactionId,
    /// The first send, made by the agent when the request was queued.
    first: Option<Vec<u8>>,
    outcome: Option<Result<SocketAddr, BindingError>>,
    next_timeout: Instant,
}

impl StunBinding {
    /// A Binding request to `server`, ready to send.
    pub fn new(server: SocketAddr, retransmits: Retransmits, now: Instant) -> Self {
        let r = retransmits.clamped();
        let mut agent = StunAgent::builder(TransportType::Udp, LOCAL)
            .remote_addr(server)
            .request_retransmits(r.initial, r.max, r.sends, r.last_wait)
            .build();
        let mut request = Message::builder_request(BINDING, MessageWriteVec::new());
        // FINGERPRINT tells STUN from other protocols on the server's port; it cannot fail on a
        // message this small.
        let _ = request.add_fingerprint();
        let transaction = request.transaction_id();
        let request = request.finish();
        let (first, outcome) = match agent.send_request(&request, server, to_stun(now)) {
            Ok(transmit) => (Some(transmit.data.to_vec()), None),
            // Only a duplicate transaction (impossible for a fresh agent) is refused.
            Err(_) => (None, Some(Err(BindingError::NoAnswer))),
        };
        let mut binding = StunBinding {
            server,
            agent,
            transaction,
            first,
            outcome,
            next_timeout: now,
        };
        binding.update(now);
        binding
    }

    /// The server asked.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// A datagram from the server. Returns whether it was this binding's answer (then
    /// [`Self::outcome`] has it); anything else is ignored.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> bool {
        if self.outcome.is_some() {
            return false;
        }
        let Some(response) = wire::peek_response(bytes) else {
            return false;
        };
        if response.transaction != self.transaction || response.method != BINDING {
            return false;
        }
        // Ends the agent's transaction, so no more retransmits.
        if let Ok(msg) = Message::from_bytes(bytes) {
            self.agent
                .handle_stun_message_with_time(&msg, self.server, to_stun(now));
        }
        self.outcome = Some(match (response.success, response.mapped, response.error) {
            (true, Some(mapped), _) => Ok(mapped),
            (true, None, _) => Err(BindingError::NoAddress),
            (false, _, Some(error)) => Err(BindingError::Refused(error)),
            (false, _, None) => Err(BindingError::Refused(ServerError::new(0, "no ERROR-CODE"))),
        });
        self.update(now);
        true
    }

    /// The next datagram to send to the server: the request, then its retransmits when due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.outcome.is_some() {
            return None;
        }
        let bytes = match self.first.take() {
            Some(first) => Some(first),
            None => self
                .agent
                .poll_transmit(to_stun(now))
                .map(|t| t.data.to_vec()),
        };
        self.update(now);
        bytes
    }

    /// Time passed: a retransmit comes due, or the request is given up.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.update(now);
    }

    /// When [`Self::handle_timeout`] is next due ([`Instant::FAR_FUTURE`] once done).
    pub fn poll_timeout(&self) -> Instant {
        self.next_timeout
    }

    /// The answer, once there is one: the mapped address, or why there is none.
    pub fn outcome(&self) -> Option<Result<SocketAddr, BindingError>> {
        self.outcome.clone()
    }

    /// The mapped address, once the server gave it.
    pub fn mapped(&self) -> Option<SocketAddr> {
        self.outcome.as_ref().and_then(|o| o.as_ref().ok().copied())
    }

    fn update(&mut self, now: Instant) {
        if self.outcome.is_none() {
            if self.first.is_some() {
                self.next_timeout = now;
                return;
            }
            match self.agent.poll(to_stun(now)) {
                StunAgentPollRet::WaitUntil(t) => {
                    self.next_timeout = from_stun(t).max(now);
                    return;
                }
                StunAgentPollRet::TransactionTimedOut(_)
                | StunAgentPollRet::TransactionCancelled(_) => {
                    self.outcome = Some(Err(BindingError::NoAnswer));
                }
            }
        }
        self.next_timeout = Instant::FAR_FUTURE;
    }
}
