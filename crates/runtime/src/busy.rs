//! One call at a time: a listening side in a live call answers a second caller that
//! authenticates (it holds keys the side accepts) with a sealed `busy`, on a session of its
//! own that never touches the call's, and serves it nothing else.
//!
//! The desk answers the caller's handshake on a fresh responder channel; once the caller's
//! first datagram confirms that session, the desk seals [`Control::Busy`] for it (a few
//! times at most, each smaller than the datagram that prompted it: no amplification). It
//! holds a few callers at a time, each for a few seconds, so a flood of handshakes costs a
//! bounded amount of memory; the secure layer's own handshake rate limit applies to each
//! channel as to the call's.
//!
//! A datagram of the live peer from a new address (a roam) carries the call's session, not a
//! handshake, and never reaches the desk.

use std::collections::VecDeque;
use std::net::SocketAddr;

use salsify_call::control::Control;
use salsify_secure::{Incoming, Rejected, SecureChannel, SecureConfig};
use salsify_time::{Duration, Instant};

/// How the desk is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusyConfig {
    /// The live peer counts as live while heard within this. Default 250 ms: a live call
    /// is heard every few milliseconds (media, feedback, keep-alives), and a sender that
    /// crashed and was started again takes longer than that to send its first handshake, so
    /// it takes over instead of being told busy.
    pub live_within: Duration,
    /// Callers answered at once (the oldest is forgotten for a new one). Default 4.
    pub max_callers: usize,
    /// How long a caller is kept. Default 5 s.
    pub keep: Duration,
    /// Busy messages sent to one caller at most. Default 3.
    pub max_busy: u32,
    /// New callers' handshakes tried per second at most (each costs a key exchange);
    /// beyond it they are dropped. Default 20.
    pub attempts_per_second: u32,
}

impl Default for BusyConfig {
    fn default() -> Self {
        BusyConfig {
            live_within: Duration::from_millis(250),
            max_callers: 4,
            keep: Duration::from_secs(5),
            max_busy: 3,
            attempts_per_second: 20,
        }
    }
}

/// What the desk does with a datagram ([`BusyDesk::decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not the desk's: the call's channel takes it.
    Pass,
    /// A first handshake while the call is live: dropped, unanswered.
    Hold,
    /// A second caller's: [`BusyDesk::handle`] answers it.
    Answer,
}

struct Caller {
    from: SocketAddr,
    channel: SecureChannel,
    since: Instant,
    busy_sent: u32,
}

/// Second callers of a live call, each on its own channel.
pub struct BusyDesk {
    config: BusyConfig,
    keys: SecureConfig,
    callers: VecDeque<Caller>,
    /// New callers tried in the current second, and when it began.
    attempts: (u32, Instant),
    /// Addresses whose first handshake was held (not answered), and when: a sender that
    /// crashed and started again retries after its handshake interval, by when its old self
    /// has long been silent, and takes over; a live call's peer is heard in between.
    held: VecDeque<(SocketAddr, Instant)>,
    /// Busy messages sent.
    pub refused: u64,
}

impl BusyDesk {
    /// A desk answering with `keys` (the call's).
    pub fn new(config: BusyConfig, keys: SecureConfig) -> Self {
        BusyDesk {
            config,
            keys,
            callers: VecDeque::new(),
            attempts: (0, Instant::ZERO),
            held: VecDeque::new(),
            refused: 0,
        }
    }

    /// What to do with `bytes` from `from` while the call's peer is `peer`, last heard
    /// `heard`: a caller's first handshake while the peer is live is held (dropped
    /// unanswered), its next one while the peer is still live and was heard since is
    /// answered busy, and anything else goes to the call as before.
    pub fn decide(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        peer: SocketAddr,
        heard: Instant,
    ) -> Decision {
        if from == peer {
            return Decision::Pass;
        }
        if self.callers.iter().any(|c| c.from == from) {
            return Decision::Answer;
        }
        let live = now.saturating_duration_since(heard) < self.config.live_within;
        let init = bytes.first() == Some(&salsify_secure::wire::TYPE_INIT);
        if !(live && init) {
            return Decision::Pass;
        }
        let keep = self.config.keep;
        self.held
            .retain(|(_, at)| now.saturating_duration_since(*at) < keep);
        if self.held.iter().any(|(a, at)| *a == from && *at < heard) {
            return Decision::Answer; // held once, and the peer spoke since: it is busy
        }
        if !self.held.iter().any(|(a, _)| *a == from) {
            if self.held.len() >= self.config.max_callers {
                self.held.pop_front();
            }
            self.held.push_back((from, now));
        }
        Decision::Hold
    }

    /// Takes a datagram from a second caller; returns what to send back to it, or why the
    /// secure layer refused it (a forged handshake, or garbage from a caller it holds). A
    /// caller is held only once its handshake was answered. `newest_init`: the call's own
    /// channel's newest accepted handshake timestamp: a handshake no newer is a replay of
    /// the peer's (a stranger copying it), and gets no answer.
    pub fn handle(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        newest_init: u64,
    ) -> Result<Vec<Vec<u8>>, Rejected> {
        let keep = self.config.keep;
        self.callers
            .retain(|c| now.saturating_duration_since(c.since) < keep);
        let max_busy = self.config.max_busy;
        if let Some(caller) = self.callers.iter_mut().find(|c| c.from == from) {
            return Ok(match caller.channel.handle_datagram(now, bytes)? {
                Incoming::Reply(reply) => vec![reply],
                Incoming::Data(_) if caller.busy_sent < max_busy => {
                    caller.busy_sent += 1;
                    let sealed = caller.channel.seal(now, &Control::Busy.encode());
                    self.refused += u64::from(sealed.is_some());
                    sealed.into_iter().collect()
                }
                _ => Vec::new(),
            });
        }
        if !self.may_try(now) {
            return Ok(Vec::new());
        }
        let mut channel = SecureChannel::responder(self.keys.clone(), now);
        let Incoming::Reply(reply) = channel.handle_datagram(now, bytes)? else {
            return Ok(Vec::new());
        };
        if channel.state().last_init_timestamp <= newest_init {
            return Ok(Vec::new());
        }
        if self.callers.len() >= self.config.max_callers {
            self.callers.pop_front();
        }
        self.callers.push_back(Caller {
            from,
            channel,
            since: now,
            busy_sent: 0,
        });
        Ok(vec![reply])
    }

    /// Whether a new caller's handshake may be tried now (a bounded rate of them).
    fn may_try(&mut self, now: Instant) -> bool {
        let (count, since) = &mut self.attempts;
        if now.saturating_duration_since(*since) >= Duration::from_secs(1) {
            (*count, *since) = (0, now);
        }
        *count += 1;
        *count <= self.config.attempts_per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_secure::Keypair;

    fn keys() -> (SecureConfig, SecureConfig) {
        let (a, b) = (Keypair::generate().unwrap(), Keypair::generate().unwrap());
        (
            SecureConfig::new(a.private.clone(), b.public),
            SecureConfig::new(b.private, a.public),
        )
    }

    /// A second caller with the right keys gets a handshake answer, then a sealed busy it can
    /// open, at most `max_busy` times; the desk's memory holds at most `max_callers`.
    #[test]
    fn a_second_caller_is_told_busy_under_its_own_session() {
        let (caller_keys, desk_keys) = keys();
        let mut desk = BusyDesk::new(BusyConfig::default(), desk_keys);
        let now = Instant::from_millis(1000);
        let peer: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let from: SocketAddr = "192.0.2.2:6000".parse().unwrap();
        let mut caller = SecureChannel::initiator(caller_keys, now, 1);
        let init = caller.poll_transmit(now).unwrap();
        let d = |desk: &mut BusyDesk, at, from, heard| desk.decide(at, from, &init, peer, heard);
        assert_eq!(
            d(&mut desk, now, peer, now),
            Decision::Pass,
            "the peer itself"
        );
        let stale = now + Duration::from_secs(1);
        assert_eq!(
            d(&mut desk, stale, from, now),
            Decision::Pass,
            "a silent peer"
        );
        assert_eq!(d(&mut desk, now, from, now), Decision::Hold, "held once");
        let retry = now + Duration::from_millis(500);
        let heard = now + Duration::from_millis(490);
        assert_eq!(
            d(&mut desk, retry, from, heard),
            Decision::Answer,
            "the peer spoke since"
        );
        let replay = desk.handle(now, from, &init, u64::MAX).unwrap();
        assert!(
            replay.is_empty(),
            "a handshake no newer than the call's is a replay"
        );
        let reply = desk.handle(now, from, &init, 0).unwrap();
        assert_eq!(reply.len(), 1);
        assert!(matches!(
            caller.handle_datagram(now, &reply[0]),
            Ok(Incoming::Established)
        ));
        let mut told = 0;
        for _ in 0..5 {
            let hello = caller.seal(now, &[1, 2, 3]).unwrap();
            assert_eq!(desk.decide(now, from, &hello, peer, now), Decision::Answer);
            for answer in desk.handle(now, from, &hello, 0).unwrap() {
                assert!(answer.len() < hello.len() + 64);
                match caller.handle_datagram(now, &answer) {
                    Ok(Incoming::Data(plain)) => {
                        assert_eq!(Control::parse(&plain), Ok(Control::Busy));
                        told += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(told, 3);
        for port in 0..10 {
            let f = SocketAddr::from(([192, 0, 2, 3], 7000 + port));
            let mut other = SecureChannel::initiator(keys().0, now, 1);
            let _ = desk.handle(now, f, &other.poll_transmit(now).unwrap(), 0);
        }
        assert!(desk.callers.len() <= BusyConfig::default().max_callers);
    }
}
