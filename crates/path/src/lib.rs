//! The path between two peers of a call, sans-IO: where the peer is, how large a datagram
//! reaches it, and keeping the NATs between them open.
//!
//! - **Roaming** ([`peer`]): on an authenticated session a datagram that opens from a new
//!   address, and is the newest the session has accepted (a replay or a late copy is not),
//!   makes that address a candidate; it is challenged, and its answer moves the peer there,
//!   with no new session (QUIC's path validation; WireGuard moves without asking, which lets
//!   a stranger replaying a datagram the path lost draw traffic). Until it answers, a
//!   candidate gets only challenges, at most [`PathConfig::amplification`] times the bytes
//!   it sent.
//! - **Path MTU** ([`pmtu`]): packetization-layer discovery (RFC 8899): datagrams leave with
//!   DF set, calls start at [`PathConfig::base_datagram`] (fits a 1280-byte path), padded
//!   probes search upward, and a black hole (datagrams above the base lost while smaller
//!   ones arrive, as the peer's reports show) drops back to the base and searches again.
//! - **Keep-alives**: a direction quiet for [`PathConfig::keepalive_after`] sends one.
//!
//! Path messages ([`wire`]) are datagrams of their own (first byte 0xD7); in an encrypted
//! session they travel sealed like any other, so only the peer can send them. [`Path`] is the
//! state machine a driver feeds: every datagram received ([`Path::handle_received`]) and sent
//! ([`Path::on_sent`]), the time; it hands back path messages to send, the largest datagram
//! to use and events (a move, a size change) to report.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only; the real-time runtime
//! (`salsify-runtime`) drives it on each call's socket.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
pub mod peer;
pub mod pmtu;
mod state;
pub mod wire;

pub use config::PathConfig;
pub use peer::PeerChange;
pub use peer::{Origin, PeerPath};
pub use pmtu::Prober;
pub use state::{Contact, Path, PathEvent, PathStats, Transmit};
pub use wire::{Message, WireError, PATH_TAG};
