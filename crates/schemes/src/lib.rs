//! Every scheme as a plug-in, and the codec work their encode requests name.
//!
//! A scheme family implements [`Family`] (its names, parameter tables, endpoints, wire, figure
//! style, sweep knobs); the built-in ones are listed in `families/mod.rs`, and a crate of its
//! own adds one to a [`Registry`] (which refuses two families claiming one wire id). The drivers (the
//! simulator `salsify-sim`, the real-time runtime `salsify-runtime`, the evaluation
//! `salsify-eval` and the command) ask the [`registry`] and never match on a scheme's name:
//! they drive `Box<dyn SenderEndpoint>` / `Box<dyn ReceiverEndpoint>` and carry out encode
//! requests with the [`Executor`].
//!
//! Scheme parameters come from experiment files: [`SchemeParams`] holds the tables given
//! (`[salsify]`, `[conventional]`, ...), each its family's serde type with documented
//! defaults; a scheme name then picks the family and its variant.
//!
//! Layer 3 of the workspace (README, "Layout"): on every scheme crate (`salsify-transport`,
//! `salsify-baselines`) and the endpoint shape; the drivers sit on it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod executor;
pub mod families;
mod family;
mod params;
pub mod registry;
pub mod setting;
mod sweep;
mod table_sweep;

pub use error::{SchemeError, SourceInfo};
pub use executor::{BackgroundExecutor, Executed, Executor, Work};
pub use family::{
    Family, Marker, PeerCodec, Runs, Scheme, SchemeConfig, SchemeInfo, SchemeRole, Simulated,
    TableInfo, TableType, VP9_SVC_MODE,
};
pub use params::SchemeParams;
pub use registry::{Registry, RegistryError};
pub use salsify_baselines::LinkForecast;
pub use salsify_baselines::WireId;
pub use setting::{run_name, setting, setting_or_default, DEFAULT_SETTING};
pub use sweep::{BudgetSource, Sweep, TableField};
pub use table_sweep::variants as sweep_variants;
