//! A call ends when either side does: the side that ends says goodbye (sealed, a few
//! copies), the other ends too and says why; a start that cannot work fails soon with its
//! likely cause. Loopback, small pictures, a few seconds each. The bounds on time are the
//! issue's (2 s to follow a hang-up, 15 s to fail a start), far above what it takes.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

mod support;

use support::{finish, free_addr, keys};

fn salsify(args: &[&str]) -> Child {
    support::spawn(args)
}

/// Waits for `child` (which must end by itself) and says how long after `since` it did.
fn ended_after(child: Child, what: &str, since: Instant) -> (Output, Duration) {
    let out = child.wait_with_output().unwrap();
    let after = since.elapsed();
    assert!(out.status.success(), "{what}: {out:?}");
    (out, after)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const SMALL: [&str; 4] = ["--size", "160x96", "--fps", "30"];

#[test]
fn a_receiver_ends_when_its_sender_hangs_up_and_says_so() {
    let dir = support::temp_dir("hangup", "sender-ends");
    let (recv_keys, send_keys) = keys(&dir);
    let addr = free_addr();
    let mut recv_args = vec!["recv", "--listen", &addr, "--duration", "30", "-q"];
    recv_args.extend(recv_keys.iter().map(String::as_str));
    let recv = salsify(&recv_args);
    std::thread::sleep(Duration::from_millis(200));
    let mut send_args = vec!["send", "--to", &addr, "--duration", "2", "-q"];
    send_args.extend(SMALL);
    send_args.extend(send_keys.iter().map(String::as_str));
    finish(salsify(&send_args), "send");
    let (out, after) = ended_after(recv, "recv", Instant::now());
    assert!(
        stderr(&out).contains("the sender hung up"),
        "{}",
        stderr(&out)
    );
    assert!(
        after < Duration::from_secs(2),
        "the receiver took {after:?}"
    );
}

#[test]
fn a_sender_ends_when_its_receiver_hangs_up_and_says_so() {
    let addr = free_addr();
    let recv = salsify(&["recv", "--listen", &addr, "--duration", "2", "-q"]);
    std::thread::sleep(Duration::from_millis(200));
    let mut send_args = vec!["send", "--to", &addr, "--duration", "30", "-q"];
    send_args.extend(SMALL);
    let send = salsify(&send_args);
    finish(recv, "recv");
    let (out, after) = ended_after(send, "send", Instant::now());
    assert!(
        stderr(&out).contains("the receiver hung up"),
        "{}",
        stderr(&out)
    );
    assert!(after < Duration::from_secs(2), "the sender took {after:?}");
}

#[test]
fn a_call_ends_on_both_sides_when_one_hangs_up() {
    let dir = support::temp_dir("hangup", "call");
    let (b_keys, a_keys) = keys(&dir);
    let addr = free_addr();
    let mut b_args = vec!["call", "--listen", &addr, "--duration", "30", "-q"];
    b_args.extend(SMALL);
    b_args.extend(b_keys.iter().map(String::as_str));
    let b = salsify(&b_args);
    std::thread::sleep(Duration::from_millis(200));
    let mut a_args = vec!["call", "--to", &addr, "--duration", "2", "-q"];
    a_args.extend(SMALL);
    a_args.extend(a_keys.iter().map(String::as_str));
    finish(salsify(&a_args), "call --to");
    let (out, after) = ended_after(b, "call --listen", Instant::now());
    assert!(
        stderr(&out).contains("the peer hung up"),
        "{}",
        stderr(&out)
    );
    assert!(
        after < Duration::from_secs(2),
        "the listener took {after:?}"
    );
}

/// Nothing listens: each dialing start fails, non-zero, within 15 s, naming the likely cause.
#[test]
fn a_start_with_nobody_there_fails_soon_and_says_why() {
    let nobody = free_addr();
    let started = Instant::now();
    let mut send = vec!["send", "--to", &nobody, "-q"];
    send.extend(SMALL);
    let recv = ["recv", "--to", &nobody, "-q"];
    let mut call = vec!["call", "--to", &nobody, "-q"];
    call.extend(SMALL);
    let runs: Vec<(&str, Child)> = vec![
        ("send", salsify(&send)),
        ("recv", salsify(&recv)),
        ("call", salsify(&call)),
    ];
    for (what, child) in runs {
        let out = child.wait_with_output().unwrap();
        let said = stderr(&out);
        assert!(!out.status.success(), "{what} exited 0: {said}");
        assert!(said.contains("no answer from"), "{what}: {said}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{what}: {said}"
        );
    }
}

/// While a call is live, a second caller (`keyed`: with the same keys as the first) is told
/// the receiver is busy: it exits non-zero within 2 s saying so, and the first call goes on
/// in its one session.
fn a_second_caller_is_refused(keyed: bool) {
    let dir = support::temp_dir("hangup", if keyed { "busy-keyed" } else { "busy-plain" });
    let (recv_keys, send_keys) = keys(&dir);
    let addr = free_addr();
    let log = dir.join("recv.csv");
    let log_s = log.to_str().unwrap().to_string();
    let mut recv_args = vec![
        "recv",
        "--listen",
        &addr,
        "--duration",
        "30",
        "--log",
        &log_s,
    ];
    let mut send_args = vec!["send", "--to", &addr, "-q"];
    send_args.extend(SMALL);
    if keyed {
        recv_args.extend(recv_keys.iter().map(String::as_str));
        send_args.extend(send_keys.iter().map(String::as_str));
    }
    let recv = salsify(&recv_args);
    std::thread::sleep(Duration::from_millis(200));
    let mut first_args = send_args.clone();
    first_args.extend(["--duration", "4"]);
    let first = salsify(&first_args);
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let second = salsify(&send_args).wait_with_output().unwrap();
    let took = started.elapsed();
    let said = stderr(&second);
    assert!(
        !second.status.success(),
        "the second caller exited 0: {said}"
    );
    assert!(said.contains("the receiver is busy"), "{said}");
    assert!(
        took < Duration::from_secs(2),
        "the second caller took {took:?}: {said}"
    );
    finish(first, "first send");
    let (out, _) = ended_after(recv, "recv", Instant::now());
    let heard = stderr(&out);
    assert!(heard.contains(" 1 sessions"), "{heard}");
    assert!(heard.contains("busy answers"), "{heard}");
    let shown = std::fs::read_to_string(&log).unwrap().lines().count() - 1;
    assert!(shown > 80, "the first call showed {shown} frames\n{heard}");
}

#[test]
fn a_second_caller_with_the_keys_is_refused_as_busy() {
    a_second_caller_is_refused(true);
}

#[test]
fn a_plaintext_stranger_is_refused_as_busy() {
    a_second_caller_is_refused(false);
}
