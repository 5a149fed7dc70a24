//! How configuration values read and write in experiment files: durations as milliseconds
//! (a float, so `0.5` is 500 µs) and qualities as VP8 quantizer indices.

/// A `Duration` as milliseconds.
pub mod millis {
    use salsify_time::Duration;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes milliseconds, from whole microseconds (the crate's resolution) so that e.g.
    /// 500 µs writes exactly `0.5`.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(salsify_time::duration_micros(*d) as f64 / 1000.0)
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

/// A `Quality` as its quantizer index 0..=127.
pub mod quality {
    use salsify_codec::Quality;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    /// Writes the index.
    pub fn serialize<S: Serializer>(q: &Quality, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(q.index())
    }

    /// Reads an index 0..=127.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Quality, D::Error> {
        let i = u8::deserialize(d)?;
        Quality::new(i)
            .map_err(|_| D::Error::custom(format!("{i} is not a VP8 quantizer index (0..=127)")))
    }
}
