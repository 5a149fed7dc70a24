//! Salsify's video-aware transport: wire format and sans-IO sender and receiver.
//!
//! Salsify (Fouladi et al., NSDI 2018) fuses the codec's rate control with the transport's
//! congestion control into one loop. The [`Sender`] asks for two encodes of each camera
//! picture from one explicit codec state and, after seeing their sizes, sends the larger that
//! fits the budget `MTU x (d / tau - N)` or neither. The [`Receiver`] reassembles fragments,
//! decodes a frame only from the exact state it names, and ACKs every fragment with its
//! inter-arrival estimate and the states it holds, so after loss the sender can encode from a
//! state the receiver is known to have.
//!
//! Both are plain state machines (sans-IO): they take datagrams, camera pictures, encoded
//! frames and the current time, and return datagrams, encode requests, events and their next
//! deadline, in the one vocabulary every scheme speaks (`salsify-endpoint`'s requests, events
//! and outputs). Drive them with "mutate, then drain `poll_output` until `Timeout`"; that loop,
//! written out on the size-only fake codec, is the unit test `tests::sans_io_loop` (the fake
//! codec is test-only, so it is no doc example).
//!
//! The simulator and the real-time runtime drive every scheme through the endpoint traits of
//! `salsify-endpoint`: [`SalsifySender`] / [`SalsifyReceiver`] are these same state machines on
//! the VP8 codec (Salsify-2c or -1c, and the ablations, named by
//! [`salsify_endpoint::SenderEndpoint::scheme`]), so what tests see with the fake codec is
//! exactly what every driver sees.
//!
//! What the sender sends is decided by the pure functions of `decision`, readable against
//! the paper's pseudo-code: `paper_budget` and `choose_paper` are Algorithm 2 as
//! published; `frame_budget` and `choose_frame` layer this project's additions on top
//! (no budget before the first estimate, forced sends when feedback is starved, outage probes).
//! [`SenderConfig::rules`] selects those rules: the rules for slow and fading links, the default
//! ([`SenderRules::SlowLink`]: a link-paced outage timeout, smallest-frame probes with
//! exponential backoff, forced sends within the estimate; `choose_slow_link` and its
//! neighbours) or the paper's ([`SenderRules::Paper`]: no outage handling, forced sends after
//! the skip limit). The sender builds them once into one rule per seam (`rules`: budget
//! source, outage and probes, forced sends, quality walk). What a picture's encodes may cost in
//! time is `encode_time`'s rule.
//!
//! Parameters come from experiment files: [`SenderConfig`] and [`ReceiverConfig`] read TOML
//! with durations in milliseconds and qualities as quantizer indices (see `config`).
//!
//! Private modules, one concern each: `wire` (byte layout), `codec` (the traits the endpoints
//! need from a codec), `vp8` (the real codec behind them), `fake` (a size-only codec, for the
//! unit tests), `config`, `estimator` (inter-arrival EWMA), `state_store`, `pacer`, `decision`
//! (the sender's choice and budget), `rules` (the sender's rules, one per seam), `sender`,
//! `receiver`, `endpoint` (both on the common endpoint traits). The crate root re-exports what
//! other crates use and the types those items' signatures name.
//!
//! Layer 2 of the workspace (README, "Layout"): on `salsify-time`, `salsify-codec`,
//! `salsify-endpoint` and `salsify-sprout-model` (the forecast budget), beside the other schemes
//! (`salsify-baselines`); `salsify-schemes` builds it by name.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod codec;
mod config;
mod decision;
mod delivery;
mod encode_time;
mod endpoint;
mod error;
mod estimator;
#[cfg(test)]
mod fake;
mod interval_quality;
mod link_forecast;
mod pacer;
mod receiver;
mod resolution;
mod rules;
mod sender;
mod serde_units;
mod state_store;
mod vp8;
mod wire;

// What other crates use, then what those items' signatures name (so every public field,
// argument and error can be named too).
pub use codec::{CodecState, DecodeError, FrameDecoder, SendableFrame};
pub use config::{
    Av1Options, PacingConfig, ReceiverConfig, ResolutionStepConfig, SenderConfig, SenderMode,
    SenderRules, SlowLinkConfig,
};
pub use delivery::BudgetSource;
pub use encode_time::EncodeTimeConfig;
pub use endpoint::{ReceiverSetupError, SalsifyReceiver, SalsifySender};
pub use error::{ConfigError, DatagramRejected, SenderError};
pub use receiver::{Receiver, SalsifyReceiverStats};
pub use sender::{SalsifySenderStats, Sender};
pub use vp8::VideoDecoder;
pub use wire::{Ack, AckForecast, DataFragment, Datagram, FragmentId, WireError};

#[cfg(test)]
mod tests;
