//! Issue 57: a long call through the player and the figures' tally holds no more than its
//! first minute did: the elements they hold are counted, frame by frame (the tally alone is
//! run over an hour in its unit tests; here every frame is decoded, so ten minutes).

use salsify_audio::{
    AudioPacket, AudioPlayer, AudioTally, OpusConfig, OpusEncoder, PlayerConfig, TallyConfig,
};
use salsify_time::{Duration, Instant};

#[test]
fn ten_minutes_of_frames_hold_the_player_and_its_tally_to_their_first_minute() {
    let config = OpusConfig::default();
    let frame = config.frame.duration();
    // One frame of a quiet tone, encoded once and sent as every frame (decoding is what runs).
    let pcm: Vec<i16> = (0..config.frame.samples())
        .map(|i| ((i as f64 * 0.06).sin() * 2_000.0) as i16)
        .collect();
    let payload = OpusEncoder::new(&config).unwrap().encode(&pcm).unwrap();
    let mut player = AudioPlayer::new(PlayerConfig::default()).unwrap();
    let mut tally = AudioTally::new(TallyConfig::default(), frame);
    let minute = 60 * 1_000 / frame.as_millis() as u32;
    let frames = 10 * minute;
    let (mut most_player, mut most_tally, mut played) = (0, 0, 0u64);
    let mut first_minute = (0, 0);
    for f in 0..frames {
        let captured = Instant::ZERO + frame * f;
        // Every 97th packet lost; the delay wanders between 40 and 139 ms.
        let now = captured + Duration::from_millis(40 + u64::from(f * 7 % 100));
        if f % 97 != 0 {
            let bytes = AudioPacket {
                seq: f,
                frame: f,
                captured,
                payload: payload.clone(),
            }
            .encode();
            tally.on_arrival(player.handle_datagram(now, &bytes).unwrap());
        }
        if f % 3 == 0 {
            player.handle_video_shown(now, captured);
            tally.on_shown(captured, now);
        }
        while let Some((_, p)) = player.poll_frame(now) {
            tally.on_played(p);
            played += 1;
        }
        most_player = most_player.max(player.held());
        most_tally = most_tally.max(tally.held());
        if f + 1 == minute {
            first_minute = (most_player, most_tally);
        }
    }
    // Nine minutes more add next to nothing (an arrival or two in the tally's windows).
    assert_eq!(
        most_player, first_minute.0,
        "the player grew after a minute"
    );
    assert!(
        most_tally <= first_minute.1 + first_minute.1 / 100,
        "the tally grew after a minute: {most_tally} vs {}",
        first_minute.1
    );
    assert!(played > u64::from(frames) * 9 / 10, "{played} of {frames}");
    // The player: packets waiting (at most 500) and its two windows.
    assert!(
        most_player <= 1_200,
        "the player held {most_player} elements"
    );
    let c = TallyConfig::default();
    let bound = c.delay_bins + 3 * c.horizon_frames as usize + c.recent_frames + c.pending_pictures;
    assert!(
        most_tally <= bound,
        "the tally held {most_tally} (bound {bound})"
    );
    let s = tally.finish();
    assert!(s.frames_played > 0 && s.fec_fraction > 0.0, "{s:?}");
}
