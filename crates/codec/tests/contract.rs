//! The functional codecs' contract, one body for VP8 and AV1: for every frame, the decoder's
//! picture and state hash equal the encoder's reconstruction — for either of two options
//! encoded from one state on two encoder instances (both are decoded, one is "sent"), across
//! random choices between them, skips, jumps back to older states, fresh keyframes, and a
//! receiver that keeps few states and evicts the oldest; a frame from an evicted state is
//! refused and leaves the receiver's states as they were.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_codec::{
    CodecError, FunctionalCodec, FunctionalDecoder, FunctionalEncoder, Image, Quality, State,
    StateHash, SyntheticSource, Y4mReader,
};

/// States the receiver keeps (the sender keeps more, so some jumps reach evicted states).
const RECEIVER_STATES: usize = 6;
/// States the sender may jump back to.
const SENDER_STATES: usize = 12;

/// A codec and the sender's walk on its own quantizer scale: the two options are `down`
/// finer and `up` coarser than the last quantizer sent, within `floor..=ceiling`.
struct Walk {
    codec: FunctionalCodec,
    start: i32,
    down: i32,
    up: i32,
    floor: u8,
    ceiling: u8,
}

/// VP8's index 0..=127: the original Salsify steps, -17 and +23.
const VP8: Walk = Walk {
    codec: FunctionalCodec::Vp8,
    start: 64,
    down: 17,
    up: 23,
    floor: 3,
    ceiling: 127,
};

/// libaom's 0..=63: fine enough to cost, coarse enough to still resemble the source (the
/// walk is level: -7 and +7, each sent half the time).
const AV1: Walk = Walk {
    codec: FunctionalCodec::Av1,
    start: 32,
    down: 7,
    up: 7,
    floor: 4,
    ceiling: 48,
};

#[derive(Debug, Default)]
struct RunStats {
    sent: usize,
    skipped: usize,
    jumps: usize,
    /// Jumps back whose frame the receiver decoded (its source state was still kept).
    jumps_decoded: usize,
    keyframes: usize,
    refused_evicted: usize,
    min_psnr: f64,
}

/// Luma PSNR, to check that decoded pictures are the source content, not just consistent.
fn luma_psnr(a: &Image, b: &Image) -> f64 {
    let (mut se, mut n) = (0u64, 0u64);
    for (ra, rb) in a.y().rows().zip(b.y().rows()) {
        for (&x, &y) in ra.iter().zip(rb) {
            let d = i64::from(x) - i64::from(y);
            se += (d * d) as u64;
            n += 1;
        }
    }
    if se == 0 {
        return 99.0;
    }
    10.0 * (255.0f64 * 255.0 * n as f64 / se as f64).log10()
}

/// The receiver's bounded store of decoded states, oldest first.
struct Receiver {
    decoder: FunctionalDecoder,
    states: VecDeque<State>,
}

impl Receiver {
    fn find(&self, hash: StateHash) -> Option<&State> {
        if hash == StateHash::INITIAL {
            return None;
        }
        self.states.iter().find(|s| s.hash() == hash)
    }

    fn keep(&mut self, state: State) {
        if self.find(state.hash()).is_none() {
            self.states.push_back(state);
        }
        while self.states.len() > RECEIVER_STATES {
            self.states.pop_front();
        }
    }

    fn hashes(&self) -> Vec<StateHash> {
        self.states.iter().map(State::hash).collect()
    }
}

/// Drives the sender/receiver pattern of Salsify over `frames` and checks every decode.
fn run_contract(walk: &Walk, frames: impl Iterator<Item = Image>, seed: u64) -> RunStats {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut encoders: Option<[FunctionalEncoder; 2]> = None;
    // Decodes the option not sent, from the same state value.
    let mut other_decoder = FunctionalDecoder::new().unwrap();
    let mut receiver = Receiver {
        decoder: FunctionalDecoder::new().unwrap(),
        states: VecDeque::new(),
    };
    let mut sender_states: Vec<State> = Vec::new();
    let mut source = State::initial();
    let mut quality = walk.start;
    let mut stats = RunStats {
        min_psnr: f64::INFINITY,
        ..RunStats::default()
    };
    let (floor, ceiling) = (
        Quality::new(walk.floor).unwrap(),
        Quality::new(walk.ceiling).unwrap(),
    );
    for image in frames {
        let encoders = encoders.get_or_insert_with(|| {
            let (w, h) = (image.width(), image.height());
            let encoder = || FunctionalEncoder::new(walk.codec, w, h, -8).unwrap();
            [encoder(), encoder()]
        });
        let mut jumped = false;
        if !sender_states.is_empty() && rng.gen_bool(0.25) {
            source = sender_states[rng.gen_range(0..sender_states.len())].clone();
            stats.jumps += 1;
            jumped = true;
        } else if rng.gen_bool(0.02) {
            source = State::initial();
        }
        let better = Quality::clamped(quality - walk.down, floor, ceiling);
        let worse = Quality::clamped(quality + walk.up, floor, ceiling);
        let better = encoders[0].encode(&source, &image, better).unwrap();
        let worse = encoders[1].encode(&source, &image, worse).unwrap();
        assert_eq!(better.source, worse.source);
        assert!(better.quality <= worse.quality);
        if rng.gen_range(0..10) < 2 {
            stats.skipped += 1;
            continue;
        }
        let (choice, other) = if rng.gen_bool(0.5) {
            (better, worse)
        } else {
            (worse, better)
        };
        let receiver_source = if choice.keyframe {
            State::initial()
        } else {
            match receiver.find(choice.source) {
                Some(s) => s.clone(),
                None => {
                    // Evicted: the frame is refused and the receiver's states are untouched.
                    let before = receiver.hashes();
                    let latest = receiver.states.back().cloned().unwrap_or_default();
                    let err = receiver.decoder.decode(&latest, &choice.bytes).unwrap_err();
                    assert!(matches!(err, CodecError::WrongSourceState { .. }), "{err}");
                    assert_eq!(receiver.hashes(), before);
                    stats.refused_evicted += 1;
                    // The sender hears of it and starts again from a keyframe.
                    source = State::initial();
                    continue;
                }
            }
        };
        // Both options decode exactly from the one state value.
        let (other_reached, other_picture) = other_decoder
            .decode(&receiver_source, &other.bytes)
            .unwrap();
        assert_eq!(other_reached.hash(), other.target.hash());
        assert!(other_picture.visible_eq(&other.target.picture().unwrap()));
        let (reached, picture) = receiver
            .decoder
            .decode(&receiver_source, &choice.bytes)
            .unwrap();
        assert_eq!(reached.hash(), choice.target.hash(), "state hash diverged");
        assert!(
            picture.visible_eq(&choice.target.picture().unwrap()),
            "decoded picture differs from the encoder's reconstruction"
        );
        stats.min_psnr = stats.min_psnr.min(luma_psnr(&picture, &image));
        stats.sent += 1;
        stats.jumps_decoded += usize::from(jumped && !choice.keyframe);
        stats.keyframes += usize::from(choice.keyframe);
        quality = i32::from(choice.quality.index());
        receiver.keep(reached);
        sender_states.push(choice.target.clone());
        if sender_states.len() > SENDER_STATES {
            sender_states.remove(0);
        }
        source = choice.target;
    }
    stats
}

fn check(stats: &RunStats, frames: usize) {
    println!("{stats:?}");
    assert!(stats.sent > frames / 2, "{stats:?}");
    assert!(stats.skipped > 0 && stats.jumps_decoded > 0 && stats.keyframes >= 1);
    assert!(
        stats.min_psnr > 25.0,
        "decoded pictures do not resemble the source"
    );
}

fn synthetic(width: u32, height: u32, frames: usize) -> impl Iterator<Item = Image> {
    SyntheticSource::new(width, height, 30, 11)
        .unwrap()
        .take(frames)
        .map(|f| f.image)
}

/// The contract on `frames` synthetic pictures of `width` x `height`.
fn contract_on_synthetic(walk: &Walk, (width, height): (u32, u32), frames: usize, seed: u64) {
    let stats = run_contract(walk, synthetic(width, height, frames), seed);
    check(&stats, frames);
}

/// The contract at a size that is not a multiple of 16 (VP8's macroblock) or 8 (libaom's
/// frame buffers), long enough that some jumps reach states the receiver evicted.
fn contract_at_an_odd_size(walk: &Walk, frames: usize) {
    let stats = run_contract(walk, synthetic(202, 118, frames), 1);
    check(&stats, frames);
    assert!(stats.refused_evicted > 0, "{stats:?}");
}

/// The shared 320x180 clip of real camera content, played forwards then backwards (every
/// `step`-th picture).
fn contract_on_real_content(walk: &Walk, step: usize) {
    let dir = std::env::var("SALSIFY_VIDEO_DIR").unwrap_or_else(|_| "../../../shared/video".into());
    let path = std::path::Path::new(&dir).join("FourPeople_320x180_60_120f.y4m");
    let Ok(file) = std::fs::File::open(&path) else {
        println!("SKIP: {} not found (set SALSIFY_VIDEO_DIR)", path.display());
        return;
    };
    let clip: Vec<Image> = Y4mReader::new(std::io::BufReader::new(file))
        .unwrap()
        .map(|f| f.unwrap())
        .collect();
    assert_eq!(clip.len(), 120);
    let frames = clip.iter().chain(clip.iter().rev()).step_by(step).cloned();
    let stats = run_contract(walk, frames, 4);
    check(&stats, 240 / step);
}

#[test]
fn vp8_contract_holds_at_a_size_not_a_multiple_of_16() {
    contract_at_an_odd_size(&VP8, 300);
}

#[test]
fn av1_contract_holds_at_a_size_not_a_multiple_of_8() {
    contract_at_an_odd_size(&AV1, 80);
}

#[test]
fn vp8_contract_holds_at_640x360() {
    contract_on_synthetic(&VP8, (640, 360), 60, 2);
}

#[test]
fn av1_contract_holds_at_640x360() {
    contract_on_synthetic(&AV1, (640, 360), 40, 2);
}

#[test]
fn vp8_contract_holds_at_1280x720() {
    contract_on_synthetic(&VP8, (1280, 720), 60, 3);
}

#[test]
fn av1_contract_holds_at_1280x720() {
    contract_on_synthetic(&AV1, (1280, 720), 24, 3);
}

#[test]
fn vp8_contract_holds_on_real_content() {
    contract_on_real_content(&VP8, 1);
}

#[test]
fn av1_contract_holds_on_real_content() {
    contract_on_real_content(&AV1, 2);
}
