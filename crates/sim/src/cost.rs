//! How long encoding and decoding take in virtual time.
//!
//! The simulator runs the real codec, but charges a modelled time for it, so results do not
//! depend on how fast or busy the machine running the simulation is.

use salsify_codec::FunctionalCodec;
use salsify_schemes::Work;
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

/// A cost that cannot be charged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} = {value} must be a finite non-negative number")]
pub struct CostError {
    /// The field at fault.
    pub field: &'static str,
    /// Its value.
    pub value: f64,
}

/// A cost proportional to picture area.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Microseconds per encode per megapixel.
    pub encode_us_per_megapixel: f64,
    /// Microseconds per decode per megapixel.
    pub decode_us_per_megapixel: f64,
    /// Microseconds per kilobyte coded, on top of the per-area cost: finer quantizers code
    /// more and take longer (`salsify bench codec` prints this machine's fit). Default 0: the
    /// area-only model every result so far was simulated with (and then left out when
    /// written, so experiments and their run ids stay as they were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub encode_us_per_kilobyte: f64,
    /// Each encode job takes up to this many microseconds longer, drawn uniformly per picture
    /// (deterministic: a hash of the picture number). A real encoder's time varies with the
    /// content and the machine's scheduling, and libwebrtc's encoder bitrate adjuster reads
    /// that timing: with none, the simulated conventional scheme's adjuster saw a perfectly
    /// regular encoder and kept about twice the rate its live twin did. Default 0 (every
    /// result so far), left out when written so experiments and their run ids stay as they
    /// were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub encode_jitter_us: f64,
    /// One datagram in [`LATE_ONE_IN`] (drawn by its number, deterministic) reaches the
    /// receiver up to this many microseconds after the link delivered it, uniformly; the
    /// ones behind it wait for it (the order is kept). It models the live relay's own
    /// lateness: on a busy 2-core machine 1% of datagrams left it 1.1-2.8 ms late
    /// (`relay.csv`), which a receiver stamps as queueing and GoogCC reads as congestion.
    /// Default 0, left out when written so experiments and their run ids stay as they were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub receive_lateness_us: f64,
    /// Microseconds per AV1 encode per megapixel, charged instead of
    /// `encode_us_per_megapixel` for a scheme on AV1 (`[salsify] codec = "av1"`). Default
    /// [`AV1_ENCODE_US_PER_MEGAPIXEL`], left out when written at it.
    #[serde(
        default = "av1_encode_default",
        skip_serializing_if = "is_av1_encode_default"
    )]
    pub av1_encode_us_per_megapixel: f64,
    /// Microseconds per AV1 decode per megapixel (as `av1_encode_us_per_megapixel`).
    /// Default [`AV1_DECODE_US_PER_MEGAPIXEL`], left out when written at it.
    #[serde(
        default = "av1_decode_default",
        skip_serializing_if = "is_av1_decode_default"
    )]
    pub av1_decode_us_per_megapixel: f64,
}

/// libaom AV1 at cpu-used 10 costs 3.67 times VP8's encode at -8: thread CPU time per encode
/// over the same 120 frames of the 640x360 clip at the middle of each codec's scale (5.72 ms
/// at aq32 against 1.56 ms at q64, results/av1/codec-bench.md); VP8's default scaled by it.
/// The fits of `salsify bench codec` on that machine agree (60 113 against 16 304 us per
/// megapixel: 3.69 times).
pub const AV1_ENCODE_US_PER_MEGAPIXEL: f64 = 41_800.0;

/// libaom's decode (with the state load, read-back and hash) costs 5.3 times libvpx's at
/// 720p (medians 6.9 against 1.3 ms, results/av1/codec-bench.md; 6.5 times at 640x360);
/// VP8's default scaled by the 720p ratio, the size VP8's default was measured at.
pub const AV1_DECODE_US_PER_MEGAPIXEL: f64 = 15_900.0;

fn av1_encode_default() -> f64 {
    AV1_ENCODE_US_PER_MEGAPIXEL
}

fn av1_decode_default() -> f64 {
    AV1_DECODE_US_PER_MEGAPIXEL
}

fn is_av1_encode_default(value: &f64) -> bool {
    *value == AV1_ENCODE_US_PER_MEGAPIXEL
}

fn is_av1_decode_default(value: &f64) -> bool {
    *value == AV1_DECODE_US_PER_MEGAPIXEL
}

/// One datagram in this many is late by up to [`CostModel::receive_lateness_us`].
pub const LATE_ONE_IN: u64 = 50;

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

impl Default for CostModel {
    /// About 10.5 ms per 1280x720 encode and 2.8 ms per decode: libvpx VP8 at cpu-used -8
    /// on one core of this project's 2-core reference VM, FourPeople at q47..q88
    /// (`salsify bench codec --input FourPeople_1280x720_60.mp4`).
    fn default() -> Self {
        CostModel {
            encode_us_per_megapixel: 11_400.0,
            decode_us_per_megapixel: 3_000.0,
            encode_us_per_kilobyte: 0.0,
            encode_jitter_us: 0.0,
            receive_lateness_us: 0.0,
            av1_encode_us_per_megapixel: AV1_ENCODE_US_PER_MEGAPIXEL,
            av1_decode_us_per_megapixel: AV1_DECODE_US_PER_MEGAPIXEL,
        }
    }
}

impl CostModel {
    /// The model charging `codec`'s encode and decode: itself for VP8, its AV1 costs in
    /// place of the per-area ones for AV1.
    pub fn for_codec(&self, codec: FunctionalCodec) -> CostModel {
        match codec {
            FunctionalCodec::Vp8 => *self,
            FunctionalCodec::Av1 => CostModel {
                encode_us_per_megapixel: self.av1_encode_us_per_megapixel,
                decode_us_per_megapixel: self.av1_decode_us_per_megapixel,
                ..*self
            },
        }
    }

    /// One encode of a `width` x `height` picture.
    pub fn encode(&self, width: u32, height: u32) -> Duration {
        scaled(self.encode_us_per_megapixel, width, height)
    }

    /// One decode of a `width` x `height` picture.
    pub fn decode(&self, width: u32, height: u32) -> Duration {
        scaled(self.decode_us_per_megapixel, width, height)
    }

    /// The modelled time of an encode job's work: encodes that ran in parallel overlap two
    /// at a time; prediction work counts in full-size-encode equivalents.
    pub fn encode_time(&self, work: &Work) -> Duration {
        match *work {
            Work::Encodes {
                count,
                parallel,
                width,
                height,
            } => {
                let one = self.encode(width, height);
                if parallel {
                    one * count.div_ceil(2)
                } else {
                    one * count
                }
            }
            Work::Equivalents {
                count,
                width,
                height,
            } => self.encode(width, height).mul_f64(count),
        }
    }

    /// The time of coding `bytes` one after the other (see
    /// [`salsify_schemes::Executed::serial_bytes`]), beyond the per-area cost.
    pub fn coding_time(&self, bytes: usize) -> Duration {
        let us = self.encode_us_per_kilobyte * bytes as f64 / 1000.0;
        Duration::from_micros(us.round() as u64)
    }

    /// The extra time of the encode job for `picture` (see [`Self::encode_jitter_us`]).
    pub fn encode_jitter(&self, picture: u64) -> Duration {
        if self.encode_jitter_us <= 0.0 {
            return Duration::ZERO;
        }
        up_to(self.encode_jitter_us, splitmix64(picture))
    }

    /// How late the `datagram`-th datagram the link delivers reaches the receiver (see
    /// [`Self::receive_lateness_us`]).
    pub fn receive_lateness(&self, datagram: u64) -> Duration {
        if self.receive_lateness_us <= 0.0 {
            return Duration::ZERO;
        }
        let draw = splitmix64(datagram ^ 0x1a7e_d47a);
        if !draw.is_multiple_of(LATE_ONE_IN) {
            return Duration::ZERO;
        }
        up_to(self.receive_lateness_us, splitmix64(draw))
    }

    /// Checks that every cost is finite and not negative.
    pub fn validate(&self) -> Result<(), CostError> {
        for (field, value) in [
            ("encode_us_per_megapixel", self.encode_us_per_megapixel),
            ("decode_us_per_megapixel", self.decode_us_per_megapixel),
            ("encode_us_per_kilobyte", self.encode_us_per_kilobyte),
            ("encode_jitter_us", self.encode_jitter_us),
            ("receive_lateness_us", self.receive_lateness_us),
            (
                "av1_encode_us_per_megapixel",
                self.av1_encode_us_per_megapixel,
            ),
            (
                "av1_decode_us_per_megapixel",
                self.av1_decode_us_per_megapixel,
            ),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(CostError { field, value });
            }
        }
        Ok(())
    }
}

/// A duration uniform in [0, `bound_us`] µs, chosen by the hash `draw`.
fn up_to(bound_us: f64, draw: u64) -> Duration {
    let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
    Duration::from_micros((bound_us * unit).round() as u64)
}

/// A well-mixed 64-bit hash (SplitMix64's finaliser): the same picture, the same draw.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn scaled(us_per_mp: f64, width: u32, height: u32) -> Duration {
    let mp = f64::from(width) * f64::from(height) / 1e6;
    Duration::from_micros((us_per_mp * mp).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AV1's costs replace the per-area ones for a scheme on AV1, and are left out of a
    /// written model at their defaults (experiments before issue 47 keep their run ids).
    #[test]
    fn av1_is_charged_its_own_costs() {
        let m = CostModel::default();
        assert_eq!(m.for_codec(FunctionalCodec::Vp8), m);
        let av1 = m.for_codec(FunctionalCodec::Av1);
        assert!(av1.encode(640, 360) > m.encode(640, 360) * 3);
        assert!(av1.decode(640, 360) > m.decode(640, 360) * 5);
        let text = toml::to_string(&m).unwrap();
        assert!(!text.contains("av1"), "{text}");
        let read: CostModel = toml::from_str(&text).unwrap();
        assert_eq!(read, m);
    }

    #[test]
    fn encode_jitter_is_bounded_repeatable_and_off_by_default() {
        let none = CostModel::default();
        assert_eq!(none.encode_jitter(7), Duration::ZERO);
        let m = CostModel {
            encode_jitter_us: 6000.0,
            ..CostModel::default()
        };
        let draws: Vec<Duration> = (0..1000).map(|p| m.encode_jitter(p)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_micros(6000)));
        assert_eq!(draws[3], m.encode_jitter(3));
        let mean = draws.iter().map(|d| d.as_secs_f64()).sum::<f64>() / 1000.0;
        assert!((mean - 0.003).abs() < 0.0003, "{mean}");
        assert!(CostModel {
            encode_jitter_us: f64::NAN,
            ..CostModel::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn receive_lateness_hits_one_datagram_in_fifty_within_its_bound() {
        assert_eq!(CostModel::default().receive_lateness(0), Duration::ZERO);
        let m = CostModel {
            receive_lateness_us: 3000.0,
            ..CostModel::default()
        };
        let draws: Vec<Duration> = (0..100_000).map(|d| m.receive_lateness(d)).collect();
        let late = draws.iter().filter(|d| !d.is_zero()).count();
        assert!((1600..2400).contains(&late), "{late}");
        assert!(draws.iter().all(|d| *d <= Duration::from_micros(3000)));
        assert_eq!(draws[77], m.receive_lateness(77));
        assert!(CostModel {
            receive_lateness_us: -1.0,
            ..CostModel::default()
        }
        .validate()
        .is_err());
    }

    #[test]
    fn cost_scales_with_area() {
        let m = CostModel {
            encode_us_per_megapixel: 1000.0,
            decode_us_per_megapixel: 500.0,
            encode_us_per_kilobyte: 100.0,
            encode_jitter_us: 0.0,
            receive_lateness_us: 0.0,
            ..CostModel::default()
        };
        assert_eq!(m.coding_time(25_000), Duration::from_micros(2500));
        assert_eq!(m.encode(1000, 1000), Duration::from_millis(1));
        assert_eq!(m.decode(2000, 1000), Duration::from_millis(1));
        assert!(CostModel {
            encode_us_per_megapixel: -1.0,
            ..m
        }
        .validate()
        .is_err());
    }

    #[test]
    fn serial_time_adds_parallel_time_overlaps() {
        let cost = CostModel {
            encode_us_per_megapixel: 1000.0,
            decode_us_per_megapixel: 0.0,
            encode_us_per_kilobyte: 0.0,
            encode_jitter_us: 0.0,
            receive_lateness_us: 0.0,
            ..CostModel::default()
        };
        let one = Duration::from_millis(1);
        let encodes = |count, parallel| Work::Encodes {
            count,
            parallel,
            width: 1000,
            height: 1000,
        };
        assert_eq!(cost.encode_time(&encodes(2, false)), one * 2);
        assert_eq!(cost.encode_time(&encodes(2, true)), one);
        assert_eq!(cost.encode_time(&encodes(1, true)), one);
        let predicted = Work::Equivalents {
            count: 1.5,
            width: 1000,
            height: 1000,
        };
        assert_eq!(cost.encode_time(&predicted), Duration::from_micros(1500));
    }
}
