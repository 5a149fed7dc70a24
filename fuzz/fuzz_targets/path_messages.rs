//! Fuzzes the path messages' parser and the path state machine behind it: any bytes either
//! fail with a typed error or parse to a message that re-emits to exactly the same bytes; and
//! a sequence of datagrams from strangers (plaintext, or authenticated but not the newest)
//! never moves the peer of a dialer, whatever they say.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use salsify_path::{wire, Contact, Origin, Path, PathConfig};
use salsify_time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = wire::parse(data) {
        assert_eq!(wire::emit(&message), data, "{message:?}");
    }
    let peer = SocketAddr::from(([203, 0, 113, 10], 9000));
    let mut now = Instant::from_millis(1);
    let mut path = Path::new(PathConfig::default(), Contact::Dial(peer), true, now);
    // Each chunk: a port byte, an origin byte, then a datagram up to the next 0xFF.
    for chunk in data.split(|b| *b == 0xFF) {
        let [port, origin, bytes @ ..] = chunk else {
            continue;
        };
        now = now + Duration::from_millis(u64::from(*port));
        let from = SocketAddr::from(([203, 0, 113, 66], u16::from(*port) + 1));
        let origin = match origin % 2 {
            0 => Origin::Plain,
            _ => Origin::Authenticated { newest: false },
        };
        // A plaintext datagram from a stranger is never the peer's (an authenticated one is,
        // wherever it came from: only the peer could seal it).
        let ours = path.handle_received(now, from, bytes.len(), origin, None);
        assert!(!ours || origin != Origin::Plain);
        if let Ok(m) = wire::parse(bytes) {
            path.handle_message(now, from, m, origin);
        }
        path.handle_timeout(now);
        while path.poll_transmit(now).is_some() {}
        assert_eq!(path.peer(), Some(peer));
        assert!(path.max_datagram() >= 1200 && path.max_datagram() <= 1472);
    }
});
