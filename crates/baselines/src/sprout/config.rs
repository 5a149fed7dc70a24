//! The Sprout schemes' parameters and names.

use salsify_sprout_model::{DrainRule, ForecastConfig, ForecasterKind};
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// What the sender sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SproutMode {
    /// Video frames sized to the window (Alfalfa).
    #[default]
    Video,
    /// Filler in full datagrams, no video (`sproutbt2`).
    Bulk,
}

/// The Sprout schemes' parameters (`[sprout]` in experiment files; the forecast's own in
/// `[sprout.forecast]`). Defaults are the paper's and Alfalfa's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SproutConfig {
    /// The model and forecast (tick, sigma, outage escape rate, confidence, horizon, packet
    /// unit).
    pub forecast: ForecastConfig,
    /// Ticks the sender looks ahead into the forecast: the delay target. Default 5 (100 ms).
    pub lookahead_ticks: u32,
    /// How the queue estimate drains as a forecast ages. Default the original's.
    pub drain: DrainRule,
    /// Video or bulk. Default video (the scheme names `sprout-bulk` and
    /// `sprout-ewma-bulk` set bulk).
    pub mode: SproutMode,
    /// The smallest window worth a frame; below it the picture is skipped. Default 1000 B.
    pub min_frame_bytes: usize,
    /// Payload bytes per datagram (video fragments and bulk filler). Default 1400.
    pub fragment_payload: usize,
    /// A heartbeat goes out after this long without data (ms in files). Default 50 ms.
    #[serde(with = "salsify_time::serde_units::millis")]
    pub heartbeat_interval: Duration,
    /// Whether the receiver reads a tick in which the sender went idle as "the link could
    /// have delivered at least this much" (a censored observation) rather than exactly this
    /// much. Unset (the default): on for video, off for bulk. The original reads every tick
    /// as exact, which suits its bulk sender; a video sender is limited by its own frames,
    /// and read exactly they talk the forecast down to their own size (measured: on the
    /// Verizon LTE trace at 640x360@30 frames shrank to under 1 KB within a second,
    /// 151 kbit/s sent on a link averaging several Mb/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub censor_idle_ticks: Option<bool>,
    /// The receiver stops its per-tick feedback after this long without data (ms in
    /// files). Default 5 s.
    #[serde(with = "salsify_time::serde_units::millis")]
    pub feedback_idle_limit: Duration,
}

impl Default for SproutConfig {
    fn default() -> Self {
        SproutConfig {
            forecast: ForecastConfig::default(),
            lookahead_ticks: 5,
            drain: DrainRule::Original,
            mode: SproutMode::Video,
            min_frame_bytes: 1000,
            fragment_payload: 1400,
            heartbeat_interval: Duration::from_millis(50),
            censor_idle_ticks: None,
            feedback_idle_limit: Duration::from_secs(5),
        }
    }
}

impl SproutConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.forecast
            .validate()
            .map_err(|e| ConfigError::invalid("sprout.forecast", e))?;
        if self.lookahead_ticks == 0 || self.lookahead_ticks >= self.forecast.horizon_ticks {
            return Err(ConfigError::invalid(
                "sprout.lookahead_ticks",
                "must be at least 1 and below forecast.horizon_ticks",
            ));
        }
        if !(1..=1400).contains(&self.fragment_payload) {
            return Err(ConfigError::invalid(
                "sprout.fragment_payload",
                "must be 1 to 1400 bytes",
            ));
        }
        if self.min_frame_bytes > 10_000_000 {
            return Err(ConfigError::invalid(
                "sprout.min_frame_bytes",
                "must be at most 10 MB",
            ));
        }
        let ms = |d: Duration| d.as_millis();
        if !(1..=10_000).contains(&ms(self.heartbeat_interval)) {
            return Err(ConfigError::invalid(
                "sprout.heartbeat_interval",
                "must be 1 to 10000 ms",
            ));
        }
        if ms(self.feedback_idle_limit) < 100 {
            return Err(ConfigError::invalid(
                "sprout.feedback_idle_limit",
                "must be at least 100 ms",
            ));
        }
        Ok(())
    }
}

/// The scheme name of a forecaster and mode.
pub fn scheme_name(kind: ForecasterKind, mode: SproutMode) -> &'static str {
    match (kind, mode) {
        (ForecasterKind::Sprout, SproutMode::Video) => "sprout",
        (ForecasterKind::Ewma, SproutMode::Video) => "sprout-ewma",
        (ForecasterKind::Sprout, SproutMode::Bulk) => "sprout-bulk",
        (ForecasterKind::Ewma, SproutMode::Bulk) => "sprout-ewma-bulk",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_table_and_refuses_bad_values_by_name() {
        let c: SproutConfig =
            toml::from_str("mode = \"bulk\"\n[forecast]\nconfidence = 0.75").unwrap();
        assert_eq!(c.mode, SproutMode::Bulk);
        assert_eq!(c.forecast.confidence, 0.75);
        c.validate().unwrap();
        let bad = SproutConfig {
            lookahead_ticks: 8,
            ..SproutConfig::default()
        };
        assert_eq!(
            bad.validate().unwrap_err().field(),
            "sprout.lookahead_ticks"
        );
        let bad: SproutConfig = toml::from_str("[forecast]\nconfidence = 1.5").unwrap();
        assert_eq!(bad.validate().unwrap_err().field(), "sprout.forecast");
    }
}
