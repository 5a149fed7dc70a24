//! The sender alone, driven by hand: budget arithmetic, choice, skip cadence, forced sends,
//! quality stepping, source-state choice in loss recovery, eviction, pacing and grace.

use crate::fake::{FakeEncoder, FakeFrame, FakeState};
use crate::wire::{Ack, DataFragment, FragmentId};
use crate::*;
use salsify_codec::{Quality, StateHash};
use salsify_endpoint::{Choice, EncodeJob, EncodeRequest, SenderEvent, SenderOutput, SentFrame};
use salsify_time::{Duration, Instant};

type FakeSender = Sender<FakeFrame>;

/// The qualities a request asks for (Salsify asks for qualities in every mode but the
/// conventional-codec ablation's size target).
fn job_qualities(r: &EncodeRequest<FakeState>) -> &[Quality] {
    match &r.job {
        EncodeJob::Qualities { qualities, .. } => qualities,
        other => panic!("Salsify asks for qualities, not {other:?}"),
    }
}

/// The state a request encodes from.
fn source(r: &EncodeRequest<FakeState>) -> &FakeState {
    r.job.source().expect("a functional job")
}

/// The state a sent frame reaches, and the one it was encoded from.
fn target(f: &SentFrame) -> StateHash {
    f.states.expect("Salsify names its states").1
}

fn from(f: &SentFrame) -> StateHash {
    f.states.expect("Salsify names its states").0
}

fn q(i: u8) -> Quality {
    Quality::new(i).unwrap()
}

fn new_sender(config: SenderConfig) -> FakeSender {
    Sender::new(config, FakeState(StateHash::INITIAL)).unwrap()
}

/// Everything the sender outputs at `now`.
#[derive(Default)]
struct Drained {
    encodes: Vec<EncodeRequest<FakeState>>,
    datagrams: Vec<Vec<u8>>,
    events: Vec<SenderEvent>,
    timeout: Option<Instant>,
}

fn drain(s: &mut FakeSender, now: Instant) -> Drained {
    let mut d = Drained::default();
    loop {
        match s.poll_output(now) {
            SenderOutput::Encode(r) => d.encodes.push(r),
            SenderOutput::Transmit(b) => d.datagrams.push(b),
            SenderOutput::Event(e) => d.events.push(e),
            SenderOutput::Timeout(t) => {
                d.timeout = Some(t);
                return d;
            }
        }
    }
}

/// Sends every queued fragment by stepping time to each pacer deadline; returns them.
fn flush_pacer(s: &mut FakeSender, mut now: Instant) -> (Vec<Vec<u8>>, Instant) {
    let mut out = Vec::new();
    loop {
        let d = drain(s, now);
        out.extend(d.datagrams);
        match d.timeout {
            Some(t) if t != Instant::FAR_FUTURE => now = t,
            _ => return (out, now),
        }
    }
}

/// Offers picture `picture` at `now`, answers the encode at once, returns the request and
/// the events.
fn offer(
    s: &mut FakeSender,
    enc: &FakeEncoder,
    picture: u64,
    now: Instant,
) -> (EncodeRequest<FakeState>, Vec<SenderEvent>, Vec<Vec<u8>>) {
    s.handle_frame(now, picture, now);
    let mut d = drain(s, now);
    assert_eq!(d.encodes.len(), 1, "one encode request per picture");
    let request = d.encodes.remove(0);
    let frames = match &request.job {
        EncodeJob::Qualities {
            source, qualities, ..
        } => qualities
            .iter()
            .map(|&q| enc.encode(source, picture, q))
            .collect(),
        EncodeJob::SizeTarget { source, bytes, .. } => {
            let q = enc.quality_for_size(source, picture, *bytes, q(3), Quality::WORST);
            vec![enc.encode(source, picture, q)]
        }
        other => panic!("Salsify never asks for {other:?}"),
    };
    s.handle_encoded(now, request.id, frames).unwrap();
    let d = drain(s, now);
    (request, d.events, d.datagrams)
}

fn ack(
    number: u32,
    highest: FragmentId,
    tau_us: Option<u64>,
    lost: u32,
    held: &[StateHash],
) -> Vec<u8> {
    let a = Ack {
        connection_id: SenderConfig::default().connection_id,
        ack_number: number,
        acked: highest,
        highest,
        mean_interarrival: tau_us.map(Duration::from_micros),
        current_state: held.last().copied().unwrap_or(StateHash::INITIAL),
        frames_lost: lost,
        held_states: held.to_vec(),
        forecast: None,
    };
    let mut out = Vec::new();
    a.emit(&mut out).unwrap();
    out
}

/// Acknowledges the newest fragment the sender has sent (after flushing its pacer at `now`),
/// so nothing is in flight; `datagrams` are those already taken from it.
fn ack_everything(
    s: &mut FakeSender,
    mut datagrams: Vec<Vec<u8>>,
    number: u32,
    now: Instant,
    tau_us: Option<u64>,
) {
    datagrams.extend(flush_pacer(s, now).0);
    let newest = DataFragment::parse(datagrams.last().expect("data was sent"))
        .unwrap()
        .id();
    s.handle_datagram(now, &ack(number, newest, tau_us, 0, &[]))
        .unwrap();
}

fn sent(events: &[SenderEvent]) -> Option<SentFrame> {
    events.iter().find_map(|e| match e {
        SenderEvent::FrameSent(f) => Some(*f),
        _ => None,
    })
}

fn skipped(events: &[SenderEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, SenderEvent::PictureSkipped { .. }))
}

#[test]
fn budget_is_mtu_times_delay_over_tau_minus_in_flight() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    assert_eq!(s.budget(), None, "no estimate, nothing in flight: no limit");
    let (_, events, mut datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    assert_eq!(
        s.budget(),
        Some(0),
        "no estimate, a frame in flight: wait for feedback"
    );
    let first = sent(&events).expect("first frame is sent");
    let count = u64::from(first.fragments);
    assert!(count > 2, "a keyframe spans several fragments");
    datagrams.extend(flush_pacer(&mut s, Instant::ZERO).0);
    assert_eq!(datagrams.len() as u64, count);

    let t = Instant::from_millis(50);
    // Receiver has fragments 0..=1 of frame 0; tau = 1 ms: budget = 1400 x (100 - (count - 2)).
    s.handle_datagram(
        t,
        &ack(0, FragmentId { frame: 0, index: 1 }, Some(1000), 0, &[]),
    )
    .unwrap();
    assert_eq!(s.stats().fragments_in_flight, count - 2);
    assert_eq!(s.budget(), Some(1400 * (100 - (count as usize - 2))));
    // tau = 3 ms: 100 / 3 = 33 fragments (integer division as in the original).
    s.handle_datagram(
        t,
        &ack(1, FragmentId { frame: 0, index: 1 }, Some(3000), 0, &[]),
    )
    .unwrap();
    assert_eq!(s.budget(), Some(1400 * (33 - (count as usize - 2))));
    // An older ACK (lower number) does not change the estimate ...
    s.handle_datagram(
        t,
        &ack(0, FragmentId { frame: 0, index: 1 }, Some(10), 0, &[]),
    )
    .unwrap();
    assert_eq!(
        s.stats().mean_interarrival,
        Some(Duration::from_micros(3000))
    );
    assert_eq!(s.stats().stale_acks, 1);
    // ... but everything received lowers N.
    let last = FragmentId {
        frame: 0,
        index: count as u16 - 1,
    };
    s.handle_datagram(t, &ack(2, last, Some(3000), 0, &[]))
        .unwrap();
    assert_eq!(s.budget(), Some(1400 * 33));
    // tau above d: no room at all; tau = 0 is treated as 1 µs, never a division by zero.
    s.handle_datagram(t, &ack(3, last, Some(200_000), 0, &[]))
        .unwrap();
    assert_eq!(s.budget(), Some(0));
    s.handle_datagram(t, &ack(4, last, Some(0), 0, &[]))
        .unwrap();
    assert_eq!(s.budget(), Some(1400 * 100_000));
    // An ACK for a fragment never sent is not believed.
    s.handle_datagram(
        t,
        &ack(5, FragmentId { frame: 9, index: 0 }, Some(1000), 0, &[]),
    )
    .unwrap();
    assert_eq!(s.stats().fragments_in_flight, 0);
}

#[test]
fn two_options_step_quality_down_17_and_up_23_within_3_to_127() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    // tau = 0 (taken as 1 µs): a budget of 140 MB, the better (finer) option always fits.
    s.handle_datagram(
        Instant::ZERO,
        &ack(0, FragmentId::default(), Some(0), 0, &[]),
    )
    .unwrap();
    let mut asked = Vec::new();
    for picture in 0..6 {
        let (request, events, _) = offer(&mut s, &enc, picture, Instant::from_millis(picture * 33));
        let qs = job_qualities(&request);
        asked.push((qs[0].index(), qs[1].index()));
        assert_eq!(sent(&events).unwrap().choice, Choice::Better);
    }
    assert_eq!(
        asked,
        [(47, 87), (30, 70), (13, 53), (3, 36), (3, 26), (3, 26)]
    );

    // Budget zero: forced worse options walk up to the clamp at 127 (the paper's rules, which
    // force the worse option whatever its size; the slow-link rules' cap is tested in
    // tests::slow_link).
    let mut s = new_sender(SenderConfig {
        max_consecutive_skips: 0,
        rules: SenderRules::Paper,
        ..SenderConfig::default()
    });
    s.handle_datagram(
        Instant::ZERO,
        &ack(0, FragmentId::default(), Some(200_000), 0, &[]),
    )
    .unwrap();
    let mut worse = Vec::new();
    for picture in 0..5 {
        let now = Instant::from_millis(picture * 33);
        let (request, events, datagrams) = offer(&mut s, &enc, picture, now);
        let qs = job_qualities(&request);
        worse.push(qs[1].index());
        assert_eq!(sent(&events).unwrap().choice, Choice::ForcedWorse);
        ack_everything(&mut s, datagrams, picture as u32 + 1, now, Some(200_000));
    }
    assert_eq!(worse, [87, 110, 127, 127, 127]);
}

#[test]
fn sends_the_larger_option_that_fits_else_skips() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    let (_, _, mut pending) = offer(&mut s, &enc, 0, Instant::ZERO);
    let mut newest = FragmentId::default();
    let mut outcomes = Vec::new();
    // Walk tau so the budget passes through both options' sizes.
    for (picture, tau_ms) in (1..).zip([1u64, 5, 10, 20, 34, 50, 100, 150]) {
        let now = Instant::from_millis(picture * 33);
        pending.extend(flush_pacer(&mut s, now).0);
        if let Some(last) = pending.last() {
            newest = DataFragment::parse(last).unwrap().id();
        }
        pending.clear();
        // Everything sent so far has arrived: N = 0, budget = 1400 x (100 / tau).
        s.handle_datagram(
            now,
            &ack(picture as u32, newest, Some(tau_ms * 1000), 0, &[]),
        )
        .unwrap();
        assert_eq!(s.stats().fragments_in_flight, 0);
        let budget = s.budget().unwrap();
        assert_eq!(budget, 1400 * (100 / tau_ms as usize));
        let (request, events, d) = offer(&mut s, &enc, picture, now);
        pending = d;
        let qs = job_qualities(&request);
        let better = enc.encode(source(&request), picture, qs[0]).bytes.len();
        let worse = enc.encode(source(&request), picture, qs[1]).bytes.len();
        let expected = if better <= budget {
            Some(Choice::Better)
        } else if worse <= budget {
            Some(Choice::Worse)
        } else {
            None
        };
        assert_eq!(
            sent(&events).map(|f| f.choice),
            expected,
            "budget {budget}: {better}/{worse}"
        );
        assert_eq!(expected.is_none(), skipped(&events));
        outcomes.push(expected);
    }
    assert!(outcomes.contains(&Some(Choice::Better)), "{outcomes:?}");
    assert!(outcomes.contains(&Some(Choice::Worse)), "{outcomes:?}");
    assert!(outcomes.contains(&None), "{outcomes:?}");
}

#[test]
fn skips_at_most_max_consecutive_then_forces_the_worse_option() {
    let enc = FakeEncoder::default();
    // The paper's count; the slow-link rules force after `idle_link_skips` with nothing in
    // flight (tests::slow_link).
    let mut s = new_sender(SenderConfig {
        rules: SenderRules::Paper,
        ..SenderConfig::default()
    });
    let (_, events, datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    let mut last_target = target(&sent(&events).unwrap());
    // tau = 200 ms > d: budget 0 even with nothing in flight.
    ack_everything(&mut s, datagrams, 0, Instant::ZERO, Some(200_000));
    let mut pattern = String::new();
    for picture in 1..=15 {
        let now = Instant::from_millis(picture * 33);
        let (request, events, datagrams) = offer(&mut s, &enc, picture, now);
        // Skipped pictures leave the source alone: always the last frame sent.
        assert_eq!(source(&request).0, last_target);
        match sent(&events) {
            Some(f) => {
                assert_eq!(f.choice, Choice::ForcedWorse);
                let qs = job_qualities(&request);
                assert_eq!(f.quality, qs[1], "forced send is the worse option");
                last_target = target(&f);
                pattern.push('F');
                ack_everything(&mut s, datagrams, picture as u32, now, Some(200_000));
            }
            None => pattern.push('s'),
        }
    }
    assert_eq!(pattern, "ssssFssssFssssF");
    assert_eq!(s.stats().skipped, 12);
    assert_eq!(s.stats().sent_forced, 3);

    // Unacknowledged from here: the paper forces every fifth picture whatever is in flight.
    let mut unacked = String::new();
    for picture in 16..=30 {
        let (_, events, _) = offer(&mut s, &enc, picture, Instant::from_millis(picture * 33));
        unacked.push(if sent(&events).is_some() { 'F' } else { 's' });
    }
    assert_eq!(unacked, "ssssFssssFssssF");
}

#[test]
fn loss_report_switches_to_the_newest_acknowledged_state_for_five_seconds() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    s.handle_datagram(
        Instant::ZERO,
        &ack(0, FragmentId::default(), Some(0), 0, &[]),
    )
    .unwrap();
    let mut targets = Vec::new();
    for picture in 0..4 {
        let (request, events, _) = offer(&mut s, &enc, picture, Instant::from_millis(picture * 33));
        if let Some(&prev) = targets.last() {
            assert_eq!(source(&request).0, prev, "chained from the last frame sent");
        } else {
            assert_eq!(
                source(&request).0,
                StateHash::INITIAL,
                "first frame is a keyframe"
            );
        }
        targets.push(target(&sent(&events).unwrap()));
    }
    assert_eq!(s.stats().states_held, 4);
    // The receiver holds frames 0 and 1's states and has lost a frame.
    let t = Instant::from_millis(200);
    s.handle_datagram(t, &ack(1, FragmentId::default(), Some(0), 1, &targets[..2]))
        .unwrap();
    assert!(s.in_recovery(t));
    assert_eq!(
        s.stats().states_held,
        3,
        "states older than the newest acked one go"
    );
    let (request, events, _) = offer(&mut s, &enc, 10, t);
    assert_eq!(source(&request).0, targets[1]);
    let f = sent(&events).unwrap();
    assert!(f.recovery && from(&f) == targets[1]);
    // Still recovering: again from the newest acknowledged state, not the frame just sent.
    let (request, _, _) = offer(&mut s, &enc, 11, t + Duration::from_millis(33));
    assert_eq!(source(&request).0, targets[1]);
    // The receiver reports it holds nothing the sender has: a keyframe.
    s.handle_datagram(
        t,
        &ack(2, FragmentId::default(), Some(0), 2, &[StateHash(12345)]),
    )
    .unwrap();
    let (request, events, _) = offer(&mut s, &enc, 12, t + Duration::from_millis(66));
    assert_eq!(source(&request).0, StateHash::INITIAL);
    let key = sent(&events).unwrap();
    assert_eq!(s.stats().recoveries, 2);
    // Five seconds after the last report, back to chaining from the last frame sent.
    let later = t + Duration::from_secs(5);
    assert!(!s.in_recovery(later));
    // The receiver has been heard from meanwhile: five silent seconds with frames in flight
    // would be an outage, during which the sender also encodes from an acknowledged state.
    let last = FragmentId {
        frame: key.frame,
        index: key.fragments - 1,
    };
    s.handle_datagram(later, &ack(3, last, Some(0), 2, &[target(&key)]))
        .unwrap();
    assert!(!s.outage_suspected(later));
    let (request, _, _) = offer(&mut s, &enc, 13, later);
    assert_eq!(source(&request).0, target(&key));
}

#[test]
fn fragments_are_paced_and_carry_grace_unless_ablated() {
    for grace_period in [true, false] {
        let enc = FakeEncoder::default();
        // No estimate and a frame in flight: budget 0; never skipping keeps this test on pacing.
        let mut s = new_sender(SenderConfig {
            grace_period,
            max_consecutive_skips: 0,
            ..SenderConfig::default()
        });
        let (_, _, mut first) = offer(&mut s, &enc, 0, Instant::ZERO);
        let (rest, t_end) = flush_pacer(&mut s, Instant::ZERO);
        first.extend(rest);
        let times: Vec<_> = first
            .iter()
            .map(|d| DataFragment::parse(d).unwrap().sent_at)
            .collect();
        assert!(times.len() > 2);
        for pair in times.windows(2) {
            assert_eq!(
                pair[1] - pair[0],
                Duration::from_millis(2),
                "default gap before any estimate"
            );
        }
        // Next frame 40 ms after the last fragment left: 38 ms of idle time beyond the gap.
        let t = t_end + Duration::from_millis(40);
        // All acknowledged (no estimate yet): nothing in flight, no limit.
        ack_everything(&mut s, first.clone(), 0, t, None);
        let (_, _, mut second) = offer(&mut s, &enc, 1, t);
        second.extend(flush_pacer(&mut s, t).0);
        let graces: Vec<_> = second
            .iter()
            .map(|d| DataFragment::parse(d).unwrap().grace)
            .collect();
        let expected_first = if grace_period {
            Duration::from_millis(38)
        } else {
            Duration::ZERO
        };
        assert_eq!(graces[0], expected_first);
        assert!(graces[1..].iter().all(|g| g.is_zero()));
    }
}

#[test]
fn pacing_gap_follows_the_estimate() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    s.handle_datagram(
        Instant::ZERO,
        &ack(0, FragmentId::default(), Some(5000), 0, &[]),
    )
    .unwrap();
    let (_, _, mut d) = offer(&mut s, &enc, 0, Instant::ZERO);
    d.extend(flush_pacer(&mut s, Instant::ZERO).0);
    let t: Vec<_> = d
        .iter()
        .map(|d| DataFragment::parse(d).unwrap().sent_at)
        .collect();
    // tau / 5 = 1 ms, within [0.5, 2] ms.
    assert_eq!(t[1] - t[0], Duration::from_millis(1));
}

#[test]
fn conventional_codec_ablation_asks_for_a_size_and_always_sends() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig {
        mode: SenderMode::ConventionalCodec,
        ..SenderConfig::default()
    });
    let (request, events, mut datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    assert_eq!(
        job_qualities(&request),
        [q(64)],
        "no estimate: last quality"
    );
    assert_eq!(sent(&events).unwrap().choice, Choice::Only);
    let t = Instant::from_millis(100);
    datagrams.extend(flush_pacer(&mut s, t).0);
    let newest = DataFragment::parse(datagrams.last().unwrap()).unwrap().id();
    s.handle_datagram(t, &ack(0, newest, Some(20_000), 0, &[]))
        .unwrap();
    let (request, events, _) = offer(&mut s, &enc, 1, t);
    assert!(matches!(
        request.job,
        EncodeJob::SizeTarget {
            bytes: 7000,
            hint,
            ..
        } if hint == q(64)
    ));
    let f = sent(&events).unwrap();
    assert!(f.bytes <= 1400 * 5 && f.choice == Choice::Only);
    // Budget zero: skip before encoding, up to the skip limit.
    s.handle_datagram(t, &ack(1, newest, Some(200_000), 0, &[]))
        .unwrap();
    s.handle_frame(t, 2, t);
    let d = drain(&mut s, t);
    assert!(d.encodes.is_empty() && skipped(&d.events));
}

#[test]
fn conventional_transport_ablation_updates_quality_once_a_second_and_sends_everything() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig {
        mode: SenderMode::ConventionalTransport {
            update_interval: Duration::from_secs(1),
        },
        ..SenderConfig::default()
    });
    let mut qualities = Vec::new();
    let mut ack_number = 0;
    for picture in 0..90u64 {
        let now = Instant::from_micros(picture * 33_333);
        let (request, events, mut d) = offer(&mut s, &enc, picture, now);
        let qs = job_qualities(&request);
        assert_eq!(qs.len(), 1);
        assert_eq!(sent(&events).unwrap().choice, Choice::Only);
        qualities.push((now, qs[0]));
        // A slow link: 100 ms per fragment (14 kB/s), far below what q64 needs at 30 fps.
        d.extend(flush_pacer(&mut s, now).0);
        if let Some(last) = d.last() {
            let id = DataFragment::parse(last).unwrap().id();
            s.handle_datagram(now, &ack(ack_number, id, Some(100_000), 0, &[]))
                .unwrap();
            ack_number += 1;
        }
    }
    let changes: Vec<_> = qualities
        .windows(2)
        .filter(|w| w[0].1 != w[1].1)
        .map(|w| w[1].0)
        .collect();
    assert!(!changes.is_empty(), "quality adapts");
    assert!(
        qualities.last().unwrap().1 > q(64),
        "to a slow link: coarser"
    );
    for pair in changes.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(990),
            "{changes:?}"
        );
    }
    assert_eq!(s.stats().skipped, 0);
}

#[test]
fn encode_interface_misuse_is_an_error_not_a_panic() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    s.handle_frame(Instant::ZERO, 0, Instant::ZERO);
    let r = drain(&mut s, Instant::ZERO).encodes.remove(0);
    assert_eq!(
        s.handle_encoded(Instant::ZERO, r.id + 1, vec![]),
        Err(SenderError::UnknownRequest(r.id + 1))
    );
    let one = vec![enc.encode(source(&r), 0, q(40))];
    assert!(matches!(
        s.handle_encoded(Instant::ZERO, r.id, one),
        Err(SenderError::WrongFrameCount {
            expected: 2,
            got: 1
        })
    ));
    // A busy encoder keeps only the newest picture.
    s.handle_frame(Instant::ZERO, 1, Instant::ZERO);
    let r = drain(&mut s, Instant::ZERO).encodes.remove(0);
    s.handle_frame(Instant::ZERO, 2, Instant::ZERO);
    s.handle_frame(Instant::ZERO, 3, Instant::ZERO);
    s.handle_encode_failed(Instant::ZERO, r.id).unwrap();
    let d = drain(&mut s, Instant::ZERO);
    assert_eq!(d.encodes[0].picture, 3);
    assert_eq!(
        s.stats().dropped,
        3,
        "0 had a wrong frame count, 2 was replaced, 1 failed"
    );
    // Garbage from the network is counted.
    assert!(s
        .handle_datagram(Instant::ZERO, b"\x01\x02garbage")
        .is_err());
    assert_eq!(s.stats().rejected_datagrams, 1);
}

// The path's datagram size (`set_max_datagram`): fragments, budget, queue, floor.

/// The fragment a datagram carries.
fn fragment_id(datagram: &[u8]) -> FragmentId {
    DataFragment::parse(datagram).unwrap().id()
}

#[test]
fn a_smaller_path_cuts_smaller_fragments_and_the_budget_counts_them() {
    let enc = FakeEncoder::default();
    let config = SenderConfig {
        budget: BudgetSource::Ewma,
        ..SenderConfig::default()
    };
    let mut s = new_sender(config);
    assert_eq!(s.fragment_payload(), 1400);
    let (_, _, datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    let t = Instant::from_millis(50);
    ack_everything(&mut s, datagrams, 0, t, Some(1000));
    assert_eq!(s.budget(), Some(1400 * 100));

    // 1200-byte datagrams: 1158-byte fragments, and the budget counts d / tau of them.
    s.set_max_datagram(t, 1200);
    assert_eq!(s.fragment_payload(), 1200 - wire::DATA_HEADER_LEN);
    assert_eq!(s.budget(), Some(1158 * 100));
    assert_eq!(s.budget_now(t), Some(1158 * 100));
    let (_, events, mut datagrams) = offer(&mut s, &enc, 1, t);
    let frame = sent(&events).expect("the frame fits the budget");
    assert_eq!(frame.budget, Some(1158 * 100));
    assert_eq!(usize::from(frame.fragments), frame.bytes.div_ceil(1158));
    assert!(frame.fragments > 1, "{frame:?}");
    datagrams.extend(flush_pacer(&mut s, t).0);
    assert_eq!(datagrams.len(), usize::from(frame.fragments));
    assert!(datagrams.iter().all(|d| d.len() <= 1200));
    assert_eq!(
        datagrams[0].len(),
        1200,
        "a full fragment fills the datagram"
    );

    // A path that carries more than the configured size: the configured 1400 again.
    let t = Instant::from_millis(100);
    ack_everything(&mut s, datagrams, 1, t, Some(1000));
    s.set_max_datagram(t, 9000);
    assert_eq!(s.fragment_payload(), 1400);
    assert_eq!(s.budget(), Some(1400 * 100));
    let (_, events, mut datagrams) = offer(&mut s, &enc, 2, t);
    let frame = sent(&events).expect("the frame fits the budget");
    assert_eq!(frame.budget, Some(1400 * 100));
    assert_eq!(usize::from(frame.fragments), frame.bytes.div_ceil(1400));
    datagrams.extend(flush_pacer(&mut s, t).0);
    assert_eq!(datagrams[0].len(), 1400 + wire::DATA_HEADER_LEN);
    // The size in use again: nothing changes, nothing is said.
    s.set_max_datagram(t, 1442);
    assert_eq!(s.fragment_payload(), 1400);
    assert!(drain(&mut s, t).events.is_empty());
}

#[test]
fn fragments_waiting_when_the_path_shrinks_are_dropped_with_their_frame() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    // Picture 0: a keyframe of many 1400-byte fragments; the first leaves at once.
    let (_, events, datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    let keyframe = sent(&events).unwrap();
    assert!(keyframe.fragments > 3);
    assert_eq!(datagrams.len(), 1);
    // The receiver reports it and tau: room for picture 1, a frame of 800 bytes (one
    // fragment that fits any path of 842 bytes or more), queued behind the keyframe.
    let t = Instant::from_millis(10);
    let first = FragmentId { frame: 0, index: 0 };
    s.handle_datagram(t, &ack(0, first, Some(1000), 0, &[]))
        .unwrap();
    s.handle_frame(t, 1, t);
    let r = drain(&mut s, t).encodes.remove(0);
    let mut frames: Vec<FakeFrame> = job_qualities(&r)
        .iter()
        .map(|&q| enc.encode(source(&r), 1, q))
        .collect();
    frames[0].bytes.resize(800, 0);
    frames[1].bytes.resize(300, 0);
    s.handle_encoded(t, r.id, frames).unwrap();
    let d = drain(&mut s, t);
    let small = sent(&d.events).expect("800 bytes fit the budget");
    assert_eq!((small.bytes, small.fragments), (800, 1));
    let mut out = d.datagrams;

    s.set_max_datagram(t, 1200);
    let d = drain(&mut s, t);
    assert!(
        d.events
            .iter()
            .any(|e| matches!(e, SenderEvent::RecoveryStarted { .. })),
        "a frame that cannot arrive is a loss the sender knows of: {:?}",
        d.events
    );
    assert!(s.in_recovery(t));
    assert_eq!(s.stats().recoveries, 1);
    let (rest, _) = flush_pacer(&mut s, t);
    assert!(rest.iter().all(|d| d.len() <= 1200));
    // The keyframe's waiting fragments are gone (its short last one with them); the frame
    // that fits is sent as it was cut.
    let ids: Vec<FragmentId> = rest.iter().map(|d| fragment_id(d)).collect();
    assert_eq!(ids, vec![FragmentId { frame: 1, index: 0 }]);
    out.extend(rest);
    assert!(out.len() < usize::from(keyframe.fragments) + 1);

    // The next picture is encoded from what the receiver acknowledged (nothing yet: a
    // keyframe), cut at 1158 bytes.
    let t = Instant::from_millis(20);
    let (r, events, mut datagrams) = offer(&mut s, &enc, 2, t);
    assert_eq!(source(&r).0, StateHash::INITIAL);
    let frame = sent(&events).expect("sent");
    assert!(frame.recovery);
    datagrams.extend(flush_pacer(&mut s, t).0);
    assert!(datagrams.iter().all(|d| d.len() <= 1200));
}

#[test]
fn a_path_too_small_for_media_gets_one_byte_fragments() {
    let enc = FakeEncoder::default();
    let mut s = new_sender(SenderConfig::default());
    s.set_max_datagram(Instant::ZERO, 0);
    assert_eq!(s.fragment_payload(), 1, "the floor: one byte of media");
    s.set_max_datagram(Instant::ZERO, wire::DATA_HEADER_LEN + 1);
    assert_eq!(s.fragment_payload(), 1);
    s.handle_frame(Instant::ZERO, 0, Instant::ZERO);
    let r = drain(&mut s, Instant::ZERO).encodes.remove(0);
    let mut frames: Vec<FakeFrame> = job_qualities(&r)
        .iter()
        .map(|&q| enc.encode(source(&r), 0, q))
        .collect();
    frames[0].bytes.truncate(30);
    frames[1].bytes.truncate(24);
    s.handle_encoded(Instant::ZERO, r.id, frames).unwrap();
    let (datagrams, _) = flush_pacer(&mut s, Instant::ZERO);
    assert_eq!(datagrams.len(), 30);
    assert!(datagrams
        .iter()
        .all(|d| d.len() == wire::DATA_HEADER_LEN + 1));
    // A frame of more fragments than the wire numbers is dropped, not sent.
    s.handle_frame(Instant::ZERO, 1, Instant::ZERO);
    let d = drain(&mut s, Instant::ZERO);
    if let Some(r) = d.encodes.first() {
        let frames = job_qualities(r)
            .iter()
            .map(|&q| enc.encode(source(r), 1, q))
            .collect();
        let _ = s.handle_encoded(Instant::ZERO, r.id, frames);
    }
    let (datagrams, _) = flush_pacer(&mut s, Instant::from_millis(10));
    assert!(datagrams
        .iter()
        .all(|d| d.len() == wire::DATA_HEADER_LEN + 1));
}

/// One input of [`no_datagram_exceeds_the_latest_limit`].
#[derive(Debug, Clone)]
enum Input {
    Picture,
    Limit(usize),
    Ack,
    Wait(u64),
}

fn input() -> impl proptest::strategy::Strategy<Value = Input> {
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(Input::Picture),
        1 => (0usize..120).prop_map(Input::Limit),
        2 => (500usize..1600).prop_map(Input::Limit),
        2 => Just(Input::Ack),
        3 => (1u64..40).prop_map(Input::Wait),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the sizes and when they change, no datagram handed out after a limit is
    /// larger than it (or than the smallest datagram that carries media, when the limit is
    /// below even that), nor than a configured fragment: oversized fragments waiting in the
    /// pacer are dropped at once, not sent.
    #[test]
    fn no_datagram_exceeds_the_latest_limit(inputs in proptest::collection::vec(input(), 1..60)) {
        let enc = FakeEncoder::default();
        let mut s = new_sender(SenderConfig::default());
        let configured = 1400 + wire::DATA_HEADER_LEN;
        let (mut now, mut picture, mut acks) = (Instant::ZERO, 0u64, 0u32);
        let mut limit: Option<usize> = None;
        let mut newest: Option<FragmentId> = None;
        for i in inputs {
            let mut until = now;
            match i {
                Input::Picture => {
                    s.handle_frame(now, picture, now);
                    picture += 1;
                }
                Input::Limit(bytes) => {
                    s.set_max_datagram(now, bytes);
                    limit = Some(bytes);
                }
                Input::Ack => {
                    if let Some(id) = newest {
                        let _ = s.handle_datagram(now, &ack(acks, id, Some(1000), 0, &[]));
                        acks += 1;
                    }
                }
                Input::Wait(ms) => until = now + Duration::from_millis(ms),
            }
            let bound = limit
                .map_or(configured, |l| l.max(wire::DATA_HEADER_LEN + 1))
                .min(configured);
            // Drain now, then at each deadline up to `until`.
            loop {
                let next = loop {
                    match s.poll_output(now) {
                        SenderOutput::Encode(r) => {
                            let frames = job_qualities(&r)
                                .iter()
                                .map(|&q| enc.encode(source(&r), r.picture, q))
                                .collect();
                            s.handle_encoded(now, r.id, frames).unwrap();
                        }
                        SenderOutput::Transmit(d) => {
                            proptest::prop_assert!(
                                d.len() <= bound,
                                "{} bytes sent with the limit at {:?}", d.len(), limit
                            );
                            newest = Some(fragment_id(&d));
                        }
                        SenderOutput::Event(_) => {}
                        SenderOutput::Timeout(t) => break t,
                    }
                };
                if next > until || next <= now {
                    break;
                }
                now = next;
            }
            now = now.max(until);
        }
    }
}

// The call's audio on the same path (`handle_audio_sent`): one session, one budget.

#[test]
fn audio_in_flight_is_taken_from_the_budget_until_an_ack_covers_it() {
    let enc = FakeEncoder::default();
    let config = SenderConfig {
        budget: BudgetSource::Ewma,
        ..SenderConfig::default()
    };
    let mut s = new_sender(config);
    let (_, _, datagrams) = offer(&mut s, &enc, 0, Instant::ZERO);
    let t = Instant::from_millis(50);
    ack_everything(&mut s, datagrams, 0, t, Some(1000));
    assert_eq!(s.budget_now(t), Some(1400 * 100));
    assert_eq!(s.audio_in_flight(t), 0);

    // Two audio packets go out before the next frame, one after it.
    s.handle_audio_sent(Instant::from_millis(55), 120);
    s.handle_audio_sent(Instant::from_millis(60), 110);
    let t = Instant::from_millis(61);
    assert_eq!(s.audio_in_flight(t), 230);
    assert_eq!(s.budget_now(t), Some(1400 * 100 - 230));
    let (_, events, mut datagrams) = offer(&mut s, &enc, 1, t);
    let frame = sent(&events).expect("the frame fits");
    assert_eq!(
        frame.budget,
        Some(1400 * 100 - 230),
        "sized after the audio"
    );
    datagrams.extend(flush_pacer(&mut s, t).0);
    s.handle_audio_sent(Instant::from_millis(80), 100);
    let t = Instant::from_millis(81);
    assert_eq!(s.audio_in_flight(t), 330);

    // An ACK of the frame's last fragment covers the audio sent before it, not after.
    let last = fragment_id(datagrams.last().unwrap());
    s.handle_datagram(t, &ack(1, last, Some(1000), 0, &[]))
        .unwrap();
    assert_eq!(s.audio_in_flight(t), 100);
    // Audio older than the delay target (100 ms) is no longer counted.
    assert_eq!(s.audio_in_flight(Instant::from_millis(181)), 0);
}
