//! Fuzzes the ACK parser: any bytes either fail with a typed error or parse to an ACK that
//! re-emits to exactly the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_transport::{Ack, Datagram};

fuzz_target!(|bytes: &[u8]| {
    let _ = Datagram::parse(bytes);
    if let Ok(ack) = Ack::parse(bytes) {
        let mut out = Vec::new();
        ack.emit(&mut out).expect("a parsed ACK re-emits");
        assert_eq!(out, bytes);
    }
});
