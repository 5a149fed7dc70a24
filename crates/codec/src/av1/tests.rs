//! Unit tests of the AV1 codec against libaom itself (the contract both codecs share is
//! checked in state_coding/tests.rs and tests/contract.rs).

use super::context::DecoderContext;
use super::*;
use crate::image::moving_pattern as picture;
use crate::state::State;

fn q(i: u8) -> Av1Quality {
    Av1Quality::new(i).unwrap()
}

#[test]
fn the_coded_quantizer_is_the_one_asked_for() {
    let (w, h) = (64, 48);
    let mut enc = Av1Encoder::new(w, h).unwrap();
    let mut check = DecoderContext::new().unwrap();
    let mut state = State::initial();
    let mut last_qindex = None;
    for (i, asked) in [0u8, 5, 17, 32, 50, 62, 63].into_iter().enumerate() {
        let frame = enc.encode(&state, &picture(w, h, i), q(asked)).unwrap();
        assert_eq!(frame.quality, q(asked));
        let mut out = Image::new(w, h).unwrap();
        check.decode(frame.av1(), &mut out).unwrap();
        let qindex = check.last_qindex().unwrap();
        // libaom maps its 0..=63 scale onto the header's 0..=255 index, increasingly, with
        // the scale's ends at the index's ends.
        if let Some(last) = last_qindex {
            assert!(
                qindex > last,
                "quantizer {asked}: qindex {qindex} after {last}"
            );
        }
        match asked {
            0 => assert_eq!(qindex, 0),
            63 => assert_eq!(qindex, 255),
            _ => {}
        }
        last_qindex = Some(qindex);
        state = frame.target;
    }
}

/// The AV1 decoder refuses a VP8 frame and stays usable.
#[test]
fn a_vp8_frame_is_not_an_av1_frame() {
    let (w, h) = (32, 32);
    let vp8 = crate::Encoder::new(w, h)
        .unwrap()
        .encode(
            &State::initial(),
            &picture(w, h, 0),
            crate::Quality::new(40).unwrap(),
        )
        .unwrap();
    let mut dec = Av1Decoder::new().unwrap();
    assert!(dec.decode(&State::initial(), &vp8.bytes).is_err());
    let k = Av1Encoder::new(w, h)
        .unwrap()
        .encode(&State::initial(), &picture(w, h, 0), q(20))
        .unwrap();
    let (s, _) = dec.decode(&State::initial(), &k.bytes).unwrap();
    assert_eq!(s.hash(), k.target.hash());
}
