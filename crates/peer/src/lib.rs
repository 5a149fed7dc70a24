//! Unmodified systems as peers, measured from outside as the Salsify paper measured them:
//! a barcoded source played into the system, every displayed picture read back and scored.
//!
//! Chromium's WebRTC is the peer here: [`session::record_call`] starts headless Chromium on
//! a page served on loopback ([`server`]), where two `RTCPeerConnection`s make a VP8 call
//! whose ICE candidates are rewritten ([`candidates`]) so both directions cross the link
//! relay; the page posts per-frame records ([`records`]); [`analyse()`] scores them into the
//! same per-frame records and summary as a simulated run. With audio, the fake microphone
//! plays the synthetic voice with its timing marks and the page records what was captured
//! and what was played ([`audio_tap`]); [`audio_delay`] reads both recordings' marks and
//! gives each mark's mouth-to-ear delay, the same reading Salsify's own calls get (their
//! clocks from the receiver's log, [`played_log`]).
//!
//! Layer 5 of the workspace (README, "Layout"): on `salsify-runtime` (the link relay),
//! `salsify-sim`, `salsify-barcode`, `salsify-metrics` and `salsify-audio`; only the command (`salsify peer`) uses
//! it.

pub mod analyse;
pub mod audio_delay;
pub mod audio_tap;
pub mod candidates;
pub mod chromium;
pub mod played_log;
pub mod records;
pub mod server;
pub mod session;

pub use analyse::{analyse, write_outputs, Analysis, AnalysisInput, MatchCounts};
pub use session::{record_call, CallConfig, CallRecord, RelayConfigFor};
