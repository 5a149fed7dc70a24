use super::*;
use proptest::prelude::*;

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

/// Everything `c` has to say at `now`: its datagrams and its delivered messages.
fn drain(c: &mut DataChannel, now: Instant) -> (Vec<Vec<u8>>, Vec<Message>) {
    let (mut out, mut got) = (Vec::new(), Vec::new());
    loop {
        match c.poll_output(now) {
            DataOutput::Transmit(d) => out.push(d),
            DataOutput::Event(m) => got.push(m),
            DataOutput::Timeout(_) => return (out, got),
        }
    }
}

fn payloads(ms: &[Message]) -> Vec<Vec<u8>> {
    ms.iter().map(|m| m.payload.clone()).collect()
}

#[test]
fn messages_round_trip_on_the_wire() {
    let m = DataDatagram::Message {
        delivery: Delivery::Latest,
        stream: 7,
        seq: 42,
        sent_at: at(1234),
        payload: b"stick 0.5 -0.25".to_vec(),
    };
    assert_eq!(DataDatagram::parse(&m.encode()), Ok(m));
    let a = DataDatagram::Ack {
        next: 9,
        answering: 8,
    };
    assert_eq!(a.encode().len(), ACK_LEN);
    assert_eq!(DataDatagram::parse(&a.encode()), Ok(a));
}

#[test]
fn malformed_datagrams_are_refused_and_counted() {
    let mut c = DataChannel::new(DataConfig::default());
    let good = DataDatagram::Message {
        delivery: Delivery::Ordered,
        stream: 0,
        seq: 0,
        sent_at: at(0),
        payload: vec![1, 2, 3],
    }
    .encode();
    let mut long = good.clone();
    long.push(0);
    assert_eq!(
        c.handle_message(at(0), &long),
        Err(DataWireError::Length(23))
    );
    let mut flags = good.clone();
    flags[2] = 0x80;
    assert_eq!(
        c.handle_message(at(0), &flags),
        Err(DataWireError::Flags(0x80))
    );
    let mut stream = good.clone();
    stream[4] = 1; // an ordered message on stream 1
    assert_eq!(
        c.handle_message(at(0), &stream),
        Err(DataWireError::Flags(1))
    );
    let mut kind = good.clone();
    kind[1] = 9;
    assert_eq!(c.handle_message(at(0), &kind), Err(DataWireError::Kind(9)));
    assert_eq!(
        c.handle_message(at(0), &[0x01]),
        Err(DataWireError::NotData)
    );
    let mut empty = good[..MESSAGE_HEADER_LEN].to_vec();
    empty[17..19].copy_from_slice(&[0, 0]);
    assert_eq!(
        c.handle_message(at(0), &empty),
        Err(DataWireError::PayloadSize(0))
    );
    assert_eq!(c.stats().bad, 6);
    assert_eq!(drain(&mut c, at(0)), (vec![], vec![]));
}

#[test]
fn sizes_are_checked_when_sent() {
    let mut c = DataChannel::new(DataConfig::default());
    assert_eq!(
        c.send(at(0), Delivery::Ordered, 0, &[]),
        Err(DataSendError::Size(0))
    );
    let big = vec![0u8; MAX_MESSAGE + 1];
    assert_eq!(
        c.send(at(0), Delivery::Latest, 0, &big),
        Err(DataSendError::Size(MAX_MESSAGE + 1))
    );
    assert!(c
        .send(at(0), Delivery::Latest, 0, &big[..MAX_MESSAGE])
        .is_ok());
}

#[test]
fn ordered_messages_arrive_once_in_order_despite_loss_and_reordering() {
    let mut a = DataChannel::new(DataConfig::default());
    let mut b = DataChannel::new(DataConfig::default());
    for i in 0..5u8 {
        a.send(at(0), Delivery::Ordered, 0, &[i]).unwrap();
    }
    let (sent, _) = drain(&mut a, at(0));
    assert_eq!(sent.len(), 5);
    // 1 is lost; 4 comes before 2 and 3.
    for i in [0, 4, 2, 3] {
        b.handle_message(at(10), &sent[i]).unwrap();
    }
    let (acks, got) = drain(&mut b, at(10));
    assert_eq!(payloads(&got), vec![vec![0u8]]);
    for ack in &acks {
        a.handle_message(at(20), ack).unwrap();
    }
    assert_eq!(a.unacked(), 4, "only 0 is acknowledged");
    // The timeout resends 1..=4; b delivers 1 then the held 2, 3, 4, and drops copies.
    a.handle_timeout(at(20) + a.current_timeout());
    let (resent, _) = drain(&mut a, at(400));
    assert_eq!(resent.len(), 4);
    for d in &resent {
        b.handle_message(at(410), d).unwrap();
    }
    let (acks, got) = drain(&mut b, at(410));
    assert_eq!(payloads(&got), vec![vec![1u8], vec![2], vec![3], vec![4]]);
    assert_eq!(b.stats().delivered, 5);
    assert_eq!(b.stats().dropped, 3);
    for ack in &acks {
        a.handle_message(at(420), ack).unwrap();
    }
    assert_eq!(a.unacked(), 0);
    assert_eq!(a.stats().retransmitted, 4);
    assert_eq!(drain(&mut a, at(420)).0.len(), 0);
}

#[test]
fn a_newer_latest_message_replaces_a_queued_one_and_an_older_one_is_dropped() {
    let mut a = DataChannel::new(DataConfig::default());
    let mut b = DataChannel::new(DataConfig::default());
    a.send(at(0), Delivery::Latest, 1, b"x=1").unwrap();
    a.send(at(1), Delivery::Latest, 2, b"y=1").unwrap();
    a.send(at(2), Delivery::Latest, 1, b"x=2").unwrap();
    let (sent, _) = drain(&mut a, at(2));
    assert_eq!(sent.len(), 2, "x=1 was superseded before it went out");
    assert_eq!(a.stats().superseded, 1);
    a.send(at(3), Delivery::Latest, 1, b"x=3").unwrap();
    let (newer, _) = drain(&mut a, at(3));
    // x=3 overtakes x=2 on the way: x=2 is then older than what was delivered.
    b.handle_message(at(5), &newer[0]).unwrap();
    b.handle_message(at(6), &sent[1]).unwrap();
    b.handle_message(at(6), &sent[0]).unwrap();
    let (acks, got) = drain(&mut b, at(6));
    assert!(acks.is_empty(), "latest messages are never acknowledged");
    assert_eq!(payloads(&got), vec![b"x=3".to_vec(), b"y=1".to_vec()]);
    assert_eq!(got[0].delivered_at, at(5));
    assert_eq!(got[0].sent_at, at(3));
    assert_eq!(b.stats().dropped, 1);
    // Never retransmitted.
    a.handle_timeout(at(10_000));
    assert!(drain(&mut a, at(10_000)).0.is_empty());
}

#[test]
fn the_timeout_follows_the_round_trip_and_backs_off() {
    let config = DataConfig::default();
    let mut a = DataChannel::new(config.clone());
    let mut b = DataChannel::new(config.clone());
    assert_eq!(a.current_timeout(), config.initial_timeout);
    for i in 0..20u64 {
        a.send(at(i * 100), Delivery::Ordered, 0, b"cmd").unwrap();
        let (d, _) = drain(&mut a, at(i * 100));
        b.handle_message(at(i * 100 + 30), &d[0]).unwrap();
        let (ack, _) = drain(&mut b, at(i * 100 + 30));
        a.handle_message(at(i * 100 + 60), &ack[0]).unwrap();
    }
    let rto = a.current_timeout();
    assert!(
        rto >= Duration::from_millis(60) && rto < Duration::from_millis(100),
        "{rto:?}"
    );
    a.send(at(5000), Delivery::Ordered, 0, b"lost").unwrap();
    drain(&mut a, at(5000));
    let DataOutput::Timeout(first) = a.poll_output(at(5000)) else {
        panic!("a deadline")
    };
    assert_eq!(first, at(5000) + rto);
    a.handle_timeout(first);
    assert_eq!(drain(&mut a, first).0.len(), 1);
    let DataOutput::Timeout(second) = a.poll_output(first) else {
        panic!("a deadline")
    };
    assert_eq!(second, first + rto * 2, "doubled after firing");
}

#[test]
fn the_backlog_is_bounded() {
    let config = DataConfig {
        max_unacked: 3,
        ..DataConfig::default()
    };
    let mut a = DataChannel::new(config);
    for _ in 0..3 {
        a.send(at(0), Delivery::Ordered, 0, b"m").unwrap();
    }
    assert_eq!(
        a.send(at(0), Delivery::Ordered, 0, b"m"),
        Err(DataSendError::Backlog(3))
    );
    assert!(a.send(at(0), Delivery::Latest, 0, b"m").is_ok());
}

proptest! {
    #[test]
    fn parsing_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut c = DataChannel::new(DataConfig::default());
        let _ = c.handle_message(at(0), &bytes);
        let _ = drain(&mut c, at(0));
    }

    /// Whatever is lost, duplicated or reordered, every ordered message is delivered once
    /// and in order once the channel has run its retransmissions.
    #[test]
    fn ordered_delivery_survives_any_loss_pattern(
        n in 1usize..30,
        fate in proptest::collection::vec(0u8..4, 0..400),
    ) {
        let mut a = DataChannel::new(DataConfig::default());
        let mut b = DataChannel::new(DataConfig::default());
        for i in 0..n {
            a.send(at(0), Delivery::Ordered, 0, &(i as u32).to_be_bytes()).unwrap();
        }
        let mut fate = fate.into_iter();
        let mut got = Vec::new();
        let mut now = at(0);
        for _ in 0..200 {
            let (mut to_b, _) = drain(&mut a, now);
            // 0: delivered, 1: lost, 2: duplicated, 3: delayed to after the rest.
            let mut late = Vec::new();
            for d in to_b.drain(..) {
                match fate.next().unwrap_or(0) {
                    1 => {}
                    2 => { b.handle_message(now, &d).unwrap(); b.handle_message(now, &d).unwrap(); }
                    3 => late.push(d),
                    _ => b.handle_message(now, &d).unwrap(),
                }
            }
            for d in late { b.handle_message(now, &d).unwrap(); }
            let (acks, delivered) = drain(&mut b, now);
            got.extend(payloads(&delivered));
            for ack in acks {
                if fate.next().unwrap_or(0) != 1 { a.handle_message(now, &ack).unwrap(); }
            }
            if a.unacked() == 0 { break; }
            now += Duration::from_secs(2);
            a.handle_timeout(now);
        }
        let want: Vec<Vec<u8>> = (0..n).map(|i| (i as u32).to_be_bytes().to_vec()).collect();
        prop_assert_eq!(got, want);
    }
}
