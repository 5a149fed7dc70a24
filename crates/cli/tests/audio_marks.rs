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
