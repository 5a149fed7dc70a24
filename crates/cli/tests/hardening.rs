//! Bad input end to end, as a hostile user would give it: every case is a clear error and a
//! failing exit (never a panic, never "success" after doing nothing), nothing is left behind,
//! and help says what the commands do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};

mod support;

use support::{finish, free_addr, run_in, SALSIFY};

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("hard", name)
}

/// Runs salsify in `dir`; it must fail with exit status `code` saying `says`, and no panic.
fn fails(dir: &Path, args: &[&str], code: i32, says: &str) -> String {
    let out = run_in(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(
        stderr.contains(says),
        "{args:?}: wanted '{says}' in: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

/// A Y4M file of `frames` synthetic 160x96 pictures at 30 fps.
fn write_y4m(path: &Path, frames: u64) {
    let file = std::fs::File::create(path).unwrap();
    let header = Y4mHeader::new(160, 96, Rational::new(30, 1));
    let mut w = Y4mWriter::new(std::io::BufWriter::new(file), header).unwrap();
    let mut source = SyntheticSource::new(160, 96, 30, 1).unwrap();
    for _ in 0..frames {
        w.write_frame(&source.next_frame().image).unwrap();
    }
    w.finish().unwrap();
}

/// Finding 1: sizes a sealed datagram cannot carry were a panic (exit 101).
#[test]
fn bench_secure_refuses_datagrams_too_large_to_seal() {
    let dir = temp_dir("bench-secure");
    for flag in [["--data-bytes", "65520"], ["--ack-bytes", "100000"]] {
        let args = ["bench", "secure", "--seconds", "0.02", flag[0], flag[1]];
        fails(&dir, &args, 1, "sealed datagram carries");
    }
}

/// Finding 2: keygen never leaves a private key others can read, never follows a link at
/// the key's name, leaves no orphan; recv refuses a private key others can read.
#[test]
fn keys_stay_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("keys");
    let mode = |name: &str| {
        std::fs::symlink_metadata(dir.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    std::fs::write(dir.join("wr.key"), "x").unwrap();
    std::fs::set_permissions(dir.join("wr.key"), PermissionsExt::from_mode(0o644)).unwrap();
    assert!(run_in(&dir, &["keygen", "-o", "wr", "--force"])
        .status
        .success());
    assert_eq!(mode("wr.key"), 0o600);
    std::fs::write(dir.join("victim.txt"), "precious").unwrap();
    std::os::unix::fs::symlink("victim.txt", dir.join("evil.key")).unwrap();
    assert!(run_in(&dir, &["keygen", "-o", "evil", "--force"])
        .status
        .success());
    assert_eq!(
        std::fs::read_to_string(dir.join("victim.txt")).unwrap(),
        "precious"
    );
    assert_eq!(mode("evil.key"), 0o600);
    std::fs::write(dir.join("c.pub"), "mine").unwrap();
    fails(&dir, &["keygen", "-o", "c"], 1, "exists");
    assert!(!dir.join("c.key").exists(), "an orphan private key");
    std::fs::set_permissions(dir.join("wr.key"), PermissionsExt::from_mode(0o644)).unwrap();
    let args = [
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--key",
        "wr.key",
        "--peer-key",
        "evil.pub",
    ];
    fails(&dir, &args, 1, "chmod 600");
    // A public key where the private one belongs names the file's own line format.
    std::fs::set_permissions(dir.join("wr.key"), PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::copy(dir.join("evil.pub"), dir.join("pub-as.key")).unwrap();
    std::fs::set_permissions(dir.join("pub-as.key"), PermissionsExt::from_mode(0o600)).unwrap();
    let args = [
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--key",
        "pub-as.key",
        "--peer-key",
        "wr.pub",
    ];
    fails(&dir, &args, 1, "'private-key = ...'");
}

/// Finding 3: the synthetic source is capped like the Y4M reader, in every command.
#[test]
fn huge_pictures_are_refused_before_anything_runs() {
    let dir = temp_dir("huge");
    let to = free_addr();
    let cases: [&[&str]; 5] = [
        &[
            "send",
            "--to",
            &to,
            "--duration",
            "2",
            "--size",
            "8000x8000",
        ],
        &["demo", "--size", "8000x8000"],
        &["codec-demo", "--size", "16000x16000"],
        &["sim", "--size", "8000x8000"],
        &["bench", "codec", "--size", "8000x8000"],
    ];
    for args in cases {
        fails(&dir, args, 2, "4096x4096");
    }
    for args in [
        &["codec-demo", "--size", "2x2"][..],
        &["sim", "--size", "8x8"],
        &["bench", "codec", "--size", "2x2"],
    ] {
        fails(&dir, args, 2, "at least 16x16");
    }
    let args = ["demo", "--barcoded", "--out", "bc", "--duration", "1"];
    fails(&dir, &args, 1, "--barcoded needs");
    assert!(!dir.join("bc").exists());
    for fps in ["0", "-1", "NaN", "inf", "100000"] {
        let fps = format!("--fps={fps}");
        let args = ["send", "--to", &to, &fps];
        fails(&dir, &args, 2, "frames per second");
    }
}

/// Finding 4: inputs with no picture are errors, nothing claims to have been written.
#[test]
fn inputs_without_a_picture_fail() {
    let dir = temp_dir("empty");
    write_y4m(&dir.join("whole.y4m"), 1);
    let whole = std::fs::read(dir.join("whole.y4m")).unwrap();
    std::fs::write(dir.join("truncated.y4m"), &whole[..whole.len() / 2]).unwrap();
    std::fs::write(dir.join("header-only.y4m"), b"YUV4MPEG2 W160 H96 F30:1\n").unwrap();
    std::fs::write(dir.join("garbage.ivf"), vec![0x5a; 5000]).unwrap();
    let to = free_addr();
    for input in ["truncated.y4m", "header-only.y4m"] {
        let args = ["demo", "--input", input, "--out", "out", "--duration", "1"];
        fails(&dir, &args, 1, input);
        assert!(!dir.join("out").exists(), "{input}: demo output left");
        fails(&dir, &["send", "--to", &to, "--input", input], 1, input);
        fails(&dir, &["codec-demo", "--input", input], 1, input);
    }
    for args in [
        &["send", "--to", &to, "--input", "garbage.ivf"][..],
        &["codec-demo", "--input", "garbage.ivf"][..],
    ] {
        let stderr = fails(&dir, args, 1, "garbage.ivf");
        assert!(
            !stderr.contains("NaN") && !stderr.contains("is empty"),
            "{stderr}"
        );
    }
    fails(&dir, &["send", "--to", &to, "--input", "."], 1, "folder");
}

/// Finding 5: output paths are created before the receiver listens, and one file named by
/// two outputs is refused.
#[test]
fn recv_outputs_are_checked_before_listening() {
    let dir = temp_dir("outputs");
    let listen = free_addr();
    let args = [
        "recv",
        "--listen",
        &listen,
        "--ivf",
        "/proc/nope.ivf",
        "--duration",
        "30",
    ];
    // Without a sender, only an up-front check ends it before its 30 s; it never listens.
    let stderr = fails(&dir, &args, 1, "/proc/nope.ivf");
    assert!(!stderr.contains("listening"), "{stderr}");
    let args = [
        "recv",
        "--listen",
        &listen,
        "-o",
        "same.out",
        "--ivf",
        "./same.out",
    ];
    fails(&dir, &args, 1, "both");
    assert!(!dir.join("same.out").exists());
    let args = [
        "codec-demo",
        "--frames",
        "2",
        "--ivf",
        "x.out",
        "--y4m",
        "x.out",
    ];
    fails(&dir, &args, 1, "both");
}

/// Finding 6: every picture of a file is sent, the last one included (120 of 120, not 119).
#[test]
fn every_picture_of_a_file_is_sent() {
    let dir = temp_dir("all-frames");
    let clip = dir.join("clip.y4m");
    write_y4m(&clip, 120);
    let recv_addr = free_addr();
    let recv = Command::new(SALSIFY)
        .args(["recv", "--listen", &recv_addr, "--duration", "20", "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let log = dir.join("send.csv");
    let send = Command::new(SALSIFY)
        .args(["send", "--to", &recv_addr, "-q", "--input"])
        .arg(&clip)
        .arg("--log")
        .arg(&log)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(send, "send");
    let _ = Command::new("kill")
        .args(["-TERM", &recv.id().to_string()])
        .status();
    let _ = recv.wait_with_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(": 120 pictures"), "{stderr}");
    // Columns: session, frame (empty for a picture not sent), picture, ...
    let text = std::fs::read_to_string(&log).unwrap();
    let sent: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| !r[1].is_empty())
        .map(|r| r[2].parse().unwrap())
        .collect();
    assert_eq!(sent.iter().max(), Some(&119), "the last picture: {stderr}");
}

/// Finding 8: errors say what is wrong, in the user's terms, and leave nothing behind.
#[test]
fn errors_are_clear_and_leave_nothing_behind() {
    let dir = temp_dir("errors");
    let (listen, to) = (free_addr(), free_addr());
    let link = |extra: &[&str]| {
        let mut args = vec!["link", "--listen", &listen, "--to", &to];
        args.extend_from_slice(extra);
        run_in(&dir, &args)
    };
    let out = link(&["--link", "constant:0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("whole number of kb/s"), "{stderr}");
    let out = link(&["--ack-link", "bogus"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--ack-link: unknown preset 'bogus'"),
        "{stderr}"
    );
    assert!(!stderr.contains("link.preset"), "{stderr}");

    let stderr = fails(
        &dir,
        &["eval", "--video", "missing.mp4", "--out", "ev"],
        1,
        "is not a file",
    );
    assert_eq!(stderr.matches("missing.mp4").count(), 1, "{stderr}");
    assert!(!dir.join("ev").exists());

    fails(
        &dir,
        &["barcode", "--frames", "0", "-o", "b.y4m"],
        2,
        "--frames 0",
    );
    assert!(!dir.join("b.y4m").exists());

    let out = run_in(
        &dir,
        &["eval", "--dry-run", "--out", "dry", "--max-duration", "1"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(!dir.join("dry").exists(), "--dry-run created its folder");

    let args = [
        "peer",
        "chromium",
        "--chromium",
        "/nonexistent/chromium",
        "--out",
        "pc",
    ];
    fails(&dir, &args, 1, "/nonexistent/chromium");
    assert!(!dir.join("pc").exists(), "peer output left");
    // A bit rate whose b/s overflow was a panic.
    let args = [
        "peer",
        "chromium",
        "--max-bitrate-kbps",
        "18446744073709551615",
        "--out",
        "pc",
    ];
    fails(&dir, &args, 1, "--max-bitrate-kbps");
    assert!(!dir.join("pc").exists(), "peer output left");
}

fn help(args: &[&str]) -> String {
    let out = Command::new(SALSIFY).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Finding 9: help says what bare `salsify` does, lists one set of link presets
/// everywhere, points at no source file, and every long-running command takes `-q`.
#[test]
fn help_is_complete_and_consistent() {
    let top = help(&["--help"]);
    assert!(
        top.contains("With no command") && top.contains("30 s"),
        "{top}"
    );
    let commands: [&[&str]; 17] = [
        &["demo"],
        &["rendezvous"],
        &["send"],
        &["keygen"],
        &["recv"],
        &["link"],
        &["codec-demo"],
        &["sim"],
        &["eval"],
        &["report"],
        &["barcode"],
        &["peer", "chromium"],
        &["peer", "score"],
        &["bench", "codec"],
        &["bench", "secure"],
        &["peer"],
        &["bench"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let text = help(&args);
        assert!(!text.contains("crates/"), "{command:?} points at sources");
        assert!(
            !text.contains("../shared"),
            "{command:?}: a developer's folder"
        );
        assert!(!text.contains("(default none) [default"), "{command:?}");
    }
    let presets = |command: &[&str]| {
        let mut args = command.to_vec();
        args.push("--help");
        let text = help(&args);
        let start = text.find("--link <").expect("a --link flag");
        let rest = &text[start..];
        let end = rest
            .find("or none (no emulation)")
            .expect("the preset list")
            + 22;
        rest[..end]
            .split_whitespace()
            .skip(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let link = presets(&["link"]);
    for command in [&["demo"][..], &["peer", "chromium"], &["sim"]] {
        assert_eq!(presets(command), link, "{command:?}");
    }
    // Every command takes -q (peer, barcode, bench, keygen and report did not).
    let quiet = commands
        .iter()
        .filter(|c| !matches!(c[..], ["peer"] | ["bench"]));
    for command in quiet {
        let mut args = command.to_vec();
        args.push("--help");
        assert!(help(&args).contains("-q, --quiet"), "{command:?}");
    }
}

/// Issue 55: each command's help is its own text. `audio-marks` was described by the peer
/// command's paragraph (in `--help` and its own help), and `peer --help` said "The peers".
#[test]
fn each_command_is_described_by_its_own_text() {
    let top = help(&["--help"]);
    let line = |name: &str| {
        top.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {top}"))
            .to_string()
    };
    let marks = line("audio-marks");
    assert!(
        marks.contains("audio barcode") && !marks.contains("Chromium"),
        "{marks}"
    );
    let peer = line("peer");
    assert!(peer.contains("Chromium"), "{peer}");
    // Each command's own help opens with its own paragraph.
    let first = |args: &[&str]| help(args).lines().next().unwrap_or_default().to_string();
    let marks = first(&["audio-marks", "--help"]);
    assert!(
        marks.starts_with("Read the audio barcode") && !marks.contains("Chromium"),
        "{marks}"
    );
    let peer = first(&["peer", "--help"]);
    assert!(peer.starts_with("Unmodified systems as peers"), "{peer}");
}

/// Beyond the findings: destinations that name no peer, outputs that are folders or in
/// missing folders, settings far out of range are errors before anything runs.
#[test]
fn out_of_range_settings_and_paths_are_refused_up_front() {
    let dir = temp_dir("beyond");
    let listen = free_addr();
    // Destinations that name no peer are bad usage (exit 2).
    fails(&dir, &["send", "--to", "127.0.0.1:0"], 2, "no destination");
    fails(&dir, &["send", "--to", "0.0.0.0:9000"], 2, "no destination");
    let args = ["link", "--listen", &listen, "--to", "127.0.0.1:0"];
    fails(&dir, &args, 2, "no destination");
    for flag in ["--log", "-o", "--ivf"] {
        let args = ["recv", "--listen", &listen, flag, "/tmp", "--duration", "5"];
        let stderr = fails(&dir, &args, 1, "is a folder");
        assert!(!stderr.contains("listening"), "{stderr}");
        let args = [
            "recv",
            "--listen",
            &listen,
            flag,
            "nope/x",
            "--duration",
            "5",
        ];
        fails(&dir, &args, 1, "does not exist");
    }
    let to = free_addr();
    for (flag, value, says) in [
        ("--delay-target-ms", "99999999999", "--delay-target-ms"),
        ("--pacing-min-gap-us", "99999999999", "--pacing-min-gap-us"),
        ("--log", "/tmp", "is a folder"),
    ] {
        fails(&dir, &["send", "--to", &to, flag, value], 1, says);
    }
    let args = ["sim", "--datagram-overhead", "4000000000", "--out", "sim"];
    fails(&dir, &args, 1, "datagram_overhead_bytes");
    assert!(!dir.join("sim").exists());
    fails(
        &dir,
        &["barcode", "-o", "/tmp", "--frames", "1"],
        1,
        "is a folder",
    );
    // Files that never end are refused, not read into memory.
    let args = ["send", "--to", &to, "--scheme-params", "/dev/zero"];
    fails(&dir, &args, 1, "longer than");
    fails(&dir, &["sim", "--config", "/dev/zero"], 1, "longer than");
    assert!(run_in(&dir, &["keygen", "-o", "k"]).status.success());
    let args = [
        "send",
        "--to",
        &to,
        "--key",
        "k.key",
        "--peer-key",
        "/dev/zero",
    ];
    fails(&dir, &args, 1, "longer than");
}

/// Beyond the findings: a Y4M file's own frame rate must be usable too (a file claiming a
/// million frames per second, or one frame in eleven days, is refused).
#[test]
fn files_with_absurd_frame_rates_are_refused() {
    let dir = temp_dir("rates");
    for (name, rate) in [("fast.y4m", "1000000:1"), ("slow.y4m", "1:1000000")] {
        let mut bytes = format!("YUV4MPEG2 W16 H16 F{rate} C420\n").into_bytes();
        for _ in 0..3 {
            bytes.extend_from_slice(b"FRAME\n");
            bytes.extend(std::iter::repeat_n(128u8, 16 * 16 * 3 / 2));
        }
        std::fs::write(dir.join(name), bytes).unwrap();
        fails(
            &dir,
            &["codec-demo", "--input", name],
            1,
            "frames per second",
        );
        fails(
            &dir,
            &["send", "--to", "127.0.0.1:9", "--input", name],
            1,
            name,
        );
    }
}

/// Beyond the findings: a relay that relayed nothing says so with its exit status, and one
/// that cannot take its port leaves no log folder.
#[test]
fn a_relay_that_relayed_nothing_fails() {
    let dir = temp_dir("relay");
    let (listen, to) = (free_addr(), free_addr());
    let args = [
        "link",
        "--listen",
        &listen,
        "--to",
        &to,
        "--duration",
        "0.3",
    ];
    fails(&dir, &args, 1, "nothing relayed");
    let busy = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let args = ["link", "--listen", &busy, "--to", &to, "--log-dir", "logs"];
    fails(&dir, &args, 1, "busy");
    assert!(!dir.join("logs").exists(), "log folder left");
}

/// Beyond the findings: a simulation that fails says why once and leaves no empty folder.
#[test]
fn a_failed_simulation_leaves_no_folder_and_says_why_once() {
    let dir = temp_dir("sim-fail");
    let mut bytes = b"YUV4MPEG2 W4 H4 F30:1 C420\n".to_vec();
    for _ in 0..3 {
        bytes.extend_from_slice(b"FRAME\n");
        bytes.extend(std::iter::repeat_n(128u8, 4 * 4 * 3 / 2));
    }
    std::fs::write(dir.join("tiny.y4m"), bytes).unwrap();
    let args = [
        "sim",
        "--video",
        "tiny.y4m",
        "--duration",
        "1",
        "--out",
        "so",
    ];
    let stderr = fails(&dir, &args, 1, "too small");
    assert_eq!(stderr.matches("too small").count(), 1, "{stderr}");
    assert!(!dir.join("so").exists(), "an empty output folder left");
}

/// Finding 6: the IVF the demo writes has the right frame rate and duration as ffprobe reads
/// them (its header said 1000 fps, and ffprobe gave 0.23 s for a 7.9 s file). Skipped
/// without ffprobe.
#[test]
fn ffprobe_reads_the_received_ivf_duration_right() {
    if Command::new("ffprobe").arg("-version").output().is_err() {
        eprintln!("ffprobe is not installed: skipped");
        return;
    }
    let dir = temp_dir("ffprobe");
    let args = [
        "demo",
        "--duration",
        "3",
        "--out",
        "d",
        "-q",
        "--size",
        "160x96",
        "--link",
        "none",
    ];
    assert!(run_in(&dir, &args).status.success());
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "format=duration:stream=r_frame_rate",
        ])
        .args(["-of", "default=noprint_wrappers=1"])
        .arg(dir.join("d/received.ivf"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("r_frame_rate=30/1"), "{text}");
    let seconds: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("duration="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no duration: {text}"));
    assert!((2.0..=3.2).contains(&seconds), "{seconds} s for a 3 s demo");
}

/// Beyond the findings: a demo that cannot open its window fails before making its folder.
#[test]
fn a_demo_without_a_display_fails_before_making_its_folder() {
    let dir = temp_dir("no-display");
    let out = Command::new(SALSIFY)
        .args(["demo", "--display", "--duration", "1", "--out", "dz"])
        .current_dir(&dir)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--display"), "{stderr}");
    assert!(
        !dir.join("dz").exists(),
        "folder made before the window failed"
    );
}

/// Beyond the findings: an encrypted sender whose receiver never answered the handshake
/// delivered nothing, and says so with its exit status.
#[test]
fn an_unanswered_encrypted_sender_fails() {
    let dir = temp_dir("unanswered");
    for name in ["a", "b"] {
        assert!(run_in(&dir, &["keygen", "-o", name]).status.success());
    }
    let nobody = free_addr();
    let args = [
        "send",
        "--to",
        &nobody,
        "--key",
        "a.key",
        "--peer-key",
        "b.pub",
        "--duration",
        "1",
        "-q",
    ];
    fails(&dir, &args, 1, "never answered the handshake");
}

/// Beyond the findings: seconds too large for a duration were a panic.
#[test]
fn huge_seconds_are_errors_not_panics() {
    let dir = temp_dir("seconds");
    let (listen, to) = (free_addr(), free_addr());
    let args = [
        "link",
        "--listen",
        &listen,
        "--to",
        &to,
        "--link",
        "dropout",
        "--dropout-at",
        "1e300",
    ];
    fails(&dir, &args, 1, "--dropout-at");
    std::fs::create_dir_all(dir.join("call")).unwrap();
    std::fs::write(
        dir.join("call/call.json"),
        r#"{"connected_us": 1, "ended_us": 2}"#,
    )
    .unwrap();
    fails(
        &dir,
        &["peer", "score", "call", "--warmup", "1e300"],
        1,
        "--warmup",
    );
    // A seed TOML cannot hold was a panic in eval, an error after the run in sim.
    let max = u64::MAX.to_string();
    fails(&dir, &["eval", "--dry-run", "--seeds", &max], 1, "seed");
    fails(&dir, &["sim", "--seed", &max, "--out", "s"], 1, "seed");
    assert!(!dir.join("s").exists());
}

/// Beyond the findings: a file cut short in the middle is an error when its pictures run
/// out, not a success.
#[test]
fn a_file_cut_short_mid_run_fails() {
    let dir = temp_dir("cut");
    write_y4m(&dir.join("whole.y4m"), 4);
    let whole = std::fs::read(dir.join("whole.y4m")).unwrap();
    std::fs::write(dir.join("cut.y4m"), &whole[..whole.len() - 1000]).unwrap();
    let to = free_addr();
    let args = ["send", "--to", &to, "--input", "cut.y4m", "-q"];
    fails(&dir, &args, 1, "failed after 3 pictures");
}

/// Issue 45, item 7: a flag's value that can never work is bad usage, exit 2 as `--help`
/// says (an unknown scheme or link name, a zero duration, a HOST:PORT without a port), with
/// the closest known name suggested; nothing is left behind.
#[test]
fn bad_flag_values_exit_2_with_a_suggestion() {
    let dir = temp_dir("usage");
    let (listen, to) = (free_addr(), free_addr());
    let args = ["sim", "--scheme", "salsfy-2c", "--out", "s"];
    let said = "--scheme: unknown scheme 'salsfy-2c' (did you mean 'salsify-2c'?)";
    fails(&dir, &args, 2, said);
    let args = ["sim", "--link", "celular", "--out", "s"];
    fails(
        &dir,
        &args,
        2,
        "unknown preset 'celular' (did you mean 'cellular'?)",
    );
    fails(
        &dir,
        &["sim", "--duration", "0", "--out", "s"],
        2,
        "--duration 0",
    );
    assert!(!dir.join("s").exists(), "sim output left");
    let args = ["eval", "--dry-run", "--max-duration", "0"];
    fails(&dir, &args, 2, "--max-duration 0");
    fails(&dir, &["eval", "--dry-run", "--jobs", "0"], 2, "--jobs");
    // Far from every name: the names are listed instead.
    let stderr = fails(&dir, &["sim", "--scheme", "zzzzzz"], 2, "one of salsify-2c");
    assert!(!stderr.contains("did you mean"), "{stderr}");

    fails(&dir, &["send", "--to", "127.0.0.1"], 2, "has no port");
    fails(
        &dir,
        &["send", "--to", "127.0.0.1:port"],
        2,
        "is not a port",
    );
    let args = ["send", "--to", &to, "--scheme", "conventinal"];
    fails(&dir, &args, 2, "(did you mean 'conventional'?)");
    let args = ["recv", "--listen", &listen, "--scheme", "salsify-2"];
    fails(&dir, &args, 2, "unknown scheme 'salsify-2' (did you mean");
    fails(&dir, &["recv", "--listen", "127.0.0.1"], 2, "has no port");
    let args = ["link", "--listen", &listen, "--to", &to, "--link", "wiif"];
    fails(
        &dir,
        &args,
        2,
        "--link: unknown preset 'wiif' (did you mean 'wifi'?)",
    );
    let args = [
        "link",
        "--listen",
        &listen,
        "--to",
        &to,
        "--ack-link",
        "bogus",
    ];
    fails(&dir, &args, 2, "--ack-link: unknown preset 'bogus'");
    // Exactly one of --to, --listen and --via, as before.
    let args = ["send", "--to", &to, "--listen", &listen];
    fails(&dir, &args, 2, "cannot be used with");
    // Failures at run time stay 1: a port another socket holds.
    let busy = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    fails(&dir, &["link", "--listen", &busy, "--to", &to], 1, "busy");
}

/// Issue 45, item 7: a misspelt field of an experiment file is reported at its own line,
/// once, without a doubled prefix.
#[test]
fn experiment_file_errors_name_their_line() {
    let dir = temp_dir("toml-line");
    std::fs::write(
        dir.join("typo.toml"),
        "scheme = \"salsify-2c\"\nduraton_s = 5\n",
    )
    .unwrap();
    let args = ["sim", "--config", "typo.toml", "--out", "s"];
    let stderr = fails(&dir, &args, 1, "line 2: unknown field `duraton_s`");
    assert!(stderr.contains("(did you mean 'duration_s'?)"), "{stderr}");
    assert!(!stderr.contains("line 1"), "{stderr}");
    assert_eq!(stderr.matches("typo.toml").count(), 1, "{stderr}");
    assert!(!stderr.contains("file: "), "{stderr}");
    std::fs::write(dir.join("link.toml"), "seed = 2\n\n[link]\ndely_ms = 5\n").unwrap();
    let args = ["sim", "--config", "link.toml", "--out", "s"];
    let stderr = fails(&dir, &args, 1, "line 4: unknown field `dely_ms`");
    assert!(stderr.contains("(did you mean 'delay_ms'?)"), "{stderr}");
    assert!(!dir.join("s").exists(), "sim output left");
    // A figure's name in a matrix file, with its one prefix.
    std::fs::write(
        dir.join("m.toml"),
        "[[group]]\nname = \"g\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\nfigures = [\"frontir\"]\n",
    )
    .unwrap();
    let args = ["eval", "--matrix", "m.toml", "--dry-run", "--out", "e"];
    let stderr = fails(&dir, &args, 1, "line 5");
    assert!(stderr.contains("(did you mean 'frontier'?)"), "{stderr}");
    assert_eq!(stderr.matches("matrix file").count(), 1, "{stderr}");
}

/// Issue 45, item 7: a public key given as the private one is named as such, before any
/// advice about the file's permissions.
#[test]
fn a_public_key_given_as_the_private_one_says_so_first() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("swapped-key");
    for name in ["recv", "send"] {
        assert!(run_in(&dir, &["keygen", "-o", name]).status.success());
    }
    // As a public key is kept: readable by others.
    std::fs::set_permissions(dir.join("recv.pub"), PermissionsExt::from_mode(0o644)).unwrap();
    let args = [
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--key",
        "recv.pub",
        "--peer-key",
        "send.pub",
    ];
    let stderr = fails(&dir, &args, 1, "it is a public key");
    assert!(stderr.contains("--key 'recv.pub'"), "{stderr}");
    assert!(!stderr.contains("chmod"), "{stderr}");
}
