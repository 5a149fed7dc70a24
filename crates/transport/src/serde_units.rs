//! How qualities read and write in experiment files: as VP8 quantizer indices. Durations
//! follow the one rule of every crate, [`salsify_time::serde_units::millis`], named here too.

pub use salsify_time::serde_units::millis;

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
