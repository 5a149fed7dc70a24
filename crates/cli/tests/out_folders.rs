//! Output folders hold one run each (issue 45): a folder holding another command's or
//! another experiment's run is refused (exit 2) or emptied with `--force`, never mixed; the
//! same experiment and an earlier run in the default folder are replaced with a line that
//! says so; `eval` resumes; a failed start or an interrupted simulation leaves no folder.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{run_in, temp_dir, SALSIFY};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `salsify ARGS` in `dir`, which must exit with `code`; its standard error.
fn exits(dir: &Path, args: &[&str], code: i32) -> String {
    let out = run_in(dir, args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
    assert!(!text.contains("panicked"), "{args:?}: {text}");
    text
}

const SIM: [&str; 6] = ["sim", "--size", "160x96", "--duration", "1", "-q"];

fn sim_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    SIM.iter().copied().chain(extra.iter().copied()).collect()
}

fn demo_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let demo = ["demo", "--size", "160x96", "--duration", "1", "-q"];
    demo.iter().copied().chain(extra.iter().copied()).collect()
}

/// A sim's folder is refused to a demo (its files unchanged) until --force empties it; the
/// same simulation again replaces itself; another one is refused.
#[test]
fn a_folder_holds_one_run() {
    let dir = temp_dir("out", "one-run");
    exits(&dir, &sim_args(&["--out", "run"]), 0);
    let summary = std::fs::read(dir.join("run/summary.json")).unwrap();
    let err = exits(&dir, &demo_args(&["--out", "run"]), 2);
    assert!(
        err.contains("another command") && err.contains("a sim of") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.join("run/summary.json")).unwrap(),
        summary
    );
    assert!(
        !dir.join("run/received.ivf").exists(),
        "the demo wrote nothing"
    );

    // The same experiment again: replaced, and said.
    let again = exits(&dir, &sim_args(&["--out", "run"]), 0);
    assert!(
        again.contains("replacing the earlier run of the same experiment"),
        "{again}"
    );
    // Another experiment: refused.
    let err = exits(&dir, &sim_args(&["--out", "run", "--seed", "2"]), 2);
    assert!(err.contains("another experiment"), "{err}");

    // --force: the demo's files alone.
    let forced = exits(&dir, &demo_args(&["--out", "run", "--force"]), 0);
    assert!(forced.contains("replacing a sim of"), "{forced}");
    for gone in ["summary.json", "packets.log", "experiment.toml"] {
        assert!(
            !dir.join("run").join(gone).exists(),
            "{gone} left beside the demo"
        );
    }
    assert!(dir.join("run/received.ivf").is_file());
    let mark = std::fs::read_to_string(dir.join("run/salsify-run.json")).unwrap();
    assert!(
        mark.contains("\"demo\"") && mark.contains("\"seconds\""),
        "{mark}"
    );

    // Nor do eval and link write into it.
    let err = exits(&dir, &["eval", "--dry-run", "--out", "run"], 2);
    assert!(err.contains("a demo of"), "{err}");
    let (listen, to) = (support::free_addr(), support::free_addr());
    let link = ["link", "--listen", &listen, "--to", &to, "--log-dir", "run"];
    let err = exits(&dir, &link, 2);
    assert!(err.contains("would be mixed"), "{err}");

    // A folder of other files is never emptied.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/notes.txt"), "keep").unwrap();
    let err = exits(&dir, &sim_args(&["--out", "mine", "--force"]), 2);
    assert!(err.contains("not a salsify run"), "{err}");
    assert!(dir.join("mine/notes.txt").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The default folders: an earlier run of the same command is replaced, with a line.
#[test]
fn the_default_folder_is_replaced_with_a_line() {
    let dir = temp_dir("out", "default");
    exits(&dir, &sim_args(&[]), 0);
    let second = exits(&dir, &sim_args(&["--seed", "5"]), 0);
    assert!(
        second.contains("replacing a sim of") && second.contains("salsify-sim-out"),
        "{second}"
    );
    exits(&dir, &demo_args(&[]), 0);
    let second = exits(&dir, &demo_args(&["--scheme", "conventional"]), 0);
    assert!(
        second.contains("replacing a demo of") && second.contains("salsify-demo-out"),
        "{second}"
    );
    let mark = std::fs::read_to_string(dir.join("salsify-demo-out/salsify-run.json")).unwrap();
    assert!(mark.contains("conventional"), "{mark}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A demo whose dashboard cannot take its port leaves no output folder.
#[test]
fn a_failed_start_leaves_no_folder() {
    let dir = temp_dir("out", "busy");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().to_string();
    let err = exits(&dir, &demo_args(&["--out", "d", "--dashboard", &port]), 1);
    assert!(err.contains("cannot listen for the dashboard"), "{err}");
    assert!(!dir.join("d").exists(), "an empty output folder left");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A simulation stopped with Ctrl-C (SIGINT) leaves no folder.
#[test]
fn an_interrupted_simulation_leaves_no_folder() {
    interrupt_a_simulation("interrupted", false, Duration::from_millis(300));
}

/// The same with SIGINT ignored on entry, as a shell leaves it for a background job of a
/// script (`scripts/test &`, a CI runner's step): the sim's own handler still stops it, even
/// for a signal sent the moment it says it is under way.
#[test]
fn a_simulation_stops_on_sigint_even_if_it_started_ignoring_it() {
    interrupt_a_simulation("ignored-sigint", true, Duration::ZERO);
}

/// Starts a long sim (SIGINT ignored on entry if `ignore_sigint`), sends it SIGINT `after`
/// it said it is under way, and checks it stopped at once, with status 130 and no folder.
fn interrupt_a_simulation(name: &str, ignore_sigint: bool, after: Duration) {
    use std::os::unix::process::CommandExt;
    let dir = temp_dir("out", name);
    let mut command = Command::new(SALSIFY);
    command
        .args([
            "sim",
            "--size",
            "320x180",
            "--duration",
            "600",
            "-q",
            "--out",
            "s",
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if ignore_sigint {
        // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut sim = command.spawn().unwrap();
    // Under way once it says what it simulates.
    let mut err = sim.stderr.take().unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(&mut err, &mut first).unwrap();
    assert_eq!(&first, b"simulating");
    std::thread::sleep(after);
    let killed = Command::new("kill")
        .args(["-INT", &sim.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = sim.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = sim.kill();
            let _ = sim.wait();
            panic!("sim did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("nothing written"), "{rest}");
    assert!(
        !dir.join("s").exists(),
        "an interrupted simulation left its folder"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
