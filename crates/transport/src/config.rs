//! Every tunable number of the sender and receiver, with the paper's defaults.
//!
//! Fields are public so an experiment can set them directly; `validate()` checks a
//! configuration before [`crate::Sender::new`] / [`crate::Receiver::new`] accept it.
//!
//! Experiment files set them as TOML tables (`[salsify]`, `[salsify_receiver]`): every field
//! may be left out (it keeps its default), an unknown field is an error, durations are
//! milliseconds in fields named `*_ms` (floats: `min_gap_ms = 0.5` is 500 µs) and qualities
//! are VP8 quantizer indices 0..=127. A `[salsify]` table with its defaults spelled out:
//!
//! ```toml
//! connection_id = 1337
//! fragment_payload = 1400
//! delay_target_ms = 100.0
//! start_quality = 64
//! better_step = 17
//! worse_step = 23
//! min_quality = 3
//! max_quality = 127
//! max_consecutive_skips = 4
//! recovery_duration_ms = 5000.0
//! outage_timeout_ms = 250.0
//! outage_probe_interval_ms = 80.0
//! max_states = 64
//! grace_period = true
//! rules = "slow-link"   # outages and sizes paced by the link (see [slow_link] below),
//!                       # or "paper" (no outage handling, the paper's forced sends),
//!                       # or "project" (the first round's: fixed 250 ms timeout, frame probes)
//! mode = "salsify"      # or "conventional-codec", "conventional-transport" (1 s updates),
//!                       # or { conventional-transport = { update_interval_ms = 500.0 } }
//!
//! [pacing]
//! speedup = 5
//! min_gap_ms = 0.0      # the paper's schemes: 0.5
//! max_gap_ms = 2.0
//!
//! [encode_time]         # see crate::encode_time
//! enabled = true
//! share = 0.75
//! relax = 0.7
//! step = 4
//! weight = 0.0625
//! min_jobs = 8
//! min_byte_share = 0.1
//! single_encode_after = 30
//! single_encode_margin = 4.0
//!
//! [slow_link]           # used only with rules = "slow-link"
//! ack_timeout_factor = 2
//! max_probe_interval_ms = 2000.0
//! paced_probe_cap = true
//! idle_link_skips = 1
//!
//! [slow_link.resolution] # the resolution step (see ResolutionStepConfig)
//! enabled = true
//! max_halvings = 1
//! step_down_after_ms = 1000.0
//! step_up_after_ms = 1000.0
//! step_up_margin = 2.0
//! ```

use salsify_codec::Quality;
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::delivery::{AckStall, BudgetSource};
use crate::encode_time::EncodeTimeConfig;
pub use crate::error::ConfigError;
use crate::serde_units::{millis, quality};

use crate::wire::{MAX_HELD_STATES, MAX_PAYLOAD};

fn invalid(field: &'static str, reason: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        field,
        reason: reason.into(),
    })
}

/// Which sender the paper's experiment 4 runs.
///
/// In TOML a lowercase name: `mode = "salsify"`, `mode = "conventional-codec"` or
/// `mode = "conventional-transport"` (quality updated every second, as in the paper); for
/// another update interval, the name as a table key:
/// `mode = { conventional-transport = { update_interval_ms = 500.0 } }`. Written back, the
/// conventional-transport mode always takes the table form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
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

/// The paper's update interval of the conventional-transport ablation.
const CONVENTIONAL_UPDATE_INTERVAL: Duration = Duration::from_secs(1);

/// The mode names, as experiment files spell them.
const MODE_NAMES: &[&str] = &["salsify", "conventional-codec", "conventional-transport"];

/// The parameters of `{ conventional-transport = { ... } }`.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConventionalTransportParams {
    #[serde(rename = "update_interval_ms", with = "millis")]
    update_interval: Duration,
}

impl Default for ConventionalTransportParams {
    fn default() -> Self {
        ConventionalTransportParams {
            update_interval: CONVENTIONAL_UPDATE_INTERVAL,
        }
    }
}

/// Reads a name, or a one-key table naming the mode with its parameters (see [`SenderMode`]).
impl<'de> Deserialize<'de> for SenderMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ModeVisitor;

        impl<'de> serde::de::Visitor<'de> for ModeVisitor {
            type Value = SenderMode;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a sender mode: \"salsify\", \"conventional-codec\", \"conventional-transport\" \
                     or { conventional-transport = { update_interval_ms = ... } }",
                )
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<SenderMode, E> {
                match name {
                    "salsify" => Ok(SenderMode::Salsify),
                    "conventional-codec" => Ok(SenderMode::ConventionalCodec),
                    "conventional-transport" => Ok(SenderMode::ConventionalTransport {
                        update_interval: CONVENTIONAL_UPDATE_INTERVAL,
                    }),
                    other => Err(E::unknown_variant(other, MODE_NAMES)),
                }
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SenderMode, A::Error> {
                use serde::de::Error;
                let Some(name) = map.next_key::<String>()? else {
                    return Err(A::Error::invalid_length(0, &self));
                };
                let mode = match name.as_str() {
                    "conventional-transport" => {
                        let p: ConventionalTransportParams = map.next_value()?;
                        SenderMode::ConventionalTransport {
                            update_interval: p.update_interval,
                        }
                    }
                    "salsify" | "conventional-codec" => {
                        return Err(A::Error::custom(format!(
                            "mode {name:?} takes no parameters: write mode = {name:?}"
                        )))
                    }
                    other => return Err(A::Error::unknown_variant(other, MODE_NAMES)),
                };
                if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom("a table naming one mode"));
                }
                Ok(mode)
            }
        }

        d.deserialize_any(ModeVisitor)
    }
}

/// Which rules decide, beyond Algorithm 2, when the sender sends although the budget says skip.
///
/// In TOML a lowercase name: `rules = "project"`, `"paper"` or `"slow-link"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SenderRules {
    /// The first round's additions (before the slow-link rules): no budget before the first estimate while
    /// something is in flight; forced sends only with nothing in flight; an outage is
    /// suspected after `outage_timeout` (or four tau) of silence, and then the worse option
    /// is sent every `outage_probe_interval` as a probe whatever the budget. Kept for
    /// comparison (schemes `salsify-2c-project`, `salsify-1c-project`): on slow links its
    /// fixed timeout and whole-frame probes flood the queue.
    Project,
    /// The paper's (and original code's) rules: no outage handling at all (no silence
    /// timeout, no probes, no switch to acknowledged states without a loss report), no limit
    /// before the first estimate, and the worse option forced out after
    /// `max_consecutive_skips` skips in a row whether or not something is in flight.
    Paper,
    /// The default: the project's rules made safe on slow and fading links (see [`SlowLinkConfig`] and
    /// [`crate::decision`]): the outage timeout follows the link's own pace, probes are the
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
    /// `outage_probe_interval`; [`crate::decision::probe_interval_cap`]): on a fast link a
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
    /// When above 0, the budget's tau during an ACK silence with fragments in flight is the
    /// receiver's estimate as it would be if the awaited fragment arrived now
    /// ([`crate::decision::tau_after_silence`]) with this EWMA weight (0.1 is the receiver's
    /// own). Default 0, the paper's rule (tau as last reported). Measured (640x360@30
    /// synthetic, seed 1, 0.1 against 0): the cliff preset's delay falls from 1406 / 7473 ms
    /// (mean / p95) to 391 / 2683 ms at -1.4 dB SSIM, but T-Mobile LTE loses 0.6 dB for
    /// 9 % / 14 % less delay, EV-DO 0.4 dB for none, and the fade and 3G presets do not
    /// change: a trade, not a default.
    pub silence_weight: f64,
    /// Silence counts only beyond this many times the ACKs' mean lateness on the path (as
    /// TCP's retransmission timeout, `SRTT + 4 x RTTVAR`). Default 4.
    pub silence_jitter_factor: u32,
    /// What the sender assumes the link delivers while the ACKs are silent (see
    /// [`crate::delivery`]): `"probe"` (default: the budget freezes at the last ACK's view and
    /// coarsest probes follow once the ACK is overdue) or `"drain"` (once the ACK is overdue,
    /// the link keeps delivering at the last estimate, halving every `stall_half_life_ms`,
    /// frames encoded from the newest acknowledged state; an outage is suspected when an
    /// eighth is left or `max_drain_frames` went out since the last ACK). Measured side by
    /// side (640x360@30 synthetic, the slow suite's nine links, 60-140 s, drain against
    /// probe): +0.6 dB on T-Mobile LTE, +1.0 dB on the intermittent link, +1.2 frames/s on
    /// the ack-stall preset at the same p95, fade p95 -16%; but p95 +20% on the 3g preset,
    /// +12% on Verizon LTE, +10% on T-Mobile LTE, +7% on EV-DO and dropout. It cannot tell
    /// an ACK stall from a link that fell at once, so it is not the default. Written out only
    /// when not the default.
    #[serde(skip_serializing_if = "is_default")]
    pub ack_stall: AckStall,
    /// The half-life of the assumed rate under `ack_stall = "drain"`. Default 500 ms: a
    /// link that really died receives at most 0.72 s of its last rate beyond what fits the
    /// delay target before probes take over (about 2 s into the silence).
    #[serde(
        rename = "stall_half_life_ms",
        with = "millis",
        skip_serializing_if = "is_default_half_life"
    )]
    pub stall_half_life: Duration,
    /// Under `ack_stall = "drain"`, an outage is suspected anyway once this many frames were
    /// sent since the last ACK: the probes that follow are encoded from the newest state the
    /// receiver acknowledged, and the receiver keeps only `[salsify_receiver] states_behind`
    /// (32) states older than what it decodes, so a longer drain leaves probes it cannot
    /// decode (measured: whole seconds without a picture on the ack-stall preset at 30 fps).
    /// Default 24. Written out only when set.
    #[serde(skip_serializing_if = "is_default_drain_frames")]
    pub max_drain_frames: u32,
}

/// The default of [`SlowLinkConfig::max_drain_frames`].
const MAX_DRAIN_FRAMES: u32 = 24;

fn is_default_drain_frames(n: &u32) -> bool {
    *n == MAX_DRAIN_FRAMES
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The default of [`SlowLinkConfig::stall_half_life`].
const STALL_HALF_LIFE: Duration = Duration::from_millis(500);

fn is_default_half_life(d: &Duration) -> bool {
    *d == STALL_HALF_LIFE
}

impl Default for SlowLinkConfig {
    fn default() -> Self {
        SlowLinkConfig {
            ack_timeout_factor: 2,
            max_probe_interval: Duration::from_secs(2),
            paced_probe_cap: true,
            idle_link_skips: 1,
            resolution: ResolutionStepConfig::default(),
            silence_weight: 0.0,
            silence_jitter_factor: 4,
            ack_stall: AckStall::Probe,
            stall_half_life: STALL_HALF_LIFE,
            max_drain_frames: MAX_DRAIN_FRAMES,
        }
    }
}

/// The resolution step of the slow-link rules (`[slow_link.resolution]`; see
/// [`crate::resolution`]): where even the coarsest frame at the current size takes longer
/// than the delay target to cross the link at the estimated rate, for `step_down_after`
/// without a break, the sender codes the picture at half the width and height (a keyframe at
/// the new size; the receiver's picture is scaled up for display). It steps back up when a
/// frame at the larger size (predicted as the coarsest frame now, times the area ratio 4)
/// would cross in `1 / step_up_margin` of the delay target, for `step_up_after` without a
/// break. Only in [`SenderMode::Salsify`].
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
    /// Measure the fit against the camera's frame interval when it is shorter than the delay
    /// target: the coarsest frames "fit" only if the link carries them at the camera's rate,
    /// so a size whose coarsest stream alone outruns the link is left sooner. Default false:
    /// measured (640x360@30 synthetic, 120 s, seed 1, on against off) it trades quality for
    /// delay — fade 828 / 4603 ms at 13.32 dB (off: 997 / 5800, 13.91), 3g 137 / 406 at 8.13
    /// (154 / 529, 8.48), EV-DO 263 / 1027 at 7.17 (272 / 1021, 7.73), LTE unchanged.
    /// Written out only when set, so runs without it keep their ids.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_frame_interval: bool,
}

impl Default for ResolutionStepConfig {
    fn default() -> Self {
        ResolutionStepConfig {
            enabled: true,
            max_halvings: 1,
            step_down_after: Duration::from_secs(1),
            step_up_after: Duration::from_secs(1),
            step_up_margin: 2.0,
            within_frame_interval: false,
        }
    }
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
    /// `min(2 ms, tau / 5)`: 5x faster than the link, with no floor. The original's floor of
    /// 0.5 ms ([`PacingConfig::original`]) capped sending at 22 Mb/s: on a faster link the
    /// receiver then measured the pacer instead of the link, and the budget let the sender
    /// queue 100 ms of frames in its own pacer.
    fn default() -> Self {
        PacingConfig {
            speedup: 5,
            min_gap: Duration::ZERO,
            max_gap: Duration::from_millis(2),
        }
    }
}

impl PacingConfig {
    /// The original's `min(2 ms, max(0.5 ms, tau / 5))`: the pacing of the `salsify-paper`
    /// and first-round schemes.
    pub fn original() -> Self {
        PacingConfig {
            min_gap: Duration::from_micros(500),
            ..PacingConfig::default()
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
    /// Which rules govern forced sends and outages. Default [`SenderRules::SlowLink`].
    pub rules: SenderRules,
    /// Parameters of [`SenderRules::SlowLink`] (ignored under the other rules).
    pub slow_link: SlowLinkConfig,
    /// Keeping a picture's encodes within the frame interval ([`crate::encode_time`]).
    pub encode_time: EncodeTimeConfig,
    /// Salsify or an ablation.
    pub mode: SenderMode,
    /// Where the budget comes from (see [`crate::delivery`]): `"forecast"` (default: the
    /// receiver's Sprout forecast of what the link delivers within `d` of the last ACK, at the
    /// receiver's confidence, less what is in flight; the receiver forecasts for such a
    /// sender) or `"ewma"` (the paper's `MTU x (d / tau - N)` from the inter-arrival EWMA,
    /// the default before issue 35: more quality, more delay). Measured on the shared LTE
    /// traces at d 100 (`results/delay-default`): 33-48% less p95 and 29-37% less mean delay
    /// than the EWMA for 0.8-1.7 dB of SSIM; at equal SSIM, 25% less p95 on Verizon and level
    /// with the EWMA's lower `d` on T-Mobile. Always written out (the default changed: an
    /// experiment file says which it ran).
    pub budget: BudgetSource,
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
            rules: SenderRules::SlowLink,
            slow_link: SlowLinkConfig::default(),
            encode_time: EncodeTimeConfig::default(),
            mode: SenderMode::Salsify,
            budget: BudgetSource::Forecast,
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
        if p.speedup == 0 {
            return invalid("pacing.speedup", "must be positive");
        }
        if p.min_gap > p.max_gap {
            return invalid("pacing.min_gap_ms", "above pacing.max_gap_ms");
        }
        let sl = &self.slow_link;
        if sl.ack_timeout_factor == 0 {
            return invalid("slow_link.ack_timeout_factor", "must be positive");
        }
        if sl.max_probe_interval < self.outage_probe_interval {
            return invalid(
                "slow_link.max_probe_interval_ms",
                "below outage_probe_interval_ms",
            );
        }
        if !(0.0..=1.0).contains(&sl.silence_weight) {
            return invalid("slow_link.silence_weight", "must be 0..=1");
        }
        if sl.stall_half_life.is_zero() {
            return invalid("slow_link.stall_half_life_ms", "must be positive");
        }
        let r = &sl.resolution;
        if r.max_halvings > 4 {
            return invalid("slow_link.resolution.max_halvings", "must be 0..=4");
        }
        if !(r.step_up_margin.is_finite() && r.step_up_margin >= 1.0) {
            return invalid("slow_link.resolution.step_up_margin", "must be at least 1");
        }
        self.encode_time.validate()?;
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
    /// Estimate tau per full-size datagram (an EWMA of sizes beside the EWMA of gaps; see
    /// [`crate::estimator`]), not per datagram whatever its size. Default true; the
    /// `salsify-paper` scheme uses the paper's plain per-packet mean.
    pub size_aware_estimate: bool,
    /// Estimate tau over the last this many milliseconds of arrivals rather than as a
    /// per-packet EWMA (see [`crate::estimator`]; `ewma_alpha` then unused; always per
    /// full-size datagram). Default 0: the EWMA. Measured on the first 75 s of the shared LTE
    /// traces (synthetic 640x360 at 60 fps, 200 ms window, `d` 75-150 ms against the EWMA's
    /// 50-100 ms, read at equal SSIM): 10-22% less p95 delay on Verizon, about 4% more on
    /// T-Mobile; not the default. On the whole LTE traces at `d` 100 it takes 12-37% off the
    /// p95 for 0.3-0.9 dB of SSIM. On slow links a bare window of time held one or two
    /// packets and let the sender queue seconds (slow suite, 640x360 at 30 fps: p95 529 ->
    /// 6469 ms on the 3g preset, 1021 -> 11913 ms on Verizon EV-DO); it now keeps at least ten
    /// samples (3g +7%, EV-DO +2% against the EWMA), but the fade, cliff and dropout links
    /// still lose 12-63% of p95 (`results/frontier-lte/README.md`, "Where the tail is").
    #[serde(
        rename = "estimate_window_ms",
        with = "millis",
        skip_serializing_if = "Duration::is_zero"
    )]
    pub estimate_window: Duration,
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
    /// anyway, see [`crate::state_store::StateStore::insert_keeping`]). One state is one reference
    /// picture, 1.4 MB at 720p. Default 48: `states_behind` and the newest 16.
    pub max_states: usize,
    /// How many of the newest held states each ACK lists. Default 8.
    pub acked_states: usize,
    /// Forecast the link and send the forecast on ACKs (see [`crate::link_forecast`]), for a
    /// sender that budgets with it (`[salsify] budget = "forecast"`). Default false (ACKs as
    /// they were); the schemes turn it on when their sender budgets with the forecast.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub link_forecast: bool,
    /// Sprout's model and forecast parameters for `link_forecast` (`[salsify_receiver.forecast]`):
    /// by default Sprout's 20 ms ticks and 8 ticks ahead at 75% confidence
    /// ([`ReceiverConfig::default_forecast`]). A table replaces it whole: a field it leaves
    /// out takes Sprout's own default (95% confidence).
    #[serde(skip_serializing_if = "is_default_forecast")]
    pub forecast: salsify_sprout::ForecastConfig,
}

fn is_default_forecast(f: &salsify_sprout::ForecastConfig) -> bool {
    *f == ReceiverConfig::default_forecast()
}

impl ReceiverConfig {
    /// The forecast Salsify's budget reads: Sprout's model and ticks, at 75% confidence
    /// rather than Sprout's 95%. Sprout keeps a window of packets in flight and needs the
    /// cautious quantile; a budget that counts whole frames against what is in flight loses
    /// quality for no delay at 95% (shared LTE traces, 640x360 at 60 fps, d 100-150: at equal
    /// SSIM, 75% has 7-13% less p95; 50% about the same as 75%).
    pub fn default_forecast() -> salsify_sprout::ForecastConfig {
        salsify_sprout::ForecastConfig {
            confidence: 0.75,
            ..salsify_sprout::ForecastConfig::default()
        }
    }
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            connection_id: None,
            ewma_alpha: 0.1,
            size_aware_estimate: true,
            estimate_window: Duration::ZERO,
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
    /// receiver of the `salsify-paper` and `*-project` schemes.
    pub fn first_round(self) -> Self {
        ReceiverConfig {
            size_aware_estimate: false,
            estimate_window: Duration::ZERO,
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

    /// The field a TOML text's `validate()` error names.
    fn refused_field(text: &str) -> &'static str {
        let config: SenderConfig = toml::from_str(text).unwrap();
        match config.validate() {
            Err(ConfigError::Invalid { field, .. }) => field,
            Ok(()) => panic!("{text:?} accepted"),
        }
    }

    #[test]
    fn out_of_range_values_are_refused_naming_the_field_as_written() {
        assert_eq!(refused_field("fragment_payload = 0"), "fragment_payload");
        assert_eq!(refused_field("fragment_payload = 1459"), "fragment_payload");
        assert_eq!(refused_field("delay_target_ms = 0.0"), "delay_target_ms");
        assert_eq!(refused_field("outage_timeout_ms = 0"), "outage_timeout_ms");
        assert_eq!(
            refused_field("min_quality = 100\nmax_quality = 90"),
            "min_quality"
        );
        assert_eq!(refused_field("start_quality = 2"), "start_quality");
        assert_eq!(refused_field("max_states = 0"), "max_states");
        assert_eq!(
            refused_field("[slow_link]\nack_timeout_factor = 0"),
            "slow_link.ack_timeout_factor"
        );
        assert_eq!(
            refused_field("[slow_link]\nmax_probe_interval_ms = 50"),
            "slow_link.max_probe_interval_ms"
        );
        assert_eq!(
            refused_field("[slow_link.resolution]\nstep_up_margin = 0.5"),
            "slow_link.resolution.step_up_margin"
        );
        assert_eq!(
            refused_field("[slow_link.resolution]\nmax_halvings = 5"),
            "slow_link.resolution.max_halvings"
        );
        assert_eq!(refused_field("[pacing]\nspeedup = 0"), "pacing.speedup");
        assert_eq!(
            refused_field("[pacing]\nmin_gap_ms = 3.0"),
            "pacing.min_gap_ms"
        );
        assert_eq!(
            refused_field("mode = { conventional-transport = { update_interval_ms = 0 } }"),
            "mode.update_interval_ms"
        );
        let err = refused_field("[pacing]\nspeedup = 0");
        let message = SenderConfig {
            pacing: PacingConfig {
                speedup: 0,
                ..PacingConfig::default()
            },
            ..SenderConfig::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(message.contains(err), "{message}");

        let receiver = |text: &str| match toml::from_str::<ReceiverConfig>(text).unwrap().validate()
        {
            Err(ConfigError::Invalid { field, .. }) => field,
            Ok(()) => panic!("{text:?} accepted"),
        };
        assert_eq!(receiver("ewma_alpha = 1.5"), "ewma_alpha");
        assert_eq!(receiver("ewma_alpha = 0.0"), "ewma_alpha");
        assert_eq!(receiver("max_pending_frames = 0"), "max_pending_frames");
        assert_eq!(receiver("acked_states = 0"), "acked_states");
    }

    #[test]
    fn values_that_cannot_be_read_are_refused_naming_the_field() {
        for (text, field) in [
            ("start_quality = 200", "start_quality"),
            ("max_quality = -1", "max_quality"),
            ("delay_target_ms = -5.0", "delay_target_ms"),
            ("recovery_duration_ms = nan", "recovery_duration_ms"),
            (
                "outage_probe_interval_ms = 1e12",
                "outage_probe_interval_ms",
            ),
            ("delay_target_ms = \"100\"", "delay_target_ms"),
            ("connection_id = 70000", "connection_id"),
            ("[pacing]\nmax_gap_ms = -1", "max_gap_ms"),
        ] {
            let err = toml::from_str::<SenderConfig>(text)
                .unwrap_err()
                .to_string();
            assert!(err.contains(field), "{text:?}: {err}");
        }
        let err = toml::from_str::<ReceiverConfig>("reorder_window_ms = -1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("reorder_window_ms"), "{err}");
    }

    #[test]
    fn unknown_fields_are_refused_by_name_at_every_level() {
        for (text, unknown) in [
            ("delay_target = 100", "delay_target"),
            ("[pacing]\nspeed = 3", "speed"),
            (
                "mode = { conventional-transport = { interval_ms = 5 } }",
                "interval_ms",
            ),
        ] {
            let err = toml::from_str::<SenderConfig>(text)
                .unwrap_err()
                .to_string();
            assert!(err.contains(unknown), "{text:?}: {err}");
        }
        let err = toml::from_str::<ReceiverConfig>("reorder_window = 10")
            .unwrap_err()
            .to_string();
        assert!(err.contains("reorder_window"), "{err}");
    }

    #[test]
    fn rules_read_as_names_and_slow_link_parameters_as_a_table() {
        let rules = |text: &str| toml::from_str::<SenderConfig>(text).map(|c| c.rules);
        assert_eq!(rules("").unwrap(), SenderRules::SlowLink);
        assert_eq!(rules("rules = \"project\"").unwrap(), SenderRules::Project);
        assert_eq!(rules("rules = \"paper\"").unwrap(), SenderRules::Paper);
        assert_eq!(
            rules("rules = \"slow-link\"").unwrap(),
            SenderRules::SlowLink
        );
        let err = rules("rules = \"fast\"").unwrap_err().to_string();
        assert!(err.contains("slow-link"), "lists the names: {err}");
        let c: SenderConfig = toml::from_str(
            "rules = \"slow-link\"\n[slow_link]\nack_timeout_factor = 3\nmax_probe_interval_ms = 500",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.slow_link,
            SlowLinkConfig {
                ack_timeout_factor: 3,
                max_probe_interval: Duration::from_millis(500),
                paced_probe_cap: true,
                idle_link_skips: 1,
                resolution: ResolutionStepConfig::default(),
                silence_weight: 0.0,
                silence_jitter_factor: 4,
                ack_stall: AckStall::Probe,
                stall_half_life: STALL_HALF_LIFE,
                max_drain_frames: MAX_DRAIN_FRAMES,
            }
        );
        let c: SenderConfig = toml::from_str(
            "[slow_link.resolution]\nenabled = false\nmax_halvings = 2\nstep_down_after_ms = 500",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.slow_link.resolution,
            ResolutionStepConfig {
                enabled: false,
                max_halvings: 2,
                step_down_after: Duration::from_millis(500),
                ..ResolutionStepConfig::default()
            }
        );
        let err = toml::from_str::<SenderConfig>("[slow_link]\nfactor = 3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("factor"), "{err}");
    }

    #[test]
    fn modes_read_as_names_or_one_key_tables() {
        let mode =
            |text: &str| toml::from_str::<SenderConfig>(&format!("mode = {text}")).map(|c| c.mode);
        assert_eq!(mode("\"salsify\"").unwrap(), SenderMode::Salsify);
        assert_eq!(
            mode("\"conventional-codec\"").unwrap(),
            SenderMode::ConventionalCodec
        );
        let paper = SenderMode::ConventionalTransport {
            update_interval: Duration::from_secs(1),
        };
        assert_eq!(mode("\"conventional-transport\"").unwrap(), paper);
        assert_eq!(mode("{ conventional-transport = {} }").unwrap(), paper);
        assert_eq!(
            mode("{ conventional-transport = { update_interval_ms = 250.5 } }").unwrap(),
            SenderMode::ConventionalTransport {
                update_interval: Duration::from_micros(250_500)
            }
        );
        for bad in [
            "\"webrtc\"",
            "\"Salsify\"",
            "{ salsify = {} }",
            "{ webrtc = {} }",
            "{}",
            "{ conventional-transport = {}, conventional-codec = {} }",
            "3",
        ] {
            let err = mode(bad).unwrap_err().to_string();
            assert!(err.contains("mode"), "{bad}: {err}");
        }
        let err = mode("\"webrtc\"").unwrap_err().to_string();
        assert!(
            err.contains("conventional-transport"),
            "lists the names: {err}"
        );
    }

    #[test]
    fn every_field_survives_a_toml_round_trip() {
        let sender = SenderConfig {
            connection_id: 7,
            fragment_payload: 1000,
            delay_target: Duration::from_micros(62_500),
            start_quality: Quality::new(50).unwrap(),
            better_step: 9,
            worse_step: 11,
            min_quality: Quality::new(10).unwrap(),
            max_quality: Quality::new(120).unwrap(),
            max_consecutive_skips: 3,
            recovery_duration: Duration::from_secs(2),
            outage_timeout: Duration::from_millis(300),
            outage_probe_interval: Duration::from_micros(66_667),
            pacing: PacingConfig {
                speedup: 4,
                min_gap: Duration::from_micros(250),
                max_gap: Duration::from_micros(1_500),
            },
            max_states: 32,
            grace_period: false,
            rules: SenderRules::Project,
            slow_link: SlowLinkConfig {
                ack_timeout_factor: 3,
                max_probe_interval: Duration::from_micros(1_500_500),
                paced_probe_cap: true,
                idle_link_skips: 3,
                resolution: ResolutionStepConfig {
                    enabled: false,
                    max_halvings: 2,
                    step_down_after: Duration::from_millis(700),
                    step_up_after: Duration::from_millis(2_500),
                    step_up_margin: 3.0,
                    within_frame_interval: false,
                },
                silence_weight: 0.25,
                silence_jitter_factor: 2,
                ack_stall: AckStall::Drain,
                stall_half_life: Duration::from_millis(750),
                max_drain_frames: 10,
            },
            encode_time: EncodeTimeConfig {
                enabled: false,
                share: 0.5,
                relax: 0.25,
                step: 2,
                weight: 0.125,
                min_jobs: 3,
                min_byte_share: 0.2,
                single_encode_after: 12,
                single_encode_margin: 2.5,
            },
            mode: SenderMode::ConventionalTransport {
                update_interval: Duration::from_millis(750),
            },
            budget: BudgetSource::Forecast,
        };
        sender.validate().unwrap();
        let text = toml::to_string(&sender).unwrap();
        assert_eq!(
            toml::from_str::<SenderConfig>(&text).unwrap(),
            sender,
            "{text}"
        );
        for mode in [SenderMode::Salsify, SenderMode::ConventionalCodec] {
            let c = SenderConfig {
                mode,
                ..SenderConfig::default()
            };
            let text = toml::to_string(&c).unwrap();
            assert_eq!(toml::from_str::<SenderConfig>(&text).unwrap(), c, "{text}");
        }

        let receiver = ReceiverConfig {
            connection_id: Some(7),
            ewma_alpha: 0.25,
            size_aware_estimate: false,
            estimate_window: Duration::from_millis(150),
            states_behind: 3,
            reorder_window: Duration::from_micros(12_345),
            max_pending_frames: 8,
            max_states: 4,
            acked_states: 2,
            link_forecast: true,
            forecast: salsify_sprout::ForecastConfig {
                confidence: 0.5,
                ..Default::default()
            },
        };
        let text = toml::to_string(&receiver).unwrap();
        assert_eq!(
            toml::from_str::<ReceiverConfig>(&text).unwrap(),
            receiver,
            "{text}"
        );

        // The defaults read from an empty table, and write human units.
        assert_eq!(
            toml::from_str::<SenderConfig>("").unwrap(),
            SenderConfig::default()
        );
        let text = toml::to_string(&SenderConfig::default()).unwrap();
        for line in [
            "outage_probe_interval_ms = 80.0",
            "min_gap_ms = 0.0",
            "start_quality = 64",
            "share = 0.75",
            "mode = \"salsify\"",
            "rules = \"slow-link\"",
            "ack_timeout_factor = 2",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
