use super::*;

fn mbps(t: &Trace) -> f64 {
    t.mean_rate_bps(TRACE_PACKET_BYTES) / 1e6
}

/// Opportunities per whole second of one period.
fn per_second_counts(t: &Trace) -> Vec<u64> {
    let secs = t.period_ms().div_ceil(1000) as usize;
    let mut counts = vec![0u64; secs];
    for &ms in t.millis() {
        // An opportunity at exactly k s belongs to second k - 1 (it ends that second).
        let idx = (ms.saturating_sub(1) / 1000) as usize;
        counts[idx.min(secs - 1)] += 1;
    }
    counts
}

#[test]
fn constant_rate_has_the_shortest_exact_period() {
    let t = constant(Bitrate::kbps(500)).unwrap();
    assert_eq!(t.millis(), &[24]);
    let t = constant(Bitrate::mbps(12)).unwrap();
    assert_eq!(t.millis(), &[1]);
    let t = constant(Bitrate::mbps(24)).unwrap();
    assert_eq!(t.millis(), &[1, 1]);
    let t = constant(Bitrate::kbps(570)).unwrap();
    assert_eq!((t.period_ms(), t.opportunities_per_period()), (400, 19));
    for kbps in [100, 500, 570, 1000, 3333, 12_000, 50_000] {
        let t = constant(Bitrate::kbps(kbps)).unwrap();
        assert!(
            (mbps(&t) * 1000.0 - kbps as f64).abs() < 1e-6,
            "{kbps} kb/s"
        );
    }
}

#[test]
fn constant_rate_is_evenly_spaced() {
    let t = constant(Bitrate::kbps(570)).unwrap();
    let gaps: Vec<u64> = std::iter::once(t.millis()[0])
        .chain(t.millis().windows(2).map(|w| w[1] - w[0]))
        .collect();
    let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
    assert!(hi - lo <= 1, "gaps {gaps:?}");
}

#[test]
fn constant_rate_without_a_short_exact_period_is_close() {
    let t = constant(Bitrate::bps(1_234_567)).unwrap();
    assert_eq!(t.period_ms(), 60_000);
    let err = (mbps(&t) * 1e6 - 1_234_567.0).abs() / 1_234_567.0;
    assert!(
        err <= 0.5 / t.opportunities_per_period() as f64,
        "error {err}"
    );
}

#[test]
fn generators_reject_nonsense() {
    assert!(matches!(
        constant(Bitrate::bps(0)),
        Err(GeneratorError::ZeroRate)
    ));
    assert!(matches!(
        constant(Bitrate::bps(1_000_000_000_001)),
        Err(GeneratorError::TooManyOpportunities(_))
    ));
    assert!(matches!(
        poisson(Bitrate::kbps(570), Duration::ZERO, 1),
        Err(GeneratorError::PeriodTooShort)
    ));
    assert!(matches!(
        poisson(Bitrate::bps(1), Duration::from_secs(1), 1),
        Err(GeneratorError::NoOpportunities)
    ));
    assert!(matches!(
        from_rate_fn(Duration::from_secs(1), |_| 0.0),
        Err(GeneratorError::NoOpportunities)
    ));
    assert!(matches!(
        from_rate_fn(Duration::from_secs(1_000_000), |_| 1e6),
        Err(GeneratorError::InvalidParameter(_))
    ));
    let huge = RampParams {
        hold_high: Duration::MAX,
        ..RampParams::default()
    };
    assert!(ramp(&huge).is_err());
    let t = constant(Bitrate::mbps(1)).unwrap();
    assert!(with_gap(&t, Duration::MAX, Duration::MAX).is_err());
    assert!(matches!(
        from_rate_fn(Duration::from_secs(1), |_| f64::NAN),
        Err(GeneratorError::InvalidParameter(_))
    ));
}

#[test]
fn poisson_has_the_exact_mean_and_exponential_gaps() {
    let t = poisson(Bitrate::kbps(570), Duration::from_secs(600), 9).unwrap();
    assert_eq!(t.period(), Duration::from_secs(600));
    assert!((mbps(&t) - 0.57).abs() < 0.0005, "{} Mb/s", mbps(&t));
    // Exponential gaps have a coefficient of variation of 1 (a constant rate has 0).
    let gaps: Vec<f64> = t
        .millis()
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64)
        .collect();
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
    let cv = var.sqrt() / mean;
    assert!((0.93..1.07).contains(&cv), "cv {cv}");
    // Same seed, same trace; another seed, another trace.
    let again = poisson(Bitrate::kbps(570), Duration::from_secs(600), 9).unwrap();
    assert_eq!(t, again);
    let other = poisson(Bitrate::kbps(570), Duration::from_secs(600), 10).unwrap();
    assert_ne!(t, other);
}

#[test]
fn ramp_falls_to_zero_and_comes_back() {
    let p = RampParams::default();
    let t = ramp(&p).unwrap();
    assert_eq!(t.period(), Duration::from_secs(20));
    let counts = per_second_counts(&t);
    // 4 Mb/s is 333.3 opportunities per second while high.
    for (s, &c) in counts.iter().enumerate().take(5) {
        assert!((333..=334).contains(&c), "second {s}: {c}");
    }
    // Zero during the hold (11..13 s), and the ramps in between are monotone.
    assert_eq!(counts[11] + counts[12], 0, "{counts:?}");
    assert!(
        counts[5..=11].windows(2).all(|w| w[0] >= w[1]),
        "{counts:?}"
    );
    assert!(
        counts[13..20].windows(2).all(|w| w[0] <= w[1]),
        "{counts:?}"
    );
    assert!(counts[19] > 280, "{counts:?}");
    // Mean: 4 Mb/s x (5 + 3 + 0 + 3.5) s / 20 s = 2.3 Mb/s.
    assert!((mbps(&t) - 2.3).abs() < 0.01, "{} Mb/s", mbps(&t));
}

#[test]
fn cellular_trace_wanders_around_its_mean() {
    let p = CellularParams {
        period: Duration::from_secs(600),
        ..CellularParams::default()
    };
    let t = cellular(&p, 1).unwrap();
    assert_eq!(t, cellular(&p, 1).unwrap());
    assert_ne!(t, cellular(&p, 2).unwrap());
    let mean = mbps(&t);
    assert!((4.5..6.0).contains(&mean), "mean {mean} Mb/s");
    // It varies a lot from second to second: both near-outages and bursts occur.
    let per_s: Vec<f64> = per_second_counts(&t)
        .iter()
        .map(|&c| c as f64 * 12_000.0 / 1e6)
        .collect();
    let low = per_s.iter().filter(|&&r| r < 1.0).count();
    let high = per_s.iter().filter(|&&r| r > 10.0).count();
    assert!(
        low > 5 && high > 5,
        "{low} seconds below 1 Mb/s, {high} above 10"
    );
    assert!(
        per_s.iter().all(|&r| r <= 21.0),
        "above the 20 Mb/s ceiling"
    );
}

#[test]
fn a_gap_removes_capacity_only_inside_it() {
    let t = with_gap(
        &from_rate_fn(Duration::from_secs(3), |_| 12e6).unwrap(),
        Duration::from_secs(1),
        Duration::from_secs(1),
    )
    .unwrap();
    let counts = per_second_counts(&t);
    // Opportunities at 1..=999 ms, none at 1000..1999 ms, 2000..=3000 ms.
    assert_eq!(counts, [999, 1, 1000]);
    assert!(t.millis().iter().all(|ms| !(1000..2000).contains(ms)));
    assert!(with_gap(&t, Duration::from_secs(2), Duration::from_secs(2)).is_err());
}

#[test]
fn segments_hold_and_ramp_as_a_fluid() {
    let t = segments(&[
        RateSegment::hold(Duration::from_secs(2), Bitrate::mbps(12)),
        RateSegment::ramp(Duration::from_secs(2), Bitrate::mbps(12), Bitrate::ZERO),
        RateSegment::hold(Duration::from_secs(1), Bitrate::kbps(120)),
    ])
    .unwrap();
    assert_eq!(t.period(), Duration::from_secs(5));
    let counts = per_second_counts(&t);
    assert_eq!(counts[..2], [1000, 1000]);
    // The ramp: 12 -> 6 Mb/s then 6 -> 0, means 9 and 3 Mb/s (one opportunity of slack).
    assert!(
        counts[2].abs_diff(750) <= 1 && counts[3].abs_diff(250) <= 1,
        "{counts:?}"
    );
    assert!(counts[4].abs_diff(10) <= 1, "{counts:?}");
    assert!(segments(&[]).is_err());
}

#[test]
fn cellular_floor_reflects_the_walk() {
    let mut p = CellularParams {
        mean: Bitrate::kbps(300),
        min: Bitrate::kbps(200),
        max: Bitrate::kbps(400),
        period: Duration::from_secs(100),
        ..CellularParams::default()
    };
    let t = cellular(&p, 3).unwrap();
    // Ten-second windows stay near the 200-400 kb/s band (Poisson noise aside).
    let counts = per_second_counts(&t);
    for w in counts.chunks(10) {
        let kbps = w.iter().sum::<u64>() as f64 * 12.0 / 10.0;
        assert!((150.0..450.0).contains(&kbps), "{kbps} kb/s");
    }
    p.min = Bitrate::kbps(301);
    assert!(cellular(&p, 3).is_err());
}
