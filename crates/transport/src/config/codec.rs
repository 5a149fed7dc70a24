//! Which functional codec the sender asks for, and AV1's own quality options.
//!
//! The quality fields at the top of `[salsify]` (`start_quality`, `better_step`, ...) are on
//! VP8's scale, as every result before issue 47 was run. AV1's quantizer runs 0..=63 (libaom's
//! scale) and its bytes change about three times as fast per step, so a call on AV1 takes its
//! options from `[salsify.av1]` instead; `SenderConfig::for_codec` puts them in place.

use salsify_codec::{FunctionalCodec, Quality};
use serde::{de::Error, Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{invalid, ConfigError};
use crate::serde_units::quality;

/// The sender's quality options on AV1's quantizer scale (0..=63), measured with
/// `salsify bench codec --av1-cpu-used 10` on two clips (results/av1/README.md): each
/// matches VP8's default in the bytes of a frame. In the middle of the scales AV1's bytes
/// change by a factor of 1.065-1.08 a quantizer step where VP8's change by 1.024-1.027, so
/// VP8's steps of 17 and 23 (x1.5-1.6 finer, x0.55-0.6 coarser) are AV1's 6 and 8; VP8's
/// start 64 codes the bytes of AV1's 36. The finest, 5, was set in the simulator: there
/// Salsify-2c at 640x360 on the LTE traces sends its finest quantizer most of the time, and
/// VP8's 3 sent 2.1-2.5 Mb/s, AV1's 5 2.0-2.4 (AV1's 8: 1.5-1.7, 1: 2.5-5.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Av1Options {
    /// Quality of the first frame. Default 36 (the bytes of VP8's 64).
    #[serde(with = "quality")]
    pub start_quality: Quality,
    /// The better option is `last - better_step`. Default 6.
    pub better_step: u8,
    /// The worse option is `last + worse_step`. Default 8.
    pub worse_step: u8,
    /// Finest quantizer ever asked for. Default 5 (about the bytes of VP8's finest, 3: a
    /// finer floor spends a link's spare capacity on frames that take longer to cross it).
    #[serde(with = "quality")]
    pub min_quality: Quality,
    /// Coarsest quantizer ever asked for. Default 63.
    #[serde(with = "quality")]
    pub max_quality: Quality,
    /// Quantizer steps the encode-time floor moves coarser by (VP8's is
    /// `encode_time.step`). Default 1.
    pub encode_time_step: u8,
}

impl Default for Av1Options {
    fn default() -> Self {
        let q = |i| Quality::new(i).expect("constant below 64");
        Av1Options {
            start_quality: q(36),
            better_step: 6,
            worse_step: 8,
            min_quality: q(5),
            max_quality: q(63),
            encode_time_step: 1,
        }
    }
}

impl Av1Options {
    /// Left out of a written `[salsify]` table when at its defaults.
    pub(super) fn is_default(&self) -> bool {
        *self == Av1Options::default()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let top = FunctionalCodec::Av1.worst_quality();
        if self.max_quality > top {
            return invalid("av1.max_quality", "above 63, AV1's coarsest quantizer");
        }
        if self.min_quality > self.max_quality {
            return invalid("av1.min_quality", "above av1.max_quality");
        }
        if self.start_quality < self.min_quality || self.start_quality > self.max_quality {
            return invalid(
                "av1.start_quality",
                "outside av1.min_quality..=av1.max_quality",
            );
        }
        Ok(())
    }
}

/// `codec = "vp8" | "av1"`.
pub(super) mod codec_name {
    use super::*;

    /// Left out when VP8, so experiments from before issue 47 are written as they were.
    pub fn is_vp8(codec: &FunctionalCodec) -> bool {
        *codec == FunctionalCodec::Vp8
    }

    pub fn serialize<S: Serializer>(codec: &FunctionalCodec, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(codec.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FunctionalCodec, D::Error> {
        let name = String::deserialize(d)?;
        FunctionalCodec::from_name(&name)
            .ok_or_else(|| D::Error::custom(format!("unknown codec {name:?}: vp8 or av1")))
    }
}
