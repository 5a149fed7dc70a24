//! The TURN client and the STUN binding against a real coturn on loopback, over real UDP
//! sockets: a relay allocated, a plain UDP socket as the peer, data both ways through the relay,
//! a wrong password refused, the allocation deleted, and a binding that finds the socket's own
//! address. Only 127.0.0.1 is ever used.
//!
//! The test starts `turnserver` itself (no configuration file: every option on the command line)
//! and kills it at the end, on failure too. Without `turnserver` (Debian: `apt-get install
//! coturn`; `scripts/setup --net` installs it) the test says it is skipped and passes, unless
//! SALSIFY_REQUIRE_NETNS=1 (scripts/test sets it).

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration as StdDuration;

use salsify_meet::turn::{Retransmits, StunBinding, TurnClient, TurnConfig, TurnError, TurnEvent};
use salsify_time::{Duration, Instant};

const USER: &str = "test";
const PASS: &str = "secret";
const REALM: &str = "salsify.test";
/// How long any one step may take on a loaded machine.
const STEP: StdDuration = StdDuration::from_secs(10);

/// A coturn listening on 127.0.0.1, killed (and its scratch directory removed) when dropped.
struct Coturn {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Coturn {
    /// Starts one on a free port, or `None` (skipped) when `turnserver` is not installed.
    fn start(test: &str) -> Option<Coturn> {
        let found = Command::new("sh")
            .args(["-c", "command -v turnserver"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                std::env::var("SALSIFY_REQUIRE_NETNS").as_deref() != Ok("1"),
                "{test}: turnserver (coturn) required (SALSIFY_REQUIRE_NETNS=1) but not installed"
            );
            eprintln!(
                "{test}: skipped: turnserver (coturn) not installed (apt-get install coturn)"
            );
            return None;
        }
        // A free UDP port: bound and let go (coturn listens on UDP only).
        let port = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("a free port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir =
            std::env::temp_dir().join(format!("salsify-coturn-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        let log = std::fs::File::create(dir.join("turnserver.log")).expect("log file");
        let child = Command::new("turnserver")
            .args([
                "-n",
                "--listening-ip=127.0.0.1",
                "--relay-ip=127.0.0.1",
                &format!("--listening-port={port}"),
                "--lt-cred-mech",
                &format!("--user={USER}:{PASS}"),
                &format!("--realm={REALM}"),
                "--no-tcp",
                "--no-tls",
                "--no-dtls",
                "--no-tcp-relay",
                "--no-rfc5780",
                "--allow-loopback-peers",
                "--no-cli",
                "--log-file=stdout",
                "--simple-log",
                &format!("--pidfile={}", dir.join("turnserver.pid").display()),
                &format!("--userdb={}", dir.join("turndb").display()),
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("turnserver starts");
        let coturn = Coturn { child, addr, dir };
        coturn.wait_listening();
        Some(coturn)
    }

    /// Waits until a Binding request is answered.
    fn wait_listening(&self) {
        let socket = udp();
        let deadline = std::time::Instant::now() + STEP;
        while std::time::Instant::now() < deadline {
            let mut clock = Clock::new();
            let mut probe = StunBinding::new(
                self.addr,
                Retransmits::within(Duration::from_millis(500)),
                clock.now(),
            );
            drive_binding(&socket, &mut probe, &mut clock);
            if probe.mapped().is_some() {
                return;
            }
        }
        panic!("coturn never answered on {}:\n{}", self.addr, self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("turnserver.log")).unwrap_or_default()
    }
}

impl Drop for Coturn {
    fn drop(&mut self) {
        // This test's own child, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("coturn's log:\n{}", self.log());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The OS clock as the project's `Instant`.
struct Clock(std::time::Instant);

impl Clock {
    fn new() -> Self {
        Clock(std::time::Instant::now())
    }

    fn now(&mut self) -> Instant {
        let micros = u64::try_from(self.0.elapsed().as_micros()).unwrap_or(u64::MAX);
        Instant::from_micros(micros)
    }
}

fn udp() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").expect("a loopback socket")
}

/// Waits on `socket` until `deadline` (at most 20 ms, so the caller loops often).
fn recv(socket: &UdpSocket, now: Instant, deadline: Instant) -> Option<(SocketAddr, Vec<u8>)> {
    let wait = deadline
        .saturating_duration_since(now)
        .clamp(StdDuration::from_millis(1), StdDuration::from_millis(20));
    socket.set_read_timeout(Some(wait)).expect("read timeout");
    let mut buf = [0u8; 2048];
    let (n, from) = socket.recv_from(&mut buf).ok()?;
    Some((from, buf[..n].to_vec()))
}

/// Runs a binding on `socket` until it has an outcome.
fn drive_binding(socket: &UdpSocket, binding: &mut StunBinding, clock: &mut Clock) {
    while binding.outcome().is_none() {
        let now = clock.now();
        while let Some(bytes) = binding.poll_transmit(now) {
            socket.send_to(&bytes, binding.server()).expect("send");
        }
        if let Some((from, bytes)) = recv(socket, now, binding.poll_timeout()) {
            if from == binding.server() {
                binding.handle_datagram(clock.now(), &bytes);
            }
        }
        binding.handle_timeout(clock.now());
    }
}

/// A TURN client on its own socket, driven as the runtime would.
struct Driven {
    socket: UdpSocket,
    client: TurnClient,
    clock: Clock,
    events: Vec<TurnEvent>,
    /// Peer datagrams unwrapped.
    received: Vec<(SocketAddr, Vec<u8>)>,
}

impl Driven {
    fn new(server: SocketAddr, password: &str) -> Self {
        let mut clock = Clock::new();
        let client = TurnClient::new(TurnConfig::new(server, USER, password), clock.now());
        Driven {
            socket: udp(),
            client,
            clock,
            events: vec![],
            received: vec![],
        }
    }

    /// Drives the client until `done` holds, or panics after [`STEP`].
    fn run_until(&mut self, what: &str, done: impl Fn(&Driven) -> bool) {
        let deadline = std::time::Instant::now() + STEP;
        while !done(self) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {what} within {STEP:?}; events: {:?}",
                self.events
            );
            let now = self.clock.now();
            while let Some(bytes) = self.client.poll_transmit(now) {
                self.socket
                    .send_to(&bytes, self.client.server())
                    .expect("send");
            }
            while let Some(event) = self.client.poll_event() {
                self.events.push(event);
            }
            if let Some((from, bytes)) = recv(&self.socket, now, self.client.poll_timeout()) {
                // Demultiplexing as the runtime does: the server's address, then the shape.
                if from == self.client.server() && TurnClient::is_turn(&bytes) {
                    let now = self.clock.now();
                    if let Some(data) = self.client.handle_datagram(now, &bytes) {
                        self.received.push(data);
                    }
                }
            }
            let now = self.clock.now();
            self.client.handle_timeout(now);
            while let Some(event) = self.client.poll_event() {
                self.events.push(event);
            }
        }
    }

    fn has(&self, event: &TurnEvent) -> bool {
        self.events.contains(event)
    }
}

#[test]
fn coturn_relays_both_ways_and_answers_a_binding() {
    let Some(coturn) = Coturn::start("coturn_relays_both_ways_and_answers_a_binding") else {
        return;
    };

    // A binding from a socket finds that socket's own address (no NAT on loopback).
    let socket = udp();
    let mut clock = Clock::new();
    let mut binding = StunBinding::new(coturn.addr, Retransmits::default(), clock.now());
    drive_binding(&socket, &mut binding, &mut clock);
    assert_eq!(binding.outcome(), Some(Ok(socket.local_addr().unwrap())));
    println!(
        "binding: {} sees {}",
        coturn.addr,
        binding.mapped().unwrap()
    );

    // Allocate.
    let mut turn = Driven::new(coturn.addr, PASS);
    turn.run_until("allocation", |d| d.client.relayed_address().is_some());
    let relayed = turn.client.relayed_address().unwrap();
    let mapped = turn.client.mapped_address();
    assert_eq!(relayed.ip(), coturn.addr.ip());
    assert_eq!(mapped, Some(turn.socket.local_addr().unwrap()));
    println!("allocated: relayed {relayed}, mapped {mapped:?}");

    // Permit a plain UDP socket as the peer.
    let peer = udp();
    let peer_addr = peer.local_addr().unwrap();
    turn.client.permit(turn.clock.now(), peer_addr);
    turn.run_until("permission and channel", |d| {
        d.has(&TurnEvent::PermissionCreated(peer_addr.ip()))
            && d.has(&TurnEvent::ChannelBound(peer_addr))
    });
    println!("permitted and bound: {peer_addr}");

    // Peer -> relayed address -> client, unwrapped.
    for i in 0..3 {
        let message = format!("from the peer {i}");
        peer.send_to(message.as_bytes(), relayed)
            .expect("peer sends");
        turn.run_until("peer datagram", |d| {
            d.received
                .contains(&(peer_addr, message.as_bytes().to_vec()))
        });
    }
    println!(
        "peer -> client: {} datagrams through the relay",
        turn.received.len()
    );

    // Client -> server (ChannelData) -> peer, from the relayed address.
    peer.set_read_timeout(Some(StdDuration::from_millis(500)))
        .expect("read timeout");
    for i in 0..3 {
        let message = format!("from the client {i}");
        let wrapped = turn
            .client
            .wrap(turn.clock.now(), peer_addr, message.as_bytes())
            .expect("permitted");
        assert_eq!(wrapped.len(), 4 + message.len(), "ChannelData");
        turn.socket.send_to(&wrapped, coturn.addr).expect("send");
        let mut buf = [0u8; 2048];
        let (n, from) = peer.recv_from(&mut buf).expect("the relay forwards");
        assert_eq!((from, &buf[..n]), (relayed, message.as_bytes()));
    }
    println!("client -> peer: 3 datagrams through the relay");

    // A wrong password is refused with the server's 401.
    let mut wrong = Driven::new(coturn.addr, "not the password");
    wrong.run_until("refusal", |d| d.client.is_closed());
    match wrong.events.last() {
        Some(TurnEvent::Failed(TurnError::AllocateFailed(Some(e)))) => assert_eq!(e.code, 401),
        other => panic!("{other:?}"),
    }
    println!(
        "wrong password: {}",
        wrong.events.last().map(|e| format!("{e:?}")).unwrap()
    );

    // Closing deletes the allocation: the relay stops forwarding.
    turn.client.close(turn.clock.now());
    turn.run_until("deletion", |d| d.client.is_closed());
    let before = turn.received.len();
    peer.send_to(b"after close", relayed).expect("peer sends");
    let wait_end = std::time::Instant::now() + StdDuration::from_millis(300);
    while std::time::Instant::now() < wait_end {
        let now = turn.clock.now();
        if let Some((_, bytes)) = recv(&turn.socket, now, now + Duration::from_millis(20)) {
            assert_eq!(turn.client.handle_datagram(now, &bytes), None);
        }
    }
    assert_eq!(turn.received.len(), before);
    assert!(!turn
        .events
        .iter()
        .any(|e| matches!(e, TurnEvent::Failed(_))));
    println!("closed: the allocation is deleted");
}
