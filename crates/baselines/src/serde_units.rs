//! Units in experiment files: durations as milliseconds (fields ending `_ms`) and bit rates
//! as kb/s (fields ending `_kbps`), each an integer or a decimal number. Use with
//! `#[serde(with = "...")]`; whole values are written as integers.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

/// A non-negative, finite number from TOML (integer or float).
struct NonNegative(&'static str);

impl Visitor<'_> for NonNegative {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a non-negative number of {}", self.0)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        if v < 0 {
            return Err(E::invalid_value(de::Unexpected::Signed(v), &self));
        }
        Ok(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        if !(v.is_finite() && v >= 0.0) {
            return Err(E::invalid_value(de::Unexpected::Float(v), &self));
        }
        Ok(v)
    }
}

/// Writes `value` / `per` as an integer when whole, else as a float.
fn write_scaled<S: Serializer>(value: u64, per: u64, s: S) -> Result<S::Ok, S::Error> {
    if value.is_multiple_of(per) {
        s.serialize_u64(value / per)
    } else {
        s.serialize_f64(value as f64 / per as f64)
    }
}

/// A [`salsify_time::Duration`] as milliseconds (microsecond precision).
pub mod millis {
    use super::*;
    use salsify_time::Duration;

    /// Writes milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        write_scaled(us, 1000, s)
    }

    /// Reads milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = d.deserialize_any(NonNegative("milliseconds"))?;
        let us = (ms * 1000.0).round();
        if us >= u64::MAX as f64 {
            return Err(de::Error::custom(format!("{ms} ms is too long")));
        }
        Ok(Duration::from_micros(us as u64))
    }
}

/// An optional [`salsify_time::Duration`] as milliseconds, `0` meaning `None`.
pub mod opt_millis {
    use super::*;
    use salsify_time::Duration;

    /// Writes milliseconds (`None`: 0).
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        super::millis::serialize(&d.unwrap_or(Duration::ZERO), s)
    }

    /// Reads milliseconds (0: `None`).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let d = super::millis::deserialize(d)?;
        Ok((!d.is_zero()).then_some(d))
    }
}

/// A [`salsify_time::Bitrate`] as kb/s (b/s precision).
pub mod kbps {
    use super::*;
    use salsify_time::Bitrate;

    /// Writes kb/s.
    pub fn serialize<S: Serializer>(b: &Bitrate, s: S) -> Result<S::Ok, S::Error> {
        write_scaled(b.as_bps(), 1000, s)
    }

    /// Reads kb/s.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bitrate, D::Error> {
        let kbps = d.deserialize_any(NonNegative("kb/s"))?;
        let bps = (kbps * 1000.0).round();
        if bps >= u64::MAX as f64 {
            return Err(de::Error::custom(format!("{kbps} kb/s is too high")));
        }
        Ok(Bitrate::bps(bps as u64))
    }
}

/// An optional [`salsify_time::Bitrate`] as kb/s, `0` meaning `None` (no limit).
pub mod opt_kbps {
    use super::*;
    use salsify_time::Bitrate;

    /// Writes kb/s (`None`: 0).
    pub fn serialize<S: Serializer>(b: &Option<Bitrate>, s: S) -> Result<S::Ok, S::Error> {
        super::kbps::serialize(&b.unwrap_or(Bitrate::ZERO), s)
    }

    /// Reads kb/s (0: `None`).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bitrate>, D::Error> {
        let b = super::kbps::deserialize(d)?;
        Ok((b.as_bps() != 0).then_some(b))
    }
}
