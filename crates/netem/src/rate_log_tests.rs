use super::*;

fn log(text: &str) -> RateLog {
    RateLog::parse(text, RateLogFormat::default()).unwrap()
}

fn err(text: &str) -> String {
    RateLog::parse(text, RateLogFormat::default())
        .and_then(|l| l.to_trace().map(|_| l))
        .unwrap_err()
        .to_string()
}

/// Opportunities of `t` in the window `(from_ms, to_ms]`.
fn between(t: &Trace, from_ms: u64, to_ms: u64) -> usize {
    t.millis()
        .iter()
        .filter(|&&ms| ms > from_ms && ms <= to_ms)
        .count()
}

/// The corpus's own shape: interval ends in seconds, Mb/s, a slice starting at 600.2 s.
/// Rebased, the first interval starts at zero and the interval is inferred.
#[test]
fn a_slice_is_rebased_and_its_interval_inferred() {
    let l = log("600.2 1.2\n600.4 2.4\n600.6 0\n600.8 12\n");
    assert_eq!(l.interval(), Duration::from_millis(200));
    assert_eq!(l.duration(), Duration::from_millis(800));
    assert_eq!(l.outage_time(), Duration::ZERO);
    let first = l.intervals()[0];
    assert!(first.start_us.abs() < 1e-6 && (first.end_us - 200_000.0).abs() < 1e-6);
    assert_eq!(first.bps, 1.2e6);
    // 1.2 Mb/s for 0.2 s is 240 kbit: 20 packets; 2.4 Mb/s: 40; 0: none; 12 Mb/s: 200.
    let t = l.to_trace().unwrap();
    assert_eq!(between(&t, 0, 200), 20);
    assert_eq!(between(&t, 200, 400), 40);
    assert_eq!(between(&t, 400, 600), 0);
    assert_eq!(between(&t, 600, 800), 200);
    assert_eq!(t.period(), Duration::from_millis(800));
    // 12 Mb/s is one packet a millisecond, at its end.
    assert_eq!(&t.millis()[60..63], &[601, 602, 603]);
}

/// A gap of five intervals is four missing ones: an outage, nothing delivered in it.
#[test]
fn missing_intervals_are_an_outage() {
    let l = log("0.2 6\n0.4 6\n1.4 6\n1.6 6\n");
    assert_eq!(l.interval(), Duration::from_millis(200));
    assert_eq!(l.outage_time(), Duration::from_millis(800));
    let t = l.to_trace().unwrap();
    assert_eq!(between(&t, 400, 1200), 0, "{:?}", t.millis());
    assert_eq!(between(&t, 1200, 1400), 100);
    assert_eq!(t.opportunities_per_period(), 400);
    // The outage halves the mean.
    assert!((l.mean_rate_bps() - 6e6 * 0.8 / 1.6).abs() < 1.0);
}

/// A recorder's jitter (gaps of 0.8 to 1.4 intervals) is no outage: each line covers its gap.
#[test]
fn jitter_is_not_an_outage() {
    let l = log("0.2 1\n0.415 1\n0.6 1\n0.86 1\n1.0 1\n1.2 1\n");
    assert_eq!(l.interval(), Duration::from_millis(200));
    assert_eq!(l.outage_time(), Duration::ZERO);
    assert_eq!(l.duration(), Duration::from_millis(1200));
}

/// Fractions of a packet carry over: 0.9 Mb/s for 0.2 s is 15 packets, 100 ms of it 7.5.
#[test]
fn fractional_packets_carry_over_and_the_period_is_the_logs_length() {
    let l = log("0.1 0.9\n0.2 0.9\n0.3 0.9\n");
    let t = l.to_trace().unwrap();
    // 270 kbit: 22 whole packets, then one more at the end so the period is 300 ms.
    assert_eq!(t.opportunities_per_period(), 23);
    assert_eq!(t.period(), Duration::from_millis(300));
    assert_eq!(between(&t, 0, 100), 7);
    assert_eq!(between(&t, 100, 200), 8);
    // The trace's mean is the log's, up to the extra packet.
    let extra = OPPORTUNITY_BITS / 0.3;
    assert!((t.mean_rate_bps(TRACE_PACKET_BYTES) - l.mean_rate_bps()).abs() <= extra);
}

/// A header states the units; the spec's options override it; bytes are refused.
#[test]
fn units_from_the_header_or_the_options() {
    let l = log("# from a phone\ntime_ms,throughput_kbps\n1000,500\n2000,1500\n");
    assert_eq!(l.interval(), Duration::from_secs(1));
    assert_eq!(l.intervals()[1].bps, 1.5e6);
    assert_eq!(l.duration(), Duration::from_secs(2));
    let spec = RateLogSpec::from_setting("rate:x.csv?unit=mbps&time=s&interval=500ms")
        .unwrap()
        .unwrap();
    assert_eq!(spec.path, PathBuf::from("x.csv"));
    let stated = RateLog::parse("time_ms kbps\n1 2\n2 2\n", spec.format).unwrap();
    assert_eq!(stated.interval(), Duration::from_millis(500));
    assert_eq!(stated.intervals()[0].bps, 2e6);
    // Times in seconds: 1 s apart, so the second line has a 0.5 s outage before it.
    assert_eq!(stated.outage_time(), Duration::from_millis(500));
    assert!(err("time MBps\n1 2\n").contains("line 1: 'MBps': a rate in bytes"));
    assert!(RateLogSpec::from_setting("Verizon-LTE-short").is_none());
}

#[test]
fn bad_specs_are_named() {
    for (setting, want) in [
        ("rate:", "needs a file"),
        ("rate:f?unit=furlongs", "unit=furlongs"),
        ("rate:f?unit=mbpsx", "unit=mbpsx"),
        ("rate:f?time=h", "time=h"),
        ("rate:f?interval=0", "interval=0"),
        ("rate:f?interval=-1s", "interval=-1s"),
        ("rate:f?interval=nans", "interval=nans"),
        ("rate:f?speed=1", "unknown option 'speed'"),
        ("rate:f?unit", "not KEY=VALUE"),
    ] {
        let got = RateLogSpec::from_setting(setting).unwrap().unwrap_err();
        assert!(got.contains(want), "{setting}: {got}");
    }
}

#[test]
fn bad_lines_are_named() {
    let cases: &[(&str, &str)] = &[
        ("0.2 1\n0.4\n", "line 2: not TIME RATE"),
        ("0.2 1\n0.4 1 7\n", "line 2: not TIME RATE"),
        ("0.2 1\n\n0.4 x\n", "line 3: the rate is not a number"),
        ("0.2 1\nx 5\n", "line 2: the time is not a number"),
        ("x 5\n", "line 1: the time is not a number"),
        ("0.2 -1\n0.4 1\n", "line 1: the rate is not a number from 0"),
        ("0.2 inf\n0.4 1\n", "line 1: the rate is not"),
        ("0.2 NaN\n0.4 1\n", "line 1: the rate is not"),
        ("0.2 1e9\n0.4 1\n", "line 1: the rate is not"),
        ("-0.2 1\n0.4 1\n", "line 1: the time is not"),
        (
            "0.4 1\n0.2 1\n",
            "line 2: time 0.2 is not after the previous one (0.4)",
        ),
        ("0.4 1\n0.4 1\n", "line 2: time 0.4 is not after"),
        ("time Mbps\n", "no samples"),
        ("# nothing\n\n", "no samples"),
        ("0.2 1\n", "one sample"),
        ("0.2 0\n0.4 0\n", "delivers nothing"),
        ("0.2 1\n0.4 1\n9000000 1\n", "line 3: "),
    ];
    for (text, want) in cases {
        let got = err(text);
        assert!(got.contains(want), "{text:?}: got {got:?}, want {want:?}");
    }
    let endless = io::BufReader::new(io::repeat(b'7'));
    assert!(matches!(
        RateLog::from_reader(endless, RateLogFormat::default()),
        Err(RateLogError::LineTooLong { line: 1 })
    ));
    let bytes = RateLog::from_reader(&b"0.2 1\n\xff\xfe 1\n"[..], RateLogFormat::default());
    assert!(bytes.unwrap_err().to_string().starts_with("line 2:"));
}

/// Every log of the shared development corpus reads, at most 300 s at 200 ms, and its trace
/// carries the log's mean rate (skipped where the corpus is not present).
#[test]
fn the_shared_corpus_reads_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/corpus-dev");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut seen = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rate") {
            continue;
        }
        let l = RateLog::from_path(&path, RateLogFormat::default()).unwrap();
        let ms = l.interval().as_millis();
        assert!((195..=220).contains(&ms), "{}: {ms} ms", path.display());
        let secs = l.duration().as_secs_f64();
        assert!(
            (100.0..=301.0).contains(&secs),
            "{}: {secs} s",
            path.display()
        );
        let t = l.to_trace().unwrap();
        let (log_bps, trace_bps) = (l.mean_rate_bps(), t.mean_rate_bps(TRACE_PACKET_BYTES));
        assert!(
            (log_bps - trace_bps).abs() <= 2.0 * OPPORTUNITY_BITS / secs,
            "{}: {log_bps} vs {trace_bps}",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 40, "{seen} logs in {}", dir.display());
}

proptest::proptest! {
    /// Any text is a log or an error, never a panic; an error about a line names one that
    /// exists; an accepted log gives a valid trace or an error.
    #[test]
    fn any_text_parses_or_fails_cleanly(text in "([0-9]{0,3}(\\.[0-9]{1,3})?[ ,\t]{0,2}(-|e|inf)?[0-9.]{0,4}\n|# c\n|time kbps\n|\n){0,20}") {
        let lines = text.lines().count().max(1);
        match RateLog::parse(&text, RateLogFormat::default()) {
            Ok(l) => {
                proptest::prop_assert!(l.intervals().windows(2).all(|w| w[0].end_us <= w[1].start_us + 1e-6));
                if let Ok(t) = l.to_trace() {
                    proptest::prop_assert!(t.millis().windows(2).all(|w| w[0] <= w[1]));
                    proptest::prop_assert_eq!(t.period(), Duration::from_millis(
                        (l.duration().as_micros() as f64 / 1000.0).round() as u64));
                }
            }
            Err(e) => {
                let message = e.to_string();
                if let Some(rest) = message.strip_prefix("line ") {
                    let n: usize = rest.split(':').next().unwrap().parse().unwrap();
                    proptest::prop_assert!(n >= 1 && n <= lines, "{message} of {lines}");
                }
            }
        }
    }

    /// A well-formed log at any rates: the trace delivers its bits, to within one packet
    /// carried and the one added at the end.
    #[test]
    fn a_trace_delivers_the_logs_bits(rates in proptest::collection::vec(0.0f64..40.0, 2..30), start in 0u32..1000) {
        let text: String = rates
            .iter()
            .enumerate()
            .map(|(i, r)| format!("{:.1} {r}\n", f64::from(start) + 0.2 * (i + 1) as f64))
            .collect();
        let l = log(&text);
        let bits: f64 = rates.iter().map(|r| r * 1e6 * 0.2).sum();
        match l.to_trace() {
            Ok(t) => {
                let packets = t.opportunities_per_period() as f64;
                let whole = (bits / OPPORTUNITY_BITS).floor();
                proptest::prop_assert!(packets == whole || packets == whole + 1.0, "{packets} vs {whole}");
                proptest::prop_assert_eq!(t.period(), Duration::from_millis(200 * rates.len() as u64));
            }
            Err(e) => proptest::prop_assert!(bits < OPPORTUNITY_BITS, "{e}"),
        }
    }
}
