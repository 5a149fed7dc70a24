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
use salsify_secure::{Incoming, SecureChannel, SecureConfig};
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
}

impl Default for BusyConfig {
    fn default() -> Self {
        BusyConfig {
            live_within: Duration::from_millis(250),
            max_callers: 4,
            keep: Duration::from_secs(5),
            max_busy: 3,
        }
    }
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
            refused: 0,
        }
    }

    /// Whether the desk takes `bytes` from `from` while the call's peer (`peer`, last heard
    /// `heard`) is live: a handshake from another address, or anything from a caller it
    /// holds.
    pub fn takes(
        &self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        peer: SocketAddr,
        heard: Instant,
    ) -> bool {
        let live = now.saturating_duration_since(heard) < self.config.live_within;
        let init = bytes.first() == Some(&salsify_secure::wire::TYPE_INIT);
        from != peer && live && (init || self.callers.iter().any(|c| c.from == from))
    }

    /// Takes a datagram from a second caller; returns what to send back to it.
    pub fn handle(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Vec<Vec<u8>> {
        let keep = self.config.keep;
        self.callers
            .retain(|c| now.saturating_duration_since(c.since) < keep);
        if !self.callers.iter().any(|c| c.from == from) {
            if self.callers.len() >= self.config.max_callers {
                self.callers.pop_front();
            }
            self.callers.push_back(Caller {
                from,
                channel: SecureChannel::responder(self.keys.clone(), now),
                since: now,
                busy_sent: 0,
            });
        }
        let max_busy = self.config.max_busy;
        let Some(caller) = self.callers.iter_mut().find(|c| c.from == from) else {
            return Vec::new();
        };
        match caller.channel.handle_datagram(now, bytes) {
            Ok(Incoming::Reply(reply)) => vec![reply],
            Ok(Incoming::Data(_)) if caller.busy_sent < max_busy => {
                caller.busy_sent += 1;
                let sealed = caller.channel.seal(now, &Control::Busy.encode());
                self.refused += u64::from(sealed.is_some());
                sealed.into_iter().collect()
            }
            _ => Vec::new(),
        }
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
        assert!(desk.takes(now, from, &init, peer, now));
        assert!(!desk.takes(now, peer, &init, peer, now), "the peer itself");
        let stale = now + Duration::from_secs(1);
        assert!(
            !desk.takes(stale, from, &init, peer, now),
            "a silent peer is not live"
        );
        let reply = desk.handle(now, from, &init);
        assert_eq!(reply.len(), 1);
        assert!(matches!(
            caller.handle_datagram(now, &reply[0]),
            Ok(Incoming::Established)
        ));
        let mut told = 0;
        for _ in 0..5 {
            let hello = caller.seal(now, &[1, 2, 3]).unwrap();
            assert!(desk.takes(now, from, &hello, peer, now));
            for answer in desk.handle(now, from, &hello) {
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
            desk.handle(now, f, &other.poll_transmit(now).unwrap());
        }
        assert!(desk.callers.len() <= BusyConfig::default().max_callers);
    }
}
