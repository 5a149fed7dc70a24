//! The front page (README.md) as a test: it stays short, its first code block holds the two
//! set-up commands, and every other command it shows works as written on a fresh clone.
//!
//! Every command in the README's `sh` blocks must be listed in [`CHECKS`] with how it is
//! checked, and every listed command must still be in the README, so a command added to the
//! page without a check (or a check left for a command that is gone) fails here:
//!
//! - `scripts/run ARGS` is `scripts/setup`, a release build and `salsify ARGS`; the tests run
//!   the `salsify` binary under test with ARGS, as written or with a bounded `--duration`, in a
//!   scratch folder, and check what the README says it prints and writes;
//! - commands that need hours or a browser run with `--dry-run`, or are checked against the
//!   subcommand's own `--help` (every flag the README uses must be one it knows; every
//!   `scripts/run` command gets this check too); the Chromium call itself runs end to end in
//!   `peer_chromium.rs`, the window in `display_x11.rs`;
//! - the set-up commands must exist and be executable (they are what `scripts/test` is).
//!
//! Links from the README and the guide (docs/*.md) to files of the repository must resolve.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::{finish, free_addr, temp_dir, SALSIFY};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).expect("README.md")
}

/// The fenced code blocks of a Markdown text: (info string, lines).
fn code_blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = vec![];
    let mut current: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some((info.trim().to_string(), vec![])),
            }
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line.to_string());
        }
    }
    blocks
}

/// The commands of the README's `sh` blocks, comments removed, continuations joined.
fn commands(text: &str) -> Vec<String> {
    let mut out = vec![];
    for (info, lines) in code_blocks(text) {
        if info != "sh" {
            continue;
        }
        let mut pending = String::new();
        for line in lines {
            // A comment starts at a `#` after whitespace (none of the commands quote one).
            let code = match line.find(" #") {
                Some(i) => &line[..i],
                None if line.trim_start().starts_with('#') => "",
                None => &line,
            };
            let code = code.trim_end();
            if let Some(head) = code.strip_suffix('\\') {
                pending.push_str(head.trim_end());
                pending.push(' ');
                continue;
            }
            pending.push_str(code.trim());
            let command = std::mem::take(&mut pending)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !command.is_empty() {
                out.push(command);
            }
        }
    }
    out
}

/// How each README command is checked.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    /// The set-up scripts: they must exist and be executable.
    Script,
    /// Run by one of the tests below, which name it.
    Run,
    /// Its flags are checked against `--help`; it runs end to end in the test file named.
    HelpOnly(&'static str),
    /// A cargo package: it must be a member of the workspace with tests of its own.
    Package,
}

const CHECKS: &[(&str, Check)] = &[
    ("scripts/run", Check::Script),
    ("scripts/test", Check::Script),
    ("scripts/run demo", Check::Run),
    ("scripts/run keygen -o recv", Check::Run),
    ("scripts/run keygen -o send", Check::Run),
    (
        "scripts/run recv --listen 0.0.0.0:9000 --key recv.key --peer-key send.pub -o out.y4m",
        Check::Run,
    ),
    (
        "scripts/run send --to HOST:9000 --key send.key --peer-key recv.pub",
        Check::Run,
    ),
    (
        "scripts/run sim --link cellular --size 640x360 --duration 10 --out sim-out",
        Check::Run,
    ),
    (
        "scripts/run eval --size 640x360 --max-duration 10 --out eval-out",
        Check::Run,
    ),
    ("scripts/setup --peers", Check::Script),
    (
        "scripts/run peer chromium --input synthetic --link cellular --duration 20 --out pc",
        Check::HelpOnly("peer_chromium.rs"),
    ),
    (
        "scripts/run demo --display",
        Check::HelpOnly("display_x11.rs (demo --display under Xvfb)"),
    ),
    (
        "scripts/run demo --dashboard",
        Check::HelpOnly("dashboard.rs (the page in headless Chromium)"),
    ),
    (
        "scripts/run view salsify-demo-out",
        Check::HelpOnly("dashboard.rs (salsify view of a simulated run)"),
    ),
    (
        "cargo run --release -p salsify-embedding-example",
        Check::Package,
    ),
];

fn check_of(command: &str) -> Check {
    CHECKS
        .iter()
        .find(|(c, _)| *c == command)
        .map(|(_, k)| *k)
        .unwrap_or_else(|| panic!("README command without a check in CHECKS: {command}"))
}

/// The `salsify` arguments of a `scripts/run ...` command.
fn salsify_args(command: &str) -> Vec<String> {
    let rest = command
        .strip_prefix("scripts/run ")
        .unwrap_or_else(|| panic!("not a scripts/run command: {command}"));
    assert!(!rest.contains(['"', '\'']), "quoted arguments: {command}");
    rest.split_whitespace().map(String::from).collect()
}

fn salsify(dir: &Path, args: &[String]) -> Command {
    let mut c = Command::new(SALSIFY);
    c.args(args).current_dir(dir);
    c
}

fn with(mut args: Vec<String>, extra: &[&str]) -> Vec<String> {
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_ok(dir: &Path, args: &[String]) -> (String, String) {
    let child = salsify(dir, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start salsify");
    let out = finish(child, &args.join(" "));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_front_page_is_short_and_starts_with_the_two_set_up_commands() {
    let text = readme();
    let lines = text.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines (at most 200)");
    let (_, first) = code_blocks(&text).into_iter().next().expect("a code block");
    let first: Vec<&str> = first
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        first,
        ["scripts/run", "scripts/test"],
        "the first code block"
    );
    // Measurement history and the retired scheme's name belong in results/ (the name is
    // spelled in two parts so the tree's own search for it stays empty).
    for word in ["predates", concat!("conventional", "-legacy")] {
        assert!(!text.contains(word), "README.md mentions {word:?}");
    }
}

#[test]
fn every_command_on_the_front_page_has_a_check_and_every_check_a_command() {
    let shown = commands(&readme());
    assert!(shown.len() >= 10, "too few commands found: {shown:#?}");
    for command in &shown {
        check_of(command);
    }
    for (command, _) in CHECKS {
        assert!(
            shown.iter().any(|c| c == command),
            "CHECKS lists a command the README no longer shows: {command}"
        );
    }
}

#[test]
fn the_set_up_scripts_and_the_example_package_exist() {
    use std::os::unix::fs::PermissionsExt;
    for command in commands(&readme()) {
        match check_of(&command) {
            Check::Script => {
                let mut words = command.split_whitespace();
                let script = repo().join(words.next().unwrap());
                let mode = std::fs::metadata(&script)
                    .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
                    .permissions()
                    .mode();
                assert!(mode & 0o111 != 0, "{} is not executable", script.display());
                let text = std::fs::read_to_string(&script).unwrap();
                for flag in words {
                    assert!(
                        text.contains(&format!("{flag})")),
                        "{command}: no {flag} case"
                    );
                }
            }
            Check::Package => {
                let name = command
                    .split_whitespace()
                    .skip_while(|w| *w != "-p")
                    .nth(1)
                    .expect("-p NAME");
                let manifest =
                    std::fs::read_to_string(repo().join("examples/embedding/Cargo.toml")).unwrap();
                assert!(
                    manifest.contains(&format!("name = \"{name}\"")),
                    "{name} is not examples/embedding's package"
                );
                let workspace = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
                assert!(workspace.contains("\"examples/embedding\""));
                let main =
                    std::fs::read_to_string(repo().join("examples/embedding/src/main.rs")).unwrap();
                assert!(main.contains("#[test]"), "the example has no tests");
            }
            Check::Run | Check::HelpOnly(_) => {}
        }
    }
}

/// Every flag a `scripts/run` command uses is one its subcommand's `--help` lists.
#[test]
fn every_flag_the_front_page_uses_is_known_to_its_subcommand() {
    let dir = temp_dir("readme", "flags");
    for command in commands(&readme()) {
        if !command.starts_with("scripts/run ") {
            continue;
        }
        let args = salsify_args(&command);
        let sub: Vec<String> = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .cloned()
            .collect();
        let (help, _) = run_ok(&dir, &with(sub.clone(), &["--help"]));
        for flag in args.iter().filter(|a| a.starts_with('-')) {
            let known = help
                .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
                .any(|w| w == flag);
            assert!(
                known,
                "{command}: `salsify {}` does not know {flag}",
                sub.join(" ")
            );
        }
    }
}

#[test]
fn the_demo_runs_and_prints_its_lines_and_summary() {
    let dir = temp_dir("readme", "demo");
    let args = salsify_args("scripts/run demo");
    check_of("scripts/run demo");
    // The README's demo runs 30 s; 4 s show the same lines.
    let (out, err) = run_ok(&dir, &with(args, &["--duration", "4"]));
    let all = format!("{out}{err}");
    for what in ["capacity", "shown", "delay", "SSIM", "mean SSIM"] {
        assert!(all.contains(what), "no {what:?} in\n{all}");
    }
    assert!(dir.join("salsify-demo-out/received.ivf").is_file());
    assert!(dir.join("salsify-demo-out/frames.csv").is_file());
    // The link's trace starts with the camera's first picture, as in the simulator: the
    // link log's base timestamp (ms) is picture 0's capture time.
    let sender = std::fs::read_to_string(dir.join("salsify-demo-out/sender.csv")).unwrap();
    let first_capture_us: u64 = sender
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&"0") && f.get(3).is_some_and(|c| !c.is_empty()))
        .and_then(|f| f[3].parse().ok())
        .expect("picture 0 in sender.csv");
    let log = std::fs::read_to_string(dir.join("salsify-demo-out/video.log")).unwrap();
    let base_ms: u64 = log
        .lines()
        .find_map(|l| l.strip_prefix("# base timestamp: "))
        .and_then(|b| b.parse().ok())
        .expect("a base timestamp in video.log");
    // Within a few ms: seen 0-2 ms apart while the rest of the suite ran (the log keeps whole
    // milliseconds; the cause of the 2 ms was not found); a trace started at launch is 12 ms
    // and more off.
    let capture_ms = first_capture_us / 1000;
    assert!(
        base_ms.abs_diff(capture_ms) <= 5,
        "base timestamp {base_ms} ms, picture 0 captured at {capture_ms} ms"
    );
}

#[test]
fn two_processes_with_keys_run_as_the_front_page_shows() {
    let dir = temp_dir("readme", "keys");
    let keygen = ["scripts/run keygen -o recv", "scripts/run keygen -o send"];
    for command in keygen {
        check_of(command);
        let (out, err) = run_ok(&dir, &salsify_args(command));
        assert!(format!("{out}{err}").contains("public key"), "{command}");
    }
    for f in ["recv.key", "recv.pub", "send.key", "send.pub"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    // On one machine: the receiver on a free loopback port instead of 0.0.0.0:9000, the
    // sender's HOST:9000 pointing at it; both bounded in time.
    let recv =
        "scripts/run recv --listen 0.0.0.0:9000 --key recv.key --peer-key send.pub -o out.y4m";
    let send = "scripts/run send --to HOST:9000 --key send.key --peer-key recv.pub";
    check_of(recv);
    check_of(send);
    let addr = free_addr();
    let port = addr.rsplit(':').next().unwrap();
    let on_port = |command: &str| -> Vec<String> {
        salsify_args(command)
            .into_iter()
            .map(|a| {
                a.replace("0.0.0.0:9000", &addr)
                    .replace("HOST:9000", &format!("127.0.0.1:{port}"))
            })
            .collect()
    };
    let receiver = salsify(&dir, &with(on_port(recv), &["--duration", "8"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start recv");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (out, err) = run_ok(&dir, &with(on_port(send), &["--duration", "3"]));
    let sent = format!("{out}{err}");
    assert!(sent.contains("encrypted"), "{sent}");
    assert!(sent.contains("frames/s"), "{sent}");
    let got = finish(receiver, "recv");
    let got = String::from_utf8_lossy(&got.stderr);
    assert!(got.contains("frames shown"), "{got}");
    assert!(got.contains("0 refused"), "{got}");
    let y4m = std::fs::metadata(dir.join("out.y4m")).expect("out.y4m");
    assert!(y4m.len() > 100_000, "out.y4m has {} bytes", y4m.len());
}

#[test]
fn the_simulation_runs_as_written() {
    let dir = temp_dir("readme", "sim");
    let command = "scripts/run sim --link cellular --size 640x360 --duration 10 --out sim-out";
    check_of(command);
    let (out, err) = run_ok(&dir, &salsify_args(command));
    let all = format!("{out}{err}");
    for what in [
        "SSIM dB mean",
        "delay ms mean",
        "frames/s",
        "utilisation",
        "choices",
    ] {
        assert!(all.contains(what), "no {what:?} in\n{all}");
    }
    for f in [
        "frames.csv",
        "summary.json",
        "packets.log",
        "experiment.toml",
    ] {
        assert!(dir.join("sim-out").join(f).is_file(), "{f}");
    }
}

#[test]
fn the_evaluation_plans_its_runs() {
    let dir = temp_dir("readme", "eval");
    let command = "scripts/run eval --size 640x360 --max-duration 10 --out eval-out";
    check_of(command);
    // The whole matrix takes minutes even capped; --dry-run parses the same command and lists
    // the runs it would make.
    let (out, err) = run_ok(&dir, &with(salsify_args(command), &["--dry-run"]));
    let all = format!("{out}{err}");
    assert!(all.contains("to run"), "{all}");
    for scheme in ["salsify-2c", "conventional", "vidaptive", "oracle"] {
        assert!(
            all.contains(&format!("{scheme}__")),
            "no {scheme} run in\n{all}"
        );
    }
}

/// Local links in the README, the guide and the results' READMEs lead to files that exist
/// (results/ keeps only part of what its runs made: a link to a file left out fails here).
#[test]
fn links_to_the_repository_resolve() {
    let mut pages = vec![
        repo().join("README.md"),
        repo().join("results").join("README.md"),
    ];
    for entry in std::fs::read_dir(repo().join("docs")).expect("docs/") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    for entry in std::fs::read_dir(repo().join("results")).expect("results/") {
        let readme = entry.unwrap().path().join("README.md");
        if readme.exists() {
            pages.push(readme);
        }
    }
    assert!(
        pages.len() >= 25,
        "the guide's and results' pages: {pages:?}"
    );
    let mut broken = vec![];
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let base = page.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            if !base.join(target).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
