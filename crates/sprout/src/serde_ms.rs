//! Durations as (fractional) milliseconds in experiment files.

use salsify_time::Duration;
use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let ms = f64::deserialize(d)?;
    if !(ms.is_finite() && (0.0..=1e9).contains(&ms)) {
        return Err(serde::de::Error::custom(format!(
            "{ms} ms is not a duration (0 to 1e9 ms)"
        )));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}
