//! Configuration of one direction of an emulated link.

use std::sync::OnceLock;

use salsify_time::Duration;

use crate::generators::{self, CellularParams};
use crate::loss::{LossError, LossModel, LossPlacement};
use crate::queue::QueueLimit;
use crate::trace::{Trace, TRACE_PACKET_BYTES};

/// Longest propagation delay accepted: far beyond any terrestrial or satellite path, so a
/// larger value is a unit mistake.
pub const MAX_PROPAGATION_DELAY: Duration = Duration::from_secs(60);

/// Seed of the embedded default trace, fixed so the default link is the same everywhere.
const DEFAULT_TRACE_SEED: u64 = 0x5a15_1f7e;

/// Everything that defines one direction of a link. Build from [`Default`] (or a
/// [`crate::presets`] function) and change fields; [`crate::Link::new`] validates.
///
/// Every value an experiment sweeps is a field here, not a constant.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LinkConfig {
    /// When the bottleneck may send. Default: an embedded synthetic cellular-like trace
    /// ([`generators::cellular`] with default parameters, 120 s, mean about 5 Mb/s), so no
    /// data file is needed.
    pub trace: Trace,
    /// Bytes each opportunity may carry. Default 1500, the MTU the trace files assume.
    /// Mahimahi itself uses 1504 because its packets include the 4-byte TUN header; callers
    /// emulating it byte for byte can set 1504 and add 4 to each packet size.
    pub opportunity_bytes: u32,
    /// DropTail queue limit. Default 256 packets, as in the paper's main experiments.
    pub queue: QueueLimit,
    /// One-way propagation delay added after the bottleneck. Default 20 ms (the paper's
    /// 40 ms round trip split evenly between the two directions). After, not before: the
    /// packet meets the trace at the time it is sent, as the uplink of
    /// `mm-delay D mm-link UP DOWN` does with the application inside (a time-varying trace
    /// makes the order matter; a fixed delay adds the same either way to the one-way delay).
    pub propagation_delay: Duration,
    /// Loss models, all applied. Default none.
    pub loss: Vec<LossModel>,
    /// Where loss is applied. Default [`LossPlacement::Entry`].
    pub loss_placement: LossPlacement,
    /// Seed of every random choice the link makes. Default 0.
    pub seed: u64,
    /// Whether the link records [`crate::LinkEvent`]s (needed for a Mahimahi log). Default
    /// false, because a busy link makes millions of them.
    pub record_events: bool,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            trace: default_trace(),
            opportunity_bytes: TRACE_PACKET_BYTES,
            queue: QueueLimit::default(),
            propagation_delay: Duration::from_millis(20),
            loss: Vec::new(),
            loss_placement: LossPlacement::default(),
            seed: 0,
            record_events: false,
        }
    }
}

impl LinkConfig {
    /// A default config replaying `trace`.
    pub fn with_trace(trace: Trace) -> LinkConfig {
        LinkConfig {
            trace,
            ..LinkConfig::default()
        }
    }

    /// Checks every field; a link is only built from a valid config.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.opportunity_bytes == 0 {
            return Err(ConfigError::ZeroOpportunityBytes);
        }
        if self.queue.packets == Some(0) || self.queue.bytes == Some(0) {
            return Err(ConfigError::ZeroQueueLimit);
        }
        if self.propagation_delay > MAX_PROPAGATION_DELAY {
            return Err(ConfigError::PropagationDelay(self.propagation_delay));
        }
        for model in &self.loss {
            model.validate()?;
        }
        Ok(())
    }
}

/// An invalid [`LinkConfig`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Opportunities that carry nothing.
    #[error("opportunity_bytes must be positive")]
    ZeroOpportunityBytes,
    /// A queue limit of zero (use [`QueueLimit::UNLIMITED`] for no limit).
    #[error("a queue limit of 0 admits nothing; use QueueLimit::UNLIMITED for no limit")]
    ZeroQueueLimit,
    /// A propagation delay above [`MAX_PROPAGATION_DELAY`].
    #[error("propagation delay {0:?} is above the maximum of 60 s")]
    PropagationDelay(Duration),
    /// An invalid loss model.
    #[error(transparent)]
    Loss(#[from] LossError),
}

/// The embedded default trace, generated once per process and shared.
pub fn default_trace() -> Trace {
    static TRACE: OnceLock<Trace> = OnceLock::new();
    TRACE
        .get_or_init(|| {
            // Panic = bug: fixed, valid parameters always generate a trace (tested).
            generators::cellular(&CellularParams::default(), DEFAULT_TRACE_SEED)
                .expect("default cellular parameters are valid")
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_documented_values_hold() {
        let c = LinkConfig::default();
        c.validate().unwrap();
        assert_eq!(c.opportunity_bytes, 1500);
        assert_eq!(c.queue, QueueLimit::packets(256));
        assert_eq!(c.propagation_delay, Duration::from_millis(20));
        assert!(c.loss.is_empty());
        assert_eq!(c.trace.period(), Duration::from_secs(120));
        let mbps = c.trace.mean_rate_bps(1500) / 1e6;
        assert!((4.0..6.5).contains(&mbps), "default trace {mbps} Mb/s");
    }

    #[test]
    fn validate_rejects_each_bad_field() {
        let bad = |f: fn(&mut LinkConfig)| {
            let mut c = LinkConfig::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert_eq!(
            bad(|c| c.opportunity_bytes = 0),
            ConfigError::ZeroOpportunityBytes
        );
        assert_eq!(
            bad(|c| c.queue = QueueLimit::packets(0)),
            ConfigError::ZeroQueueLimit
        );
        assert_eq!(
            bad(|c| c.queue = QueueLimit::bytes(0)),
            ConfigError::ZeroQueueLimit
        );
        assert!(matches!(
            bad(|c| c.propagation_delay = Duration::from_secs(61)),
            ConfigError::PropagationDelay(_)
        ));
        assert!(matches!(
            bad(|c| c.loss = vec![LossModel::iid(2.0)]),
            ConfigError::Loss(_)
        ));
    }
}
