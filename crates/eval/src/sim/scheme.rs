//! Which system the simulator runs.

use salsify_baselines::{GccConfig, OracleConfig, VidaptiveConfig};

/// The scheme under test. Salsify takes its parameters from [`super::SimConfig::sender`] and
/// [`super::SimConfig::parallelism`] (so its ablations are `SenderConfig` settings); the
/// others carry their own.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum Scheme {
    /// Salsify (or one of its ablations).
    #[default]
    Salsify,
    /// WebRTC-style: GCC + libvpx CBR + pacer + NACK/PLI.
    Conventional(GccConfig),
    /// Vidaptive-style: Copa + padding + pause/reset + alpha, libvpx CBR.
    Vidaptive(VidaptiveConfig),
    /// The oracle: the finest quality that arrives within the delay target, knowing the
    /// link's future (`encode_time` is filled from the cost model).
    Oracle(OracleConfig),
}

impl Scheme {
    /// A short name for tables.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::Salsify => "salsify",
            Scheme::Conventional(_) => "conventional",
            Scheme::Vidaptive(_) => "vidaptive",
            Scheme::Oracle(_) => "oracle",
        }
    }
}
