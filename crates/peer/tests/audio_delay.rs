//! The audio barcode's delay analysis on recordings made by hand: the synthetic voice
//! (Salsify's own source), heard a known time later by a receiver whose recording starts at
//! another moment, with a stretch lost; the reader must give back the delay it was made with.

use salsify_audio::{AudioSource, SyntheticSpeech, SAMPLE_RATE};
use salsify_peer::audio_delay::{audio_delay, Recording};

const RATE: usize = SAMPLE_RATE as usize;

fn voice(seconds: usize) -> Vec<i16> {
    let mut samples = vec![0i16; seconds * RATE];
    SyntheticSpeech::new(0).fill(0, &mut samples);
    samples
}

/// What a receiver that started recording at `start_s` hears of `sent` (which started at
/// `sent_start_s`) delayed by `delay_s`, with `lost` (seconds on the shared clock) silenced.
fn heard(
    sent: &[i16],
    sent_start_s: f64,
    delay_s: f64,
    start_s: f64,
    seconds: usize,
    lost: (f64, f64),
) -> Recording {
    let samples = (0..seconds * RATE)
        .map(|i| {
            let t = start_s + i as f64 / RATE as f64;
            if t >= lost.0 && t < lost.1 {
                return 0;
            }
            let at = ((t - delay_s - sent_start_s) * RATE as f64).round();
            if at < 0.0 {
                0
            } else {
                sent.get(at as usize).copied().unwrap_or(0)
            }
        })
        .collect();
    Recording { samples, start_s }
}

#[test]
fn a_known_delay_is_read_back_and_a_lost_mark_is_counted() {
    let sent = Recording {
        samples: voice(12),
        start_s: 1_000.0,
    };
    let delay_s = 0.137;
    // The receiver starts 2.4 s into the voice; mark 6 (sent at 1006 s) is lost.
    let received = heard(
        &sent.samples,
        sent.start_s,
        delay_s,
        1_002.4,
        9,
        (1_006.1, 1_006.2),
    );
    let result = audio_delay(&sent, &received, None);
    let numbers: Vec<u32> = result.delays.iter().map(|d| d.number).collect();
    // Mark 2 was heard at 1002.137 s, before the receiver started; 3..=10 fit, 6 is lost.
    assert_eq!(numbers, [3, 4, 5, 7, 8, 9, 10]);
    for d in &result.delays {
        assert!((d.delay_ms - 137.0).abs() < 2.0, "{d:?}");
    }
    let f = &result.figures;
    assert!(
        (f.audio_delay_mean_ms.unwrap() - 137.0).abs() < 2.0,
        "{f:?}"
    );
    assert!((f.audio_delay_p95_ms.unwrap() - 137.0).abs() < 2.0, "{f:?}");
    assert_eq!(f.audio_marks_expected, 8);
    assert_eq!(f.audio_marks_heard, 7);
    assert_eq!(result.sent_marks, 12);
}

#[test]
fn a_delay_that_grows_is_followed_mark_by_mark() {
    let sent = Recording {
        samples: voice(8),
        start_s: 50.0,
    };
    // Two halves heard with different delays: 80 ms, then 400 ms (a jitter buffer growing).
    let early = heard(&sent.samples, 50.0, 0.080, 50.0, 4, (0.0, 0.0));
    let late = heard(&sent.samples, 50.0, 0.400, 54.0, 4, (0.0, 0.0));
    let mut samples = early.samples;
    samples.extend(late.samples);
    let received = Recording {
        samples,
        start_s: 50.0,
    };
    let result = audio_delay(&sent, &received, None);
    let by_mark: Vec<(u32, i64)> = result
        .delays
        .iter()
        .map(|d| (d.number, d.delay_ms.round() as i64))
        .collect();
    assert_eq!(by_mark.len(), 8, "{by_mark:?}");
    for (number, ms) in by_mark {
        let expected = if number < 4 { 80 } else { 400 };
        assert!((ms - expected).abs() <= 2, "mark {number}: {ms} ms");
    }
}
