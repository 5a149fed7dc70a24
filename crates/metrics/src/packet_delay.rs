//! Sprout's network measurement, for any scheme: throughput against capacity and the
//! per-packet "95% end-to-end delay" with the self-inflicted share of it (Winstein et al.,
//! NSDI 2013, section 5; the dissertation's `scorer`).
//!
//! - The delay *function*: at each moment, the time since the most recently sent packet
//!   that has arrived by then was sent (a lower bound on the instantaneous delay; with FIFO
//!   delivery it equals a packet's delay when it arrives and then grows at 1 s/s until the
//!   next arrival). Sampled every millisecond; its 95th percentile is the scheme's delay.
//! - The omniscient sender sends each packet to arrive exactly when the link can deliver it;
//!   its delay function on the same link (propagation delay plus the gaps between delivery
//!   opportunities, outages included) is the baseline. Self-inflicted delay = the scheme's
//!   p95 minus the omniscient's p95 (not minus the propagation delay).
//! - Throughput: bits delivered in the scored window over its length; capacity likewise from
//!   the delivery opportunities.
//!
//! The paper skips each run's first minute; [`SproutMeasure::compute`] takes the start of
//! the scored window.

use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::stats::percentile;

/// One packet that crossed the link: when it entered, when it reached the far end, its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketTiming {
    /// Entry into the emulated link (the sender's send time).
    pub sent: Instant,
    /// Arrival at the far end (bottleneck exit plus propagation delay).
    pub arrived: Instant,
    /// Bytes.
    pub bytes: u64,
}

/// The link's side: when it could deliver, how much each time, its propagation delay.
#[derive(Debug, Clone, Copy)]
pub struct LinkCapacity<'a> {
    /// Delivery opportunities, in time order.
    pub opportunities: &'a [Instant],
    /// Bytes each opportunity carries.
    pub opportunity_bytes: u64,
    /// One-way propagation delay after the bottleneck.
    pub propagation: Duration,
}

/// Sprout's measurement of one run over one link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SproutMeasure {
    /// Start of the scored window (s from the run's start).
    pub scored_from_s: f64,
    /// Length of the scored window (s).
    pub scored_s: f64,
    /// Bits delivered per second over the window (kb/s).
    pub throughput_kbps: f64,
    /// The link's capacity over the window (kb/s).
    pub capacity_kbps: f64,
    /// Throughput / capacity.
    pub utilisation: f64,
    /// 95th percentile of the delay function (ms); `None` if nothing arrived in the window.
    pub delay_p95_ms: Option<f64>,
    /// The omniscient sender's 95th percentile on the same link (ms).
    pub omniscient_delay_p95_ms: Option<f64>,
    /// `delay_p95_ms - omniscient_delay_p95_ms`.
    pub self_inflicted_delay_ms: Option<f64>,
}

/// Samples of the delay function every millisecond over `[from, to)`, from packets in any
/// order (moments before the first arrival have no value and are left out).
pub fn delay_function(packets: &[PacketTiming], from: Instant, to: Instant) -> Vec<f64> {
    let mut by_arrival: Vec<&PacketTiming> = packets.iter().collect();
    by_arrival.sort_by_key(|p| p.arrived);
    let mut newest_sent: Option<Instant> = None;
    let mut next = 0;
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        while let Some(p) = by_arrival.get(next).filter(|p| p.arrived <= t) {
            newest_sent = Some(newest_sent.map_or(p.sent, |s| s.max(p.sent)));
            next += 1;
        }
        if let Some(s) = newest_sent {
            out.push(t.saturating_duration_since(s).as_secs_f64() * 1e3);
        }
        t += Duration::from_millis(1);
    }
    out
}

impl SproutMeasure {
    /// The measure of `packets` over `link`, scoring `[from, to)`.
    pub fn compute(
        packets: &[PacketTiming],
        link: &LinkCapacity<'_>,
        from: Instant,
        to: Instant,
    ) -> SproutMeasure {
        let secs = to.saturating_duration_since(from).as_secs_f64();
        let in_window = |t: Instant| t >= from && t < to;
        let delivered: u64 = packets
            .iter()
            .filter(|p| in_window(p.arrived))
            .map(|p| p.bytes)
            .sum();
        let opportunities = link.opportunities.iter().filter(|&&o| in_window(o)).count() as u64;
        let kbps = |bytes: u64| match secs > 0.0 {
            true => bytes as f64 * 8.0 / secs / 1e3,
            false => 0.0,
        };
        let capacity_kbps = kbps(opportunities * link.opportunity_bytes);
        let throughput_kbps = kbps(delivered);
        let p95 = |samples: Vec<f64>| percentile(&samples, 95.0);
        let delay_p95_ms = p95(delay_function(packets, from, to));
        let omniscient: Vec<PacketTiming> = link
            .opportunities
            .iter()
            .map(|&o| PacketTiming {
                sent: o,
                arrived: o + link.propagation,
                bytes: link.opportunity_bytes,
            })
            .collect();
        let omniscient_delay_p95_ms = p95(delay_function(&omniscient, from, to));
        SproutMeasure {
            scored_from_s: from.since_epoch().as_secs_f64(),
            scored_s: secs,
            throughput_kbps,
            capacity_kbps,
            utilisation: match capacity_kbps > 0.0 {
                true => throughput_kbps / capacity_kbps,
                false => 0.0,
            },
            delay_p95_ms,
            omniscient_delay_p95_ms,
            self_inflicted_delay_ms: delay_p95_ms
                .zip(omniscient_delay_p95_ms)
                .map(|(a, b)| a - b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    #[test]
    fn the_function_is_the_packets_delay_then_grows_until_the_next_arrival() {
        // Sent at 0 and 10, arriving at 30 and 45.
        let packets = [
            PacketTiming {
                sent: ms(10),
                arrived: ms(45),
                bytes: 1,
            },
            PacketTiming {
                sent: ms(0),
                arrived: ms(30),
                bytes: 1,
            },
        ];
        let f = delay_function(&packets, ms(25), ms(50));
        // Nothing before 30; 30 at 30 ms growing by 1 per ms; 35 at 45 (the second packet).
        assert_eq!(f.len(), 20);
        assert_eq!(f[0], 30.0);
        assert_eq!(f[14], 44.0);
        assert_eq!(f[15], 35.0);
    }

    #[test]
    fn the_omniscient_baseline_is_propagation_plus_the_gaps_between_opportunities() {
        // An opportunity every 10 ms, 20 ms propagation: the omniscient function runs
        // 20..29 ms, p95 29 ms. A scheme that queued each packet 50 ms more has 79 ms:
        // self-inflicted 50 ms.
        let opportunities: Vec<Instant> = (0..1000).map(|i| ms(i * 10)).collect();
        let link = LinkCapacity {
            opportunities: &opportunities,
            opportunity_bytes: 1500,
            propagation: Duration::from_millis(20),
        };
        let packets: Vec<PacketTiming> = opportunities
            .iter()
            .map(|&o| PacketTiming {
                sent: Instant::from_micros(o.as_micros().saturating_sub(50_000)),
                arrived: o + Duration::from_millis(20),
                bytes: 1500,
            })
            .collect();
        let m = SproutMeasure::compute(&packets, &link, ms(1000), ms(9000));
        assert!((m.omniscient_delay_p95_ms.unwrap() - 29.0).abs() < 0.6);
        assert!((m.self_inflicted_delay_ms.unwrap() - 50.0).abs() < 0.6);
        assert!((m.capacity_kbps - 1200.0).abs() < 1e-6);
        assert!((m.utilisation - 1.0).abs() < 0.01);
        // Half the packets: half the throughput.
        let half: Vec<PacketTiming> = packets.iter().step_by(2).copied().collect();
        let m = SproutMeasure::compute(&half, &link, ms(1000), ms(9000));
        assert!((m.utilisation - 0.5).abs() < 0.01);
    }

    #[test]
    fn an_empty_run_has_no_delay_and_zero_throughput() {
        let link = LinkCapacity {
            opportunities: &[ms(5)],
            opportunity_bytes: 1500,
            propagation: Duration::ZERO,
        };
        let m = SproutMeasure::compute(&[], &link, ms(0), ms(0));
        assert_eq!(m.delay_p95_ms, None);
        assert_eq!((m.throughput_kbps, m.utilisation), (0.0, 0.0));
    }
}
