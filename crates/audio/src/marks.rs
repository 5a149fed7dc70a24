//! The audio barcode: numbered timing marks that survive Opus and concealment, and their reader.
//!
//! A mark is a sync tone ([`SYNC_HZ`], [`SYNC`] long) whose onset is the mark's time, then
//! [`BITS`] bits of [`BIT`] each, a bit being one of two tones ([`ZERO_HZ`], [`ONE_HZ`]):
//! [`NUMBER_BITS`] bits of the mark's number, most significant first, and a 6-bit check
//! (CRC-6, polynomial x^6 + x + 1) so a bit concealment got wrong makes the mark unreadable
//! rather than wrong. Tones in the voice band survive Opus at voice bitrates; each bit is
//! read over the middle of its slot, away from the edges a codec smears.

/// The sync tone's frequency.
pub const SYNC_HZ: f64 = 2_800.0;
/// A zero bit's tone.
pub const ZERO_HZ: f64 = 1_000.0;
/// A one bit's tone.
pub const ONE_HZ: f64 = 1_600.0;
/// The sync tone's length in samples (40 ms at 48 kHz).
pub const SYNC: usize = 1_920;
/// One bit's length in samples (15 ms).
pub const BIT: usize = 720;
/// Bits of the number: marks 0 to 4095.
pub const NUMBER_BITS: u32 = 12;
/// Bits of the check.
const CHECK_BITS: u32 = 6;
/// All bits of a mark.
pub const BITS: usize = (NUMBER_BITS + CHECK_BITS) as usize;
/// A whole mark's length in samples (310 ms).
pub const MARK_LEN: usize = SYNC + BITS * BIT;
/// Tone amplitude (about -9 dBFS).
const AMPLITUDE: f64 = 12_000.0;
/// The reader's step and analysis window, in samples (1 ms and 5 ms).
const STEP: usize = 48;
const WINDOW: usize = 240;
/// How much of a window's energy the sync tone must hold, and for how many steps in a row.
const SYNC_SHARE: f64 = 0.6;
const SYNC_STEPS: usize = 25;
/// The quietest sync tone the reader accepts (mean square, about -40 dBFS).
const MIN_POWER: f64 = 1.0e5;

/// A mark read back: its number and when its sync tone began, in seconds from the start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    /// The number it carries.
    pub number: u32,
    /// Its onset in seconds from the first sample.
    pub at_seconds: f64,
}

/// The `MARK_LEN` samples of mark `number` (only its low [`NUMBER_BITS`] bits are carried).
pub fn mark_samples(number: u32) -> Vec<i16> {
    let word = codeword(number & ((1 << NUMBER_BITS) - 1));
    let mut out = Vec::with_capacity(MARK_LEN);
    out.extend(tone(SYNC_HZ, SYNC));
    for i in (0..BITS).rev() {
        let f = if (word >> i) & 1 == 1 {
            ONE_HZ
        } else {
            ZERO_HZ
        };
        out.extend(tone(f, BIT));
    }
    out
}

/// A tone burst with 2 ms ramps at both ends (no clicks for the codec to spread).
fn tone(hz: f64, len: usize) -> impl Iterator<Item = i16> {
    let ramp = 96.0;
    (0..len).map(move |n| {
        let edge = (n as f64).min((len - 1 - n) as f64);
        let gain = (edge / ramp).min(1.0);
        let phase = 2.0 * std::f64::consts::PI * hz * n as f64 / 48_000.0;
        (AMPLITUDE * gain * phase.sin()) as i16
    })
}

/// The number followed by its check bits.
fn codeword(number: u32) -> u32 {
    (number << CHECK_BITS) | crc6(number)
}

/// CRC-6 of the number's bits, polynomial x^6 + x + 1, register starting at zero.
fn crc6(number: u32) -> u32 {
    let mut reg = 0u32;
    for i in (0..NUMBER_BITS).rev() {
        let top = ((reg >> (CHECK_BITS - 1)) & 1) ^ ((number >> i) & 1);
        reg = (reg << 1) & 0x3f;
        if top == 1 {
            reg ^= 0x03;
        }
    }
    reg
}

/// Power of `hz` in `x` (Goertzel), normalised so a full-scale sine of amplitude A gives A²/2.
fn tone_power(x: &[f32], hz: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * hz / 48_000.0;
    let coeff = 2.0 * w.cos();
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &v in x {
        let s = f64::from(v) + coeff * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    let power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
    2.0 * power / (x.len() as f64 * x.len() as f64)
}

fn mean_square(x: &[f32]) -> f64 {
    x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / x.len().max(1) as f64
}

/// Reads every mark in `samples` (mono, 48 kHz), in order of time. A mark whose bits do not
/// check is left out.
pub fn read_marks(samples: &[i16]) -> Vec<Mark> {
    let x: Vec<f32> = samples.iter().map(|&v| f32::from(v)).collect();
    let mut marks = Vec::new();
    let mut run = 0usize;
    let mut pos = 0usize;
    while pos + WINDOW <= x.len() {
        let w = &x[pos..pos + WINDOW];
        let total = mean_square(w);
        let sync = tone_power(w, SYNC_HZ);
        if total > MIN_POWER && sync > SYNC_SHARE * total {
            run += 1;
        } else {
            run = 0;
        }
        if run == SYNC_STEPS {
            let onset = onset(&x, pos + STEP - SYNC_STEPS * STEP);
            if let Some(number) = read_bits(&x, onset) {
                marks.push(Mark {
                    number,
                    at_seconds: onset as f64 / 48_000.0,
                });
            }
            // The rest of this mark is bits: look for the next sync after it.
            pos = onset + MARK_LEN;
            run = 0;
            continue;
        }
        pos += STEP;
    }
    marks
}

/// The sync tone's onset near `first` (the first window of the run): the first sample from
/// `first` on whose 1 ms neighbourhood holds half the run's tone level.
fn onset(x: &[f32], first: usize) -> usize {
    let probe = |at: usize| {
        let end = (at + STEP).min(x.len());
        tone_power(&x[at.min(end)..end], SYNC_HZ)
    };
    let level = probe(first + 10 * STEP);
    let start = first.saturating_sub(WINDOW);
    (start..first + WINDOW)
        .step_by(8)
        .find(|&at| probe(at) > 0.25 * level)
        .unwrap_or(first)
}

/// The number carried by the bits after a sync tone starting at `onset`, if they check.
fn read_bits(x: &[f32], onset: usize) -> Option<u32> {
    let mut word = 0u32;
    for i in 0..BITS {
        let slot = onset + SYNC + i * BIT;
        let (from, to) = (slot + BIT / 6, slot + BIT - BIT / 6);
        let w = x.get(from..to)?;
        let (zero, one) = (tone_power(w, ZERO_HZ), tone_power(w, ONE_HZ));
        // Neither tone clearly there: concealment or a gap, not a bit.
        if zero.max(one) < 2.0 * zero.min(one) || zero.max(one) < 0.2 * mean_square(w) {
            return None;
        }
        word = (word << 1) | u32::from(one > zero);
    }
    let number = word >> CHECK_BITS;
    (crc6(number) == word & 0x3f).then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_read_back_with_their_times() {
        let mut audio = vec![0i16; 48_000 * 3];
        for (k, number) in [5u32, 6, 4095].iter().enumerate() {
            let at = 1_000 + k * 48_000;
            audio[at..at + MARK_LEN].copy_from_slice(&mark_samples(*number));
        }
        let marks = read_marks(&audio);
        assert_eq!(
            marks.iter().map(|m| m.number).collect::<Vec<_>>(),
            [5, 6, 4095]
        );
        for (k, m) in marks.iter().enumerate() {
            let expected = (1_000 + k * 48_000) as f64 / 48_000.0;
            assert!((m.at_seconds - expected).abs() < 0.002, "{m:?}");
        }
    }

    #[test]
    fn a_flipped_bit_makes_a_mark_unreadable_not_wrong() {
        for number in [0u32, 1, 77, 4095] {
            let word = codeword(number);
            for bit in 0..BITS {
                let flipped = word ^ (1 << bit);
                assert_ne!(
                    crc6(flipped >> CHECK_BITS),
                    flipped & 0x3f,
                    "{number} {bit}"
                );
            }
        }
    }

    #[test]
    fn silence_and_noise_hold_no_marks() {
        assert!(read_marks(&[0i16; 48_000]).is_empty());
        let mut state = 1u32;
        let noise: Vec<i16> = (0..48_000)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 16) as i16
            })
            .collect();
        assert!(read_marks(&noise).is_empty());
    }
}
