//! Where the sender's audio comes from: a speech-like synthetic voice carrying a timing mark
//! every second, or samples read from a file (looped).

use crate::marks::{mark_samples, MARK_LEN};

/// Samples between two marks (one second at 48 kHz).
pub const MARK_PERIOD: usize = 48_000;
/// Quiet samples on either side of the speech (25 ms), so no syllable touches a mark.
const GUARD: usize = 1_200;
/// Syllables between two marks.
const SYLLABLES: usize = 3;

/// A source of mono 48 kHz audio, frame by frame.
pub trait AudioSource: Send + std::fmt::Debug {
    /// Fills `out` with the samples from `start` (counted from the stream's first sample).
    fn fill(&mut self, start: u64, out: &mut [i16]);
}

/// A voice-like signal: voiced syllables (a harmonic series on a pitch that changes from
/// syllable to syllable, shaped by two formants, under a rising and falling envelope) with
/// pauses, and mark `k` (see [`crate::marks`]) at second `k`. Every sample is a function of
/// its index and the seed, so any frame can be made in any order.
#[derive(Debug, Clone)]
pub struct SyntheticSpeech {
    seed: u64,
    /// Mark `k` cached: (k, samples).
    mark: Option<(u64, Vec<i16>)>,
}

impl SyntheticSpeech {
    /// A voice whose syllables follow `seed`.
    pub fn new(seed: u64) -> Self {
        SyntheticSpeech { seed, mark: None }
    }

    /// The sample at index `n`.
    pub fn sample(&mut self, n: u64) -> i16 {
        let period = n / MARK_PERIOD as u64;
        let within = (n % MARK_PERIOD as u64) as usize;
        if within < MARK_LEN {
            if self.mark.as_ref().is_none_or(|(k, _)| *k != period) {
                self.mark = Some((period, mark_samples(period as u32)));
            }
            return self.mark.as_ref().map_or(0, |(_, m)| m[within]);
        }
        let speech_start = MARK_LEN + GUARD;
        let speech_len = MARK_PERIOD - speech_start - GUARD;
        let Some(offset) = within.checked_sub(speech_start).filter(|&o| o < speech_len) else {
            return 0;
        };
        let syllable_len = speech_len / SYLLABLES;
        let index = offset / syllable_len;
        let t = offset % syllable_len;
        voiced(
            mix(self.seed, period * SYLLABLES as u64 + index as u64),
            t,
            syllable_len,
        )
    }
}

impl AudioSource for SyntheticSpeech {
    fn fill(&mut self, start: u64, out: &mut [i16]) {
        for (i, v) in out.iter_mut().enumerate() {
            *v = self.sample(start + i as u64);
        }
    }
}

/// Sample `t` of a syllable `len` samples long whose character comes from `h`.
fn voiced(h: u64, t: usize, len: usize) -> i16 {
    let unit = |shift: u32| ((h >> shift) & 0xffff) as f64 / 65_535.0;
    // Voiced for 55-90% of the slot, then a pause.
    let voiced_len = (len as f64 * (0.55 + 0.35 * unit(0))) as usize;
    if t >= voiced_len {
        return 0;
    }
    let pitch = 95.0 + 130.0 * unit(16);
    let f1 = 350.0 + 500.0 * unit(32);
    let f2 = 1_000.0 + 1_300.0 * unit(48);
    let x = t as f64 / voiced_len as f64;
    let envelope = (std::f64::consts::PI * x).sin().powf(0.6);
    let time = t as f64 / 48_000.0;
    // Pitch glides a little within the syllable, as intonation does.
    let phase = 2.0 * std::f64::consts::PI * pitch * time * (1.0 - 0.08 * x);
    let mut v = 0.0;
    let mut k = 1.0;
    while k * pitch < 3_800.0 {
        let f = k * pitch;
        let formants =
            1.0 / (1.0 + ((f - f1) / 120.0).powi(2)) + 0.6 / (1.0 + ((f - f2) / 180.0).powi(2));
        v += (0.15 + formants) / k.sqrt() * (k * phase).sin();
        k += 1.0;
    }
    (2_600.0 * envelope * v).clamp(-32_000.0, 32_000.0) as i16
}

/// splitmix64 of `seed` and `n`: a syllable's character.
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Samples from a file, played again from the start when they run out.
#[derive(Debug, Clone)]
pub struct LoopedSamples {
    samples: Vec<i16>,
}

impl LoopedSamples {
    /// A source looping `samples` (silence if there are none).
    pub fn new(samples: Vec<i16>) -> Self {
        LoopedSamples { samples }
    }
}

impl AudioSource for LoopedSamples {
    fn fill(&mut self, start: u64, out: &mut [i16]) {
        let len = self.samples.len() as u64;
        for (i, v) in out.iter_mut().enumerate() {
            *v = if len == 0 {
                0
            } else {
                self.samples[((start + i as u64) % len) as usize]
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::read_marks;

    #[test]
    fn the_voice_carries_a_mark_each_second_and_sounds_in_between() {
        let mut voice = SyntheticSpeech::new(7);
        let mut audio = vec![0i16; 3 * MARK_PERIOD];
        voice.fill(0, &mut audio);
        let marks = read_marks(&audio);
        assert_eq!(
            marks.iter().map(|m| m.number).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        let speech = &audio[MARK_LEN + GUARD..MARK_PERIOD - GUARD];
        let rms = (speech.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / speech.len() as f64)
            .sqrt();
        assert!(rms > 1_000.0, "speech too quiet: {rms}");
        // Frames made out of order are the same samples.
        let mut again = [0i16; 960];
        SyntheticSpeech::new(7).fill(30_000, &mut again);
        assert_eq!(&again[..], &audio[30_000..30_960]);
    }
}
