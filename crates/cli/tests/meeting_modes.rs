//! Who dials whom, on loopback: a listening sender dialed by its receiver (encrypted and
//! plaintext), two peers meeting through `salsify rendezvous`, and the flags that choose
//! between them. The same calls across real NATs are in nat_paths.rs and nat_meet.rs.

mod support;

use std::path::Path;
use std::process::Output;

use support::{finish, free_addr, run_in, spawn, temp_dir};

/// Frames shown and sessions from the receiver's summary line.
fn summary(out: &Output) -> (u64, u64) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains(" frames shown, "))
        .unwrap_or_else(|| panic!("no summary line:\n{stderr}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

fn keygen(dir: &Path) {
    for name in ["send", "recv"] {
        assert!(run_in(dir, &["keygen", "-o", name]).status.success());
    }
}

fn key_args(dir: &str, side: &str) -> Vec<String> {
    let peer = if side == "send" { "recv" } else { "send" };
    vec![
        "--key".into(),
        format!("{dir}/{side}.key"),
        "--peer-key".into(),
        format!("{dir}/{peer}.pub"),
    ]
}

fn args<'a>(fixed: &[&'a str], more: &'a [String]) -> Vec<&'a str> {
    let mut v = fixed.to_vec();
    v.extend(more.iter().map(String::as_str));
    v
}

fn listening_sender_dialed_by_receiver(encrypted: bool) {
    let dir = temp_dir("modes", if encrypted { "keys" } else { "plain" });
    keygen(&dir);
    let d = dir.to_str().unwrap();
    let at = free_addr();
    let (sk, rk) = match encrypted {
        true => (key_args(d, "send"), key_args(d, "recv")),
        false => (vec![], vec![]),
    };
    let sender = spawn(&args(
        &["send", "--listen", &at, "--duration", "4", "-q"],
        &sk,
    ));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let receiver = spawn(&args(&["recv", "--to", &at, "--duration", "4"], &rk));
    let out = finish(receiver, "recv --to");
    finish(sender, "send --listen");
    let (shown, sessions) = summary(&out);
    assert!(shown >= 60, "{shown} frames shown");
    assert_eq!(sessions, 1);
}

#[test]
fn a_listening_sender_is_dialed_by_its_receiver() {
    listening_sender_dialed_by_receiver(true);
}

#[test]
fn a_listening_plaintext_sender_is_dialed_by_its_receiver() {
    listening_sender_dialed_by_receiver(false);
}

#[test]
fn peers_meet_through_a_rendezvous() {
    let dir = temp_dir("modes", "via");
    keygen(&dir);
    let d = dir.to_str().unwrap();
    let rdv = free_addr();
    let rendezvous = spawn(&["rendezvous", "--listen", &rdv, "--duration", "8"]);
    let (sk, rk) = (key_args(d, "send"), key_args(d, "recv"));
    let receiver = spawn(&args(&["recv", "--via", &rdv, "--duration", "5"], &rk));
    let sender = spawn(&args(&["send", "--via", &rdv, "--duration", "4"], &sk));
    let out = finish(receiver, "recv --via");
    let sent = finish(sender, "send --via");
    let (shown, sessions) = summary(&out);
    assert!(shown >= 60, "{shown} frames shown");
    assert_eq!(sessions, 1);
    for o in [&out, &sent] {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("met the peer at 127.0.0.1:"), "{stderr}");
        assert!(stderr.contains("(direct)"), "{stderr}");
    }
    let done = finish(rendezvous, "rendezvous");
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(said.contains("registrations, 0 refused"), "{said}");
}

#[test]
fn each_side_takes_exactly_one_way_to_meet() {
    let dir = temp_dir("modes", "flags");
    keygen(&dir);
    let exit = |args: &[&str]| {
        let out = run_in(&dir, args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _) = exit(&["send", "--to", "127.0.0.1:9", "--listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "two ways is a usage error");
    let (code, _) = exit(&["recv", "-q"]);
    assert_eq!(code, Some(2), "no way is a usage error");
    let (code, said) = exit(&["send", "--via", "127.0.0.1:9", "--duration", "1"]);
    assert_eq!(code, Some(1));
    assert!(said.contains("--via needs --key"), "{said}");
    let (code, said) = exit(&["recv", "--via", "127.0.0.1:9", "--duration", "1"]);
    assert_eq!(code, Some(1));
    assert!(said.contains("--via needs --key"), "{said}");
}

/// The rendezvous answers nothing that is not a well-formed, padded registration.
#[test]
fn a_rendezvous_answers_garbage_with_silence() {
    let rdv = free_addr();
    let rendezvous = spawn(&["rendezvous", "--listen", &rdv, "--duration", "3"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    for garbage in [&b""[..], &[0xD9, 1], &[0xD9; 600], &[0u8; 1200]] {
        socket.send_to(garbage, &rdv).unwrap();
    }
    let mut buf = [0u8; 2048];
    assert!(socket.recv_from(&mut buf).is_err(), "an answer to garbage");
    let done = finish(rendezvous, "rendezvous");
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(said.contains("0 registrations, 4 refused"), "{said}");
}
