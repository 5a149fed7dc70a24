//! The crate's binary has every command for its scheme and its link model: `sim`, `eval`
//! (delay-aimd beside Salsify-2c and the WebRTC baseline over `stairs`) with `report`, and a
//! live `demo` over the link relay.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_custom-scheme"))
        .args(args)
        .output()
        .expect("the binary starts")
}

/// Its stdout and stderr, asserting it succeeded.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{args:?} failed: {text}");
    text
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("custom-scheme-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(path: PathBuf) -> serde_json::Value {
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn sim_runs_the_scheme_and_lists_it() {
    let dir = scratch("sim");
    let out = dir.join("run");
    let o = out.to_str().unwrap();
    let args = ["sim", "--scheme", "delay-aimd", "--link", "stairs"];
    ok(&[
        &args[..],
        &["--duration", "4", "--size", "160x96", "--out", o],
    ]
    .concat());
    let summary = json(out.join("summary.json"));
    assert_eq!(summary["scheme"], "delay-aimd");
    assert!(summary["frames_shown"].as_u64().unwrap() > 60, "{summary}");
    // Its table is read and checked like a built-in one's.
    let params = dir.join("p.toml");
    fs::write(&params, "[delay_aimd]\ndecrease = 1.5\n").unwrap();
    let bad = run(&[
        "sim",
        "--scheme",
        "delay-aimd",
        "--config",
        params.to_str().unwrap(),
        "--out",
        dir.join("bad").to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("decrease"));
    fs::remove_dir_all(&dir).unwrap();
}

/// Every command's `--link` help lists the added link model, with what it is, beside the
/// built-in presets (the help is built from the registry the binary handed over).
#[test]
fn the_link_help_lists_the_added_model() {
    for command in ["sim", "link", "demo"] {
        let help = ok(&[command, "--help"]);
        let line = help
            .lines()
            .find(|l| l.contains("Synthetic link when no trace is given"))
            .unwrap_or_else(|| panic!("{command} --help has no --link line:\n{help}"));
        assert!(
            line.contains("cellular (") && line.contains("stairs (example: 4 Mb/s"),
            "{command}: {line}"
        );
    }
}

const MATRIX: &str = r#"
[defaults]
size = "96x64"
fps = 30
duration_s = 3

[[group]]
name = "custom"
title = "delay-aimd beside Salsify-2c and GoogCC over stairs"
schemes = ["delay-aimd", "salsify-2c", "conventional"]
links = ["stairs"]
figures = ["quality-delay"]
"#;

#[test]
fn eval_runs_a_matrix_with_it_beside_salsify_and_googcc() {
    let dir = scratch("eval");
    let matrix = dir.join("m.toml");
    fs::write(&matrix, MATRIX).unwrap();
    let out = dir.join("out");
    let (m, o) = (matrix.to_str().unwrap(), out.to_str().unwrap());
    let said = ok(&["eval", "--matrix", m, "--out", o, "--jobs", "2", "--quiet"]);
    assert!(said.contains("3 runs in the matrix"), "{said}");
    // Each run's folder is named by its scheme first, and each showed its frames.
    let mut schemes: Vec<String> = fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| {
            let run = e.unwrap().path();
            let shown = json(run.join("summary.json"))["frames_shown"]
                .as_u64()
                .unwrap();
            assert!(shown > 30, "{}: {shown} frames shown", run.display());
            let name = run.file_name().unwrap().to_string_lossy().into_owned();
            name.split("__").next().unwrap().to_string()
        })
        .collect();
    schemes.sort();
    assert_eq!(schemes, ["conventional", "delay-aimd", "salsify-2c"]);
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("delay-aimd") && md.contains("3 of 3 runs finished"),
        "{md}"
    );
    // `report` reads the folder back with the same registry.
    let again = dir.join("report");
    ok(&["report", o, "--out", again.to_str().unwrap()]);
    assert!(fs::read_to_string(again.join("report.md"))
        .unwrap()
        .contains("delay-aimd"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_runs_it_live_over_the_relay() {
    let dir = scratch("demo");
    let out = dir.join("demo");
    let said = ok(&[
        "demo",
        "--scheme",
        "delay-aimd",
        "--link",
        "stairs",
        "--duration",
        "3",
        "--size",
        "160x96",
        "--audio",
        "none",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        said.contains("delay-aimd") && said.contains("stairs"),
        "{said}"
    );
    let ivf = fs::metadata(out.join("received.ivf")).expect("received.ivf");
    assert!(ivf.len() > 1000, "{said}");
    fs::remove_dir_all(&dir).unwrap();
}
