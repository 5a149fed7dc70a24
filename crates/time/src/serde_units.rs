//! Units in experiment and configuration files, one rule for every crate: durations as
//! milliseconds (fields ending `_ms`) and bit rates as kb/s (fields ending `_kbps`), each an
//! integer or a decimal number (`min_gap_ms = 0.5` is 500 µs). Use with
//! `#[serde(with = "salsify_time::serde_units::millis")]`.
//!
//! Reading: a finite, non-negative number; durations at most a day ([`MAX_MILLIS`]), rounded
//! to whole microseconds, rates rounded to whole b/s. Writing: durations as a decimal number
//! of milliseconds (`100.0`, `0.5`), rates as an integer number of kb/s when whole, else a
//! decimal, so a value written and read back is the same value.

use serde::de::Error;
use serde::{Deserialize, Deserializer, Serializer};

/// The longest duration a file may give: one day, in milliseconds.
pub const MAX_MILLIS: f64 = 86_400_000.0;

/// A [`crate::Duration`] as milliseconds (microsecond precision, at most a day).
pub mod millis {
    use super::*;
    use crate::Duration;

    /// Writes milliseconds as a float, from whole microseconds so that e.g. 500 µs writes
    /// exactly `0.5`.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(crate::duration_micros(*d) as f64 / 1000.0)
    }

    /// Reads milliseconds: finite, not negative, at most a day.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        if !(ms.is_finite() && (0.0..=MAX_MILLIS).contains(&ms)) {
            return Err(D::Error::custom(format!(
                "{ms} ms is not a duration in 0..={MAX_MILLIS} ms"
            )));
        }
        Ok(Duration::from_micros((ms * 1000.0).round() as u64))
    }
}

/// An optional [`crate::Duration`] as milliseconds, `0` meaning `None`.
pub mod opt_millis {
    use super::*;
    use crate::Duration;

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

/// A [`crate::Bitrate`] as kb/s (b/s precision).
pub mod kbps {
    use super::*;
    use crate::Bitrate;

    /// Writes kb/s: an integer when whole, else a float.
    pub fn serialize<S: Serializer>(b: &Bitrate, s: S) -> Result<S::Ok, S::Error> {
        let bps = b.as_bps();
        if bps.is_multiple_of(1000) {
            s.serialize_u64(bps / 1000)
        } else {
            s.serialize_f64(bps as f64 / 1000.0)
        }
    }

    /// Reads kb/s: finite, not negative, below `u64::MAX` b/s.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bitrate, D::Error> {
        let kbps = f64::deserialize(d)?;
        if !(kbps.is_finite() && kbps >= 0.0) {
            return Err(D::Error::custom(format!(
                "{kbps} kb/s is not a non-negative bit rate"
            )));
        }
        let bps = (kbps * 1000.0).round();
        if bps >= u64::MAX as f64 {
            return Err(D::Error::custom(format!("{kbps} kb/s is too high")));
        }
        Ok(Bitrate::bps(bps as u64))
    }
}

/// An optional [`crate::Bitrate`] as kb/s, `0` meaning `None` (no limit).
pub mod opt_kbps {
    use super::*;
    use crate::Bitrate;

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

#[cfg(test)]
mod tests {
    use crate::{Bitrate, Duration};
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Units {
        #[serde(rename = "gap_ms", with = "super::millis")]
        gap: Duration,
        #[serde(rename = "limit_ms", with = "super::opt_millis")]
        limit: Option<Duration>,
        #[serde(rename = "rate_kbps", with = "super::kbps")]
        rate: Bitrate,
        #[serde(rename = "cap_kbps", with = "super::opt_kbps")]
        cap: Option<Bitrate>,
    }

    fn read(text: &str) -> Result<Units, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn integers_and_decimals_read_to_microseconds_and_bits() {
        let u =
            read(r#"{"gap_ms": 0.5, "limit_ms": 0, "rate_kbps": 1.5, "cap_kbps": 2000}"#).unwrap();
        assert_eq!(u.gap, Duration::from_micros(500));
        assert_eq!(u.limit, None);
        assert_eq!(u.rate, Bitrate::bps(1500));
        assert_eq!(u.cap, Some(Bitrate::bps(2_000_000)));
        let u = read(r#"{"gap_ms": 20, "limit_ms": 250, "rate_kbps": 0, "cap_kbps": 0}"#).unwrap();
        assert_eq!(u.gap, Duration::from_millis(20));
        assert_eq!(u.limit, Some(Duration::from_millis(250)));
        assert_eq!(u.cap, None);
    }

    #[test]
    fn durations_write_as_decimals_rates_as_integers_when_whole_and_read_back_the_same() {
        let u = Units {
            gap: Duration::from_micros(2500),
            limit: Some(Duration::from_millis(80)),
            rate: Bitrate::bps(300_000),
            cap: None,
        };
        let text = serde_json::to_string(&u).unwrap();
        assert_eq!(
            text,
            r#"{"gap_ms":2.5,"limit_ms":80.0,"rate_kbps":300,"cap_kbps":0}"#
        );
        assert_eq!(read(&text).unwrap(), u);
    }

    #[test]
    fn negative_non_finite_too_long_and_non_numbers_are_refused() {
        let with_gap = |gap: &str| {
            read(&format!(
                r#"{{"gap_ms": {gap}, "limit_ms": 0, "rate_kbps": 1, "cap_kbps": 0}}"#
            ))
        };
        assert!(with_gap("-1").unwrap_err().contains("not a duration"));
        assert!(with_gap("-0.5").unwrap_err().contains("not a duration"));
        assert!(with_gap("1e12").unwrap_err().contains("not a duration"));
        assert!(with_gap("86400000").is_ok());
        assert!(with_gap("86400000.5").is_err());
        assert!(with_gap("\"100\"").is_err());
        let with_rate = |rate: &str| {
            read(&format!(
                r#"{{"gap_ms": 1, "limit_ms": 0, "rate_kbps": {rate}, "cap_kbps": 0}}"#
            ))
        };
        assert!(with_rate("-5").unwrap_err().contains("not a non-negative"));
        assert!(with_rate("1e300").unwrap_err().contains("too high"));
    }
}
