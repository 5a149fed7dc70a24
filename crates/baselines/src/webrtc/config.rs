//! The conventional scheme's parameters: the `[conventional]` table of an experiment file
//! (durations in ms, rates in kb/s; every field optional, unknown fields refused). Each
//! default is libwebrtc's, with the source file it comes from.

use salsify_codec::CbrConfig;
use salsify_endpoint::CbrSettings;
use salsify_time::{Bitrate, Duration};

use crate::error::ConfigError;

/// libwebrtc's sender around `GoogCcNetworkController`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConventionalConfig {
    /// Start rate given to the controller and the encoder. Default 300 kb/s (libwebrtc
    /// `kDefaultStartBitrateBps`, api/transport/bitrate_settings.h; `kStartVideoBitrate`).
    #[serde(rename = "start_kbps", with = "salsify_time::serde_units::kbps")]
    pub start: Bitrate,
    /// The controller's floor and the stream's minimum. Default 30 kb/s
    /// (`kDefaultMinVideoBitrateBps`, video/config/video_encoder_config.h; the controller's
    /// `kCongestionControllerMinBitrate` is 5 kb/s but the allocator enforces the stream's).
    #[serde(rename = "min_kbps", with = "salsify_time::serde_units::kbps")]
    pub min: Bitrate,
    /// The controller's ceiling (`TargetRateConstraints::max_data_rate`). Default none
    /// (0): Chrome sets no transport maximum, only the encoder's (`encoder_max_kbps`), and
    /// GoogCC probes up to twice the allocation above it.
    #[serde(rename = "max_kbps", with = "salsify_time::serde_units::opt_kbps")]
    pub max: Option<Bitrate>,
    /// The encoder's maximum (the stream's `max_bitrate_bps`, the allocation the controller
    /// is told of). Default none (0): by the coded size, libwebrtc's
    /// `GetMaxDefaultVideoBitrateKbps` (media/engine/webrtc_video_engine.cc): 600 kb/s up to
    /// 320x240, 1700 up to 640x480, 2000 up to 960x540, 2500 above. Vidaptive's experiments
    /// set 12000.
    #[serde(
        rename = "encoder_max_kbps",
        with = "salsify_time::serde_units::opt_kbps"
    )]
    pub encoder_max: Option<Bitrate>,
    /// Pacing rate = this x the controller's target. Default 1.1: libwebrtc's
    /// `kStrictPacingMultiplier` for video with transport-wide feedback
    /// (video/video_send_stream_impl.cc, `PacingConfig`); GoogCC's own default 2.5 is for
    /// receive-side estimation.
    pub pacing_factor: f64,
    /// The pacer raises its rate so that what it holds leaves within this time. Default
    /// 2000 ms (`PacingController::kMaxExpectedQueueLength`, modules/pacing/
    /// pacing_controller.cc, the `max_delay` of `PacingConfig`); 0 turns the drain off.
    #[serde(
        rename = "max_pacing_delay_ms",
        with = "salsify_time::serde_units::opt_millis"
    )]
    pub max_pacing_delay: Option<Duration>,
    /// How often the controller's `OnProcessInterval` runs. Default 25 ms
    /// (`GoogCcNetworkController::GetProcessInterval`).
    #[serde(
        rename = "process_interval_ms",
        with = "salsify_time::serde_units::millis"
    )]
    pub process_interval: Duration,
    /// RTT and loss from transport feedback only (`GoogCcConfig::feedback_only`, the
    /// `GoogCcFeedbackNetworkControllerFactory`). Default false, as Chrome: RTT and loss
    /// come as RTCP receiver reports every `rtcp_interval_ms`, here computed from the
    /// transport feedback (the wire has no receiver reports).
    pub feedback_only: bool,
    /// Receiver-report period. Default 1000 ms (RTCP's video report interval,
    /// `RTCPSender` `kDefaultVideoReportInterval`, modules/rtp_rtcp/source/rtcp_sender.cc).
    #[serde(
        rename = "rtcp_interval_ms",
        with = "salsify_time::serde_units::millis"
    )]
    pub rtcp_interval: Duration,
    /// Congestion window: in-flight data allowed = the minimum feedback RTT + this. Default
    /// 350 ms (field trial `WebRTC-CongestionWindow` `QueueSize:350`, enabled by default,
    /// rtc_base/experiments/rate_control_settings.cc); 0 turns the window off.
    #[serde(
        rename = "congestion_window_ms",
        with = "salsify_time::serde_units::opt_millis"
    )]
    pub congestion_window: Option<Duration>,
    /// Congestion-window pushback lowers the target no further than this. Default 30 kb/s
    /// (`WebRTC-CongestionWindow` `MinBitrate:30000`); 0 disables pushback, and the window
    /// then blocks the pacer instead.
    #[serde(rename = "pushback_min_kbps", with = "salsify_time::serde_units::kbps")]
    pub pushback_min: Bitrate,
    /// Pushback drops frames (the encoder keeps the full target, every n-th picture is
    /// dropped, `VideoStreamEncoder::UpdateTargetBitrate`) instead of lowering the target.
    /// Default true (`WebRTC-CongestionWindow` `DropFrame:true`).
    pub pushback_drop_frame: bool,
    /// Periodic probes while application-limited. Default false: libwebrtc requests them
    /// only for screen share (`requests_alr_probing`).
    pub alr_probing: bool,
    /// Start a large picture at a lower resolution when the start rate is low
    /// (`VideoStreamEncoder::DropDueToSize`, video/video_stream_encoder.cc: below 300 kb/s
    /// anything above 320x240 is dropped, below 500 kb/s anything above 640x480; each drop
    /// scales the source down one step, at most `kMaxInitialFramedrop` = 4 times). Default
    /// true.
    pub initial_frame_drop: bool,
    /// QP-based resolution adaptation (`QualityScaler`, modules/video_coding/utility/
    /// quality_scaler.cc, with libvpx VP8's thresholds 29/95 from
    /// modules/video_coding/codecs/vp8/libvpx_vp8_encoder.cc). Default true, as for a
    /// camera in Chrome.
    pub quality_scaler: bool,
    /// libvpx's frame dropper threshold (percent of buffer; 0 never drops). Default 30,
    /// `LibvpxVp8Encoder`'s `rc_dropframe_thresh` (`CbrConfig::default`).
    pub dropframe_thresh: u32,
    /// Most frame intervals libvpx is told passed between two pictures (0: the real gap, as
    /// libwebrtc). Default 0.
    pub max_gap_frames: u32,
    /// libwebrtc's encoder bitrate adjuster (`EncoderBitrateAdjuster`, video/
    /// encoder_bitrate_adjuster.cc): lowers the encoder's target by its measured overshoot
    /// over 3 s (at most halving it; 20 % assumed for the first 30 frames of each coded
    /// size), using the link's headroom when the encoder's maximum caps the target.
    /// Default true, as libwebrtc (`VideoRateControlConfig::bitrate_adjuster = true`,
    /// rtc_base/experiments/rate_control_settings.h; `VideoStreamEncoder` makes one per
    /// encoder configuration).
    pub bitrate_adjuster: bool,
}

impl Default for ConventionalConfig {
    fn default() -> Self {
        ConventionalConfig {
            start: Bitrate::kbps(300),
            min: Bitrate::kbps(30),
            max: None,
            encoder_max: None,
            pacing_factor: 1.1,
            max_pacing_delay: Some(Duration::from_secs(2)),
            process_interval: Duration::from_millis(25),
            feedback_only: false,
            rtcp_interval: Duration::from_secs(1),
            congestion_window: Some(Duration::from_millis(350)),
            pushback_min: Bitrate::kbps(30),
            pushback_drop_frame: true,
            alr_probing: false,
            initial_frame_drop: true,
            quality_scaler: true,
            dropframe_thresh: CbrConfig::default().dropframe_thresh,
            max_gap_frames: CbrConfig::default().max_gap_frames,
            bitrate_adjuster: true,
        }
    }
}

/// The encoder's default maximum for a `width` x `height` stream (libwebrtc
/// `GetMaxDefaultVideoBitrateKbps`, media/engine/webrtc_video_engine.cc, camera content).
pub fn default_encoder_max(width: u32, height: u32) -> Bitrate {
    let pixels = u64::from(width) * u64::from(height);
    Bitrate::kbps(match pixels {
        p if p <= 320 * 240 => 600,
        p if p <= 640 * 480 => 1700,
        p if p <= 960 * 540 => 2000,
        _ => 2500,
    })
}

impl ConventionalConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.min.as_bps() == 0 {
            return Err(ConfigError::invalid("min_kbps", "must be above 0"));
        }
        if self.start < self.min {
            return Err(ConfigError::invalid(
                "start_kbps",
                format!("{} is below min_kbps {}", self.start, self.min),
            ));
        }
        if let Some(max) = self.max {
            if max < self.start {
                return Err(ConfigError::invalid(
                    "max_kbps",
                    format!("{max} is below start_kbps {}", self.start),
                ));
            }
        }
        if let Some(max) = self.encoder_max {
            if max < self.min {
                return Err(ConfigError::invalid(
                    "encoder_max_kbps",
                    format!("{max} is below min_kbps {}", self.min),
                ));
            }
        }
        if !(self.pacing_factor.is_finite() && self.pacing_factor >= 1.0) {
            return Err(ConfigError::invalid(
                "pacing_factor",
                format!(
                    "{} is not a finite factor of at least 1",
                    self.pacing_factor
                ),
            ));
        }
        if self.process_interval.is_zero() || self.process_interval > Duration::from_secs(1) {
            return Err(ConfigError::invalid(
                "process_interval_ms",
                "must be above 0 and at most 1000",
            ));
        }
        if self.rtcp_interval.is_zero() {
            return Err(ConfigError::invalid("rtcp_interval_ms", "must be above 0"));
        }
        if self
            .congestion_window
            .is_some_and(|w| w > Duration::from_secs(60))
        {
            return Err(ConfigError::invalid(
                "congestion_window_ms",
                "must be at most 60000",
            ));
        }
        if self.dropframe_thresh > 100 {
            return Err(ConfigError::invalid(
                "dropframe_thresh",
                format!("{} is not a percentage (0..=100)", self.dropframe_thresh),
            ));
        }
        Ok(())
    }

    /// The CBR encoder's settings (libvpx VP8 real-time CBR as `LibvpxVp8Encoder` sets it;
    /// see `salsify_codec::CbrConfig`).
    pub fn cbr_settings(&self) -> CbrSettings {
        CbrSettings {
            dropframe_thresh: self.dropframe_thresh,
            max_gap_frames: self.max_gap_frames,
        }
    }

    /// The encoder's maximum for a `width` x `height` stream.
    pub fn encoder_max_for(&self, width: u32, height: u32) -> Bitrate {
        self.encoder_max
            .unwrap_or_else(|| default_encoder_max(width, height))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_maximum_by_resolution_is_libwebrtcs() {
        assert_eq!(default_encoder_max(320, 240), Bitrate::kbps(600));
        assert_eq!(default_encoder_max(640, 360), Bitrate::kbps(1700));
        assert_eq!(default_encoder_max(640, 480), Bitrate::kbps(1700));
        assert_eq!(default_encoder_max(960, 540), Bitrate::kbps(2000));
        assert_eq!(default_encoder_max(1280, 720), Bitrate::kbps(2500));
        let c = ConventionalConfig {
            encoder_max: Some(Bitrate::kbps(12_000)),
            ..ConventionalConfig::default()
        };
        assert_eq!(c.encoder_max_for(1280, 720), Bitrate::kbps(12_000));
    }

    #[test]
    fn defaults_validate_and_bad_values_name_their_field() {
        ConventionalConfig::default().validate().unwrap();
        let bad = |c: ConventionalConfig| c.validate().unwrap_err().field();
        let d = ConventionalConfig::default;
        assert_eq!(
            bad(ConventionalConfig {
                pacing_factor: 0.5,
                ..d()
            }),
            "pacing_factor"
        );
        assert_eq!(
            bad(ConventionalConfig {
                max: Some(Bitrate::kbps(100)),
                ..d()
            }),
            "max_kbps"
        );
        assert_eq!(
            bad(ConventionalConfig {
                min: Bitrate::ZERO,
                ..d()
            }),
            "min_kbps"
        );
    }
}
