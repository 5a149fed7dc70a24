//! An introduction: what a peer tells the other through the rendezvous, sealed with their
//! shared key: a random id of this run (a restarted peer is a new run) and its candidate
//! addresses, each with its kind.
//!
//! ```text
//! 0 run id u64 | 8 count u8 | {kind u8, address (19)}*      (sealed: crate::seal)
//! ```

use std::net::SocketAddr;

use crate::addr::{self, ADDR_LEN};

/// Most candidates an introduction carries.
pub const MAX_CANDIDATES: usize = 8;

/// What kind of address a candidate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The host's own address.
    Host,
    /// The address a NAT maps the host's socket to, as a STUN server or the rendezvous saw it.
    Reflexive,
    /// An address on a TURN relay that forwards to the host.
    Relayed,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Host => 1,
            Kind::Reflexive => 2,
            Kind::Relayed => 3,
        }
    }

    fn of(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Host),
            2 => Some(Kind::Reflexive),
            3 => Some(Kind::Relayed),
            _ => None,
        }
    }
}

/// A candidate address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Candidate {
    /// Its kind.
    pub kind: Kind,
    /// The address.
    pub addr: SocketAddr,
}

/// One peer's introduction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Introduction {
    /// This run of the peer.
    pub run: u64,
    /// When this run started, by the peer's wall clock (ms since the Unix epoch): of two
    /// runs of the peer the rendezvous still lists (a call ended and made again), the later
    /// is the live one, and a stranger who registers an old run's introduction again cannot
    /// make it look newer.
    pub started_ms: u64,
    /// Where it may be reached, at most [`MAX_CANDIDATES`].
    pub candidates: Vec<Candidate>,
}

impl Introduction {
    /// Its bytes (before sealing); candidates past [`MAX_CANDIDATES`] are left out.
    pub fn emit(&self) -> Vec<u8> {
        let mut b = self.run.to_be_bytes().to_vec();
        b.extend_from_slice(&self.started_ms.to_be_bytes());
        let n = self.candidates.len().min(MAX_CANDIDATES);
        b.push(n as u8);
        for c in &self.candidates[..n] {
            b.push(c.kind.byte());
            addr::put(&mut b, c.addr);
        }
        b
    }

    /// Parses an opened introduction. Never panics.
    pub fn parse(b: &[u8]) -> Option<Introduction> {
        let run = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let started_ms = u64::from_be_bytes(b.get(8..16)?.try_into().ok()?);
        let n = usize::from(*b.get(16)?);
        if n > MAX_CANDIDATES || b.len() != 17 + n * (1 + ADDR_LEN) {
            return None;
        }
        let mut candidates = Vec::with_capacity(n);
        for i in 0..n {
            let at = 17 + i * (1 + ADDR_LEN);
            candidates.push(Candidate {
                kind: Kind::of(b[at])?,
                addr: addr::get(&b[at + 1..])?,
            });
        }
        Some(Introduction {
            run,
            started_ms,
            candidates,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn introductions_survive_the_wire(run in any::<u64>(), started_ms in any::<u64>(), ports in proptest::collection::vec(any::<u16>(), 0..=8)) {
            let candidates = ports
                .iter()
                .enumerate()
                .map(|(i, p)| Candidate {
                    kind: [Kind::Host, Kind::Reflexive, Kind::Relayed][i % 3],
                    addr: SocketAddr::from(([192, 0, 2, i as u8], *p)),
                })
                .collect();
            let intro = Introduction { run, started_ms, candidates };
            prop_assert_eq!(Introduction::parse(&intro.emit()), Some(intro));
        }

        #[test]
        fn any_bytes_parse_without_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Introduction::parse(&b);
        }
    }
}
