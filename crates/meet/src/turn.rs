//! A TURN client (RFC 8656) and a STUN Binding client (RFC 8489) over UDP, sans-IO.
//!
//! Two peers behind symmetric NATs cannot reach each other directly: each NAT maps the socket
//! anew for every destination, so the address one peer learns for the other is useless. A TURN
//! server relays for them instead: the client *allocates* a relayed address on the server,
//! *permits* the peer, and from then on datagrams to and from the peer travel through the server,
//! wrapped in 4-byte ChannelData headers. The call's datagrams are sealed end to end before they
//! reach this module, so the relay sees only ciphertext.
//!
//! The protocol work (the STUN codec, long-term credentials with their 401 challenge and 438
//! stale-nonce retries, MESSAGE-INTEGRITY, request retransmits, the refreshes of the allocation,
//! its permissions and channels) is the maintained `turn-client-proto` and `stun-proto` crates'
//! (by the author of librice); this module adapts them to the project's shape: time is a
//! [`salsify_time::Instant`], the driver owns the one socket, and every input is untrusted and
//! never panics.
//!
//! A driver, on the call's one socket:
//!
//! - builds a [`TurnClient`] (it starts allocating at once) and, when it has the peer's address,
//!   calls [`TurnClient::permit`] (before the allocation is made is fine: it waits);
//! - gives every datagram whose source is the TURN server to [`TurnClient::handle_datagram`]
//!   ([`is_turn`] tells a relayed datagram from anything else the server's address might send);
//!   a `Some` is a datagram from the peer, unwrapped, to treat as if the peer had sent it;
//! - sends a datagram for the peer as [`TurnClient::wrap`]'s bytes, to the server;
//! - drains [`TurnClient::poll_transmit`] (to the server) and [`TurnClient::poll_event`], and
//!   calls [`TurnClient::handle_timeout`] at [`TurnClient::poll_timeout`].
//!
//! [`StunBinding`] asks a STUN server (any TURN server is one) which address the socket's NAT
//! shows it: the server-reflexive address a peer can try to reach directly.
//!
//! Lifetimes, as the client keeps them: the allocation is refreshed 60 s before it expires (the
//! server's lifetime, coturn's default 600 s; refreshes ask for 1800 s), a permission every 4
//! minutes (it lasts 5), a channel binding every 9 (it lasts 10).

mod binding;
mod client;
mod config;
mod error;
mod wire;

pub use binding::StunBinding;
pub use client::{TurnClient, TurnEvent};
pub use config::{Retransmits, TurnConfig};
pub use error::{BindingError, ServerError, TurnError};
pub use wire::is_turn;
