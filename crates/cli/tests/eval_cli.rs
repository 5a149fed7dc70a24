//! `salsify eval` and `salsify report` end to end on a tiny matrix: parallel runs, resume,
//! shards merged by the report, identical results from identical seeds, clear errors.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn salsify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_salsify"))
        .args(args)
        .output()
        .expect("salsify runs")
}

fn ok(args: &[&str]) -> String {
    let out = salsify(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "salsify {args:?} failed:\n{stderr}");
    stderr
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("salsify-eval-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

const MATRIX: &str = r#"
[defaults]
size = "96x64"
fps = 30
duration_s = 3

[[group]]
name = "tiny"
title = "Tiny"
schemes = ["salsify-2c", "conventional"]
links = ["constant:800", "dropout"]
figures = ["quality-delay", "time-series"]

[[group]]
name = "queue"
schemes = ["salsify-2c"]
links = ["constant:800"]
queue_packets = [16, 256]
figures = ["queue-size"]
"#;

fn summaries(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read_to_string(p.join("summary.json")).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn matrix_runs_resumes_shards_and_reports() {
    let dir = scratch("main");
    let matrix = dir.join("m.toml");
    fs::write(&matrix, MATRIX).unwrap();
    let m = matrix.to_str().unwrap();
    let full = dir.join("full");
    let f = full.to_str().unwrap();

    let first = ok(&["eval", "--matrix", m, "--out", f, "--jobs", "2", "--quiet"]);
    assert!(first.contains("5 runs in the matrix"), "{first}");
    let runs = summaries(&full);
    assert_eq!(runs.len(), 5);
    for file in ["report.html", "report.md", "plan.json", "matrix.toml"] {
        assert!(full.join(file).is_file(), "{file}");
    }
    let html = fs::read_to_string(full.join("report.html")).unwrap();
    assert!(html.contains("<svg"), "figures are inline");
    assert!(!html.contains("NaN"));
    let svgs = fs::read_dir(full.join("figures")).unwrap().count();
    assert_eq!(
        svgs,
        2 + 6 + 2,
        "2 links x (1 + 3) figures + 2 queue figures"
    );
    for run in fs::read_dir(full.join("runs")).unwrap() {
        let run = run.unwrap().path();
        for file in [
            "frames.csv",
            "timeseries.csv",
            "experiment.toml",
            "run.json",
        ] {
            assert!(run.join(file).is_file(), "{}/{file}", run.display());
        }
        assert!(!run.join("audio.csv").exists(), "a run without audio");
    }
    assert!(!html.contains("The call's audio"));

    // A second invocation finds everything done and redoes nothing.
    let again = ok(&["eval", "--matrix", m, "--out", f, "--quiet"]);
    assert!(again.contains("5 already finished, 0 to run"), "{again}");
    assert_eq!(summaries(&full), runs);

    // Two shards in their own folders, merged by the report, give the same numbers.
    let (s1, s2) = (dir.join("s1"), dir.join("s2"));
    for (shard, out) in [("1/2", &s1), ("2/2", &s2)] {
        ok(&[
            "eval",
            "--matrix",
            m,
            "--out",
            out.to_str().unwrap(),
            "--shard",
            shard,
            "--quiet",
        ]);
    }
    let mut merged = summaries(&s1);
    merged.extend(summaries(&s2));
    merged.sort();
    assert_eq!(merged, runs, "same seeds, same results, whatever the split");
    let report = dir.join("merged");
    ok(&[
        "report",
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    // The reports differ only in the command line they quote.
    let without_command = |path: PathBuf| -> String {
        let text = fs::read_to_string(path).unwrap();
        text.lines()
            .filter(|l| !l.starts_with("Command:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let merged_md = without_command(report.join("report.md"));
    assert!(merged_md.contains("5 of 5 runs finished"), "{merged_md}");
    assert_eq!(merged_md, without_command(full.join("report.md")));
    fs::remove_dir_all(&dir).unwrap();
}

/// A matrix whose experiments carry audio: each run writes its audio log and figures, and
/// the report draws each run's audio delay and A/V skew and tables its audio figures.
#[test]
fn runs_with_audio_are_drawn_and_tabled() {
    let dir = scratch("audio");
    let matrix = dir.join("m.toml");
    fs::write(
        &matrix,
        "[defaults]\nsize = \"96x64\"\nfps = 30\nduration_s = 4\naudio = \"synthetic\"\n\
         [[group]]\nname = \"voice\"\nschemes = [\"salsify-2c\"]\nlinks = [\"constant:800\"]\n",
    )
    .unwrap();
    let out = dir.join("out");
    ok(&[
        "eval",
        "--matrix",
        matrix.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let runs: Vec<PathBuf> = fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(runs.len(), 1);
    let audio = fs::read_to_string(runs[0].join("audio.csv")).unwrap();
    assert!(audio.lines().count() > 100, "4 s of 20 ms frames: {audio}");
    let summary = fs::read_to_string(runs[0].join("summary.json")).unwrap();
    assert!(summary.contains("audio_delay_p95_ms"), "{summary}");
    let mut figures: Vec<String> = fs::read_dir(out.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    figures.sort();
    assert_eq!(figures.len(), 2, "{figures:?}");
    assert!(figures[0].ends_with("-audio-delay.svg"), "{figures:?}");
    assert!(figures[1].ends_with("-av-skew.svg"), "{figures:?}");
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### The call's audio"), "{md}");
    assert!(
        md.contains("| constant:800 | salsify-2c | sim | synthetic | video |"),
        "{md}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = scratch("bad");
    let out = dir.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["eval", "--traces", "/no/such/dir", "--out", out],
            "/no/such/dir",
        ),
        (
            &["eval", "--matrix", "/no/such.toml", "--out", out],
            "/no/such.toml",
        ),
        (
            &["eval", "--shard", "3/2", "--out", out],
            "shards count from 1",
        ),
        (
            &["eval", "--video", "/no/clip.y4m", "--out", out],
            "/no/clip.y4m",
        ),
        (&["report", "/no/such/eval"], "no plan.json"),
    ];
    for (args, expected) in cases {
        let o = salsify(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn built_in_matrix_prints_and_plans() {
    let out = salsify(&["eval", "--print-matrix"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for group in [
        "cellular",
        "intermittent",
        "wifi",
        "ablation",
        "ramp",
        "dropout",
        "queue",
        "slow",
        "frontier",
    ] {
        assert!(text.contains(&format!("name = \"{group}\"")), "{group}");
    }
    let dir = scratch("dry");
    let listed = salsify(&["eval", "--dry-run", "--out", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        // 34 runs of experiments 1-7, 24 of the slow group (6 schemes x 4 presets) and 13 of
        // the frontier group (Salsify-2c at 4 targets x 2 budgets, the oracle at 4 slacks,
        // Sprout; its conventional run is experiment 1's).
        stdout.contains("71 runs in shard 1/1, 71 to run"),
        "{stdout}"
    );
    fs::remove_dir_all(&dir).unwrap();
}
