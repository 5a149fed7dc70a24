//! A link that stalls (delivers nothing for a while, then everything it held, in order): the
//! player waits the stall out instead of concealing the audio it held up, then sheds the
//! delay by playing faster, hearing every frame once and in order; without pictures to tell
//! a stall from DTX's silence it waits only briefly. A DTX pause while pictures keep coming
//! is not a stall (beyond a frame or two at its start).

use salsify_audio::{
    read_marks, summarize_audio, Arrival, AudioPlayer, AudioSender, AudioSource, LoopedSamples,
    OpusConfig, PlayedFrame, PlayedKind, PlayerConfig, SyntheticSpeech,
};
use salsify_time::{Duration, Instant};

const STALL_FROM: u64 = 3_000;
const STALL_TO: u64 = 3_400;
const BASE_DELAY: u64 = 40;

/// When something sent at `sent` (ms) arrives: 40 ms later, except that with `stall` nothing
/// leaves during the stall (what was sent waits for its end, in order).
fn arrival(sent: u64, stall: bool) -> u64 {
    let ready = sent + BASE_DELAY;
    if stall && (STALL_FROM..STALL_TO).contains(&ready) {
        STALL_TO
    } else {
        ready
    }
}

struct Run {
    samples: Vec<i16>,
    shown: Vec<(Instant, Instant)>,
    /// Every frame played and every packet received (the player keeps no log).
    played: Vec<PlayedFrame>,
    arrivals: Vec<Arrival>,
}

/// 6 s of `source` over the link (stalling with `stall`); with `video`, a picture (30 fps)
/// sent 5 ms after its capture over the same link is shown when it arrives.
fn run(source: Box<dyn AudioSource>, stall: bool, video: bool) -> Run {
    let mut sender = AudioSender::new(&OpusConfig::default(), source, Instant::ZERO).unwrap();
    let mut player = AudioPlayer::new(PlayerConfig::default()).unwrap();
    let mut in_flight: Vec<(u64, Vec<u8>)> = Vec::new();
    let (mut samples, mut shown) = (Vec::new(), Vec::new());
    let (mut played, mut arrivals) = (Vec::new(), Vec::new());
    let mut next_picture = 0u64;
    for ms in 0..6_000u64 {
        let now = Instant::from_millis(ms);
        while let Some(packet) = sender.poll(now).unwrap() {
            in_flight.push((arrival(ms, stall), packet.encode()));
        }
        while in_flight.first().is_some_and(|(at, _)| *at <= ms) {
            let (_, bytes) = in_flight.remove(0);
            arrivals.push(player.handle_datagram(now, &bytes).unwrap());
        }
        let captured = next_picture * 100 / 3;
        if video && arrival(captured + 5, stall) <= ms {
            let captured = Instant::from_millis(captured);
            player.handle_video_shown(now, captured);
            shown.push((captured, now));
            next_picture += 1;
        }
        while let Some((pcm, frame)) = player.poll_frame(now) {
            samples.extend(pcm);
            played.push(frame);
        }
    }
    Run {
        samples,
        shown,
        played,
        arrivals,
    }
}

#[test]
fn a_stall_is_waited_out_and_caught_up_without_losing_audio() {
    let Run {
        samples,
        shown,
        played,
        arrivals,
        ..
    } = run(Box::new(SyntheticSpeech::new(3)), true, true);
    let s = summarize_audio(&played, &arrivals, &shown, Duration::from_millis(20));
    assert_eq!(s.concealed_fraction, 0.0, "{s:?}");
    assert_eq!(s.skipped_fraction, 0.0, "{s:?}");
    // Every stream frame once, in order.
    let frames: Vec<u64> = played.iter().filter_map(|p| p.frame).collect();
    assert!(frames.windows(2).all(|w| w[1] == w[0] + 1), "{frames:?}");
    // Stall frames only during the stall.
    let stalls: Vec<u64> = played
        .iter()
        .filter(|p| p.kind == PlayedKind::Stall)
        .map(|p| p.at.as_micros() / 1000)
        .collect();
    assert!(stalls.len() >= 10 && stalls.len() <= 22, "{stalls:?}");
    assert!(
        stalls
            .iter()
            .all(|&t| (STALL_FROM..STALL_TO + 40).contains(&t)),
        "{stalls:?}"
    );
    // Then faster playing brings the delay back to where it was before the stall.
    assert!(played.iter().any(|p| p.kind == PlayedKind::Accelerated));
    let delay_at = |t: u64| {
        let p = played
            .iter()
            .rev()
            .find(|p| p.frame.is_some() && p.at <= Instant::from_millis(t))
            .unwrap();
        p.at.saturating_duration_since(p.captured)
    };
    let before = delay_at(STALL_FROM - 100);
    let during = delay_at(STALL_TO + 20);
    let after = delay_at(5_900);
    assert!(
        during > before + Duration::from_millis(250),
        "{before:?} {during:?}"
    );
    assert!(
        after <= before + Duration::from_millis(20),
        "{before:?} {after:?}"
    );
    // And the marks it played read back in order.
    let numbers: Vec<u32> = read_marks(&samples).iter().map(|m| m.number).collect();
    assert!(numbers.len() >= 3, "{numbers:?}");
    assert!(numbers.windows(2).all(|w| w[1] > w[0]), "{numbers:?}");
}

#[test]
fn without_pictures_a_stall_is_waited_for_only_briefly() {
    let Run {
        played, arrivals, ..
    } = run(Box::new(SyntheticSpeech::new(3)), true, false);
    let stalls = played
        .iter()
        .filter(|p| p.kind == PlayedKind::Stall)
        .count();
    // At most 40 ms at the stall's start and at each DTX pause; not the whole 400 ms.
    let in_stall = played
        .iter()
        .filter(|p| {
            p.kind == PlayedKind::Stall
                && (STALL_FROM..STALL_TO).contains(&(p.at.as_micros() / 1000))
        })
        .count();
    assert!(in_stall <= 2, "{in_stall} stall frames in the stall");
    assert!(stalls < 20, "{stalls}");
    let s = summarize_audio(&played, &arrivals, &[], Duration::from_millis(20));
    assert!(s.concealed_fraction > 0.0, "{s:?}");
}

#[test]
fn a_dtx_pause_while_pictures_come_is_not_a_stall() {
    // A second of silence (DTX sends next to nothing), then half a second of a tone, looped
    // (the run ends in a tone: silence after the last packet would count as concealed).
    let mut samples = vec![0i16; 48_000];
    samples.extend((0..24_000).map(|i| {
        (6000.0 * (2.0 * std::f64::consts::PI * 440.0 * i as f64 / 48_000.0).sin()) as i16
    }));
    let Run {
        shown,
        played,
        arrivals,
        ..
    } = run(Box::new(LoopedSamples::new(samples)), false, true);
    assert!(
        played
            .iter()
            .filter(|p| p.kind == PlayedKind::Missing)
            .count()
            > 20,
        "DTX left frames without a packet"
    );
    // A picture tells the player the link is alive 33 ms (a picture's interval) after its
    // news at worst, so a pause may begin with a frame or two of waiting, never more.
    let pauses = 4;
    let stalls = played
        .iter()
        .filter(|p| p.kind == PlayedKind::Stall)
        .count();
    assert!(stalls <= 2 * pauses, "{stalls} stall frames");
    let s = summarize_audio(&played, &arrivals, &shown, Duration::from_millis(20));
    assert_eq!(s.concealed_fraction, 0.0, "{s:?}");
    assert!(s.stalled_fraction < 0.03, "{s:?}");
}
