//! Which rules govern forced sends and outages (`[salsify] rules`), and the parameters of the
//! default, the slow-link rules (`[salsify.slow_link]`, `[salsify.slow_link.resolution]`).

use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::serde_units::millis;

/// Which rules decide, beyond Algorithm 2, when the sender sends although the budget says skip.
///
/// In TOML a lowercase name: `rules = "paper"` or `"slow-link"`. Each names one rule per
/// seam of `crate::rules`, built once when the sender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SenderRules {
    /// The paper's (and original code's) rules: no outage handling at all (no silence
    /// timeout, no probes, no switch to acknowledged states without a loss report), no limit
    /// before the first estimate, and the worse option forced out after
    /// `max_consecutive_skips` skips in a row whether or not something is in flight.
    Paper,
    /// The default: the first round's rules made safe on slow and fading links (see [`SlowLinkConfig`] and
    /// `crate::decision`): the outage timeout follows the link's own pace, probes are the
    /// worse option if it is one fragment, else the coarsest frame the encoder makes, and back
    /// off exponentially, and forced sends never exceed what the
    /// estimate drains within the delay target (one fragment at least), asking the encoder
    /// for the coarsest quality when even the worse option is too large.
    #[default]
    SlowLink,
}

/// The parameters of `rules = "slow-link"` (`[slow_link]` in experiment files).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlowLinkConfig {
    /// `k`: an ACK is overdue (an outage is suspected) after
    /// `max(outage_timeout, k x pace x max(1, N))` of silence with `N` fragments in flight,
    /// where `pace` is the longer of the receiver's tau and the sender's last observed
    /// per-fragment ACK interval while fragments were in flight. Default 2.
    pub ack_timeout_factor: u32,
    /// Probes start `outage_probe_interval` apart and the interval doubles with each probe
    /// sent in one silence, up to this. Default 2 s.
    #[serde(rename = "max_probe_interval_ms", with = "millis")]
    pub max_probe_interval: Duration,
    /// Cap the probe interval also at `ack_timeout_factor x pace` (at least
    /// `outage_probe_interval`; `crate::decision::probe_interval_cap`): on a fast link a
    /// probe costs next to nothing and need not back off (measured: intermittent link p95
    /// 257 -> 132 ms, ACK-stall link 2309 -> 1973 ms). Default true. The risk it takes: tau
    /// is the time per fragment *received*, short fragments included, so on a slow link the
    /// cap can let probes of full fragments offer more than the link carries during a false
    /// outage.
    pub paced_probe_cap: bool,
    /// With nothing in flight (the link idle as far as the sender knows), a frame is forced
    /// out after this many skips in a row, instead of `max_consecutive_skips`: one fragment
    /// into an idle link queues behind nothing, and when `tau` is stale after a deep fade,
    /// each forced fragment is a fresh sample that brings the estimate (and the quality)
    /// back. Measured (fade preset, 640x360@30 synthetic, 180 s): 4 skips 13.1 dB SSIM, 49%
    /// utilisation; 1 skip 15.0 dB, 77%, same delay. Default 1.
    pub idle_link_skips: u32,
    /// When the picture is coded at a smaller size (`[slow_link.resolution]`).
    pub resolution: ResolutionStepConfig,
}

impl Default for SlowLinkConfig {
    fn default() -> Self {
        SlowLinkConfig {
            ack_timeout_factor: 2,
            max_probe_interval: Duration::from_secs(2),
            paced_probe_cap: true,
            idle_link_skips: 1,
            resolution: ResolutionStepConfig::default(),
        }
    }
}

/// The resolution step of the slow-link rules (`[slow_link.resolution]`; see
/// `crate::resolution`): where even the coarsest frame at the current size takes longer
/// than the delay target to cross the link at the estimated rate, for `step_down_after`
/// without a break, the sender codes the picture at half the width and height (a keyframe at
/// the new size; the receiver's picture is scaled up for display). It steps back up when a
/// frame at the larger size (predicted as the coarsest frame now, times the area ratio 4)
/// would cross in `1 / step_up_margin` of the delay target, for `step_up_after` without a
/// break. Only in [`crate::SenderMode::Salsify`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResolutionStepConfig {
    /// Step at all (`false`: always the source size). Default true.
    pub enabled: bool,
    /// Smallest size: the source halved this many times in each dimension. Default 1
    /// (measured on EV-DO: 360p of a 720p source halves the delay at about the same SSIM
    /// once scaled back up; 180p costs 5 dB of SSIM in the upscaling alone).
    pub max_halvings: u8,
    /// How long the coarsest frame must not fit before a step down. Default 1 s: ten delay
    /// targets, several ACK round trips on a slow link, so one slow estimate is not enough.
    #[serde(rename = "step_down_after_ms", with = "millis")]
    pub step_down_after: Duration,
    /// How long a larger frame must fit with margin before a step up. Default 1 s, as for a
    /// step down: the hysteresis is in the thresholds (a factor `4 x margin` in rate), and
    /// every second at the smaller size after the link has returned costs quality (measured
    /// on the fade preset, FourPeople 720p60: 3 s 17.41 dB, 1831 / 9403 ms; 1 s 18.53 dB,
    /// 1610 / 8914 ms).
    #[serde(rename = "step_up_after_ms", with = "millis")]
    pub step_up_after: Duration,
    /// A larger frame "fits with margin" when it would cross within the delay target divided
    /// by this (at least 1). Default 2: half the target left for quality above the coarsest.
    pub step_up_margin: f64,
}

impl Default for ResolutionStepConfig {
    fn default() -> Self {
        ResolutionStepConfig {
            enabled: true,
            max_halvings: 1,
            step_down_after: Duration::from_secs(1),
            step_up_after: Duration::from_secs(1),
            step_up_margin: 2.0,
        }
    }
}
