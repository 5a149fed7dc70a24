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
/// How much of a window's energy the sync tone must hold, and for how many steps in a row
/// (16 ms of its 40: a sync tone played faster may keep less than half its length).
const SYNC_SHARE: f64 = 0.6;
const SYNC_STEPS: usize = 12;
/// The quietest sync tone the reader accepts (mean square, about -40 dBFS).
const MIN_POWER: f64 = 1.0e5;

/// The reader of a mark played faster (see [`read_bits_warped`]): its grid step and the window
/// each grid cell's tones are measured over (0.5 ms and 2.5 ms).
const CELL: usize = 24;
const CELL_WINDOW: usize = 120;
/// The shortest a tone may have been played in: a quarter of its length (a frame played
/// faster twice over keeps between a quarter and 9/16 of its samples).
const SHORTEST_DIV: usize = 4;
/// How much longer than its own length a tone may read (cells), for the codec's smear.
const SLACK_CELLS: usize = 3;
/// What a tone held clearly through the middle of its slot earns.
const TONE_WEIGHT: f64 = 10.0;
/// What a boundary between two tones earns where the level dips (each tone is ramped to
/// silence at both ends, so even two equal bits show where one ends).
const DIP_REWARD: f64 = 20.0;
/// What a tone costs per unit of |ln(length read / own length)|: one played at full speed
/// is the likeliest.
const LENGTH_PENALTY: f64 = 3.0;

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
            let number = read_bits(&x, onset)
                .or_else(|| read_bits_after_sync(&x, onset))
                .or_else(|| read_bits_warped(&x, onset));
            if let Some(number) = number {
                marks.push(Mark {
                    number,
                    at_seconds: onset as f64 / 48_000.0,
                });
                // The rest of this mark is bits: look for the next sync after it.
                pos = onset + MARK_LEN;
                run = 0;
                continue;
            }
            // Not a mark (a sync-like sound, or bits that do not check): look on from here.
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
        word = (word << 1) | u32::from(bit_value(x.get(from..to)?)?);
    }
    let number = word >> CHECK_BITS;
    (crc6(number) == word & 0x3f).then_some(number)
}

/// The number carried by a mark whose sync tone alone was played faster (its frames cut
/// short, the bits' frames not): the bits at their own offsets from where the sync tone ended.
fn read_bits_after_sync(x: &[f32], onset: usize) -> Option<u32> {
    let half = WINDOW / 2;
    let end = (onset + SYNC / SHORTEST_DIV..onset + SYNC + BIT)
        .step_by(CELL)
        .find(|&at| {
            let w = x.get(at..at + half).unwrap_or_default();
            w.is_empty() || tone_power(w, SYNC_HZ) < 0.5 * mean_square(w)
        })?;
    // The window's start is a quarter window before the end of the tone it no longer holds.
    let onset = (end + half / 2).checked_sub(SYNC)?;
    read_bits(x, onset)
}

/// Per grid cell from a sync tone's onset: how much the cell's window holds of the sync tone,
/// of a zero bit's tone minus a one bit's (both as shares of the window's energy), and its
/// level over one step.
struct Cells {
    sync: Vec<f64>,
    bit: Vec<f64>,
    level: Vec<f64>,
}

impl Cells {
    fn measure(x: &[f32], onset: usize, cells: usize) -> Cells {
        let window = |at: usize, len: usize| {
            let from = (at + CELL / 2).saturating_sub(len / 2).min(x.len());
            &x[from..(from + len).min(x.len())]
        };
        let mut c = Cells {
            sync: Vec::with_capacity(cells),
            bit: Vec::with_capacity(cells),
            level: Vec::with_capacity(cells),
        };
        for i in 0..cells {
            let at = onset + i * CELL;
            let w = window(at, CELL_WINDOW);
            let total = mean_square(w);
            let (sync, bit) = if total * 10.0 > MIN_POWER {
                let share = |hz| (tone_power(w, hz) / total).min(1.0);
                (share(SYNC_HZ), share(ZERO_HZ) - share(ONE_HZ))
            } else {
                (0.0, 0.0)
            };
            c.sync.push(sync);
            c.bit.push(bit);
            c.level.push(mean_square(window(at, STEP)));
        }
        c
    }
}

/// Running sums of `v` (entry `i` is the sum of the first `i`).
fn prefix(v: &[f64]) -> Vec<f64> {
    std::iter::once(0.0)
        .chain(v.iter().scan(0.0, |s, &x| {
            *s += x;
            Some(*s)
        }))
        .collect()
}

/// The number carried by a mark some of whose frames were played faster (cut short by the
/// player's time-scale compression, [`crate::timescale`]): the sync tone and each bit may
/// then be anything from a quarter of their length to the whole, so the tones' boundaries
/// are found rather than assumed. Of every way to cut what follows the onset into the sync
/// tone and [`BITS`] bits, the one kept holds each bit's tone most clearly in the middle of
/// its slot, puts its boundaries where the level dips, and strays least from the tones'
/// own lengths; its bits must then pass the same tests as [`read_bits`]'s and the check.
fn read_bits_warped(x: &[f32], onset: usize) -> Option<u32> {
    let cells = MARK_LEN / CELL + SLACK_CELLS;
    let c = Cells::measure(x, onset, cells);
    let (sync, bit) = (prefix(&c.sync), prefix(&c.bit));
    let mut levels = c.level.clone();
    levels.sort_by(f64::total_cmp);
    let reference = levels[levels.len() * 3 / 4].max(1.0);
    let dip = |at: usize| 1.0 - (c.level.get(at).copied().unwrap_or(0.0) / reference).min(1.0);
    // A tone over cells a..b: its middle's score, the whole tone's cost of length.
    let middle = |sums: &[f64], a: usize, b: usize| {
        let edge = (b - a) / 6;
        let (from, to) = (a + edge, b - edge);
        TONE_WEIGHT * (sums[to] - sums[from]) / (to - from).max(1) as f64
    };
    let length_cost =
        |len: usize, own: usize| LENGTH_PENALTY * (len as f64 / own as f64).ln().abs();
    // The deepest dip inside cells a..b, away from its ends: a tone spans no boundary.
    let deepest = |a: usize, b: usize| {
        let edge = (b - a) / 4;
        (a + edge..b - edge).map(dip).fold(0.0, f64::max)
    };
    // best[k][b]: the best score of the sync tone and k bits ending at cell b, and where
    // the last tone began.
    let mut best = vec![vec![(f64::NEG_INFINITY, 0usize); cells + 1]; BITS + 1];
    let (own_sync, own_bit) = (SYNC / CELL, BIT / CELL);
    let sync_ends = own_sync / SHORTEST_DIV..=(own_sync + SLACK_CELLS).min(cells);
    for (b, end) in best[0].iter_mut().enumerate() {
        if sync_ends.contains(&b) {
            let score = middle(&sync, 0, b) - length_cost(b, own_sync)
                + DIP_REWARD * (dip(b) - deepest(0, b));
            *end = (score, 0);
        }
    }
    for k in 1..=BITS {
        for b in 1..=cells {
            let shortest = own_bit / SHORTEST_DIV;
            let lengths = shortest..=(own_bit + SLACK_CELLS).min(b);
            for len in lengths {
                let a = b - len;
                let before = best[k - 1][a].0;
                if before == f64::NEG_INFINITY {
                    continue;
                }
                let score = before + middle(&bit, a, b).abs() - length_cost(len, own_bit)
                    + DIP_REWARD * (dip(b) - deepest(a, b));
                if score > best[k][b].0 {
                    best[k][b] = (score, a);
                }
            }
        }
    }
    // The last bit is followed by the voice's pause, not by another bit's tone.
    let after = |b: usize| {
        let to = (b + own_bit / 2).min(cells);
        TONE_WEIGHT * (bit[to] - bit[b]).abs() / (to - b).max(1) as f64
    };
    let (mut b, _) = (0..=cells)
        .map(|b| (b, best[BITS][b].0 - after(b)))
        .filter(|(_, score)| score.is_finite())
        .max_by(|p, q| p.1.total_cmp(&q.1))?;
    let mut slots = Vec::with_capacity(BITS);
    for k in (1..=BITS).rev() {
        let a = best[k][b].1;
        slots.push((a, b));
        b = a;
    }
    let mut word = 0u32;
    for &(a, b) in slots.iter().rev() {
        let edge = (b - a) * CELL / 6;
        let (from, to) = (onset + a * CELL + edge, onset + b * CELL - edge);
        let v = bit_value(x.get(from..to)?);
        word = (word << 1) | u32::from(v?);
    }
    let number = word >> CHECK_BITS;
    (crc6(number) == word & 0x3f).then_some(number)
}

/// The bit whose tone `w` holds (`true` for one), if one of the two clearly dominates.
fn bit_value(w: &[f32]) -> Option<bool> {
    let (zero, one) = (tone_power(w, ZERO_HZ), tone_power(w, ONE_HZ));
    // Neither tone clearly there: concealment or a gap, not a bit.
    if zero.max(one) < 2.0 * zero.min(one) || zero.max(one) < 0.2 * mean_square(w) {
        return None;
    }
    Some(one > zero)
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

    /// A voice carrying a mark a second, through Opus as the player plays it, frames of 20 ms, those that
    /// `faster` picks played faster (once, or twice over where it says 2); with each mark's
    /// onset in the samples played.
    fn played(seconds: usize, faster: impl Fn(usize) -> u32) -> (Vec<i16>, Vec<f64>) {
        use crate::codec::{OpusDecoder, OpusEncoder};
        use crate::config::OpusConfig;
        use crate::timescale::accelerate;
        const MARK_PERIOD: usize = 48_000;
        let config = OpusConfig::default();
        let n = config.frame.samples();
        // A mark a second, a hum between them (a voice's low harmonics) after a short pause.
        let mut voice: Vec<i16> = (0..seconds * MARK_PERIOD)
            .map(|i| match i % MARK_PERIOD {
                w if w < MARK_LEN + 1_200 => 0,
                w => (3_000.0 * (w as f64 * 0.0157).sin() * (w as f64 * 0.0003).sin()) as i16,
            })
            .collect();
        for k in 0..seconds {
            voice[k * MARK_PERIOD..k * MARK_PERIOD + MARK_LEN]
                .copy_from_slice(&mark_samples(k as u32));
        }
        let mut encoder = OpusEncoder::new(&config).unwrap();
        let mut decoder = OpusDecoder::new(config.frame).unwrap();
        let (mut out, mut onsets) = (Vec::new(), Vec::new());
        for (i, frame) in voice.chunks(n).enumerate() {
            let packet = encoder.encode(frame).unwrap();
            let (mut pcm, _) = decoder.frame(Some(&packet), None);
            if (i * n) % MARK_PERIOD == 0 {
                onsets.push(out.len() as f64 / 48_000.0);
            }
            for _ in 0..faster(i) {
                pcm = accelerate(&pcm);
            }
            out.extend(pcm);
        }
        (out, onsets)
    }

    /// Issue 55: marks whose frames were played faster are read, with their times: one frame
    /// of a mark cut short, several in a row, the sync tone's, twice over, every frame of it.
    #[test]
    fn marks_in_frames_played_faster_are_read() {
        // 50 frames a second; a mark takes frames 0 to 15 of its second.
        let faster = |i: usize| match (i / 50, i % 50) {
            (1, 6) => 1,
            (2, 3..=5) => 1,
            (3, 0..=1) => 1,
            (4, 8..=9) => 2,
            (5, 0..=15) => 1,
            (6, 10..=15) => 2,
            (7, 2 | 7 | 12) => 2,
            _ => 0,
        };
        let (audio, onsets) = played(9, faster);
        let marks = read_marks(&audio);
        // Read before: marks 0, 1 and 8 (the fixed offsets). Still missed: the one with two
        // frames cut twice over (its boundaries, smeared by Opus, do not show through); none
        // is read wrong.
        let numbers: Vec<u32> = marks.iter().map(|m| m.number).collect();
        assert_eq!(numbers, [0, 1, 2, 3, 5, 6, 7, 8], "{marks:?}");
        for m in &marks {
            // Opus delays the voice by 6.5 ms; the reader reads the onset within a few ms.
            let at = onsets[m.number as usize];
            assert!((m.at_seconds - at).abs() < 0.012, "{m:?} not at {at}");
        }
        // Played at its own speed, every mark reads.
        let (plain, _) = played(9, |_| 0);
        assert_eq!(read_marks(&plain).len(), 9);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any samples after a mark's sync tone (where the warped reader looks) read without
        /// a panic, in order of time.
        #[test]
        fn any_samples_read_without_a_panic(
            number in 0u32..4096,
            keep in 0usize..MARK_LEN,
            tail in proptest::collection::vec(proptest::num::i16::ANY, 0..20_000),
        ) {
            let mut samples = mark_samples(number);
            samples.truncate(keep.max(SYNC));
            samples.extend(tail);
            let marks = read_marks(&samples);
            proptest::prop_assert!(marks.windows(2).all(|w| w[0].at_seconds < w[1].at_seconds));
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
