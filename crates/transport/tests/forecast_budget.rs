//! The forecast budget, the ACK-stall rules and the quantizer walk from the budget, driven by
//! hand: what the sender may send and ask for after ACKs, and while ACKs are silent.

use salsify_codec::StateHash;
use salsify_time::{Duration, Instant};
use salsify_transport::fake::{FakeEncoder, FakeFrame, FakeState};
use salsify_transport::wire::{Ack, AckForecast, DataFragment, FragmentId, DATA_HEADER_LEN};
use salsify_transport::*;

type FakeSender = Sender<FakeFrame>;

/// A sender that sent one keyframe of several fragments at time 0, all of them out of the
/// pacer; returns it and the fragment count.
fn sender_with_a_frame_out(config: SenderConfig) -> (FakeSender, u64) {
    let enc = FakeEncoder::default();
    let mut s = Sender::new(config, FakeState(StateHash::INITIAL)).unwrap();
    let now = Instant::ZERO;
    s.handle_frame(now, 0, now);
    let request = loop {
        match s.poll_output(now) {
            SenderOutput::Encode(r) => break r,
            SenderOutput::Timeout(_) => panic!("no encode request"),
            _ => {}
        }
    };
    let EncodeJob::Qualities(qs) = &request.job else {
        panic!("two options")
    };
    let frames = qs
        .iter()
        .map(|&q| enc.encode(&request.source, 0, q))
        .collect();
    s.handle_encoded(now, request.id, frames).unwrap();
    let mut count = 0;
    let mut t = now;
    loop {
        match s.poll_output(t) {
            SenderOutput::Transmit(b) => {
                DataFragment::parse(&b).unwrap();
                count += 1;
            }
            SenderOutput::Timeout(next) if next != Instant::FAR_FUTURE => t = next,
            SenderOutput::Timeout(_) => break,
            _ => {}
        }
    }
    assert!(count > 2, "a keyframe spans several fragments");
    (s, count)
}

fn ack(number: u32, highest: u16, forecast: Option<AckForecast>) -> Vec<u8> {
    let a = Ack {
        connection_id: SenderConfig::default().connection_id,
        ack_number: number,
        acked: FragmentId {
            frame: 0,
            index: highest,
        },
        highest: FragmentId {
            frame: 0,
            index: highest,
        },
        mean_interarrival: Some(Duration::from_millis(1)),
        current_state: StateHash::INITIAL,
        frames_lost: 0,
        held_states: vec![],
        forecast,
    };
    let mut out = Vec::new();
    a.emit(&mut out).unwrap();
    out
}

fn forecast(per_tick: u16) -> AckForecast {
    AckForecast {
        tick: Duration::from_millis(20),
        counts: (1..=8).map(|i| i * per_tick).collect(),
    }
}

/// Whole fragments of the default size in `units` packet units of 1500 wire bytes.
fn fragments(units: f64) -> f64 {
    units * 1500.0 / (1400 + DATA_HEADER_LEN) as f64
}

#[test]
fn the_forecast_budget_is_what_drains_within_d_less_what_is_in_flight() {
    let config = SenderConfig {
        budget: BudgetSource::Forecast,
        ..SenderConfig::default()
    };
    let (mut s, count) = sender_with_a_frame_out(config);
    let t = Instant::from_millis(50);
    // Before any forecast, the EWMA: tau 1 ms, d 100 ms.
    s.handle_datagram(t, &ack(0, 1, None)).unwrap();
    let in_flight = count - 2;
    assert_eq!(s.budget_now(t), Some(1400 * (100 - in_flight as usize)));
    // 4 units per 20 ms tick: 20 units within 100 ms, far below the EWMA's 100 fragments.
    s.handle_datagram(t, &ack(1, 1, Some(forecast(4)))).unwrap();
    let expected = (fragments(20.0).floor() as u64).saturating_sub(in_flight) as usize * 1400;
    assert_eq!(s.budget_now(t), Some(expected));
    // An ACK without a forecast keeps the last one.
    s.handle_datagram(t, &ack(2, 1, None)).unwrap();
    assert_eq!(s.budget_now(t), Some(expected));
    // The paper's budget itself is untouched.
    assert_eq!(s.budget(), Some(1400 * (100 - in_flight as usize)));
}

#[test]
fn the_forecast_budget_freezes_in_silence_unless_the_link_is_drained() {
    let forecast_config = |ack_stall| SenderConfig {
        budget: BudgetSource::Forecast,
        slow_link: SlowLinkConfig {
            ack_stall,
            ..SlowLinkConfig::default()
        },
        ..SenderConfig::default()
    };
    let t = Instant::from_millis(50);
    let mut budgets = Vec::new();
    for ack_stall in [AckStall::Probe, AckStall::Drain] {
        let (mut s, _) = sender_with_a_frame_out(forecast_config(ack_stall));
        s.handle_datagram(t, &ack(0, 0, Some(forecast(10))))
            .unwrap();
        let at = |ms| s.budget_now(t + Duration::from_millis(ms)).unwrap();
        budgets.push((at(0), at(100), at(1000), at(5000), at(60_000)));
    }
    let (probe, drain) = (budgets[0], budgets[1]);
    assert!(probe.0 > 0);
    assert_eq!(
        probe,
        (probe.0, probe.0, probe.0, probe.0, probe.0),
        "frozen"
    );
    // Drain: the same until the ACK is overdue (250 ms at least), then growing, bounded.
    assert_eq!((drain.0, drain.1), (probe.0, probe.0));
    assert!(drain.2 > drain.1, "{drain:?}");
    assert!(drain.3 > drain.2, "{drain:?}");
    // 10 units per tick = 500 units/s; half-life 0.5 s: at most ~361 units ~ 375 fragments more.
    let bound = (fragments(500.0 * 0.5 / std::f64::consts::LN_2) + 2.0) as usize * 1400;
    assert!(drain.4 - drain.0 <= bound, "{drain:?} vs {bound}");
    assert!(drain.4 - drain.3 < (drain.3 - drain.0) / 4, "{drain:?}");
}

#[test]
fn draining_delays_the_outage_until_the_rate_has_decayed() {
    let config = |ack_stall| SenderConfig {
        slow_link: SlowLinkConfig {
            ack_stall,
            ..SlowLinkConfig::default()
        },
        ..SenderConfig::default()
    };
    let t = Instant::from_millis(50);
    let (mut probe, _) = sender_with_a_frame_out(config(AckStall::Probe));
    let (mut drain, _) = sender_with_a_frame_out(config(AckStall::Drain));
    for s in [&mut probe, &mut drain] {
        s.handle_datagram(t, &ack(0, 0, None)).unwrap();
    }
    let after = |ms| t + Duration::from_millis(ms);
    assert!(!probe.outage_suspected(after(100)));
    assert!(probe.outage_suspected(after(300)));
    // Drain: overdue after 250 ms, three half-lives of 500 ms later an outage.
    assert!(!drain.outage_suspected(after(300)));
    assert!(!drain.outage_suspected(after(1700)));
    assert!(drain.outage_suspected(after(1800)));
    // No frames may be sent past the last ACK: the outage comes as without draining.
    let (mut limited, _) = sender_with_a_frame_out(SenderConfig {
        slow_link: SlowLinkConfig {
            ack_stall: AckStall::Drain,
            max_drain_frames: 0,
            ..SlowLinkConfig::default()
        },
        ..SenderConfig::default()
    });
    limited.handle_datagram(t, &ack(0, 0, None)).unwrap();
    assert!(!limited.outage_suspected(after(100)));
    assert!(limited.outage_suspected(after(300)));
    // With the EWMA, draining grows the budget past the frozen one too.
    assert!(drain.budget_now(after(1000)) > probe.budget_now(after(1000)));
}
