//! Fuzz the Mahimahi trace parser: arbitrary bytes must give a valid trace or an error,
//! never a panic, and anything accepted must survive a write/parse round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_netem::Trace;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = Trace::from_reader(data) {
        let millis = trace.millis();
        assert!(!millis.is_empty());
        assert!(millis.windows(2).all(|w| w[0] <= w[1]));
        assert!(millis[millis.len() - 1] > 0);
        let text = trace.to_mahimahi_string();
        assert_eq!(Trace::parse(&text).expect("written trace parses"), trace);
        // Cheap queries on the accepted trace must not panic either.
        let _ = trace.opportunities_until(trace.period() * 3);
        let _ = trace.mean_rate_bps(1500);
    }
});
