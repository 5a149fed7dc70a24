//! Unmodified systems as peers, measured from outside as the Salsify paper measured them:
//! a barcoded source played into the system, every displayed picture read back and scored.
//!
//! Chromium's WebRTC is the peer here: [`session::record_call`] starts headless Chromium on
//! a page served on loopback ([`server`]), where two `RTCPeerConnection`s make a VP8 call
//! whose ICE candidates are rewritten ([`candidates`]) so both directions cross the link
//! relay; the page posts per-frame records ([`records`]); [`analyse()`] scores them into the
//! same per-frame records and summary as a simulated run.
//!
//! Layer 5 of the workspace (README, "Layout"): on `salsify-runtime` (the link relay),
//! `salsify-sim`, `salsify-barcode` and `salsify-metrics`; only the command (`salsify peer`) uses
//! it.

pub mod analyse;
pub mod audio_delay;
pub mod candidates;
pub mod chromium;
pub mod records;
pub mod server;
pub mod session;

pub use analyse::{analyse, write_outputs, Analysis, AnalysisInput, MatchCounts};
pub use session::{record_call, CallConfig, CallRecord, RelayConfigFor};
