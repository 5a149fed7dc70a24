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
//! and outputs). Drive them with "mutate, then drain `poll_output` until `Timeout`":
//!
//! ```
//! use salsify_codec::StateHash;
//! use salsify_endpoint::{EncodeJob, ReceiverEvent, ReceiverOutput, SenderOutput};
//! use salsify_time::Instant;
//! use salsify_transport::fake::{FakeDecoder, FakeEncoder, FakeFrame, FakeState};
//! use salsify_transport::*;
//!
//! let mut sender: Sender<FakeFrame> =
//!     Sender::new(SenderConfig::default(), FakeState(StateHash::INITIAL)).unwrap();
//! let mut receiver = Receiver::new(ReceiverConfig::default(), FakeDecoder).unwrap();
//! let encoder = FakeEncoder::default();
//! let mut now = Instant::ZERO;
//! sender.handle_frame(now, 0, now); // picture 0, captured now
//! let mut shown = 0;
//! while shown == 0 {
//!     let next = loop {
//!         match sender.poll_output(now) {
//!             SenderOutput::Encode(req) => {
//!                 let EncodeJob::Qualities { source, qualities, .. } = &req.job else {
//!                     unreachable!()
//!                 };
//!                 let frames = qualities.iter().map(|&q| encoder.encode(source, req.picture, q));
//!                 sender.handle_encoded(now, req.id, frames.collect()).unwrap();
//!             }
//!             // A zero-delay, lossless "network":
//!             SenderOutput::Transmit(datagram) => receiver.handle_datagram(now, &datagram).unwrap(),
//!             SenderOutput::Event(_) => {}
//!             SenderOutput::Timeout(t) => break t,
//!         }
//!     };
//!     loop {
//!         match receiver.poll_output() {
//!             ReceiverOutput::Event(ReceiverEvent::Display(_)) => shown += 1,
//!             ReceiverOutput::Transmit(ack) => sender.handle_datagram(now, &ack).unwrap(),
//!             ReceiverOutput::Event(_) => {}
//!             ReceiverOutput::Timeout(_) => break,
//!         }
//!     }
//!     now = next; // a real runtime sleeps until then, or until a datagram arrives
//! }
//! assert!(now > Instant::ZERO, "the keyframe's fragments were paced out");
//! ```
//!
//! The simulator and the real-time runtime drive every scheme through the endpoint traits of
//! `salsify-endpoint`: [`SalsifySender`] / [`SalsifyReceiver`] are these same state machines on
//! the VP8 codec (Salsify-2c or -1c, and the ablations, named by
//! [`salsify_endpoint::SenderEndpoint::scheme`]), so what tests see with the fake codec is
//! exactly what every driver sees.
//!
//! What the sender sends is decided by the pure functions of [`decision`], readable against
//! the paper's pseudo-code: [`paper_budget`] and [`choose_paper`] are Algorithm 2 as
//! published; [`frame_budget`] and [`choose_frame`] layer this project's additions on top
//! (no budget before the first estimate, forced sends when feedback is starved, outage probes).
//! [`SenderConfig::rules`] selects those rules: the rules for slow and fading links, the default
//! ([`SenderRules::SlowLink`]: a link-paced outage timeout, smallest-frame probes with
//! exponential backoff, forced sends within the estimate; [`choose_slow_link`] and its
//! neighbours) or the paper's ([`SenderRules::Paper`]: no outage handling, forced sends after
//! the skip limit). The sender builds them once into one rule per seam ([`rules`]: budget
//! source, outage and probes, forced sends, quality walk). What a picture's encodes may cost in
//! time is [`encode_time`]'s rule.
//!
//! Parameters come from experiment files: [`SenderConfig`] and [`ReceiverConfig`] read TOML
//! with durations in milliseconds and qualities as quantizer indices (see [`config`]).
//!
//! Modules, one concern each: [`wire`] (byte layout), [`codec`] (the traits the endpoints need
//! from a codec), [`vp8`] (the real codec behind them), [`fake`] (a size-only codec for tests
//! and libvpx-free simulation), [`config`], [`estimator`] (inter-arrival EWMA),
//! [`state_store`], [`pacer`], [`decision`] (the sender's choice and budget), [`rules`] (the
//! sender's rules, one per seam), [`sender`],
//! [`receiver`], [`endpoint`] (both on the common endpoint traits).
//!
//! Layer 2 of the workspace (README, "Layout"): on `salsify-time`, `salsify-codec`,
//! `salsify-endpoint` and `salsify-sprout-model` (the forecast budget), beside the other schemes
//! (`salsify-baselines`); `salsify-schemes` builds it by name.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
pub mod config;
pub mod decision;
pub mod delivery;
pub mod encode_time;
pub mod endpoint;
pub mod error;
pub mod estimator;
pub mod fake;
mod interval_quality;
pub mod link_forecast;
pub mod pacer;
pub mod receiver;
pub mod resolution;
pub mod rules;
pub mod sender;
mod serde_units;
pub mod state_store;
pub mod vp8;
pub mod wire;

pub use codec::{CodecState, DecodeError, FrameDecoder, SendableFrame};
pub use config::{
    ConfigError, PacingConfig, ReceiverConfig, ResolutionStepConfig, SenderConfig, SenderMode,
    SenderRules, SlowLinkConfig,
};
pub use decision::{
    choose_frame, choose_paper, choose_slow_link, feedback_starved, frame_budget, link_pace,
    override_limit, paced_ack_timeout, paced_outage_suspected, paper_budget, paper_forced,
    probe_due, probe_interval, probe_interval_cap, Overrides, PaperDecision, SlowLinkDecision,
};
pub use delivery::BudgetSource;
pub use encode_time::{EncodeTimeConfig, EncodeTimeControl};
pub use endpoint::{ReceiverSetupError, SalsifyReceiver, SalsifySender};
pub use error::{DatagramRejected, SenderError};
pub use receiver::{Receiver, SalsifyReceiverStats};
pub use sender::{SalsifySenderStats, Sender};
pub use vp8::Vp8Decoder;
