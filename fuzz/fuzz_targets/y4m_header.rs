//! Arbitrary bytes as a Y4M stream: header parsing and frame reading must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_codec::y4m::{Y4mHeader, Y4mReader};

fuzz_target!(|data: &[u8]| {
    let _ = Y4mHeader::parse(data);
    if let Ok(reader) = Y4mReader::new(data) {
        for frame in reader {
            let _ = frame;
        }
    }
});
