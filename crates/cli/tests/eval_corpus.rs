//! `salsify eval` on a corpus folder (issue 56): two short synthetic throughput logs made
//! here, each a link named by its file; the report's per-trace tables, the comparison
//! against the reference and its CDF figures; two shards merged give the same report.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_salsify"))
        .args(args)
        .output()
        .expect("salsify runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "salsify {args:?} failed:\n{stderr}");
    stderr
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("salsify-eval-corpus-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A log of `secs` seconds at 200 ms intervals, its times starting at `start` (a slice), at
/// `mbps`, with the intervals of `outage` (seconds from the start) missing.
fn rate_log(start: f64, secs: f64, mbps: f64, outage: (f64, f64)) -> String {
    let mut text = String::from("# made by the test\n");
    let mut t = 0.2;
    while t <= secs + 1e-9 {
        if !(t > outage.0 && t <= outage.1) {
            text += &format!("{:.1} {mbps}\n", start + t);
        }
        t += 0.2;
    }
    text
}

fn without_command(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("Command:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_corpus_folder_is_a_link_set_with_its_own_tables_and_cdfs() {
    let dir = scratch();
    let corpus = dir.join("corpus");
    fs::create_dir_all(&corpus).unwrap();
    fs::write(
        corpus.join("fast.rate"),
        rate_log(300.0, 3.0, 2.0, (1.0, 1.6)),
    )
    .unwrap();
    fs::write(
        corpus.join("slow.rate"),
        rate_log(0.0, 3.0, 0.6, (0.0, 0.0)),
    )
    .unwrap();
    fs::write(corpus.join("README.md"), "not a link\n").unwrap();
    let matrix = dir.join("m.toml");
    fs::write(
        &matrix,
        format!(
            "[defaults]\nsize = \"96x64\"\nfps = 30\nduration_s = 3\n\n\
             [[group]]\nname = \"corpus\"\nschemes = [\"salsify-2c\", \"conventional\"]\n\
             links = [\"corpus:{}\"]\n\n[group.corpus]\nreferences = [\"conventional\"]\n",
            corpus.display()
        ),
    )
    .unwrap();
    let m = matrix.to_str().unwrap();
    let full = dir.join("full");
    let said = ok(&[
        "eval",
        "--matrix",
        m,
        "--out",
        full.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(said.contains("4 runs in the matrix"), "{said}");
    let md = fs::read_to_string(full.join("report.md")).unwrap();
    // The per-trace tables: a row per log, named by its file, a column per scheme.
    assert!(md.contains("### The corpus, trace by trace"), "{md}");
    assert!(
        md.contains("| trace | capacity Mb/s | salsify-2c | conventional |"),
        "{md}"
    );
    // Four per-trace tables, a row per log with its capacity (the mean over the run): the
    // fast log's 2 Mb/s less its 0.6 s outage in 3 s, the slow log's 0.6 Mb/s.
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| fast | 1.60 |") || l.starts_with("| slow | 0.60 |"))
        .count();
    assert_eq!(rows, 8, "{md}");
    // The comparison: Salsify-2c against the reference over both traces, then the slow one.
    assert!(md.contains("### The corpus: each scheme against the reference"));
    assert!(md.contains("| conventional | salsify-2c | 2 |"), "{md}");
    assert!(md.contains("traces under 1.00 Mb/s"), "{md}");
    assert!(md.contains("| conventional | salsify-2c | 1 |"), "{md}");
    for what in ["mean-delay", "p95-delay", "ssim"] {
        let svg = full
            .join("figures")
            .join(format!("corpus-corpus-{what}-vs-conventional.svg"));
        let svg = fs::read_to_string(&svg).unwrap_or_else(|_| panic!("{}", svg.display()));
        assert!(svg.contains(">salsify-2c</text>"), "{what}");
    }
    assert!(!md.contains("NaN"));

    // Sharded: two folders, merged by the report, give the same report.
    let (s1, s2) = (dir.join("s1"), dir.join("s2"));
    for (shard, out) in [("1/2", &s1), ("2/2", &s2)] {
        let said = ok(&[
            "eval",
            "--matrix",
            m,
            "--out",
            out.to_str().unwrap(),
            "--shard",
            shard,
            "--quiet",
        ]);
        assert!(
            said.contains("2 to run") || said.contains("2 runs"),
            "{said}"
        );
    }
    let merged = dir.join("merged");
    ok(&[
        "report",
        s1.to_str().unwrap(),
        s2.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(
        without_command(&merged.join("report.md")),
        without_command(&full.join("report.md"))
    );
    fs::remove_dir_all(&dir).unwrap();
}
