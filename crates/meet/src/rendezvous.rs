//! The rendezvous: a server that introduces two peers and nothing else, and its wire.
//!
//! A peer registers under the id both peers derive from their public keys
//! ([`crate::MeetKey::id`]) with an introduction sealed for the other (its candidate
//! addresses); the server answers with the introductions of everyone else registered under
//! the same id and the address it saw the request come from (a server-reflexive candidate).
//! It holds no key: it can neither read nor forge an introduction, and a stranger who
//! registers under the id (ids are not secret) only adds an entry the peers cannot open, so
//! registering first wins nothing. The newest other registrant under the id is told of the
//! registration at once (one datagram, no longer than the registration), so the two sides
//! learn of each other together and their openers leave together (`crate::meeting`). Every
//! request is padded to [`REGISTER_LEN`] bytes and no answer is longer, so a spoofed source
//! cannot make it a flood; one address holds at most
//! [`MAX_PER_IP`] entries, an id at most [`MAX_PER_ID`], and entries idle for
//! [`IDLE_AFTER`] are forgotten.
//!
//! ```text
//! register  0 tag 0xD9 | 1 kind 1 | 2 id (32) | 34 blob length u16 | 36 blob | zeros to 600
//! peers     0 tag 0xD9 | 1 kind 2 | 2 observed address (19) | 21 count u8 | {length u16, blob}*
//! ```

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use salsify_time::{Duration, Instant};

use crate::addr::{self, ADDR_LEN};

/// First byte of every meeting datagram (the rendezvous's and the connectivity checks').
pub const MEET_TAG: u8 = 0xD9;
const REGISTER: u8 = 1;
const PEERS: u8 = 2;
/// Bytes of every registration (padded): the most a reply may be.
pub const REGISTER_LEN: usize = 600;
/// Longest introduction a registration carries.
pub const MAX_BLOB: usize = REGISTER_LEN - 36;
/// Entries kept under one id (the two peers, and room for strangers' entries beside them).
pub const MAX_PER_ID: usize = 6;
/// Entries one IP address may hold in all.
pub const MAX_PER_IP: usize = 8;
/// Entries held in all.
pub const MAX_ENTRIES: usize = 10_000;
/// An entry not registered again for this long is forgotten.
pub const IDLE_AFTER: Duration = Duration::from_secs(30);

/// A registration.
pub fn emit_register(id: &[u8; 32], blob: &[u8]) -> Option<Vec<u8>> {
    if blob.len() > MAX_BLOB {
        return None;
    }
    let mut b = vec![MEET_TAG, REGISTER];
    b.extend_from_slice(id);
    b.extend_from_slice(&(blob.len() as u16).to_be_bytes());
    b.extend_from_slice(blob);
    b.resize(REGISTER_LEN, 0);
    Some(b)
}

/// A registration's id and blob; `None` unless exactly the shape above.
pub fn parse_register(b: &[u8]) -> Option<([u8; 32], &[u8])> {
    if b.len() != REGISTER_LEN || b[0] != MEET_TAG || b[1] != REGISTER {
        return None;
    }
    let mut id = [0u8; 32];
    id.copy_from_slice(&b[2..34]);
    let len = usize::from(u16::from_be_bytes([b[34], b[35]]));
    let blob = b.get(36..36 + len)?;
    Some((id, blob))
}

/// The server's answer: the address it saw and the others' introductions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peers {
    /// Where the registration came from, as the server saw it.
    pub observed: SocketAddr,
    /// The introductions of the others under the id.
    pub blobs: Vec<Vec<u8>>,
}

/// A `peers` answer, as many introductions as fit in [`REGISTER_LEN`].
pub fn emit_peers(observed: SocketAddr, blobs: &[&[u8]]) -> Vec<u8> {
    let mut b = vec![MEET_TAG, PEERS];
    addr::put(&mut b, observed);
    b.push(0);
    let count_at = b.len() - 1;
    for blob in blobs {
        if b.len() + 2 + blob.len() > REGISTER_LEN {
            break;
        }
        b.extend_from_slice(&(blob.len() as u16).to_be_bytes());
        b.extend_from_slice(blob);
        b[count_at] += 1;
    }
    b
}

/// Parses a `peers` answer. Never panics.
pub fn parse_peers(b: &[u8]) -> Option<Peers> {
    if b.len() < 2 + ADDR_LEN + 1 || b.len() > REGISTER_LEN || b[0] != MEET_TAG || b[1] != PEERS {
        return None;
    }
    let observed = addr::get(&b[2..])?;
    let count = b[2 + ADDR_LEN];
    let mut at = 3 + ADDR_LEN;
    let mut blobs = Vec::new();
    for _ in 0..count {
        let len = usize::from(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]));
        blobs.push(b.get(at + 2..at + 2 + len)?.to_vec());
        at += 2 + len;
    }
    (at == b.len()).then_some(Peers { observed, blobs })
}

/// A datagram for another registrant: where, and its bytes.
pub type News = (SocketAddr, Vec<u8>);

struct Entry {
    from: SocketAddr,
    blob: Vec<u8>,
    seen: Instant,
}

/// Counters of the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RendezvousStats {
    /// Registrations taken.
    pub registered: u64,
    /// Datagrams refused (wrong shape, over a limit).
    pub refused: u64,
    /// Entries forgotten for being idle.
    pub expired: u64,
}

/// The rendezvous server, sans-IO: datagrams in, answers out.
#[derive(Default)]
pub struct Rendezvous {
    entries: HashMap<[u8; 32], Vec<Entry>>,
    per_ip: HashMap<IpAddr, usize>,
    total: usize,
    stats: RendezvousStats,
}

impl Rendezvous {
    /// An empty server.
    pub fn new() -> Self {
        Rendezvous::default()
    }

    /// Counters so far.
    pub fn stats(&self) -> RendezvousStats {
        self.stats
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// A datagram from `from`: the answer to send back, if any.
    pub fn handle(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
        self.handle_and_tell(now, from, bytes)
            .map(|(answer, _)| answer)
    }

    /// As [`Rendezvous::handle`], and the news for the newest other registrant under the id:
    /// (its address, a `peers` datagram with this registration's introduction).
    pub fn handle_and_tell(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
    ) -> Option<(Vec<u8>, Option<News>)> {
        let Some((id, blob)) = parse_register(bytes) else {
            self.stats.refused += 1;
            return None;
        };
        let known = self
            .entries
            .get(&id)
            .is_some_and(|list| list.iter().any(|e| e.from == from));
        if !known {
            let ip_full = self.per_ip.get(&from.ip()).copied().unwrap_or(0) >= MAX_PER_IP;
            if ip_full || self.total >= MAX_ENTRIES {
                self.stats.refused += 1;
                return None;
            }
        }
        self.stats.registered += 1;
        let list = self.entries.entry(id).or_default();
        match list.iter_mut().find(|e| e.from == from) {
            Some(e) => {
                e.blob = blob.to_vec();
                e.seen = now;
            }
            None => {
                if list.len() == MAX_PER_ID {
                    // The one registered least recently goes: the peers register again every
                    // second, so a stranger's entries cannot keep them out for long.
                    let oldest = (0..list.len()).min_by_key(|&i| list[i].seen).unwrap_or(0);
                    let gone = list.remove(oldest);
                    forget(&mut self.per_ip, gone.from.ip());
                    self.total -= 1;
                }
                list.push(Entry {
                    from,
                    blob: blob.to_vec(),
                    seen: now,
                });
                *self.per_ip.entry(from.ip()).or_default() += 1;
                self.total += 1;
            }
        }
        let mut others: Vec<&Entry> = list.iter().filter(|e| e.from != from).collect();
        others.sort_by_key(|e| std::cmp::Reverse(e.seen));
        let blobs: Vec<&[u8]> = others.iter().map(|e| e.blob.as_slice()).collect();
        let news = others
            .first()
            .map(|other| (other.from, emit_peers(other.from, &[blob])));
        Some((emit_peers(from, &blobs), news))
    }

    /// Forgets entries idle for [`IDLE_AFTER`].
    pub fn expire(&mut self, now: Instant) {
        let per_ip = &mut self.per_ip;
        let mut gone = 0;
        self.entries.retain(|_, list| {
            list.retain(|e| {
                let keep = now.saturating_duration_since(e.seen) < IDLE_AFTER;
                if !keep {
                    forget(per_ip, e.from.ip());
                    gone += 1;
                }
                keep
            });
            !list.is_empty()
        });
        self.total -= gone;
        self.stats.expired += gone as u64;
    }
}

fn forget(per_ip: &mut HashMap<IpAddr, usize>, ip: IpAddr) {
    if let Some(n) = per_ip.get_mut(&ip) {
        *n -= 1;
        if *n == 0 {
            per_ip.remove(&ip);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(port: u16) -> SocketAddr {
        SocketAddr::from(([198, 51, 100, 1], port))
    }

    #[test]
    fn two_peers_are_introduced_and_answers_are_never_longer_than_requests() {
        let mut r = Rendezvous::new();
        let t = Instant::from_millis(0);
        let id = [3u8; 32];
        let first = r
            .handle(t, a(1), &emit_register(&id, b"blob one").unwrap())
            .unwrap();
        assert_eq!(
            parse_peers(&first),
            Some(Peers {
                observed: a(1),
                blobs: vec![]
            })
        );
        let second = r
            .handle(t, a(2), &emit_register(&id, b"blob two").unwrap())
            .unwrap();
        assert!(second.len() <= REGISTER_LEN);
        assert_eq!(
            parse_peers(&second),
            Some(Peers {
                observed: a(2),
                blobs: vec![b"blob one".to_vec()]
            })
        );
        // Another id sees neither.
        let other = r
            .handle(t, a(3), &emit_register(&[4u8; 32], b"x").unwrap())
            .unwrap();
        assert_eq!(parse_peers(&other).unwrap().blobs, Vec::<Vec<u8>>::new());
    }

    #[test]
    fn the_other_registrant_hears_of_a_registration_at_once() {
        let mut r = Rendezvous::new();
        let t = Instant::from_millis(0);
        let id = [3u8; 32];
        let (_, news) = r
            .handle_and_tell(t, a(1), &emit_register(&id, b"one").unwrap())
            .unwrap();
        assert_eq!(news, None, "nobody to tell");
        let request = emit_register(&id, b"two").unwrap();
        let (_, news) = r.handle_and_tell(t, a(2), &request).unwrap();
        let (to, bytes) = news.expect("news for the first");
        assert_eq!(to, a(1));
        assert!(bytes.len() <= request.len());
        assert_eq!(
            parse_peers(&bytes),
            Some(Peers {
                observed: a(1),
                blobs: vec![b"two".to_vec()]
            })
        );
    }

    #[test]
    fn short_or_unpadded_requests_get_nothing() {
        let mut r = Rendezvous::new();
        let t = Instant::from_millis(0);
        let full = emit_register(&[1u8; 32], b"b").unwrap();
        assert_eq!(r.handle(t, a(1), &full[..100]), None);
        assert_eq!(r.handle(t, a(1), &[MEET_TAG, REGISTER]), None);
        assert_eq!(r.stats().refused, 2);
        assert!(r.is_empty());
    }

    #[test]
    fn one_address_holds_a_bounded_number_of_entries_and_idle_ones_go() {
        let mut r = Rendezvous::new();
        let t = Instant::from_millis(0);
        for i in 0..20u8 {
            r.handle(
                t,
                a(u16::from(i) + 1),
                &emit_register(&[i; 32], b"b").unwrap(),
            );
        }
        assert_eq!(r.len(), MAX_PER_IP);
        r.expire(t + IDLE_AFTER);
        assert!(r.is_empty());
        assert_eq!(r.stats().expired, MAX_PER_IP as u64);
    }

    #[test]
    fn strangers_under_the_id_cannot_push_out_a_peer_that_keeps_registering() {
        let mut r = Rendezvous::new();
        let id = [5u8; 32];
        let mut t = Instant::from_millis(0);
        let stranger = |i: u16| SocketAddr::from(([203, 0, 113, (i % 200) as u8 + 1], 7));
        for round in 0..5u16 {
            // The peer registers once a second; strangers from many addresses in between.
            r.handle(t, a(1), &emit_register(&id, b"peer").unwrap());
            for i in 0..3 {
                r.handle(
                    t,
                    stranger(round * 3 + i),
                    &emit_register(&id, b"junk").unwrap(),
                );
            }
            t += Duration::from_secs(1);
        }
        let answer = r
            .handle(t, a(2), &emit_register(&id, b"other peer").unwrap())
            .unwrap();
        assert!(parse_peers(&answer)
            .unwrap()
            .blobs
            .contains(&b"peer".to_vec()));
    }

    proptest! {
        #[test]
        fn any_bytes_get_an_answer_no_longer_than_themselves_or_none(
            bytes in proptest::collection::vec(any::<u8>(), 0..700)
        ) {
            let mut r = Rendezvous::new();
            if let Some(answer) = r.handle(Instant::from_millis(0), a(1), &bytes) {
                prop_assert!(answer.len() <= bytes.len());
            }
            let _ = parse_peers(&bytes);
        }

        #[test]
        fn peers_answers_survive_the_wire(blobs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..5)) {
            let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
            let bytes = emit_peers(a(9), &refs);
            let parsed = parse_peers(&bytes).unwrap();
            prop_assert_eq!(&parsed.blobs[..], &blobs[..parsed.blobs.len()]);
        }
    }
}
