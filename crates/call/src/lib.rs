//! A two-way call's datagrams, sans-IO: what a side receives told apart (its peer's media for
//! its receiver, feedback for its sender, data-channel messages, the call's control
//! messages), feedback riding on media in one datagram, and the data channel.
//!
//! In a call each side runs a sender and a receiver of the same scheme over one secure
//! session. The media a side's sender emits (video fragments, audio) go out as they are, so
//! a one-way receiver reads them unchanged; what its receiver emits (ACKs, feedback) is
//! marked with one byte ([`wire::FEEDBACK_TAG`]), because a scheme's feedback and media need
//! not be told apart by their own bytes. A feedback datagram due while a media datagram is
//! being sent rides on it ([`wire::bundle`]): one datagram, one seal, one delivery slot.
//!
//! - [`wire`]: the tags, [`wire::split`] (a received datagram into its parts) and bundles;
//! - [`data`]: the data channel ([`data::DataChannel`]): *latest* messages (sent at once,
//!   never retransmitted, superseded by a newer one of their stream) and *ordered* ones
//!   (every message, in order, retransmitted until acknowledged), up to
//!   [`data::MAX_MESSAGE`] bytes each;
//! - [`control`]: a side hanging up ([`control::Control::Goodbye`]) and a busy side
//!   refusing a second caller ([`control::Control::Busy`]), in one-way calls too.
//!
//! Layer 1 of the workspace, on `salsify-time` only, so the runtime and the simulator can
//! both use it.

#![warn(missing_docs)]

pub mod control;
pub mod data;
pub mod wire;
