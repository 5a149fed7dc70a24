//! `salsify audio-marks`: the synthetic voice it writes reads back mark by mark, in order and
//! at the second each was put at; a file that is not there, or not audio, is a clear error.

use std::path::PathBuf;

mod support;

use support::run_in;

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("audio-marks", name)
}

#[test]
fn written_voice_reads_back_one_line_per_mark() {
    let dir = temp_dir("voice");
    let out = run_in(
        &dir,
        &["audio-marks", "--write", "voice.wav", "--seconds", "5"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_in(&dir, &["audio-marks", "voice.wav"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<(u32, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (n, t) = l.split_once(' ').expect("NUMBER SECONDS");
            (n.parse().unwrap(), t.parse().unwrap())
        })
        .collect();
    assert_eq!(
        lines.iter().map(|l| l.0).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    for (n, t) in lines {
        assert!((t - f64::from(n)).abs() < 0.003, "mark {n} at {t}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("5 marks read"));
}

#[test]
fn a_missing_or_foreign_file_is_a_clear_error() {
    let dir = temp_dir("bad");
    let out = run_in(&dir, &["audio-marks", "nothing.wav"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing.wav"));
    std::fs::write(dir.join("text.wav"), "not a wav file").unwrap();
    let out = run_in(&dir, &["audio-marks", "text.wav"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("text.wav") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// `--delay`: a receiver's WAV file holding the voice 140 ms after it was captured, its log
/// saying when its first sample played and when the voice started: each mark's delay is
/// read back as 140 ms, and `--out` writes the figures.
#[test]
fn delay_reads_each_marks_mouth_to_ear_delay_from_the_log_and_the_wav() {
    use salsify_audio::{AudioSource, SyntheticSpeech};
    let dir = temp_dir("delay");
    // The voice's sample 0 captured at 0 ms; the WAV's first sample played at 500 ms and
    // holding what was captured at 360 ms: frames of 20 ms, frame 18 first.
    let frames = 300u64;
    let mut voice = vec![0i16; (18 + frames as usize) * 960];
    SyntheticSpeech::new(0).fill(0, &mut voice);
    salsify_audio::write_wav(&dir.join("audio.wav"), &voice[18 * 960..]).unwrap();
    let mut log = format!("{}\n", salsify_audio::AUDIO_CSV_HEADER);
    for i in 0..frames {
        let f = 18 + i;
        log.push_str(&format!(
            "{:.3},{f},{:.3},140.000,packet\n",
            500.0 + 20.0 * i as f64,
            20.0 * f as f64
        ));
    }
    std::fs::write(dir.join("audio.csv"), log).unwrap();
    let out = run_in(
        &dir,
        &[
            "audio-marks",
            "audio.wav",
            "--delay",
            "audio.csv",
            "--out",
            "marks",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<(u32, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (n, d) = l.split_once(' ').expect("NUMBER DELAY_MS");
            (n.parse().unwrap(), d.parse().unwrap())
        })
        .collect();
    // Marks 1-6 are heard whole within the 6 s file (mark 0 was captured before it).
    assert_eq!(
        lines.iter().map(|l| l.0).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    for (n, d) in &lines {
        assert!((d - 140.0).abs() < 2.0, "mark {n}: {d} ms");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("marks/audio_marks.json")).unwrap())
            .unwrap();
    assert!((report["audio_delay_mean_ms"].as_f64().unwrap() - 140.0).abs() < 2.0);
    assert_eq!(report["audio_marks_heard"].as_u64(), Some(6));
    assert_eq!(report["audio_marks_expected"].as_u64(), Some(6));
    let csv = std::fs::read_to_string(dir.join("marks/audio_delay.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    // A log that is not an audio log is a clear error.
    std::fs::write(dir.join("bad.csv"), "a,b\n1,2\n").unwrap();
    let out = run_in(&dir, &["audio-marks", "audio.wav", "--delay", "bad.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not an audio log"), "{stderr}");
}
