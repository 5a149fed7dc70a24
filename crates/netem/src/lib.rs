//! Sans-IO trace-driven link emulator for the Salsify testbed.
//!
//! A [`Link`] is one direction of a network path: a bottleneck that may send only at the
//! delivery opportunities of a Mahimahi [`Trace`] (replayed with Mahimahi's exact rules, see
//! [`link`]), a DropTail queue ([`QueueLimit`]), loss models ([`LossModel`]) and a fixed
//! propagation delay. It owns no sockets, threads, clocks or global randomness: the caller
//! passes the time in, and the link's only randomness is a ChaCha stream seeded from
//! [`LinkConfig::seed`]. So the same code shapes real UDP traffic in the real-time runtime and
//! runs in the virtual-time simulator, and the same seed gives the same run. It is generic
//! over the payload and knows nothing of video.
//!
//! Mutate, drain, wait, repeat:
//! ```
//! use salsify_netem::{generators, Bitrate, Link, LinkConfig};
//! use salsify_time::{Duration, Instant};
//!
//! let trace = generators::constant(Bitrate::mbps(12)).unwrap();
//! let mut link = Link::new(LinkConfig::with_trace(trace), Instant::ZERO).unwrap();
//! let _ = link.handle_packet(Instant::ZERO, "hello", 1200).unwrap();
//! let mut now = Instant::ZERO;
//! while let Some(wake) = link.poll_timeout() {
//!     now = wake;
//!     while let Some(d) = link.poll_delivery(now) {
//!         assert_eq!(d.payload, "hello");
//!         assert_eq!(d.delivered_at, Instant::from_millis(1 + 20));
//!     }
//! }
//! assert_eq!(link.stats().packets_delivered, 1);
//! # let _ = (now, Duration::ZERO);
//! ```
//!
//! Modules: [`trace`] (parse and write trace files), [`generators`] (synthetic traces),
//! [`presets`] (the paper's links), [`log`] (Mahimahi `mm-link` log writer), [`rate_log`]
//! (throughput logs, "time rate" per interval, as traces).
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only (it knows nothing of video);
//! the simulator (`salsify-sim`) and the real-time relay (`salsify-runtime`) both shape traffic
//! with it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
pub mod generators;
pub mod link;
mod link_model;
pub mod log;
mod loss;
pub mod presets;
mod queue;
pub mod rate_log;
mod schedule;
pub mod trace;

pub use config::{default_trace, ConfigError, LinkConfig, MAX_PROPAGATION_DELAY};
pub use generators::{Bitrate, GeneratorError};
pub use link::{
    Admission, Delivered, Link, LinkDrop, LinkEvent, LinkEventKind, LinkStats, PacketError,
    TimeoutReason,
};
pub use link_model::{link_of, LinkModel};
pub use log::{LogHeader, MahimahiLog};
pub use loss::{FailureForecast, LossError, LossModel, LossPlacement, Outage};
pub use queue::QueueLimit;
pub use rate_log::{RateLog, RateLogError, RateLogFormat, RateLogSpec};
pub use trace::{Trace, TraceError, TRACE_PACKET_BYTES};
