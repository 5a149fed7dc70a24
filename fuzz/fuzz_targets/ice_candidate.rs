//! Arbitrary text as a browser page's ICE candidate lists (what `salsify peer chromium`'s
//! server takes): parsing, choosing and rewriting must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_peer::candidates::{loopback_udp_host, parse_lists, route, Candidate};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let relay = "192.0.2.1:4000".parse().expect("literal");
    let single = Candidate {
        candidate: text.to_string(),
        sdp_mid: None,
    };
    let _ = single.udp_ipv4_host();
    let _ = single.pointed_at(relay);
    if let Ok((sender, receiver)) = parse_lists(&text) {
        if let (Ok((s, _)), Ok((r, _))) = (
            loopback_udp_host("sender", &sender),
            loopback_udp_host("receiver", &receiver),
        ) {
            let _ = route(&s, &r, relay);
        }
    }
});
