//! The one endpoint shape every scheme implements (Salsify and its ablations, the
//! conventional WebRTC-style scheme, Vidaptive-style, the oracle), after quinn-proto and str0m:
//!
//! ```text
//!            handle_picture / handle_encoded / handle_datagram / handle_timeout
//!            set_max_datagram (the path's datagram size, from path MTU discovery)
//!            handle_audio_sent (the call's audio, sent by the driver on the same path)
//!   driver ────────────────────────────────────────────────────────────────▶ SenderEndpoint
//!   (simulator     ◀── poll_output(now): Encode(job) | Transmit(bytes) | Event | Timeout(t)
//!    or runtime)
//!            handle_datagram / handle_timeout
//!          ────────────────────────────────────────────────────────────────▶ ReceiverEndpoint
//!                  ◀── poll_output(now): Transmit(bytes) | Event(Display, ...) | Timeout(t)
//! ```
//!
//! "Mutate, then drain `poll_output` until `Timeout`, repeat": no endpoint reads a clock,
//! owns a socket or a thread. Encoding is work a sender asks for ([`EncodeRequest`]) and takes
//! back through [`SenderEndpoint::handle_encoded`], so the driver chooses threads (live) or
//! charges modelled time (simulator). Decoding is done by the decoder a receiver is built with
//! (see [`ReceiverEndpoint`] for why it is not a request). Each scheme owns its policy and
//! reports what it did through [`SenderEvent`]s and typed [`SenderStats`] snapshots.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` and `salsify-codec`; every scheme
//! (`salsify-transport`, `salsify-baselines`) implements it and both drivers (`salsify-sim`,
//! `salsify-runtime`) drive it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod audio;
mod encode;
mod receiver;
mod sender;

pub use audio::AudioMeter;
pub use encode::{
    CbrJob, CbrSettings, EncodeFailed, EncodeJob, EncodeKind, EncodeOutcome, EncodeRequest,
};
pub use receiver::{
    DatagramError, Displayed, ReceiverEndpoint, ReceiverEvent, ReceiverOutput, ReceiverStats,
};
pub use salsify_codec::{CbrFrame, EncodedFrame, Image, Quality, State, StateHash};
pub use salsify_time::{Bitrate, Duration, Instant};
pub use sender::{
    fragment_payload, Choice, Diagnostic, DropReason, InputError, SenderEndpoint, SenderEvent,
    SenderOutput, SenderStats, SentFrame,
};

/// Which of the built-in wire protocols a datagram belongs to, read from its first byte, so a
/// receiver can learn the scheme from the first datagram it gets (or refuse a mismatch). The
/// built-in families recognise their datagrams with it; a plugged-in family with a wire of its
/// own recognises its datagrams itself (`salsify_schemes::Family::scheme_of_datagram`) and
/// needs no entry here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireFamily {
    /// Salsify's fragments and ACKs (`salsify-transport`).
    Salsify,
    /// The baselines' RTP-like media, padding and feedback (`salsify-baselines`).
    Baseline,
    /// Sprout's data and forecast feedback (`salsify-baselines`' `sprout` module).
    Sprout,
}

/// First byte of every Salsify datagram (its wire version).
pub const SALSIFY_WIRE_TAG: u8 = 1;
/// First byte of every baseline datagram.
pub const BASELINE_WIRE_TAG: u8 = 0xB1;
/// First byte of every Sprout datagram.
pub const SPROUT_WIRE_TAG: u8 = 0x53;

impl WireFamily {
    /// The family of `datagram`, if its first byte names one.
    pub fn of(datagram: &[u8]) -> Option<WireFamily> {
        match *datagram.first()? {
            SALSIFY_WIRE_TAG => Some(WireFamily::Salsify),
            BASELINE_WIRE_TAG => Some(WireFamily::Baseline),
            SPROUT_WIRE_TAG => Some(WireFamily::Sprout),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_families_are_told_apart_by_the_first_byte() {
        assert_eq!(WireFamily::of(&[1, 1, 0]), Some(WireFamily::Salsify));
        assert_eq!(WireFamily::of(&[0xB1, 1]), Some(WireFamily::Baseline));
        assert_eq!(WireFamily::of(&[0x53]), Some(WireFamily::Sprout));
        assert_eq!(WireFamily::of(&[2]), None);
        assert_eq!(WireFamily::of(&[]), None);
    }
}
