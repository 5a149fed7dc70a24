//! What the loops need around [`salsify_secure`]: the wall clock for handshake timestamps,
//! and a rate-limited log of why datagrams were dropped, so a peer with the wrong key (or
//! none) is told about once in a while rather than per datagram.

use std::collections::HashMap;
use std::mem::Discriminant;
use std::net::SocketAddr;

use salsify_secure::{Incoming, Rejected, SecureChannel};
use salsify_time::{Duration, Instant};

use crate::udp::Received;

/// At most one line per reason this often.
const EVERY: Duration = Duration::from_secs(5);

/// Nanoseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// What a received datagram is for a loop.
#[derive(Debug)]
pub enum Opened {
    /// The scheme's datagram (opened, or as it came without keys).
    Data(Vec<u8>),
    /// A handshake init answered: send this back to the datagram's source.
    Reply(Vec<u8>),
    /// A handshake completed: the channel has datagrams to send.
    Established,
    /// Dropped, and logged.
    Dropped,
}

/// Opens `d` with `channel` (or, without one, passes it on unless it is encrypted), logging
/// what is dropped.
pub fn open(channel: Option<&mut SecureChannel>, drops: &mut DropLog, d: &Received) -> Opened {
    let Some(channel) = channel else {
        if salsify_secure::is_secure(&d.bytes) {
            drops.note(d.at, d.from, Refusal::NoKeys);
            return Opened::Dropped;
        }
        return Opened::Data(d.bytes.clone());
    };
    match channel.handle_datagram(d.at, &d.bytes) {
        Ok(Incoming::Data(plain)) => Opened::Data(plain),
        Ok(Incoming::Reply(reply)) => Opened::Reply(reply),
        Ok(Incoming::Established) => Opened::Established,
        Err(why) => {
            drops.note(d.at, d.from, Refusal::Secure(why));
            Opened::Dropped
        }
    }
}

/// Why a datagram was dropped, as the log groups it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The secure layer refused it.
    Secure(Rejected),
    /// An encrypted datagram at a side that has no keys.
    NoKeys,
}

impl Refusal {
    /// One log line per kind of reason (malformed datagrams differ by first byte; one line
    /// covers them all).
    fn key(&self) -> Option<Discriminant<Rejected>> {
        match self {
            Refusal::Secure(r) => Some(std::mem::discriminant(r)),
            Refusal::NoKeys => None,
        }
    }

    fn text(&self) -> String {
        match self {
            Refusal::Secure(r) => r.to_string(),
            Refusal::NoKeys => "encrypted (salsify secure session), but this side has no keys: \
                                   give it --key and --peer-key"
                .to_string(),
        }
    }
}

/// A rate-limited log of dropped datagrams on standard error.
#[derive(Debug)]
pub struct DropLog {
    who: &'static str,
    /// Per reason: when last printed, and how many since.
    seen: HashMap<Option<Discriminant<Rejected>>, (Option<Instant>, u64)>,
    /// Datagrams dropped in all.
    pub total: u64,
}

impl DropLog {
    /// A log whose lines start with `who` (`salsify recv`).
    pub fn new(who: &'static str) -> Self {
        DropLog {
            who,
            seen: HashMap::new(),
            total: 0,
        }
    }

    /// Counts a dropped datagram; prints a line (and returns true) if this reason has not
    /// been printed for a while.
    pub fn note(&mut self, now: Instant, from: SocketAddr, why: Refusal) -> bool {
        self.total += 1;
        let (last, since) = self.seen.entry(why.key()).or_insert((None, 0));
        *since += 1;
        if last.is_some_and(|t| now.saturating_duration_since(t) < EVERY) {
            return false;
        }
        let more = match *since {
            1 => String::new(),
            n => format!(" ({n} like it since the last report)"),
        };
        eprintln!(
            "{}: ignoring a datagram from {from}: {}{more}",
            self.who,
            why.text()
        );
        *last = Some(now);
        *since = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_secure::wire::WireError;

    #[test]
    fn one_line_per_reason_per_interval() {
        let mut log = DropLog::new("test");
        let from = SocketAddr::from(([127, 0, 0, 1], 9));
        let t = |ms| Instant::from_millis(ms);
        let forged = Refusal::Secure(Rejected::Forged);
        assert!(log.note(t(0), from, forged));
        assert!(!log.note(t(10), from, forged));
        assert!(log.note(t(10), from, Refusal::Secure(Rejected::Replayed)));
        assert!(log.note(t(10), from, Refusal::NoKeys));
        let malformed = |b| Refusal::Secure(Rejected::Malformed(WireError::NotSecure(b)));
        assert!(log.note(t(10), from, malformed(1)));
        assert!(
            !log.note(t(10), from, malformed(2)),
            "one line for any first byte"
        );
        assert!(log.note(t(5000), from, forged));
        assert_eq!(log.total, 7);
    }
}
