//! Sender to player through a lossy, jittery path: the marks the player played read back in
//! order at the delay it played them, concealment stays near what was lost, and lip sync
//! holds the audio to the video's delay.

use salsify_audio::{
    read_marks, summarize_audio, AudioPlayer, AudioSender, OpusConfig, PlayerConfig, SyncConfig,
    SyncMode, SyntheticSpeech,
};
use salsify_time::{Duration, Instant};

/// A deterministic stream of numbers in [0, 1).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Run {
    played: Vec<i16>,
    first_play: Instant,
    summary: salsify_audio::AudioSummary,
}

/// `seconds` of synthetic speech over a path of 40-100 ms delay losing `loss` of packets;
/// with `video_delay`, pictures (30 fps) are shown that long after capture.
fn run(seconds: u64, loss: f64, sync: SyncMode, video_delay: Option<Duration>) -> Run {
    let config = OpusConfig::default();
    let mut sender =
        AudioSender::new(&config, Box::new(SyntheticSpeech::new(11)), Instant::ZERO).unwrap();
    let mut player = AudioPlayer::new(PlayerConfig {
        sync: SyncConfig {
            mode: sync,
            ..SyncConfig::default()
        },
        ..PlayerConfig::default()
    })
    .unwrap();
    let mut rng = Lcg(5);
    let mut in_flight: Vec<(Instant, Vec<u8>)> = Vec::new();
    let mut shown = Vec::new();
    let mut played = Vec::new();
    let (mut frames, mut arrivals) = (Vec::new(), Vec::new());
    let mut first_play = None;
    let end = Instant::from_millis(seconds * 1000);
    let mut now = Instant::ZERO;
    let mut next_picture = 0u64;
    while now < end {
        while let Some(packet) = sender.poll(now).unwrap() {
            if rng.next() >= loss {
                let delay = Duration::from_millis(40 + (rng.next() * 60.0) as u64);
                in_flight.push((now + delay, packet.encode()));
            }
        }
        in_flight.sort_by_key(|(at, _)| *at);
        while in_flight.first().is_some_and(|(at, _)| *at <= now) {
            let (_, bytes) = in_flight.remove(0);
            arrivals.push(player.handle_datagram(now, &bytes).unwrap());
        }
        if let Some(delay) = video_delay {
            let captured = Instant::from_micros(next_picture * 33_333);
            if captured + delay <= now {
                player.handle_video_shown(now, captured);
                shown.push((captured, now));
                next_picture += 1;
            }
        }
        while let Some((samples, frame)) = player.poll_frame(now) {
            first_play.get_or_insert(frame.at);
            played.extend(samples);
            frames.push(frame);
        }
        now += Duration::from_millis(1);
    }
    let summary = summarize_audio(&frames, &arrivals, &shown, config.frame.duration());
    Run {
        played,
        first_play: first_play.unwrap(),
        summary,
    }
}

#[test]
fn the_barcode_reads_back_in_order_through_loss_and_jitter() {
    let r = run(20, 0.05, SyncMode::None, None);
    let marks = read_marks(&r.played);
    let numbers: Vec<u32> = marks.iter().map(|m| m.number).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    assert!(
        numbers.len() >= 16,
        "only {} of ~19 marks read: {numbers:?}",
        numbers.len()
    );
    // Each mark is heard at its capture time plus the playout delay.
    for m in &marks {
        let heard = r.first_play.as_micros() as f64 / 1e6 + m.at_seconds;
        let delay = heard - f64::from(m.number);
        assert!(
            (0.04..0.4).contains(&delay),
            "mark {} heard {delay:.3} s after capture",
            m.number
        );
    }
    let s = r.summary;
    assert!(
        s.concealed_fraction > 0.0 && s.concealed_fraction < 0.05,
        "{s:?}"
    );
    assert!(s.delay_p95_ms >= 100.0 && s.delay_p95_ms < 200.0, "{s:?}");
}

#[test]
fn a_clean_path_conceals_little_and_plays_at_its_least_delay() {
    let s = run(8, 0.0, SyncMode::None, None).summary;
    // Late packets only: while the buffer learns the path (it starts at the first packet's
    // delay) and then within its 1% target.
    assert!(s.concealed_fraction < 0.02, "{s:?}");
    // The path's worst delay (100 ms) plus the first frame's 20 ms and the margin, no more
    // than a frame or two of slack.
    assert!(s.delay_p95_ms < 160.0, "{s:?}");
}

#[test]
fn lip_sync_holds_the_audio_to_a_slower_video() {
    let video = Duration::from_millis(300);
    let synced = run(10, 0.01, SyncMode::Video, Some(video)).summary;
    assert!(synced.av_skew_in_window_fraction > 0.95, "{synced:?}");
    assert!(synced.delay_mean_ms > 300.0, "{synced:?}");
    let free = run(10, 0.01, SyncMode::None, Some(video)).summary;
    assert!(free.delay_mean_ms < 200.0, "{free:?}");
    assert!(free.av_skew_in_window_fraction < 0.05, "{free:?}");
}
