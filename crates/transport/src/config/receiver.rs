//! The Salsify receiver's parameters (`[salsify_receiver]`).

use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::error::{invalid, ConfigError};
use crate::serde_units::millis;
use crate::wire::MAX_HELD_STATES;

/// The Salsify receiver's parameters (`[salsify_receiver]` in experiment files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Accept only this session; `None` locks onto the first valid fragment's id.
    pub connection_id: Option<u16>,
    /// Weight of a new sample in the inter-arrival EWMA. Default 0.1 (the paper).
    pub ewma_alpha: f64,
    /// Estimate tau per full-size datagram (an EWMA of sizes beside the EWMA of gaps; see
    /// `crate::estimator`), not per datagram whatever its size. Default true; the
    /// `salsify-paper` scheme uses the paper's plain per-packet mean.
    pub size_aware_estimate: bool,
    /// States older than the source of the last frame decoded that are kept anyway (the
    /// newest of them). The sender learns what the receiver holds only through ACKs: when the
    /// ACK path stalls while video still arrives, the sender's newest acknowledged state falls
    /// behind what the receiver decoded, and the probes it encodes from that state must still
    /// decode. How many that takes is the frames the sender sends past its newest
    /// acknowledged state before the budget stops it, about the frame rate times the delay
    /// target plus a round trip: 4 at 30 fps on a 40 ms path, 9 at 60 fps (where 8 lost every
    /// probe of a 2-5 s stall: 60 fps ACK-stall link, 640x360, 298 / 1995 ms mean / p95; 71 /
    /// 127 with room for 30). Default 32: 60 fps with 400 ms round trips, 120 fps with 150
    /// ms. 0 is the first round's rule (drop everything older at once).
    pub states_behind: usize,
    /// How long a complete frame whose source state is missing waits for an older,
    /// reordered frame to supply it before the receiver gives up on it. Default 10 ms.
    #[serde(rename = "reorder_window_ms", with = "millis")]
    pub reorder_window: Duration,
    /// Most frames being reassembled at once (oldest dropped first). Default 16.
    pub max_pending_frames: usize,
    /// Most decoder states kept (oldest dropped first; a state used as a reference is kept
    /// anyway, see `crate::state_store::StateStore::insert_keeping`). One state is one reference
    /// picture, 1.4 MB at 720p. Default 48: `states_behind` and the newest 16.
    pub max_states: usize,
    /// How many of the newest held states each ACK lists. Default 8.
    pub acked_states: usize,
    /// Forecast the link and send the forecast on ACKs (see `crate::link_forecast`), for a
    /// sender that budgets with it (`[salsify] budget = "forecast"`). Default false (ACKs as
    /// they were); the schemes turn it on when their sender budgets with the forecast.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub link_forecast: bool,
    /// Sprout's model and forecast parameters for `link_forecast` (`[salsify_receiver.forecast]`):
    /// by default Sprout's 20 ms ticks and 8 ticks ahead at 75% confidence
    /// ([`ReceiverConfig::default_forecast`]). A table replaces it whole: a field it leaves
    /// out takes Sprout's own default (95% confidence).
    #[serde(skip_serializing_if = "is_default_forecast")]
    pub forecast: salsify_sprout_model::ForecastConfig,
}

fn is_default_forecast(f: &salsify_sprout_model::ForecastConfig) -> bool {
    *f == ReceiverConfig::default_forecast()
}

impl ReceiverConfig {
    /// The forecast Salsify's budget reads: Sprout's model and ticks, at 75% confidence
    /// rather than Sprout's 95%. Sprout keeps a window of packets in flight and needs the
    /// cautious quantile; a budget that counts whole frames against what is in flight loses
    /// quality for no delay at 95% (shared LTE traces, 640x360 at 60 fps, d 100-150: at equal
    /// SSIM, 75% has 7-13% less p95; 50% about the same as 75%).
    pub fn default_forecast() -> salsify_sprout_model::ForecastConfig {
        salsify_sprout_model::ForecastConfig {
            confidence: 0.75,
            ..salsify_sprout_model::ForecastConfig::default()
        }
    }
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            connection_id: None,
            ewma_alpha: 0.1,
            size_aware_estimate: true,
            states_behind: 32,
            reorder_window: Duration::from_millis(10),
            max_pending_frames: 16,
            max_states: 48,
            acked_states: 8,
            link_forecast: false,
            forecast: ReceiverConfig::default_forecast(),
        }
    }
}

impl ReceiverConfig {
    /// `self` with the paper's (and the first round's) estimate and state store: a plain
    /// per-packet tau, and every state older than the last source dropped at once. The
    /// receiver of the `salsify-paper` scheme.
    pub fn first_round(self) -> Self {
        ReceiverConfig {
            size_aware_estimate: false,
            states_behind: 0,
            link_forecast: false,
            ..self
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.ewma_alpha > 0.0 && self.ewma_alpha <= 1.0) {
            return invalid("ewma_alpha", "must be in (0, 1]");
        }
        if self.max_pending_frames == 0 {
            return invalid("max_pending_frames", "must be positive");
        }
        if self.max_states == 0 {
            return invalid("max_states", "must be positive");
        }
        if self.acked_states == 0 || self.acked_states > MAX_HELD_STATES {
            return invalid("acked_states", format!("must be 1..={MAX_HELD_STATES}"));
        }
        if let Err(e) = self.forecast.validate() {
            return invalid("forecast", e.to_string());
        }
        Ok(())
    }
}
