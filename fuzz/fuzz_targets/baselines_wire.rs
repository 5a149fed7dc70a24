//! Fuzzes the baselines' wire parser: any bytes either fail with a typed error or parse to a
//! packet that re-emits to the same bytes (padding: to a packet that parses back equal, since
//! its filler is not kept); `scheme_of` never panics and names the scheme of exactly the
//! media datagrams that parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_baselines::wire::{scheme_of, Packet};

fuzz_target!(|bytes: &[u8]| {
    let scheme = scheme_of(bytes);
    if let Ok(packet) = Packet::parse(bytes) {
        let out = packet.emit().expect("a parsed packet re-emits");
        if matches!(packet, Packet::Padding { .. }) {
            assert_eq!(Packet::parse(&out).expect("re-parses"), packet);
        } else {
            assert_eq!(out, bytes);
        }
        match &packet {
            Packet::Media { header, .. } => assert_eq!(scheme, Some(header.scheme)),
            _ => assert_eq!(scheme, None),
        }
    }
});
