//! Two peers behind NATs meet, sans-IO: a rendezvous introduces them, connectivity checks
//! find a pair of addresses that works (hole punching), and a TURN relay carries the call
//! when none does.
//!
//! - [`seal`](MeetKey): both peers already hold each other's public keys, so both compute
//!   the same static-static Diffie-Hellman; its key seals everything they exchange before
//!   the call's own handshake, and a hash of the two public keys is the id they meet under.
//! - [`rendezvous`]: the server (`salsify rendezvous`) and its wire: it stores sealed
//!   introductions under ids and hands each registrant the others', never answering with
//!   more bytes than it got.
//! - [`meeting`]: one side's state machine: register, learn the peer's candidates, check
//!   pairs, report the pair that works.
//! - [`turn`]: a TURN client for the relay.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only; the real-time runtime
//! drives it on the call's one socket.

#![warn(missing_docs)]

mod addr;
pub mod intro;
pub mod meeting;
pub mod rendezvous;
mod seal;
pub mod turn;

pub use intro::{Candidate, Introduction, Kind};
pub use meeting::{MeetConfig, MeetEvent, Meeting, Pair};
pub use rendezvous::Rendezvous;
pub use seal::MeetKey;
