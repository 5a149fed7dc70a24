//! Tests of the oracle (a child module of `oracle`).
use super::*;

/// One 1500-byte opportunity every millisecond (12 Mb/s), 20 ms propagation; the first
/// rounds' rule, aiming at `target_ms`.
fn oracle(target_ms: u64) -> OracleSender {
    OracleSender::new(
        OracleConfig {
            rule: OracleRule::Target,
            delay_target: Duration::from_millis(target_ms),
            encode_time: Duration::ZERO,
            ..OracleConfig::default()
        },
        LinkForecast::without_failures(
            Box::new(|n| Instant::from_millis(n + 1)),
            1500,
            Duration::from_millis(20),
        ),
    )
    .unwrap()
}

#[test]
fn budget_counts_opportunities_before_the_deadline_minus_propagation() {
    let o = oracle(100);
    // Sent at 0: opportunities 1..=80 ms depart in time (80 x 1500 bytes).
    let b = o.budget(Instant::ZERO, Instant::from_millis(100));
    assert_eq!(b, 80 * 1500 - 85 * MEDIA_HEADER_LEN); // 85 datagrams of <= 1420 bytes
    assert_eq!(o.budget(Instant::ZERO, Instant::from_millis(20)), 0);
}

#[test]
fn a_sent_frame_uses_up_the_budget() {
    let mut o = oracle(100);
    o.handle_picture(Instant::ZERO, 0, Instant::ZERO);
    let SenderOutput::Encode(req) = o.poll_output(Instant::ZERO) else {
        panic!()
    };
    let EncodeJob::FinestFitting { bytes, .. } = req.job else {
        panic!()
    };
    o.encoding = None;
    let p = Picture {
        picture: 0,
        captured: Instant::ZERO,
    };
    o.send_vp8(Instant::ZERO, p, &vec![0; bytes], true, Quality::BEST, None);
    // The link is booked until 80 ms: a picture at 0 ms has nothing left.
    assert_eq!(o.budget(Instant::ZERO, Instant::from_millis(100)), 0);
    // One captured at 20 ms may use 81..=100 ms.
    assert!(o.budget(Instant::from_millis(20), Instant::from_millis(120)) > 19 * 1400);
}

#[test]
fn a_smaller_path_cuts_smaller_packets_and_drops_held_ones_that_do_not_fit() {
    let mut o = oracle(100);
    let p = Picture {
        picture: 0,
        captured: Instant::ZERO,
    };
    // Held until 10 ms, in four packets cut for 1400-byte payloads (1270 bytes each).
    o.send_vp8(
        Instant::from_millis(10),
        p,
        &[0; 5000],
        true,
        Quality::BEST,
        None,
    );
    o.set_max_datagram(Instant::ZERO, 1000);
    assert!(o.state.is_initial(), "the next search makes a keyframe");
    let sizes = |out: Vec<SenderOutput>| -> Vec<usize> {
        out.iter()
            .filter_map(|x| match x {
                SenderOutput::Transmit(d) => Some(d.len()),
                _ => None,
            })
            .collect()
    };
    assert!(sizes(drain(&mut o)).is_empty());
    // Cut now: six packets of at most 1000 bytes, and the budget counts their headers.
    o.send_vp8(
        Instant::from_millis(20),
        p,
        &[0; 5000],
        true,
        Quality::BEST,
        None,
    );
    let sent = sizes(drain(&mut o));
    assert_eq!(sent.len(), 6);
    assert!(sent.iter().all(|&n| n <= 1000), "{sent:?}");
    let b = o.budget(Instant::from_millis(200), Instant::from_millis(300));
    assert_eq!(b, 80 * 1500 - 120 * MEDIA_HEADER_LEN); // 120 datagrams of <= 1000 bytes
}

fn drain(o: &mut OracleSender) -> Vec<SenderOutput> {
    let mut out = vec![];
    loop {
        // Everything it holds, whenever it is due.
        match o.poll_output(Instant::FAR_FUTURE) {
            SenderOutput::Timeout(_) => return out,
            x => out.push(x),
        }
    }
}

/// The oracle keeps its codec state: each search starts from the state and quantizer of
/// the last frame found, and its VP8 bytes (not the state-hash header) go on the wire.
#[test]
fn searches_continue_from_the_last_frame_found() {
    use salsify_codec::{search, Encoder, SyntheticSource};
    let (w, h) = (128, 96);
    let mut enc = Encoder::new(w, h).unwrap();
    let video = SyntheticSource::new(w, h, 30, 3).unwrap();
    let mut o = oracle(100);
    let mut last: Option<EncodedFrame> = None;
    for i in 0..3u64 {
        let now = Instant::from_millis(i * 33);
        o.handle_picture(now, i, now);
        let out = drain(&mut o);
        let Some(SenderOutput::Encode(req)) = out.into_iter().next() else {
            panic!("no request")
        };
        let EncodeJob::FinestFitting {
            source,
            bytes,
            start,
            halvings: 0,
        } = req.job
        else {
            panic!("{:?}", req.job)
        };
        match &last {
            None => {
                assert!(source.is_initial());
                assert_eq!(start.index(), FIRST_SEARCH_START);
            }
            Some(f) => {
                assert_eq!(source.hash(), f.target.hash());
                assert_eq!(start, f.quality);
            }
        }
        let found = search::finest_fitting(&mut enc, &source, &video.frame(i), bytes / 4, start)
            .unwrap()
            .unwrap();
        let outcome = EncodeOutcome::Functional(vec![found.clone()]);
        o.handle_encoded(now, req.id, Ok(outcome)).unwrap();
        let out = drain(&mut o);
        let mut payload = vec![];
        for x in &out {
            if let SenderOutput::Transmit(d) = x {
                let Ok(Packet::Media { header, payload: p }) = Packet::parse(d) else {
                    panic!()
                };
                assert_eq!(header.scheme, WireId::Oracle);
                payload.extend_from_slice(&p);
            }
        }
        assert_eq!(payload, found.vp8());
        let sent = out.iter().find_map(|x| match x {
            SenderOutput::Event(SenderEvent::FrameSent(s)) => Some(*s),
            _ => None,
        });
        let sent = sent.expect("frame sent");
        assert_eq!(sent.states, Some((found.source, found.target.hash())));
        assert_eq!(sent.bytes, found.vp8().len());
        last = Some(found);
    }
    assert_eq!(o.stats().frames_sent, 3);
}

#[test]
fn wrong_results_are_refused_and_drop_the_picture() {
    let mut o = oracle(100);
    o.handle_picture(Instant::ZERO, 0, Instant::ZERO);
    let Some(SenderOutput::Encode(req)) = drain(&mut o).into_iter().next() else {
        panic!()
    };
    assert_eq!(
        o.handle_encoded(Instant::ZERO, req.id + 1, Ok(EncodeOutcome::Cbr(None))),
        Err(InputError::UnknownRequest(req.id + 1))
    );
    assert!(matches!(
        o.handle_encoded(Instant::ZERO, req.id, Ok(EncodeOutcome::Cbr(None))),
        Err(InputError::WrongResult { .. })
    ));
    assert!(matches!(
        drain(&mut o)[..],
        [SenderOutput::Event(SenderEvent::PictureDropped {
            reason: DropReason::Failed,
            ..
        })]
    ));
    // Nothing found: the picture would be late.
    o.handle_picture(Instant::ZERO, 1, Instant::ZERO);
    let Some(SenderOutput::Encode(req)) = drain(&mut o).into_iter().next() else {
        panic!()
    };
    o.handle_encoded(Instant::ZERO, req.id, Ok(EncodeOutcome::Functional(vec![])))
        .unwrap();
    assert!(matches!(
        drain(&mut o)[..],
        [SenderOutput::Event(SenderEvent::PictureDropped {
            reason: DropReason::WouldBeLate,
            ..
        })]
    ));
    assert_eq!(o.stats().dropped, 2);
    assert!(matches!(
        o.handle_datagram(Instant::ZERO, &[1, 2, 3]),
        Err(DatagramError::OtherProtocol { first_byte: 1 })
    ));
}

/// The frame sizes a fake encoder makes: `key` / `inter` bytes at the coarsest quality,
/// `grow` more per quantizer step finer (0: only the coarsest quality).
#[derive(Clone, Copy)]
struct Sizes {
    key: usize,
    inter: usize,
    grow: usize,
}

impl Sizes {
    /// What a finest-fitting search answers. At half the width and height every size is a
    /// third (the fake's states are 32x32 at the source size, 16x16 halved: a state of the
    /// other size makes a keyframe).
    fn search(&self, job: &EncodeJob) -> Vec<EncodedFrame> {
        let EncodeJob::FinestFitting {
            source,
            bytes,
            halvings,
            ..
        } = job
        else {
            panic!("{job:?}")
        };
        let side = 32 >> halvings;
        let keyframe = source.size() != Some((side, side));
        let shrink = if *halvings == 0 { 1 } else { 3 };
        let base = if keyframe { self.key } else { self.inter } / shrink;
        let steps = bytes.saturating_sub(base) / self.grow.max(1);
        if *bytes < base {
            return vec![];
        }
        let steps = if self.grow == 0 { 0 } else { steps.min(127) };
        let quality = Quality::new(127 - steps as u8).unwrap();
        let size = base + steps * self.grow;
        let target = State::from_reference(salsify_codec::Image::new(side, side).unwrap());
        let mut data = vec![0; salsify_codec::frame::HEADER_LEN];
        data.resize(salsify_codec::frame::HEADER_LEN + size, 1);
        vec![EncodedFrame {
            bytes: data,
            source: source.hash(),
            target,
            quality,
            keyframe,
        }]
    }
}

/// A link whose opportunity `n` is at `times[n]` (then every 1 ms after the last).
fn link_of(times: Vec<u64>, propagation_ms: u64) -> LinkForecast {
    let times = std::sync::Arc::new(times);
    LinkForecast::without_failures(
        Box::new(move |n| match times.get(n as usize) {
            Some(&t) => Instant::from_millis(t),
            None => Instant::from_millis(times.last().copied().unwrap_or(0) + 1 + n),
        }),
        1500,
        Duration::from_millis(propagation_ms),
    )
}

/// What a run sent: per picture, the send time and datagram sizes of its frame; and the
/// picture and halvings of every search asked for.
struct Run {
    frames: Vec<(u64, Instant, Vec<usize>)>,
    pictures: u64,
    halvings: Vec<(u64, u8)>,
}

/// Drives an oracle with a picture every `interval_ms` for `pictures` pictures, encodes
/// taking `encode_ms`, answered by `sizes`.
fn run(link: LinkForecast, sizes: Sizes, pictures: u64, interval_ms: u64, encode_ms: u64) -> Run {
    run_with(
        OracleRule::DelayFirst,
        link,
        sizes,
        pictures,
        interval_ms,
        encode_ms,
    )
}

/// [`run`] under `rule`.
fn run_with(
    rule: OracleRule,
    link: LinkForecast,
    sizes: Sizes,
    pictures: u64,
    interval_ms: u64,
    encode_ms: u64,
) -> Run {
    let config = OracleConfig {
        rule,
        ..OracleConfig::default()
    };
    run_config(config, link, sizes, pictures, interval_ms, encode_ms)
}

/// [`run`] with `config` (its encode times set to `encode_ms`).
fn run_config(
    config: OracleConfig,
    link: LinkForecast,
    sizes: Sizes,
    pictures: u64,
    interval_ms: u64,
    encode_ms: u64,
) -> Run {
    let config = OracleConfig {
        encode_time: Duration::from_millis(encode_ms),
        halved_encode_time: Duration::from_millis(encode_ms),
        ..config
    };
    let mut o = OracleSender::new(config, link).unwrap();
    let mut frames = vec![];
    let mut halvings = vec![];
    let mut pending: Option<(Instant, EncodeRequest)> = None;
    let mut collect = |o: &mut OracleSender, now: Instant, pending: &mut Option<_>| {
        let mut datagrams = vec![];
        loop {
            match o.poll_output(now) {
                SenderOutput::Timeout(_) => break,
                SenderOutput::Encode(req) => {
                    if let EncodeJob::FinestFitting { halvings: h, .. } = req.job {
                        halvings.push((req.picture, h));
                    }
                    *pending = Some((now + Duration::from_millis(encode_ms), req))
                }
                SenderOutput::Transmit(d) => datagrams.push(d.len()),
                SenderOutput::Event(SenderEvent::FrameSent(f)) => {
                    frames.push((f.picture, now, std::mem::take(&mut datagrams)))
                }
                SenderOutput::Event(_) => {}
            }
        }
    };
    for i in 0..pictures {
        let now = Instant::from_millis(i * interval_ms);
        if let Some((done, req)) = pending.take_if(|p| p.0 <= now) {
            let out = EncodeOutcome::Functional(sizes.search(&req.job));
            o.handle_encoded(done, req.id, Ok(out)).unwrap();
            collect(&mut o, done, &mut pending);
        }
        o.handle_picture(now, i, now);
        collect(&mut o, now, &mut pending);
    }
    Run {
        frames,
        pictures,
        halvings,
    }
}

/// An independent model of the bottleneck (netem's rules, byte by byte): when each
/// frame's last byte reaches the receiver, per picture.
fn deliver(link: &LinkForecast, frames: &[(u64, Instant, Vec<usize>)]) -> Vec<(u64, Instant)> {
    let mut queue: VecDeque<(usize, Instant, usize)> = VecDeque::new();
    for (k, (_, at, datagrams)) in frames.iter().enumerate() {
        for &d in datagrams {
            queue.push_back((k, *at, d));
        }
    }
    let mut done = vec![];
    let mut n = 0;
    while !queue.is_empty() {
        let t = (link.opportunity)(n);
        n += 1;
        let mut room = link.opportunity_bytes as usize;
        while room > 0 {
            let Some(head) = queue.front_mut() else { break };
            if head.1 >= t {
                break;
            }
            let take = room.min(head.2);
            head.2 -= take;
            room -= take;
            if head.2 == 0 {
                let (k, ..) = queue.pop_front().unwrap();
                if queue.front().is_none_or(|h| h.0 != k) {
                    done.push((frames[k].0, t + link.propagation));
                }
            }
        }
    }
    done
}

/// The paper's delay of every picture (the next frame shown), for pictures up to the
/// last shown, in ms.
fn delays(shown: &[(u64, Instant)], pictures: u64, interval_ms: u64) -> Vec<u64> {
    let mut out = vec![];
    for p in 0..pictures {
        if let Some(&(_, at)) = shown.iter().find(|s| s.0 >= p) {
            out.push((at - Instant::from_millis(p * interval_ms)).as_millis() as u64);
        }
    }
    out
}

/// On a fast link (12 Mb/s, 20 ms propagation, 30 fps) the delay-first rule shows every
/// picture within half an interval of the earliest it could be shown (its coarsest frame on
/// the link the instant it is encoded), so its paper delay is below the target rule's (which
/// fills the link up to 100 ms after capture), and it still buys quality in the slack.
#[test]
fn delay_first_shows_each_picture_within_the_slack_of_its_earliest_display() {
    let times: Vec<u64> = (1..=20_000).collect();
    let sizes = Sizes {
        key: 3000,
        inter: 300,
        grow: 500,
    };
    let mean = |r: &Run| {
        let shown = deliver(&link_of(times.clone(), 20), &r.frames);
        let d = delays(&shown, r.pictures, 33);
        (d.iter().sum::<u64>() as f64 / d.len() as f64, shown)
    };
    let first = run_with(
        OracleRule::DelayFirst,
        link_of(times.clone(), 20),
        sizes,
        300,
        33,
        5,
    );
    let target = run_with(
        OracleRule::Target,
        link_of(times.clone(), 20),
        sizes,
        300,
        33,
        5,
    );
    let (first_mean, shown) = mean(&first);
    let (target_mean, _) = mean(&target);
    assert!(
        first_mean + 30.0 < target_mean,
        "delay-first {first_mean:.1} ms, target {target_mean:.1} ms"
    );
    // Earliest display of an inter frame: encode 5 ms, the next opportunity, 20 ms of
    // propagation; plus the slack of 16.5 ms and an opportunity of rounding.
    for &(p, at) in shown.iter().skip(3) {
        let delay = at - Instant::from_millis(p * 33);
        assert!(
            delay <= Duration::from_millis(5 + 1 + 20 + 17 + 1),
            "{p}: {delay:?}"
        );
    }
    // Quality was bought in the slack: frames far above the coarsest size.
    let bytes: usize = first
        .frames
        .iter()
        .skip(3)
        .map(|f| f.2.iter().sum::<usize>())
        .sum();
    let n = first.frames.len().saturating_sub(3).max(1);
    assert!(
        bytes / n > 10 * sizes.inter,
        "{} bytes per frame",
        bytes / n
    );
}

/// 20 kb/s (one 1500-byte opportunity every 600 ms) and a 720p-sized first frame (its
/// coarsest keyframe 6.8 kB, 2.7 s of link): the old rule never sent anything (nothing
/// arrives within 100 ms); now the keyframe goes out at once, and every later frame as
/// soon as the link can carry the coarsest frame.
#[test]
fn a_20_kbps_link_still_shows_frames() {
    let times: Vec<u64> = (1..=200).map(|n| n * 600).collect();
    let sizes = Sizes {
        key: 6765,
        inter: 2000,
        grow: 40,
    };
    let r = run(link_of(times.clone(), 20), sizes, 30 * 60, 33, 5);
    let shown = deliver(&link_of(times, 20), &r.frames);
    assert!(shown.len() >= 30, "{} frames shown in 60 s", shown.len());
    // The keyframe: 5 opportunities (3 s), a few more while the guess of its size
    // grows (each miss costs a picture, 33 ms, and at most one opportunity).
    assert!(
        shown[0].1 < Instant::from_millis(3_000 + 3 * 600),
        "{:?}",
        shown[0]
    );
    // Never silent for longer than a coarsest inter frame takes (2 opportunities) plus
    // one opportunity of misfit and the slack's share.
    for w in shown.windows(2) {
        let gap = w[1].1 - w[0].1;
        assert!(
            gap <= Duration::from_millis(3 * 600),
            "{gap:?} between {w:?}"
        );
    }
    // Every picture after the first frame is shown within a few seconds.
    let d = delays(&shown, r.pictures, 33);
    assert!(
        d[200..].iter().all(|&ms| ms < 3_000),
        "{:?}",
        d.iter().max()
    );
}

/// A 12 Mb/s link with nothing between 1 s and 6 s: it sends the last picture before the
/// outage ends, which is shown at the first opportunity after it.
#[test]
fn it_resumes_at_the_first_opportunity_after_an_outage() {
    let times: Vec<u64> = (1..=1000).chain(6000..=8000).collect();
    let sizes = Sizes {
        key: 3000,
        inter: 400,
        grow: 100,
    };
    let r = run(link_of(times.clone(), 20), sizes, 240, 33, 5);
    let shown = deliver(&link_of(times, 20), &r.frames);
    let after: Vec<_> = shown
        .iter()
        .filter(|s| s.1 > Instant::from_millis(1_100))
        .collect();
    let first = after[0];
    // Its first byte left at the first opportunity (6 s): 20 ms of propagation and the
    // rest of its delay target (captured at 5.94 s) for quality.
    let sent = r.frames.iter().find(|f| f.0 == first.0).unwrap().1;
    assert!(
        sent < Instant::from_millis(6_000),
        "{first:?} sent {sent:?}"
    );
    assert!(first.1 <= Instant::from_millis(6_040), "{after:?}");
    // Every frame after the outage within the delay target.
    for s in &after {
        assert!(s.1 - Instant::from_millis(s.0 * 33) <= Duration::from_millis(100));
    }
    // During the outage nothing was sent but that picture.
    let waiting: Vec<_> = r
        .frames
        .iter()
        .filter(|f| f.1 > Instant::from_millis(1_000) && f.1 < Instant::from_millis(6_000))
        .collect();
    assert!(waiting.len() <= 2, "{waiting:?}");
}

/// The oracle's model of the link is exact: each frame arrives when `arrival` says (at
/// its send time, behind what was queued), on an irregular link with outages.
#[test]
fn predicted_arrivals_are_exact() {
    let mut t = 0;
    let times: Vec<u64> = (0..3000u64)
        .map(|n| {
            t += [0, 1, 3, 7, 30][(n * 7 % 5) as usize] + if n % 500 == 499 { 700 } else { 0 };
            t
        })
        .collect();
    let sizes = Sizes {
        key: 3000,
        inter: 600,
        grow: 150,
    };
    let link = link_of(times.clone(), 15);
    let r = run(link, sizes, 300, 33, 5);
    let shown = deliver(&link_of(times.clone(), 15), &r.frames);
    let mut o = OracleSender::new(OracleConfig::default(), link_of(times, 15)).unwrap();
    assert_eq!(shown.len(), r.frames.len());
    for ((picture, at, datagrams), (p, arrived)) in r.frames.iter().zip(&shown) {
        assert_eq!(picture, p);
        let wire: usize = datagrams.iter().sum();
        let c = o.cursor_at(*at);
        let (c, departs) = o.serve(c, wire);
        o.cursor = c;
        assert_eq!(departs + o.link.propagation, *arrived);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Skipping never makes a picture later: against the schedule that sends every
    /// picture's frame as soon as it is encoded (the same frames and more, earlier), each
    /// frame the oracle sends arrives no later, and the oracle's paper delay of every
    /// picture is at most the other schedule's.
    #[test]
    fn no_frame_is_later_than_under_sending_everything(
        gaps in proptest::collection::vec(0u64..80, 50..400),
        outage_at in 0usize..400,
        outage_ms in 0u64..3000,
        inter in 100usize..4000,
        encode_ms in 0u64..30,
    ) {
        let mut t = 0;
        let times: Vec<u64> = gaps
            .iter()
            .enumerate()
            .map(|(i, g)| {
                t += g + if i == outage_at { outage_ms } else { 0 };
                t
            })
            .collect();
        // Every quality the same size: the oracle's choice is only when to send.
        let sizes = Sizes { key: inter, inter, grow: 0 };
        let pictures = 150;
        let r = run(link_of(times.clone(), 10), sizes, pictures, 33, encode_ms);
        let shown = deliver(&link_of(times.clone(), 10), &r.frames);
        // The alternative: every picture sent when its encode would finish.
        let all: Vec<_> = (0..pictures)
            .map(|p| {
                let count = inter.div_ceil(FRAGMENT_PAYLOAD);
                let per = inter.div_ceil(count);
                let mut left = inter;
                let mut d = vec![];
                while left > 0 {
                    let c = per.min(left);
                    d.push(c + MEDIA_HEADER_LEN);
                    left -= c;
                }
                (p, Instant::from_millis(p * 33 + encode_ms), d)
            })
            .collect();
        let everything = deliver(&link_of(times, 10), &all);

        for (p, at) in &shown {
            let other = everything.iter().find(|e| e.0 == *p).map(|e| e.1);
            proptest::prop_assert!(other.is_none_or(|o| *at <= o), "picture {p}: {at:?} vs {other:?}");
        }
        // Once its guess of the frame size is right (searches that found nothing while it
        // learnt cost their pictures), no picture is shown later.
        let learnt = r.frames.get(2).map_or(pictures, |f| f.0) as usize;
        let mine = delays(&shown, pictures, 33);
        let theirs = delays(&everything, pictures, 33);
        for (p, (a, b)) in mine.iter().zip(&theirs).enumerate().skip(learnt) {
            proptest::prop_assert!(a <= b, "picture {p}: {a} ms vs {b} ms");
        }
    }
}

/// A keyframe request (the receiver lost a frame the oracle could not foresee) makes the next
/// search start from the initial state (a keyframe); one arriving while that keyframe is
/// still on its way is already answered.
#[test]
fn a_keyframe_request_restarts_from_the_initial_state_once() {
    use salsify_codec::{search, Encoder, SyntheticSource};
    let (w, h) = (128, 96);
    let mut enc = Encoder::new(w, h).unwrap();
    let video = SyntheticSource::new(w, h, 30, 3).unwrap();
    let mut o = oracle(100);
    let pli = Packet::Pli.emit().unwrap();
    let mut sources = Vec::new();
    for i in 0..10u64 {
        let now = Instant::from_millis(i * 33);
        if i == 8 {
            o.handle_datagram(now, &pli).unwrap();
        }
        if i == 9 {
            // Sent before the keyframe of picture 8 arrived: no second keyframe.
            o.handle_datagram(now, &pli).unwrap();
        }
        o.handle_picture(now, i, now);
        let Some(SenderOutput::Encode(req)) = drain(&mut o).into_iter().next() else {
            panic!("no request")
        };
        let EncodeJob::FinestFitting {
            source,
            bytes,
            start,
            halvings: 0,
        } = req.job
        else {
            panic!("{:?}", req.job)
        };
        sources.push(source.is_initial());
        let found = search::finest_fitting(&mut enc, &source, &video.frame(i), bytes / 4, start)
            .unwrap()
            .unwrap();
        o.handle_encoded(now, req.id, Ok(EncodeOutcome::Functional(vec![found])))
            .unwrap();
        drain(&mut o);
    }
    let initial: Vec<usize> = (0..sources.len()).filter(|&i| sources[i]).collect();
    assert_eq!(initial, [0, 8]);
    assert_eq!(o.counters().plis, 1);
}

#[test]
fn nothing_is_sent_while_the_link_is_failed_and_the_newest_picture_goes_first_after() {
    let at = Instant::from_millis;
    let mut link = link_of(vec![], 20);
    // Failed from 100 ms to 400 ms: a packet offered then would be lost.
    link.up_at = Box::new(move |t| {
        if t >= at(100) && t < at(400) {
            at(400)
        } else {
            t
        }
    });
    let sizes = Sizes {
        key: 3000,
        inter: 500,
        grow: 50,
    };
    let r = run(link, sizes, 30, 33, 5);
    assert!(
        r.frames
            .iter()
            .all(|(_, t, _)| *t < at(100) || *t >= at(400)),
        "{:?}",
        r.frames.iter().map(|f| (f.0, f.1)).collect::<Vec<_>>()
    );
    let after: Vec<u64> = r
        .frames
        .iter()
        .filter(|(_, t, _)| *t >= at(400))
        .map(|f| f.0)
        .collect();
    // Pictures 4-10 (captured 132-330 ms) could be shown no sooner than picture 11 (363 ms,
    // encoded by 368 ms): skipped; 11 leaves at 400 ms, and every picture after it follows
    // (but the last, whose encode ends after the run).
    assert_eq!(after.first(), Some(&11), "{after:?}");
    assert_eq!(after, (11..29).collect::<Vec<_>>());
}

/// Mean and 95th percentile of the paper delay of a run on `times` (20 ms propagation).
fn delay_stats(times: &[u64], r: &Run, interval_ms: u64) -> (f64, u64) {
    let shown = deliver(&link_of(times.to_vec(), 20), &r.frames);
    let mut d = delays(&shown, r.pictures, interval_ms);
    assert!(!d.is_empty(), "nothing shown");
    let mean = d.iter().sum::<u64>() as f64 / d.len() as f64;
    d.sort_unstable();
    (mean, d[(d.len() * 95).div_ceil(100) - 1])
}

/// 40 kb/s (a 1500-byte opportunity every 300 ms) and source-size frames of at least 2 kB
/// (400 ms of link each, more than a frame interval): at the source size the queue only
/// grows. Halved (a third of the bytes) it steps down, and its delays are lower than with
/// the source size only.
#[test]
fn on_a_link_too_slow_for_the_source_size_it_steps_down() {
    let times: Vec<u64> = (1..=400).map(|n| n * 300).collect();
    let sizes = Sizes {
        key: 6000,
        inter: 2000,
        grow: 40,
    };
    let halved = run_config(halvings(1), link_of(times.clone(), 20), sizes, 1800, 33, 5);
    let source = run_config(halvings(0), link_of(times.clone(), 20), sizes, 1800, 33, 5);
    assert!(source.halvings.iter().all(|&(_, h)| h == 0));
    let stepped = halved.halvings.iter().filter(|&&(_, h)| h == 1).count();
    assert!(
        stepped * 2 > halved.halvings.len(),
        "{stepped} of {} searches halved",
        halved.halvings.len()
    );
    let (mean_h, p95_h) = delay_stats(&times, &halved, 33);
    let (mean_s, p95_s) = delay_stats(&times, &source, 33);
    assert!(
        mean_h < mean_s && p95_h < p95_s,
        "halved {mean_h:.0} / {p95_h} ms, source only {mean_s:.0} / {p95_s} ms"
    );
    assert!(halved.frames.len() > source.frames.len());
}

/// The default oracle with at most `max_halvings` halvings of the picture size.
fn halvings(max_halvings: u8) -> OracleConfig {
    OracleConfig {
        max_halvings,
        ..OracleConfig::default()
    }
}

/// On a fast link (12 Mb/s) it never steps down: the same frames at the same times as
/// with the source size only.
#[test]
fn on_a_fast_link_it_never_steps_down() {
    let times: Vec<u64> = (1..=20_000).collect();
    let sizes = Sizes {
        key: 3000,
        inter: 300,
        grow: 500,
    };
    let halved = run_config(halvings(1), link_of(times.clone(), 20), sizes, 300, 33, 5);
    let source = run_config(halvings(0), link_of(times, 20), sizes, 300, 33, 5);
    assert!(halved.halvings.iter().all(|&(_, h)| h == 0));
    assert_eq!(halved.frames, source.frames);
}

/// A fast link (12 Mb/s) that falls to 40 kb/s from 2 s to 30 s. A halved keyframe (3 kB)
/// is larger than a source-size inter frame (2 kB), so a picture-by-picture choice would
/// stay at the source size; looking ahead, it steps down soon after the fall (once its
/// queue of source-size frames drains), and back up once the link is fast again.
#[test]
fn it_steps_down_in_a_fade_and_back_up_after() {
    let times: Vec<u64> = (1..2000)
        .chain((2000..30_000).step_by(300))
        .chain(30_000..40_000)
        .collect();
    let sizes = Sizes {
        key: 9000,
        inter: 2000,
        grow: 40,
    };
    let r = run(link_of(times.clone(), 20), sizes, 1200, 33, 5);
    let size_at = |picture: u64| {
        r.halvings
            .iter()
            .rev()
            .find(|s| s.0 <= picture)
            .map(|s| s.1)
    };
    assert_eq!(size_at(50), Some(0), "{:?}", &r.halvings[..60]);
    assert_eq!(size_at(200), Some(1), "{:?}", r.halvings);
    assert_eq!(size_at(1199), Some(0), "{:?}", r.halvings);
    let source = run_config(halvings(0), link_of(times.clone(), 20), sizes, 1200, 33, 5);
    let (mean_h, p95_h) = delay_stats(&times, &r, 33);
    let (mean_s, p95_s) = delay_stats(&times, &source, 33);
    assert!(
        mean_h < mean_s && p95_h < p95_s,
        "halved {mean_h:.0} / {p95_h} ms, source only {mean_s:.0} / {p95_s} ms"
    );
}
