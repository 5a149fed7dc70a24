//! Frames damaged in transit never crash either codec's decoder, and never yield a picture
//! other than the encoder's reconstruction: decode either fails or reaches exactly the
//! frame's target state. One body for VP8 and AV1.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use salsify_codec::{
    Av1Library, Av1Quality, CodecLibrary, EncodedFrame, Quality, State, StateDecoder, StateEncoder,
    SyntheticSource, Vp8Library,
};

/// A keyframe and an inter frame of codec `L`.
type Frames<L> = (
    EncodedFrame<<L as CodecLibrary>::Quality>,
    EncodedFrame<<L as CodecLibrary>::Quality>,
);

/// A keyframe and an inter frame of real content at quantizer `q`.
fn make_frames<L: CodecLibrary>(q: L::Quality) -> Frames<L> {
    let mut source = SyntheticSource::new(64, 48, 30, 9).unwrap();
    let mut enc = StateEncoder::<L>::new(64, 48).unwrap();
    let key = enc
        .encode(&State::initial(), &source.next_frame().image, q)
        .unwrap();
    let inter = enc
        .encode(&key.target, &source.next_frame().image, q)
        .unwrap();
    (key, inter)
}

/// VP8's frames, made once.
fn vp8_frames() -> &'static Frames<Vp8Library> {
    static FRAMES: std::sync::OnceLock<Frames<Vp8Library>> = std::sync::OnceLock::new();
    FRAMES.get_or_init(|| make_frames::<Vp8Library>(Quality::new(40).unwrap()))
}

/// AV1's frames, made once.
fn av1_frames() -> &'static Frames<Av1Library> {
    static FRAMES: std::sync::OnceLock<Frames<Av1Library>> = std::sync::OnceLock::new();
    FRAMES.get_or_init(|| make_frames::<Av1Library>(Av1Quality::new(30).unwrap()))
}

#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, mask: u8 },
    Truncate { keep: usize },
    Append(Vec<u8>),
    Overwrite { at: usize, bytes: Vec<u8> },
}

fn damage() -> impl Strategy<Value = Vec<Damage>> {
    let one = prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        any::<usize>().prop_map(|keep| Damage::Truncate { keep }),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(Damage::Append),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..32))
            .prop_map(|(at, bytes)| Damage::Overwrite { at, bytes }),
    ];
    prop::collection::vec(one, 1..4)
}

fn apply(bytes: &mut Vec<u8>, damage: &[Damage]) {
    for d in damage {
        let n = bytes.len().max(1);
        match d {
            Damage::Flip { at, mask } => {
                if let Some(b) = bytes.get_mut(at % n) {
                    *b ^= mask;
                }
            }
            Damage::Truncate { keep } => bytes.truncate(keep % n),
            Damage::Append(extra) => bytes.extend_from_slice(extra),
            Damage::Overwrite { at, bytes: new } => {
                for (i, b) in new.iter().enumerate() {
                    if let Some(slot) = bytes.get_mut((at + i) % n) {
                        *slot = *b;
                    }
                }
            }
        }
    }
}

/// A damaged copy of the keyframe or the inter frame fails or decodes exactly, and the
/// decoder still decodes the undamaged frame afterwards.
fn damaged_frame_fails_or_decodes_exactly<L: CodecLibrary>(
    (key, inter_frame): &Frames<L>,
    damage: &[Damage],
    inter: bool,
) -> Result<(), TestCaseError> {
    let (frame, state) = if inter {
        (inter_frame, key.target.clone())
    } else {
        (key, State::initial())
    };
    let mut bytes = frame.bytes.clone();
    apply(&mut bytes, damage);
    let mut decoder = StateDecoder::<L>::new().unwrap();
    if let Ok((reached, picture)) = decoder.decode(&state, &bytes) {
        // Only possible if the damage left the frame meaning the same thing.
        prop_assert_eq!(reached.hash(), frame.target.hash());
        prop_assert!(picture.visible_eq(&reached.picture().unwrap()));
    }
    // The decoder is still usable.
    let (reached, _) = decoder.decode(&state, &frame.bytes).unwrap();
    prop_assert_eq!(reached.hash(), frame.target.hash());
    Ok(())
}

/// Arbitrary bytes, from the initial state and from a keyframe's, never crash the decoder.
fn arbitrary_bytes_do_not_crash<L: CodecLibrary>(frames: &Frames<L>, bytes: &[u8]) {
    let mut decoder = StateDecoder::<L>::new().unwrap();
    let _ = decoder.decode(&State::initial(), bytes);
    let _ = decoder.decode(&frames.0.target, bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn vp8_damaged_frames_fail_or_decode_exactly(damage in damage(), inter in any::<bool>()) {
        damaged_frame_fails_or_decodes_exactly::<Vp8Library>(vp8_frames(), &damage, inter)?;
    }

    #[test]
    fn av1_damaged_frames_fail_or_decode_exactly(damage in damage(), inter in any::<bool>()) {
        damaged_frame_fails_or_decodes_exactly::<Av1Library>(av1_frames(), &damage, inter)?;
    }

    #[test]
    fn vp8_arbitrary_bytes_never_crash(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        arbitrary_bytes_do_not_crash::<Vp8Library>(vp8_frames(), &bytes);
    }

    #[test]
    fn av1_arbitrary_bytes_never_crash(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        arbitrary_bytes_do_not_crash::<Av1Library>(av1_frames(), &bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The AV1 OBU parser on its own: any bytes, or a real frame with a damaged OBU walk,
    /// give an answer without panicking, and a keyframe it accepts has a size an `Image` can
    /// take.
    #[test]
    fn obu_parser_answers_anything(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        damage in damage(),
        inter in any::<bool>(),
    ) {
        let _ = salsify_codec::av1::parse_av1_frame(&bytes);
        let (key, inter_frame) = av1_frames();
        let mut real = if inter { inter_frame.bytes.clone() } else { key.bytes.clone() };
        apply(&mut real, &damage);
        if let Ok(info) = salsify_codec::av1::parse_av1_frame(&real) {
            if let Some((w, h)) = info.header.keyframe_size {
                prop_assert!(salsify_codec::image::check_size(w, h).is_ok());
            }
        }
    }
}
