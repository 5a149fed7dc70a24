//! The forecast budget, the ACK-stall rules and the quantizer walk from the budget, driven by
//! hand: what the sender may send and ask for after ACKs, and while ACKs are silent.

use crate::fake::{FakeEncoder, FakeFrame, FakeState};
use crate::wire::{Ack, AckForecast, DataFragment, FragmentId, DATA_HEADER_LEN};
use crate::*;
use salsify_codec::StateHash;
use salsify_endpoint::{EncodeJob, SenderOutput};
use salsify_time::{Duration, Instant};

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
    let EncodeJob::Qualities {
        source, qualities, ..
    } = &request.job
    else {
        panic!("two options")
    };
    let frames = qualities
        .iter()
        .map(|&q| enc.encode(source, 0, q))
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
fn the_forecast_budget_freezes_in_silence_and_the_outage_follows() {
    let config = SenderConfig {
        budget: BudgetSource::Forecast,
        ..SenderConfig::default()
    };
    let t = Instant::from_millis(50);
    let (mut s, _) = sender_with_a_frame_out(config);
    s.handle_datagram(t, &ack(0, 0, Some(forecast(10))))
        .unwrap();
    let at = |ms| s.budget_now(t + Duration::from_millis(ms)).unwrap();
    let frozen = at(0);
    assert!(frozen > 0);
    assert_eq!(
        (at(100), at(1000), at(5000), at(60_000)),
        (frozen, frozen, frozen, frozen)
    );
    // The ACK is overdue after 250 ms (the floor): an outage is suspected.
    let after = |ms| t + Duration::from_millis(ms);
    assert!(!s.outage_suspected(after(100)));
    assert!(s.outage_suspected(after(300)));
}
