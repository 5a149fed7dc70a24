//! Calls across real networks: `salsify send` and `salsify recv`, encrypted, in Linux network
//! namespaces joined through a core router, with nftables NATs, a NAT that rebinds mid-call,
//! a path whose MTU is 1280 (or drops to it mid-call) at a router that drops ICMP and
//! fragments, and a stranger that replays every datagram of the call from its own address.
//! The topology and its helpers are in `support/netns.rs`; only documentation addresses
//! (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are used, and nothing outside the
//! namespaces a test makes is touched.
//!
//! The tests need root, `ip`, `nft`, `conntrack` and python3 (`scripts/setup --net --checks`).
//! Without them each test says it is skipped and passes, unless SALSIFY_REQUIRE_NETNS=1 (set
//! by `scripts/test`). They run one at a time (the calls are real-time), each a call of
//! SALSIFY_NAT_SECONDS seconds (default 8); each prints one line `nat-paths: SCENARIO: ...`
//! with its figures, which `scripts/nat-paths` collects into a table.

use std::path::Path;
use std::time::Duration;

#[path = "support/netns.rs"]
mod netns;
mod support;

use netns::{seconds, serial, Host, Net, Proc, FPS, PUBLIC};

/// The port the listening side listens on, at the public host.
const PORT: u16 = 9000;

/// Runs `body` on a fresh net of namespaces for test `name` (one test at a time), or skips
/// it (see [`netns::usable`]); then checks that none of the net's namespaces remain.
fn scenario(name: &str, body: impl FnOnce(&mut Net)) {
    let _one_at_a_time = serial();
    if !netns::usable(name) {
        return;
    }
    let dir = support::temp_dir("nat", name);
    let mut net = Net::new(&dir);
    let prefix = net.prefix().to_string();
    body(&mut net);
    drop(net);
    let left = netns::namespaces_named(&prefix);
    assert!(left.is_empty(), "{name}: namespaces left behind: {left:?}");
}

/// Which side dials (`--to`); the other listens (`--listen`) at the public host.
#[derive(Clone, Copy, PartialEq)]
enum Dialer {
    Sender,
    Receiver,
}

/// What a call showed.
struct Outcome {
    /// Frames the receiver showed, and its sessions (from its summary line).
    shown: u64,
    sessions: u64,
    /// `moved to` lines of the receiver (roams).
    roams: usize,
    /// `path MTU` lines of the sender, in all and after the mid-call event (halfway).
    mtu_lines: usize,
    mtu_lines_after: usize,
    send_ok: bool,
    recv_ok: bool,
    send_err: String,
    recv_err: String,
    /// What the sender wrote after the mid-call event.
    send_after: String,
}

impl Outcome {
    /// Both sides' standard error, for a failure's message.
    fn logs(&self) -> String {
        format!(
            "--- sender (exit ok: {}):\n{}\n--- receiver (exit ok: {}):\n{}",
            self.send_ok, self.send_err, self.recv_ok, self.recv_err
        )
    }

    /// The figures line `scripts/nat-paths` collects.
    fn print(&self, name: &str, expected: f64, extra: &str) {
        println!(
            "nat-paths: {name}: shown {} frames of {expected:.0}, sessions {}, roams {}, path-MTU lines {} ({} after halfway), sender {}, receiver {}{extra}",
            self.shown,
            self.sessions,
            self.roams,
            self.mtu_lines,
            self.mtu_lines_after,
            if self.send_ok { "ok" } else { "failed" },
            if self.recv_ok { "ok" } else { "failed" },
        );
    }
}

/// Frames shown and sessions in the receiver's summary (`salsify recv: N frames shown, N
/// sessions ...`), or zeros without one.
fn summary(stderr: &str) -> (u64, u64) {
    let Some(line) = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("salsify recv:") && l.contains(" frames shown, "))
    else {
        return (0, 0);
    };
    let before = |word: &str| -> u64 {
        line.find(word)
            .and_then(|end| line[..end].split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (before(" frames shown"), before(" sessions"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Key pairs `recv` and `send` in the net's folder (made in the test's own namespace: no
/// network involved).
fn keys(dir: &Path) {
    for name in ["recv", "send"] {
        let out = support::run_in(dir, &["keygen", "-q", "-o", name]);
        assert!(
            out.status.success(),
            "keygen: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// An encrypted call of `seconds` from `sender` to `receiver`, synthetic 640x360 at 30 fps,
/// the public host listening on port 9000 and the other side dialing (`dialer`). `mid` runs
/// halfway through the sender's run. The receiver is stopped (SIGTERM) a second after the
/// sender ends.
fn call(
    net: &mut Net,
    receiver: &Host,
    sender: &Host,
    dialer: Dialer,
    seconds: f64,
    mid: impl FnOnce(&mut Net),
) -> Outcome {
    keys(&net.dir);
    let at = format!("{PUBLIC}:{PORT}");
    let side = |role: &str, how: &str, key: &str, peer: &str, duration: f64| -> Vec<String> {
        [
            support::SALSIFY,
            role,
            how,
            &at,
            "--key",
            key,
            "--peer-key",
            peer,
            "--duration",
            &format!("{duration:.1}"),
        ]
        .map(String::from)
        .to_vec()
    };
    let (recv_how, send_how) = match dialer {
        Dialer::Sender => ("--listen", "--to"),
        Dialer::Receiver => ("--to", "--listen"),
    };
    // The receiver's --duration is only a cap: it is stopped a second after the sender ends.
    let recv_args = side("recv", recv_how, "recv.key", "send.pub", seconds + 8.0);
    let send_args = side(
        "send",
        send_how,
        "send.key",
        "recv.pub",
        seconds + if dialer == Dialer::Receiver { 0.5 } else { 0.0 },
    );
    let (first, second) = match dialer {
        Dialer::Sender => (
            start(net, receiver, "recv", &recv_args),
            (sender, "send", &send_args),
        ),
        Dialer::Receiver => (
            start(net, sender, "send", &send_args),
            (receiver, "recv", &recv_args),
        ),
    };
    std::thread::sleep(Duration::from_millis(700));
    if let Some(status) = net.exited(&first) {
        panic!(
            "the listening side ({}) ended before the call: {status}\n{}",
            first.label,
            read(&first.log)
        );
    }
    let dialing = start(net, second.0, second.1, second.2);
    let (recv, send) = match dialer {
        Dialer::Sender => (first, dialing),
        Dialer::Receiver => (dialing, first),
    };
    std::thread::sleep(Duration::from_secs_f64(seconds / 2.0));
    let send_mark = read(&send.log).len();
    mid(net);
    let send_status = net.wait(&send, Duration::from_secs_f64(seconds + 20.0));
    std::thread::sleep(Duration::from_secs(1));
    net.terminate(&recv);
    let recv_status = net.wait(&recv, Duration::from_secs(10));
    net.kill(&send);
    net.kill(&recv);
    let (send_err, recv_err) = (read(&send.log), read(&recv.log));
    let (shown, sessions) = summary(&recv_err);
    let send_after = send_err.get(send_mark..).unwrap_or("").to_string();
    Outcome {
        shown,
        sessions,
        roams: recv_err.lines().filter(|l| l.contains("moved to")).count(),
        mtu_lines: send_err.lines().filter(|l| l.contains("path MTU")).count(),
        mtu_lines_after: send_after
            .lines()
            .filter(|l| l.contains("path MTU"))
            .count(),
        send_ok: send_status.is_some_and(|s| s.success()),
        recv_ok: recv_status.is_some_and(|s| s.success()),
        send_err,
        recv_err,
        send_after,
    }
}

/// Starts `args` on `host`, its output in `label`.log.
fn start(net: &mut Net, host: &Host, label: &str, args: &[String]) -> Proc {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    net.spawn(&host.ns, label, &args)
}

/// Frames a clean call of `seconds` would show.
fn expected(seconds: f64) -> f64 {
    FPS * seconds
}

/// The bars every call must meet: at least `share` of the frames a clean call shows, one
/// session, both sides ending well.
fn assert_call(name: &str, out: &Outcome, seconds: f64, share: f64) {
    let want = share * expected(seconds);
    assert!(
        out.shown as f64 >= want,
        "{name}: {} frames shown, wanted at least {want:.0} ({share} of {:.0})\n{}",
        out.shown,
        expected(seconds),
        out.logs()
    );
    assert_eq!(out.sessions, 1, "{name}: sessions\n{}", out.logs());
    assert!(
        out.send_ok && out.recv_ok,
        "{name}: a side failed\n{}",
        out.logs()
    );
}

/// A sender behind NAT A calls the public receiver: the plain case every other builds on.
#[test]
fn sender_behind_nat() {
    let name = "sender_behind_nat";
    scenario(name, |net| {
        let receiver = net.public_host();
        let (_nat, sender) = net.behind_nat_a();
        let t = seconds();
        let out = call(net, &receiver, &sender, Dialer::Sender, t, |_| {});
        out.print(name, expected(t), "");
        assert_call(name, &out, t, 0.85);
    });
}

/// NAT A gives the call a new mapping halfway (new port range, connection tracking
/// flushed): the receiver follows the sender to its new address within the one session.
#[test]
fn nat_rebinding_keeps_the_session() {
    let name = "nat_rebinding_keeps_the_session";
    scenario(name, |net| {
        let receiver = net.public_host();
        let (nat, sender) = net.behind_nat_a();
        let t = seconds();
        let out = call(net, &receiver, &sender, Dialer::Sender, t, |net| {
            net.rebind(&nat);
        });
        out.print(name, expected(t), "");
        assert_call(name, &out, t, 0.85);
        assert!(
            out.roams >= 1,
            "{name}: no 'moved to' line from the receiver\n{}",
            out.logs()
        );
    });
}

/// The receiver, behind NAT B, dials a sender listening at the public host.
#[test]
fn receiver_behind_nat_dials() {
    let name = "receiver_behind_nat_dials";
    scenario(name, |net| {
        let sender = net.public_host();
        let (_nat, receiver) = net.behind_nat_b();
        let t = seconds();
        let out = call(net, &receiver, &sender, Dialer::Receiver, t, |_| {});
        out.print(name, expected(t), "");
        assert_call(name, &out, t, 0.85);
    });
}

/// Checks that a datagram of 1400 bytes, with DF or without, does not cross from `from` to
/// `to` while one of 1200 does, and that `from`'s kernel heard no ICMP about it: the path
/// really has a small MTU and is silent about it.
fn assert_path_is_hostile(net: &mut Net, from: &Host, to: &Host) {
    let small = net.udp_cross(from, 0, to, 9999, 1200, true);
    assert_eq!(
        small.arrived.len(),
        1,
        "a 1200-byte datagram should cross the path: {small:?}"
    );
    for df in [true, false] {
        let big = net.udp_cross(from, 0, to, 9999, 1400, df);
        assert!(
            big.arrived.is_empty(),
            "a 1400-byte datagram (DF {df}) crossed a path of MTU 1280: {big:?}"
        );
    }
    assert_eq!(
        net.cached_mtu(from, to.addr),
        None,
        "the sender's host learnt the path MTU: an ICMP got through"
    );
}

/// The path's MTU is 1280 at the core router, which drops ICMP and fragments, from the
/// start: the call goes through anyway.
#[test]
fn small_mtu_path_without_icmp() {
    let name = "small_mtu_path_without_icmp";
    scenario(name, |net| {
        let receiver = net.public_host();
        let (_nat, sender) = net.behind_nat_a();
        let core = net.core().to_string();
        net.drop_icmp_and_fragments(&core);
        net.set_path_mtu(&receiver.uplink, 1280);
        assert_path_is_hostile(net, &sender, &receiver);
        let t = seconds();
        let out = call(net, &receiver, &sender, Dialer::Sender, t, |_| {});
        out.print(name, expected(t), "");
        assert_call(name, &out, t, 0.85);
    });
}

/// The path's MTU drops from 1500 to 1280 halfway through, silently (ICMP and fragments
/// dropped throughout): the sender finds the new path MTU and the call goes on.
#[test]
fn path_mtu_shrinks_mid_call() {
    let name = "path_mtu_shrinks_mid_call";
    scenario(name, |net| {
        let receiver = net.public_host();
        let (_nat, sender) = net.behind_nat_a();
        let core = net.core().to_string();
        net.drop_icmp_and_fragments(&core);
        let t = seconds();
        let link = receiver.uplink.clone();
        let out = call(net, &receiver, &sender, Dialer::Sender, t, |net| {
            net.set_path_mtu(&link, 1280);
        });
        out.print(name, expected(t), "");
        // The path really is silent and small now (the call's figures are the code's).
        assert_path_is_hostile(net, &sender, &receiver);
        assert_call(name, &out, t, 0.75);
        assert!(
            out.mtu_lines_after >= 1,
            "{name}: no 'path MTU' line from the sender after the MTU dropped; after it:\n{}\n{}",
            out.send_after,
            out.logs()
        );
    });
}

/// A stranger on the core gets a copy of every datagram of the call and replays each from
/// its own address: to the receiver, and to the sender's mapping on NAT A (which lets anyone
/// reach its LAN host's mapped port, as many home NATs do). Neither side may move to the
/// stranger: it gets no media, the receiver reports no roam, the call keeps one session.
#[test]
fn stranger_replays_everything() {
    let name = "stranger_replays_everything";
    scenario(name, |net| {
        let receiver = net.public_host();
        let (nat, sender) = net.behind_nat_a();
        net.full_cone(&nat);
        let t = seconds();
        let stranger = net.stranger(t + 30.0);
        let out = call(net, &receiver, &sender, Dialer::Sender, t, |_| {});
        let got = net.stranger_stats(&stranger);
        out.print(
            name,
            expected(t),
            &format!(
                ", stranger replayed {} datagrams ({} bytes), got back {} datagrams ({} bytes, largest {})",
                got.replayed, got.replayed_bytes, got.back, got.back_bytes, got.back_max
            ),
        );
        assert!(
            got.replayed as f64 >= 5.0 * t,
            "{name}: the stranger replayed only {} datagrams: the copies did not reach it",
            got.replayed
        );
        assert!(
            got.back_bytes < 2000 && got.back_max <= 200,
            "{name}: the stranger got {} datagrams back ({} bytes, largest {}): media went to it\n{}",
            got.back,
            got.back_bytes,
            got.back_max,
            out.logs()
        );
        assert_eq!(out.roams, 0, "{name}: the receiver moved\n{}", out.logs());
        assert_call(name, &out, t, 0.85);
    });
}

/// The harness itself, checked with UDP probes before any call relies on it: the NAT
/// translates and keeps the inside port, a rebind gives a new mapping in its range, the small
/// MTU with ICMP and fragments dropped stops large datagrams (and without the drop the
/// router fragments, so the drop is what stops them), the stranger replays in both
/// directions, and a failing test leaves no namespace and no process behind.
#[test]
fn netns_harness_works_and_cleans_up() {
    let name = "netns_harness_works_and_cleans_up";
    scenario(name, |net| {
        let public = net.public_host();
        let (nat, inside) = net.behind_nat_a();
        let (nat_b, inside_b) = net.behind_nat_b();
        // NAT: the public host sees NAT A's outside address, the inside port kept.
        let c = net.udp_cross(&inside, 5555, &public, 9999, 100, false);
        assert_eq!(c.arrived, [("203.0.113.18:5555".to_string(), 100)], "{c:?}");
        assert_eq!(c.replies, [("203.0.113.10:9999".to_string(), 3)], "{c:?}");
        let c = net.udp_cross(&inside_b, 5555, &public, 9999, 100, false);
        assert_eq!(c.arrived, [("203.0.113.34:5555".to_string(), 100)], "{c:?}");
        // Nothing reaches a LAN host unasked: the public host cannot send to 192.0.2.10.
        let c = net.udp_cross(&public, 0, &inside, 9999, 100, false);
        assert!(c.arrived.is_empty(), "{c:?}");
        // Rebinding: the same inside socket gets a new outside port in the new range.
        for _ in 0..2 {
            let (lo, hi) = net.rebind(&nat);
            let c = net.udp_cross(&inside, 5555, &public, 9999, 100, false);
            let port: u16 = c.arrived[0].0.rsplit(':').next().unwrap().parse().unwrap();
            assert!((lo..=hi).contains(&port), "{c:?} not in {lo}-{hi}");
            assert!(c.arrived[0].0.starts_with("203.0.113.18:"), "{c:?}");
            assert_eq!(c.replies.len(), 1, "{c:?}");
        }
        // A 1280 MTU at the core: without the drop the router fragments (and so 1400 bytes
        // without DF arrive) and tells the sender about DF datagrams; with it, neither.
        net.set_path_mtu(&public.uplink, 1280);
        let c = net.udp_cross(&inside_b, 0, &public, 9999, 1400, false);
        assert_eq!(c.arrived.len(), 1, "fragmented and reassembled: {c:?}");
        let c = net.udp_cross(&inside_b, 0, &public, 9999, 1400, true);
        assert!(c.arrived.is_empty(), "{c:?}");
        assert_eq!(net.cached_mtu(&inside_b, PUBLIC), Some(1280), "ICMP heard");
        let core = net.core().to_string();
        net.drop_icmp_and_fragments(&core);
        assert_path_is_hostile(net, &inside, &public);
        // And back to 1500: a 1400-byte datagram crosses again.
        net.set_path_mtu(&public.uplink, 1500);
        let c = net.udp_cross(&inside, 0, &public, 9999, 1400, true);
        assert_eq!(c.arrived.len(), 1, "{c:?}");
        // The stranger: a datagram from a host behind NAT B (which keeps ports: never
        // rebound) arrives twice at the public host (the second from the stranger), and the
        // answer twice at that host (the second from the stranger, through the full cone).
        net.full_cone(&nat_b);
        let stranger = net.stranger(30.0);
        let c = net.udp_cross(&inside_b, 6666, &public, 9999, 300, false);
        let from: Vec<&str> = c.arrived.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(from.len(), 2, "{c:?}");
        assert_eq!(from[0], "203.0.113.34:6666", "{c:?}");
        assert!(from[1].starts_with("203.0.113.66:"), "{c:?}");
        let back: Vec<&str> = c.replies.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(back.len(), 2, "{c:?}");
        assert!(back.contains(&"203.0.113.10:9999"), "{c:?}");
        assert!(back.iter().any(|a| a.starts_with("203.0.113.66:")), "{c:?}");
        let got = net.stranger_stats(&stranger);
        // It replayed the datagram and the answer; the public host answered its replay
        // (3 bytes) to it.
        assert_eq!((got.seen, got.replayed), (2, 2), "{got:?}");
        assert_eq!((got.back, got.back_bytes), (1, 3), "{got:?}");
    });
    // A test that fails mid-way leaves nothing: namespaces deleted, processes killed.
    let _one_at_a_time = serial();
    if netns::available().is_err() {
        return;
    }
    let dir = support::temp_dir("nat", "cleanup");
    // The panic is this check's own: no message for it (the hook is restored below; the
    // other tests of this file wait for the lock held here).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(|| {
        let mut net = Net::new(&dir);
        let host = net.public_host();
        let sleeper = net.spawn(&host.ns, "sleeper", &["sleep", "60"]);
        let prefix = net.prefix().to_string();
        assert_eq!(netns::namespaces_named(&prefix).len(), 2);
        std::panic::panic_any((prefix, sleeper.pid));
    });
    std::panic::set_hook(hook);
    let (prefix, pid) = caught
        .expect_err("the closure panics")
        .downcast::<(String, u32)>()
        .map(|b| *b)
        .expect("the panic carries the prefix and process id");
    let left = netns::namespaces_named(&prefix);
    assert!(left.is_empty(), "namespaces left after a panic: {left:?}");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} left running after a panic"
    );
}
