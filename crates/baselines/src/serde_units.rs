//! How configuration values read and write in experiment files: durations as milliseconds
//! (a float) and bit rates as kb/s.

/// A `Duration` as milliseconds.
pub mod millis {
    use salsify_time::Duration;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    /// Reads milliseconds: finite, not negative, at most a day.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        if !(ms.is_finite() && (0.0..=86_400_000.0).contains(&ms)) {
            return Err(D::Error::custom(format!(
                "{ms} ms is not a duration in 0..=86400000 ms"
            )));
        }
        Ok(Duration::from_micros((ms * 1000.0).round() as u64))
    }
}

/// A `Bitrate` as kb/s.
pub mod kbps {
    use salsify_time::Bitrate;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes kb/s.
    pub fn serialize<S: Serializer>(r: &Bitrate, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(r.as_f64() / 1000.0)
    }

    /// Reads kb/s: finite, not negative.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bitrate, D::Error> {
        let kbps = f64::deserialize(d)?;
        if !(kbps.is_finite() && (0.0..=1e9).contains(&kbps)) {
            return Err(D::Error::custom(format!("{kbps} kb/s is not a bit rate")));
        }
        Ok(Bitrate::from_f64(kbps * 1000.0))
    }
}
