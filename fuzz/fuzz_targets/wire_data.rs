//! Fuzzes the data-fragment parser: any bytes either fail with a typed error or parse to a
//! fragment that re-emits to exactly the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_transport::{DataFragment, Datagram};

fuzz_target!(|bytes: &[u8]| {
    let _ = Datagram::parse(bytes);
    if let Ok(fragment) = DataFragment::parse(bytes) {
        assert!(fragment.index < fragment.count);
        let mut out = Vec::new();
        fragment.emit(&mut out).expect("a parsed fragment re-emits");
        assert_eq!(out, bytes);
    }
});
