//! The systems Salsify is compared with, each implementing the one endpoint shape of
//! `salsify-endpoint` ([`salsify_endpoint::SenderEndpoint`],
//! [`salsify_endpoint::ReceiverEndpoint`]) and owning its policy, so the simulator and the
//! real-time runtime drive them without knowing which scheme runs.
//!
//! - [`webrtc::WebrtcSender`] (`"conventional"`): WebRTC. libwebrtc's own congestion
//!   controller (`GoogCcNetworkController`, through the `goog_cc` crate's port) fed as
//!   libwebrtc feeds it, with libwebrtc's video sender around it (pacer at 1.1x with probes,
//!   padding, congestion window and queue drain; encoder maximum by resolution; initial
//!   frame drop and QP-based resolution scaling); libvpx's own CBR rate control; NACK and
//!   keyframe requests repair loss.
//! - [`vidaptive::VidaptiveSender`] (`"vidaptive"`): Vidaptive-style. Copa ([`copa`]) sets a
//!   window and CC-Rate = cwnd / sRTT; the pacer sends at CC-Rate and pads with dummy
//!   packets; the encoder pauses and resets on pacer delay and gets alpha x CC-Rate, alpha
//!   chosen by the hindsight optimisation in [`alpha`]; a resolution ladder shrinks the
//!   picture when too few frames get through.
//! - [`oracle::OracleSender`] (`"oracle"`): the bound. It knows the link's future delivery
//!   opportunities and sends, per frame, the finest quality that arrives within the delay
//!   target (a functional-codec search from its own codec state).
//!
//! The CBR senders ask for [`salsify_endpoint::EncodeJob::Cbr`] jobs that name everything the
//! driver's encoder needs: the target (through the shared 10 % deadband,
//! [`deadband_passes`]), the picture size (the ladder's rung) and the encoder settings
//! (from each scheme's config). All three share the [`receiver::BaselineReceiver`] (feedback,
//! NACK, PLI, in-order jitter buffer, VP8 decoder) and the [`wire`] format, whose media
//! datagrams name the sending [`WireId`] ([`wire::scheme_of`]). [`BaselineSender`] builds
//! any sender by scheme. Configurations read from experiment files (serde, durations in ms,
//! rates in kb/s) and check themselves (`validate`, errors naming the field).
//!
//! Layer 2 of the workspace (README, "Layout"): on `salsify-time`, `salsify-codec`,
//! `salsify-endpoint` and `salsify-sprout-model` (the Sprout scheme), beside Salsify's own transport (`salsify-transport`); `salsify-schemes`
//! builds them by name.

// One audited exception: `webrtc::controller` asserts that the `goog_cc` controller may move
// between threads (its trait object lacks a `Send` bound; everything in it is owned data).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod alpha;
pub mod copa;
mod core;
pub mod error;
#[cfg(test)]
mod golden;
pub mod history;
mod jitter;
pub mod ladder;
pub mod oracle;
pub mod pacer;
pub mod rate;
pub mod rate_sender;
pub mod receiver;
mod receiver_config;
pub mod sender;
pub mod sprout;
pub mod stats;
pub mod vidaptive;
pub mod webrtc;
pub mod wire;
pub mod wire_id;

pub use core::deadband_passes;
pub use error::{ConfigError, PacketError, ReceiverBuildError};
pub use oracle::{LinkForecast, OracleConfig, OracleRule, OracleSender};
pub use rate::Bitrate;
pub use rate_sender::{RateController, RateSender};
pub use receiver::{BaselineReceiver, ReceiverConfig};
pub use sender::BaselineSender;
pub use sprout::{SproutConfig, SproutMode, SproutReceiver, SproutSender};
pub use stats::{ReceiverCounters, SenderCounters};
pub use vidaptive::{LadderConfig, VidaptiveConfig, VidaptiveSender, VIDAPTIVE_MAX_GAP_FRAMES};
pub use webrtc::{ConventionalConfig, WebrtcSender};
pub use wire::scheme_of;
pub use wire_id::{twcc_feedback_interval, WireId, RECEIVE_ONLY_SEND_TARGET};
