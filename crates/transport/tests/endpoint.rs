//! Salsify through the one endpoint shape (`salsify-endpoint`), driven only as
//! `Box<dyn SenderEndpoint>` / `Box<dyn ReceiverEndpoint>` like the simulator and the runtime
//! drive it, with the real VP8 codec on tiny pictures: jobs, events, counters, drop reasons
//! and misuse map as documented, and the common counters agree with the state machines' own.

use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::{Encoder, Quality, State, StateHash};
use salsify_endpoint::{
    Choice, DatagramError, DropReason, EncodeFailed, EncodeJob, EncodeOutcome, EncodeRequest,
    InputError, ReceiverEndpoint, ReceiverEvent, ReceiverOutput, SenderEndpoint, SenderEvent,
    SenderOutput, BASELINE_WIRE_TAG,
};
use salsify_time::{Duration, Instant};
use salsify_transport::{
    ReceiverConfig, SalsifyReceiver, SalsifySender, SenderConfig, SenderMode, SenderRules,
};

const FRAME: Duration = Duration::from_micros(33_333);

/// Encodes synthetic 64x48 pictures as the driver would.
struct Driver {
    encoder: Encoder,
    source: SyntheticSource,
}

impl Driver {
    fn new() -> Self {
        Driver {
            encoder: Encoder::new(64, 48).unwrap(),
            source: SyntheticSource::new(64, 48, 30, 3).unwrap(),
        }
    }

    fn encode(&mut self, r: &EncodeRequest) -> EncodeOutcome {
        let image = self.source.frame(r.picture);
        let frames = match &r.job {
            EncodeJob::Qualities {
                source, qualities, ..
            } => qualities
                .iter()
                .map(|&q| self.encoder.encode(source, &image, q).unwrap())
                .collect(),
            EncodeJob::SizeTarget { source, hint, .. } => {
                vec![self.encoder.encode(source, &image, *hint).unwrap()]
            }
            other => panic!("Salsify asked for {other:?}"),
        };
        EncodeOutcome::Functional(frames)
    }
}

/// Everything both ends handed out.
#[derive(Default)]
struct Log {
    requests: Vec<EncodeRequest>,
    sender_events: Vec<SenderEvent>,
    receiver_events: Vec<ReceiverEvent>,
    datagrams: usize,
}

/// Drains the sender, answering encodes at once; datagrams cross a lossless, instant link.
fn drain(
    now: Instant,
    tx: &mut dyn SenderEndpoint,
    rx: &mut dyn ReceiverEndpoint,
    driver: &mut Driver,
    log: &mut Log,
) -> Instant {
    loop {
        let deadline = loop {
            match tx.poll_output(now) {
                SenderOutput::Encode(r) => {
                    let outcome = driver.encode(&r);
                    log.requests.push(r.clone());
                    tx.handle_encoded(now, r.id, Ok(outcome)).unwrap();
                }
                SenderOutput::Transmit(d) => {
                    log.datagrams += 1;
                    rx.handle_datagram(now, &d).unwrap();
                }
                SenderOutput::Event(e) => log.sender_events.push(e),
                SenderOutput::Timeout(t) => break t,
            }
        };
        let mut acks = 0;
        loop {
            match rx.poll_output(now) {
                ReceiverOutput::Transmit(ack) => {
                    acks += 1;
                    tx.handle_datagram(now, &ack).unwrap();
                }
                ReceiverOutput::Event(e) => log.receiver_events.push(e),
                ReceiverOutput::Timeout(_) => break,
            }
        }
        if acks == 0 {
            return deadline;
        }
    }
}

/// Runs `pictures` camera pictures at 30 fps through the pair.
fn run(tx: &mut dyn SenderEndpoint, rx: &mut dyn ReceiverEndpoint, pictures: u64) -> Log {
    let mut driver = Driver::new();
    let mut log = Log::default();
    let mut now = Instant::ZERO;
    let mut next_capture = Instant::ZERO;
    let mut picture = 0;
    let mut deadline = Instant::ZERO;
    while picture < pictures || deadline < Instant::FAR_FUTURE {
        if picture < pictures && next_capture <= now {
            tx.handle_picture(now, picture, next_capture);
            picture += 1;
            next_capture += FRAME;
        }
        tx.handle_timeout(now);
        rx.handle_timeout(now);
        deadline = drain(now, tx, rx, &mut driver, &mut log);
        let capture = (picture < pictures).then_some(next_capture);
        now = capture.map_or(deadline, |c| c.min(deadline));
        if now == Instant::FAR_FUTURE {
            break;
        }
    }
    log
}

fn pair(
    config: SenderConfig,
    parallel: bool,
) -> (Box<dyn SenderEndpoint>, Box<dyn ReceiverEndpoint>) {
    (
        Box::new(SalsifySender::from_config(config, parallel).unwrap()),
        Box::new(SalsifyReceiver::from_config(ReceiverConfig::default()).unwrap()),
    )
}

#[test]
fn scheme_names_follow_the_configuration() {
    let name = |config: SenderConfig, parallel| {
        SalsifySender::from_config(config, parallel)
            .unwrap()
            .scheme()
    };
    let d = SenderConfig::default;
    assert_eq!(name(d(), true), "salsify-2c");
    assert_eq!(name(d(), false), "salsify-1c");
    let no_grace = SenderConfig {
        grace_period: false,
        ..d()
    };
    assert_eq!(name(no_grace, true), "salsify-no-grace");
    let codec = SenderConfig {
        mode: SenderMode::ConventionalCodec,
        ..d()
    };
    assert_eq!(name(codec, true), "salsify-conventional-codec");
    let transport = SenderConfig {
        mode: SenderMode::ConventionalTransport {
            update_interval: Duration::from_secs(1),
        },
        ..d()
    };
    assert_eq!(name(transport, true), "salsify-conventional-transport");
    let rules = |rules| SenderConfig { rules, ..d() };
    assert_eq!(name(rules(SenderRules::Paper), true), "salsify-paper");
    assert_eq!(name(rules(SenderRules::SlowLink), true), "salsify-2c");
    let bad = SenderConfig {
        fragment_payload: 0,
        ..d()
    };
    assert!(SalsifySender::from_config(bad, true).is_err());
    let bad = ReceiverConfig {
        max_states: 0,
        ..ReceiverConfig::default()
    };
    let err = SalsifyReceiver::from_config(bad).unwrap_err();
    assert!(err.to_string().contains("max_states"), "{err}");
}

#[test]
fn a_session_through_the_traits_maps_jobs_events_and_counters() {
    for parallel in [true, false] {
        let (mut tx, mut rx) = pair(SenderConfig::default(), parallel);
        let log = run(tx.as_mut(), rx.as_mut(), 60);

        // Jobs: two qualities from the state of the last frame, 2c or 1c as asked.
        let EncodeJob::Qualities {
            source,
            qualities,
            parallel: p,
            ..
        } = &log.requests[0].job
        else {
            panic!("{:?}", log.requests[0]);
        };
        assert_eq!(source.hash(), StateHash::INITIAL);
        assert_eq!(
            qualities,
            &[Quality::new(47).unwrap(), Quality::new(87).unwrap()]
        );
        assert_eq!(*p, parallel);

        // Sender events: every frame names its states; only the first is a keyframe.
        let sent: Vec<_> = log
            .sender_events
            .iter()
            .filter_map(|e| match e {
                SenderEvent::FrameSent(f) => Some(*f),
                _ => None,
            })
            .collect();
        assert!(sent.len() >= 30, "{} frames sent", sent.len());
        assert!(sent[0].keyframe && sent[1..].iter().all(|f| !f.keyframe));
        assert!(sent.iter().all(|f| f.states.is_some() && !f.recovery));
        assert!(sent.iter().all(|f| matches!(
            f.choice,
            Choice::Better | Choice::Worse | Choice::ForcedWorse
        )));
        for w in sent.windows(2) {
            let (a, b) = (w[0].states.unwrap(), w[1].states.unwrap());
            assert_eq!(b.0, a.1, "each frame decodes from the last one's target");
            assert_eq!(w[1].frame, w[0].frame + 1);
        }

        // Receiver events: every frame shown, with its states and the sender's timestamp.
        let shown: Vec<_> = log
            .receiver_events
            .iter()
            .filter_map(|e| match e {
                ReceiverEvent::Display(d) => Some(d),
                _ => None,
            })
            .collect();
        assert_eq!(shown.len(), sent.len());
        for (d, f) in shown.iter().zip(&sent) {
            assert_eq!(
                (d.frame, d.bytes, d.keyframe),
                (f.frame, f.bytes, f.keyframe)
            );
            assert_eq!(d.states, f.states);
            assert!(d.first_sent_at.is_some_and(|t| t >= f.at));
            assert_eq!((d.picture.width(), d.picture.height()), (64, 48));
        }

        // Counters: the common ones agree with the events and the sender's own.
        let (ts, rs) = (tx.stats(), rx.stats());
        let better = sent.iter().filter(|f| f.choice == Choice::Better).count() as u64;
        assert_eq!(ts.pictures, 60);
        assert_eq!(ts.frames_sent, sent.len() as u64);
        assert_eq!(ts.keyframes, 1);
        assert_eq!(ts.sent_better, better);
        assert_eq!(ts.sent_better + ts.sent_worse, ts.frames_sent);
        assert_eq!(ts.frames_sent + ts.skipped + ts.dropped, ts.pictures);
        assert_eq!(ts.datagrams_sent, log.datagrams as u64);
        assert_eq!(ts.feedback, rs.feedback_sent);
        assert_eq!(ts.bad_datagrams, 0);
        assert_eq!(ts.quality, Some(sent.last().unwrap().quality));
        assert!(ts.states_held >= 1 && ts.max_states_held >= ts.states_held);
        assert_eq!(rs.datagrams, log.datagrams as u64);
        assert_eq!(rs.frames_displayed, sent.len() as u64);
        assert_eq!(
            (rs.frames_lost, rs.decode_failures, rs.bad_datagrams),
            (0, 0, 0)
        );
        assert!(rs.states_held >= 1);

        let names: Vec<_> = tx.diagnostics().iter().map(|d| d.name).collect();
        for gauge in [
            "fragments_in_flight",
            "quality",
            "mean_interarrival_ms",
            "budget_bytes",
        ] {
            assert!(names.contains(&gauge), "{gauge} in {names:?}");
        }
    }
}

#[test]
fn the_conventional_codec_ablation_asks_for_size_targets() {
    let config = SenderConfig {
        mode: SenderMode::ConventionalCodec,
        ..SenderConfig::default()
    };
    let (mut tx, mut rx) = pair(config, true);
    let log = run(tx.as_mut(), rx.as_mut(), 20);
    let targets: Vec<_> = log
        .requests
        .iter()
        .filter_map(|r| match &r.job {
            EncodeJob::SizeTarget {
                source,
                bytes,
                hint,
            } => Some((source.hash(), *bytes, *hint)),
            _ => None,
        })
        .collect();
    assert!(!targets.is_empty(), "{:?}", log.requests);
    assert!(targets
        .iter()
        .all(|(s, b, _)| *s != StateHash::INITIAL && *b > 0));
    assert!(log.sender_events.iter().all(|e| match e {
        SenderEvent::FrameSent(f) => f.choice == Choice::Only,
        _ => true,
    }));
}

/// One picture in, its encode request out.
fn request(tx: &mut dyn SenderEndpoint, now: Instant, picture: u64) -> EncodeRequest {
    tx.handle_picture(now, picture, now);
    match tx.poll_output(now) {
        SenderOutput::Encode(r) => r,
        other => panic!("{other:?}"),
    }
}

/// The events waiting, up to the deadline.
fn events(tx: &mut dyn SenderEndpoint, now: Instant) -> Vec<SenderEvent> {
    let mut out = Vec::new();
    loop {
        match tx.poll_output(now) {
            SenderOutput::Event(e) => out.push(e),
            SenderOutput::Timeout(_) => return out,
            SenderOutput::Transmit(_) => {}
            SenderOutput::Encode(r) => panic!("unexpected {r:?}"),
        }
    }
}

#[test]
fn dropped_pictures_say_why_and_never_stall_the_sender() {
    let mut tx: Box<dyn SenderEndpoint> =
        Box::new(SalsifySender::from_config(SenderConfig::default(), true).unwrap());
    let mut driver = Driver::new();
    let t = Instant::from_millis;

    // A failed encode drops its picture.
    let r0 = request(tx.as_mut(), t(0), 0);
    tx.handle_encoded(t(5), r0.id, Err(EncodeFailed("no encoder".into())))
        .unwrap();
    assert!(matches!(
        events(tx.as_mut(), t(5))[..],
        [SenderEvent::PictureDropped {
            picture: 0,
            reason: DropReason::Failed,
            ..
        }]
    ));

    // Pictures arriving while the encoder is busy: all but the newest are dropped.
    let r1 = request(tx.as_mut(), t(10), 1);
    tx.handle_picture(t(20), 2, t(20));
    tx.handle_picture(t(30), 3, t(30));
    assert!(matches!(
        events(tx.as_mut(), t(30))[..],
        [SenderEvent::PictureDropped {
            picture: 2,
            reason: DropReason::EncoderBusy,
            ..
        }]
    ));

    // A CBR frame for a functional job is refused, the picture dropped, and the waiting
    // picture encoded at once.
    let err = tx
        .handle_encoded(t(35), r1.id, Ok(EncodeOutcome::Cbr(None)))
        .unwrap_err();
    assert!(
        matches!(err, InputError::WrongResult { id, .. } if id == r1.id),
        "{err}"
    );
    let r3 = match tx.poll_output(t(35)) {
        SenderOutput::Encode(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r3.picture, 3);
    assert!(matches!(
        events(tx.as_mut(), t(35))[..],
        [SenderEvent::PictureDropped {
            picture: 1,
            reason: DropReason::Failed,
            ..
        }]
    ));

    // Too few frames back: refused, dropped as failed.
    let EncodeOutcome::Functional(mut frames) = driver.encode(&r3) else {
        unreachable!()
    };
    frames.pop();
    let err = tx
        .handle_encoded(t(40), r3.id, Ok(EncodeOutcome::Functional(frames)))
        .unwrap_err();
    assert!(matches!(err, InputError::WrongResult { .. }), "{err}");
    assert!(matches!(
        events(tx.as_mut(), t(40))[..],
        [SenderEvent::PictureDropped {
            picture: 3,
            reason: DropReason::Failed,
            ..
        }]
    ));

    // A result for nothing under way.
    assert_eq!(
        tx.handle_encoded(t(41), 999, Err(EncodeFailed("late".into()))),
        Err(InputError::UnknownRequest(999))
    );
    assert_eq!(
        tx.handle_encoded(t(41), r3.id, Ok(EncodeOutcome::Cbr(None))),
        Err(InputError::UnknownRequest(r3.id))
    );

    // And the sender still works: the next picture is encoded and sent as a keyframe.
    let r4 = request(tx.as_mut(), t(50), 4);
    assert_eq!(r4.picture, 4);
    let outcome = driver.encode(&r4);
    tx.handle_encoded(t(55), r4.id, Ok(outcome)).unwrap();
    let sent = events(tx.as_mut(), t(55));
    assert!(
        matches!(sent[..], [SenderEvent::FrameSent(f)] if f.picture == 4 && f.keyframe),
        "{sent:?}"
    );
    let s = tx.stats();
    assert_eq!(
        (s.pictures, s.dropped, s.frames_sent, s.keyframes),
        (5, 4, 1, 1)
    );
}

#[test]
fn foreign_and_bad_datagrams_are_refused_and_counted() {
    let (mut tx, mut rx) = pair(SenderConfig::default(), true);
    let now = Instant::from_millis(1);
    let baseline = [BASELINE_WIRE_TAG, 1, 2, 3, 4, 5, 6, 7];
    for err in [
        tx.handle_datagram(now, &baseline).unwrap_err(),
        rx.handle_datagram(now, &baseline).unwrap_err(),
    ] {
        assert!(
            matches!(err, DatagramError::OtherProtocol { first_byte } if first_byte == BASELINE_WIRE_TAG),
            "{err}"
        );
    }
    for garbage in [&[][..], &[1u8, 0xee, 3][..], &[9u8; 50][..]] {
        assert!(matches!(
            tx.handle_datagram(now, garbage),
            Err(DatagramError::Rejected(_))
        ));
        assert!(matches!(
            rx.handle_datagram(now, garbage),
            Err(DatagramError::Rejected(_))
        ));
    }
    assert_eq!(tx.stats().bad_datagrams, 4);
    let rs = rx.stats();
    assert_eq!((rs.datagrams, rs.bad_datagrams), (4, 4));
    // Nothing came of them.
    assert!(matches!(rx.poll_output(now), ReceiverOutput::Timeout(_)));
    assert!(matches!(tx.poll_output(now), SenderOutput::Timeout(_)));
}

#[test]
fn the_endpoints_are_the_state_machines_themselves() {
    let tx = SalsifySender::from_config(SenderConfig::default(), false).unwrap();
    assert!(!tx.parallel_encodes());
    assert_eq!(tx.config(), &SenderConfig::default());
    assert_eq!(tx.budget(), None);
    assert_eq!(
        SenderEndpoint::stats(&tx).quality,
        None,
        "no frame sent yet"
    );
    let rx = SalsifyReceiver::from_config(ReceiverConfig::default()).unwrap();
    assert_eq!(rx.current_state(), State::initial().hash());
    assert_eq!(rx.scheme(), "salsify");
}

/// ACKs older than one already used are accepted (reordering is harmless) but counted apart
/// from the feedback used, so a driver can tell a receiver that restarted and numbers its
/// ACKs from zero again.
#[test]
fn stale_acks_are_counted_apart_from_feedback_used() {
    use salsify_transport::{Ack, FragmentId};
    let (mut tx, _rx) = pair(SenderConfig::default(), true);
    let ack = |ack_number: u32| {
        let mut out = Vec::new();
        Ack {
            connection_id: SenderConfig::default().connection_id,
            ack_number,
            acked: FragmentId::default(),
            highest: FragmentId::default(),
            mean_interarrival: None,
            current_state: StateHash::INITIAL,
            frames_lost: 0,
            held_states: Vec::new(),
            forecast: None,
        }
        .emit(&mut out)
        .unwrap();
        out
    };
    let now = Instant::from_millis(1);
    for n in [500, 501, 3, 4, 502] {
        tx.handle_datagram(now, &ack(n)).unwrap();
    }
    let s = tx.stats();
    assert_eq!((s.feedback, s.stale_feedback), (3, 2), "{s:?}");
}
