//! Arbitrary samples as a recording to read marks from (the fixed-offset and the warped
//! reader both): the reader never panics, and what it reads is in order of time.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_audio::marks::{mark_samples, read_marks};

fuzz_target!(|data: &[u8]| {
    // A mark first, so the warped reader runs on what follows its sync tone.
    let mut samples = mark_samples(u32::from(data.first().copied().unwrap_or(0)));
    samples.truncate(1_920 + data.len().min(4_000));
    samples.extend(data.chunks(2).map(|c| i16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)])));
    let marks = read_marks(&samples);
    assert!(marks.windows(2).all(|w| w[0].at_seconds < w[1].at_seconds));
});
