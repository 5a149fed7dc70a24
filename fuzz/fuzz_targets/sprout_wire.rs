//! Fuzzes Sprout's wire parser and receiver: any bytes either fail with a typed error or
//! parse to a datagram that re-emits to the same bytes; `scheme_of` names exactly the data
//! datagrams that parse; and a receiver fed the input as a stream of datagrams (split at
//! 0xFF) never panics, whatever it is sent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_baselines::sprout::wire::{emit_data, emit_feedback, parse, Datagram};
use salsify_baselines::sprout::{scheme_of, SproutConfig, SproutReceiver};
use salsify_endpoint::{ReceiverEndpoint, ReceiverOutput};
use salsify_time::{Duration, Instant};

fuzz_target!(|bytes: &[u8]| {
    let scheme = scheme_of(bytes);
    match parse(bytes) {
        Ok(Datagram::Data(h, payload)) => {
            assert_eq!(emit_data(&h, payload), bytes);
            assert!(scheme.is_some());
        }
        Ok(Datagram::Feedback(f)) => {
            assert_eq!(emit_feedback(&f), bytes);
            assert_eq!(scheme, None);
        }
        Err(_) => assert_eq!(scheme, None),
    }
    let Ok(mut receiver) = SproutReceiver::new(SproutConfig::default()) else {
        return;
    };
    let mut now = Instant::ZERO;
    for datagram in bytes.split(|&b| b == 0xFF) {
        now = now + Duration::from_millis(7);
        let _ = receiver.handle_datagram(now, datagram);
        receiver.handle_timeout(now);
        for _ in 0..1000 {
            if let ReceiverOutput::Timeout(_) = receiver.poll_output(now) {
                break;
            }
        }
    }
});
