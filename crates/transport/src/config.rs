//! Every tunable number of the sender and receiver, with the paper's defaults.
//!
//! Fields are public so an experiment can set them directly; `validate()` checks a
//! configuration before [`crate::Sender::new`] / [`crate::Receiver::new`] accept it.
//!
//! Experiment files set them as TOML tables (`[salsify]`, `[salsify_receiver]`): every field
//! may be left out (it keeps its default), an unknown field is an error, durations are
//! milliseconds in fields named `*_ms` (floats: `min_gap_ms = 0.5` is 500 µs) and qualities
//! are VP8 quantizer indices 0..=127 (AV1's, 0..=63, in `[salsify.av1]`: see `config/codec.rs`).
//! A `[salsify]` table with its defaults spelled out:
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
//! budget = "forecast"   # or "ewma" (the paper's MTU x (d / tau - N))
//! rules = "slow-link"   # outages and sizes paced by the link (see [slow_link] below),
//!                       # or "paper" (no outage handling, the paper's forced sends)
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

//!
//! One file per concern: `config/mode.rs` ([`SenderMode`]: Salsify or an ablation),
//! `config/slow_link.rs` ([`SenderRules`] and their parameters), `config/receiver.rs`
//! ([`ReceiverConfig`]), and here the sender's table ([`SenderConfig`]).
mod codec;
mod mode;
mod receiver;
mod slow_link;
#[cfg(test)]
mod tests;

use salsify_codec::{FunctionalCodec, Quality};
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::delivery::BudgetSource;
use crate::encode_time::EncodeTimeConfig;
use crate::error::invalid;
pub use crate::error::ConfigError;
use crate::serde_units::{millis, quality};
use crate::wire::MAX_PAYLOAD;

pub use codec::Av1Options;
pub use mode::SenderMode;
pub use receiver::ReceiverConfig;
pub use slow_link::{ResolutionStepConfig, SenderRules, SlowLinkConfig};

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
    /// scheme.
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
    /// Payload bytes per fragment: the "MTU" of the budget formula. Default 1400. The most a
    /// fragment carries: on a path that carries smaller datagrams (path MTU discovery, see
    /// [`crate::Sender::set_max_datagram`]) fragments and budget use the size that fits.
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
    /// Keeping a picture's encodes within the frame interval (`crate::encode_time`).
    pub encode_time: EncodeTimeConfig,
    /// Salsify or an ablation.
    pub mode: SenderMode,
    /// Where the budget comes from (see `crate::delivery`): `"forecast"` (default: the
    /// receiver's Sprout forecast of what the link delivers within `d` of the last ACK, at the
    /// receiver's confidence, less what is in flight; the receiver forecasts for such a
    /// sender) or `"ewma"` (the paper's `MTU x (d / tau - N)` from the inter-arrival EWMA,
    /// the default before issue 35: more quality, more delay). Measured on the shared LTE
    /// traces at d 100 (`results/delay-default`): 33-48% less p95 and 29-37% less mean delay
    /// than the EWMA for 0.8-1.7 dB of SSIM; at equal SSIM, 25% less p95 on Verizon and level
    /// with the EWMA's lower `d` on T-Mobile. Always written out (the default changed: an
    /// experiment file says which it ran).
    pub budget: BudgetSource,
    /// The functional codec: `"vp8"` (default, left out when written) or `"av1"`. On AV1 the
    /// quality options are `av1`'s, on AV1's quantizer scale.
    #[serde(
        with = "codec::codec_name",
        skip_serializing_if = "codec::codec_name::is_vp8"
    )]
    pub codec: FunctionalCodec,
    /// The quality options of a call on AV1 (`[salsify.av1]`; left out when at their
    /// defaults).
    #[serde(skip_serializing_if = "Av1Options::is_default")]
    pub av1: Av1Options,
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
            codec: FunctionalCodec::Vp8,
            av1: Av1Options::default(),
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
        let r = &sl.resolution;
        if r.max_halvings > 4 {
            return invalid("slow_link.resolution.max_halvings", "must be 0..=4");
        }
        if !(r.step_up_margin.is_finite() && r.step_up_margin >= 1.0) {
            return invalid("slow_link.resolution.step_up_margin", "must be at least 1");
        }
        self.encode_time.validate()?;
        self.av1.validate()?;
        if self.codec != FunctionalCodec::Vp8 && self.mode == SenderMode::ConventionalCodec {
            return invalid("codec", "the conventional-codec ablation runs on VP8 only");
        }
        if let SenderMode::ConventionalTransport { update_interval } = self.mode {
            if update_interval.is_zero() {
                return invalid("mode.update_interval_ms", "must be positive");
            }
        }
        Ok(())
    }
}

impl SenderConfig {
    /// This configuration with the quality options of its codec in the top-level fields the
    /// sender reads: unchanged for VP8, `[salsify.av1]`'s for AV1.
    pub fn for_codec(&self) -> SenderConfig {
        let mut config = self.clone();
        if self.codec == FunctionalCodec::Av1 {
            let a = self.av1;
            config.start_quality = a.start_quality;
            config.better_step = a.better_step;
            config.worse_step = a.worse_step;
            config.min_quality = a.min_quality;
            config.max_quality = a.max_quality;
            config.encode_time.step = a.encode_time_step;
        }
        config
    }
}
