//! Fuzzes the meeting's wire: the rendezvous server answers any bytes with nothing or with an
//! answer no longer than the bytes; the registration, answer and introduction parsers never
//! panic and what they parse re-emits to the same bytes; and a meeting fed any datagrams, from
//! the rendezvous's address or anyone's, never meets anybody (nobody here holds the key).
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use salsify_meet::rendezvous::{self, Rendezvous};
use salsify_meet::{Candidate, Introduction, Kind, MeetConfig, MeetKey, Meeting};
use salsify_time::Instant;

fuzz_target!(|data: &[u8]| {
    let now = Instant::from_millis(1);
    let from = SocketAddr::from(([198, 51, 100, 9], 4000));
    let mut server = Rendezvous::new();
    if let Some(answer) = server.handle(now, from, data) {
        assert!(answer.len() <= data.len());
    }
    if let Some((id, blob)) = rendezvous::parse_register(data) {
        assert_eq!(rendezvous::emit_register(&id, blob).as_deref(), Some(data));
    }
    if let Some(peers) = rendezvous::parse_peers(data) {
        let blobs: Vec<&[u8]> = peers.blobs.iter().map(|b| b.as_slice()).collect();
        assert_eq!(rendezvous::emit_peers(peers.observed, &blobs), data);
    }
    if let Some(intro) = Introduction::parse(data) {
        assert_eq!(intro.emit(), data);
    }
    let key = MeetKey::new(&[1; 32], &[2; 32], &[3; 32]);
    let rdv = SocketAddr::from(([203, 0, 113, 30], 7000));
    let host = Candidate {
        kind: Kind::Host,
        addr: SocketAddr::from(([192, 0, 2, 10], 5000)),
    };
    let mut meeting = Meeting::new(key, MeetConfig::new(rdv), vec![host], now);
    for chunk in data.split(|b| *b == 0xFF) {
        let source = if chunk.first().is_some_and(|b| b % 2 == 0) { rdv } else { from };
        meeting.handle_datagram(now, source, false, chunk);
        meeting.handle_timeout(now);
        while meeting.poll_transmit().is_some() {}
        assert_eq!(meeting.best(), None);
    }
});
