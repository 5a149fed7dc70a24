//! Two-way calls across NATs: `salsify call --via` on both sides, encrypted, each behind its
//! own NAT in Linux network namespaces, met through the rendezvous with coturn for STUN:
//! directly through port-preserving NATs, relayed through coturn between two symmetric NATs,
//! and, between symmetric NATs without `--turn`, a start that fails within 15 s naming the
//! relay it needs; and two faults a call meets again through: the TURN server restarted
//! during a relayed call, a NAT's mappings flushed during a direct one. Each direction of a
//! call must show most of its pictures, over one meeting and one session. The topology is `support/netns.rs` and `support/netns_meet.rs`'s;
//! documentation addresses only. Needs what `nat_meet.rs` needs (skipped without it, unless
//! SALSIFY_REQUIRE_NETNS=1); each prints `nat-call: SCENARIO: ...` with its figures.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/netns.rs"]
mod netns;
#[path = "support/netns_meet.rs"]
mod netns_meet;
mod support;

use netns::{seconds, Host, FPS};
use netns_meet::{Meet, RENDEZVOUS, RENDEZVOUS_PORT, TURN, TURN_PASSWORD, TURN_PORT, TURN_USER};

/// Runs `body` on a fresh net (one test at a time), or skips it; checks no namespace is left.
fn scenario(name: &str, body: impl FnOnce(&mut Meet)) {
    netns_meet::scenario("nat-call", name, body);
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
fn side(me: &str, peer: &str, seconds: f64, turn: bool) -> Vec<String> {
    let via = format!("{RENDEZVOUS}:{RENDEZVOUS_PORT}");
    let stun = format!("{TURN}:{TURN_PORT}");
    let mut args: Vec<String> = [
        support::SALSIFY,
        "call",
        "--via",
        &via,
        "--stun",
        &stun,
        "--key",
        &format!("{me}.key"),
        "--peer-key",
        &format!("{peer}.pub"),
        "--duration",
        &format!("{seconds:.1}"),
    ]
    .map(String::from)
    .to_vec();
    if turn {
        let turn = format!("turn:{TURN}:{TURN_PORT}");
        let t = [
            "--turn",
            &turn,
            "--turn-user",
            TURN_USER,
            "--turn-password",
            TURN_PASSWORD,
        ];
        args.extend(t.map(String::from));
    }
    args
}

/// What one side printed: frames shown of its peer, sessions, and its `met` line.
struct Side {
    shown: u64,
    sessions: u64,
    met: Option<String>,
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
    Side {
        shown: number_before(" frames shown"),
        sessions: number_before(" sessions"),
        met: log
            .lines()
            .find(|l| l.contains(": met the peer at "))
            .map(str::to_string),
        ok,
        log,
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A call of `seconds` between `a` and `b`, both through the rendezvous.
fn call(meet: &mut Meet, a: &Host, b: &Host, seconds: f64, turn: bool) -> (Side, Side) {
    call_with_fault(meet, (a, b), seconds, turn, 0.0, |_| {})
}

/// Each direction showed at least `share` of a clean call's pictures, over one session, and
/// both sides ended well and met as `how` says.
fn assert_both_ways(name: &str, a: &Side, b: &Side, seconds: f64, share: f64, how: &str) {
    let want = share * FPS * seconds;
    for (who, s) in [("a", a), ("b", b)] {
        assert!(s.ok, "{name}: {who} failed\n{}", s.log);
        assert!(
            s.shown as f64 >= want,
            "{name}: {who} showed {} of its peer's frames, wanted {want:.0}\n{}",
            s.shown,
            s.log
        );
        assert_eq!(s.sessions, 1, "{name}: {who}\n{}", s.log);
        let met = s.met.as_deref().unwrap_or("");
        assert!(
            met.contains(how),
            "{name}: {who} met {met:?}, wanted {how}\n{}",
            s.log
        );
    }
}

#[test]
fn a_two_way_call_behind_port_preserving_nats_goes_direct() {
    let name = "a_two_way_call_behind_port_preserving_nats_goes_direct";
    scenario(name, |meet| {
        let (_nat_a, a) = meet.behind_nat_a();
        let (_nat_b, b) = meet.behind_nat_b();
        let t = seconds();
        let _servers = set_up(meet, t);
        let (sa, sb) = call(meet, &a, &b, t, false);
        println!(
            "nat-call: {name}: a showed {}, b showed {} of {:.0}",
            sa.shown,
            sb.shown,
            FPS * t
        );
        assert_both_ways(name, &sa, &sb, t, 0.8, "(direct)");
    });
}

#[test]
fn a_two_way_call_between_symmetric_nats_relays_through_turn() {
    let name = "a_two_way_call_between_symmetric_nats_relays_through_turn";
    scenario(name, |meet| {
        let (nat_a, a) = meet.behind_nat_a();
        let (nat_b, b) = meet.behind_nat_b();
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        let t = seconds();
        let _servers = set_up(meet, t);
        let (sa, sb) = call(meet, &a, &b, t, true);
        println!(
            "nat-call: {name}: a showed {}, b showed {} of {:.0}",
            sa.shown,
            sb.shown,
            FPS * t
        );
        assert_both_ways(name, &sa, &sb, t, 0.7, "(relayed)");
    });
}

/// A call ended and made again at once through the same rendezvous, which still lists the
/// first call's registrations (idle for up to 30 s): the second meets the live run of each
/// side, not the first call's (a process gone), and shows pictures both ways.
#[test]
fn a_call_made_again_at_once_meets_the_new_run() {
    let name = "a_call_made_again_at_once_meets_the_new_run";
    scenario(name, |meet| {
        let (_nat_a, a) = meet.behind_nat_a();
        let (_nat_b, b) = meet.behind_nat_b();
        let t = 4.0;
        let _servers = set_up(meet, 3.0 * t + 60.0);
        let first = call(meet, &a, &b, t, false);
        let (sa, sb) = call(meet, &a, &b, t, false);
        println!(
            "nat-call: {name}: first call {} / {}, second {} / {} of {:.0}",
            first.0.shown,
            first.1.shown,
            sa.shown,
            sb.shown,
            FPS * t
        );
        assert_both_ways(name, &first.0, &first.1, t, 0.5, "(direct)");
        assert_both_ways(name, &sa, &sb, t, 0.5, "(direct)");
    });
}

/// Symmetric NATs and no `--turn`: the rendezvous introduces the peers, no check gets
/// through, and both sides fail within 15 s, saying a relay is needed.
#[test]
fn symmetric_nats_without_turn_fail_soon_naming_a_relay() {
    let name = "symmetric_nats_without_turn_fail_soon_naming_a_relay";
    scenario(name, |meet| {
        let (nat_a, a) = meet.behind_nat_a();
        let (nat_b, b) = meet.behind_nat_b();
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        let _servers = set_up(meet, 20.0);
        let started = Instant::now();
        let (sa, sb) = call(meet, &a, &b, 20.0, false);
        let took = started.elapsed();
        println!(
            "nat-call: {name}: both ended in {:.1} s",
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(17), "{name}: took {took:?}");
        for (who, s) in [("a", &sa), ("b", &sb)] {
            assert!(!s.ok, "{name}: {who} exited 0\n{}", s.log);
            assert!(
                s.log.contains("introduced the peer") && s.log.contains("needs a relay (--turn"),
                "{name}: {who}\n{}",
                s.log
            );
        }
    });
}

/// The longest gap between two pictures a side showed during a call (`--out`'s
/// `received.csv`, display times in µs on one clock) and the span from its first picture
/// to its last, in seconds.
fn longest_gap(received_csv: &Path) -> (f64, f64) {
    let mut shown: Vec<f64> = received_rows(received_csv, &["display_us"])
        .into_iter()
        .map(|r| r[0])
        .collect();
    shown.sort_by(f64::total_cmp);
    let gap = shown
        .windows(2)
        .map(|w| (w[1] - w[0]) / 1e6)
        .fold(0.0, f64::max);
    let span = match (shown.first(), shown.last()) {
        (Some(first), Some(last)) => (last - first) / 1e6,
        _ => 0.0,
    };
    (gap, span)
}

/// The rows of a `received.csv` (`recv --log`'s columns), each the values of `columns` in
/// that order; rows missing one are left out, and a file without a column has none.
fn received_rows(received_csv: &Path, columns: &[&str]) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(received_csv).unwrap_or_default();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let Some(at): Option<Vec<usize>> = columns
        .iter()
        .map(|c| header.iter().position(|h| h == c))
        .collect()
    else {
        return Vec::new();
    };
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            at.iter().map(|&i| f.get(i)?.parse().ok()).collect()
        })
        .collect()
}

/// A call of `seconds` between `a` and `b` (each writing `--out a-out` / `b-out`), with
/// `fault` done `fault_at` seconds after both started.
fn call_with_fault(
    meet: &mut Meet,
    (a, b): (&Host, &Host),
    seconds: f64,
    turn: bool,
    fault_at: f64,
    fault: impl FnOnce(&mut Meet),
) -> (Side, Side) {
    let mut b_args = side("b", "a", seconds + 2.0, turn);
    b_args.extend(["--out".to_string(), "b-out".to_string()]);
    let mut a_args = side("a", "b", seconds, turn);
    a_args.extend(["--out".to_string(), "a-out".to_string()]);
    let pb = meet.spawn(&b.ns, "b", &strs(&b_args));
    let pa = meet.spawn(&a.ns, "a", &strs(&a_args));
    std::thread::sleep(Duration::from_secs_f64(fault_at));
    fault(meet);
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

/// Both sides met the peer again after the fault and went on in the one secure session
/// (the video may start a second session with a keyframe after seconds without feedback,
/// by design), with no gap in either direction's pictures longer than `max_gap` seconds;
/// prints the gaps. Pictures must go on until 3 s before the call's end (`seconds`): a
/// call that never came back has no long gap, only an early last picture.
fn assert_recovered(meet: &Meet, name: &str, sides: (&Side, &Side), seconds: f64, max_gap: f64) {
    let gaps: Vec<(f64, f64)> = ["a-out", "b-out"]
        .iter()
        .map(|d| longest_gap(&meet.dir.join(d).join("received.csv")))
        .collect();
    println!(
        "nat-call: {name}: longest gap in pictures {:.2} s (a) / {:.2} s (b); pictures over {:.1} / {:.1} s",
        gaps[0].0, gaps[1].0, gaps[0].1, gaps[1].1
    );
    for ((who, s), (gap, span)) in [("a", sides.0), ("b", sides.1)].into_iter().zip(&gaps) {
        assert!(s.ok, "{name}: {who} failed\n{}", s.log);
        assert!(s.sessions <= 2, "{name}: {who}\n{}", s.log);
        assert!(
            s.log.contains("met the peer again at"),
            "{name}: {who} did not meet the peer again\n{}",
            s.log
        );
        assert!(*gap < max_gap, "{name}: {who}: gap {gap:.2} s\n{}", s.log);
        assert!(
            *span >= seconds - 3.0,
            "{name}: {who}: pictures over {span:.1} s of {seconds:.1}\n{}",
            s.log
        );
    }
}

/// The TURN server killed and started again during a relayed call (the allocations gone
/// with it): both sides hear nothing for 3 s, meet again through the rendezvous with new
/// allocations, and the call goes on in its session; pictures again within 6 s of the
/// kill (3 s of silence, the meeting, the relay's settling).
#[test]
fn a_relayed_call_survives_its_turn_server_restarting() {
    let name = "a_relayed_call_survives_its_turn_server_restarting";
    scenario(name, |meet| {
        let (nat_a, a) = meet.behind_nat_a();
        let (nat_b, b) = meet.behind_nat_b();
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        let t = seconds().max(8.0) + 8.0;
        let (coturn, _rendezvous) = set_up(meet, t);
        let (sa, sb) = call_with_fault(meet, (&a, &b), t, true, 4.0, |meet| {
            meet.kill(&coturn);
            meet.coturn(); // ended with the net
        });
        assert_recovered(meet, name, (&sa, &sb), t, 6.0);
    });
}

/// Flushes `nat`'s connection tracking while its LAN host's datagrams are held back for
/// 300 ms, so the peer's datagrams arrive first (a router restarting): they are tracked as
/// flows to the NAT itself, on the outside port the host had.
fn forget_mappings(meet: &mut Meet, nat: &netns::Nat) {
    meet.nft(
        &nat.ns,
        "table ip slsf_fault {\n\
         \tchain forward {\n\
         \t\ttype filter hook forward priority -10; policy accept;\n\
         \t\tiifname \"lan\" drop\n\
         \t}\n\
         }\n",
    );
    meet.exec(&nat.ns, &["conntrack", "-F"]);
    std::thread::sleep(Duration::from_millis(300));
    meet.exec(&nat.ns, &["nft", "delete", "table", "ip", "slsf_fault"]);
}

/// A NAT's mappings flushed (conntrack -F) during a direct call: the peer's datagrams,
/// still arriving, pin the old outside port (conntrack keeps their flow), so this side's
/// next flow to the peer leaves from another port, which the peer's NAT drops, and no
/// direct pair can work until the peer stops sending there (measured: without `--turn`
/// the meetings again find nothing and the call ends after 10 s). With `--turn` on both
/// sides they meet again through the relay and go on.
#[test]
fn a_direct_call_with_turn_survives_its_nat_forgetting_its_mappings() {
    let name = "a_direct_call_with_turn_survives_its_nat_forgetting_its_mappings";
    scenario(name, |meet| {
        let (nat_a, a) = meet.behind_nat_a();
        let (_nat_b, b) = meet.behind_nat_b();
        let t = seconds().max(8.0) + 8.0;
        let _servers = set_up(meet, t);
        let (sa, sb) = call_with_fault(meet, (&a, &b), t, true, 4.0, |meet| {
            forget_mappings(meet, &nat_a);
        });
        assert_recovered(meet, name, (&sa, &sb), t, 6.0);
    });
}

/// The resident memory of process `pid` in kB (0 once it is gone).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Per-minute frames and delay (mean, p95, in ms) of a `received.csv`, by display time.
fn delay_by_minute(received_csv: &Path) -> Vec<(usize, f64, f64)> {
    let rows: Vec<(f64, f64)> = received_rows(received_csv, &["display_us", "delay_us"])
        .into_iter()
        .map(|r| (r[0], r[1]))
        .collect();
    let Some(t0) = rows.iter().map(|r| r.0).reduce(f64::min) else {
        return Vec::new();
    };
    let mut minutes: Vec<Vec<f64>> = Vec::new();
    for (t, d) in rows {
        let m = ((t - t0) / 60e6) as usize;
        if minutes.len() <= m {
            minutes.resize(m + 1, Vec::new());
        }
        minutes[m].push(d / 1e3);
    }
    minutes
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
            let p95 = d
                .get((0.95 * (d.len().max(1) - 1) as f64) as usize)
                .copied();
            (d.len(), mean, p95.unwrap_or(f64::NAN))
        })
        .collect()
}

/// The median of `v` (NaN when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A relayed call's soak, run by `scripts/soak --relayed` (ignored by `cargo test`): a
/// two-way call through coturn between two symmetric NATs, encrypted, with synthetic audio
/// and ten ordered data messages a second each way, for SALSIFY_SOAK_MINUTES (default 10).
/// Every 10 s it records the resident memory of both sides and of coturn; at the end it
/// writes `memory.csv`, `per-minute.csv` (each direction's frames and delay) and
/// `soak.txt` to SALSIFY_SOAK_OUT (default `results/soak/relayed`), and fails when a
/// side's memory grew (its last window's largest resident set over its first's by more
/// than 10% and 2 MB), the data did not all arrive in order, or a direction's pictures
/// stopped.
#[test]
#[ignore = "a soak of minutes: scripts/soak --relayed"]
fn a_relayed_call_soaks() {
    let name = "a_relayed_call_soaks";
    let minutes: u64 = std::env::var("SALSIFY_SOAK_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .filter(|m| *m >= 3)
        .unwrap_or(10);
    let out = std::env::var_os("SALSIFY_SOAK_OUT").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/soak/relayed"),
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&out).unwrap();
    scenario(name, |meet| {
        let (nat_a, a) = meet.behind_nat_a();
        let (nat_b, b) = meet.behind_nat_b();
        meet.symmetric(&nat_a);
        meet.symmetric(&nat_b);
        let seconds = (minutes * 60) as f64;
        let (coturn, _rendezvous) = set_up(meet, seconds);
        let commands: String = (0..minutes * 600)
            .map(|i| format!("command {i}\n"))
            .collect();
        std::fs::write(meet.dir.join("commands.txt"), &commands).unwrap();
        let args = |me: &str, peer: &str, secs: f64| {
            let mut v = side(me, peer, secs, true);
            let extra = [
                "--size",
                "320x180",
                "--audio",
                "synthetic",
                "--data-in",
                "commands.txt",
                "--data-out",
                &format!("{me}-got.txt"),
                "--out",
                &format!("{me}-out"),
                "-q",
            ];
            v.extend(extra.map(String::from));
            v
        };
        let pb = meet.spawn(&b.ns, "b", &strs(&args("b", "a", seconds + 2.0)));
        let pa = meet.spawn(&a.ns, "a", &strs(&args("a", "b", seconds)));
        let started = Instant::now();
        let mut memory = String::from("t_s,a_rss_kb,b_rss_kb,coturn_rss_kb\n");
        let mut samples: Vec<(f64, [u64; 3])> = Vec::new();
        while meet.exited(&pa).is_none() && started.elapsed().as_secs_f64() < seconds + 25.0 {
            let t = started.elapsed().as_secs_f64();
            let rss = [rss_kb(pa.pid), rss_kb(pb.pid), rss_kb(coturn.pid)];
            memory += &format!("{t:.0},{},{},{}\n", rss[0], rss[1], rss[2]);
            samples.push((t, rss));
            if samples.len().is_multiple_of(30) {
                println!("nat-call: {name}: {:.0} of {minutes} min", t / 60.0);
            }
            std::thread::sleep(Duration::from_secs(10));
        }
        let a_status = meet.wait(&pa, Duration::from_secs(25));
        let b_status = meet.wait(&pb, Duration::from_secs(10));
        meet.kill(&pa);
        meet.kill(&pb);
        std::fs::write(out.join("memory.csv"), &memory).unwrap();
        let ok = |s: Option<std::process::ExitStatus>| s.is_some_and(|s| s.success());
        let (sa, sb) = (
            read_side(&pa.log, ok(a_status)),
            read_side(&pb.log, ok(b_status)),
        );
        for (who, log) in [("a", &pa.log), ("b", &pb.log)] {
            let _ = std::fs::copy(log, out.join(format!("{who}.log")));
        }
        let report = soak_report(meet, &out, minutes, &samples, (&sa, &sb));
        std::fs::write(out.join("soak.txt"), report.join("\n") + "\n").unwrap();
        for line in &report {
            println!("nat-call: {name}: {line}");
        }
    });
}

/// Writes `per-minute.csv` and returns the soak's report lines; asserts what
/// [`a_relayed_call_soaks`] promises.
fn soak_report(
    meet: &Meet,
    out: &Path,
    minutes: u64,
    samples: &[(f64, [u64; 3])],
    (sa, sb): (&Side, &Side),
) -> Vec<String> {
    let span = (minutes.saturating_sub(1) / 2).clamp(1, 10) as f64;
    let last = minutes as f64;
    let window = |lo: f64, hi: f64, k: usize| {
        let v = samples
            .iter()
            .filter(|(t, r)| *t >= lo * 60.0 && *t < hi * 60.0 && r[k] > 0)
            .map(|(_, r)| r[k]);
        v.max().unwrap_or(0) as f64 / 1024.0
    };
    let mut report = vec![format!(
        "soak: {minutes} min, a relayed call through coturn between two symmetric NATs, 320x180, \
         encrypted, audio synthetic, 10 ordered commands/s each way; exits a {} b {}",
        sa.ok, sb.ok
    )];
    let mut grew = Vec::new();
    for (k, who) in ["a", "b", "coturn"].iter().enumerate() {
        let (early, late) = (window(1.0, 1.0 + span, k), window(last - span, last, k));
        report.push(format!(
            "{who} memory: {early:.1} MB in minutes 1-{:.0}, {late:.1} MB in the last {span:.0}",
            1.0 + span
        ));
        if k < 2 && late > early * 1.1 && late > early + 2.0 {
            grew.push(format!("{who} {early:.1} -> {late:.1} MB"));
        }
    }
    let commands = std::fs::read_to_string(meet.dir.join("commands.txt")).unwrap();
    let mut csv = String::from("direction,minute,frames,delay_mean_ms,delay_p95_ms\n");
    let mut stopped = Vec::new();
    for (who, side) in [("a", sa), ("b", sb)] {
        let got =
            std::fs::read_to_string(meet.dir.join(format!("{who}-got.txt"))).unwrap_or_default();
        let data = if got == commands {
            format!(
                "all {} commands delivered in order",
                commands.lines().count()
            )
        } else {
            format!(
                "{} of {} commands (or out of order)",
                got.lines().count(),
                commands.lines().count()
            )
        };
        let per_minute = delay_by_minute(&meet.dir.join(format!("{who}-out/received.csv")));
        for (m, (frames, mean, p95)) in per_minute.iter().enumerate() {
            csv += &format!("to {who},{m},{frames},{mean:.1},{p95:.1}\n");
        }
        let p95 = |r: std::ops::Range<usize>| {
            median(
                per_minute
                    .get(r)
                    .unwrap_or(&[])
                    .iter()
                    .map(|m| m.2)
                    .collect(),
            )
        };
        let n = per_minute.len();
        let s = span as usize;
        report.push(format!(
            "to {who}: {} frames shown, {} sessions; delay p95 (median of per-minute p95s) \
             {:.1} ms in minutes 1-{}, {:.1} ms in the last {s}; {data}",
            side.shown,
            side.sessions,
            p95(1..1 + s),
            1 + s,
            p95(n.saturating_sub(s)..n),
        ));
        if n + 1 < minutes as usize || got != commands {
            stopped.push(format!("to {who}: {n} minutes of pictures; {data}"));
        }
    }
    std::fs::write(out.join("per-minute.csv"), csv).unwrap();
    assert!(sa.ok && sb.ok, "a soak side failed\n{}\n{}", sa.log, sb.log);
    assert!(grew.is_empty(), "memory grew: {grew:?}\n{report:#?}");
    assert!(stopped.is_empty(), "{stopped:?}\n{report:#?}");
    report
}

/// The pictures `salsify recv` showed, from its closing line.
fn recv_shown(log: &Path) -> u64 {
    let log = std::fs::read_to_string(log).unwrap_or_default();
    log.lines()
        .find_map(|l| {
            l.strip_prefix("salsify recv: ")?
                .split_once(" frames shown, ")
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

/// A one-way call of `seconds` from `from` to `to` through the rendezvous (`send --via` and
/// `recv --via`, the keys of the two-way calls), with TURN when `turn`: the pictures shown.
fn one_way(
    meet: &mut Meet,
    (from, to): (&Host, &Host),
    names: (&str, &str),
    seconds: f64,
    turn: bool,
) -> u64 {
    let args = |command: &str, me: &str, peer: &str, secs: f64| {
        let mut v = side(me, peer, secs, turn);
        v[1] = command.to_string();
        v
    };
    let (me, peer) = names;
    let pr = meet.spawn(
        &to.ns,
        &format!("recv-{peer}"),
        &strs(&args("recv", peer, me, seconds + 2.0)),
    );
    let ps = meet.spawn(
        &from.ns,
        &format!("send-{me}"),
        &strs(&args("send", me, peer, seconds)),
    );
    meet.wait(&ps, Duration::from_secs_f64(seconds + 25.0));
    meet.wait(&pr, Duration::from_secs(10));
    meet.kill(&ps);
    meet.kill(&pr);
    let shown = recv_shown(&pr.log);
    if shown == 0 {
        for log in [&ps.log, &pr.log] {
            println!(
                "--- {}:\n{}",
                log.display(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
    }
    shown
}

/// Each direction of a two-way call against a one-way call over the same path, both met
/// through the rendezvous, 640x360 at 30 fps (the default), SALSIFY_NAT_SECONDS long
/// (default 8; issue 54's bar is 20 s at 0.95x): behind port-preserving NATs (direct) and
/// between symmetric NATs through TURN (relayed). Prints the ratios; ignored by `cargo test`
/// (about four calls a path): `cargo test -p salsify --test nat_call -- --ignored
/// two_way_against_one_way --nocapture`.
#[test]
#[ignore = "a measurement: several calls per path"]
fn two_way_against_one_way() {
    for relayed in [false, true] {
        let name = if relayed {
            "two_way_against_one_way_relayed"
        } else {
            "two_way_against_one_way_direct"
        };
        scenario(name, |meet| {
            let (nat_a, a) = meet.behind_nat_a();
            let (nat_b, b) = meet.behind_nat_b();
            if relayed {
                meet.symmetric(&nat_a);
                meet.symmetric(&nat_b);
            }
            let t = seconds();
            let _servers = set_up(meet, 4.0 * t + 120.0);
            let a_to_b = one_way(meet, (&a, &b), ("a", "b"), t, relayed);
            let b_to_a = one_way(meet, (&b, &a), ("b", "a"), t, relayed);
            let (sa, sb) = call(meet, &a, &b, t, relayed);
            println!(
                "nat-call: {name}: {t:.0} s: a to b {} two-way / {a_to_b} one-way = {:.3}; b to a {} / {b_to_a} = {:.3}",
                sb.shown,
                sb.shown as f64 / a_to_b.max(1) as f64,
                sa.shown,
                sa.shown as f64 / b_to_a.max(1) as f64,
            );
            assert!(
                a_to_b > 0 && b_to_a > 0,
                "{name}: a one-way call showed nothing"
            );
            assert!(
                sa.ok && sb.ok,
                "{name}: a two-way side failed\n{}\n{}",
                sa.log,
                sb.log
            );
        });
    }
}
