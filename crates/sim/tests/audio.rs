//! The call's audio in the simulator: real Opus packets in the data link's queue beside the
//! video's, played lip-synced to the pictures shown, measured from what was played; marks
//! read back from the played audio through a lossy link; a run without audio unchanged.

use std::path::{Path, PathBuf};

use salsify_sim::experiment::Experiment;
use salsify_sim::{simulate, SimOutput, SyntheticVideo};

fn shared_trace(prefix: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SALSIFY_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new("/work/shared/traces").to_path_buf());
    let path = dir.join(prefix);
    if path.with_extension("down").is_file() || dir.join(format!("{prefix}.down")).is_file() {
        Some(path)
    } else {
        println!("note: {} absent; test skipped", path.display());
        None
    }
}

fn experiment(audio: &str, sync: &str, seconds: f64) -> Experiment {
    Experiment {
        audio: audio.into(),
        sync: sync.into(),
        size: "320x180".into(),
        fps: 30,
        duration_s: seconds,
        ..Experiment::default()
    }
}

fn run(e: &Experiment, keep_samples: bool) -> SimOutput {
    let mut config = e.sim_config().unwrap();
    if let Some(a) = &mut config.audio {
        a.keep_samples = keep_samples;
    }
    let mut video = SyntheticVideo::new(320, 180, 30, e.seed).unwrap();
    simulate(&config, &mut video, &mut |_| {}).unwrap()
}

#[test]
fn lip_sync_keeps_the_audio_in_the_window_on_an_lte_trace() {
    let Some(trace) = shared_trace("Verizon-LTE-short") else {
        return;
    };
    let mut synced = experiment("synthetic", "video", 15.0);
    synced.link.trace = Some(trace);
    let out = run(&synced, false);
    let audio = out.summary.audio.expect("audio figures");
    println!("{}", serde_json::to_string_pretty(&out.summary).unwrap());
    assert!(audio.audio_frames_played > 700, "{audio:?}");
    assert!(
        audio.av_skew_in_window_fraction.unwrap() >= 0.9,
        "{audio:?}"
    );
    // Late packets concealed: under sync the audio trails the video by 100 ms at most, and
    // what comes later than that is concealed (15 s at 320x180 here; the 60 s figures on
    // both traces are in the report).
    assert!(audio.audio_concealed_fraction <= 0.04, "{audio:?}");
    // Held to the video's delay: never far below it.
    let video_mean = out.summary.delay_mean_ms.unwrap();
    assert!(
        audio.audio_delay_mean_ms + 45.0 >= video_mean * 0.8,
        "{audio:?} video {video_mean}"
    );

    let synced_window = audio.av_skew_in_window_fraction.unwrap();

    // Without sync the audio plays at its own least delay, not held to the pictures: the
    // window is kept less often. (Issue 46's bar, the audio's p95 below the video's, is
    // measured on 60 s runs and reported, not asserted here.)
    let mut free = synced.clone();
    free.sync = "none".into();
    let out = run(&free, false);
    let audio = out.summary.audio.expect("audio figures");
    println!(
        "sync none: {audio:?}, video p95 {:?}",
        out.summary.delay_p95_ms
    );
    assert!(
        audio.av_skew_in_window_fraction.unwrap() < synced_window,
        "{audio:?}"
    );
}

#[test]
fn the_marks_read_back_from_what_was_played_through_a_lossy_link() {
    let mut lossy = experiment("synthetic", "none", 12.0);
    lossy.link.preset = "constant:2000".into();
    lossy.link.loss = 0.05;
    let out = run(&lossy, true);
    let audio = out.audio.expect("audio");
    let marks = salsify_audio::read_marks(&audio.samples);
    let numbers: Vec<u32> = marks.iter().map(|m| m.number).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    assert!(numbers.len() >= 9, "{numbers:?} of 11 whole marks");
    let f = audio.figures;
    assert!(
        f.audio_concealed_fraction > 0.0 && f.audio_concealed_fraction < 0.06,
        "{f:?}"
    );
    assert!(f.audio_fec_fraction > 0.0, "FEC recovered some: {f:?}");
    // The video's receiver never saw an audio datagram.
    assert_eq!(out.receiver.bad_datagrams, 0);
}

#[test]
fn a_run_without_audio_writes_what_it_always_did() {
    let e = experiment("none", "video", 2.0);
    let text = toml::to_string(&e).unwrap();
    assert!(!text.contains("audio") && !text.contains("sync"), "{text}");
    let out = run(&e, false);
    assert!(out.audio.is_none());
    let json = serde_json::to_string(&out.summary).unwrap();
    assert!(!json.contains("audio") && !json.contains("skew"), "{json}");
    // Bad names are errors naming their field.
    let bad = experiment("speech.mp3", "video", 2.0)
        .sim_config()
        .unwrap_err();
    assert_eq!(bad.field, "audio");
    let bad = experiment("synthetic", "lips", 2.0)
        .sim_config()
        .unwrap_err();
    assert_eq!(bad.field, "sync");
}
