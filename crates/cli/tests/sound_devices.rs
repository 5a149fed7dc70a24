//! `--audio mic` (send, demo) and `--play` (recv, demo): in a build without the `sound`
//! feature, bad usage (exit 2) saying how to build with it; in one with it, either the device
//! is there or the command fails (exit 1) naming the missing device, never a panic. `--help`
//! explains both. Nothing here needs a sound card.

mod support;

use support::run_in;

use salsify_runtime::sound;

/// Each command with a device flag, run for a moment against nothing (a sender to a port
/// nobody serves, a receiver on a free port), with the device it needs.
fn device_commands(out: &std::path::Path) -> Vec<(Vec<String>, &'static str)> {
    let out = out.display().to_string();
    let to = support::free_addr();
    let listen = support::free_addr();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            args(&[
                "send",
                "--to",
                &to,
                "--audio",
                "mic",
                "--duration",
                "1",
                "-q",
            ]),
            "microphone",
        ),
        (
            args(&[
                "recv",
                "--listen",
                &listen,
                "--play",
                "--duration",
                "1",
                "-q",
            ]),
            "speakers",
        ),
        (
            args(&[
                "demo",
                "--audio",
                "mic",
                "--duration",
                "1",
                "-q",
                "--force",
                "--out",
                &out,
            ]),
            "microphone",
        ),
        (
            args(&[
                "demo",
                "--play",
                "--duration",
                "1",
                "-q",
                "--force",
                "--out",
                &out,
            ]),
            "speakers",
        ),
    ]
}

#[test]
fn device_flags_say_what_is_missing() {
    let dir = support::temp_dir("sound-devices", "flags");
    for (args, device) in device_commands(&dir.join("demo")) {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_in(&dir, &argv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{argv:?}: {stderr}");
        let code = out.status.code();
        if sound::SUPPORTED {
            let present = match device {
                "microphone" => sound::probe_microphone().is_ok(),
                _ => sound::probe_speakers().is_ok(),
            };
            if present {
                // The call runs (to nobody): whatever it ends with, not bad usage.
                assert_ne!(code, Some(2), "{argv:?}: {stderr}");
            } else {
                assert_eq!(code, Some(1), "{argv:?}: {stderr}");
                assert!(
                    stderr.contains(&format!("no usable {device}")),
                    "{argv:?}: {stderr}"
                );
            }
        } else {
            assert_eq!(code, Some(2), "{argv:?}: {stderr}");
            assert!(
                stderr.contains("without sound support") && stderr.contains("--features sound"),
                "{argv:?}: {stderr}"
            );
        }
    }
}

#[test]
fn play_without_audio_is_bad_usage() {
    let dir = support::temp_dir("sound-devices", "no-audio");
    let out = run_in(
        &dir,
        &["demo", "--audio", "none", "--play", "--duration", "1", "-q"],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_explains_both_flags() {
    let dir = support::temp_dir("sound-devices", "help");
    for (command, flags) in [
        ("send", &["--audio"][..]),
        ("recv", &["--play"][..]),
        ("demo", &["--audio", "--play"][..]),
    ] {
        let out = run_in(&dir, &[command, "--help"]);
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in flags {
            assert!(help.contains(flag), "{command} --help: {help}");
        }
        assert!(
            help.contains("--features sound"),
            "{command} --help tells how to build with sound: {help}"
        );
        if flags.contains(&"--audio") {
            assert!(help.contains("`mic`"), "{command} --help: {help}");
        }
    }
}
