//! Two peers that are both behind NATs meet: `salsify send --via` and `salsify recv --via`,
//! encrypted, each behind its own NAT in Linux network namespaces, meet through the
//! rendezvous (`salsify rendezvous`) with coturn as their STUN server, and call directly:
//! through port-preserving NATs, through NATs whose connection tracking gives a side a new
//! port because the peer's check arrived first, with a stranger at the rendezvous and the
//! NATs, and (through coturn as a TURN relay) between two symmetric NATs. The topology and
//! its helpers are in `support/netns.rs` and `support/netns_meet.rs`; only documentation
//! addresses (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are used, and nothing outside
//! the namespaces a test makes is touched.
//!
//! The tests need root, `ip`, `nft`, `conntrack`, python3 and coturn's `turnserver`
//! (`scripts/setup --net --checks`). Without them each test says it is skipped and passes,
//! unless SALSIFY_REQUIRE_NETNS=1 (set by `scripts/test`). They run one at a time (the calls
//! are real-time), each a call of SALSIFY_NAT_SECONDS seconds (default 8); each prints one
//! line `nat-meet: SCENARIO: ...` with its figures, which `scripts/nat-paths` collects into a
//! table.

use std::path::Path;
use std::time::Duration;

#[path = "support/netns.rs"]
mod netns;
#[path = "support/netns_meet.rs"]
mod netns_meet;
mod support;

use netns::{seconds, Host, Proc, FPS, NAT_A_OUTSIDE, NAT_B_OUTSIDE, STRANGER};
use netns_meet::{
    Counts, Flow, Meet, RENDEZVOUS, RENDEZVOUS_PORT, TURN, TURN_PASSWORD, TURN_PORT, TURN_USER,
};

/// What the rendezvous and the STUN server may carry in a direct call, both ways, in IP
/// bytes: meeting and keep-alives, no media.
const SERVER_BYTES_MAX: u64 = 300_000;

/// Frames a clean call of `seconds` would show.
fn expected(seconds: f64) -> f64 {
    FPS * seconds
}

/// Runs `body` on a fresh net with the meeting's servers' host for test `name` (one test at a
/// time), or skips it (see [`netns_meet::usable`]); then checks that none of the net's
/// namespaces remain, and removes the scratch folder (kept when the test failed).
fn scenario(name: &str, body: impl FnOnce(&mut Meet)) {
    netns_meet::scenario("meet", name, body);
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

/// Starts coturn and the rendezvous (for a call of `seconds` and then some) on the servers'
/// host, and checks that coturn answers a STUN Binding from each host behind a NAT.
fn servers(meet: &mut Meet, hosts: &[&Host], seconds: f64) -> (Proc, Proc) {
    let coturn = meet.coturn();
    for host in hosts {
        let mapped = meet.stun(host, 0);
        assert!(
            mapped.is_some(),
            "coturn does not answer a STUN Binding from {}",
            host.addr
        );
    }
    let rendezvous = meet.rendezvous(support::SALSIFY, seconds + 60.0);
    (coturn, rendezvous)
}

/// A side's `met` line: how long meeting took (the line ends `in X s`) and whether relayed.
#[derive(Debug, Clone)]
struct Met {
    secs: Option<f64>,
    relayed: bool,
    line: String,
}

/// The line of `salsify ROLE:` in `stderr` that says the peers met: the first that ends `in X
/// s`, else the first that says ` met ` at all.
fn met(stderr: &str, role: &str) -> Option<Met> {
    let secs = |line: &str| -> Option<f64> {
        line.trim_end()
            .strip_suffix(" s")
            .and_then(|l| l.rsplit(" in ").next())
            .and_then(|x| x.trim().parse().ok())
    };
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with(&format!("salsify {role}:")) && l.contains(" met "))
        .collect();
    let line = lines.iter().find(|l| secs(l).is_some()).or(lines.first())?;
    Some(Met {
        secs: secs(line),
        relayed: line.contains("relayed"),
        line: line.to_string(),
    })
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

/// How a call is placed.
#[derive(Clone, Copy, Default)]
struct Plan {
    /// Both sides also get `--turn turn:TURN:3478` with coturn's user.
    turn: bool,
    /// The sender starts this long after the receiver.
    sender_after: f64,
}

/// What a call showed.
struct Outcome {
    shown: u64,
    sessions: u64,
    send_met: Option<Met>,
    recv_met: Option<Met>,
    /// `moved to` lines of either side.
    moves: usize,
    send_ok: bool,
    recv_ok: bool,
    send_err: String,
    recv_err: String,
    /// What the core counted from the start of the receiver to the end of the sender.
    counts: Counts,
}

impl Outcome {
    /// Both sides' standard error, for a failure's message.
    fn logs(&self) -> String {
        format!(
            "--- sender (exit ok: {}):\n{}\n--- receiver (exit ok: {}):\n{}",
            self.send_ok, self.send_err, self.recv_ok, self.recv_err
        )
    }

    /// Both sides met.
    fn both_met(&self) -> bool {
        self.send_met.is_some() && self.recv_met.is_some()
    }

    /// `direct` when both sides met and neither relayed, `relayed` when one relayed, `unmet`
    /// when a side did not meet.
    fn how(&self) -> &'static str {
        let relayed = [&self.send_met, &self.recv_met]
            .iter()
            .any(|m| m.as_ref().is_some_and(|m| m.relayed));
        if relayed {
            "relayed"
        } else if self.both_met() {
            "direct"
        } else {
            "unmet"
        }
    }

    /// The later side's time to meet, if both met and said how long it took.
    fn met_secs(&self) -> Option<f64> {
        let s = self.send_met.as_ref()?.secs?;
        let r = self.recv_met.as_ref()?.secs?;
        Some(s.max(r))
    }

    /// The figures line `scripts/nat-paths` collects.
    fn print(&self, name: &str, expected: f64, extra: &str) {
        let side = |m: &Option<Met>| match m {
            Some(Met {
                secs: Some(s),
                relayed,
                ..
            }) => format!("{s:.2} s {}", if *relayed { "relayed" } else { "direct" }),
            Some(_) => "met (no time)".to_string(),
            None => "not met".to_string(),
        };
        println!(
            "nat-meet: {name}: shown {} frames of {expected:.0}, sessions {}, met in {} s ({}), server bytes {}, sender {} ({}), receiver {} ({}), moves {}{extra}",
            self.shown,
            self.sessions,
            self.met_secs().map_or("-".to_string(), |s| format!("{s:.2}")),
            self.how(),
            self.counts.peers_servers_bytes,
            if self.send_ok { "ok" } else { "failed" },
            side(&self.send_met),
            if self.recv_ok { "ok" } else { "failed" },
            side(&self.recv_met),
            self.moves,
        );
    }
}

/// An encrypted call of `seconds` from `sender` to `receiver`, synthetic 640x360 at 30 fps,
/// both meeting through the rendezvous (`--via`) with coturn for STUN (`--stun`), and TURN
/// too with `plan.turn`. The sender starts `plan.sender_after` after the receiver; the
/// receiver is stopped (SIGTERM) a second after the sender ends.
fn call(meet: &mut Meet, sender: &Host, receiver: &Host, seconds: f64, plan: Plan) -> Outcome {
    keys(&meet.dir);
    let via = format!("{RENDEZVOUS}:{RENDEZVOUS_PORT}");
    let stun = format!("{TURN}:{TURN_PORT}");
    let turn = format!("turn:{TURN}:{TURN_PORT}");
    let side = |role: &str, key: &str, peer: &str, duration: f64| -> Vec<String> {
        let mut args: Vec<String> = [
            support::SALSIFY,
            role,
            "--via",
            &via,
            "--stun",
            &stun,
            "--key",
            key,
            "--peer-key",
            peer,
            "--duration",
            &format!("{duration:.1}"),
        ]
        .map(String::from)
        .to_vec();
        if plan.turn {
            args.extend(
                [
                    "--turn",
                    &turn,
                    "--turn-user",
                    TURN_USER,
                    "--turn-password",
                    TURN_PASSWORD,
                ]
                .map(String::from),
            );
        }
        args
    };
    // The receiver's --duration is only a cap: it is stopped a second after the sender ends.
    let recv_args = side(
        "recv",
        "recv.key",
        "send.pub",
        seconds + plan.sender_after + 8.0,
    );
    let send_args = side("send", "send.key", "recv.pub", seconds);
    let before = meet.counts();
    let recv = start(meet, receiver, "recv", &recv_args);
    if plan.sender_after > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(plan.sender_after));
        if let Some(status) = meet.exited(&recv) {
            panic!(
                "the receiver ended before the sender started: {status}\n{}",
                read(&recv.log)
            );
        }
    }
    let send = start(meet, sender, "send", &send_args);
    let send_status = meet.wait(&send, Duration::from_secs_f64(seconds + 20.0));
    let counts = meet.counts().since(&before);
    std::thread::sleep(Duration::from_secs(1));
    meet.terminate(&recv);
    let recv_status = meet.wait(&recv, Duration::from_secs(10));
    meet.kill(&send);
    meet.kill(&recv);
    let (send_err, recv_err) = (read(&send.log), read(&recv.log));
    let (shown, sessions) = summary(&recv_err);
    let moves = [&send_err, &recv_err]
        .iter()
        .map(|e| e.lines().filter(|l| l.contains("moved to")).count())
        .sum();
    Outcome {
        shown,
        sessions,
        send_met: met(&send_err, "send"),
        recv_met: met(&recv_err, "recv"),
        moves,
        send_ok: send_status.is_some_and(|s| s.success()),
        recv_ok: recv_status.is_some_and(|s| s.success()),
        send_err,
        recv_err,
        counts,
    }
}

/// Starts `args` on `host`, its output in `label`.log.
fn start(meet: &mut Meet, host: &Host, label: &str, args: &[String]) -> Proc {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    meet.spawn(&host.ns, label, &args)
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

/// Both sides said they met, and neither through a relay.
fn assert_met_directly(name: &str, out: &Outcome) {
    assert!(
        out.both_met(),
        "{name}: a side printed no `met` line\n{}",
        out.logs()
    );
    assert_eq!(
        out.how(),
        "direct",
        "{name}: met through a relay, not directly\n{}",
        out.logs()
    );
}

/// The rendezvous and the STUN server carried no media: under [`SERVER_BYTES_MAX`].
fn assert_servers_carried_no_media(name: &str, out: &Outcome) {
    assert!(
        out.counts.peers_servers_bytes < SERVER_BYTES_MAX,
        "{name}: the rendezvous and the STUN server carried {} bytes ({} packets) to and from \
         the peers, wanted under {SERVER_BYTES_MAX}\n{}",
        out.counts.peers_servers_bytes,
        out.counts.peers_servers_packets,
        out.logs()
    );
}

/// Which NATs gave a flow of their LAN host a new outside port, and which tracked a flow the
/// peer's NAT started towards them (a datagram that arrived before their host had sent to
/// that address), as `", conntrack: ..."` for a figures line.
fn conntrack_figures(nats: &[(&str, &[Flow])]) -> String {
    let mut said = Vec::new();
    for (which, flows) in nats {
        let changed: Vec<String> = flows
            .iter()
            .filter(|f| !f.src.starts_with("203.0.113."))
            .filter_map(|f| {
                let (inside, outside) = f.changed_port()?;
                Some(format!("{inside}->{outside}"))
            })
            .collect();
        let first = flows
            .iter()
            .filter(|f| {
                let from = f.src.split(':').next().unwrap_or("");
                (from == NAT_A_OUTSIDE || from == NAT_B_OUTSIDE)
                    && f.reply_src.split(':').next() == f.dst.split(':').next()
            })
            .count();
        said.push(format!(
            "NAT {which} port changes [{}], peer-first flows {first}",
            changed.join(" ")
        ));
    }
    format!(", conntrack: {}", said.join("; "))
}

/// Sender behind NAT A, receiver behind NAT B, both Linux masquerading (which keeps the
/// inside port where it can); they meet through the rendezvous with coturn for STUN and call
/// directly: quickly, and with nothing but the meeting through the servers. The NATs' tracked
/// flows are reported as in `conntrack_port_change_still_meets` (the two sides start
/// together, but their first checks to each other rarely cross on the way).
#[test]
fn both_behind_port_preserving_nats_meet_directly() {
    let name = "both_behind_port_preserving_nats_meet_directly";
    scenario(name, |meet| {
        let (nat_a, sender) = meet.behind_nat_a();
        let (nat_b, receiver) = meet.behind_nat_b();
        let t = seconds();
        let _servers = servers(meet, &[&sender, &receiver], t);
        let out = call(meet, &sender, &receiver, t, Plan::default());
        let (flows_a, flows_b) = (meet.conntrack(&nat_a), meet.conntrack(&nat_b));
        out.print(
            name,
            expected(t),
            &conntrack_figures(&[("A", &flows_a), ("B", &flows_b)]),
        );
        assert_met_directly(name, &out);
        assert_call(name, &out, t, 0.85);
        assert_servers_carried_no_media(name, &out);
        let secs = out.met_secs();
        assert!(
            secs.is_some_and(|s| s < 1.0),
            "{name}: meeting took {secs:?} s, wanted under 1 s (from the `met` lines: {:?}, {:?})",
            out.send_met.as_ref().map(|m| &m.line),
            out.recv_met.as_ref().map(|m| &m.line),
        );
    });
}

/// As above, but the sender starts 1.25 s after the receiver, so the two sides' first
/// datagrams to each other do not cross: the sender learns the receiver's candidates in its
/// first answer from the rendezvous and checks them at once, the receiver learns the
/// sender's only at its next registration (it registers every 0.5 s; the quarter second
/// keeps the two registrations apart), or the other way round if the rendezvous tells the
/// one waiting. One NAT thus tracks the peer's check as a flow of its own before its host
/// has sent anything to the peer, and Linux connection tracking gives that host's first
/// datagram to the peer a new outside port (its usual one is taken by that flow). They must
/// meet directly all the same. The NATs' tracked flows are reported (`conntrack: ...`).
#[test]
fn conntrack_port_change_still_meets() {
    let name = "conntrack_port_change_still_meets";
    scenario(name, |meet| {
        let (nat_a, sender) = meet.behind_nat_a();
        let (nat_b, receiver) = meet.behind_nat_b();
        let t = seconds();
        let _servers = servers(meet, &[&sender, &receiver], t);
        let plan = Plan {
            sender_after: 1.25,
            ..Plan::default()
        };
        let out = call(meet, &sender, &receiver, t, plan);
        let (flows_a, flows_b) = (meet.conntrack(&nat_a), meet.conntrack(&nat_b));
        out.print(
            name,
            expected(t),
            &conntrack_figures(&[("A", &flows_a), ("B", &flows_b)]),
        );
        assert_met_directly(name, &out);
        assert_call(name, &out, t, 0.85);
        assert_servers_carried_no_media(name, &out);
    });
}

/// As the first, plus a stranger on the core that gets a copy of every datagram the core
/// forwards and, during the call, replays each (and older ones again) from its own address,
/// registers at the rendezvous under random ids and under the peers' id with junk
/// introductions, and sends garbage to the rendezvous and to every port it saw in use on the
/// NATs' outside addresses. Both NATs let anyone reach their host's mapped ports (a "full
/// cone", as many home NATs), so all of it reaches the peers. Nothing may move: the peers
/// meet directly, in one session, neither moves, and the stranger gets no media (under 2 kB
/// from the peers, no datagram over 200 bytes).
#[test]
fn strangers_at_the_rendezvous_move_nothing() {
    let name = "strangers_at_the_rendezvous_move_nothing";
    scenario(name, |meet| {
        let (nat_a, sender) = meet.behind_nat_a();
        let (nat_b, receiver) = meet.behind_nat_b();
        meet.full_cone(&nat_a);
        meet.full_cone(&nat_b);
        let t = seconds();
        let _servers = servers(meet, &[&sender, &receiver], t);
        let stranger = meet.stranger(t + 30.0);
        let out = call(meet, &sender, &receiver, t, Plan::default());
        let got = meet.stranger_stats(&stranger);
        let c = out.counts;
        out.print(
            name,
            expected(t),
            &format!(
                ", stranger replayed {} datagrams ({} bytes, {} late), registered {} random {} peer-id ({} ids seen, {} answers), garbage {} ({} bytes), got back from the peers {} datagrams ({} bytes, largest {}), peers to stranger {} packets ({} bytes, {} over 200 bytes), rendezvous to stranger {} bytes for {}",
                got.get("replayed"),
                got.get("replayed_bytes"),
                got.get("late_replayed"),
                got.get("registered_random"),
                got.get("registered_peer_id"),
                got.get("peer_ids"),
                got.get("rendezvous_answers"),
                got.get("garbage"),
                got.get("garbage_bytes"),
                got.get("peers_back"),
                got.get("peers_back_bytes"),
                got.get("peers_back_max"),
                c.to_stranger_packets,
                c.to_stranger_bytes,
                c.to_stranger_big,
                got.get("rendezvous_back_bytes"),
                got.get("to_rendezvous_bytes"),
            ),
        );
        // The stranger did what it is for (so the rest is not true for want of trying).
        assert!(
            got.get("replayed") as f64 >= 5.0 * t,
            "{name}: the stranger replayed only {} datagrams: the copies did not reach it",
            got.get("replayed")
        );
        assert!(
            got.get("registered_random") + got.get("registered_peer_id") >= t as u64
                && got.get("garbage") >= t as u64,
            "{name}: the stranger registered or sent garbage too little: {got:?}"
        );
        // No media went to it, by its own count and by the core's (which counts datagrams to
        // ports of the stranger that no socket reads, too).
        assert!(
            got.get("peers_back_bytes") < 2000
                && got.get("peers_back_max") <= 200
                && c.to_stranger_big == 0,
            "{name}: the stranger got {} datagrams from the peers ({} bytes, largest {}; the \
             core forwarded {} over 200 bytes to it): media went to it\n{}",
            got.get("peers_back"),
            got.get("peers_back_bytes"),
            got.get("peers_back_max"),
            c.to_stranger_big,
            out.logs()
        );
        assert_met_directly(name, &out);
        assert_eq!(out.moves, 0, "{name}: a side moved\n{}", out.logs());
        assert_call(name, &out, t, 0.85);
    });
}

/// Both NATs map every destination to a new random port (address-and-port-dependent, as
/// carrier-grade and many corporate NATs): no direct path can be found, so the peers relay
/// through coturn as a TURN server (`--turn`, with its user).
#[test]
fn both_behind_symmetric_nats_relay_through_turn() {
    let name = "both_behind_symmetric_nats_relay_through_turn";
    scenario(name, |meet| {
        let (nat_a, sender) = meet.behind_nat_a();
        let (nat_b, receiver) = meet.behind_nat_b();
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        // The NATs really are symmetric: one inside socket, two destinations, two ports.
        for (host, nat) in [(&sender, NAT_A_OUTSIDE), (&receiver, NAT_B_OUTSIDE)] {
            let ports = two_destinations(meet, host, 5555);
            assert!(
                ports[0].0 == nat && ports[1].0 == nat && ports[0].1 != ports[1].1,
                "{name}: the NAT of {} is not symmetric: {ports:?}",
                host.addr
            );
        }
        let t = seconds();
        let _servers = servers(meet, &[&sender, &receiver], t);
        let plan = Plan {
            turn: true,
            ..Plan::default()
        };
        let out = call(meet, &sender, &receiver, t, plan);
        out.print(name, expected(t), "");
        assert!(
            [&out.send_met, &out.recv_met]
                .iter()
                .any(|m| m.as_ref().is_some_and(|m| m.relayed)),
            "{name}: no side printed a `met` line saying `relayed`\n{}",
            out.logs()
        );
        assert_call(name, &out, t, 0.8);
    });
}

/// Where two datagrams from one inside port of `host` to two ports of the servers' host
/// arrive from (`ip`, `port` each).
fn two_destinations(meet: &mut Meet, host: &Host, port: u16) -> Vec<(String, u16)> {
    let to = meet.servers(RENDEZVOUS);
    [9101, 9102]
        .into_iter()
        .map(|dport| {
            let c = meet.udp_cross(host, port, &to, dport, 100, false);
            let from = c.arrived.first().map(|a| a.0.clone()).unwrap_or_default();
            let (ip, p) = from.rsplit_once(':').unwrap_or(("", "0"));
            (ip.to_string(), p.parse().unwrap_or(0))
        })
        .collect()
}

/// The harness itself, checked before any call relies on it (and without the meeting code):
/// coturn answers STUN from behind each NAT with the NAT's address and the inside port, a
/// port-preserving NAT maps one socket's datagrams to two destinations to one port, the
/// core's counters count the servers' traffic, the stranger replays, registers, sends
/// garbage and counts what the peers answer, a symmetric NAT maps two destinations to two
/// ports, and two TURN clients behind symmetric NATs reach each other through coturn.
#[test]
fn meet_harness_works() {
    let name = "meet_harness_works";
    scenario(name, |meet| {
        let (nat_a, host_a) = meet.behind_nat_a();
        let (nat_b, host_b) = meet.behind_nat_b();
        let _coturn = meet.coturn();
        // STUN from behind each NAT: the NAT's outside address, the inside port kept. The
        // core counts the Binding request and answer.
        let before = meet.counts();
        let mapped = meet.stun(&host_a, 40001);
        assert_eq!(mapped.as_deref(), Some("203.0.113.18:40001"));
        let mapped = meet.stun(&host_b, 40002);
        assert_eq!(mapped.as_deref(), Some("203.0.113.34:40002"));
        let c = meet.counts().since(&before);
        assert!(
            c.peers_servers_packets >= 4 && c.peers_servers_bytes >= 4 * 48,
            "the core's counters: {c:?}"
        );
        assert_eq!(c.servers_bytes, c.peers_servers_bytes, "{c:?}");
        // Port-preserving: two destinations, one outside port (the inside one).
        let ports = two_destinations(meet, &host_a, 5555);
        assert_eq!(
            ports,
            [
                ("203.0.113.18".to_string(), 5555),
                ("203.0.113.18".to_string(), 5555)
            ]
        );
        // The case of `conntrack_port_change_still_meets`: host A's datagram to host B's
        // mapping arrives at NAT B before host B has sent anything to host A; NAT B tracks it
        // as a flow of its own, so host B's datagram to host A (the reply tuple of that flow)
        // leaves from a new port, which NAT A does not let in.
        let first = meet.knock("knock-a", &host_a, 7001, NAT_B_OUTSIDE, 7002, 1.5);
        std::thread::sleep(Duration::from_millis(300));
        let second = meet.knock("knock-b", &host_b, 7002, NAT_A_OUTSIDE, 7001, 1.0);
        meet.wait(&first, Duration::from_secs(5));
        meet.wait(&second, Duration::from_secs(5));
        let flows = meet.conntrack(&nat_b);
        let peer_first = Flow {
            src: "203.0.113.18:7001".into(),
            dst: "203.0.113.34:7002".into(),
            reply_src: "203.0.113.34:7002".into(),
            reply_dst: "203.0.113.18:7001".into(),
            unreplied: true,
        };
        assert!(flows.contains(&peer_first), "NAT B: {flows:#?}");
        let moved = flows
            .iter()
            .find(|f| f.src == "198.51.100.10:7002" && f.dst == "203.0.113.18:7001")
            .and_then(Flow::changed_port);
        assert!(
            moved.is_some_and(|(inside, _)| inside == 7002),
            "NAT B kept host B's port: {flows:#?}"
        );
        for knock in [&first, &second] {
            let heard = read(&knock.log);
            assert!(!heard.contains("from "), "{}: {heard}", knock.label);
        }
        println!(
            "nat-meet: {name}: the peer's datagram first: NAT B mapped host B's port 7002 to {}",
            moved.unwrap().1
        );
        // The stranger: host B (behind a full cone) knocks at the rendezvous's address; the
        // stranger, from the copy, replays the knock there and sends garbage to the knock's
        // outside port, whose socket answers each with 3 bytes, to the stranger. A STUN
        // Binding from host A, replayed by the stranger, draws coturn's answer to it.
        meet.full_cone(&nat_b);
        let before = meet.counts();
        let stranger = meet.stranger(30.0);
        let knock = meet.knock("knock", &host_b, 6666, RENDEZVOUS, RENDEZVOUS_PORT, 2.0);
        assert!(meet.stun(&host_a, 40003).is_some());
        meet.wait(&knock, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(300));
        let got = meet.stranger_stats(&stranger);
        let c = meet.counts().since(&before);
        let heard = read(&knock.log);
        assert!(
            heard.contains(&format!("from {STRANGER}:")),
            "the knock heard nothing from the stranger:\n{heard}\n{got:?}"
        );
        for key in [
            "seen",
            "replayed",
            "registered_random",
            "garbage",
            "stun_back",
            "peers_back",
            "endpoints",
        ] {
            assert!(got.get(key) >= 1, "stranger: {key} is 0: {got:?}");
        }
        assert_eq!(got.get("peers_back_max"), 3, "{got:?}");
        assert!(got.get("endpoints") >= 2, "{got:?}");
        assert_eq!(
            c.to_stranger_packets,
            got.get("peers_back"),
            "{c:?} {got:?}"
        );
        assert_eq!(c.to_stranger_big, 0, "{c:?}");
        // Symmetric: one inside socket, two destinations, two outside ports; STUN's mapped
        // port is then of no use to a peer.
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        for (host, nat) in [(&host_a, NAT_A_OUTSIDE), (&host_b, NAT_B_OUTSIDE)] {
            let ports = two_destinations(meet, host, 5556);
            assert!(
                ports[0].0 == nat && ports[1].0 == nat && ports[0].1 != ports[1].1,
                "not symmetric: {ports:?}"
            );
        }
        let mapped = meet.stun(&host_a, 40004).unwrap();
        assert!(
            mapped.starts_with("203.0.113.18:") && mapped != "203.0.113.18:40004",
            "{mapped}"
        );
        // TURN across the two symmetric NATs: allocations with the user, a permission each,
        // and a datagram relayed there and back.
        let relay = meet.turn_relay(&host_b, &host_a);
        assert!(
            relay.echo_line.starts_with(&format!("relayed {TURN}:"))
                && relay.echo_line.contains(" mapped 203.0.113.34:"),
            "{relay:?}"
        );
        assert_eq!(relay.echo_heard.len(), 1, "{relay:?}");
        assert!(
            relay.echo_heard[0].starts_with(&format!("data from {TURN}:")),
            "{relay:?}"
        );
        let echo_relayed = relay.echo_line.split_whitespace().nth(1).unwrap();
        assert!(
            relay
                .ping_out
                .contains(&format!("echo from {echo_relayed} echo:ping")),
            "{relay:?}"
        );
        println!(
            "nat-meet: {name}: STUN, counters, stranger ({} replayed, {} registrations, {} garbage, {} answers from the knock), symmetric NATs and a TURN relay ({}) work",
            got.get("replayed"),
            got.get("registered_random") + got.get("registered_peer_id"),
            got.get("garbage"),
            got.get("peers_back"),
            relay.echo_line
        );
    });
}
