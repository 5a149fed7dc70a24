//! Every tunable number of the sender and receiver, with the paper's defaults.
//!
//! Fields are public so an experiment can set them directly; `validate()` checks a
//! configuration before [`crate::Sender::new`] / [`crate::Receiver::new`] accept it.

use salsify_codec::Quality;
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::serde_units::{millis, quality};

use crate::wire::{MAX_HELD_STATES, MAX_PAYLOAD};

/// A configuration value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `field` is invalid for the stated reason.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        field,
        reason: reason.into(),
    })
}

/// Which sender the paper's experiment 4 runs. In TOML: `mode = "salsify"`,
/// `mode = "conventional-codec"`, or `mode = { conventional-transport = { update_interval_ms
/// = 1000.0 } }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[non_exhaustive]
pub enum SenderMode {
    /// Salsify: two encodes per frame, the larger that fits is sent, else skip.
    #[default]
    Salsify,
    /// Ablation "conventional codec": the transport's budget becomes a size target before
    /// encoding ([`crate::EncodeJob::SizeTarget`]); one encode, always sent.
    ConventionalCodec,
    /// Ablation "conventional transport + codec": quality updated once per `update_interval`
    /// from the averaged rate, one encode per frame, every frame sent (like WebRTC).
    ConventionalTransport {
        /// How often the quality is updated (the paper: one second).
        #[serde(rename = "update_interval_ms", with = "millis")]
        update_interval: Duration,
    },
}

/// How the sender spaces fragments out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PacingConfig {
    /// Fragments leave this many times faster than the receiver reports them arriving.
    pub speedup: u32,
    /// Smallest gap between fragments.
    #[serde(rename = "min_gap_ms", with = "millis")]
    pub min_gap: Duration,
    /// Largest gap between fragments (also used before any estimate).
    #[serde(rename = "max_gap_ms", with = "millis")]
    pub max_gap: Duration,
}

impl Default for PacingConfig {
    /// The original's `min(2 ms, max(0.5 ms, tau / 5))`.
    fn default() -> Self {
        PacingConfig {
            speedup: 5,
            min_gap: Duration::from_micros(500),
            max_gap: Duration::from_millis(2),
        }
    }
}

/// The Salsify sender's parameters (`[salsify]` in experiment files; durations in ms, e.g.
/// `delay_target_ms`, qualities as quantizer indices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SenderConfig {
    /// Session id on every datagram. Default 1337 (the original's).
    pub connection_id: u16,
    /// Payload bytes per fragment: the "MTU" of the budget formula. Default 1400.
    pub fragment_payload: usize,
    /// The delay target `d` of the budget `MTU x (d / tau - N)`. Default 100 ms.
    #[serde(rename = "delay_target_ms", with = "millis")]
    pub delay_target: Duration,
    /// Quality of the first frame. Default 64.
    #[serde(with = "quality")]
    pub start_quality: Quality,
    /// The better option is `last - better_step` (finer quantizer). Default 17.
    pub better_step: u8,
    /// The worse option is `last + worse_step` (coarser quantizer). Default 23.
    pub worse_step: u8,
    /// Finest quantizer ever asked for. Default 3.
    #[serde(with = "quality")]
    pub min_quality: Quality,
    /// Coarsest quantizer ever asked for. Default 127.
    #[serde(with = "quality")]
    pub max_quality: Quality,
    /// After this many skips in a row, with nothing in flight (so no ACK will come), the
    /// worse option is sent even if it does not fit, so feedback keeps flowing. Default 4
    /// (the paper; the original code used 3).
    pub max_consecutive_skips: u32,
    /// How long loss-recovery mode lasts after the last loss report. Default 5 s.
    #[serde(rename = "recovery_duration_ms", with = "millis")]
    pub recovery_duration: Duration,
    /// Silence that means an outage: when fragments are in flight and no ACK has come for
    /// this long (or four mean inter-arrival times, if longer), the sender presumes what is in
    /// flight lost and, like in loss-recovery mode, encodes from the newest state the receiver
    /// acknowledged, so the first frame to get through after the outage is decodable at once
    /// instead of waiting a round trip for the receiver's loss report. Default 250 ms.
    #[serde(rename = "outage_timeout_ms", with = "millis")]
    pub outage_timeout: Duration,
    /// While an outage is suspected, the worse option is sent anyway once this long has passed
    /// since the last frame sent, even before `max_consecutive_skips` — a probe, so the sender
    /// hears soon after the link comes back (at 30 frames/s four skips are 167 ms, most of
    /// a 200 ms recovery target). Default 80 ms: every third picture at 30 frames/s.
    #[serde(rename = "outage_probe_interval_ms", with = "millis")]
    pub outage_probe_interval: Duration,
    /// Fragment pacing.
    pub pacing: PacingConfig,
    /// Most encoder states kept (oldest dropped first). Default 64.
    pub max_states: usize,
    /// Put grace periods in fragments. `false` is the "no grace period" ablation.
    pub grace_period: bool,
    /// Salsify or an ablation.
    pub mode: SenderMode,
}

impl Default for SenderConfig {
    fn default() -> Self {
        let q = |i| Quality::new(i).expect("constant below 128");
        SenderConfig {
            connection_id: 1337,
            fragment_payload: 1400,
            delay_target: Duration::from_millis(100),
            start_quality: q(64),
            better_step: 17,
            worse_step: 23,
            min_quality: q(3),
            max_quality: q(127),
            max_consecutive_skips: 4,
            recovery_duration: Duration::from_secs(5),
            outage_timeout: Duration::from_millis(250),
            outage_probe_interval: Duration::from_millis(80),
            pacing: PacingConfig::default(),
            max_states: 64,
            grace_period: true,
            mode: SenderMode::Salsify,
        }
    }
}

impl SenderConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.fragment_payload == 0 || self.fragment_payload > MAX_PAYLOAD {
            return invalid("fragment_payload", format!("must be 1..={MAX_PAYLOAD}"));
        }
        if self.delay_target.is_zero() {
            return invalid("delay_target_ms", "must be positive");
        }
        if self.min_quality > self.max_quality {
            return invalid("min_quality", "above max_quality");
        }
        if self.start_quality < self.min_quality || self.start_quality > self.max_quality {
            return invalid("start_quality", "outside min_quality..=max_quality");
        }
        if self.outage_timeout.is_zero() {
            return invalid("outage_timeout_ms", "must be positive");
        }
        if self.max_states == 0 {
            return invalid("max_states", "must keep at least the last state sent");
        }
        let p = &self.pacing;
        if p.speedup == 0 || p.min_gap > p.max_gap {
            return invalid("pacing", "speedup must be positive and min_gap <= max_gap");
        }
        if let SenderMode::ConventionalTransport { update_interval } = self.mode {
            if update_interval.is_zero() {
                return invalid("mode.update_interval_ms", "must be positive");
            }
        }
        Ok(())
    }
}

/// The Salsify receiver's parameters (`[salsify_receiver]` in experiment files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Accept only this session; `None` locks onto the first valid fragment's id.
    pub connection_id: Option<u16>,
    /// Weight of a new sample in the inter-arrival EWMA. Default 0.1 (the paper).
    pub ewma_alpha: f64,
    /// How long a complete frame whose source state is missing waits for an older,
    /// reordered frame to supply it before the receiver gives up on it. Default 10 ms.
    #[serde(rename = "reorder_window_ms", with = "millis")]
    pub reorder_window: Duration,
    /// Most frames being reassembled at once (oldest dropped first). Default 16.
    pub max_pending_frames: usize,
    /// Most decoder states kept (oldest dropped first). Default 16.
    pub max_states: usize,
    /// How many of the newest held states each ACK lists. Default 8.
    pub acked_states: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            connection_id: None,
            ewma_alpha: 0.1,
            reorder_window: Duration::from_millis(10),
            max_pending_frames: 16,
            max_states: 16,
            acked_states: 8,
        }
    }
}

impl ReceiverConfig {
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
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        SenderConfig::default().validate().unwrap();
        ReceiverConfig::default().validate().unwrap();
        let bad = SenderConfig {
            fragment_payload: 0,
            ..SenderConfig::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(ConfigError::Invalid {
                field: "fragment_payload",
                ..
            })
        ));
        let bad = ReceiverConfig {
            ewma_alpha: f64::NAN,
            ..ReceiverConfig::default()
        };
        assert!(bad.validate().is_err());
        let bad = SenderConfig {
            start_quality: Quality::new(1).unwrap(),
            ..SenderConfig::default()
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn configs_read_and_write_toml_with_units_and_refuse_unknown_fields() {
        let text = toml::to_string(&SenderConfig::default()).unwrap();
        assert!(text.contains("delay_target_ms = 100.0"), "{text}");
        let back: SenderConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, SenderConfig::default());
        let text = toml::to_string(&ReceiverConfig::default()).unwrap();
        let back: ReceiverConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, ReceiverConfig::default());

        let c: SenderConfig = toml::from_str(
            "delay_target_ms = 50\nstart_quality = 40\nmode = \"conventional-codec\"",
        )
        .unwrap();
        assert_eq!(c.delay_target, Duration::from_millis(50));
        assert_eq!(c.start_quality.index(), 40);
        assert_eq!(c.mode, SenderMode::ConventionalCodec);
        let c: SenderConfig =
            toml::from_str("[mode.conventional-transport]\nupdate_interval_ms = 500").unwrap();
        assert_eq!(
            c.mode,
            SenderMode::ConventionalTransport {
                update_interval: Duration::from_millis(500)
            }
        );

        let err = toml::from_str::<SenderConfig>("delay_target = 5").unwrap_err();
        assert!(err.to_string().contains("delay_target"), "{err}");
        let err = toml::from_str::<SenderConfig>("start_quality = 200").unwrap_err();
        assert!(err.to_string().contains("200"), "{err}");
        let bad: SenderConfig = toml::from_str("delay_target_ms = 0").unwrap();
        assert!(matches!(
            bad.validate(),
            Err(ConfigError::Invalid {
                field: "delay_target_ms",
                ..
            })
        ));
    }
}
