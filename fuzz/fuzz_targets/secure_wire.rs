//! Fuzzes the secure wire parser and the channel behind it: any bytes either fail with a
//! typed error or parse to a datagram that re-emits to exactly the same bytes; and no bytes
//! open at (or change the state of) an established responder or initiator.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use salsify_secure::wire::{self, Packet};
use salsify_secure::{Incoming, Keypair, SecureChannel, SecureConfig};
use salsify_time::Instant;

/// An initiator and a responder with a confirmed session, made once.
fn pair() -> &'static Mutex<(SecureChannel, SecureChannel)> {
    static PAIR: OnceLock<Mutex<(SecureChannel, SecureChannel)>> = OnceLock::new();
    PAIR.get_or_init(|| {
        let (s, r) = (Keypair::generate().unwrap(), Keypair::generate().unwrap());
        let now = Instant::ZERO;
        let mut sender = SecureChannel::initiator(SecureConfig::new(s.private, r.public), now, 1);
        let mut receiver = SecureChannel::responder(SecureConfig::new(r.private, s.public), now);
        let init = sender.poll_transmit(now).unwrap();
        let Ok(Incoming::Reply(reply)) = receiver.handle_datagram(now, &init) else {
            panic!("handshake");
        };
        sender.handle_datagram(now, &reply).unwrap();
        let first = sender.seal(now, b"confirm").unwrap();
        receiver.handle_datagram(now, &first).unwrap();
        Mutex::new((sender, receiver))
    })
}

fuzz_target!(|bytes: &[u8]| {
    let emitted = match wire::parse(bytes) {
        Err(_) => None,
        Ok(Packet::Init { noise }) => Some(wire::emit_init(noise)),
        Ok(Packet::Response { receiver, noise }) => Some(wire::emit_response(receiver, noise)),
        Ok(Packet::Data {
            receiver,
            counter,
            sealed,
        }) => {
            let mut out = wire::data_header(receiver, counter, sealed.len());
            out.extend_from_slice(sealed);
            Some(out)
        }
    };
    if let Some(out) = emitted {
        assert_eq!(out, bytes);
    }
    let mut pair = pair().lock().unwrap();
    let (sender, receiver) = &mut *pair;
    let now = Instant::from_millis(1);
    for channel in [sender, receiver] {
        let before = channel.state();
        assert!(channel.handle_datagram(now, bytes).is_err(), "forged bytes opened");
        assert_eq!(channel.state(), before);
    }
});
