//! The AV1 frame container, its OBU parser and libaom's decoder on arbitrary bytes: never a
//! crash, and a decoded frame always reaches the state its header names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_codec::av1::parse_av1_frame;
use salsify_codec::{Av1Decoder, State};

fuzz_target!(|data: &[u8]| {
    let parsed = parse_av1_frame(data).ok();
    let mut decoder = Av1Decoder::new().expect("libaom decoder");
    if let Ok((state, picture)) = decoder.decode(&State::initial(), data) {
        let info = parsed.expect("a decoded frame parses");
        assert_eq!(state.hash(), info.target);
        assert_eq!(info.header.keyframe_size, state.size());
        assert!(picture.visible_eq(&state.picture().expect("decoded state has a picture")));
    }
});
