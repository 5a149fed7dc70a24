//! Real networks for the end-to-end tests of `nat_paths.rs`: Linux network namespaces joined
//! by veth pairs, a core router standing for the Internet, NAT boxes masquerading with
//! nftables, and what a hostile path does to a call: a NAT that gives the call a new mapping,
//! a router with a smaller MTU that drops ICMP and fragments, a stranger that replays every
//! datagram it sees.
//!
//! The topology, every address from the documentation ranges (RFC 5737):
//!
//! ```text
//!                       core (router, ip_forward; all of 203.0.113.0/24)
//!     p  203.0.113.1/28   na 203.0.113.17/28   nb 203.0.113.33/28   s 203.0.113.65/28
//!        |                   |                    |                    |
//!   public host         NAT A: out .18/28     NAT B: out .34/28    stranger .66/28
//!   203.0.113.10        in 192.0.2.1/24       in 198.51.100.1/24   (copies of every UDP
//!                            |                    |                 datagram the core
//!                       host 192.0.2.10       host 198.51.100.10    forwards, `dup to`)
//! ```
//!
//! The core has no route to 192.0.2.0/24 or 198.51.100.0/24: the hosts behind the NATs reach
//! the core only through their NAT's masquerading. Nothing here touches the root namespace:
//! every veth is created with both ends already inside namespaces (`ip -n A link add ... peer
//! ... netns B`), and every command runs in a namespace this module made (`ip -n`, `ip netns
//! exec`). A [`Net`] kills every process it started and deletes its namespaces when dropped,
//! on a failing test too.

#![allow(dead_code)] // the tests use what their scenario needs

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The public host's address (the core's subnet 203.0.113.0/28).
pub const PUBLIC: &str = "203.0.113.10";
/// NAT A's outside address; its LAN is 192.0.2.0/24.
pub const NAT_A_OUTSIDE: &str = "203.0.113.18";
/// The host behind NAT A.
pub const BEHIND_A: &str = "192.0.2.10";
/// The second host on NAT A's LAN ([`Net::second_host_behind_nat_a`]).
pub const BEHIND_A2: &str = "192.0.2.11";
/// NAT B's outside address; its LAN is 198.51.100.0/24.
pub const NAT_B_OUTSIDE: &str = "203.0.113.34";
/// The host behind NAT B.
pub const BEHIND_B: &str = "198.51.100.10";
/// The stranger's address on the core.
pub const STRANGER: &str = "203.0.113.66";

/// A NAT box's rules until a model is applied: plain Linux masquerading of what leaves by
/// `out` (tables and chains named as [`Net::rebind`] expects).
pub const MASQUERADE: &str = "table ip slsf_nat {\n\
     \tchain postrouting {\n\
     \t\ttype nat hook postrouting priority 100; policy accept;\n\
     \t\toifname \"out\" masquerade\n\
     \t}\n\
     }\n";

/// Why namespaces cannot be used here, or `Ok` when they can: root, the tools (`ip`, `nft`,
/// `conntrack`, `python3`) and a namespace actually created and deleted.
pub fn available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let euid = status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .unwrap_or("?");
            if euid != "0" {
                return Err(format!("not root (effective uid {euid})"));
            }
            let missing: Vec<&str> = ["ip", "nft", "conntrack", "python3"]
                .into_iter()
                .filter(|p| !have(p))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "{missing:?} not installed (scripts/setup --net --checks)"
                ));
            }
            let probe = format!("slsf-{}-probe", std::process::id());
            let out = Command::new("ip")
                .args(["netns", "add", &probe])
                .output()
                .map_err(|e| format!("ip netns add: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "`ip netns add` failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            let _ = Command::new("ip").args(["netns", "del", &probe]).output();
            Ok(())
        })
        .clone()
}

/// Whether `test` may run: true when namespaces work; otherwise it prints one line saying the
/// test is skipped and why and returns false, or fails when SALSIFY_REQUIRE_NETNS=1.
pub fn usable(test: &str) -> bool {
    match available() {
        Ok(()) => true,
        Err(why) => {
            assert!(
                std::env::var("SALSIFY_REQUIRE_NETNS").as_deref() != Ok("1"),
                "{test}: network namespaces required (SALSIFY_REQUIRE_NETNS=1) but unusable: {why}"
            );
            eprintln!("{test}: skipped: network namespaces unusable: {why}");
            false
        }
    }
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program ARGS` (with `stdin` as its input), which must succeed; its standard output.
fn run(program: &str, args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("netns setup: cannot run {program}: {e}"));
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "netns setup: `{program} {}` failed ({}): {}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        stdin.map_or(String::new(), |s| format!("\ninput:\n{s}"))
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The namespaces whose names start with `prefix`.
pub fn namespaces_named(prefix: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Deletes the names of namespaces left by earlier test processes that are gone (killed
/// before their guard ran): `slsf-PID-...` with no process PID.
fn delete_stale() {
    for name in namespaces_named("slsf-") {
        let pid = name.split('-').nth(1).unwrap_or("");
        if pid.parse::<u32>().is_ok() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
        }
    }
}

/// One side of a link: an interface in a namespace.
#[derive(Clone, Debug)]
pub struct Link {
    pub ns: String,
    pub dev: String,
}

/// A host: its namespace, its address, and the core's interface on the way to it.
#[derive(Clone, Debug)]
pub struct Host {
    pub ns: String,
    pub addr: &'static str,
    /// The core router's interface towards this host (or towards its NAT).
    pub uplink: Link,
}

/// A NAT box: masquerades its LAN behind its outside address.
#[derive(Clone, Debug)]
pub struct Nat {
    pub ns: String,
    pub outside: &'static str,
    pub lan_host: &'static str,
    /// The core router's interface towards this NAT.
    pub uplink: Link,
}

/// A process a [`Net`] started (and will end).
#[derive(Clone, Debug)]
pub struct Proc {
    index: usize,
    pub pid: u32,
    pub label: String,
    /// Its standard output and standard error.
    pub log: PathBuf,
}

/// What a test datagram did: where it arrived from (at the listener, `ip:port` and size), and
/// the answers the sender got back (`ip:port` and size).
#[derive(Debug, Default)]
pub struct Crossing {
    pub arrived: Vec<(String, usize)>,
    pub replies: Vec<(String, usize)>,
}

/// The stranger's counts: UDP datagrams it saw copies of and replayed, and what came back to
/// its own socket.
#[derive(Debug, Default, Clone)]
pub struct StrangerStats {
    pub seen: u64,
    pub replayed: u64,
    pub replayed_bytes: u64,
    pub back: u64,
    pub back_bytes: u64,
    pub back_max: u64,
}

/// A running stranger (see [`Net::stranger`]).
pub struct Stranger {
    pub proc: Proc,
    stats: PathBuf,
}

/// The UDP probe the checks run inside namespaces: `listen HOST PORT` prints `ready`, then
/// `arrived IP:PORT SIZE` per datagram and answers each with 3 bytes; `send BIND_HOST
/// BIND_PORT DST_HOST DST_PORT SIZE df|nodf` sends one datagram of SIZE bytes (with or
/// without the don't-fragment bit) and prints `reply IP:PORT SIZE` for what comes back
/// within 0.5 s.
const PROBE_PY: &str = r#"import socket, sys
mode = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if mode == "listen":
    s.bind((sys.argv[2], int(sys.argv[3])))
    print("ready", flush=True)
    while True:
        d, a = s.recvfrom(65535)
        print(f"arrived {a[0]}:{a[1]} {len(d)}", flush=True)
        s.sendto(b"ack", a)
else:
    s.bind((sys.argv[2], int(sys.argv[3])))
    # IP_MTU_DISCOVER (10): IP_PMTUDISC_DO (2) sets DF, IP_PMTUDISC_DONT (0) clears it.
    s.setsockopt(socket.IPPROTO_IP, 10, 2 if sys.argv[7] == "df" else 0)
    try:
        s.sendto(b"x" * int(sys.argv[6]), (sys.argv[4], int(sys.argv[5])))
    except OSError as e:
        print(f"error {e}", flush=True)
    s.settimeout(0.5)
    try:
        while True:
            d, a = s.recvfrom(65535)
            print(f"reply {a[0]}:{a[1]} {len(d)}", flush=True)
    except socket.timeout:
        pass
"#;

/// The stranger: reads, on its interface, the copies of the datagrams the core forwards
/// (they are addressed to others, so only a packet socket sees them), and replays each UDP
/// payload from its own socket to the datagram's destination. It counts what comes back to
/// that socket and writes its counts to a file every 0.2 s, at its deadline and on SIGTERM.
const STRANGER_PY: &str = r#"import os, select, signal, socket, struct, sys, time
iface, own, out, deadline = sys.argv[1], sys.argv[2], sys.argv[3], time.time() + float(sys.argv[4])
cap = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
cap.bind((iface, 0))
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
tx.bind((own, 0))
st = dict(seen=0, replayed=0, replayed_bytes=0, back=0, back_bytes=0, back_max=0)
def dump():
    with open(out + ".tmp", "w") as f:
        f.write(" ".join(f"{k} {v}" for k, v in st.items()) + "\n")
    os.replace(out + ".tmp", out)
def stop(*_):
    dump()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
dump()
last = time.time()
while time.time() < deadline:
    ready, _, _ = select.select([cap, tx], [], [], 0.1)
    if cap in ready:
        d, a = cap.recvfrom(65535)
        if a[2] != socket.PACKET_OUTGOING and len(d) >= 28 and d[9] == 17:
            ihl = (d[0] & 15) * 4
            total = struct.unpack("!H", d[2:4])[0]
            frag = struct.unpack("!H", d[6:8])[0] & 0x3FFF
            src, dst = socket.inet_ntoa(d[12:16]), socket.inet_ntoa(d[16:20])
            if src != own and dst != own and frag == 0:
                st["seen"] += 1
                dport = struct.unpack("!H", d[ihl + 2:ihl + 4])[0]
                payload = d[ihl + 8:total]
                try:
                    tx.sendto(payload, (dst, dport))
                    st["replayed"] += 1
                    st["replayed_bytes"] += len(payload)
                except OSError:
                    pass
    if tx in ready:
        try:
            d, a = tx.recvfrom(65535)
            st["back"] += 1
            st["back_bytes"] += len(d)
            st["back_max"] = max(st["back_max"], len(d))
        except OSError:
            pass
    if time.time() - last > 0.2:
        dump()
        last = time.time()
dump()
"#;

/// A network of namespaces for one test. Dropping it kills every process it started (and any
/// other process left in its namespaces) and deletes the namespaces.
pub struct Net {
    prefix: String,
    /// Scratch folder: scripts, logs.
    pub dir: PathBuf,
    namespaces: Vec<String>,
    children: Vec<Child>,
    core: String,
    rebinds: u32,
}

impl Net {
    /// A core router in a namespace of its own, and nothing attached yet. Names start with
    /// `slsf-PID-N-`, unique per test; `dir` is the test's scratch folder.
    pub fn new(dir: &Path) -> Net {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        delete_stale();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        std::fs::write(dir.join("probe.py"), PROBE_PY).unwrap();
        std::fs::write(dir.join("stranger.py"), STRANGER_PY).unwrap();
        let mut net = Net {
            prefix: format!("slsf-{}-{n}-", std::process::id()),
            dir: dir.to_path_buf(),
            namespaces: Vec::new(),
            children: Vec::new(),
            core: String::new(),
            rebinds: 0,
        };
        net.core = net.namespace("core");
        net.exec(
            &net.core.clone(),
            &["sysctl", "-qw", "net.ipv4.ip_forward=1"],
        );
        net
    }

    /// What every namespace of this net is named with first.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The core router's namespace.
    pub fn core(&self) -> &str {
        &self.core
    }

    fn namespace(&mut self, role: &str) -> String {
        let name = format!("{}{role}", self.prefix);
        run("ip", &["netns", "add", &name], None);
        self.namespaces.push(name.clone());
        run("ip", &["-n", &name, "link", "set", "lo", "up"], None);
        name
    }

    /// Runs `ARGS` inside namespace `ns`, which must succeed; its standard output.
    pub fn exec(&self, ns: &str, args: &[&str]) -> String {
        let mut all = vec!["netns", "exec", ns];
        all.extend_from_slice(args);
        run("ip", &all, None)
    }

    /// Loads an nftables ruleset in namespace `ns` (one transaction).
    pub fn nft(&self, ns: &str, ruleset: &str) {
        run(
            "ip",
            &["netns", "exec", ns, "nft", "-f", "-"],
            Some(ruleset),
        );
    }

    fn ip(&self, ns: &str, args: &[&str]) {
        let mut all = vec!["-n", ns];
        all.extend_from_slice(args);
        run("ip", &all, None);
    }

    /// A veth pair from `a_dev` (in `a`, address `a_addr`) to `b_dev` (in `b`, `b_addr`),
    /// both ends up.
    fn wire(&self, a: &str, a_dev: &str, a_addr: &str, b: &str, b_dev: &str, b_addr: &str) {
        self.ip(
            a,
            &[
                "link", "add", a_dev, "type", "veth", "peer", "name", b_dev, "netns", b,
            ],
        );
        self.ip(a, &["addr", "add", a_addr, "dev", a_dev]);
        self.ip(b, &["addr", "add", b_addr, "dev", b_dev]);
        self.ip(a, &["link", "set", a_dev, "up"]);
        self.ip(b, &["link", "set", b_dev, "up"]);
    }

    /// The public host, 203.0.113.10 on the core's interface `p` (203.0.113.1/28).
    pub fn public_host(&mut self) -> Host {
        let ns = self.namespace("public");
        let core = self.core.clone();
        self.wire(&core, "p", "203.0.113.1/28", &ns, "eth0", "203.0.113.10/28");
        self.ip(&ns, &["route", "add", "default", "via", "203.0.113.1"]);
        Host {
            ns,
            addr: PUBLIC,
            uplink: Link {
                ns: core,
                dev: "p".into(),
            },
        }
    }

    /// NAT A (outside 203.0.113.18 on the core's `na`, LAN 192.0.2.0/24) and the host
    /// 192.0.2.10 behind it.
    pub fn behind_nat_a(&mut self) -> (Nat, Host) {
        self.behind_nat(
            "a",
            ["203.0.113.17/28", "203.0.113.18/28", "203.0.113.17"],
            ["192.0.2.1/24", "192.0.2.10/24", "192.0.2.1"],
            NAT_A_OUTSIDE,
            BEHIND_A,
        )
    }

    /// A second host, 192.0.2.11, on the LAN of NAT A (made by [`Net::behind_nat_a`]): the
    /// NAT's `lan` end goes into a bridge with the LAN address, and the new host hangs off
    /// it, so the two hosts share one link (two laptops at one home router) and reach each
    /// other without the NAT.
    pub fn second_host_behind_nat_a(&mut self, nat: &Nat) -> Host {
        let inside = self.namespace("hosta2");
        let lan = "192.0.2.1/24";
        self.ip(&nat.ns, &["link", "add", "br0", "type", "bridge"]);
        self.ip(&nat.ns, &["addr", "del", lan, "dev", "lan"]);
        self.ip(&nat.ns, &["link", "set", "lan", "master", "br0"]);
        self.ip(&nat.ns, &["addr", "add", lan, "dev", "br0"]);
        self.ip(&nat.ns, &["link", "set", "br0", "up"]);
        self.ip(
            &nat.ns,
            &[
                "link", "add", "lan2", "type", "veth", "peer", "name", "eth0", "netns", &inside,
            ],
        );
        self.ip(&nat.ns, &["link", "set", "lan2", "master", "br0"]);
        self.ip(&nat.ns, &["link", "set", "lan2", "up"]);
        self.ip(&inside, &["addr", "add", "192.0.2.11/24", "dev", "eth0"]);
        self.ip(&inside, &["link", "set", "eth0", "up"]);
        self.ip(&inside, &["route", "add", "default", "via", "192.0.2.1"]);
        Host {
            ns: inside,
            addr: BEHIND_A2,
            uplink: nat.uplink.clone(),
        }
    }

    /// NAT B (outside 203.0.113.34 on the core's `nb`, LAN 198.51.100.0/24) and the host
    /// 198.51.100.10 behind it.
    pub fn behind_nat_b(&mut self) -> (Nat, Host) {
        self.behind_nat(
            "b",
            ["203.0.113.33/28", "203.0.113.34/28", "203.0.113.33"],
            ["198.51.100.1/24", "198.51.100.10/24", "198.51.100.1"],
            NAT_B_OUTSIDE,
            BEHIND_B,
        )
    }

    /// A home NAT stacked behind a carrier-grade NAT on side `a` or `b`: the CGNAT takes
    /// the NAT's place on the core (outside 203.0.113.18 or .34), its LAN is the shared link
    /// 203.0.113.128/28 (side a) or .144/28 (side b), unknown to the core, where the home
    /// NAT's outside address (.130 or .146) lies; behind it the usual LAN and host. Both
    /// boxes masquerade as [`Net::behind_nat_a`]'s NAT does until a model is applied. Returns
    /// the CGNAT, the home NAT and the host.
    pub fn behind_cgnat(&mut self, which: &str) -> (Nat, Nat, Host) {
        let (core_addr, out_addr, core_gw, outside, shared) = match which {
            "a" => (
                "203.0.113.17/28",
                "203.0.113.18/28",
                "203.0.113.17",
                NAT_A_OUTSIDE,
                128,
            ),
            _ => (
                "203.0.113.33/28",
                "203.0.113.34/28",
                "203.0.113.33",
                NAT_B_OUTSIDE,
                144,
            ),
        };
        let (cg_lan, home_out, home_gw): (String, &'static str, String) = (
            format!("203.0.113.{}/28", shared + 1),
            if which == "a" {
                "203.0.113.130"
            } else {
                "203.0.113.146"
            },
            format!("203.0.113.{}", shared + 1),
        );
        let (lan_addr, host_addr, lan_gw, host) = match which {
            "a" => ("192.0.2.1/24", "192.0.2.10/24", "192.0.2.1", BEHIND_A),
            _ => (
                "198.51.100.1/24",
                "198.51.100.10/24",
                "198.51.100.1",
                BEHIND_B,
            ),
        };
        let cgnat = self.namespace(&format!("cgnat{which}"));
        let home = self.namespace(&format!("nat{which}"));
        let inside = self.namespace(&format!("host{which}"));
        let core = self.core.clone();
        let core_dev = format!("n{which}");
        self.wire(&core, &core_dev, core_addr, &cgnat, "out", out_addr);
        let home_cidr = format!("{home_out}/28");
        self.wire(&cgnat, "lan", &cg_lan, &home, "out", &home_cidr);
        self.wire(&home, "lan", lan_addr, &inside, "eth0", host_addr);
        self.ip(&cgnat, &["route", "add", "default", "via", core_gw]);
        self.ip(&home, &["route", "add", "default", "via", &home_gw]);
        self.ip(&inside, &["route", "add", "default", "via", lan_gw]);
        for ns in [&cgnat, &home] {
            self.exec(ns, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
            self.nft(ns, MASQUERADE);
        }
        let uplink = Link {
            ns: core,
            dev: core_dev,
        };
        let nat = |ns: &str, outside: &'static str, lan_host: &'static str| Nat {
            ns: ns.to_string(),
            outside,
            lan_host,
            uplink: uplink.clone(),
        };
        (
            nat(&cgnat, outside, home_out),
            nat(&home, home_out, host),
            Host {
                ns: inside,
                addr: host,
                uplink: uplink.clone(),
            },
        )
    }

    fn behind_nat(
        &mut self,
        which: &str,
        [core_addr, out_addr, core_gw]: [&str; 3],
        [lan_addr, host_addr, lan_gw]: [&str; 3],
        outside: &'static str,
        host: &'static str,
    ) -> (Nat, Host) {
        let nat = self.namespace(&format!("nat{which}"));
        let inside = self.namespace(&format!("host{which}"));
        let core = self.core.clone();
        let core_dev = format!("n{which}");
        self.wire(&core, &core_dev, core_addr, &nat, "out", out_addr);
        self.wire(&nat, "lan", lan_addr, &inside, "eth0", host_addr);
        self.ip(&nat, &["route", "add", "default", "via", core_gw]);
        self.ip(&inside, &["route", "add", "default", "via", lan_gw]);
        self.exec(&nat, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        self.nft(&nat, MASQUERADE);
        let uplink = Link {
            ns: core,
            dev: core_dev,
        };
        (
            Nat {
                ns: nat,
                outside,
                lan_host: host,
                uplink: uplink.clone(),
            },
            Host {
                ns: inside,
                addr: host,
                uplink,
            },
        )
    }

    /// Makes `nat` filter endpoint-independently (a "full cone"): a datagram from anyone to
    /// a port of its outside address reaches the LAN host on that port. Linux masquerading
    /// keeps the inside port when it is free, so a datagram to the host's mapping reaches
    /// its socket whoever sends it (as on the many home NATs that filter this way). Only
    /// until a [`Net::rebind`], whose mappings no longer keep the inside port.
    pub fn full_cone(&self, nat: &Nat) {
        self.nft(
            &nat.ns,
            &format!(
                "table ip slsf_nat {{\n\
                 \tchain prerouting {{\n\
                 \t\ttype nat hook prerouting priority -100; policy accept;\n\
                 \t\tiifname \"out\" udp dport 1024-65535 dnat to {}\n\
                 \t}}\n\
                 }}\n",
                nat.lan_host
            ),
        );
    }

    /// Gives every flow through `nat` a new mapping: the masquerade rule now picks UDP ports
    /// in a new range (20000-29999, then 30000-39999, alternately) and the NAT's connection
    /// tracking is flushed, so the LAN host's next datagram leaves from a new outside port.
    /// The range, returned, is where the new mapping lies.
    pub fn rebind(&mut self, nat: &Nat) -> (u16, u16) {
        self.rebinds += 1;
        let range = if self.rebinds % 2 == 1 {
            (20000, 29999)
        } else {
            (30000, 39999)
        };
        self.nft(
            &nat.ns,
            &format!(
                "flush chain ip slsf_nat postrouting\n\
                 add rule ip slsf_nat postrouting oifname \"out\" meta l4proto udp masquerade to :{}-{}\n\
                 add rule ip slsf_nat postrouting oifname \"out\" masquerade\n",
                range.0, range.1
            ),
        );
        self.exec(&nat.ns, &["conntrack", "-F"]);
        range
    }

    /// Sets the MTU of `link` (a router's interface: datagrams larger than `mtu` bytes are
    /// not sent on as they are). Works mid-call.
    pub fn set_path_mtu(&self, link: &Link, mtu: u32) {
        self.ip(
            &link.ns,
            &["link", "set", &link.dev, "mtu", &mtu.to_string()],
        );
    }

    /// Makes `router` (a namespace) silent and unfragmenting: it drops every ICMP destination
    /// unreachable (frag-needed among them) it forwards or sends itself, and every IPv4
    /// fragment: those it receives (before reassembly), those it forwards, and those it makes
    /// itself when a datagram without DF is larger than an outgoing link's MTU (an egress
    /// filter on each of its interfaces: fragmentation happens after the IP hooks). A datagram
    /// larger than a link's MTU then vanishes whether or not it has DF set, and the sender
    /// hears nothing.
    pub fn drop_icmp_and_fragments(&self, router: &str) {
        let links = run("ip", &["-n", router, "-o", "link", "show"], None);
        let devs: Vec<String> = links
            .lines()
            .filter_map(|l| l.split(':').nth(1))
            .map(|d| d.trim().split('@').next().unwrap_or("").to_string())
            .filter(|d| !d.is_empty() && d != "lo")
            .collect();
        let mut rules = String::from(
            "table inet slsf_drop {\n\
             \tchain prerouting_fragments {\n\
             \t\ttype filter hook prerouting priority -450; policy accept;\n\
             \t\tip frag-off & 0x1fff != 0 drop\n\
             \t\tip frag-off & 0x2000 != 0 drop\n\
             \t}\n\
             \tchain forward_drop {\n\
             \t\ttype filter hook forward priority 0; policy accept;\n\
             \t\ticmp type destination-unreachable drop\n\
             \t\tip frag-off & 0x1fff != 0 drop\n\
             \t\tip frag-off & 0x2000 != 0 drop\n\
             \t}\n\
             \tchain output_drop {\n\
             \t\ttype filter hook output priority 0; policy accept;\n\
             \t\ticmp type destination-unreachable drop\n\
             \t}\n\
             }\n",
        );
        for dev in devs {
            rules.push_str(&format!(
                "table netdev slsf_drop_{dev} {{\n\
                 \tchain egress_fragments {{\n\
                 \t\ttype filter hook egress device \"{dev}\" priority 0; policy accept;\n\
                 \t\tip frag-off & 0x1fff != 0 drop\n\
                 \t\tip frag-off & 0x2000 != 0 drop\n\
                 \t\ticmp type destination-unreachable drop\n\
                 \t}}\n\
                 }}\n"
            ));
        }
        self.nft(router, &rules);
    }

    /// A stranger at 203.0.113.66 on the core's interface `s`: the core sends it a copy of
    /// every UDP datagram it forwards (nftables `dup`, but not the stranger's own datagrams
    /// nor those to it), and a script in the stranger's namespace replays each from the
    /// stranger's own address to where it was going, for `seconds` at most.
    pub fn stranger(&mut self, seconds: f64) -> Stranger {
        let ns = self.namespace("stranger");
        let core = self.core.clone();
        self.wire(
            &core,
            "s",
            "203.0.113.65/28",
            &ns,
            "eth0",
            "203.0.113.66/28",
        );
        self.ip(&ns, &["route", "add", "default", "via", "203.0.113.65"]);
        self.nft(
            &core,
            &format!(
                "table ip slsf_copy {{\n\
                 \tchain forward_copy {{\n\
                 \t\ttype filter hook forward priority -10; policy accept;\n\
                 \t\tip protocol udp ip saddr != {STRANGER} ip daddr != {STRANGER} dup to {STRANGER} device \"s\"\n\
                 \t}}\n\
                 }}\n"
            ),
        );
        let stats = self.dir.join("stranger.stats");
        let _ = std::fs::remove_file(&stats);
        let script = self.dir.join("stranger.py");
        let proc = self.spawn(
            &ns,
            "stranger",
            &[
                "python3",
                script.to_str().unwrap(),
                "eth0",
                STRANGER,
                stats.to_str().unwrap(),
                &seconds.to_string(),
            ],
        );
        let until = Instant::now() + Duration::from_secs(10);
        while !stats.exists() {
            if Instant::now() > until || self.exited(&proc).is_some() {
                panic!(
                    "the stranger did not start:\n{}",
                    std::fs::read_to_string(&proc.log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Stranger { proc, stats }
    }

    /// Ends the stranger (SIGTERM: it writes its counts) and returns its counts.
    pub fn stranger_stats(&mut self, stranger: &Stranger) -> StrangerStats {
        self.terminate(&stranger.proc);
        if self.wait(&stranger.proc, Duration::from_secs(5)).is_none() {
            self.kill(&stranger.proc);
        }
        let text = std::fs::read_to_string(&stranger.stats).unwrap_or_default();
        let words: Vec<&str> = text.split_whitespace().collect();
        let get = |key: &str| -> u64 {
            words
                .iter()
                .position(|w| *w == key)
                .and_then(|i| words.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    panic!(
                        "stranger counts without {key}: '{text}'\n{}",
                        std::fs::read_to_string(&stranger.proc.log).unwrap_or_default()
                    )
                })
        };
        StrangerStats {
            seen: get("seen"),
            replayed: get("replayed"),
            replayed_bytes: get("replayed_bytes"),
            back: get("back"),
            back_bytes: get("back_bytes"),
            back_max: get("back_max"),
        }
    }

    /// Starts `ARGS` in namespace `ns`, its standard output and error to `DIR/LABEL.log`
    /// (named after `label`), its input empty. The net ends it when dropped at the latest.
    pub fn spawn(&mut self, ns: &str, label: &str, args: &[&str]) -> Proc {
        let log = self.dir.join(format!("{label}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {args:?} in {ns}: {e}"));
        // `ip netns exec` enters the namespace and executes the program in its own process,
        // so this id is the program's.
        let pid = child.id();
        self.children.push(child);
        Proc {
            index: self.children.len() - 1,
            pid,
            label: label.to_string(),
            log,
        }
    }

    /// Its exit status if `proc` has ended.
    pub fn exited(&mut self, proc: &Proc) -> Option<ExitStatus> {
        self.children[proc.index].try_wait().unwrap()
    }

    /// Waits up to `timeout` for `proc` to end; its exit status, or `None` if it still runs.
    pub fn wait(&mut self, proc: &Proc, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited(proc) {
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Asks `proc` to stop, like Ctrl-C (SIGTERM), if it still runs.
    pub fn terminate(&mut self, proc: &Proc) {
        if self.exited(proc).is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &proc.pid.to_string()])
                .status();
        }
    }

    /// Kills `proc` (SIGKILL) if it still runs, and reaps it.
    pub fn kill(&mut self, proc: &Proc) {
        let child = &mut self.children[proc.index];
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
        }
        let _ = child.wait();
    }

    /// Sends one UDP datagram of `size` bytes from `from` (bound to `from_port`, 0 for any)
    /// to `to`'s address, port `port`, with DF set or not, and reports where it arrived from
    /// (the listener on `to` answers each datagram with 3 bytes) and what came back.
    pub fn udp_cross(
        &mut self,
        from: &Host,
        from_port: u16,
        to: &Host,
        port: u16,
        size: usize,
        df: bool,
    ) -> Crossing {
        let script = self.dir.join("probe.py");
        let script = script.to_str().unwrap();
        let port_s = port.to_string();
        let listener = self.spawn(
            &to.ns,
            "probe-listen",
            &["python3", script, "listen", to.addr, &port_s],
        );
        let until = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&listener.log)
            .unwrap_or_default()
            .contains("ready")
        {
            assert!(
                Instant::now() < until && self.exited(&listener).is_none(),
                "the UDP probe did not listen: {}",
                std::fs::read_to_string(&listener.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = self.exec(
            &from.ns,
            &[
                "python3",
                script,
                "send",
                from.addr,
                &from_port.to_string(),
                to.addr,
                &port_s,
                &size.to_string(),
                if df { "df" } else { "nodf" },
            ],
        );
        std::thread::sleep(Duration::from_millis(100));
        self.kill(&listener);
        let heard = std::fs::read_to_string(&listener.log).unwrap_or_default();
        let parse = |text: &str, word: &str| -> Vec<(String, usize)> {
            text.lines()
                .filter_map(|l| {
                    let mut w = l.split_whitespace();
                    (w.next()? == word)
                        .then(|| Some((w.next()?.to_string(), w.next()?.parse().ok()?)))?
                })
                .collect()
        };
        Crossing {
            arrived: parse(&heard, "arrived"),
            replies: parse(&sent, "reply"),
        }
    }

    /// The path MTU the kernel of `host` has cached towards `addr` (from an ICMP
    /// frag-needed it received), if any.
    pub fn cached_mtu(&self, host: &Host, addr: &str) -> Option<u32> {
        let route = run("ip", &["-n", &host.ns, "route", "get", addr], None);
        let words: Vec<&str> = route.split_whitespace().collect();
        words
            .iter()
            .position(|w| *w == "mtu")
            .and_then(|i| words.get(i + 1))
            .and_then(|m| m.parse().ok())
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for child in &mut self.children {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        for ns in self.namespaces.iter().rev() {
            // Anything still inside (a process a child left behind) was started by this net.
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            match Command::new("ip").args(["netns", "del", ns]).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!(
                    "netns: could not delete {ns}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                Err(e) => eprintln!("netns: could not delete {ns}: {e}"),
            }
        }
    }
}

/// Frames a second of the synthetic source (`--input synthetic`'s default).
pub const FPS: f64 = 30.0;

/// One test at a time: the calls are real-time on a small machine.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Seconds of each call: SALSIFY_NAT_SECONDS, default 8.
pub fn seconds() -> f64 {
    std::env::var("SALSIFY_NAT_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s >= 2.0)
        .unwrap_or(8.0)
}
