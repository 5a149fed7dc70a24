use super::*;
use crate::link::{Admission, Link};
use crate::queue::QueueLimit;
use salsify_time::Instant;

#[test]
fn presets_are_valid_and_have_the_papers_numbers() {
    let all = [
        intermittent(1).unwrap(),
        wifi_poisson(1).unwrap(),
        ramp().unwrap(),
        dropout_500k(Duration::from_secs(10)).unwrap(),
        synthetic_cellular(1).unwrap(),
    ];
    for c in &all {
        c.validate().unwrap();
        assert_eq!(c.queue, QueueLimit::packets(256));
        assert_eq!(c.propagation_delay, Duration::from_millis(20));
    }
    let mbps = |c: &LinkConfig| c.trace.mean_rate_bps(c.opportunity_bytes) / 1e6;
    assert!((mbps(&all[0]) - 12.0).abs() < 1e-9);
    assert_eq!(all[0].loss, vec![LossModel::paper_intermittent()]);
    assert!((mbps(&all[1]) - 0.57).abs() < 0.001);
    assert!((mbps(&all[3]) - 0.5).abs() < 1e-9);
    assert_eq!(
        all[3].loss,
        vec![LossModel::outage(
            Duration::from_secs(10),
            Duration::from_secs(1)
        )]
    );
}
/// Capacity over `[from, to)` in bit/s (opportunities at `from < t <= to`).
fn rate(trace: &Trace, from: Duration, to: Duration) -> f64 {
    let n = trace.opportunities_until(to) - trace.opportunities_until(from);
    n as f64 * 12_000.0 / (to - from).as_secs_f64()
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Rates of consecutive `window`s over `[0, len)`.
fn windows(trace: &Trace, window: f64, len: f64) -> Vec<f64> {
    (0..(len / window) as u64)
        .map(|i| {
            rate(
                trace,
                secs(i as f64 * window),
                secs((i + 1) as f64 * window),
            )
        })
        .collect()
}

#[test]
fn slow_presets_are_valid_testbed_links() {
    let (video, ack) = ack_stall(1).unwrap();
    for c in [
        fade(1).unwrap(),
        three_g(1).unwrap(),
        cliff().unwrap(),
        video,
        ack,
    ] {
        c.validate().unwrap();
        assert_eq!(c.queue, QueueLimit::packets(256));
        assert_eq!(c.propagation_delay, Duration::from_millis(20));
    }
}

#[test]
fn fade_schedule_matches_its_doc() {
    for seed in 0..50 {
        let fades = fade_schedule(seed);
        assert_eq!(fades.len(), 4);
        for (i, f) in fades.iter().enumerate() {
            let slot = secs(45.0 * i as f64);
            assert!(f.hold >= secs(5.0) && f.hold <= secs(30.0), "{f:?}");
            assert!((10_000..=50_000).contains(&f.rate.as_bps()), "{f:?}");
            assert!(f.start >= slot + secs(8.0), "{seed}: {f:?}");
            assert!(f.start + secs(2.0) + f.hold + secs(5.0) <= slot + secs(45.0));
        }
    }
    assert_eq!(fade_schedule(7), fade_schedule(7));
    assert_ne!(fade_schedule(7), fade_schedule(8));
}

#[test]
fn fade_rates_over_windows_match_its_doc() {
    for seed in [1, 2, 3] {
        let trace = fade(seed).unwrap().trace;
        assert_eq!(trace.period(), FADE_PERIOD);
        let mut prev_end = Duration::ZERO;
        for f in fade_schedule(seed) {
            // Healthy before the fall: 5 Mb/s within one opportunity.
            let healthy = rate(&trace, prev_end, f.start);
            let slack = 12_000.0 / (f.start - prev_end).as_secs_f64();
            assert!((healthy - 5e6).abs() <= slack, "{seed}: healthy {healthy}");
            // The bottom: the fade's own rate, 10-50 kb/s.
            let bottom_start = f.start + secs(1.0);
            let bottom = rate(&trace, bottom_start, bottom_start + f.hold);
            let slack = 12_000.0 / f.hold.as_secs_f64();
            assert!(
                (bottom - f.rate.as_f64()).abs() <= slack,
                "{seed}: bottom {bottom} vs {:?}",
                f.rate
            );
            assert!((10e3 - slack..=50e3 + slack).contains(&bottom));
            prev_end = bottom_start + f.hold + secs(1.0);
        }
        // Second by second: never above 5 Mb/s, 4 fades of 5-30 s below 100 kb/s.
        let per_s = windows(&trace, 1.0, 180.0);
        let max = per_s.iter().cloned().fold(0.0, f64::max);
        let low_secs = per_s.iter().filter(|&&r| r < 100e3).count();
        assert!((max - 5e6).abs() <= 12_000.0, "{max}");
        assert!(
            (4 * 4..=4 * 31).contains(&low_secs),
            "{low_secs} s below 100 kb/s"
        );
        let mean = trace.mean_rate_bps(1500);
        assert!(mean > 1.4e6 && mean < 4.3e6, "mean {mean}");
    }
}

#[test]
fn three_g_walks_between_20_and_800_kbps() {
    for seed in 1..=5 {
        let trace = three_g(seed).unwrap().trace;
        assert_eq!(trace.period(), Duration::from_secs(300));
        let mean = trace.mean_rate_bps(1500);
        assert!((250e3..500e3).contains(&mean), "{seed}: mean {mean}");
        // 10 s windows: the walk stays in its band (Poisson noise aside) and uses it.
        let w = windows(&trace, 10.0, 300.0);
        let (min, max) = w
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
        assert!((10e3..150e3).contains(&min), "{seed}: min {min}");
        assert!(max <= 850e3 && max > 500e3, "{seed}: max {max}");
    }
}

#[test]
fn cliff_falls_at_once_and_comes_back() {
    let trace = cliff().unwrap().trace;
    assert_eq!(trace.period(), Duration::from_secs(30));
    for cycle in 0..3 {
        let at = |s: f64| secs(30.0 * cycle as f64 + s);
        assert!((rate(&trace, at(0.0), at(20.0)) - 10e6).abs() <= 600.0);
        assert!((rate(&trace, at(20.0), at(30.0)) - 100e3).abs() <= 1200.0);
        // At once: the second before the cliff is high, the second after it low.
        assert!(rate(&trace, at(19.0), at(20.0)) > 9.9e6);
        assert!(rate(&trace, at(20.0), at(21.0)) <= 112e3);
        assert!(rate(&trace, at(30.0), at(31.0)) > 9.9e6);
    }
    let mean = trace.mean_rate_bps(1500);
    let expected = (10e6 * 20.0 + 100e3 * 10.0) / 30.0;
    assert!((mean - expected).abs() < 500.0, "{mean}");
}

#[test]
fn vidaptive_fig1_alternates_2_mbps_and_500_kbps_every_40_s() {
    let trace = vidaptive_fig1().unwrap().trace;
    assert_eq!(trace.period(), Duration::from_secs(80));
    for cycle in 0..2 {
        let at = |s: f64| secs(80.0 * cycle as f64 + s);
        assert!((rate(&trace, at(0.0), at(40.0)) - 2e6).abs() <= 600.0);
        assert!((rate(&trace, at(40.0), at(80.0)) - 500e3).abs() <= 600.0);
        assert!(rate(&trace, at(40.0), at(41.0)) <= 512e3);
    }
}

#[test]
fn same_seed_same_trace() {
    let millis = |c: LinkConfig| c.trace.millis().to_vec();
    assert_eq!(millis(fade(4).unwrap()), millis(fade(4).unwrap()));
    assert_ne!(millis(fade(4).unwrap()), millis(fade(5).unwrap()));
    assert_eq!(millis(three_g(4).unwrap()), millis(three_g(4).unwrap()));
    assert_ne!(millis(three_g(4).unwrap()), millis(three_g(5).unwrap()));
    assert_eq!(millis(cliff().unwrap()), millis(cliff().unwrap()));
    assert_eq!(ack_stall_outages(4), ack_stall_outages(4));
    assert_ne!(ack_stall_outages(4), ack_stall_outages(5));
}

#[test]
fn ack_stall_schedule_matches_its_doc() {
    let outages = ack_stall_outages(3);
    let mut end = Duration::ZERO;
    for o in &outages {
        let gap = o.start - end;
        assert!(gap >= secs(10.0) && gap <= secs(20.0), "{o:?}");
        assert!(o.duration >= secs(2.0) && o.duration <= secs(5.0), "{o:?}");
        end = o.start + o.duration;
    }
    assert!(end <= ACK_STALL_HORIZON && end + secs(25.0) > ACK_STALL_HORIZON);
    assert!(outages.len() > 3600 / 25 && outages.len() < 3600 / 12);
}

#[test]
fn ack_stall_stalls_only_the_ack_direction() {
    let (video, ack) = ack_stall(3).unwrap();
    assert!(video.loss.is_empty());
    assert_eq!(ack.loss, vec![LossModel::Outages(ack_stall_outages(3))]);
    for c in [&video, &ack] {
        assert!((c.trace.mean_rate_bps(1500) - 2e6).abs() < 1e-6);
    }
    // Offer both links a 100-byte packet every 10 ms for 60 s.
    let run = |c: &LinkConfig| {
        let mut link = Link::new(c.clone(), Instant::ZERO).unwrap();
        (0..6000u64)
            .map(|i| {
                let t = Instant::from_millis(10 * i);
                link.handle_packet(t, i, 100).unwrap() != Admission::Queued
            })
            .collect::<Vec<bool>>()
    };
    assert!(
        run(&video).iter().all(|lost| !lost),
        "video path lost a packet"
    );
    let lost = run(&ack);
    let outages = ack_stall_outages(3);
    for (i, &l) in lost.iter().enumerate() {
        let t = Duration::from_millis(10 * i as u64);
        let inside = outages
            .iter()
            .any(|o| o.start <= t && t < o.start + o.duration);
        assert_eq!(l, inside, "ack at {t:?}");
    }
    let stalled = lost.iter().filter(|&&l| l).count();
    assert!(stalled >= 2 * 200, "{stalled} ACKs lost in 60 s");
}

/// Each preset built to show an event names it inside the link's first cycle, where its
/// own schedule puts it; steady and random links have none.
#[test]
fn presets_name_their_first_event() {
    let at = Duration::from_secs(10);
    let dropout = first_event("dropout", 1, at).unwrap();
    assert_eq!((dropout.start, dropout.end), (at, Duration::from_secs(11)));
    let cliff = first_event("cliff", 1, at).unwrap();
    assert_eq!(cliff.start, CLIFF_HIGH_TIME);
    let fade = first_event("fade", 4, at).unwrap();
    assert_eq!(fade.start, fade_schedule(4)[0].start);
    assert!(fade.end > fade.start);
    let stall = first_event("ack-stall", 3, at).unwrap();
    assert_eq!(stall.start, ack_stall_outages(3)[0].start);
    let ramp = first_event("ramp", 1, at).unwrap();
    assert!(ramp.start < ramp.end && ramp.end <= Duration::from_secs(20));
    for steady in [
        "cellular",
        "wifi",
        "3g",
        "intermittent",
        "constant:500",
        "none",
    ] {
        assert_eq!(first_event(steady, 1, at), None, "{steady}");
    }
}
