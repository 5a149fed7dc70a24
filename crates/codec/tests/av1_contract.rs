//! The AV1 codec's contract, as tests/contract.rs checks VP8's: for every frame, the decoder's
//! picture and state hash equal the encoder's reconstruction — for either of two options
//! encoded from one state (both are decoded, one is "sent"), across skips, jumps back to older
//! states, fresh keyframes, and a receiver that keeps few states and evicts the oldest; a frame
//! from an evicted state is refused and leaves the receiver's states as they were.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_codec::{
    Av1Decoder, Av1Encoder, Av1Quality, CodecError, Image, State, StateHash, SyntheticSource,
    Y4mReader,
};

/// States the receiver keeps (the sender keeps more, so some jumps reach evicted states).
const RECEIVER_STATES: usize = 6;
/// States the sender may jump back to.
const SENDER_STATES: usize = 12;

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
    decoder: Av1Decoder,
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

fn run_contract(frames: impl Iterator<Item = Image>, seed: u64) -> RunStats {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut encoders: Option<[Av1Encoder; 2]> = None;
    // Decodes the option not sent, from the same state value.
    let mut other_decoder = Av1Decoder::new().unwrap();
    let mut receiver = Receiver {
        decoder: Av1Decoder::new().unwrap(),
        states: VecDeque::new(),
    };
    let mut sender_states: Vec<State> = Vec::new();
    let mut source = State::initial();
    let mut quality = 32i32;
    let mut stats = RunStats {
        min_psnr: f64::INFINITY,
        ..RunStats::default()
    };
    // The ladder's ends for this test: fine enough to cost, coarse enough to still resemble
    // the source (the walk below is level: -7 and +7, each sent half the time).
    let (floor, ceiling) = (Av1Quality::new(4).unwrap(), Av1Quality::new(48).unwrap());
    for image in frames {
        let encoders = encoders.get_or_insert_with(|| {
            let (w, h) = (image.width(), image.height());
            [
                Av1Encoder::new(w, h).unwrap(),
                Av1Encoder::new(w, h).unwrap(),
            ]
        });
        let mut jumped = false;
        if !sender_states.is_empty() && rng.gen_bool(0.25) {
            source = sender_states[rng.gen_range(0..sender_states.len())].clone();
            stats.jumps += 1;
            jumped = true;
        } else if rng.gen_bool(0.02) {
            source = State::initial();
        }
        let better = encoders[0]
            .encode(
                &source,
                &image,
                Av1Quality::clamped(quality - 7, floor, ceiling),
            )
            .unwrap();
        let worse = encoders[1]
            .encode(
                &source,
                &image,
                Av1Quality::clamped(quality + 7, floor, ceiling),
            )
            .unwrap();
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

#[test]
fn contract_holds_at_a_size_not_a_multiple_of_8() {
    let frames = 80;
    let stats = run_contract(synthetic(202, 118, frames), 1);
    check(&stats, frames);
    assert!(stats.refused_evicted > 0, "{stats:?}");
}

#[test]
fn contract_holds_at_640x360() {
    let frames = 40;
    let stats = run_contract(synthetic(640, 360, frames), 2);
    check(&stats, frames);
}

#[test]
fn contract_holds_at_1280x720() {
    let frames = 24;
    let stats = run_contract(synthetic(1280, 720, frames), 3);
    check(&stats, frames);
}

/// The shared 320x180 clip of real camera content, played forwards then backwards.
#[test]
fn contract_holds_on_real_content() {
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
    let frames = clip.iter().chain(clip.iter().rev()).step_by(2).cloned();
    let stats = run_contract(frames, 4);
    check(&stats, 120);
}
