//! The second hostile pass (issue 38), end to end on loopback: datagrams that jump their
//! sequence numbers, a flooder at the relay, a stranger that speaks first, and outputs that
//! are symbolic links. Each case failed on the code before the fix: the receiver grew by a
//! gigabyte a second and hung, the relay sent the call's ACKs to the flooder, a stranger's
//! datagram held the receiver for the whole call, and outputs were written through links.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

mod support;

use support::{free_addr, run_in, Keep, Tap};

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("hostile", name)
}

fn salsify(args: &[&str]) -> Child {
    support::spawn(args)
}

/// A sender of `scheme` at 160x96, 30 fps, for `seconds`, to `to`.
fn sender(scheme: &str, to: &str, seconds: &str) -> Child {
    salsify(&[
        "send",
        "--to",
        to,
        "--scheme",
        scheme,
        "--input",
        "synthetic",
        "--size",
        "160x96",
        "--fps",
        "30",
        "--duration",
        seconds,
        "-q",
    ])
}

/// Stops `child` like Ctrl-C (SIGTERM) and waits for it.
fn stop(child: Child) -> std::process::Output {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait_with_output().expect("wait for salsify")
}

/// Whether `d` is a datagram carrying video (or Sprout's data) rather than a handshake.
fn is_media(d: &[u8]) -> bool {
    matches!(d, [0x01, 0x01, ..] | [0xB1, 0x01, ..] | [0x53, _, 0x00, ..])
}

/// The first video datagram a real `scheme` sender sends.
fn capture(scheme: &str) -> Vec<u8> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let to = socket.local_addr().unwrap().to_string();
    let child = sender(scheme, &to, "3");
    let mut buf = [0u8; 2048];
    let found = loop {
        let (n, _) = socket.recv_from(&mut buf).expect("the sender sends");
        if is_media(&buf[..n]) {
            break buf[..n].to_vec();
        }
    };
    let _ = stop(child);
    found
}

/// Resident memory of process `pid` in bytes, if it still runs.
fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The probe's datagram with 4 bytes at `at` set to 0xf0000000 (a sequence, frame or
/// byte-offset number far ahead, whichever field lies there for the scheme).
fn jumped(valid: &[u8], at: usize) -> Vec<u8> {
    let mut d = valid.to_vec();
    if d.len() >= at + 4 {
        d[at..at + 4].copy_from_slice(&0xf000_0000u32.to_be_bytes());
    }
    d
}

/// Sends one valid datagram of `scheme`, then the same with its numbers jumped, to a
/// receiver started with --duration 3; returns (peak resident bytes, seconds to exit).
fn sequence_jump(scheme: &str) -> (u64, f64) {
    let valid = capture(scheme);
    let addr = free_addr();
    let started = Instant::now();
    let mut recv = salsify(&["recv", "--listen", &addr, "--duration", "3", "-q"]);
    std::thread::sleep(Duration::from_millis(300));
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe.send_to(&valid, &addr).unwrap();
    for round in 0..20 {
        for at in [2, 4, 6, 10, 14, 29] {
            probe.send_to(&jumped(&valid, at), &addr).unwrap();
        }
        if round % 4 == 0 {
            probe.send_to(&valid, &addr).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut peak = 0;
    let limit = started + Duration::from_secs(6);
    while recv.try_wait().unwrap().is_none() && Instant::now() < limit {
        peak = peak.max(rss(recv.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed().as_secs_f64();
    if recv.try_wait().unwrap().is_none() {
        let _ = recv.kill();
    }
    let _ = recv.wait();
    (peak, took)
}

/// The bar: after one valid datagram and the same with a sequence number far ahead, every
/// scheme's receiver stays under 300 MB and ends within 1 s of its --duration (3 s).
#[test]
fn a_sequence_jump_neither_grows_nor_hangs_any_receiver() {
    let schemes = ["conventional", "vidaptive", "sprout", "salsify-2c"];
    let runs: Vec<_> = schemes
        .into_iter()
        .map(|s| std::thread::spawn(move || (s, sequence_jump(s))))
        .collect();
    for run in runs {
        let (scheme, (peak, took)) = run.join().unwrap();
        eprintln!(
            "{scheme}: peak {:.0} MB, ended after {took:.2} s",
            peak as f64 / 1e6
        );
        assert!(peak < 300_000_000, "{scheme}: {peak} bytes resident");
        assert!(
            took <= 4.0,
            "{scheme}: ended after {took:.2} s (--duration 3)"
        );
    }
}

/// Display times (µs, column 3 of recv.csv) of the frames a receiver logged.
fn shown_at(log: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(2)?.parse().ok())
        .collect()
}

/// The probe's flood: a stranger replays the call's captured fragments to the relay's port
/// (about 1,500 a second for 4 s). The bar: the flooder receives no datagram from the
/// relay, and the call shows frames at the rate of an identical call run beside it.
#[test]
fn a_flooder_gets_nothing_from_the_relay_and_the_call_keeps_its_rate() {
    let dir = temp_dir("flood");
    let mut calls = Vec::new();
    for name in ["clean", "flooded"] {
        let (recv_addr, link_addr) = (free_addr(), free_addr());
        let log = dir.join(format!("{name}.csv"));
        let recv = salsify(&[
            "recv",
            "--listen",
            &recv_addr,
            "--log",
            log.to_str().unwrap(),
            "--duration",
            "12",
            "-q",
        ]);
        let link = salsify(&[
            "link",
            "--listen",
            &link_addr,
            "--to",
            &recv_addr,
            "--link",
            "constant:3000",
            "--duration",
            "12",
            "-q",
        ]);
        let tap = Tap::start(&link_addr, Keep::First(512, is_media));
        calls.push((recv, link, tap, link_addr, log));
    }
    std::thread::sleep(Duration::from_millis(300));
    let senders: Vec<Child> = calls
        .iter()
        .map(|(_, _, tap, _, _)| sender("salsify-2c", &tap.addr, "7"))
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let (_, _, tap, relay, _) = &calls[1];
    let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
    flooder.set_nonblocking(true).unwrap();
    let recorded = tap.seen.lock().unwrap().clone();
    assert!(recorded.len() > 20, "the tap recorded the call");
    let start = salsify_runtime::clock::now().as_micros();
    let (mut sent, mut received) = (0u64, 0u64);
    let mut buf = [0u8; 4096];
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        let _ = flooder.send_to(&recorded[sent as usize % recorded.len()], relay);
        sent += 1;
        while flooder.recv_from(&mut buf).is_ok() {
            received += 1;
        }
        if sent % 15 == 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let end = salsify_runtime::clock::now().as_micros();
    std::thread::sleep(Duration::from_millis(300));
    while flooder.recv_from(&mut buf).is_ok() {
        received += 1;
    }
    for s in senders {
        let _ = s.wait_with_output();
    }
    let mut logs = Vec::new();
    for (recv, link, tap, _, log) in calls {
        drop(tap);
        let link = stop(link);
        let _ = stop(recv);
        logs.push((log, String::from_utf8_lossy(&link.stderr).into_owned()));
    }
    let seconds = (end - start) as f64 / 1e6;
    let rate = |log: &Path| {
        let n = shown_at(log)
            .iter()
            .filter(|&&t| (start..=end).contains(&t))
            .count();
        n as f64 / seconds
    };
    let (clean, flooded) = (rate(&logs[0].0), rate(&logs[1].0));
    eprintln!(
        "{sent} replayed datagrams in {seconds:.2} s: the flooder got {received} back; \
         clean {clean:.1} frames/s, flooded {flooded:.1} frames/s"
    );
    assert!(sent > 4000, "{sent}");
    assert_eq!(received, 0, "the relay sent the flooder datagrams");
    assert!(clean >= 15.0, "the clean call shows {clean:.1} frames/s");
    assert!(
        flooded >= 0.9 * clean,
        "flooded {flooded:.1} vs clean {clean:.1} frames/s\n{}",
        logs[1].1
    );
}

/// The probe's lock-out: a stranger's datagram of another scheme (Sprout), sent before the
/// real conventional sender starts and replayed for 1.5 s, held a plaintext receiver for
/// the whole call. The bar: the real sender's pictures are shown within 2 s of the
/// stranger's last datagram.
#[test]
fn a_stranger_that_spoke_first_holds_the_receiver_at_most_briefly() {
    let dir = temp_dir("lockout");
    let sprout = capture("sprout");
    let addr = free_addr();
    let log = dir.join("recv.csv");
    let recv = salsify(&[
        "recv",
        "--listen",
        &addr,
        "--log",
        log.to_str().unwrap(),
        "--duration",
        "9",
        "-q",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger.send_to(&sprout, &addr).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let real = sender("conventional", &addr, "6");
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        stranger.send_to(&sprout, &addr).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let last = salsify_runtime::clock::now().as_micros();
    let _ = real.wait_with_output();
    let out = stop(recv);
    let shown = shown_at(&log);
    let first = shown.iter().copied().min();
    eprintln!(
        "{} frames shown, the first {:?} ms after the stranger's last datagram",
        shown.len(),
        first.map(|f| (f as i64 - last as i64) / 1000)
    );
    assert!(
        shown.len() >= 30,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = first.unwrap();
    assert!(
        first <= last + 2_000_000,
        "the first picture came {} ms after the stranger's last datagram",
        (first - last) / 1000
    );
}

/// Outputs are never written through a symbolic link (the link's target stays as it was),
/// and one file under two names (a link, a hard link, `./`) is refused: each a clear error
/// and a failing exit before anything runs.
#[test]
fn outputs_never_follow_links_and_one_file_under_two_names_is_refused() {
    let dir = temp_dir("links");
    std::fs::write(dir.join("victim"), "precious").unwrap();
    std::os::unix::fs::symlink(dir.join("victim"), dir.join("link")).unwrap();
    let listen = free_addr();
    let recv = |extra: &[&str]| {
        let mut args = vec!["recv", "--listen", &listen, "--duration", "1", "-q"];
        args.extend_from_slice(extra);
        run_in(&dir, &args)
    };
    let refused = |out: std::process::Output, says: &str, what: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(says), "{what}: wanted '{says}' in {stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.join("victim")).unwrap(),
            "precious",
            "{what} wrote through the link"
        );
    };
    for flag in ["-o", "--ivf", "--log"] {
        refused(recv(&[flag, "link"]), "symbolic link", flag);
    }
    let send = run_in(
        &dir,
        &[
            "send",
            "--to",
            &listen,
            "--duration",
            "1",
            "--log",
            "link",
            "-q",
        ],
    );
    refused(send, "symbolic link", "send --log");
    // Two names of one file: a link to a file yet to be written, and a hard link.
    std::os::unix::fs::symlink(dir.join("x.y4m"), dir.join("alias")).unwrap();
    refused(
        recv(&["-o", "x.y4m", "--ivf", "alias"]),
        "symbolic link",
        "alias",
    );
    assert!(!dir.join("x.y4m").exists());
    std::fs::write(dir.join("a.csv"), "").unwrap();
    std::fs::hard_link(dir.join("a.csv"), dir.join("b.csv")).unwrap();
    refused(
        recv(&["--log", "a.csv", "-o", "b.csv"]),
        "give each its own file",
        "hard link",
    );
    refused(
        recv(&["-o", "./c.y4m", "--ivf", "c.y4m"]),
        "give each its own file",
        "./",
    );
}
