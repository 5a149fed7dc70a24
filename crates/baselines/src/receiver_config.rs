//! The baseline receiver's parameters ([`ReceiverConfig`]), below both the receiver and the
//! [`crate::scheme`] that picks each scheme's feedback period
//! ([`ReceiverConfig::for_scheme`] lives beside [`crate::WireId`]).

use salsify_time::Duration;

use crate::error::ConfigError;

/// Receiver parameters, as experiment files name them (durations in ms; unknown fields
/// refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Feedback period; `None` = one feedback per packet (`feedback_interval_ms = 0`).
    /// Default 100 ms. See [`crate::WireId::feedback_interval`] for what each scheme needs.
    #[serde(
        rename = "feedback_interval_ms",
        with = "salsify_time::serde_units::opt_millis"
    )]
    pub feedback_interval: Option<Duration>,
    /// NACK repeat interval. Default 100 ms (libwebrtc repeats after one RTT; the testbed's
    /// round trip is 40-50 ms plus queueing).
    #[serde(rename = "nack_retry_ms", with = "salsify_time::serde_units::millis")]
    pub nack_retry: Duration,
    /// NACKs per missing packet before giving up. Default 10.
    pub max_nack_retries: u32,
    /// PLI repeat interval while waiting for a keyframe. Default 200 ms (libwebrtc's
    /// `max_wait_for_keyframe`).
    #[serde(rename = "pli_interval_ms", with = "salsify_time::serde_units::millis")]
    pub pli_interval: Duration,
    /// How far a transport or media sequence number may lie from the receiver's window (ahead
    /// of the oldest not yet reported, or behind the newest) and still be taken; a datagram
    /// outside it is counted and dropped before anything is stored. It bounds the feedback
    /// and NACK work one datagram can cause, whatever the wire says. Default 8192: eight
    /// seconds of a 1000-datagram/s call lost in a row. A longer gap drops the stream until
    /// a fresh receiver takes it (the runtime's session rules), which asks for a keyframe.
    pub sequence_window: u32,
    /// Most frames ahead of the next one to show that a fragment may belong to (the window
    /// starts at the first frame seen). Default 1024: 17 s at 60 fps.
    pub frame_window: u32,
    /// Most frames reassembled at once; a fragment of one more is dropped. Default 128: 2 s
    /// of frames at 60 fps.
    pub max_pending_frames: usize,
    /// Most payload bytes held for reassembly; a fragment beyond is dropped. Default 32 MiB,
    /// a hundred 720p keyframes.
    pub max_buffered_bytes: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            feedback_interval: Some(Duration::from_millis(100)),
            nack_retry: Duration::from_millis(100),
            max_nack_retries: 10,
            pli_interval: Duration::from_millis(200),
            sequence_window: 8192,
            frame_window: 1024,
            max_pending_frames: 128,
            max_buffered_bytes: 32 << 20,
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
        if self.sequence_window == 0 || self.sequence_window > 1 << 20 {
            return Err(ConfigError::invalid(
                "sequence_window",
                "must be in 1..=1048576",
            ));
        }
        if self.frame_window == 0 || self.frame_window > 1 << 20 {
            return Err(ConfigError::invalid(
                "frame_window",
                "must be in 1..=1048576",
            ));
        }
        if self.max_pending_frames == 0 {
            return Err(ConfigError::invalid(
                "max_pending_frames",
                "must be above 0",
            ));
        }
        if self.max_buffered_bytes == 0 {
            return Err(ConfigError::invalid(
                "max_buffered_bytes",
                "must be above 0",
            ));
        }
        Ok(())
    }
}
