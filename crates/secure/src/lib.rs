//! Authenticated, encrypted sessions for every live scheme's datagrams, sans-IO.
//!
//! The runtime wraps each datagram an endpoint transmits (Salsify's fragments and ACKs, the
//! baselines' media and feedback alike) in a [`SecureChannel`] and unwraps each datagram it
//! receives before any scheme sees it. A datagram that is not sealed with the session's keys
//! is dropped after cheap checks (length, session id, replay window) and one AEAD open, and
//! never reaches a parser, a decoder or a session's state.
//!
//! - **Handshake**: `Noise_KK_25519_ChaChaPoly_BLAKE2s` through the `snow` crate. Each side
//!   has a static X25519 key pair ([`Keypair`], `salsify keygen`) and knows the other's public
//!   key (`--peer-key`), so the first message already proves the sender holds its private key
//!   and one round trip gives both sides fresh, forward-secret keys. The initiator (the video
//!   sender) puts a timestamp in the first message; the responder refuses one not newer
//!   than the last it accepted (a replayed handshake), and a limit on handshakes per second
//!   bounds the Diffie-Hellman work a flood of forged ones can cost.
//! - **Session ids**: each side picks a random 32-bit index per handshake; a data datagram
//!   names the recipient's, which selects the keys (unknown: dropped before any crypto).
//! - **Data**: ChaCha20-Poly1305 with the datagram's 64-bit counter as the explicit nonce
//!   (snow's stateless transport state), so loss and reordering cost nothing; a 1024-datagram
//!   sliding [`ReplayWindow`] refuses repeats and the too old. See [`wire`] for the bytes.
//! - **Key use**: the initiator starts a new handshake [`SecureConfig::rekey_after`] (120 s)
//!   after the last one, or after [`REKEY_AFTER_MESSAGES`]; both sides refuse keys older than
//!   [`SecureConfig::reject_after`] (180 s) or past [`REJECT_AFTER_MESSAGES`]. The responder
//!   switches to new keys only when the first datagram sealed with them arrives (key
//!   confirmation), so an unanswered or replayed handshake never interrupts a session.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only; the real-time runtime
//! (`salsify-runtime`) wraps every scheme's datagrams with it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod channel;
mod keys;
mod replay;
pub mod wire;

pub use channel::{
    ChannelState, HandshakeRole, Incoming, Rejected, SecureChannel, SecureConfig, SecureStats,
    REJECT_AFTER_MESSAGES, REKEY_AFTER_MESSAGES,
};
pub use keys::{KeyError, Keypair, PrivateKey, PublicKey};
pub use replay::{ReplayWindow, WINDOW};
pub use wire::{is_secure, OVERHEAD};
