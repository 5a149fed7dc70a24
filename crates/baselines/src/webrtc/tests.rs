//! The conventional sender against a clean emulated link: a FIFO bottleneck of a given rate
//! (no loss), a fixed propagation delay each way, the shared receiver's transport half, and
//! a fake encoder that hits the job's target exactly.

use std::collections::VecDeque;

use proptest::prelude::*;
use salsify_codec::CbrFrame;
use salsify_endpoint::{EncodeJob, SenderOutput};

use super::*;
use crate::jitter::{JitterReceiver, Output};
use crate::wire::Feedback;
use crate::ReceiverConfig;

/// One-way propagation delay (50 ms RTT, as Vidaptive's Figure 1 and libwebrtc's
/// probing test).
const PROP: Duration = Duration::from_millis(25);

struct Link {
    /// Rate in kb/s from each time (µs) on.
    schedule: Vec<(u64, u64)>,
    free_at: u64,
    deliveries: VecDeque<(u64, Vec<u8>)>,
}

impl Link {
    fn rate_at(&self, us: u64) -> u64 {
        self.schedule
            .iter()
            .rev()
            .find(|s| s.0 <= us)
            .map_or(1000, |s| s.1)
    }
    fn send(&mut self, now: u64, d: Vec<u8>) {
        let start = self.free_at.max(now);
        let kbps = self.rate_at(start).max(1);
        let done = start + d.len() as u64 * 8_000 / kbps;
        self.free_at = done;
        self.deliveries
            .push_back((done + PROP.as_micros() as u64, d));
    }
}

struct Run {
    /// (time s, controller target kb/s, encoder target kb/s) every 100 ms.
    samples: Vec<(f64, f64, f64)>,
    /// (delivery time s, one-way delay of the packet ms) of media packets.
    delays: Vec<(f64, f64)>,
    delivered_bytes: Vec<(u64, usize)>,
    sizes: Vec<(u32, u32)>,
    /// The sender's gauges at the end.
    diagnostics: Vec<Diagnostic>,
    /// The distinct probe rates (kb/s) the gauges showed, in order.
    probe_rates: Vec<f64>,
}

fn run(
    config: ConventionalConfig,
    source: (u32, u32),
    schedule: Vec<(u64, u64)>,
    secs: u64,
) -> Run {
    let mut s = WebrtcSender::new(config, source).unwrap();
    let mut r = JitterReceiver::new(ReceiverConfig {
        feedback_interval: crate::WireId::Conventional.feedback_interval(),
        ..ReceiverConfig::default()
    });
    let mut link = Link {
        schedule,
        free_at: 0,
        deliveries: VecDeque::new(),
    };
    let mut back: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut sent_at = std::collections::HashMap::new();
    let mut out = Run {
        samples: vec![],
        delays: vec![],
        delivered_bytes: vec![],
        sizes: vec![],
        diagnostics: vec![],
        probe_rates: vec![],
    };
    let (mut next_pic, mut pic, mut next_sample) = (0u64, 0u64, 0u64);
    let mut sender_wake = 0u64;
    let mut receiver_wake = u64::MAX;
    let mut pending: Option<(u64, u64, CbrJob)> = None;
    let end = secs * 1_000_000;
    loop {
        let now = [
            Some(next_pic),
            Some(sender_wake),
            Some(receiver_wake),
            link.deliveries.front().map(|d| d.0),
            back.front().map(|d| d.0),
            pending.map(|p| p.0),
            Some(next_sample),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if now >= end {
            break;
        }
        let t = Instant::from_micros(now);
        if next_sample <= now {
            out.samples.push((
                now as f64 / 1e6,
                s.target().as_f64() / 1e3,
                s.encoder_target().as_f64() / 1e3,
            ));
            next_sample += 100_000;
        }
        if pending.is_some_and(|p| p.0 <= now) {
            let (_, id, job) = pending.take().unwrap();
            // A frame of exactly the target's share, keyframes 4x.
            let bytes = (job.target.as_bps() / 8 / 30) as usize * if job.keyframe { 4 } else { 1 };
            out.sizes.push((job.width, job.height));
            let f = CbrFrame {
                data: vec![0x55; bytes.max(100)],
                keyframe: job.keyframe,
                quality: 40,
            };
            s.handle_encoded(t, id, Ok(EncodeOutcome::Cbr(Some(f))))
                .unwrap();
        }
        if next_pic <= now {
            s.handle_picture(t, pic, t);
            pic += 1;
            next_pic += 33_333;
        }
        while link.deliveries.front().is_some_and(|d| d.0 <= now) {
            let (_, d) = link.deliveries.pop_front().unwrap();
            if let Ok(Packet::Media { header, .. }) = Packet::parse(&d) {
                if let Some(&at) = sent_at.get(&header.transport_seq) {
                    out.delays.push((now as f64 / 1e6, (now - at) as f64 / 1e3));
                }
            }
            out.delivered_bytes.push((now, d.len()));
            let _ = r.handle_datagram(t, &d);
        }
        while back.front().is_some_and(|d| d.0 <= now) {
            let (_, d) = back.pop_front().unwrap();
            s.handle_datagram(t, &d).unwrap();
        }
        if sender_wake <= now {
            s.handle_timeout(t);
        }
        if receiver_wake <= now {
            r.handle_timeout(t);
        }
        loop {
            match s.poll_output(t) {
                SenderOutput::Encode(req) => {
                    let EncodeJob::Cbr(job) = req.job else {
                        panic!("{:?}", req.job)
                    };
                    pending = Some((now + 5_000, req.id, job));
                }
                SenderOutput::Transmit(d) => {
                    if let Ok(Packet::Media { header, .. }) = Packet::parse(&d) {
                        sent_at.insert(header.transport_seq, now);
                    }
                    link.send(now, d);
                    let probe = gauge(&s.diagnostics(), "probe_kbps");
                    if out.probe_rates.last() != Some(&probe) {
                        out.probe_rates.push(probe);
                    }
                }
                SenderOutput::Timeout(w) => {
                    sender_wake = w.as_micros().max(now + 1);
                    break;
                }
                SenderOutput::Event(_) => {}
            }
        }
        loop {
            match r.poll_output() {
                Output::Transmit(d) => back.push_back((now + PROP.as_micros() as u64, d)),
                Output::Timeout(w) => {
                    receiver_wake = w.as_micros().max(now + 1);
                    break;
                }
                _ => {}
            }
        }
    }
    out.diagnostics = s.diagnostics();
    out
}

fn gauge(diagnostics: &[Diagnostic], name: &str) -> f64 {
    diagnostics
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no {name} in {diagnostics:?}"))
        .value
}

fn target_at(run: &Run, secs: f64) -> f64 {
    run.samples
        .iter()
        .rev()
        .find(|s| s.0 <= secs + 1e-9)
        .map_or(0.0, |s| s.1)
}

/// libwebrtc's probing scenario (goog_cc_network_control_unittest.cc,
/// `InitialProbing`-style): on a clean 2 Mb/s link the target is at least 900 kb/s one
/// second after start.
#[test]
fn initial_probing_reaches_900_kbps_within_a_second_on_2_mbps() {
    let r = run(
        ConventionalConfig::default(),
        (640, 360),
        vec![(0, 2000)],
        3,
    );
    let at1 = target_at(&r, 1.0);
    println!(
        "target at 1 s: {at1:.0} kb/s; samples {:?}",
        &r.samples[..12]
    );
    assert!(at1 >= 900.0, "target {at1:.0} kb/s at 1 s");
    // And the estimate does not run away above the link.
    let at3 = target_at(&r, 2.9);
    assert!(at3 <= 2600.0, "target {at3:.0} kb/s at 3 s");
    // The probes show in the gauges: libwebrtc's first two clusters, at 3x and 6x the
    // 300 kb/s start, then what it probed further.
    println!("probe rates {:?}", r.probe_rates);
    assert_eq!(&r.probe_rates[..2], &[900.0, 1800.0]);
    let clusters = gauge(&r.diagnostics, "probe_clusters");
    assert!(
        clusters >= r.probe_rates.len() as f64,
        "{clusters} probe clusters"
    );
}

/// A drop from 2 Mb/s to 500 kb/s brings the target below the new rate, and the encoder's
/// target follows every update (no deadband): it changes more often than the 10 %
/// deadband would let it.
#[test]
fn a_capacity_drop_lowers_the_target_and_the_encoder_follows() {
    let r = run(
        ConventionalConfig::default(),
        (640, 360),
        vec![(0, 2000), (8_000_000, 500)],
        16,
    );
    let before = target_at(&r, 7.9);
    let after = target_at(&r, 15.9);
    assert!(before > 1000.0, "{before}");
    assert!(after < 600.0, "{after}");
    let small_changes = r
        .samples
        .windows(2)
        .filter(|w| {
            w[0].2 != w[1].2
                && !crate::deadband_passes(
                    Bitrate::from_f64(w[1].2 * 1e3),
                    Bitrate::from_f64(w[0].2 * 1e3),
                )
        })
        .count();
    assert!(
        small_changes > 0,
        "every encoder change passed the deadband"
    );
}

/// A 720p camera starts small at 300 kb/s (the initial frame drop), and with an encoder
/// maximum of 600 kb/s at that size.
#[test]
fn a_720p_camera_starts_at_320x180() {
    let r = run(
        ConventionalConfig::default(),
        (1280, 720),
        vec![(0, 3000)],
        1,
    );
    assert_eq!(r.sizes.first(), Some(&(320, 180)));
    let c = ConventionalConfig {
        initial_frame_drop: false,
        ..ConventionalConfig::default()
    };
    let r = run(c, (1280, 720), vec![(0, 3000)], 1);
    assert_eq!(r.sizes.first(), Some(&(1280, 720)));
}

fn drive_with_feedback(s: &mut WebrtcSender, datagrams: &[Vec<u8>]) {
    let mut now = Instant::ZERO;
    for (i, d) in datagrams.iter().enumerate() {
        s.handle_picture(now, i as u64, now);
        let until = now + Duration::from_millis(33);
        loop {
            match s.poll_output(now) {
                SenderOutput::Encode(req) => {
                    let f = CbrFrame {
                        data: vec![1; 3000],
                        keyframe: false,
                        quality: 50,
                    };
                    let _ = s.handle_encoded(now, req.id, Ok(EncodeOutcome::Cbr(Some(f))));
                }
                SenderOutput::Timeout(w) => {
                    if w >= until {
                        break;
                    }
                    now = w.max(now + Duration::from_micros(1));
                    s.handle_timeout(now);
                }
                _ => {}
            }
        }
        let _ = s.handle_datagram(now, d);
        now = until;
        s.handle_timeout(now);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Feedback with any arrival times (any clock, reordered, absurd, all lost) and any
    /// sequence numbers never panics the sender or the controller behind it.
    #[test]
    fn malformed_feedback_never_panics(
        reports in proptest::collection::vec(
            (0u32..400, proptest::collection::vec(
                proptest::option::of(prop_oneof![
                    any::<u64>(),
                    0u64..5_000_000,
                    Just(u64::MAX - 1),
                ]),
                0..60,
            )),
            1..40,
        )
    ) {
        let mut s = WebrtcSender::new(ConventionalConfig::default(), (320, 180)).unwrap();
        let datagrams: Vec<Vec<u8>> = reports
            .into_iter()
            .filter_map(|(base_seq, arrivals)| {
                let arrivals = arrivals
                    .into_iter()
                    .map(|a| a.map(|us| Instant::from_micros(us.min(u64::MAX - 1))))
                    .collect();
                Packet::Feedback(Feedback { base_seq, arrivals }).emit().ok()
            })
            .collect();
        drive_with_feedback(&mut s, &datagrams);
        prop_assert!(s.target() >= Bitrate::ZERO);
    }

    /// Random bytes as datagrams never panic it either.
    #[test]
    fn garbage_datagrams_never_panic(
        datagrams in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..30)
    ) {
        let mut s = WebrtcSender::new(ConventionalConfig::default(), (320, 180)).unwrap();
        let datagrams: Vec<Vec<u8>> = datagrams
            .into_iter()
            .map(|mut d| {
                if d.len() > 1 {
                    d[0] = crate::wire::TAG;
                    d[1] %= 6;
                }
                d
            })
            .collect();
        drive_with_feedback(&mut s, &datagrams);
    }
}

fn encoder_target_at(run: &Run, secs: f64) -> f64 {
    run.samples
        .iter()
        .rev()
        .find(|s| s.0 <= secs + 1e-9)
        .map_or(0.0, |s| s.2)
}

/// With the encoder bitrate adjuster on (the default), the encoder is asked for 1/1.2 of its target for
/// the first 30 frames, then, as the fake encoder hits its targets exactly, for all of it.
#[test]
fn the_bitrate_adjuster_assumes_20_percent_overshoot_then_measures() {
    let off = run(
        ConventionalConfig {
            bitrate_adjuster: false,
            ..ConventionalConfig::default()
        },
        (640, 360),
        vec![(0, 2000)],
        4,
    );
    let on = run(
        ConventionalConfig::default(),
        (640, 360),
        vec![(0, 2000)],
        4,
    );
    let (a, b) = (encoder_target_at(&off, 0.5), encoder_target_at(&on, 0.5));
    println!("0.5 s: {a:.0} / {b:.0} kb/s");
    assert!((a / b - 1.2).abs() < 0.02, "{a:.0} vs {b:.0} kb/s at 0.5 s");
    let (a, b) = (encoder_target_at(&off, 3.9), encoder_target_at(&on, 3.9));
    println!("3.9 s: {a:.0} / {b:.0}");
    assert!(
        b > 0.95 * a && b <= a * 1.001,
        "{a:.0} vs {b:.0} kb/s at 3.9 s"
    );
}

/// One session, one budget: the audio's send rate over the last second is allocated first,
/// and the encoder gets the rest (libwebrtc's allocation).
#[test]
fn the_audio_rate_is_taken_from_the_encoder_target() {
    let config = ConventionalConfig::default();
    let mut quiet = WebrtcSender::new(config, (640, 360)).unwrap();
    let mut talking = WebrtcSender::new(config, (640, 360)).unwrap();
    // 100 bytes every 20 ms: 49 packets in the second before t, 39.2 kb/s.
    for i in 0..100 {
        talking.handle_audio_sent(Instant::from_millis(i * 20), 100);
    }
    let t = Instant::from_millis(2000);
    for s in [&mut quiet, &mut talking] {
        s.handle_timeout(t);
        s.handle_picture(t, 0, t);
    }
    let (without, with) = (
        quiet.encoder_target().as_bps(),
        talking.encoder_target().as_bps(),
    );
    // Taken from the allocation, which the header share and the bitrate adjuster then scale
    // (by about 0.8 here) as they scale the rest.
    let taken = without as f64 - with as f64;
    assert!(
        (0.7 * 39_200.0..=39_200.0).contains(&taken),
        "without audio {without} b/s, with {with} b/s"
    );
}
