//! The paper's experiment 6 in miniature: a constant 500 kbit/s link that drops every packet
//! for one second. Issue 6's bar: the receiver shows a new frame less than 200 ms after the
//! link comes back — whatever the phase of the outage against the sender's frames — and that
//! frame is one the receiver can decode (never a wrong state).

use super::support::{fake_session, ms, FakeSession, LinkConfig};
use crate::*;
use salsify_time::Duration;

/// 500 kbit/s, 20 ms each way (RTT 40 ms), no loss outside the outage.
fn narrow() -> LinkConfig {
    LinkConfig {
        bytes_per_sec: Some(62_500.0),
        ..LinkConfig::default()
    }
}

/// Runs 10 s + `phase`, a one-second outage of the video direction, then 3 s more.
/// Returns the session and the time from the end of the outage to the first frame shown.
fn outage_run(phase_ms: u64, seed: u64) -> (FakeSession, Duration) {
    let mut s = fake_session(SenderConfig::default(), narrow(), narrow(), seed);
    s.run_until(ms(10_000 + phase_ms));
    let shown_before = s.shown.len();
    s.forward.config.loss = 1.0;
    s.run_until(ms(11_000 + phase_ms));
    s.forward.config.loss = 0.0;
    let restored = s.now;
    // Frames already through the bottleneck still land in the first few hundred ms.
    assert!(
        s.first_shown_after(ms(10_300 + phase_ms)).is_none(),
        "nothing shown during the outage"
    );
    s.run_until(ms(14_000 + phase_ms));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    assert!(s.shown.windows(2).all(|w| w[0].frame < w[1].frame));
    let first = s.first_shown_after(restored).expect("shown again");
    assert!(s.shown.len() > shown_before + 60, "video flows again");
    (s, first.at - restored)
}

#[test]
fn one_second_outage_on_a_narrow_link_recovers_within_200_ms() {
    let mut worst = Duration::ZERO;
    // Outage phases spread over more than one probe interval of the sender.
    for (i, phase) in (0..200).step_by(13).enumerate() {
        let (s, recovery) = outage_run(phase, 60 + i as u64);
        let tx = s.sender.stats();
        println!(
            "outage at 10 s + {phase} ms: first frame shown {recovery:?} after the link came \
             back; recoveries {}, outage frames {}",
            tx.recoveries, tx.outage_frames
        );
        assert!(tx.recoveries >= 1, "the receiver reported the loss");
        assert!(
            recovery < Duration::from_millis(200),
            "phase {phase} ms: {recovery:?}"
        );
        worst = worst.max(recovery);
    }
    println!("worst recovery over all phases: {worst:?}");
}

#[test]
fn after_the_outage_the_rate_estimate_is_not_inflated_by_it() {
    // The gap across the outage is no inter-arrival sample: one second of it would add about
    // 100 ms to tau and shut the budget (d / tau fragments) for dozens of packets.
    let mut s = fake_session(SenderConfig::default(), narrow(), narrow(), 7);
    s.run_until(ms(10_000));
    s.forward.config.loss = 1.0;
    s.run_until(ms(11_000));
    s.forward.config.loss = 0.0;
    s.run_until(ms(11_250));
    let tau = s.sender.stats().mean_interarrival.unwrap();
    // 1442 bytes at 62.5 kB/s: 23 ms per packet.
    println!("tau 250 ms after the outage: {tau:?}");
    assert!(tau < Duration::from_millis(30), "{tau:?}");
    s.run_until(ms(12_000));
    let after = s.shown.iter().filter(|f| f.at >= ms(11_200)).count();
    assert!(after >= 16, "{after} frames shown in 11.2-12 s");
}
