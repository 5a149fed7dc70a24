//! The systems Salsify is compared with, on the same sans-IO shape as its own endpoints.
//!
//! - [`conventional::GccSender`]: WebRTC-style. Google Congestion Control ([`gcc`]) sets a
//!   target bit rate for libvpx's own CBR rate control; a [`pacer`] sends at 2.5x the
//!   target; NACK retransmission and keyframe requests repair loss.
//! - [`vidaptive::VidaptiveSender`]: Vidaptive-style. Copa ([`copa`]) sets a window and
//!   CC-Rate = cwnd / sRTT; the pacer sends at CC-Rate and pads with dummy packets; the
//!   encoder pauses and resets on pacer delay and gets alpha x CC-Rate, alpha chosen by the
//!   hindsight optimisation in [`alpha`].
//! - [`oracle::OracleSender`]: the bound. It knows the link's future delivery opportunities
//!   and sends, per frame, the finest quality that arrives within the delay target.
//!
//! All three share the [`receiver::Receiver`] (feedback, NACK, PLI, in-order jitter buffer)
//! and the [`wire`] format. Drive every endpoint as Salsify's: `handle_*` inputs, then drain
//! `poll_output` until it returns `Timeout`; encoding is work the sender asks for
//! ([`endpoint::SenderOutput::Encode`]), decoding work the receiver hands out
//! ([`endpoint::ReceiverEvent::Frame`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod alpha;
pub mod conventional;
pub mod copa;
mod core;
pub mod endpoint;
pub mod gcc;
pub mod history;
pub mod oracle;
pub mod pacer;
pub mod rate;
pub mod receiver;
pub mod scheme;
pub mod sender;
mod serde_units;
pub mod vidaptive;
pub mod wire;

pub use conventional::GccSender;
pub use endpoint::{
    DropReason, EncodeJob, EncodeRequest, EncodedFrame, ReceiverEvent, ReceiverOutput,
    ReceiverStats, SenderEvent, SenderOutput, SenderStats,
};
pub use gcc::GccConfig;
pub use oracle::{LinkForecast, OracleConfig, OracleSender};
pub use rate::Bitrate;
pub use receiver::{Receiver, ReceiverConfig};
pub use scheme::{BaselineReceiver, BaselineSender, SchemeSetupError, VIDAPTIVE_MAX_GAP_FRAMES};
pub use sender::Sender;
pub use vidaptive::{VidaptiveConfig, VidaptiveSender};
