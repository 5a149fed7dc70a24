//! A number written with a fixed count of decimals, for CSV files (`Fixed::<3>(12.5)` writes
//! `12.500`): the files keep one width per column, as they were always written, whatever the
//! writer.

use serde::{Serialize, Serializer};

/// `self.0` written with `DIGITS` decimals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed<const DIGITS: usize>(pub f64);

impl<const DIGITS: usize> Serialize for Fixed<DIGITS> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.*}", DIGITS, self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::Fixed;

    #[test]
    fn writes_the_stated_decimals() {
        assert_eq!(
            serde_json::to_string(&Fixed::<3>(12.5)).unwrap(),
            "\"12.500\""
        );
        assert_eq!(
            serde_json::to_string(&Fixed::<6>(0.1234567)).unwrap(),
            "\"0.123457\""
        );
        assert_eq!(serde_json::to_string(&Fixed::<0>(2.5)).unwrap(), "\"2\"");
    }
}
