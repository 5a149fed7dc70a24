//! Arbitrary text as an `audio.csv`: the reader never panics, what it accepts is sorted by
//! when it played, and the skew of pictures against it can be computed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_audio::{metrics::skews, read_played_csv};
use salsify_time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(played) = read_played_csv(text) {
        assert!(played.windows(2).all(|w| w[0].at <= w[1].at));
        let shown: Vec<(Instant, Instant)> = played.iter().map(|p| (p.captured, p.at)).collect();
        let _ = skews(&played, &shown, Duration::from_millis(20));
    }
});
