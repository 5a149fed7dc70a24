//! Two peers that are both behind NATs meet, for the end-to-end tests of `nat_meet.rs`: on
//! top of the namespaces of `netns.rs` (its core router and NATs A and B), a servers' host on
//! the core running coturn (STUN and TURN) and the rendezvous (`salsify rendezvous`),
//! counters in the core of what those servers carried, NATs whose mapping depends on the
//! destination ("symmetric"), a stranger that replays, registers and sends garbage, and the
//! NATs' connection tracking read back.
//!
//! The topology (documentation addresses only, RFC 5737); the core and the NATs are
//! `netns.rs`'s:
//!
//! ```text
//!                           core (router; counts what the servers carry)
//!     na 203.0.113.17/28    nb 203.0.113.33/28    sv 203.0.113.97/28         ms 203.0.113.65/28
//!        |                     |                     |                          |
//!   NAT A: out .18/28      NAT B: out .34/28     servers:                   stranger .66/28
//!   in 192.0.2.1/24        in 198.51.100.1/24      203.0.113.100 coturn     (copies of every
//!        |                     |                     STUN and TURN :3478     UDP datagram the
//!   host 192.0.2.10        host 198.51.100.10      203.0.113.110            core forwards)
//!                                                    rendezvous :7000
//! ```
//!
//! (The servers are not at 203.0.113.20 and .30: those lie in NAT A's link, 203.0.113.16/28.)
//! The namespaces made here are named with the [`Net`]'s prefix, so a test's check that none
//! remain covers them; a [`Meet`] ends the processes in them and deletes them when dropped,
//! before its [`Net`] does the same with its own.

#![allow(dead_code)] // the tests use what their scenario needs

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::netns::{self, Host, Link, Nat, Net, Proc, NAT_A_OUTSIDE, NAT_B_OUTSIDE, STRANGER};

/// coturn's address: STUN and TURN on [`TURN_PORT`], relayed addresses on it too.
pub const TURN: &str = "203.0.113.100";
/// coturn's port (STUN and TURN over UDP).
pub const TURN_PORT: u16 = 3478;
/// The rendezvous's address.
pub const RENDEZVOUS: &str = "203.0.113.110";
/// The rendezvous's port.
pub const RENDEZVOUS_PORT: u16 = 7000;
/// coturn's one user (long-term credentials), its password and realm.
pub const TURN_USER: &str = "test";
pub const TURN_PASSWORD: &str = "secret";
pub const TURN_REALM: &str = "salsify.test";

/// Whether `test` may run: namespaces usable ([`netns::usable`]) and coturn's `turnserver`
/// installed. Otherwise it prints one line saying the test is skipped and why and returns
/// false, or fails when SALSIFY_REQUIRE_NETNS=1.
pub fn usable(test: &str) -> bool {
    if !netns::usable(test) {
        return false;
    }
    let found = Command::new("sh")
        .args(["-c", "command -v turnserver"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    assert!(
        std::env::var("SALSIFY_REQUIRE_NETNS").as_deref() != Ok("1"),
        "{test}: coturn required (SALSIFY_REQUIRE_NETNS=1) but `turnserver` is not installed (scripts/setup --net)"
    );
    eprintln!("{test}: skipped: `turnserver` (coturn) not installed (scripts/setup --net)");
    false
}

/// Runs `program ARGS`, which must succeed; its standard output.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("netns_meet: cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "netns_meet: `{program} {}` failed ({}): {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// STUN, TURN and UDP probes, run with `python3 meetprobe.py MODE ...` in a namespace:
///
/// - `stun BIND_HOST BIND_PORT SERVER PORT TIMEOUT`: a Binding request (RFC 8489), resent
///   every 0.25 s; prints `mapped IP:PORT` (its XOR-MAPPED-ADDRESS) or `timeout`.
/// - `knock BIND_HOST BIND_PORT DST DPORT SECONDS`: sends `knock` to DST, then answers every
///   datagram with the 3 bytes `ack` for SECONDS, printing `from IP:PORT SIZE` for each.
/// - `turn-echo BIND_HOST SERVER PORT USER PASS PERMIT_IP SECONDS`: a TURN allocation
///   (RFC 8656, long-term credentials) and a permission for PERMIT_IP; prints `relayed
///   IP:PORT mapped IP:PORT`, then answers each Data indication with a Send indication of
///   `echo:` and its data, printing `data from IP:PORT SIZE`.
/// - `turn-ping BIND_HOST SERVER PORT USER PASS PEER_IP PEER_PORT`: an allocation, a
///   permission for PEER_IP, `ping` sent through the relay to PEER_IP:PEER_PORT until a Data
///   indication comes back (3 s at most); prints `relayed ...`, then `echo from IP:PORT
///   DATA` or `no echo`.
///
/// A TURN failure prints `error ...` and exits with status 2.
const MEETPROBE_PY: &str = r#"import hashlib, hmac, os, socket, struct, sys, time
COOKIE = 0x2112A442
def attr(t, v):
    return struct.pack("!HH", t, len(v)) + v + b"\0" * (-len(v) % 4)
def message(mtype, attrs, key=None):
    tid = os.urandom(12)
    body = b"".join(attr(t, v) for t, v in attrs)
    if key is not None:
        # MESSAGE-INTEGRITY: HMAC-SHA1 over the message, its length counting the attribute.
        head = struct.pack("!HHI", mtype, len(body) + 24, COOKIE) + tid
        body += attr(0x0008, hmac.new(key, head + body, hashlib.sha1).digest())
    return struct.pack("!HHI", mtype, len(body), COOKIE) + tid + body, tid
def parse(d):
    if len(d) < 20:
        return None
    mtype, length, cookie = struct.unpack("!HHI", d[:8])
    if cookie != COOKIE or len(d) < 20 + length:
        return None
    attrs, at = {}, 20
    while at + 4 <= 20 + length:
        t, l = struct.unpack("!HH", d[at:at + 4])
        attrs.setdefault(t, d[at + 4:at + 4 + l])
        at += 4 + l + (-l % 4)
    return mtype, d[8:20], attrs
def xaddr(v):
    port = struct.unpack("!H", v[2:4])[0] ^ (COOKIE >> 16)
    ip = struct.unpack("!I", v[4:8])[0] ^ COOKIE
    return f"{socket.inet_ntoa(struct.pack('!I', ip))}:{port}"
def xpeer(ip, port):
    return struct.pack("!BBH", 0, 1, port ^ (COOKIE >> 16)) + struct.pack(
        "!I", struct.unpack("!I", socket.inet_aton(ip))[0] ^ COOKIE)
def transact(s, server, mtype, attrs, key=None, timeout=3.0):
    m, tid = message(mtype, attrs, key)
    end, resend = time.time() + timeout, 0.0
    while time.time() < end:
        if time.time() >= resend:
            s.sendto(m, server)
            resend = time.time() + 0.25
        s.settimeout(0.05)
        try:
            d, _ = s.recvfrom(65535)
        except socket.timeout:
            continue
        p = parse(d)
        if p and p[1] == tid:
            return p
    return None
def fail(why):
    print(f"error {why}", flush=True)
    sys.exit(2)
def error_code(p):
    v = p[2].get(0x0009, b"\0\0\0\0")
    return f"{(v[2] & 7) * 100 + v[3]} {v[4:].decode(errors='replace')}"
UDP = [(0x0019, bytes([17, 0, 0, 0]))]
def allocate(s, server, user, password):
    p = transact(s, server, 0x0003, UDP)
    if p is None:
        fail("no answer to an Allocate")
    if p[0] != 0x0113 or 0x0014 not in p[2] or 0x0015 not in p[2]:
        fail(f"an Allocate without credentials got {p[0]:#06x}, not a 401 with realm and nonce")
    realm, nonce = p[2][0x0014], p[2][0x0015]
    key = hashlib.md5(user.encode() + b":" + realm + b":" + password.encode()).digest()
    auth = [(0x0006, user.encode()), (0x0014, realm), (0x0015, nonce)]
    p = transact(s, server, 0x0003, UDP + auth, key)
    if p is None or p[0] != 0x0103:
        fail("Allocate refused: " + (error_code(p) if p else "no answer"))
    return xaddr(p[2][0x0016]), xaddr(p[2][0x0020]), key, auth
def permit(s, server, ip, key, auth):
    p = transact(s, server, 0x0008, [(0x0012, xpeer(ip, 0))] + auth, key)
    if p is None or p[0] != 0x0108:
        fail(f"CreatePermission for {ip} refused: " + (error_code(p) if p else "no answer"))
mode = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if mode == "stun":
    s.bind((sys.argv[2], int(sys.argv[3])))
    p = transact(s, (sys.argv[4], int(sys.argv[5])), 0x0001, [], None, float(sys.argv[6]))
    if p and p[0] == 0x0101 and 0x0020 in p[2]:
        print(f"mapped {xaddr(p[2][0x0020])}", flush=True)
    else:
        print("timeout", flush=True)
elif mode == "knock":
    s.bind((sys.argv[2], int(sys.argv[3])))
    s.sendto(b"knock", (sys.argv[4], int(sys.argv[5])))
    end = time.time() + float(sys.argv[6])
    while time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            d, a = s.recvfrom(65535)
        except socket.timeout:
            break
        print(f"from {a[0]}:{a[1]} {len(d)}", flush=True)
        s.sendto(b"ack", a)
elif mode in ("turn-echo", "turn-ping"):
    s.bind((sys.argv[2], 0))
    server = (sys.argv[3], int(sys.argv[4]))
    relayed, mapped, key, auth = allocate(s, server, sys.argv[5], sys.argv[6])
    permit(s, server, sys.argv[7], key, auth)
    print(f"relayed {relayed} mapped {mapped}", flush=True)
    if mode == "turn-echo":
        end = time.time() + float(sys.argv[8])
        while time.time() < end:
            s.settimeout(max(0.01, end - time.time()))
            try:
                d, _ = s.recvfrom(65535)
            except socket.timeout:
                break
            p = parse(d)
            if p and p[0] == 0x0017 and 0x0012 in p[2] and 0x0013 in p[2]:
                print(f"data from {xaddr(p[2][0x0012])} {len(p[2][0x0013])}", flush=True)
                m, _ = message(0x0016, [(0x0012, p[2][0x0012]), (0x0013, b"echo:" + p[2][0x0013])])
                s.sendto(m, server)
    else:
        peer = xpeer(sys.argv[7], int(sys.argv[8]))
        end, resend, got = time.time() + 3.0, 0.0, None
        while time.time() < end and got is None:
            if time.time() >= resend:
                m, _ = message(0x0016, [(0x0012, peer), (0x0013, b"ping")])
                s.sendto(m, server)
                resend = time.time() + 0.3
            s.settimeout(0.05)
            try:
                d, _ = s.recvfrom(65535)
            except socket.timeout:
                continue
            p = parse(d)
            if p and p[0] == 0x0017 and 0x0012 in p[2] and 0x0013 in p[2]:
                got = f"echo from {xaddr(p[2][0x0012])} {p[2][0x0013].decode(errors='replace')}"
        print(got or "no echo", flush=True)
"#;

/// The stranger of [`Meet::stranger`]: reads on its interface the copies of the datagrams the
/// core forwards and
///
/// - replays each UDP payload from its own address to where it was going (the rendezvous,
///   coturn, the peers' mappings on the NATs), and every 0.5 s five older ones again;
/// - ten times a second registers at the rendezvous from one of three sockets (so three
///   source ports), alternately under a random id and under an id the peers registered
///   under (read from their registrations' copies), with a random introduction, in the
///   rendezvous's wire (`crates/meet/src/rendezvous.rs`: tag 0xD9, kind 1, id, blob length,
///   blob, zeros to 600 bytes);
/// - ten times a second sends garbage (1 to 1400 random bytes, some starting like a meeting
///   datagram) to the rendezvous and to every NAT outside address and port it has seen in
///   use (eight at most);
///
/// and counts what comes back to its sockets, by who sent it: the rendezvous (its `peers`
/// answers apart), coturn, the NATs' outside addresses (the peers) or anyone else. It writes
/// its counts to a file every 0.2 s, at its deadline and on SIGTERM.
const STRANGER_PY: &str = r#"import os, random, select, signal, socket, struct, sys, time
iface, own, out, deadline = sys.argv[1], sys.argv[2], sys.argv[3], time.time() + float(sys.argv[4])
rdv, stun = (sys.argv[5], int(sys.argv[6])), (sys.argv[7], int(sys.argv[8]))
nats = set(sys.argv[9:])
cap = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
cap.bind((iface, 0))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((own, 0))
    return s
tx, junk, regs = udp(), udp(), [udp() for _ in range(3)]
socks = [tx, junk] + regs
keys = ("seen replayed replayed_bytes late_replayed registered_random registered_peer_id "
        "peer_ids endpoints garbage garbage_bytes to_rendezvous_bytes rendezvous_back "
        "rendezvous_back_bytes rendezvous_answers stun_back stun_back_bytes peers_back "
        "peers_back_bytes peers_back_max other_back").split()
st = dict.fromkeys(keys, 0)
ids, endpoints, old = [], [], []
def dump():
    st["peer_ids"], st["endpoints"] = len(ids), len(endpoints)
    with open(out + ".tmp", "w") as f:
        f.write(" ".join(f"{k} {v}" for k, v in st.items()) + "\n")
    os.replace(out + ".tmp", out)
def stop(*_):
    dump()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
def send(s, payload, dst):
    try:
        s.sendto(payload, dst)
    except OSError:
        return False
    if dst == rdv:
        st["to_rendezvous_bytes"] += len(payload)
    return True
def register(s, ident):
    blob = os.urandom(random.randint(0, 400))
    b = bytes([0xD9, 1]) + ident + len(blob).to_bytes(2, "big") + blob
    return send(s, b + bytes(600 - len(b)), rdv)
def garbage():
    g = bytearray(os.urandom(random.randint(1, 1400)))
    if len(g) > 2 and random.random() < 0.5:
        g[0], g[1] = 0xD9, random.randint(0, 8)
    return bytes(g)
dump()
tick, next_tick, last_dump = 0, time.time(), time.time()
while time.time() < deadline:
    ready, _, _ = select.select([cap] + socks, [], [], 0.02)
    if cap in ready:
        d, a = cap.recvfrom(65535)
        if a[2] != socket.PACKET_OUTGOING and len(d) >= 28 and d[9] == 17:
            ihl = (d[0] & 15) * 4
            total = struct.unpack("!H", d[2:4])[0]
            frag = struct.unpack("!H", d[6:8])[0] & 0x3FFF
            src, dst = socket.inet_ntoa(d[12:16]), socket.inet_ntoa(d[16:20])
            if src != own and dst != own and frag == 0:
                st["seen"] += 1
                sport, dport = struct.unpack("!HH", d[ihl:ihl + 4])
                payload = d[ihl + 8:total]
                for ep in ((src, sport), (dst, dport)):
                    if ep[0] in nats and ep not in endpoints and len(endpoints) < 8:
                        endpoints.append(ep)
                if (dst, dport) == rdv and len(payload) == 600 and payload[:2] == b"\xd9\x01":
                    if payload[2:34] not in ids:
                        ids.append(payload[2:34])
                if send(tx, payload, (dst, dport)):
                    st["replayed"] += 1
                    st["replayed_bytes"] += len(payload)
                old.append((payload, (dst, dport)))
                del old[:-300]
    for s in socks:
        if s in ready:
            try:
                d, a = s.recvfrom(65535)
            except OSError:
                continue
            if a[0] == rdv[0]:
                st["rendezvous_back"] += 1
                st["rendezvous_back_bytes"] += len(d)
                if d[:2] == b"\xd9\x02":
                    st["rendezvous_answers"] += 1
            elif a[0] == stun[0]:
                st["stun_back"] += 1
                st["stun_back_bytes"] += len(d)
            elif a[0] in nats:
                st["peers_back"] += 1
                st["peers_back_bytes"] += len(d)
                st["peers_back_max"] = max(st["peers_back_max"], len(d))
            else:
                st["other_back"] += 1
    now = time.time()
    if now >= next_tick:
        tick += 1
        next_tick = now + 0.1
        s = regs[tick % len(regs)]
        if tick % 2 == 0 or not ids:
            if register(s, os.urandom(32)):
                st["registered_random"] += 1
        elif register(s, random.choice(ids)):
            st["registered_peer_id"] += 1
        for dst in [rdv] + endpoints:
            g = garbage()
            if send(junk, g, dst):
                st["garbage"] += 1
                st["garbage_bytes"] += len(g)
        if tick % 5 == 0 and len(old) > 20:
            for payload, dst in random.sample(old[:-10], 5):
                if send(tx, payload, dst):
                    st["late_replayed"] += 1
    if now - last_dump > 0.2:
        dump()
        last_dump = now
dump()
"#;

/// What the core forwarded to and from the servers and to the stranger, in IP bytes and
/// packets (nftables counters in the core's forward hook).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Between the NATs' outside addresses (the peers) and the servers, both ways.
    pub peers_servers_bytes: u64,
    pub peers_servers_packets: u64,
    /// To and from the servers, from and to anyone.
    pub servers_bytes: u64,
    /// UDP from the NATs' outside addresses to the stranger; and those of the datagrams whose
    /// payload is over 200 bytes.
    pub to_stranger_bytes: u64,
    pub to_stranger_packets: u64,
    pub to_stranger_big: u64,
}

impl Counts {
    /// What was counted since `before`.
    pub fn since(&self, before: &Counts) -> Counts {
        Counts {
            peers_servers_bytes: self.peers_servers_bytes - before.peers_servers_bytes,
            peers_servers_packets: self.peers_servers_packets - before.peers_servers_packets,
            servers_bytes: self.servers_bytes - before.servers_bytes,
            to_stranger_bytes: self.to_stranger_bytes - before.to_stranger_bytes,
            to_stranger_packets: self.to_stranger_packets - before.to_stranger_packets,
            to_stranger_big: self.to_stranger_big - before.to_stranger_big,
        }
    }
}

/// One UDP flow in a NAT's connection tracking: its original direction and the reply's
/// (`ip:port` each), whether a reply was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    pub src: String,
    pub dst: String,
    pub reply_src: String,
    pub reply_dst: String,
    pub unreplied: bool,
}

impl Flow {
    /// The outside port the NAT gave a flow its LAN host started, when it is not the inside
    /// port: the port changed (a translated flow whose reply goes to another port).
    pub fn changed_port(&self) -> Option<(u16, u16)> {
        let port = |a: &str| a.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
        let (inside, outside) = (port(&self.src)?, port(&self.reply_dst)?);
        (inside != outside).then_some((inside, outside))
    }
}

/// What a relayed exchange between two TURN clients did (see [`Meet::turn_relay`]).
#[derive(Debug, Default)]
pub struct TurnRelay {
    /// The echoing client's relayed and mapped addresses (`relayed IP:PORT mapped IP:PORT`).
    pub echo_line: String,
    /// What the echoing client received (`data from IP:PORT SIZE` lines).
    pub echo_heard: Vec<String>,
    /// The pinging client's output: its `relayed` line and `echo from ...` or `no echo`.
    pub ping_out: String,
}

/// The stranger's counts (see [`STRANGER_PY`]'s keys).
#[derive(Debug, Default, Clone)]
pub struct MeetStrangerStats(pub Vec<(String, u64)>);

impl MeetStrangerStats {
    /// The count named `key` (0 if absent).
    pub fn get(&self, key: &str) -> u64 {
        self.0.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v)
    }
}

/// A running stranger (see [`Meet::stranger`]).
pub struct MeetStranger {
    pub proc: Proc,
    stats: PathBuf,
}

/// A [`Net`] with the meeting's servers: it dereferences to its net (NATs, hosts, processes).
pub struct Meet {
    net: Net,
    /// The namespaces made here (the net deletes its own).
    namespaces: Vec<String>,
    servers: String,
}

impl Deref for Meet {
    type Target = Net;
    fn deref(&self) -> &Net {
        &self.net
    }
}

impl DerefMut for Meet {
    fn deref_mut(&mut self) -> &mut Net {
        &mut self.net
    }
}

impl Meet {
    /// A net ([`Net::new`]) with the servers' host on the core (nothing running on it yet)
    /// and the core's counters; `dir` is the test's scratch folder.
    pub fn new(dir: &Path) -> Meet {
        std::fs::write(dir.join("meetprobe.py"), MEETPROBE_PY).unwrap();
        std::fs::write(dir.join("meetstranger.py"), STRANGER_PY).unwrap();
        let mut meet = Meet {
            net: Net::new(dir),
            namespaces: Vec::new(),
            servers: String::new(),
        };
        meet.servers = meet.namespace("servers");
        let (core, servers) = (meet.net.core().to_string(), meet.servers.clone());
        meet.wire(&core, "sv", "203.0.113.97/28", &servers, "eth0");
        for addr in [TURN, RENDEZVOUS] {
            run(
                "ip",
                &[
                    "-n",
                    &servers,
                    "addr",
                    "add",
                    &format!("{addr}/28"),
                    "dev",
                    "eth0",
                ],
            );
        }
        run(
            "ip",
            &[
                "-n",
                &servers,
                "route",
                "add",
                "default",
                "via",
                "203.0.113.97",
            ],
        );
        let (peers, srv) = (
            format!("{{ {NAT_A_OUTSIDE}, {NAT_B_OUTSIDE} }}"),
            format!("{{ {TURN}, {RENDEZVOUS} }}"),
        );
        meet.net.nft(
            &core,
            &format!(
                "table ip slsf_meet {{\n\
                 \tcounter peers_servers {{}}\n\
                 \tcounter servers {{}}\n\
                 \tcounter to_stranger {{}}\n\
                 \tcounter to_stranger_big {{}}\n\
                 \tchain count {{\n\
                 \t\ttype filter hook forward priority -20; policy accept;\n\
                 \t\tip saddr {peers} ip daddr {srv} counter name \"peers_servers\"\n\
                 \t\tip saddr {srv} ip daddr {peers} counter name \"peers_servers\"\n\
                 \t\tip saddr {srv} counter name \"servers\"\n\
                 \t\tip daddr {srv} counter name \"servers\"\n\
                 \t\tip saddr {peers} ip daddr {STRANGER} meta l4proto udp counter name \"to_stranger\"\n\
                 \t\tip saddr {peers} ip daddr {STRANGER} udp length > 208 counter name \"to_stranger_big\"\n\
                 \t}}\n\
                 }}\n"
            ),
        );
        meet
    }

    /// A namespace `PREFIX<role>`, its loopback up.
    fn namespace(&mut self, role: &str) -> String {
        let name = format!("{}{role}", self.net.prefix());
        run("ip", &["netns", "add", &name]);
        self.namespaces.push(name.clone());
        run("ip", &["-n", &name, "link", "set", "lo", "up"]);
        name
    }

    /// A veth pair from `a_dev` (in `a`, address `a_addr`) to `eth0`-like `b_dev` in `b`
    /// (no address: the caller adds them), both ends up.
    fn wire(&self, a: &str, a_dev: &str, a_addr: &str, b: &str, b_dev: &str) {
        run(
            "ip",
            &[
                "-n", a, "link", "add", a_dev, "type", "veth", "peer", "name", b_dev, "netns", b,
            ],
        );
        run("ip", &["-n", a, "addr", "add", a_addr, "dev", a_dev]);
        run("ip", &["-n", a, "link", "set", a_dev, "up"]);
        run("ip", &["-n", b, "link", "set", b_dev, "up"]);
    }

    /// The servers' host as a [`Host`] at `addr` ([`TURN`] or [`RENDEZVOUS`]): where probes
    /// (`Net::udp_cross`) can listen.
    pub fn servers(&self, addr: &'static str) -> Host {
        Host {
            ns: self.servers.clone(),
            addr,
            uplink: Link {
                ns: self.net.core().to_string(),
                dev: "sv".into(),
            },
        }
    }

    /// Starts coturn at [`TURN`]:[`TURN_PORT`] (STUN, and TURN for [`TURN_USER`] with
    /// [`TURN_PASSWORD`] in [`TURN_REALM`], relaying on the same address), its database,
    /// pid file and log in the scratch folder, and waits until it answers a STUN Binding.
    pub fn coturn(&mut self) -> Proc {
        let dir = self.net.dir.clone();
        let arg = |flag: &str, file: &str| format!("--{flag}={}", dir.join(file).display());
        let args = [
            "turnserver".to_string(),
            "-n".into(),
            format!("--listening-ip={TURN}"),
            format!("--relay-ip={TURN}"),
            format!("--listening-port={TURN_PORT}"),
            "--min-port=49152".into(),
            "--max-port=65535".into(),
            "--lt-cred-mech".into(),
            format!("--user={TURN_USER}:{TURN_PASSWORD}"),
            format!("--realm={TURN_REALM}"),
            "--no-tls".into(),
            "--no-dtls".into(),
            "--no-cli".into(),
            "--simple-log".into(),
            "--log-file=stdout".into(),
            arg("pidfile", "turnserver.pid"),
            arg("userdb", "turndb"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let servers = self.servers.clone();
        let proc = self.net.spawn(&servers, "coturn", &args);
        let until = Instant::now() + Duration::from_secs(10);
        let me = self.servers(RENDEZVOUS);
        loop {
            if let Some(status) = self.net.exited(&proc) {
                panic!("coturn ended at start ({status}):\n{}", read(&proc.log));
            }
            if self.stun_timeout(&me, 0, 0.5).is_some() {
                return proc;
            }
            assert!(
                Instant::now() < until,
                "coturn does not answer STUN after 10 s:\n{}",
                read(&proc.log)
            );
        }
    }

    /// Starts `salsify rendezvous --listen RENDEZVOUS:RENDEZVOUS_PORT --duration SECONDS` on
    /// the servers' host and waits (10 s at most) for its `listening on` line.
    pub fn rendezvous(&mut self, salsify: &str, seconds: f64) -> Proc {
        let listen = format!("{RENDEZVOUS}:{RENDEZVOUS_PORT}");
        let duration = format!("{seconds:.1}");
        let servers = self.servers.clone();
        let proc = self.net.spawn(
            &servers,
            "rendezvous",
            &[
                salsify,
                "rendezvous",
                "--listen",
                &listen,
                "--duration",
                &duration,
            ],
        );
        let until = Instant::now() + Duration::from_secs(10);
        while !read(&proc.log).contains("listening on") {
            if let Some(status) = self.net.exited(&proc) {
                panic!(
                    "`salsify rendezvous` ended at start ({status}):\n{}",
                    read(&proc.log)
                );
            }
            assert!(
                Instant::now() < until,
                "`salsify rendezvous` printed no `listening on` line in 10 s:\n{}",
                read(&proc.log)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proc
    }

    /// The `python3 meetprobe.py ARGS` command line.
    fn probe_args<'a>(&self, script: &'a str, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["python3", script];
        all.extend_from_slice(args);
        all
    }

    /// The address coturn sees a STUN Binding from `host` (bound to `port`, 0 for any) come
    /// from (its XOR-MAPPED-ADDRESS), or `None` without an answer in 2 s.
    pub fn stun(&self, host: &Host, port: u16) -> Option<String> {
        self.stun_timeout(host, port, 2.0)
    }

    fn stun_timeout(&self, host: &Host, port: u16, timeout: f64) -> Option<String> {
        let script = self.net.dir.join("meetprobe.py");
        let (port, server_port, timeout) =
            (port.to_string(), TURN_PORT.to_string(), timeout.to_string());
        let args = self.probe_args(
            script.to_str().unwrap(),
            &["stun", host.addr, &port, TURN, &server_port, &timeout],
        );
        let out = self.net.exec(&host.ns, &args);
        out.lines()
            .find_map(|l| l.strip_prefix("mapped "))
            .map(str::to_string)
    }

    /// Sends `knock` from `host` (bound to `port`) to `dst`:`dport`, then answers whatever
    /// reaches that socket for `seconds` (3 bytes each): runs in the background; its log has
    /// a `from IP:PORT SIZE` line per datagram, in `LABEL.log`.
    pub fn knock(
        &mut self,
        label: &str,
        host: &Host,
        port: u16,
        dst: &str,
        dport: u16,
        seconds: f64,
    ) -> Proc {
        let script = self.net.dir.join("meetprobe.py");
        let (port, dport, seconds) = (port.to_string(), dport.to_string(), seconds.to_string());
        let args = self.probe_args(
            script.to_str().unwrap(),
            &["knock", host.addr, &port, dst, &dport, &seconds],
        );
        self.net.spawn(&host.ns, label, &args)
    }

    /// Two TURN clients of coturn, `echo` and `ping` (each a host, usually behind a NAT):
    /// each allocates a relayed address and permits [`TURN`] (where the other's relayed
    /// address lies); `ping` sends `ping` through its relay to `echo`'s relayed address and
    /// waits for `echo`'s answer, through both relays.
    pub fn turn_relay(&mut self, echo: &Host, ping: &Host) -> TurnRelay {
        let script = self.net.dir.join("meetprobe.py");
        let script = script.to_str().unwrap();
        let port = TURN_PORT.to_string();
        let args = self.probe_args(
            script,
            &[
                "turn-echo",
                echo.addr,
                TURN,
                &port,
                TURN_USER,
                TURN_PASSWORD,
                TURN,
                "10",
            ],
        );
        let echoer = self.net.spawn(&echo.ns, "turn-echo", &args);
        let until = Instant::now() + Duration::from_secs(10);
        let relayed = loop {
            let log = read(&echoer.log);
            if let Some(line) = log.lines().find(|l| l.starts_with("relayed ")) {
                break line.to_string();
            }
            if self.net.exited(&echoer).is_some() || Instant::now() > until {
                panic!("the TURN echo client did not allocate:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let echo_relayed = relayed.split_whitespace().nth(1).unwrap_or("").to_string();
        let (peer_ip, peer_port) = echo_relayed.rsplit_once(':').unwrap_or(("", ""));
        let args = self.probe_args(
            script,
            &[
                "turn-ping",
                ping.addr,
                TURN,
                &port,
                TURN_USER,
                TURN_PASSWORD,
                peer_ip,
                peer_port,
            ],
        );
        let mut all = vec!["netns", "exec", &ping.ns];
        all.extend_from_slice(&args);
        let out = Command::new("ip").args(&all).output().unwrap();
        let ping_out = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
        self.net.kill(&echoer);
        let log = read(&echoer.log);
        TurnRelay {
            echo_line: relayed,
            echo_heard: log
                .lines()
                .filter(|l| l.starts_with("data from "))
                .map(str::to_string)
                .collect(),
            ping_out,
        }
    }

    /// Makes `nat`'s mapping depend on the destination ("symmetric", address-and-port-
    /// dependent): every new flow gets a random outside port (`masquerade random,fully-
    /// random`), so one socket's datagrams to two destinations leave from two ports. Flows
    /// already tracked keep theirs.
    pub fn symmetric(&self, nat: &Nat) {
        self.net.nft(
            &nat.ns,
            "flush chain ip slsf_nat postrouting\n\
             add rule ip slsf_nat postrouting oifname \"out\" masquerade random,fully-random\n",
        );
    }

    /// The core's counters now.
    pub fn counts(&self) -> Counts {
        let core = self.net.core().to_string();
        let get = |name: &str| -> (u64, u64) {
            let text = self
                .net
                .exec(&core, &["nft", "list", "counter", "ip", "slsf_meet", name]);
            let words: Vec<&str> = text.split_whitespace().collect();
            let after = |key: &str| -> u64 {
                words
                    .iter()
                    .position(|w| *w == key)
                    .and_then(|i| words.get(i + 1))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("counter {name} without {key}: {text}"))
            };
            (after("packets"), after("bytes"))
        };
        let (peers_servers_packets, peers_servers_bytes) = get("peers_servers");
        let (_, servers_bytes) = get("servers");
        let (to_stranger_packets, to_stranger_bytes) = get("to_stranger");
        let (to_stranger_big, _) = get("to_stranger_big");
        Counts {
            peers_servers_bytes,
            peers_servers_packets,
            servers_bytes,
            to_stranger_bytes,
            to_stranger_packets,
            to_stranger_big,
        }
    }

    /// The UDP flows `nat` tracks now.
    pub fn conntrack(&self, nat: &Nat) -> Vec<Flow> {
        let text = self.net.exec(&nat.ns, &["conntrack", "-L", "-p", "udp"]);
        text.lines()
            .filter_map(|line| {
                let get = |key: &str, nth: usize| -> Option<&str> {
                    line.split_whitespace()
                        .filter_map(|w| w.strip_prefix(key))
                        .nth(nth)
                };
                let at = |nth: usize| -> Option<(String, String)> {
                    Some((
                        format!("{}:{}", get("src=", nth)?, get("sport=", nth)?),
                        format!("{}:{}", get("dst=", nth)?, get("dport=", nth)?),
                    ))
                };
                let ((src, dst), (reply_src, reply_dst)) = (at(0)?, at(1)?);
                Some(Flow {
                    src,
                    dst,
                    reply_src,
                    reply_dst,
                    unreplied: line.contains("[UNREPLIED]"),
                })
            })
            .collect()
    }

    /// A stranger at [`STRANGER`] (203.0.113.66) on the core's interface `ms`: the core sends
    /// it a copy of every UDP datagram it forwards (nftables `dup`, but not the stranger's own
    /// nor those to it), and [`STRANGER_PY`] replays them, registers at the rendezvous and
    /// sends garbage, for `seconds` at most. (Not with `Net::stranger` in the same net: both
    /// take 203.0.113.64/28.)
    pub fn stranger(&mut self, seconds: f64) -> MeetStranger {
        let ns = self.namespace("mstranger");
        let core = self.net.core().to_string();
        self.wire(&core, "ms", "203.0.113.65/28", &ns, "eth0");
        run(
            "ip",
            &[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{STRANGER}/28"),
                "dev",
                "eth0",
            ],
        );
        run(
            "ip",
            &["-n", &ns, "route", "add", "default", "via", "203.0.113.65"],
        );
        self.net.nft(
            &core,
            &format!(
                "table ip slsf_mcopy {{\n\
                 \tchain forward_copy {{\n\
                 \t\ttype filter hook forward priority -10; policy accept;\n\
                 \t\tip protocol udp ip saddr != {STRANGER} ip daddr != {STRANGER} dup to {STRANGER} device \"ms\"\n\
                 \t}}\n\
                 }}\n"
            ),
        );
        let stats = self.net.dir.join("meetstranger.stats");
        let _ = std::fs::remove_file(&stats);
        let script = self.net.dir.join("meetstranger.py");
        let (seconds, rdv_port, turn_port) = (
            seconds.to_string(),
            RENDEZVOUS_PORT.to_string(),
            TURN_PORT.to_string(),
        );
        let proc = self.net.spawn(
            &ns,
            "meetstranger",
            &[
                "python3",
                script.to_str().unwrap(),
                "eth0",
                STRANGER,
                stats.to_str().unwrap(),
                &seconds,
                RENDEZVOUS,
                &rdv_port,
                TURN,
                &turn_port,
                NAT_A_OUTSIDE,
                NAT_B_OUTSIDE,
            ],
        );
        let until = Instant::now() + Duration::from_secs(10);
        while !stats.exists() {
            if Instant::now() > until || self.net.exited(&proc).is_some() {
                panic!("the stranger did not start:\n{}", read(&proc.log));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        MeetStranger { proc, stats }
    }

    /// Ends the stranger (SIGTERM: it writes its counts) and returns its counts.
    pub fn stranger_stats(&mut self, stranger: &MeetStranger) -> MeetStrangerStats {
        self.net.terminate(&stranger.proc);
        if self
            .net
            .wait(&stranger.proc, Duration::from_secs(5))
            .is_none()
        {
            self.net.kill(&stranger.proc);
        }
        let text = read(&stranger.stats);
        let words: Vec<&str> = text.split_whitespace().collect();
        let pairs: Vec<(String, u64)> = words
            .chunks(2)
            .filter_map(|kv| Some((kv.first()?.to_string(), kv.get(1)?.parse().ok()?)))
            .collect();
        assert!(
            pairs.iter().any(|(k, _)| k == "replayed"),
            "the stranger wrote no counts: '{text}'\n{}",
            read(&stranger.proc.log)
        );
        MeetStrangerStats(pairs)
    }
}

impl Drop for Meet {
    fn drop(&mut self) {
        // Every process in these namespaces was started here (through the net, which reaps
        // them when it drops next).
        for ns in self.namespaces.iter().rev() {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            match Command::new("ip").args(["netns", "del", ns]).output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => eprintln!(
                    "netns_meet: could not delete {ns}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                Err(e) => eprintln!("netns_meet: could not delete {ns}: {e}"),
            }
        }
    }
}

/// Runs `body` on a fresh net with the meeting's servers' host for test `name` (one test at a
/// time, scratch folder under `group`), or skips it (see [`usable`]); then checks that none
/// of the net's namespaces remain, and removes the scratch folder (kept when the test failed).
pub fn scenario(group: &str, name: &str, body: impl FnOnce(&mut Meet)) {
    let _one_at_a_time = netns::serial();
    if !usable(name) {
        return;
    }
    let dir = crate::support::temp_dir(group, name);
    let mut meet = Meet::new(&dir);
    let prefix = meet.prefix().to_string();
    body(&mut meet);
    drop(meet);
    let left = netns::namespaces_named(&prefix);
    assert!(left.is_empty(), "{name}: namespaces left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
