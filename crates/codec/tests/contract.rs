//! The codec's contract: for every frame, the decoder's picture and state hash equal the
//! encoder's reconstruction — across two encodes per frame on two encoder instances, random
//! choices between them, skips, jumps back to older states and fresh keyframes.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_codec::{
    Decoder, Encoder, Image, Quality, State, StateHash, SyntheticSource, Y4mReader,
};

/// What one contract run saw.
#[derive(Debug, Default)]
struct RunStats {
    sent: usize,
    skipped: usize,
    jumps: usize,
    keyframes: usize,
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

/// Drives the sender/receiver pattern of Salsify over `frames` and checks every decode.
fn run_contract(frames: impl Iterator<Item = Image>, seed: u64) -> RunStats {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut encoders: Option<[Encoder; 2]> = None;
    let mut decoder = Decoder::new().unwrap();
    // Sender keeps the encoder's states; receiver keeps the decoder's own, keyed by hash.
    let mut sender_states: Vec<State> = Vec::new();
    let mut receiver_states: HashMap<StateHash, State> = HashMap::new();
    receiver_states.insert(StateHash::INITIAL, State::initial());
    let mut source = State::initial();
    let mut quality = 64i32;
    let mut stats = RunStats {
        min_psnr: f64::INFINITY,
        ..RunStats::default()
    };
    for image in frames {
        let encoders = encoders.get_or_insert_with(|| {
            let (w, h) = (image.width(), image.height());
            [Encoder::new(w, h).unwrap(), Encoder::new(w, h).unwrap()]
        });
        if !sender_states.is_empty() && rng.gen_bool(0.1) {
            source = sender_states[rng.gen_range(0..sender_states.len())].clone();
            stats.jumps += 1;
        } else if rng.gen_bool(0.02) {
            source = State::initial();
        }
        let lo = Quality::clamped(quality - 17, Quality::new(3).unwrap(), Quality::WORST);
        let hi = Quality::clamped(quality + 23, Quality::new(3).unwrap(), Quality::WORST);
        let better = encoders[0].encode(&source, &image, lo).unwrap();
        let worse = encoders[1].encode(&source, &image, hi).unwrap();
        assert_eq!(better.source, worse.source);
        let choice = match rng.gen_range(0..10) {
            0..=1 => {
                stats.skipped += 1;
                continue;
            }
            2..=5 => better,
            _ => worse,
        };
        let receiver_source = &receiver_states[&choice.source];
        let (reached, picture) = decoder.decode(receiver_source, &choice.bytes).unwrap();
        assert_eq!(reached.hash(), choice.target.hash(), "state hash diverged");
        assert!(
            picture.visible_eq(&choice.target.picture().unwrap()),
            "decoded picture differs from the encoder's reconstruction"
        );
        stats.min_psnr = stats.min_psnr.min(luma_psnr(&picture, &image));
        stats.sent += 1;
        stats.keyframes += usize::from(choice.keyframe);
        quality = i32::from(choice.quality.index());
        receiver_states.insert(reached.hash(), reached);
        sender_states.push(choice.target.clone());
        if sender_states.len() > 16 {
            sender_states.remove(0);
        }
        source = choice.target;
    }
    stats
}

fn check(stats: &RunStats, frames: usize) {
    println!("{stats:?}");
    assert!(stats.sent > frames / 2, "{stats:?}");
    assert!(stats.skipped > 0 && stats.jumps > 0 && stats.keyframes >= 1);
    assert!(
        stats.min_psnr > 25.0,
        "decoded pictures do not resemble the source"
    );
}

fn synthetic(width: u32, height: u32, frames: usize) -> impl Iterator<Item = Image> {
    SyntheticSource::new(width, height, 60, 7)
        .unwrap()
        .take(frames)
        .map(|f| f.image)
}

#[test]
fn contract_holds_at_a_size_not_a_multiple_of_16() {
    let frames = 300;
    let stats = run_contract(synthetic(202, 118, frames), 1);
    check(&stats, frames);
}

#[test]
fn contract_holds_at_1280x720() {
    let frames = 60;
    let stats = run_contract(synthetic(1280, 720, frames), 2);
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
    let frames = clip.iter().chain(clip.iter().rev()).cloned();
    let stats = run_contract(frames, 3);
    check(&stats, 240);
}
