//! The codec's frame container and libvpx's decoder on arbitrary bytes: never a crash, and a
//! decoded frame always reaches the state its header names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_codec::{Decoder, State};

fuzz_target!(|data: &[u8]| {
    let mut decoder = Decoder::new().expect("libvpx decoder");
    if let Ok((state, picture)) = decoder.decode(&State::initial(), data) {
        let target = u64::from_le_bytes(data[8..16].try_into().expect("header checked"));
        assert_eq!(state.hash().0, target);
        assert!(picture.visible_eq(&state.picture().expect("decoded state has a picture")));
    }
});
