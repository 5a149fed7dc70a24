//! The shared body against each codec's library: either of two options encoded from one
//! state decodes exactly, as do jumps back and a fresh decoder given a state it never
//! decoded; a wrong state, garbage and a cut frame are refused, and the decoder stays usable.

use super::*;
use crate::av1::{Av1Library, Av1Quality};
use crate::codec::Vp8Library;
use crate::image::moving_pattern as picture;
use crate::Quality;

/// Quantizers on the codec's own scale for the tests below.
struct Ladder<Q> {
    /// The keyframe's.
    key: Q,
    /// A fine option.
    fine: Q,
    /// A coarse option.
    coarse: Q,
    /// Two more between, for the jump back and the fresh decoder.
    middle: [Q; 2],
}

fn vp8_ladder() -> Ladder<Quality> {
    let q = |i| Quality::new(i).unwrap();
    Ladder {
        key: q(40),
        fine: q(20),
        coarse: q(90),
        middle: [q(60), q(50)],
    }
}

fn av1_ladder() -> Ladder<Av1Quality> {
    let q = |i| Av1Quality::new(i).unwrap();
    Ladder {
        key: q(20),
        fine: q(10),
        coarse: q(45),
        middle: [q(30), q(25)],
    }
}

fn decoder_matches_encoder_across_two_options_and_jumps<L: CodecLibrary>(q: Ladder<L::Quality>) {
    // Not a multiple of 16 or 8 either way: the reference copies work on the aligned size.
    let (w, h) = (50, 34);
    let mut enc = StateEncoder::<L>::new(w, h).unwrap();
    let mut dec = StateDecoder::<L>::new().unwrap();
    let k = enc
        .encode(&State::initial(), &picture(w, h, 0), q.key)
        .unwrap();
    assert!(k.keyframe);
    let (s1, p1) = dec.decode(&State::initial(), &k.bytes).unwrap();
    assert_eq!(s1.hash(), k.target.hash());
    assert!(p1.visible_eq(&k.target.picture().unwrap()));
    // Two options from one state; send the coarser; then jump back to the keyframe's state.
    let a = enc.encode(&k.target, &picture(w, h, 1), q.fine).unwrap();
    let b = enc.encode(&k.target, &picture(w, h, 1), q.coarse).unwrap();
    assert!(!a.keyframe && !b.keyframe);
    assert!(a.len() > b.len(), "finer quantizer should cost more bytes");
    let (s2, p2) = dec.decode(&s1, &b.bytes).unwrap();
    assert_eq!(s2.hash(), b.target.hash());
    assert!(p2.visible_eq(&b.target.picture().unwrap()));
    let c = enc
        .encode(&k.target, &picture(w, h, 2), q.middle[0])
        .unwrap();
    let (s3, _) = dec.decode(&s1, &c.bytes).unwrap();
    assert_eq!(s3.hash(), c.target.hash());
    // The option not sent decodes too, from the same state value.
    let (s4, _) = dec.decode(&s1, &a.bytes).unwrap();
    assert_eq!(s4.hash(), a.target.hash());
    // A fresh decoder fed a state it never decoded still decodes exactly.
    let mut fresh = StateDecoder::<L>::new().unwrap();
    let d = enc
        .encode(&b.target, &picture(w, h, 3), q.middle[1])
        .unwrap();
    let (s5, _) = fresh.decode(&b.target, &d.bytes).unwrap();
    assert_eq!(s5.hash(), d.target.hash());
}

fn wrong_state_and_garbage_are_errors<L: CodecLibrary>(q: L::Quality) {
    let (w, h) = (32, 32);
    let mut enc = StateEncoder::<L>::new(w, h).unwrap();
    let mut dec = StateDecoder::<L>::new().unwrap();
    let k = enc.encode(&State::initial(), &picture(w, h, 0), q).unwrap();
    let i = enc.encode(&k.target, &picture(w, h, 1), q).unwrap();
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
    // Still usable afterwards.
    let (s, _) = dec.decode(&k.target, &i.bytes).unwrap();
    assert_eq!(s.hash(), i.target.hash());
}

#[test]
fn vp8_decoder_matches_encoder_across_two_options_and_jumps() {
    decoder_matches_encoder_across_two_options_and_jumps::<Vp8Library>(vp8_ladder());
}

#[test]
fn av1_decoder_matches_encoder_across_two_options_and_jumps() {
    decoder_matches_encoder_across_two_options_and_jumps::<Av1Library>(av1_ladder());
}

#[test]
fn vp8_wrong_state_and_garbage_are_errors() {
    wrong_state_and_garbage_are_errors::<Vp8Library>(vp8_ladder().key);
}

#[test]
fn av1_wrong_state_and_garbage_are_errors() {
    wrong_state_and_garbage_are_errors::<Av1Library>(av1_ladder().key);
}
