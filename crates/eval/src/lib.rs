//! The paper's evaluation: a matrix of simulated runs ([`campaign`]: expansion, parallel
//! resumable shardable runs, the run store, time series) and its report ([`report`]: tables,
//! SVG figures, markdown and HTML).
//!
//! The other concerns live in their own crates, re-exported here for convenience:
//! `salsify-metrics` ([`metrics`]: SSIM, PSNR, the paper's delay, summaries) and `salsify-sim`
//! ([`sim`]: the simulator; [`experiment`]: experiment files).
//!
//! Layer 5 of the workspace (README, "Layout"): on `salsify-sim` and `salsify-metrics` (and
//! `salsify-audio` for a run's audio log); only the command (`salsify eval`, `salsify report`)
//! uses it.

pub mod campaign;
pub mod report;

pub use salsify_metrics as metrics;
pub use salsify_sim as sim;
pub use salsify_sim::experiment;

/// The commit this code was built from: a short hash, with `+changes` when tracked files
/// differed from it, or `unknown` outside a git checkout (see `build.rs`).
pub const CODE: &str = env!("SALSIFY_CODE");
