use super::*;
use crate::rendezvous::Rendezvous;
use std::cell::RefCell;

fn keys() -> (MeetKey, MeetKey, MeetKey) {
    let secret = |b: u8| x25519_dalek::StaticSecret::from([b; 32]);
    let public = |s: &x25519_dalek::StaticSecret| x25519_dalek::PublicKey::from(s).to_bytes();
    let (a, b, c) = (secret(1), secret(2), secret(3));
    let (pa, pb, pc) = (public(&a), public(&b), public(&c));
    (
        MeetKey::new(&a.to_bytes(), &pa, &pb),
        MeetKey::new(&b.to_bytes(), &pb, &pa),
        MeetKey::new(&c.to_bytes(), &pc, &pb),
    )
}

const RENDEZVOUS: ([u8; 4], u16) = ([203, 0, 113, 30], 7000);

fn host(ip: [u8; 4], port: u16) -> Candidate {
    Candidate {
        kind: Kind::Host,
        addr: SocketAddr::from((ip, port)),
    }
}

/// Two sides and a rendezvous on one network where `a_seen_as(dest, n)` says from which
/// address A's `n`-th datagram to `dest` arrives (a NAT's mapping). Runs until both met or
/// `limit_ms`; returns when each met, in ms.
fn run(
    a: Meeting,
    b: Meeting,
    a_seen_as: impl Fn(SocketAddr, usize) -> SocketAddr,
    b_starts_ms: u64,
    limit_ms: u64,
) -> (Option<u64>, Option<u64>, Meeting, Meeting) {
    run_recorded(
        a,
        b,
        a_seen_as,
        b_starts_ms,
        limit_ms,
        &RefCell::new(Vec::new()),
    )
}

/// [`run`], every datagram either side sent appended to `sent`, in order.
fn run_recorded(
    mut a: Meeting,
    mut b: Meeting,
    a_seen_as: impl Fn(SocketAddr, usize) -> SocketAddr,
    b_starts_ms: u64,
    limit_ms: u64,
    sent: &RefCell<Vec<Outgoing>>,
) -> (Option<u64>, Option<u64>, Meeting, Meeting) {
    let rdv_addr = SocketAddr::from(RENDEZVOUS);
    let a_addr = a.local[0].addr;
    let b_addr = b.local[0].addr;
    let mut rdv = Rendezvous::new();
    let mut sent_by_a: std::collections::HashMap<SocketAddr, usize> = Default::default();
    let (mut a_met, mut b_met) = (None, None);
    for ms in 0..limit_ms {
        let now = Instant::from_millis(ms);
        a.handle_timeout(now);
        if ms >= b_starts_ms {
            b.handle_timeout(now);
        }
        let mut moved = true;
        while moved {
            moved = false;
            while let Some(o) = a.poll_transmit() {
                moved = true;
                sent.borrow_mut().push(o.clone());
                if o.ttl.is_some() {
                    continue; // an opener dies on the way
                }
                let n = sent_by_a.entry(o.to).or_default();
                *n += 1;
                let from = a_seen_as(o.to, *n);
                if o.to == rdv_addr {
                    if let Some(reply) = rdv.handle(now, from, &o.bytes) {
                        a.handle_datagram(now, rdv_addr, false, &reply);
                    }
                } else if o.to == b_addr && ms >= b_starts_ms {
                    b.handle_datagram(now, from, false, &o.bytes);
                }
            }
            while let Some(o) = b.poll_transmit() {
                moved = true;
                sent.borrow_mut().push(o.clone());
                if o.ttl.is_some() {
                    continue;
                }
                if o.to == rdv_addr {
                    if let Some(reply) = rdv.handle(now, b_addr, &o.bytes) {
                        b.handle_datagram(now, rdv_addr, false, &reply);
                    }
                } else if a_seen_as(b_addr, 0) == o.to || o.to == a_addr {
                    a.handle_datagram(now, b_addr, false, &o.bytes);
                }
            }
        }
        while let Some(e) = a.poll_event() {
            if matches!(e, MeetEvent::Met(_)) && a_met.is_none() {
                a_met = Some(ms);
            }
        }
        while let Some(e) = b.poll_event() {
            if matches!(e, MeetEvent::Met(_)) && b_met.is_none() {
                b_met = Some(ms);
            }
        }
        if a_met.is_some() && b_met.is_some() {
            break;
        }
    }
    (a_met, b_met, a, b)
}

fn b_rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(2)
}

fn meeting(key: MeetKey, ip: [u8; 4], port: u16) -> Meeting {
    let config = MeetConfig::new(SocketAddr::from(RENDEZVOUS));
    Meeting::new(key, config, vec![host(ip, port)], Instant::from_millis(0))
}

#[test]
fn two_sides_meet_through_the_rendezvous_directly() {
    let (ka, kb, _) = keys();
    let a = meeting(ka, [192, 0, 2, 1], 5000);
    let b = meeting(kb, [198, 51, 100, 1], 6000);
    let a_addr = SocketAddr::from(([192, 0, 2, 1], 5000));
    let (a_met, b_met, a, b) = run(a, b, |_, _| a_addr, 0, 2000);
    assert!(a_met.is_some() && b_met.is_some(), "{a_met:?} {b_met:?}");
    assert!(a_met.unwrap() < 500 && b_met.unwrap() < 500);
    assert_eq!(
        a.best().unwrap().remote,
        SocketAddr::from(([198, 51, 100, 1], 6000))
    );
    assert_eq!(b.best().unwrap().remote, a_addr);
    assert!(!a.best().unwrap().relayed);
    assert_ne!(
        a.dials(),
        b.dials(),
        "exactly one side starts the handshake"
    );
}

/// The conntrack case: A's checks to B leave from a port nobody announced (its NAT gave the
/// flow a new port because B's check arrived first); B's triggered checks find it.
#[test]
fn a_port_nobody_announced_is_found_by_triggered_checks() {
    let (ka, kb, _) = keys();
    let a = meeting(ka, [192, 0, 2, 1], 5000);
    let b = meeting(kb, [198, 51, 100, 1], 6000);
    let announced = SocketAddr::from(([192, 0, 2, 1], 5000));
    let b_addr = SocketAddr::from(([198, 51, 100, 1], 6000));
    let renumbered = SocketAddr::from(([192, 0, 2, 1], 31000));
    // Towards B, A is seen at another port (B's datagrams to A's announced port still reach A).
    let seen = move |to: SocketAddr, _| if to == b_addr { renumbered } else { announced };
    let (a_met, b_met, _, b) = run(a, b, seen, 700, 5000);
    assert!(a_met.is_some() && b_met.is_some(), "{a_met:?} {b_met:?}");
    assert_eq!(b.best().unwrap().remote, renumbered);
}

#[test]
fn a_stranger_registered_under_the_id_is_ignored_and_forged_checks_are_refused() {
    let (ka, kb, stranger) = keys();
    let mut a = meeting(ka, [192, 0, 2, 1], 5000);
    let rdv = SocketAddr::from(RENDEZVOUS);
    // The stranger's introduction, sealed under a key that is not theirs.
    let forged = Introduction {
        run: 1,
        started_ms: 0,
        candidates: vec![host([203, 0, 113, 66], 1)],
    };
    let blob = stranger.seal(&forged.emit(), &mut b_rng());
    let peers = rendezvous::emit_peers(SocketAddr::from(([192, 0, 2, 1], 5000)), &[&blob]);
    let now = Instant::from_millis(0);
    assert!(a.handle_datagram(now, rdv, false, &peers));
    assert!(
        a.remotes.is_empty(),
        "nothing learnt from a blob it cannot open"
    );
    // A check sealed by the stranger, and one of A's own reflected back.
    let stranger_check = {
        let mut m = meeting(stranger, [203, 0, 113, 66], 1);
        m.check_bytes(IS_CHECK, 9)
    };
    let mut b = meeting(kb, [198, 51, 100, 1], 6000);
    let from = SocketAddr::from(([203, 0, 113, 66], 1));
    b.handle_datagram(now, from, false, &stranger_check);
    let own = a.check_bytes(IS_CHECK, 4);
    a.handle_datagram(now, from, false, &own);
    assert_eq!(a.poll_transmit(), None, "no answer to its own check");
    assert_eq!(b.poll_transmit(), None, "no answer to a forged check");
    assert_eq!(a.stats().refused + b.stats().refused, 2);
    // An ack for a transaction never sent moves nothing.
    let ack = b.check_bytes(IS_ACK, 12345);
    a.handle_datagram(now, from, false, &ack);
    assert_eq!(a.best(), None);
}

#[test]
fn every_new_candidate_gets_an_opener_first_and_checks_after_the_lead() {
    let (ka, kb, _) = keys();
    let mut a = meeting(ka, [192, 0, 2, 1], 5000);
    let b_blob = {
        let b = meeting(kb, [198, 51, 100, 1], 6000);
        b.key.seal(
            &Introduction {
                run: 7,
                started_ms: 0,
                candidates: b.local.clone(),
            }
            .emit(),
            &mut b_rng(),
        )
    };
    let rdv = SocketAddr::from(RENDEZVOUS);
    let t0 = Instant::from_millis(0);
    let peers = rendezvous::emit_peers(SocketAddr::from(([192, 0, 2, 1], 5000)), &[&b_blob]);
    a.handle_datagram(t0, rdv, false, &peers);
    let opener = a.poll_transmit().expect("an opener");
    assert_eq!(opener.ttl, Some(2));
    assert_eq!(opener.to, SocketAddr::from(([198, 51, 100, 1], 6000)));
    a.handle_timeout(t0 + Duration::from_millis(100));
    assert!(
        std::iter::from_fn(|| a.poll_transmit()).all(|o| o.to == rdv),
        "no check before the lead"
    );
    a.handle_timeout(t0 + Duration::from_millis(200));
    let check = a.poll_transmit().expect("a check");
    assert_eq!((check.ttl, check.to), (None, opener.to));
}

/// A stranger resending a check it saw (from its own address) gets no answer and no checks:
/// each check is answered once.
#[test]
fn a_replayed_check_is_answered_no_second_time() {
    let (ka, kb, _) = keys();
    let mut a = meeting(ka, [192, 0, 2, 1], 5000);
    let mut b = meeting(kb, [198, 51, 100, 1], 6000);
    let check = a.check_bytes(IS_CHECK, 42);
    let now = Instant::from_millis(0);
    let peer = SocketAddr::from(([192, 0, 2, 1], 5000));
    b.handle_datagram(now, peer, false, &check);
    assert!(std::iter::from_fn(|| b.poll_transmit()).any(|o| o.to == peer));
    let stranger = SocketAddr::from(([203, 0, 113, 66], 9));
    b.handle_datagram(now, stranger, false, &check);
    b.handle_timeout(now + Duration::from_secs(1));
    assert!(std::iter::from_fn(|| b.poll_transmit()).all(|o| o.to != stranger));
}

/// A relayed pair is met first; a direct pair acknowledged later is met again and replaces it
/// (the link then stops relaying), while checks to the direct candidates go on until then.
#[test]
fn a_direct_pair_found_later_replaces_a_relayed_one() {
    let (ka, kb, _) = keys();
    let mut a = meeting(ka, [192, 0, 2, 1], 5000);
    let mut b = meeting(kb, [198, 51, 100, 1], 6000);
    let now = Instant::from_millis(0);
    let relayed_peer = SocketAddr::from(([203, 0, 113, 100], 50000));
    let direct_peer = SocketAddr::from(([198, 51, 100, 1], 6000));
    // B's check arrives through A's relay: A answers and checks back through it.
    a.handle_datagram(now, relayed_peer, true, &b.check_bytes(IS_CHECK, 1));
    assert!(
        std::iter::from_fn(|| a.poll_transmit())
            .any(|o| o.via_relay && o.bytes[1] == CHECK && o.to == relayed_peer),
        "an answer through the relay"
    );
    a.handle_timeout(now);
    let (txid, _, _) = *a
        .transactions
        .iter()
        .find(|(_, to, v)| *to == relayed_peer && *v)
        .expect("a triggered check through the relay");
    a.handle_datagram(now, relayed_peer, true, &b.check_bytes(IS_ACK, txid));
    let relayed = a.best().expect("met through the relay");
    assert!(relayed.relayed && relayed.via_relay);
    // Later the direct candidate answers too.
    a.add_remote(now, direct_peer, Kind::Reflexive, false);
    let later = now + Duration::from_millis(300);
    a.handle_timeout(later);
    let (txid, _, _) = *a
        .transactions
        .iter()
        .find(|(_, to, v)| *to == direct_peer && !*v)
        .expect("checks to the direct candidate go on during the relayed call");
    a.handle_datagram(later, direct_peer, false, &b.check_bytes(IS_ACK, txid));
    let direct = a.best().unwrap();
    assert_eq!((direct.remote, direct.relayed), (direct_peer, false));
    let events: Vec<MeetEvent> = std::iter::from_fn(|| a.poll_event()).collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, MeetEvent::Met(_)))
            .count(),
        2
    );
}

/// Issue 57: a meeting draws only from its seed, so one seed replays it datagram for
/// datagram (run ids, transaction ids, seal nonces); another seed changes them.
#[test]
fn one_seed_replays_a_meeting_exactly() {
    let transcript = |seed: u64| {
        let (ka, kb, _) = keys();
        let side = |key, ip, port, seed| {
            let config = MeetConfig {
                seed,
                ..MeetConfig::new(SocketAddr::from(RENDEZVOUS))
            };
            Meeting::new(key, config, vec![host(ip, port)], Instant::from_millis(0))
        };
        let a = side(ka, [192, 0, 2, 1], 5000, seed);
        let b = side(kb, [198, 51, 100, 1], 6000, seed + 1);
        let a_addr = SocketAddr::from(([192, 0, 2, 1], 5000));
        let sent = RefCell::new(Vec::new());
        let (a_met, b_met, _, _) = run_recorded(a, b, |_, _| a_addr, 0, 600, &sent);
        assert!(a_met.is_some() && b_met.is_some());
        sent.into_inner()
    };
    let first = transcript(7);
    assert!(first.len() > 4, "{} datagrams", first.len());
    assert_eq!(first, transcript(7));
    assert_ne!(first, transcript(9));
}

/// The peer's introduction of run `run`, started at `started_ms`, reachable at `port`.
fn b_intro(kb: &MeetKey, run: u64, started_ms: u64, port: u16) -> Vec<u8> {
    let intro = Introduction {
        run,
        started_ms,
        candidates: vec![host([198, 51, 100, 1], port)],
    };
    kb.seal(&intro.emit(), &mut ChaCha8Rng::seed_from_u64(run))
}

/// The rendezvous still lists an earlier run of the peer (a call ended and made again within
/// its idle time), in either order: the run that started last is followed, and an answer
/// with only the old run (a stranger registering it again) changes nothing.
#[test]
fn of_two_runs_of_the_peer_the_later_is_followed() {
    let (ka, kb, _) = keys();
    let rdv = SocketAddr::from(RENDEZVOUS);
    let seen = SocketAddr::from(([192, 0, 2, 1], 5000));
    let (old, new) = (b_intro(&kb, 1, 1_000, 6001), b_intro(&kb, 2, 2_000, 6002));
    let checked = |a: &mut Meeting, now: Instant| -> Vec<u16> {
        a.handle_timeout(now);
        let mut ports: Vec<u16> = std::iter::from_fn(|| a.poll_transmit())
            .filter(|o| o.to != rdv)
            .map(|o| o.to.port())
            .collect();
        ports.dedup();
        ports
    };
    for order in [[&old, &new], [&new, &old]] {
        let mut a = meeting(ka.clone(), [192, 0, 2, 1], 5000);
        let t0 = Instant::from_millis(0);
        let peers = rendezvous::emit_peers(seen, &[order[0].as_slice(), order[1].as_slice()]);
        a.handle_datagram(t0, rdv, false, &peers);
        assert_eq!(checked(&mut a, t0), [6002], "openers to the later run only");
        let t1 = Instant::from_millis(300);
        let stale = rendezvous::emit_peers(seen, &[old.as_slice()]);
        a.handle_datagram(t1, rdv, false, &stale);
        assert_eq!(checked(&mut a, t1), [6002], "checks to the later run only");
    }
}
