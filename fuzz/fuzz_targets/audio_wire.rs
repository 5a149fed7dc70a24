//! Arbitrary bytes as audio datagrams: the packet parser never panics and what it accepts
//! encodes back to the same bytes; a player fed the pieces as datagrams, and polled between
//! them, never panics and keeps what it holds bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_audio::{AudioPacket, AudioPlayer, PlayerConfig};
use salsify_time::Instant;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = AudioPacket::decode(data) {
        assert_eq!(p.encode(), data);
    }
    let mut player = AudioPlayer::new(PlayerConfig::default()).expect("a decoder");
    let mut now = Instant::ZERO;
    for (i, piece) in data.split(|&b| b == 0xA5).enumerate() {
        now = Instant::from_millis(i as u64 * 7);
        let _ = player.handle_datagram(now, piece);
        let mut polls = 0;
        while player.poll_frame(now).is_some() {
            polls += 1;
            assert!(polls < 10_000, "a player that never stops playing");
        }
    }
    let _ = now;
});
