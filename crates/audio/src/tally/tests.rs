use super::*;
use crate::metrics::summarize_audio;
use proptest::prelude::*;

const FRAME: Duration = Duration::from_millis(20);

/// A call's events: packets arriving, frames played, pictures shown, in time order.
#[derive(Debug, Clone)]
enum Event {
    Arrival(Arrival),
    Played(PlayedFrame),
    Shown(Instant, Instant),
}

/// A made-up call of `frames` stream frames from `choices` (one per frame: how it plays,
/// whether its packet comes and how late, how far the clock moves): every kind of frame,
/// losses, late packets, skipped frames, pictures between.
fn call(choices: &[(u8, u8, u8)]) -> Vec<Event> {
    let mut events = Vec::new();
    let (mut at, mut seq, mut frame) = (Instant::from_millis(100), 0u32, 0u64);
    // The delay wanders (by the µs) between 40 and 400 ms.
    let mut delay = 100_000u64;
    for &(how, packet, step) in choices {
        let captured = Instant::ZERO + FRAME * frame as u32;
        delay = (delay + u64::from(step) * 37)
            .saturating_sub(4_700)
            .clamp(40_000, 400_000);
        at = (at + Duration::from_millis(1)).max(captured + Duration::from_micros(delay));
        match packet % 13 {
            // DTX: no packet sent, no sequence number spent.
            0 => {}
            // Lost.
            1 | 2 => seq += 1,
            // Late: after its frame played.
            3 => {
                let late = at + FRAME * 3;
                events.push(Event::Arrival(Arrival {
                    frame,
                    seq,
                    at: late,
                }));
                seq += 1;
            }
            _ => {
                let on_time = at.checked_sub(FRAME).unwrap_or(at).max(captured);
                events.push(Event::Arrival(Arrival {
                    frame,
                    seq,
                    at: on_time,
                }));
                seq += 1;
            }
        }
        let kind = match how % 8 {
            0 => PlayedKind::Missing,
            1 => PlayedKind::Fec,
            2 => PlayedKind::Accelerated,
            3 => PlayedKind::Stretch,
            4 => PlayedKind::Stall,
            _ => PlayedKind::Packet,
        };
        let stream = !matches!(kind, PlayedKind::Stretch | PlayedKind::Stall);
        events.push(Event::Played(PlayedFrame {
            at,
            frame: stream.then_some(frame),
            captured,
            kind,
        }));
        if how % 3 == 0 {
            events.push(Event::Shown(
                captured
                    .checked_sub(Duration::from_millis(u64::from(step % 40)))
                    .unwrap_or(Instant::ZERO),
                at + Duration::from_millis(u64::from(step % 25)),
            ));
        }
        if stream {
            frame += 1 + u64::from(how == 255);
        }
    }
    // Late packets and pictures are told when they happen.
    events.sort_by_key(|e| match e {
        Event::Arrival(a) => a.at,
        Event::Played(p) => p.at,
        Event::Shown(_, at) => *at,
    });
    events
}

fn tally_of(events: &[Event], config: TallyConfig) -> (AudioTally, usize) {
    let mut tally = AudioTally::new(config, FRAME);
    let mut most = 0;
    for e in events {
        match *e {
            Event::Arrival(a) => tally.on_arrival(a),
            Event::Played(p) => tally.on_played(p),
            Event::Shown(captured, at) => tally.on_shown(captured, at),
        }
        most = most.max(tally.held());
    }
    (tally, most)
}

fn batch(events: &[Event]) -> AudioSummary {
    let (mut played, mut arrivals, mut shown) = (Vec::new(), Vec::new(), Vec::new());
    for e in events {
        match *e {
            Event::Arrival(a) => arrivals.push(a),
            Event::Played(p) => played.push(p),
            Event::Shown(captured, at) => shown.push((captured, at)),
        }
    }
    summarize_audio(&played, &arrivals, &shown, FRAME)
}

proptest! {
    /// Within its bounds the tally's figures are the whole log's, to the last bit.
    #[test]
    fn the_tally_is_the_logs_figures(
        choices in proptest::collection::vec(any::<(u8, u8, u8)>(), 0..400)
    ) {
        let events = call(&choices);
        let (tally, _) = tally_of(&events, TallyConfig::default());
        prop_assert_eq!(tally.summary(), batch(&events));
        prop_assert_eq!(tally.finish(), batch(&events));
    }
}

/// Issue 57: an hour of 20 ms frames (180 000, with losses, late packets, a delay that
/// keeps changing and pictures between) holds the tally to a few thousand elements, and its
/// figures stay those of the log where the delays fit its bins.
#[test]
fn an_hour_of_frames_keeps_the_tally_bounded() {
    let mut state = 7u32;
    let mut next = || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as u8
    };
    let choices: Vec<(u8, u8, u8)> = (0..180_000).map(|_| (next(), next(), next())).collect();
    let events = call(&choices);
    let config = TallyConfig::default();
    let (tally, most) = tally_of(&events, config);
    let bound = config.delay_bins
        + 3 * config.horizon_frames as usize
        + config.recent_frames
        + config.pending_pictures
        + 16;
    assert!(most <= bound, "held {most} elements, bound {bound}");
    let exact = batch(&events);
    assert!(
        tally.stream.delays.step > 1,
        "the delays stayed in their bins"
    );
    let s = tally.finish();
    assert_eq!(s.frames_played, exact.frames_played);
    assert_eq!(s.concealed_fraction, exact.concealed_fraction);
    assert_eq!(s.skipped_fraction, exact.skipped_fraction);
    assert_eq!(s.stalled_fraction, exact.stalled_fraction);
    assert_eq!(s.pictures_scored, exact.pictures_scored);
    assert_eq!(
        s.av_skew_in_window_fraction,
        exact.av_skew_in_window_fraction
    );
    // The delays outgrew the exact bins: counted to a coarser step, within it.
    assert!(
        (s.delay_mean_ms - exact.delay_mean_ms).abs() < 0.1,
        "{s:?} {exact:?}"
    );
    assert!(
        (s.delay_p95_ms - exact.delay_p95_ms).abs() < 0.1,
        "{s:?} {exact:?}"
    );
}
