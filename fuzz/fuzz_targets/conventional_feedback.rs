//! Fuzzes the conventional sender (libwebrtc's GoogCC through `goog_cc`) with datagrams from
//! the receiver's side: the input is split into datagrams (a length byte, then that many
//! bytes; a datagram whose second byte is 3 is transport feedback), fed one per camera
//! picture while the sender sends media, so that any feedback (any sequence numbers, arrival
//! times on any clock, reordered, all lost) reaches the controller. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_baselines::{ConventionalConfig, WebrtcSender};
use salsify_codec::CbrFrame;
use salsify_endpoint::{EncodeOutcome, SenderEndpoint, SenderOutput};
use salsify_time::{Duration, Instant};

fuzz_target!(|bytes: &[u8]| {
    let mut s = WebrtcSender::new(ConventionalConfig::default(), (320, 180)).expect("defaults");
    let mut now = Instant::ZERO;
    let mut rest = bytes;
    let mut picture = 0;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let (datagram, tail) = tail.split_at(len);
        rest = tail;
        s.handle_picture(now, picture, now);
        picture += 1;
        let until = now + Duration::from_millis(33);
        loop {
            match s.poll_output(now) {
                SenderOutput::Encode(req) => {
                    let frame = CbrFrame {
                        data: vec![1; 1000 + (picture as usize % 7) * 700],
                        keyframe: picture == 1,
                        quality: (picture % 100) as u8,
                    };
                    let _ = s.handle_encoded(now, req.id, Ok(EncodeOutcome::Cbr(Some(frame))));
                }
                SenderOutput::Timeout(w) if w >= until => break,
                SenderOutput::Timeout(w) => {
                    now = w.max(now + Duration::from_micros(1));
                    s.handle_timeout(now);
                }
                _ => {}
            }
        }
        let _ = s.handle_datagram(now, datagram);
        now = until;
        s.handle_timeout(now);
    }
});
