//! The schemes' parameters as experiment files write them: durations in ms (written as a
//! decimal number), rates in kb/s, defaults documented on each type, unknown fields refused,
//! bad values refused naming the field.

use salsify_baselines::{
    Bitrate, ConfigError, ConventionalConfig, OracleConfig, ReceiverConfig, VidaptiveConfig,
};
use salsify_time::Duration;
use serde::{de::DeserializeOwned, Serialize};

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Default>() -> String {
    let text = toml::to_string(&T::default()).unwrap();
    let back: T = toml::from_str(&text).unwrap();
    assert_eq!(back, T::default(), "{text}");
    // Every field is optional.
    assert_eq!(toml::from_str::<T>("").unwrap(), T::default());
    text
}

fn parse_error<T: DeserializeOwned + std::fmt::Debug>(text: &str) -> String {
    toml::from_str::<T>(text).unwrap_err().to_string()
}

#[test]
fn defaults_round_trip_in_experiment_units() {
    let vidaptive = round_trip::<VidaptiveConfig>();
    for line in [
        "pause_after_ms = 33.0",
        "max_rate_kbps = 12000",
        "dropframe_thresh = 0",
        "max_gap_frames = 2",
        "[copa]",
        "delta = 0.9",
        "[alpha]",
        "tau_ms = 33.0",
        "[ladder]",
        "enabled = true",
        "min_interval_ms = 1000.0",
    ] {
        assert!(vidaptive.contains(line), "{line} in\n{vidaptive}");
    }
    let oracle = round_trip::<OracleConfig>();
    assert_eq!(
        oracle.trim(),
        "rule = \"delay-first\"\nquality_slack_frames = 0.5\ndelay_target_ms = 100.0\nmax_halvings = 1"
    );
    // The source size only (the rule before the size choice) is not written out, so an
    // experiment that asks for it keeps its run id.
    let source_only: OracleConfig = toml::from_str("max_halvings = 0").unwrap();
    assert_eq!(source_only.max_halvings, 0);
    assert!(!toml::to_string(&source_only)
        .unwrap()
        .contains("max_halvings"));
    let lookahead: OracleConfig = toml::from_str("size_lookahead_ms = 500").unwrap();
    assert_eq!(lookahead.size_lookahead, Duration::from_millis(500));
    let field = |t: &str| {
        toml::from_str::<OracleConfig>(t)
            .unwrap()
            .validate()
            .map_err(|e| e.field())
    };
    assert_eq!(field("max_halvings = 2"), Err("max_halvings"));
    assert_eq!(field("size_lookahead_ms = 60000"), Err("size_lookahead_ms"));
    let target: OracleConfig = toml::from_str("rule = \"target\"").unwrap();
    assert_eq!(target.rule, salsify_baselines::OracleRule::Target);
    let bad = toml::from_str::<OracleConfig>("quality_slack_frames = -1").unwrap();
    assert!(bad.validate().is_err());
    let receiver = round_trip::<ReceiverConfig>();
    for line in [
        "feedback_interval_ms = 100.0",
        "nack_retry_ms = 100.0",
        "max_nack_retries = 10",
        "pli_interval_ms = 200.0",
    ] {
        assert!(receiver.contains(line), "{line} in\n{receiver}");
    }
}

#[test]
fn values_read_as_milliseconds_and_kbps_integer_or_decimal() {
    let c: ConventionalConfig = toml::from_str("max_kbps = 1800.5\nrtcp_interval_ms = 50").unwrap();
    assert_eq!(c.max, Some(Bitrate::bps(1_800_500)));
    assert_eq!(c.rtcp_interval, Duration::from_millis(50));
    let c2: ConventionalConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    assert_eq!(c2, c);
    let oracle: OracleConfig = toml::from_str("delay_target_ms = 80.25").unwrap();
    assert_eq!(oracle.delay_target, Duration::from_micros(80_250));
    let v: VidaptiveConfig =
        toml::from_str("[ladder]\nenabled = false\n[alpha]\ntau_ms = 16.7").unwrap();
    assert!(!v.ladder.enabled);
    assert_eq!(v.alpha.tau, Duration::from_micros(16_700));
    // 0 ms of feedback interval: one report per packet.
    let r: ReceiverConfig = toml::from_str("feedback_interval_ms = 0").unwrap();
    assert_eq!(r.feedback_interval, None);
    assert!(toml::to_string(&r)
        .unwrap()
        .contains("feedback_interval_ms = 0.0"));
    r.validate().unwrap();
}

#[test]
fn unknown_fields_are_refused() {
    let e = parse_error::<ConventionalConfig>("max_kpbs = 2000");
    assert!(e.contains("max_kpbs"), "{e}");
    let e = parse_error::<VidaptiveConfig>("[copa]\ndleta = 0.5");
    assert!(e.contains("dleta"), "{e}");
    let e = parse_error::<ReceiverConfig>("feedback_interval = 100");
    assert!(e.contains("feedback_interval"), "{e}");
    // The simulator sets the oracle's encode time from its cost model.
    let e = parse_error::<OracleConfig>("encode_time_ms = 5");
    assert!(e.contains("encode_time_ms"), "{e}");
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    // Not a duration or rate at all: the parser names the field.
    for (text, field) in [
        ("max_kbps = -5", "max_kbps"),
        ("rtcp_interval_ms = \"fast\"", "rtcp_interval_ms"),
    ] {
        let e = parse_error::<ConventionalConfig>(text);
        assert!(e.contains(field), "{text}: {e}");
    }
    let e = parse_error::<VidaptiveConfig>("pause_after_ms = -1.5");
    assert!(e.contains("pause_after_ms"), "{e}");
    let e = parse_error::<ReceiverConfig>("pli_interval_ms = nan");
    assert!(e.contains("pli_interval_ms"), "{e}");
    // Out of range: `validate` names the field.
    let field = |e: ConfigError| e.field();
    let conv = |t: &str| toml::from_str::<ConventionalConfig>(t).unwrap().validate();
    assert_eq!(conv("min_kbps = 3000").map_err(field), Err("start_kbps"));
    assert_eq!(conv("max_kbps = 100").map_err(field), Err("max_kbps"));
    assert_eq!(
        conv("pacing_factor = 0.5").map_err(field),
        Err("pacing_factor")
    );
    assert_eq!(
        conv("rtcp_interval_ms = 0").map_err(field),
        Err("rtcp_interval_ms")
    );
    assert_eq!(
        conv("dropframe_thresh = 101").map_err(field),
        Err("dropframe_thresh")
    );
    let vid = |t: &str| toml::from_str::<VidaptiveConfig>(t).unwrap().validate();
    assert_eq!(
        vid("padding_bytes = 5000").map_err(field),
        Err("padding_bytes")
    );
    assert_eq!(vid("[copa]\ndelta = 0").map_err(field), Err("copa.delta"));
    assert_eq!(
        vid("[alpha]\nlambda = 1.0").map_err(field),
        Err("alpha.lambda")
    );
    assert_eq!(
        vid("[alpha]\nwindow_ms = 0").map_err(field),
        Err("alpha.window_ms")
    );
    assert_eq!(
        vid("min_target_kbps = 20000").map_err(field),
        Err("min_target_kbps")
    );
    assert_eq!(
        vid("start_rate_kbps = 0").map_err(field),
        Err("start_rate_kbps")
    );
    let oracle = toml::from_str::<OracleConfig>("delay_target_ms = 0").unwrap();
    assert_eq!(oracle.validate().map_err(field), Err("delay_target_ms"));
    let receiver = toml::from_str::<ReceiverConfig>("nack_retry_ms = 0").unwrap();
    assert_eq!(receiver.validate().map_err(field), Err("nack_retry_ms"));
    let e = vid("padding_bytes = 5000").unwrap_err().to_string();
    assert!(e.starts_with("padding_bytes: "), "{e}");
}

#[test]
fn defaults_are_valid() {
    ConventionalConfig::default().validate().unwrap();
    VidaptiveConfig::default().validate().unwrap();
    OracleConfig::default().validate().unwrap();
    ReceiverConfig::default().validate().unwrap();
}

/// The conventional scheme's `[conventional]` table: libwebrtc's defaults in experiment
/// units, optional limits written as 0 (none), every field settable, bad values named.
#[test]
fn conventional_table_round_trips_with_libwebrtcs_defaults() {
    let text = round_trip::<ConventionalConfig>();
    for line in [
        "start_kbps = 300",
        "min_kbps = 30",
        "max_kbps = 0",
        "encoder_max_kbps = 0",
        "pacing_factor = 1.1",
        "max_pacing_delay_ms = 2000",
        "process_interval_ms = 25",
        "feedback_only = false",
        "rtcp_interval_ms = 1000",
        "congestion_window_ms = 350",
        "pushback_min_kbps = 30",
        "pushback_drop_frame = true",
        "alr_probing = false",
        "initial_frame_drop = true",
        "quality_scaler = true",
        "dropframe_thresh = 30",
        "max_gap_frames = 0",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    let c: ConventionalConfig =
        toml::from_str("encoder_max_kbps = 12000\ncongestion_window_ms = 0\nmax_kbps = 20000")
            .unwrap();
    assert_eq!(c.encoder_max, Some(Bitrate::kbps(12_000)));
    assert_eq!(c.max, Some(Bitrate::kbps(20_000)));
    assert_eq!(c.congestion_window, None);
    assert_eq!(c.encoder_max_for(1280, 720), Bitrate::kbps(12_000));
    assert!(parse_error::<ConventionalConfig>("pacing_factr = 1").contains("pacing_factr"));
    let e = toml::from_str::<ConventionalConfig>("pacing_factor = 0.5")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(e.field(), "pacing_factor");
}
