//! Unit tests of the AV1 codec against libaom itself (the contract tests are in
//! tests/av1_contract.rs).

use super::context::DecoderContext;
use super::*;
use crate::image::PlaneId;

/// A moving diagonal pattern: enough motion and texture for real inter prediction.
fn picture(w: u32, h: u32, t: usize) -> Image {
    let mut img = Image::new(w, h).unwrap();
    for id in PlaneId::ALL {
        let plane = img.plane_mut(id);
        for y in 0..plane.height() {
            for (x, s) in plane.row_mut(y).iter_mut().enumerate() {
                *s = ((x * 3 + y * 5 + t * 7) % 251) as u8 ^ ((x / 8 + y / 8) % 2 * 64) as u8;
            }
        }
    }
    img.extend_edges();
    img
}

fn q(i: u8) -> Av1Quality {
    Av1Quality::new(i).unwrap()
}

#[test]
fn decoder_matches_encoder_across_two_options_and_jumps() {
    // Not a multiple of 8 either way: the reference copies work on the 8-aligned size.
    let (w, h) = (50, 34);
    let mut enc = Av1Encoder::new(w, h).unwrap();
    let mut dec = Av1Decoder::new().unwrap();
    let k = enc
        .encode(&State::initial(), &picture(w, h, 0), q(20))
        .unwrap();
    assert!(k.keyframe);
    let (s1, p1) = dec.decode(&State::initial(), &k.bytes).unwrap();
    assert_eq!(s1.hash(), k.target.hash());
    assert!(p1.visible_eq(&k.target.picture().unwrap()));
    // Two options from one state; send the coarser; then jump back to the keyframe's state.
    let a = enc.encode(&k.target, &picture(w, h, 1), q(10)).unwrap();
    let b = enc.encode(&k.target, &picture(w, h, 1), q(45)).unwrap();
    assert!(!a.keyframe && !b.keyframe);
    assert!(a.len() > b.len(), "finer quantizer should cost more bytes");
    let (s2, p2) = dec.decode(&s1, &b.bytes).unwrap();
    assert_eq!(s2.hash(), b.target.hash());
    assert!(p2.visible_eq(&b.target.picture().unwrap()));
    let c = enc.encode(&k.target, &picture(w, h, 2), q(30)).unwrap();
    let (s3, _) = dec.decode(&s1, &c.bytes).unwrap();
    assert_eq!(s3.hash(), c.target.hash());
    // The option not sent decodes too, from the same state value.
    let (s4, _) = dec.decode(&s1, &a.bytes).unwrap();
    assert_eq!(s4.hash(), a.target.hash());
    // A fresh decoder fed a state it never decoded still decodes exactly.
    let mut fresh = Av1Decoder::new().unwrap();
    let d = enc.encode(&b.target, &picture(w, h, 3), q(25)).unwrap();
    let (s5, _) = fresh.decode(&b.target, &d.bytes).unwrap();
    assert_eq!(s5.hash(), d.target.hash());
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

#[test]
fn wrong_state_and_garbage_are_errors() {
    let (w, h) = (32, 32);
    let mut enc = Av1Encoder::new(w, h).unwrap();
    let mut dec = Av1Decoder::new().unwrap();
    let k = enc
        .encode(&State::initial(), &picture(w, h, 0), q(20))
        .unwrap();
    let i = enc.encode(&k.target, &picture(w, h, 1), q(20)).unwrap();
    let err = dec.decode(&State::initial(), &i.bytes).unwrap_err();
    assert!(matches!(err, CodecError::WrongSourceState { .. }), "{err}");
    assert!(dec.decode(&i.target, &i.bytes).is_err());
    let mut garbage = i.bytes.clone();
    for b in &mut garbage[crate::frame::HEADER_LEN + 4..] {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    assert!(dec.decode(&k.target, &garbage).is_err());
    assert!(dec
        .decode(&k.target, &i.bytes[..i.bytes.len() / 2])
        .is_err());
    // A VP8 frame is not an AV1 frame.
    let vp8 = crate::Encoder::new(w, h)
        .unwrap()
        .encode(
            &State::initial(),
            &picture(w, h, 0),
            crate::Quality::new(40).unwrap(),
        )
        .unwrap();
    assert!(dec.decode(&State::initial(), &vp8.bytes).is_err());
    // Still usable afterwards.
    let (s, _) = dec.decode(&k.target, &i.bytes).unwrap();
    assert_eq!(s.hash(), i.target.hash());
}
