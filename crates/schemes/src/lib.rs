//! Every scheme behind one configuration and one constructor, and the codec work their encode
//! requests name. The simulator (`salsify-sim`) and the real-time runtime
//! (`salsify-runtime`) build endpoints here and then know nothing of any scheme: they drive
//! `Box<dyn SenderEndpoint>` / `Box<dyn ReceiverEndpoint>` and carry out encode requests with
//! the [`Executor`].
//!
//! Scheme parameters come from experiment files: [`SchemeParams`] holds one optional table per
//! scheme family (`[salsify]`, `[salsify_receiver]`, `[conventional]`, `[vidaptive]`,
//! `[oracle]`), each the scheme's own serde config with documented defaults; a scheme name
//! then picks the family and its variant (`salsify-1c` is `[salsify]` encoded on one core).
//!
//! Layer 3 of the workspace (README, "Layout"): on every scheme crate (`salsify-transport`,
//! `salsify-baselines`) and the endpoint shape; the two drivers (`salsify-sim`, `salsify-runtime`)
//! sit on it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod executor;

pub use config::{SchemeConfig, SchemeError, SchemeParams, SourceInfo, SCHEMES};
pub use executor::{BackgroundExecutor, Executed, Executor, Work};
