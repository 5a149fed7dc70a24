//! Arbitrary bytes as a call's datagrams: the call splitter and the data-channel parser never
//! panic, what the parser accepts encodes back to the same bytes, and a data channel fed the
//! pieces (split at 0xA5) never panics and keeps what it holds bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_call::data::{DataChannel, DataConfig, DataDatagram, DataOutput};
use salsify_call::wire::{split, Part};
use salsify_time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = DataDatagram::parse(data) {
        assert_eq!(d.encode(), data);
    }
    let config = DataConfig::default();
    let window = config.reorder_window as usize;
    let mut channel = DataChannel::new(config);
    for (i, piece) in data.split(|&b| b == 0xA5).enumerate() {
        let now = Instant::ZERO + Duration::from_millis(i as u64 * 7);
        if let Ok(parts) = split(piece) {
            for part in parts {
                if let Part::Data(bytes) = part {
                    let _ = channel.handle_message(now, bytes);
                }
            }
        }
        let _ = channel.handle_message(now, piece);
        channel.handle_timeout(now);
        let mut polls = 0;
        while !matches!(channel.poll_output(now), DataOutput::Timeout(_)) {
            polls += 1;
            assert!(polls <= window + 2, "a channel that never stops talking");
        }
    }
});
