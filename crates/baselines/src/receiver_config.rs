//! The baseline receiver's parameters ([`ReceiverConfig`]), below both the receiver and the
//! [`crate::scheme`] that picks each scheme's feedback period
//! ([`ReceiverConfig::for_scheme`] lives beside [`crate::Scheme`]).

use salsify_time::Duration;

use crate::error::ConfigError;

/// Receiver parameters, as experiment files name them (durations in ms; unknown fields
/// refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Feedback period; `None` = one feedback per packet (`feedback_interval_ms = 0`).
    /// Default 100 ms. See [`crate::Scheme::feedback_interval`] for what each scheme needs.
    #[serde(
        rename = "feedback_interval_ms",
        with = "crate::serde_units::opt_millis"
    )]
    pub feedback_interval: Option<Duration>,
    /// NACK repeat interval. Default 100 ms (libwebrtc repeats after one RTT; the testbed's
    /// round trip is 40-50 ms plus queueing).
    #[serde(rename = "nack_retry_ms", with = "crate::serde_units::millis")]
    pub nack_retry: Duration,
    /// NACKs per missing packet before giving up. Default 10.
    pub max_nack_retries: u32,
    /// PLI repeat interval while waiting for a keyframe. Default 200 ms (libwebrtc's
    /// `max_wait_for_keyframe`).
    #[serde(rename = "pli_interval_ms", with = "crate::serde_units::millis")]
    pub pli_interval: Duration,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            feedback_interval: Some(Duration::from_millis(100)),
            nack_retry: Duration::from_millis(100),
            max_nack_retries: 10,
            pli_interval: Duration::from_millis(200),
        }
    }
}

impl ReceiverConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.feedback_interval.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::invalid(
                "feedback_interval_ms",
                "must be above 0 (per-packet feedback is None)",
            ));
        }
        if self.nack_retry.is_zero() {
            return Err(ConfigError::invalid("nack_retry_ms", "must be above 0"));
        }
        if self.pli_interval.is_zero() {
            return Err(ConfigError::invalid("pli_interval_ms", "must be above 0"));
        }
        Ok(())
    }
}
