//! The receiver alone, fed hand-made fragments: reassembly in any order, decoding only from
//! a held state, waiting for reordered frames, loss counting, duplicates, stale and
//! malformed datagrams, ACK contents and state eviction.

use crate::fake::{FakeDecoder, FakeEncoder, FakeFrame, FakePicture, FakeState};
use crate::wire::{Ack, DataFragment};
use crate::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_codec::{Quality, StateHash};
use salsify_endpoint::{Displayed, ReceiverEvent, ReceiverOutput};
use salsify_time::{Duration, Instant};

type FakeReceiver = Receiver<FakeDecoder>;

fn receiver() -> FakeReceiver {
    Receiver::new(ReceiverConfig::default(), FakeDecoder).unwrap()
}

/// Splits a frame into datagrams of `payload` bytes each.
fn fragments(number: u32, frame: &FakeFrame, payload: usize) -> Vec<Vec<u8>> {
    let chunks: Vec<_> = frame.bytes.chunks(payload).collect();
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let mut out = Vec::new();
            DataFragment {
                connection_id: 7,
                frame: number,
                index: i as u16,
                count: chunks.len() as u16,
                source: frame.source,
                target: frame.target.0,
                grace: Duration::ZERO,
                sent_at: Instant::ZERO,
                payload: chunk,
            }
            .emit(&mut out)
            .unwrap();
            out
        })
        .collect()
}

/// A chain of frames: frame 0 a keyframe, each next one from the previous target.
fn chain(n: usize) -> Vec<FakeFrame> {
    let enc = FakeEncoder::default();
    let mut state = FakeState(StateHash::INITIAL);
    (0..n as u64)
        .map(|i| {
            let f = enc.encode(&state, i, Quality::new(60).unwrap());
            state = f.target;
            f
        })
        .collect()
}

#[derive(Default)]
struct Out {
    acks: Vec<Ack>,
    shown: Vec<(u32, FakePicture)>,
    lost: Vec<(u32, u32)>,
    timeout: Option<Instant>,
}

fn drain(r: &mut FakeReceiver) -> Out {
    let mut out = Out::default();
    loop {
        match r.poll_output() {
            ReceiverOutput::Transmit(d) => out.acks.push(Ack::parse(&d).unwrap()),
            ReceiverOutput::Event(ReceiverEvent::Display(Displayed { frame, picture, .. })) => {
                out.shown.push((frame, picture))
            }
            ReceiverOutput::Event(ReceiverEvent::FramesLost { through, count, .. }) => {
                out.lost.push((through, count))
            }
            ReceiverOutput::Event(_) => {}
            ReceiverOutput::Timeout(t) => {
                out.timeout = Some(t);
                return out;
            }
        }
    }
}

#[test]
fn fragments_in_any_order_make_one_display_and_one_ack_each() {
    let frames = chain(2);
    let mut r = receiver();
    let mut datagrams = fragments(0, &frames[0], 500);
    assert!(datagrams.len() >= 4);
    datagrams.reverse();
    datagrams.swap(0, 2);
    let n = datagrams.len();
    for (i, d) in datagrams.iter().enumerate() {
        r.handle_datagram(Instant::from_millis(i as u64), d)
            .unwrap();
        let out = drain(&mut r);
        assert_eq!(out.acks.len(), 1, "one ACK per fragment");
        assert_eq!(
            out.shown.len(),
            usize::from(i == n - 1),
            "shown only when complete"
        );
    }
    assert_eq!(r.current_state(), frames[0].target.0);
    let ack = drain(&mut r).acks;
    assert!(ack.is_empty());
    for d in fragments(1, &frames[1], 500) {
        r.handle_datagram(Instant::from_millis(50), &d).unwrap();
    }
    let out = drain(&mut r);
    assert_eq!(
        out.shown,
        vec![(
            1,
            FakePicture {
                picture: 1,
                state: frames[1].target.0
            }
        )]
    );
    let last = out.acks.last().unwrap();
    assert_eq!(last.current_state, frames[1].target.0);
    assert_eq!(
        last.held_states,
        vec![frames[0].target.0, frames[1].target.0]
    );
    assert_eq!(last.frames_lost, 0);
}

#[test]
fn ack_carries_the_grace_corrected_interarrival_mean() {
    let frames = chain(1);
    // The plain per-packet mean (the frame's short last fragment would scale the default,
    // size-aware one; see the estimator's tests).
    let plain = ReceiverConfig {
        size_aware_estimate: false,
        ..ReceiverConfig::default()
    };
    let mut r = Receiver::new(plain, FakeDecoder).unwrap();
    let datagrams = fragments(0, &frames[0], 300);
    for (i, d) in datagrams.iter().enumerate() {
        r.handle_datagram(Instant::from_micros(1000 * i as u64), d)
            .unwrap();
    }
    let acks = drain(&mut r).acks;
    assert_eq!(acks[0].mean_interarrival, None);
    assert_eq!(
        acks.last().unwrap().mean_interarrival,
        Some(Duration::from_millis(1))
    );
    assert_eq!(
        acks.last().unwrap().highest.index as usize,
        datagrams.len() - 1
    );
    // ACK numbers count up.
    assert!(acks
        .windows(2)
        .all(|w| w[1].ack_number == w[0].ack_number + 1));
}

#[test]
fn a_frame_whose_source_is_missing_is_never_shown_and_counts_as_lost() {
    let frames = chain(4);
    let mut r = receiver();
    for d in fragments(0, &frames[0], 1400) {
        r.handle_datagram(Instant::ZERO, &d).unwrap();
    }
    drain(&mut r);
    // Frame 1 is lost; frame 2 (from frame 1's state) arrives complete.
    let t = Instant::from_millis(100);
    for d in fragments(2, &frames[2], 1400) {
        r.handle_datagram(t, &d).unwrap();
    }
    let out = drain(&mut r);
    assert!(out.shown.is_empty());
    let deadline = out.timeout.unwrap();
    assert_eq!(deadline, t + ReceiverConfig::default().reorder_window);
    r.handle_timeout(deadline - Duration::from_micros(1));
    assert!(
        drain(&mut r).lost.is_empty(),
        "still within the reorder window"
    );
    r.handle_timeout(deadline);
    let out = drain(&mut r);
    assert_eq!(out.lost, vec![(2, 2)], "frames 1 and 2 given up on");
    assert_eq!(out.acks.len(), 1, "the loss is reported at once");
    assert_eq!(out.acks[0].frames_lost, 2);
    assert_eq!(out.acks[0].current_state, frames[0].target.0);
    // Frame 3 (from frame 2's state) can never be shown either; a late frame 1 is stale.
    for d in fragments(1, &frames[1], 1400) {
        assert_eq!(r.handle_datagram(t, &d), Err(DatagramRejected::Stale(1)));
    }
    for d in fragments(3, &frames[3], 1400) {
        r.handle_datagram(t, &d).unwrap();
    }
    r.handle_timeout(t + Duration::from_secs(1));
    assert!(drain(&mut r).shown.is_empty());
    // A frame from a held state (frame 0's) is shown again.
    let enc = FakeEncoder::default();
    let recovery = enc.encode(&frames[0].target, 9, Quality::new(50).unwrap());
    for d in fragments(4, &recovery, 1400) {
        r.handle_datagram(t, &d).unwrap();
    }
    assert_eq!(drain(&mut r).shown.len(), 1);
    assert_eq!(r.stats().frames_lost, 3);
    assert_eq!(r.stats().frames_displayed, 2);
}

#[test]
fn a_reordered_older_frame_arriving_within_the_window_is_shown_first() {
    let frames = chain(3);
    let mut r = receiver();
    for d in fragments(0, &frames[0], 1400) {
        r.handle_datagram(Instant::ZERO, &d).unwrap();
    }
    let t = Instant::from_millis(40);
    for d in fragments(2, &frames[2], 700) {
        r.handle_datagram(t, &d).unwrap();
    }
    for d in fragments(1, &frames[1], 700) {
        r.handle_datagram(t + Duration::from_millis(3), &d).unwrap();
    }
    let out = drain(&mut r);
    let shown: Vec<_> = out.shown.iter().map(|(f, _)| *f).collect();
    assert_eq!(shown, [0, 1, 2]);
    assert!(out.lost.is_empty());
}

#[test]
fn duplicates_inconsistent_and_foreign_fragments_are_dropped() {
    let frames = chain(1);
    let mut r = receiver();
    let d = fragments(0, &frames[0], 500);
    r.handle_datagram(Instant::ZERO, &d[0]).unwrap();
    assert_eq!(
        r.handle_datagram(Instant::ZERO, &d[0]),
        Err(DatagramRejected::Duplicate { frame: 0, index: 0 })
    );
    let mut other = d[1].clone();
    other[12] ^= 1; // source hash differs from fragment 0's
    assert_eq!(
        r.handle_datagram(Instant::ZERO, &other),
        Err(DatagramRejected::Inconsistent(0))
    );
    // Before any frame is shown a fragment of another session only conflicts with this frame.
    let mut foreign = d[1].clone();
    foreign[3] ^= 1;
    assert_eq!(
        r.handle_datagram(Instant::ZERO, &foreign),
        Err(DatagramRejected::Inconsistent(0))
    );
    for x in &d[1..] {
        r.handle_datagram(Instant::ZERO, x).unwrap();
    }
    let out = drain(&mut r);
    assert_eq!(out.shown.len(), 1);
    assert_eq!(out.acks.len(), d.len(), "rejected fragments are not ACKed");
    // Once a frame is shown the receiver is locked to its session.
    assert_eq!(
        r.handle_datagram(Instant::ZERO, &foreign),
        Err(DatagramRejected::ForeignConnection(6))
    );
    let s = r.stats();
    assert_eq!((s.duplicates, s.inconsistent, s.foreign), (1, 2, 1));
}

#[test]
fn survives_any_datagram_and_keeps_working() {
    let frames = chain(6);
    let mut r = receiver();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let valid: Vec<Vec<u8>> = frames
        .iter()
        .enumerate()
        .flat_map(|(i, f)| fragments(i as u32, f, 400))
        .collect();
    let mut rejected = 0;
    for i in 0..20_000 {
        let bytes: Vec<u8> = if i % 2 == 0 {
            (0..rng.gen_range(0..120)).map(|_| rng.gen()).collect()
        } else {
            // A valid datagram with a few bytes flipped and maybe cut short.
            let mut b = valid[rng.gen_range(0..valid.len())].clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..b.len());
                b[at] = rng.gen();
            }
            let keep = rng.gen_range(b.len() / 2..=b.len());
            b.truncate(keep);
            b
        };
        if r.handle_datagram(Instant::from_micros(i), &bytes).is_err() {
            rejected += 1;
        }
        for (frame, picture) in drain(&mut r).shown {
            // Whatever was shown is exactly one of the real frames, from the right state.
            let real = &frames[frame as usize];
            assert_eq!(
                (picture.picture, picture.state),
                (u64::from(frame), real.target.0)
            );
        }
    }
    let s = r.stats();
    assert!(rejected > 19_000, "{rejected}");
    assert!(s.malformed > 10_000);
    // The same receiver still takes a clean stream of a new chain.
    let enc = FakeEncoder::default();
    let key = enc.encode(
        &FakeState(StateHash::INITIAL),
        99,
        Quality::new(60).unwrap(),
    );
    let next = u32::try_from(s.frames_displayed).unwrap() + 1000;
    for d in fragments(next, &key, 400) {
        r.handle_datagram(Instant::from_millis(1000), &d).unwrap();
    }
    assert_eq!(drain(&mut r).shown.len(), 1);
}

#[test]
fn states_older_than_a_used_source_are_evicted() {
    for behind in [0, 3] {
        let frames = chain(20);
        let config = ReceiverConfig {
            states_behind: behind,
            ..ReceiverConfig::default()
        };
        let mut r = Receiver::new(config, FakeDecoder).unwrap();
        for (i, f) in frames.iter().enumerate() {
            for d in fragments(i as u32, f, 1400) {
                r.handle_datagram(Instant::from_millis(i as u64 * 33), &d)
                    .unwrap();
            }
        }
        let out = drain(&mut r);
        assert_eq!(out.shown.len(), 20);
        // Decoding frame n from frame n-1's state drops everything older than that state,
        // but the `states_behind` newest of those.
        assert_eq!(r.stats().states_held, 2 + behind);
        assert_eq!(r.stats().max_states_held, 2 + behind);
        let newest: Vec<_> = frames[18 - behind..].iter().map(|f| f.target.0).collect();
        assert_eq!(out.acks.last().unwrap().held_states, newest);
    }
}

#[test]
fn reassembly_buffer_is_bounded() {
    let frames = chain(40);
    let mut r = receiver();
    // Only the first fragment of every frame: nothing completes.
    for (i, f) in frames.iter().enumerate().skip(1) {
        let d = fragments(i as u32, f, 100);
        r.handle_datagram(Instant::ZERO, &d[0]).unwrap();
    }
    assert_eq!(
        r.stats().pending_frames,
        ReceiverConfig::default().max_pending_frames
    );
    // An older frame than all pending ones is refused while the buffer is full.
    let d = fragments(1, &frames[1], 100);
    assert_eq!(
        r.handle_datagram(Instant::ZERO, &d[1]),
        Err(DatagramRejected::BufferFull(1))
    );
}

#[test]
fn one_forged_datagram_cannot_stall_the_session() {
    let frames = chain(3);
    let mut r = receiver();
    // A forged single-fragment frame far ahead, from a state nobody holds, another id.
    let enc = FakeEncoder::default();
    let bogus = enc.encode(&FakeState(StateHash(42)), 1, Quality::new(120).unwrap());
    let mut forged = fragments(u32::MAX - 5, &bogus, 1400).remove(0);
    forged[2..4].copy_from_slice(&99u16.to_be_bytes());
    r.handle_datagram(Instant::ZERO, &forged).unwrap();
    r.handle_timeout(Instant::from_millis(100));
    assert_eq!(drain(&mut r).lost, vec![(u32::MAX - 5, 1)]);
    // The real session (id 7) is not locked out and its frames are not stale.
    for (i, f) in frames.iter().enumerate() {
        for d in fragments(i as u32, f, 1400) {
            r.handle_datagram(Instant::from_millis(200), &d).unwrap();
        }
    }
    let out = drain(&mut r);
    assert_eq!(out.shown.len(), 3);
    assert!(out.acks.iter().all(|a| a.connection_id == 7));
    // Now locked to the id of the frames shown.
    assert_eq!(
        r.handle_datagram(Instant::from_millis(300), &forged),
        Err(DatagramRejected::ForeignConnection(99))
    );
}

mod bounded {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever arrives, a valid stream interleaved with its datagrams mutated (any frame
        /// number, fragment count and index, far ahead or behind), the frames being
        /// reassembled and the states held stay within the configuration, and one datagram
        /// or timeout yields a bounded number of outputs.
        #[test]
        fn memory_and_work_per_datagram_are_bounded(
            plan in proptest::collection::vec(
                (any::<bool>(), any::<u32>(), 1u16..=4096, any::<u16>(), any::<u64>()),
                1..200,
            )
        ) {
            let config = ReceiverConfig::default();
            let frames = chain(40);
            let mut r = receiver();
            let max_outputs = 2 + 2 * config.max_pending_frames;
            let mut next = 0usize;
            for (i, (valid, frame, count, index, hash)) in plan.into_iter().enumerate() {
                let now = Instant::from_millis(i as u64 * 5);
                let datagrams = if valid || next == 0 {
                    let f = &frames[next % frames.len()];
                    next += 1;
                    fragments((next - 1) as u32, f, 1000)
                } else {
                    let mut out = Vec::new();
                    DataFragment {
                        connection_id: 7,
                        frame,
                        index: index % count,
                        count,
                        source: StateHash(hash % 3),
                        target: StateHash(hash),
                        grace: Duration::ZERO,
                        sent_at: Instant::ZERO,
                        payload: &[7; 1400],
                    }
                    .emit(&mut out)
                    .unwrap();
                    vec![out]
                };
                for d in datagrams {
                    let _ = r.handle_datagram(now, &d);
                    let out = drain(&mut r);
                    prop_assert!(out.acks.len() + out.shown.len() + out.lost.len() <= max_outputs);
                }
                r.handle_timeout(now + Duration::from_millis(20));
                let out = drain(&mut r);
                prop_assert!(out.acks.len() + out.shown.len() + out.lost.len() <= max_outputs);
                let s = r.stats();
                prop_assert!(s.pending_frames <= config.max_pending_frames, "{s:?}");
                prop_assert!(s.states_held <= config.max_states + 1, "{s:?}");
            }
        }
    }
}
