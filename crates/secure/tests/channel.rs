//! The secure channel between an initiator and a responder: handshake, sealing, and the
//! bar's rule that a forged, replayed, truncated or bit-flipped datagram changes no state.

use proptest::prelude::*;
use salsify_secure::{
    wire, ChannelState, Incoming, Keypair, Rejected, SecureChannel, SecureConfig,
};
use salsify_time::{Duration, Instant};

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

struct Pair {
    sender: SecureChannel,
    receiver: SecureChannel,
    sender_keys: Keypair,
    receiver_keys: Keypair,
}

fn configs() -> (Keypair, Keypair, SecureConfig, SecureConfig) {
    let (s, r) = (Keypair::generate().unwrap(), Keypair::generate().unwrap());
    let sc = SecureConfig::new(s.private.clone(), r.public);
    let rc = SecureConfig::new(r.private.clone(), s.public);
    (s, r, sc, rc)
}

/// An initiator and a responder that completed their handshake at 0 ms.
fn established() -> Pair {
    let (sender_keys, receiver_keys, sc, rc) = configs();
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let mut receiver = SecureChannel::responder(rc, at(0));
    handshake(&mut sender, &mut receiver, at(0));
    // The first datagram under the new keys confirms them at the responder.
    let first = data(&mut sender, at(0), b"confirm");
    opened(&mut receiver, at(0), &first);
    Pair {
        sender,
        receiver,
        sender_keys,
        receiver_keys,
    }
}

/// Carries the initiator's pending init to the responder and the reply back.
fn handshake(sender: &mut SecureChannel, receiver: &mut SecureChannel, now: Instant) {
    let init = sender.poll_transmit(now).expect("an init");
    assert_eq!(init[0], wire::TYPE_INIT);
    let Ok(Incoming::Reply(reply)) = receiver.handle_datagram(now, &init) else {
        panic!("the responder answers");
    };
    assert_eq!(
        sender.handle_datagram(now, &reply),
        Ok(Incoming::Established)
    );
}

fn data(channel: &mut SecureChannel, now: Instant, bytes: &[u8]) -> Vec<u8> {
    channel.seal(now, bytes).expect("keys to seal with")
}

fn opened(channel: &mut SecureChannel, now: Instant, bytes: &[u8]) -> Vec<u8> {
    match channel.handle_datagram(now, bytes) {
        Ok(Incoming::Data(d)) => d,
        other => panic!("expected data, got {other:?}"),
    }
}

#[test]
fn a_handshake_releases_held_datagrams_and_data_flows_both_ways() {
    let (_, _, sc, rc) = configs();
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let mut receiver = SecureChannel::responder(rc, at(0));
    assert_eq!(receiver.seal(at(0), b"no keys yet"), None);
    // The endpoint sends before the handshake is done: held.
    assert_eq!(sender.seal(at(1), b"fragment 0"), None);
    assert_eq!(sender.seal(at(2), b"fragment 1"), None);
    let init = sender.poll_transmit(at(2)).unwrap();
    assert_eq!(
        sender.poll_transmit(at(2)),
        None,
        "nothing else before a reply"
    );
    let Ok(Incoming::Reply(reply)) = receiver.handle_datagram(at(5), &init) else {
        panic!()
    };
    assert!(
        !receiver.is_established(at(5)),
        "not until the peer uses the keys"
    );
    assert_eq!(
        sender.handle_datagram(at(9), &reply),
        Ok(Incoming::Established)
    );
    let first = sender.poll_transmit(at(9)).unwrap();
    let second = sender.poll_transmit(at(9)).unwrap();
    assert_eq!(first.len(), b"fragment 0".len() + wire::OVERHEAD);
    assert_eq!(opened(&mut receiver, at(10), &second), b"fragment 1");
    assert_eq!(
        opened(&mut receiver, at(10), &first),
        b"fragment 0",
        "reordered"
    );
    assert!(receiver.is_established(at(10)));
    let ack = data(&mut receiver, at(11), b"ack");
    assert_eq!(opened(&mut sender, at(12), &ack), b"ack");
    let s = receiver.stats();
    assert_eq!((s.opened, s.rejected, s.established), (2, 0, 1));
}

#[test]
fn held_datagrams_expire_and_an_unanswered_handshake_is_retried() {
    let (_, _, sc, _) = configs();
    let retry = sc.handshake_retry;
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let first = sender.poll_transmit(at(0)).unwrap();
    sender.seal(at(0), b"old");
    assert_eq!(sender.poll_timeout(), at(0) + retry);
    let again = sender.poll_transmit(at(0) + retry).unwrap();
    assert_eq!(again[0], wire::TYPE_INIT);
    assert_ne!(
        again, first,
        "a fresh init (new ephemeral key, index, timestamp)"
    );
    assert_eq!(
        sender.poll_transmit(at(1500)).map(|d| d[0]),
        Some(wire::TYPE_INIT)
    );
    assert_eq!(sender.state().held, 0, "held for 1 s at most");
    assert_eq!(sender.stats().unsent, 1);
}

/// Mutations of a valid datagram that an attacker on the path can make.
fn tampered(valid: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![
        ("replayed".to_string(), valid.to_vec()),
        ("empty".to_string(), Vec::new()),
    ];
    for cut in [1, 5, 13, valid.len() / 2, valid.len() - 1] {
        out.push((format!("truncated to {cut}"), valid[..cut].to_vec()));
    }
    for bit in (0..valid.len() * 8).step_by(7) {
        let mut flipped = valid.to_vec();
        flipped[bit / 8] ^= 1 << (bit % 8);
        out.push((format!("bit {bit} flipped"), flipped));
    }
    let mut longer = valid.to_vec();
    longer.push(0);
    out.push(("one byte longer".to_string(), longer));
    out
}

fn assert_unchanged(channel: &mut SecureChannel, now: Instant, bad: &[(String, Vec<u8>)]) {
    let before: ChannelState = channel.state();
    let rejected = channel.stats().rejected;
    for (what, bytes) in bad {
        let result = channel.handle_datagram(now, bytes);
        assert!(result.is_err(), "{what}: accepted as {result:?}");
        assert_eq!(channel.state(), before, "{what} changed the state");
    }
    assert_eq!(channel.stats().rejected, rejected + bad.len() as u64);
}

#[test]
fn forged_replayed_truncated_or_flipped_datagrams_change_nothing() {
    let mut p = established();
    // Data, both ways, each already accepted once.
    let video = data(&mut p.sender, at(1), &[42u8; 300]);
    opened(&mut p.receiver, at(1), &video);
    let ack = data(&mut p.receiver, at(2), &[7u8; 40]);
    opened(&mut p.sender, at(2), &ack);
    assert_unchanged(&mut p.receiver, at(3), &tampered(&video));
    assert_unchanged(&mut p.sender, at(3), &tampered(&ack));
    // A fresh datagram still opens: nothing above used up its counter.
    let next = data(&mut p.sender, at(4), b"still fine");
    assert_eq!(opened(&mut p.receiver, at(4), &next), b"still fine");
    // A forgery with a fresh counter: refused, and the counter stays free for the real one.
    let mut forged = data(&mut p.sender, at(5), b"real");
    let real = forged.clone();
    let n = forged.len();
    forged[n - 1] ^= 0x80;
    assert_eq!(
        p.receiver.handle_datagram(at(5), &forged),
        Err(Rejected::Forged)
    );
    assert_eq!(opened(&mut p.receiver, at(5), &real), b"real");
    assert_eq!(
        p.receiver.handle_datagram(at(6), &real),
        Err(Rejected::Replayed)
    );
}

#[test]
fn replayed_or_tampered_handshakes_change_nothing_and_do_not_interrupt_the_session() {
    let (_, _, sc, rc) = configs();
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let mut receiver = SecureChannel::responder(rc, at(0));
    let init = sender.poll_transmit(at(0)).unwrap();
    let Ok(Incoming::Reply(reply)) = receiver.handle_datagram(at(0), &init) else {
        panic!()
    };
    // A tampered response leaves the initiator's handshake usable.
    assert_unchanged(&mut sender, at(1), &tampered(&reply)[1..]);
    assert_eq!(
        sender.handle_datagram(at(1), &reply),
        Ok(Incoming::Established)
    );
    let video = data(&mut sender, at(2), b"frame");
    opened(&mut receiver, at(2), &video);
    // The init replayed (and tampered with): refused without touching the session.
    let mut bad = tampered(&init);
    bad.retain(|(what, _)| what != "empty");
    assert_unchanged(&mut receiver, at(3), &bad);
    // (Later, when the rate limit has tokens again: refused for its timestamp.)
    assert_eq!(
        receiver.handle_datagram(at(4000), &init),
        Err(Rejected::StaleHandshake)
    );
    // The response replayed at the initiator: refused.
    assert_eq!(
        sender.handle_datagram(at(4), &reply),
        Err(Rejected::UnexpectedHandshake)
    );
    let more = data(&mut sender, at(5), b"frame 2");
    assert_eq!(opened(&mut receiver, at(5), &more), b"frame 2");
}

#[test]
fn a_stranger_without_the_keys_gets_nothing_through() {
    let mut p = established();
    let stranger = Keypair::generate().unwrap();
    // Knows the receiver's public key but not the sender's private key.
    let mut impostor = SecureChannel::initiator(
        SecureConfig::new(stranger.private.clone(), p.receiver_keys.public),
        at(0),
        u64::MAX / 2,
    );
    let init = impostor.poll_transmit(at(0)).unwrap();
    let before = p.receiver.state();
    assert_eq!(
        p.receiver.handle_datagram(at(1), &init),
        Err(Rejected::HandshakeRefused)
    );
    // Even holding the sender's public key changes nothing: it is not a secret.
    let mut impostor = SecureChannel::initiator(
        SecureConfig::new(stranger.private.clone(), p.sender_keys.public),
        at(0),
        u64::MAX / 2,
    );
    let init = impostor.poll_transmit(at(0)).unwrap();
    assert_eq!(
        p.receiver.handle_datagram(at(1), &init),
        Err(Rejected::HandshakeRefused)
    );
    // Data under a guessed session index, or the live one, with made-up ciphertext.
    let live = p.receiver.session_id().unwrap();
    for index in [live, live.wrapping_add(1), 0] {
        let mut forged = wire::data_header(index, 99, 100);
        forged.extend_from_slice(&[0x55; 100]);
        assert!(p.receiver.handle_datagram(at(2), &forged).is_err());
    }
    assert_eq!(p.receiver.state(), before);
}

#[test]
fn handshakes_are_rate_limited() {
    let (_, _, sc, rc) = configs();
    let burst = rc.handshake_burst as usize;
    let mut receiver = SecureChannel::responder(rc, at(0));
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let mut answered = 0;
    for i in 0..3 * burst {
        sender.restart(at(i as u64));
        let init = sender.poll_transmit(at(i as u64)).unwrap();
        match receiver.handle_datagram(at(0), &init) {
            Ok(Incoming::Reply(_)) => answered += 1,
            Err(Rejected::RateLimited) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered, burst);
    // Tokens come back with time.
    sender.restart(at(1000));
    let init = sender.poll_transmit(at(1000)).unwrap();
    assert!(matches!(
        receiver.handle_datagram(at(1000), &init),
        Ok(Incoming::Reply(_))
    ));
}

#[test]
fn keys_are_renewed_without_a_gap_and_old_keys_expire() {
    let mut p = established();
    let rekey =
        SecureConfig::new(p.sender_keys.private.clone(), p.receiver_keys.public).rekey_after;
    let t = at(0) + rekey;
    assert_eq!(p.sender.poll_timeout(), t);
    let old_id = p.receiver.session_id();
    let v = data(&mut p.sender, at(10), b"before");
    opened(&mut p.receiver, at(10), &v);
    let late_ack = data(&mut p.receiver, at(10), b"late ack");
    // Due: a new handshake, while data keeps flowing under the old keys.
    handshake(&mut p.sender, &mut p.receiver, t);
    assert_eq!(
        p.receiver.session_id(),
        old_id,
        "not switched before confirmation"
    );
    let ack = data(&mut p.receiver, t, b"old keys ack");
    let v = data(&mut p.sender, t, b"new keys");
    assert_eq!(opened(&mut p.receiver, t, &v), b"new keys");
    assert_ne!(p.receiver.session_id(), old_id, "confirmed: switched");
    // ACKs sealed under the old keys still open (previous session), as do new ones.
    assert_eq!(opened(&mut p.sender, t, &ack), b"old keys ack");
    assert_eq!(opened(&mut p.sender, t, &late_ack), b"late ack");
    let new_ack = data(&mut p.receiver, t, b"new ack");
    assert_eq!(opened(&mut p.sender, t, &new_ack), b"new ack");
    // Keys never renewed are refused once past their limit.
    let mut q = established();
    let old = data(&mut q.sender, at(0), b"x");
    let limit = at(0) + Duration::from_secs(180);
    assert_eq!(
        q.receiver.handle_datagram(limit, &old),
        Err(Rejected::Expired)
    );
    assert_eq!(q.sender.seal(limit, b"y"), None, "held for a new handshake");
}

#[test]
fn a_restarted_responder_ignores_old_keys_until_the_initiator_restarts() {
    let mut p = established();
    let (_, _, _, _) = configs();
    let rc = SecureConfig::new(p.receiver_keys.private.clone(), p.sender_keys.public);
    let mut fresh = SecureChannel::responder(rc, at(0));
    let v = data(&mut p.sender, at(1), b"frame");
    assert_eq!(
        fresh.handle_datagram(at(1), &v),
        Err(Rejected::UnknownSession)
    );
    p.sender.restart(at(2));
    handshake(&mut p.sender, &mut fresh, at(2));
    let v = data(&mut p.sender, at(3), b"frame");
    assert_eq!(opened(&mut fresh, at(3), &v), b"frame");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any edit of a valid data datagram (bytes changed, cut or added) is refused and
    /// changes nothing.
    #[test]
    fn any_edit_of_a_datagram_is_refused(
        payload in prop::collection::vec(any::<u8>(), 1..200),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
        extra in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut p = established();
        let valid = data(&mut p.sender, at(1), &payload);
        let mut bad = valid.clone();
        for (i, x) in edits {
            let i = i.index(bad.len());
            bad[i] ^= x;
        }
        if let Some(c) = cut {
            bad.truncate(c.index(bad.len()));
        }
        bad.extend(extra);
        prop_assume!(bad != valid);
        let before = p.receiver.state();
        prop_assert!(p.receiver.handle_datagram(at(2), &bad).is_err());
        prop_assert_eq!(p.receiver.state(), before);
        prop_assert_eq!(opened(&mut p.receiver, at(3), &valid), payload);
    }

    /// Random bytes never open, whatever their first byte claims.
    #[test]
    fn random_bytes_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..120)) {
        let mut p = established();
        let before = p.receiver.state();
        prop_assert!(p.receiver.handle_datagram(at(2), &bytes).is_err());
        prop_assert_eq!(p.receiver.state(), before);
    }
}

/// On a path whose round trip is longer than the retry interval, the answer to an earlier
/// attempt still completes the handshake, and retries back off.
#[test]
fn a_slow_path_completes_the_handshake_and_retries_back_off() {
    let (_, _, sc, rc) = configs();
    let mut sender = SecureChannel::initiator(sc, at(0), 1_000);
    let mut receiver = SecureChannel::responder(rc, at(0));
    let first = sender.poll_transmit(at(0)).unwrap();
    let second = sender.poll_transmit(at(500)).unwrap();
    assert_eq!(sender.poll_timeout(), at(1500), "the interval doubled");
    // 400 ms each way: the first init arrives, then the second; answers come back late.
    let Ok(Incoming::Reply(reply1)) = receiver.handle_datagram(at(400), &first) else {
        panic!()
    };
    let Ok(Incoming::Reply(_reply2)) = receiver.handle_datagram(at(900), &second) else {
        panic!()
    };
    assert_eq!(
        sender.handle_datagram(at(800), &reply1),
        Ok(Incoming::Established)
    );
    assert_eq!(sender.poll_timeout(), at(800) + Duration::from_secs(120));
    let v = data(&mut sender, at(801), b"frame");
    assert_eq!(opened(&mut receiver, at(1201), &v), b"frame");
    assert_eq!(receiver.state().sessions.len(), 2, "other attempts dropped");
    let ack = data(&mut receiver, at(1201), b"ack");
    assert_eq!(opened(&mut sender, at(1601), &ack), b"ack");
}

/// Only a datagram newer than every one its session accepted may move the peer (roaming):
/// a reordered one is not the newest, nor is anything after it that is older.
#[test]
fn the_newest_datagram_is_told_from_late_ones() {
    let mut p = established();
    let a = data(&mut p.sender, at(1), b"a");
    let b = data(&mut p.sender, at(1), b"b");
    let c = data(&mut p.sender, at(1), b"c");
    opened(&mut p.receiver, at(2), &b);
    assert!(p.receiver.last_opened_newest());
    opened(&mut p.receiver, at(2), &a);
    assert!(!p.receiver.last_opened_newest(), "reordered: older than b");
    opened(&mut p.receiver, at(2), &c);
    assert!(p.receiver.last_opened_newest());
    // A replay is refused outright and leaves the flag as it was for c.
    assert_eq!(
        p.receiver.handle_datagram(at(3), &c),
        Err(Rejected::Replayed)
    );
}
