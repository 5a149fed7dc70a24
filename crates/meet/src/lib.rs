//! Two peers behind NATs meet, sans-IO.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-time` only; the real-time runtime
//! drives it on the call's one socket.

#![warn(missing_docs)]

pub mod turn;
