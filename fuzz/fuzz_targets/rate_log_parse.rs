//! Fuzz the throughput-log parser: arbitrary bytes must give a log or an error naming a
//! line, never a panic, and an accepted log must give a valid trace or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_netem::{RateLog, RateLogSpec};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the stated format, the rest is the log.
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let options = ["", "?unit=kbps", "?time=ms", "?interval=200ms", "?unit=gbps&interval=1s"];
    let setting = format!("rate:x{}", options[pick as usize % options.len()]);
    let format = RateLogSpec::from_setting(&setting)
        .expect("a rate setting")
        .expect("valid options")
        .format;
    match RateLog::from_reader(text, format) {
        Ok(log) => {
            assert!(!log.intervals().is_empty());
            assert!(log
                .intervals()
                .iter()
                .all(|i| i.start_us <= i.end_us && i.bps >= 0.0));
            if let Ok(trace) = log.to_trace() {
                let millis = trace.millis();
                assert!(millis.windows(2).all(|w| w[0] <= w[1]));
                let _ = trace.opportunities_until(trace.period() * 2);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
