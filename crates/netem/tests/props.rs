//! Property tests: the trace parser round-trips and never panics; the link keeps its
//! invariants for arbitrary traces, queues, loss and arrival patterns.

use proptest::prelude::*;
use salsify_netem::{
    Admission, Delivered, Link, LinkConfig, LinkEventKind, LossModel, LossPlacement, QueueLimit,
    Trace,
};
use salsify_time::{Duration, Instant};

/// Valid traces: nondecreasing, last > 0, with repeats.
fn trace_millis() -> impl Strategy<Value = Vec<u64>> {
    (0u64..50, prop::collection::vec(0u64..30, 0..60)).prop_map(|(first, steps)| {
        let mut v = vec![first];
        for s in steps {
            let next = v[v.len() - 1] + s;
            v.push(next);
        }
        let n = v.len();
        if v[n - 1] == 0 {
            v[n - 1] = 1;
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn traces_round_trip_through_text(millis in trace_millis()) {
        let t = Trace::from_millis(millis.clone()).unwrap();
        let text = t.to_mahimahi_string();
        let back = Trace::parse(&text).unwrap();
        prop_assert_eq!(back.millis(), &millis[..]);
        prop_assert_eq!(back.period(), Duration::from_millis(*millis.last().unwrap()));
    }

    #[test]
    fn the_parser_never_panics_on_text(text in ".{0,200}") {
        let _ = Trace::parse(&text);
    }

    #[test]
    fn the_parser_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(t) = Trace::from_reader(&bytes[..]) {
            // Anything accepted is a valid trace.
            prop_assert!(t.millis().windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(t.period() > Duration::ZERO);
        }
    }

    #[test]
    fn the_parser_never_panics_on_near_valid_text(
        lines in prop::collection::vec("[0-9 \\-+x\\r]{0,6}", 0..30)
    ) {
        let _ = Trace::parse(&lines.join("\n"));
    }
}

#[derive(Debug, Clone)]
struct Scenario {
    millis: Vec<u64>,
    queue: QueueLimit,
    loss: f64,
    exit_loss: bool,
    delay_ms: u64,
    /// (gap since previous arrival in µs, size in bytes)
    arrivals: Vec<(u64, usize)>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let queue = prop_oneof![
        Just(QueueLimit::UNLIMITED),
        (1u32..20).prop_map(QueueLimit::packets),
        (1500u64..20_000).prop_map(QueueLimit::bytes),
    ];
    (
        trace_millis(),
        queue,
        prop_oneof![Just(0.0), 0.0..0.5f64],
        any::<bool>(),
        0u64..50,
        prop::collection::vec((0u64..5_000, 1usize..=1500), 0..200),
    )
        .prop_map(
            |(millis, queue, loss, exit_loss, delay_ms, arrivals)| Scenario {
                millis,
                queue,
                loss,
                exit_loss,
                delay_ms,
                arrivals,
            },
        )
}

fn config(s: &Scenario, events: bool) -> LinkConfig {
    let mut c = LinkConfig::with_trace(Trace::from_millis(s.millis.clone()).unwrap());
    c.queue = s.queue;
    c.propagation_delay = Duration::from_millis(s.delay_ms);
    c.loss = vec![LossModel::iid(s.loss)];
    if s.exit_loss {
        c.loss_placement = LossPlacement::Exit;
    }
    c.seed = 3;
    c.record_events = events;
    c
}

struct Run {
    delivered: Vec<Delivered<usize>>,
    admitted: usize,
    offered: usize,
    events: Vec<LinkEventKind>,
    link: Link<usize>,
}

/// Offers the arrivals, checking the queue limit after each, then drains the link.
fn run(s: &Scenario, events: bool) -> Result<Run, TestCaseError> {
    let mut link = Link::new(config(s, events), Instant::from_millis(7)).unwrap();
    let mut now = Instant::from_millis(7);
    let (mut delivered, mut admitted, mut log) = (Vec::new(), 0, Vec::new());
    for (i, &(gap, size)) in s.arrivals.iter().enumerate() {
        now += Duration::from_micros(gap);
        while let Some(d) = link.poll_delivery(now) {
            delivered.push(d);
        }
        if link.handle_packet(now, i, size).unwrap() == Admission::Queued {
            admitted += 1;
        }
        prop_assert!(s.queue.admits(link.queued_packets(), link.queued_bytes()));
        while let Some(e) = link.poll_event() {
            log.push(e);
        }
    }
    let mut wakeups = 0;
    while let Some(t) = link.poll_timeout() {
        wakeups += 1;
        prop_assert!(wakeups < 100_000, "link stuck at {:?}", t);
        prop_assert!(t >= now, "timeout in the past");
        now = t;
        while let Some(d) = link.poll_delivery(now) {
            delivered.push(d);
        }
    }
    link.handle_timeout(now);
    while let Some(e) = link.poll_event() {
        log.push(e);
    }
    prop_assert!(
        log.windows(2).all(|w| w[0].time <= w[1].time),
        "events out of order"
    );
    Ok(Run {
        delivered,
        admitted,
        offered: s.arrivals.len(),
        events: log.into_iter().map(|e| e.kind).collect(),
        link,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_link_keeps_its_invariants(s in scenario()) {
        let r = run(&s, false)?;
        let trace = r.link.trace().clone();
        let delay = Duration::from_millis(s.delay_ms);
        // Packets out <= packets admitted <= packets in.
        prop_assert!(r.delivered.len() <= r.admitted && r.admitted <= r.offered);
        // FIFO.
        prop_assert!(r.delivered.windows(2).all(|w| w[0].seq < w[1].seq));
        for d in &r.delivered {
            // A packet never leaves at the instant it arrives (Mahimahi plays the
            // opportunity first), and it arrives one propagation delay after leaving.
            prop_assert!(d.departed_at > d.enqueued_at);
            prop_assert_eq!(d.delivered_at, d.departed_at + delay);
            prop_assert!(d.delivered_at >= d.enqueued_at + delay);
            // It leaves at one of the trace's opportunities.
            let rel = d.departed_at - r.link.start();
            let before = trace.opportunities_until(rel - Duration::from_micros(1));
            prop_assert!(trace.opportunities_until(rel) > before, "not an opportunity: {:?}", rel);
        }
        // Conservation once drained: everything admitted is delivered or lost on exit.
        let st = r.link.stats();
        prop_assert_eq!(st.packets_in as usize, r.offered);
        prop_assert_eq!(st.packets_in, st.packets_delivered + st.dropped_queue_full + st.dropped_lost);
        prop_assert_eq!(st.packets_delivered as usize, r.delivered.len());
        if s.loss == 0.0 {
            prop_assert_eq!(r.delivered.len(), r.admitted);
        }
    }

    #[test]
    fn recording_events_changes_nothing_else(s in scenario()) {
        let quiet = run(&s, false)?;
        let logged = run(&s, true)?;
        prop_assert!(quiet.events.is_empty());
        prop_assert_eq!(&quiet.delivered, &logged.delivered);
        prop_assert_eq!(quiet.link.stats(), logged.link.stats());
        // The log accounts for every packet and opportunity.
        let count = |f: fn(&LinkEventKind) -> bool| logged.events.iter().filter(|e| f(e)).count() as u64;
        let st = logged.link.stats();
        prop_assert_eq!(count(|e| matches!(e, LinkEventKind::Arrival { .. })), st.packets_in);
        prop_assert_eq!(count(|e| matches!(e, LinkEventKind::Departure { .. })), st.packets_departed);
        prop_assert_eq!(count(|e| matches!(e, LinkEventKind::Opportunity { .. })), st.opportunities);
        prop_assert_eq!(
            count(|e| matches!(e, LinkEventKind::Drop { .. })),
            st.dropped_queue_full + st.dropped_lost
        );
    }
}
