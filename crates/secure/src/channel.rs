//! One side of an encrypted session: the handshake, the keys in use, sealing and opening.
//!
//! The video sender is the [`HandshakeRole::Initiator`]: it starts a handshake at once (and again on
//! [`SecureChannel::restart`] or when its keys are due for renewal), holds the datagrams its
//! endpoint sends until the first handshake completes, and releases them through
//! [`SecureChannel::poll_transmit`]. The receiver is the [`HandshakeRole::Responder`]: it answers
//! handshakes (the reply goes back to where the init came from) and seals its feedback with
//! the keys of the newest confirmed session.
//!
//! Incoming datagrams go through [`SecureChannel::handle_datagram`], cheapest check first:
//! shape, then session index, key age, replay window, and only then the AEAD. Nothing in a
//! rejected datagram changes the channel's state ([`SecureChannel::state`]); only the
//! rejection counters in [`SecureStats`] move.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_time::{Duration, Instant};
use snow::params::NoiseParams;
use snow::{Builder, HandshakeState, StatelessTransportState};

use crate::keys::{PrivateKey, PublicKey};
use crate::replay::ReplayWindow;
use crate::wire::{self, Packet, WireError};

/// The Noise protocol: both static keys known in advance, X25519, ChaCha20-Poly1305, BLAKE2s.
const NOISE: &str = "Noise_KK_25519_ChaChaPoly_BLAKE2s";
/// Bound into every handshake: peers of another wire version cannot complete one.
const PROLOGUE: &[u8] = b"salsify-secure v1";

/// Handshakes in flight an initiator still accepts a response to (on a path slower than the
/// retry interval, the response to an earlier attempt completes it), and unconfirmed
/// sessions a responder keeps for the same reason.
const OUTSTANDING: usize = 4;
/// The retry interval doubles per unanswered attempt up to this many times the first.
const MAX_BACKOFF: u32 = 8;

/// Datagrams sealed under one key after which the initiator starts a new handshake.
pub const REKEY_AFTER_MESSAGES: u64 = 1 << 48;
/// Datagrams under one key after which it is used no more (far below the 2^64 nonces).
pub const REJECT_AFTER_MESSAGES: u64 = 1 << 60;

/// Which end of the handshake this side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeRole {
    /// Sends the first handshake message (the video sender).
    Initiator,
    /// Answers it (the receiver).
    Responder,
}

/// Keys and limits of a channel.
#[derive(Clone, Debug)]
pub struct SecureConfig {
    /// This side's private key (`--key`).
    pub local: PrivateKey,
    /// The only peer accepted (`--peer-key`).
    pub peer: PublicKey,
    /// Initiator: a new handshake after this long without a response, doubling per
    /// unanswered attempt up to 8 times as long. Default 500 ms.
    pub handshake_retry: Duration,
    /// Initiator: a new handshake this long after the last completed one. Default 120 s.
    pub rekey_after: Duration,
    /// Keys older than this are used no more. Default 180 s.
    pub reject_after: Duration,
    /// Initiator: most datagrams held while the first handshake runs. Default 512.
    pub hold_limit: usize,
    /// Initiator: held datagrams older than this are dropped. Default 1 s.
    pub hold_time: Duration,
    /// Responder: handshakes answered per second at most (each costs four X25519
    /// operations), with a burst of [`SecureConfig::handshake_burst`]. Default 20.
    pub handshakes_per_second: u32,
    /// Responder: the handshake rate limit's burst. Default 10.
    pub handshake_burst: u32,
    /// Seeds the session indexes the channel draws (never its keys: snow draws each
    /// handshake's ephemeral key from the OS). [`SecureConfig::new`] draws it from the OS; a
    /// fixed one replays a channel's indexes (tests).
    pub index_seed: u64,
}

impl SecureConfig {
    /// Defaults for everything but the keys.
    pub fn new(local: PrivateKey, peer: PublicKey) -> Self {
        SecureConfig {
            local,
            peer,
            handshake_retry: Duration::from_millis(500),
            rekey_after: Duration::from_secs(120),
            reject_after: Duration::from_secs(180),
            hold_limit: 512,
            hold_time: Duration::from_secs(1),
            handshakes_per_second: 20,
            handshake_burst: 10,
            index_seed: rand::random(),
        }
    }
}

/// Why an incoming datagram was dropped. Each is cheap to tell, and the message says what a
/// person can do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// Not a secure datagram at all.
    #[error("{0} (is the sender running without --key/--peer-key?)")]
    Malformed(WireError),
    /// A data datagram for a session index this side does not have.
    #[error("sealed for no session of ours (a peer restarted, or a stranger)")]
    UnknownSession,
    /// Its keys are past their time or use limit.
    #[error("sealed with expired keys")]
    Expired,
    /// A counter already accepted, or too far behind the newest.
    #[error("replayed or too old")]
    Replayed,
    /// The AEAD tag does not verify: altered in transit, or forged.
    #[error("failed authentication (forged, or altered in transit)")]
    Forged,
    /// The handshake does not verify: the peer's key is not our `--peer-key`, or it does not
    /// have our public key.
    #[error("handshake refused: the sender's key is not --peer-key, or it was not given our public key (wrong key files?)")]
    HandshakeRefused,
    /// A handshake init whose timestamp is not newer than the last accepted.
    #[error("handshake replayed (not newer than the last)")]
    StaleHandshake,
    /// Over the handshake rate limit.
    #[error("over the handshake rate limit")]
    RateLimited,
    /// A handshake message this side does not expect (an init at the initiator, a response
    /// to no handshake of ours).
    #[error("unexpected handshake message")]
    UnexpectedHandshake,
}

/// What an accepted datagram was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A datagram the peer's endpoint sent: hand it to the scheme.
    Data(Vec<u8>),
    /// A handshake init answered: send this reply back to where the init came from.
    Reply(Vec<u8>),
    /// A handshake response: the session is (re)established; held datagrams are ready in
    /// [`SecureChannel::poll_transmit`].
    Established,
}

/// Counters of a channel's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SecureStats {
    /// Datagrams sealed.
    pub sealed: u64,
    /// Datagrams opened.
    pub opened: u64,
    /// Datagrams dropped on arrival, any reason.
    pub rejected: u64,
    /// Handshakes started (initiator) or answered (responder).
    pub handshakes: u64,
    /// Handshakes completed (initiator) or confirmed by a first datagram (responder).
    pub established: u64,
    /// Outgoing datagrams dropped: held too long or too many, or no keys (responder).
    pub unsent: u64,
}

/// The state a datagram could change, for tests that check a rejected one changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelState {
    /// (local index, remote index, next counter, replay window) of the current and previous
    /// sessions, then the unconfirmed ones.
    pub sessions: Vec<Option<(u32, u32, u64, ReplayWindow)>>,
    /// The indexes of the initiator's handshakes in flight.
    pub handshakes: Vec<u32>,
    /// The responder's newest accepted handshake timestamp.
    pub last_init_timestamp: u64,
    /// Datagrams held.
    pub held: usize,
}

/// One session's keys.
struct Keys {
    transport: StatelessTransportState,
    local_index: u32,
    remote_index: u32,
    next_counter: u64,
    window: ReplayWindow,
    since: Instant,
}

/// The initiator's handshake in flight.
struct Outgoing {
    state: HandshakeState,
    local_index: u32,
}

/// Where a session's keys are kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Current,
    Previous,
    Unconfirmed(usize),
}

/// A token bucket.
struct Limiter {
    tokens: f64,
    at: Instant,
    rate: f64,
    burst: f64,
}

impl Limiter {
    fn take(&mut self, now: Instant) -> bool {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return true;
        }
        false
    }
}

/// One side of an encrypted session (see the module docs).
pub struct SecureChannel {
    role: HandshakeRole,
    config: SecureConfig,
    params: NoiseParams,
    current: Option<Keys>,
    previous: Option<Keys>,
    /// Responder: keys of answered handshakes, until a datagram sealed with one arrives
    /// (newest last).
    unconfirmed: VecDeque<Keys>,
    /// Initiator: the handshakes in flight (newest last); none once established.
    handshakes: VecDeque<Outgoing>,
    /// Initiator: when to start another handshake if none is answered, and the interval.
    next_retry: Instant,
    retry_interval: Duration,
    /// Initiator: handshake messages and released datagrams to send.
    outbox: VecDeque<Vec<u8>>,
    /// Initiator: plaintext datagrams waiting for the first keys, with when they came.
    held: VecDeque<(Instant, Vec<u8>)>,
    /// Initiator: wall-clock nanoseconds at `clock_base`, for handshake timestamps.
    wall_base: u64,
    clock_base: Instant,
    last_timestamp: u64,
    /// Responder: the newest handshake timestamp accepted.
    last_init_timestamp: u64,
    limiter: Limiter,
    stats: SecureStats,
    /// Whether the last datagram opened had the highest counter its session had accepted.
    last_opened_newest: bool,
    /// Draws the session indexes ([`SecureConfig::index_seed`]).
    rng: ChaCha8Rng,
}

impl std::fmt::Debug for SecureChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureChannel")
            .field("role", &self.role)
            .field("state", &self.state())
            .field("stats", &self.stats)
            .finish()
    }
}

impl SecureChannel {
    /// The sender's side; its first handshake message is ready in
    /// [`SecureChannel::poll_transmit`]. `unix_nanos`: the wall clock now (handshake
    /// timestamps must grow across runs of the sender, which the monotonic clock does not).
    pub fn initiator(config: SecureConfig, now: Instant, unix_nanos: u64) -> Self {
        let mut channel = SecureChannel::new(HandshakeRole::Initiator, config, now);
        channel.wall_base = unix_nanos;
        channel.start_handshake(now);
        channel
    }

    /// The receiver's side.
    pub fn responder(config: SecureConfig, now: Instant) -> Self {
        SecureChannel::new(HandshakeRole::Responder, config, now)
    }

    fn new(role: HandshakeRole, config: SecureConfig, now: Instant) -> Self {
        let retry = config.handshake_retry;
        let limiter = Limiter {
            tokens: f64::from(config.handshake_burst),
            at: now,
            rate: f64::from(config.handshakes_per_second),
            burst: f64::from(config.handshake_burst),
        };
        SecureChannel {
            role,
            rng: ChaCha8Rng::seed_from_u64(config.index_seed),
            // Panic = bug: the pattern name is a literal snow supports.
            params: NOISE.parse().expect("a valid Noise pattern"),
            config,
            current: None,
            previous: None,
            unconfirmed: VecDeque::new(),
            handshakes: VecDeque::new(),
            next_retry: Instant::FAR_FUTURE,
            retry_interval: retry,
            outbox: VecDeque::new(),
            held: VecDeque::new(),
            wall_base: 0,
            clock_base: now,
            last_timestamp: 0,
            last_init_timestamp: 0,
            limiter,
            stats: SecureStats::default(),
            last_opened_newest: false,
        }
    }

    /// Which side this is.
    pub fn role(&self) -> HandshakeRole {
        self.role
    }

    /// Counters so far.
    pub fn stats(&self) -> SecureStats {
        self.stats
    }

    /// Whether datagrams can be sealed now.
    pub fn is_established(&self, now: Instant) -> bool {
        self.usable(now).is_some()
    }

    /// The peer's session index of the keys in use, if any (the id a log can name).
    pub fn session_id(&self) -> Option<u32> {
        self.current.as_ref().map(|k| k.local_index)
    }

    /// Whether the datagram last opened ([`Incoming::Data`]) had a counter above every one its
    /// session accepted before: only such a datagram may move the peer to a new address (a
    /// replayed, late or reordered one may not).
    pub fn last_opened_newest(&self) -> bool {
        self.last_opened_newest
    }

    /// What a datagram could change.
    pub fn state(&self) -> ChannelState {
        let summary = |k: &Option<Keys>| k.as_ref().map(summary_of);
        let mut sessions = vec![summary(&self.current), summary(&self.previous)];
        sessions.extend(self.unconfirmed.iter().map(|k| Some(summary_of(k))));
        ChannelState {
            sessions,
            handshakes: self.handshakes.iter().map(|h| h.local_index).collect(),
            last_init_timestamp: self.last_init_timestamp,
            held: self.held.len(),
        }
    }

    /// Initiator: forgets the keys and starts a new handshake (the sender lost its receiver,
    /// which may have restarted without them).
    pub fn restart(&mut self, now: Instant) {
        if self.role == HandshakeRole::Initiator {
            self.previous = None;
            self.current = None;
            self.held.clear();
            self.outbox.clear();
            self.handshakes.clear();
            self.retry_interval = self.config.handshake_retry;
            self.start_handshake(now);
        }
    }

    /// Seals `datagram` for the peer. `None`: held until the first handshake completes
    /// (initiator) or dropped for want of keys (responder; counted in
    /// [`SecureStats::unsent`]).
    pub fn seal(&mut self, now: Instant, datagram: &[u8]) -> Option<Vec<u8>> {
        if datagram.len() > wire::MAX_PLAINTEXT {
            self.stats.unsent += 1;
            return None;
        }
        if self.usable(now).is_none() {
            match self.role {
                HandshakeRole::Initiator => self.hold(now, datagram),
                HandshakeRole::Responder => self.stats.unsent += 1,
            }
            return None;
        }
        // Panic = bug: `usable` just returned these keys.
        let keys = self.current.as_mut().expect("usable keys");
        let sealed = seal_with(keys, datagram);
        self.stats.sealed += u64::from(sealed.is_some());
        sealed
    }

    /// Takes an incoming datagram: the datagram it carries, a handshake reply to send, or
    /// why it was dropped (nothing else changed then).
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<Incoming, Rejected> {
        let result = match wire::parse(datagram) {
            Err(e) => Err(Rejected::Malformed(e)),
            Ok(Packet::Data {
                receiver,
                counter,
                sealed,
            }) => self.open(now, receiver, counter, sealed),
            Ok(Packet::Init { noise }) => self.answer(now, noise),
            Ok(Packet::Response { receiver, noise }) => self.complete(now, receiver, noise),
        };
        match &result {
            Ok(Incoming::Data(_)) => self.stats.opened += 1,
            Ok(_) => {}
            Err(_) => self.stats.rejected += 1,
        }
        result
    }

    /// Initiator: the next handshake message or released datagram to send.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.role == HandshakeRole::Initiator {
            self.renew(now);
        }
        self.outbox.pop_front()
    }

    /// When [`SecureChannel::poll_transmit`] next has something to do on its own (a
    /// handshake retry or renewal).
    pub fn poll_timeout(&self) -> Instant {
        match (self.handshakes.is_empty(), &self.current) {
            _ if self.role == HandshakeRole::Responder => Instant::FAR_FUTURE,
            (false, _) | (true, None) => self.next_retry,
            (true, Some(k)) => k.since + self.config.rekey_after,
        }
    }

    /// The current keys if they may still be used.
    fn usable(&self, now: Instant) -> Option<&Keys> {
        self.current.as_ref().filter(|k| !self.expired(k, now))
    }

    fn expired(&self, keys: &Keys, now: Instant) -> bool {
        now.saturating_duration_since(keys.since) >= self.config.reject_after
            || keys.next_counter >= REJECT_AFTER_MESSAGES
    }

    fn hold(&mut self, now: Instant, datagram: &[u8]) {
        if self.held.len() >= self.config.hold_limit {
            self.held.pop_front();
            self.stats.unsent += 1;
        }
        self.held.push_back((now, datagram.to_vec()));
    }

    /// Initiator: retries an unanswered handshake, renews keys due for it, and drops held
    /// datagrams too old to send.
    fn renew(&mut self, now: Instant) {
        let due = match (self.handshakes.is_empty(), &self.current) {
            (false, _) | (true, None) => now >= self.next_retry,
            (true, Some(k)) => {
                now.saturating_duration_since(k.since) >= self.config.rekey_after
                    || k.next_counter >= REKEY_AFTER_MESSAGES
            }
        };
        if due {
            self.start_handshake(now);
        }
        let hold_time = self.config.hold_time;
        while let Some((at, _)) = self.held.front() {
            if now.saturating_duration_since(*at) < hold_time {
                break;
            }
            self.held.pop_front();
            self.stats.unsent += 1;
        }
    }

    /// Initiator: a fresh handshake (new ephemeral key, index and timestamp) into the outbox.
    fn start_handshake(&mut self, now: Instant) {
        let timestamp = (self.wall_base
            + now.saturating_duration_since(self.clock_base).as_nanos() as u64)
            .max(self.last_timestamp + 1);
        self.last_timestamp = timestamp;
        let local_index = self.fresh_index();
        // The first attempt waits the configured interval; each unanswered one twice as long.
        if !self.handshakes.is_empty() {
            self.retry_interval =
                (self.retry_interval * 2).min(self.config.handshake_retry * MAX_BACKOFF);
        }
        self.next_retry = now + self.retry_interval;
        let mut payload = [0u8; wire::INIT_PAYLOAD_LEN];
        payload[..8].copy_from_slice(&timestamp.to_be_bytes());
        payload[8..].copy_from_slice(&local_index.to_be_bytes());
        let message = self.builder().build_initiator().and_then(|mut state| {
            let mut noise = [0u8; wire::INIT_NOISE_LEN];
            let n = state.write_message(&payload, &mut noise)?;
            Ok((state, wire::emit_init(&noise[..n])))
        });
        // An error is impossible with keys checked when the config was made; were it to
        // happen, the next retry tries again.
        if let Ok((state, datagram)) = message {
            self.outbox.retain(|d| d.first() != Some(&wire::TYPE_INIT));
            self.outbox.push_back(datagram);
            if self.handshakes.len() == OUTSTANDING {
                self.handshakes.pop_front();
            }
            self.handshakes.push_back(Outgoing { state, local_index });
            self.stats.handshakes += 1;
        }
    }

    fn builder(&self) -> Builder<'_> {
        // Panic = bug: 32-byte keys and a short prologue are always accepted.
        Builder::new(self.params.clone())
            .prologue(PROLOGUE)
            .and_then(|b| b.local_private_key(self.config.local.as_bytes()))
            .and_then(|b| b.remote_public_key(&self.config.peer.0))
            .expect("valid static keys")
    }

    /// A random session index, nonzero and unlike any in use.
    fn fresh_index(&mut self) -> u32 {
        loop {
            let index: u32 = self.rng.gen();
            let taken = self.slot_of(index).is_some()
                || self.handshakes.iter().any(|h| h.local_index == index);
            if index != 0 && !taken {
                return index;
            }
        }
    }

    /// Where the keys of session `index` are.
    fn slot_of(&self, index: u32) -> Option<Slot> {
        let is = |k: &Option<Keys>| k.as_ref().is_some_and(|k| k.local_index == index);
        if is(&self.current) {
            return Some(Slot::Current);
        }
        if is(&self.previous) {
            return Some(Slot::Previous);
        }
        self.unconfirmed
            .iter()
            .position(|k| k.local_index == index)
            .map(Slot::Unconfirmed)
    }

    fn keys(&mut self, slot: Slot) -> Option<&mut Keys> {
        match slot {
            Slot::Current => self.current.as_mut(),
            Slot::Previous => self.previous.as_mut(),
            Slot::Unconfirmed(i) => self.unconfirmed.get_mut(i),
        }
    }

    /// Opens a data datagram: session, age, window, then the AEAD.
    fn open(
        &mut self,
        now: Instant,
        receiver: u32,
        counter: u64,
        sealed: &[u8],
    ) -> Result<Incoming, Rejected> {
        let slot = self.slot_of(receiver).ok_or(Rejected::UnknownSession)?;
        let reject_after = self.config.reject_after;
        let keys = self.keys(slot).ok_or(Rejected::UnknownSession)?;
        if now.saturating_duration_since(keys.since) >= reject_after
            || counter >= REJECT_AFTER_MESSAGES
        {
            return Err(Rejected::Expired);
        }
        if !keys.window.check(counter) {
            return Err(Rejected::Replayed);
        }
        let mut plain = vec![0u8; sealed.len() - wire::TAG_LEN];
        let n = keys
            .transport
            .read_message(counter, sealed, &mut plain)
            .map_err(|_| Rejected::Forged)?;
        plain.truncate(n);
        let newest = counter >= keys.window.next();
        keys.window.insert(counter);
        if let Slot::Unconfirmed(i) = slot {
            // Key confirmation: the peer uses these keys, so this side does too; the other
            // attempts' keys will not be used.
            self.previous = self.current.take();
            self.current = self.unconfirmed.remove(i);
            self.unconfirmed.clear();
            self.stats.established += 1;
        }
        self.last_opened_newest = newest && slot != Slot::Previous;
        Ok(Incoming::Data(plain))
    }

    /// Responder: answers a handshake init.
    fn answer(&mut self, now: Instant, noise: &[u8]) -> Result<Incoming, Rejected> {
        if self.role != HandshakeRole::Responder {
            return Err(Rejected::UnexpectedHandshake);
        }
        if !self.limiter.take(now) {
            return Err(Rejected::RateLimited);
        }
        let mut state = self
            .builder()
            .build_responder()
            .map_err(|_| Rejected::HandshakeRefused)?;
        let mut payload = [0u8; wire::INIT_PAYLOAD_LEN];
        let n = state
            .read_message(noise, &mut payload)
            .map_err(|_| Rejected::HandshakeRefused)?;
        if n != payload.len() {
            return Err(Rejected::HandshakeRefused);
        }
        let (timestamp, sender) = split_u64_u32(&payload);
        if timestamp <= self.last_init_timestamp {
            return Err(Rejected::StaleHandshake);
        }
        let local_index = self.fresh_index();
        let mut indexes = [0u8; wire::RESPONSE_PAYLOAD_LEN];
        indexes[..4].copy_from_slice(&local_index.to_be_bytes());
        indexes[4..].copy_from_slice(&sender.to_be_bytes());
        let mut reply = [0u8; wire::RESPONSE_NOISE_LEN];
        let n = state
            .write_message(&indexes, &mut reply)
            .map_err(|_| Rejected::HandshakeRefused)?;
        let transport = state
            .into_stateless_transport_mode()
            .map_err(|_| Rejected::HandshakeRefused)?;
        self.last_init_timestamp = timestamp;
        if self.unconfirmed.len() == OUTSTANDING {
            self.unconfirmed.pop_front();
        }
        self.unconfirmed.push_back(Keys {
            transport,
            local_index,
            remote_index: sender,
            next_counter: 0,
            window: ReplayWindow::default(),
            since: now,
        });
        self.stats.handshakes += 1;
        Ok(Incoming::Reply(wire::emit_response(sender, &reply[..n])))
    }

    /// Initiator: completes its handshake with the response.
    fn complete(
        &mut self,
        now: Instant,
        receiver: u32,
        noise: &[u8],
    ) -> Result<Incoming, Rejected> {
        let ours = self
            .handshakes
            .iter()
            .position(|h| h.local_index == receiver);
        let Some(i) = ours.filter(|_| self.role == HandshakeRole::Initiator) else {
            return Err(Rejected::UnexpectedHandshake);
        };
        // snow restores the handshake state when a message fails to verify, so a forged
        // response leaves it usable.
        let outgoing = &mut self.handshakes[i];
        let mut indexes = [0u8; wire::RESPONSE_PAYLOAD_LEN];
        let n = outgoing
            .state
            .read_message(noise, &mut indexes)
            .map_err(|_| Rejected::HandshakeRefused)?;
        // Only the peer could seal this, so its indexes are as the peer wrote them.
        let sender = u32::from_be_bytes([indexes[0], indexes[1], indexes[2], indexes[3]]);
        if n != indexes.len() || indexes[4..] != receiver.to_be_bytes() {
            // The peer sealed a response to another index: a broken peer. This attempt is
            // spent; the retry starts another.
            self.handshakes.remove(i);
            return Err(Rejected::HandshakeRefused);
        }
        // Panic = bug: found at `i` above.
        let outgoing = self.handshakes.remove(i).expect("found above");
        self.handshakes.clear();
        self.retry_interval = self.config.handshake_retry;
        let transport = outgoing
            .state
            .into_stateless_transport_mode()
            .map_err(|_| Rejected::HandshakeRefused)?;
        self.previous = self.current.take();
        self.current = Some(Keys {
            transport,
            local_index: outgoing.local_index,
            remote_index: sender,
            next_counter: 0,
            window: ReplayWindow::default(),
            since: now,
        });
        self.stats.established += 1;
        self.release(now);
        Ok(Incoming::Established)
    }

    /// Initiator: seals the held datagrams (those still fresh) into the outbox.
    fn release(&mut self, now: Instant) {
        let hold_time = self.config.hold_time;
        while let Some((at, datagram)) = self.held.pop_front() {
            if now.saturating_duration_since(at) >= hold_time {
                self.stats.unsent += 1;
                continue;
            }
            if let Some(sealed) = self.seal(now, &datagram) {
                self.outbox.push_back(sealed);
            }
        }
    }
}

/// What a session's keys hold that a datagram could change.
fn summary_of(k: &Keys) -> (u32, u32, u64, ReplayWindow) {
    (
        k.local_index,
        k.remote_index,
        k.next_counter,
        k.window.clone(),
    )
}

/// A sealed init's timestamp and index.
fn split_u64_u32(payload: &[u8; wire::INIT_PAYLOAD_LEN]) -> (u64, u32) {
    let mut t = [0u8; 8];
    t.copy_from_slice(&payload[..8]);
    let mut i = [0u8; 4];
    i.copy_from_slice(&payload[8..]);
    (u64::from_be_bytes(t), u32::from_be_bytes(i))
}

/// Seals `datagram` under `keys` with the next counter.
fn seal_with(keys: &mut Keys, datagram: &[u8]) -> Option<Vec<u8>> {
    let counter = keys.next_counter;
    let mut out = wire::data_header(keys.remote_index, counter, datagram.len() + wire::TAG_LEN);
    out.resize(wire::DATA_HEADER_LEN + datagram.len() + wire::TAG_LEN, 0);
    let n = keys
        .transport
        .write_message(counter, datagram, &mut out[wire::DATA_HEADER_LEN..])
        .ok()?;
    out.truncate(wire::DATA_HEADER_LEN + n);
    keys.next_counter += 1;
    Some(out)
}
