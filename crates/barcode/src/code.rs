//! The code word: a 24-bit frame id followed by a CRC-16 of it, 40 bits, most significant
//! first. CRC-16/IBM-3740 (CCITT, initial value 0xFFFF) detects every error of up to three
//! bits in a word this short, and neither the all-dark nor the all-bright band is a valid
//! word (tested), so a blank or saturated band never reads as a frame.

use crc::{Crc, CRC_16_IBM_3740};

use crate::error::BarcodeError;
pub use crate::format::{CHECK_BITS, ID_BITS, MAX_FRAME_ID, WORD_BITS};

const CHECK: Crc<u16> = Crc::<u16>::new(&CRC_16_IBM_3740);

/// A valid code word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeWord {
    id: u32,
}

impl CodeWord {
    /// The word for `frame_id`; an error above [`MAX_FRAME_ID`].
    pub fn new(frame_id: u64) -> Result<CodeWord, BarcodeError> {
        if frame_id > MAX_FRAME_ID {
            return Err(BarcodeError::IdTooLarge(frame_id));
        }
        Ok(CodeWord {
            id: frame_id as u32,
        })
    }

    /// The frame id carried.
    pub fn frame_id(self) -> u32 {
        self.id
    }

    /// The 40 bits, most significant first.
    pub fn bits(self) -> [bool; WORD_BITS] {
        let value = (u64::from(self.id) << CHECK_BITS) | u64::from(check_of(self.id));
        std::array::from_fn(|i| (value >> (WORD_BITS - 1 - i)) & 1 == 1)
    }

    /// The word these bits spell, if the check matches.
    pub fn from_bits(bits: &[bool; WORD_BITS]) -> Result<CodeWord, BarcodeError> {
        let value = bits.iter().fold(0u64, |v, &b| (v << 1) | u64::from(b));
        let id = (value >> CHECK_BITS) as u32;
        let check = (value & 0xFFFF) as u16;
        let expected = check_of(id);
        if check != expected {
            return Err(BarcodeError::Checksum {
                id,
                check,
                expected,
            });
        }
        Ok(CodeWord { id })
    }
}

fn check_of(id: u32) -> u16 {
    CHECK.checksum(&id.to_be_bytes()[1..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn uniform_bands_are_not_words() {
        assert!(CodeWord::from_bits(&[false; WORD_BITS]).is_err());
        assert!(CodeWord::from_bits(&[true; WORD_BITS]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(id in 0..=MAX_FRAME_ID) {
            let w = CodeWord::new(id).unwrap();
            prop_assert_eq!(CodeWord::from_bits(&w.bits()).unwrap().frame_id() as u64, id);
        }

        /// One, two or three flipped bits are always caught.
        #[test]
        fn few_bit_errors_are_caught(
            id in 0..=MAX_FRAME_ID,
            flips in proptest::collection::btree_set(0..WORD_BITS, 1..=3),
        ) {
            let mut bits = CodeWord::new(id).unwrap().bits();
            for f in flips {
                bits[f] = !bits[f];
            }
            prop_assert!(CodeWord::from_bits(&bits).is_err());
        }
    }
}
