//! When an ACK silence means an outage, and how often probes go out while one is suspected.
//!
//! While an outage is suspected the sender encodes from the newest state the receiver
//! acknowledged (so the first frame through decodes at once) and sends a probe whenever
//! [`OutageRule::probe_due`] says so.

use std::fmt::Debug;

use salsify_time::{Duration, Instant};

use crate::config::SenderConfig;
use crate::decision;

/// An outage-and-probe rule. It may keep its own account of the ACK silence.
pub trait OutageRule: Debug + Send {
    /// A fragment left the pacer at `now`, with `in_flight` fragments (itself included) out.
    fn on_fragment_sent(&mut self, now: Instant, in_flight: u64);

    /// An ACK arrived at `now` (fresh or stale): the newest fragment reported received was
    /// `before` and is `after` (sequence numbers), and `in_flight` fragments are still out.
    fn on_ack(&mut self, now: Instant, before: Option<u64>, after: Option<u64>, in_flight: u64);

    /// A probe (a frame forced out during a suspected outage) was sent.
    fn on_probe_sent(&mut self);

    /// True when what is in flight is presumed lost.
    fn outage_suspected(&self, now: Instant, tau: Option<Duration>, in_flight: u64) -> bool;

    /// True when a probe is due: an outage is suspected and the probe interval has passed
    /// since the last frame sent (`last_sent`).
    fn probe_due(
        &self,
        now: Instant,
        last_sent: Option<Instant>,
        tau: Option<Duration>,
        in_flight: u64,
    ) -> bool;

    /// True when the sender keeps a state still used as a reference beyond its store's cap
    /// (the acknowledged state every probe of a long silence starts from).
    fn keeps_probe_references(&self) -> bool;
}

/// The paper's rule: no outage handling at all (no silence timeout, no probes, no switch to
/// acknowledged states without a loss report).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOutage;

impl OutageRule for NoOutage {
    fn on_fragment_sent(&mut self, _now: Instant, _in_flight: u64) {}

    fn on_ack(&mut self, _: Instant, _: Option<u64>, _: Option<u64>, _: u64) {}

    fn on_probe_sent(&mut self) {}

    fn outage_suspected(&self, _now: Instant, _tau: Option<Duration>, _in_flight: u64) -> bool {
        false
    }

    fn probe_due(&self, _: Instant, _: Option<Instant>, _: Option<Duration>, _: u64) -> bool {
        false
    }

    fn keeps_probe_references(&self) -> bool {
        false
    }
}

/// The slow-link rules: the silence that means an outage follows the link's pace
/// ([`decision::paced_ack_timeout`] over the fragments in flight when the silence began, the
/// pace the longer of tau and the last per-fragment ACK interval), and probes back off
/// exponentially ([`decision::probe_interval`]), capped by the pace on a fast link when
/// `paced_probe_cap` is set.
#[derive(Debug, Clone)]
pub struct PacedOutage {
    /// The floor of the ACK timeout (`outage_timeout`).
    floor: Duration,
    /// `ack_timeout_factor`.
    factor: u32,
    /// `outage_probe_interval`: the first probe interval.
    base: Duration,
    /// `max_probe_interval`.
    max_interval: Duration,
    /// `paced_probe_cap`.
    paced_cap: bool,
    /// Since when fragments have been in flight with no ACK coming back (None: not silent).
    silent_since: Option<Instant>,
    /// `silent_since` was set by an ACK (fragments were already out), not by a fragment sent
    /// into an idle link: the next ACK's interval then measures the link's pace.
    silence_from_ack: bool,
    /// Fragments in flight when `silent_since` was set: the ACK timeout counts these, so that
    /// probes sent in a silence do not stretch it.
    silent_flight: u64,
    /// The last per-fragment ACK interval measured so (see [`decision::link_pace`]).
    ack_gap: Option<Duration>,
    /// Probes sent since the last ACK (each doubles the probe interval).
    probes_in_silence: u32,
}

impl PacedOutage {
    /// The rule with `config`'s timeout, probe interval and `[slow_link]` parameters.
    pub fn new(config: &SenderConfig) -> Self {
        let sl = &config.slow_link;
        PacedOutage {
            floor: config.outage_timeout,
            factor: sl.ack_timeout_factor,
            base: config.outage_probe_interval,
            max_interval: sl.max_probe_interval,
            paced_cap: sl.paced_probe_cap,
            silent_since: None,
            silence_from_ack: false,
            silent_flight: 0,
            ack_gap: None,
            probes_in_silence: 0,
        }
    }

    /// The silence after which an outage is suspected.
    fn ack_timeout(&self, tau: Option<Duration>) -> Duration {
        decision::paced_ack_timeout(
            self.floor,
            self.factor,
            decision::link_pace(tau, self.ack_gap),
            self.silent_flight,
        )
    }
}

impl OutageRule for PacedOutage {
    fn on_fragment_sent(&mut self, now: Instant, in_flight: u64) {
        if self.silent_since.is_none() {
            self.silent_since = Some(now);
            self.silent_flight = in_flight;
        }
    }

    fn on_ack(&mut self, now: Instant, before: Option<u64>, after: Option<u64>, in_flight: u64) {
        // A fresh ACK after a silence that began with fragments already out: the time per
        // fragment it advanced by is a sample of the link's pace.
        if let (Some(since), Some(old), Some(new)) = (self.silent_since, before, after) {
            if self.silence_from_ack && new > old {
                let advanced = u32::try_from(new - old).unwrap_or(u32::MAX);
                self.ack_gap = Some(now.saturating_duration_since(since) / advanced);
            }
        }
        // The ACKs are flowing: the silence clock restarts for whatever is still in flight.
        self.silent_since = (in_flight > 0).then_some(now);
        self.silence_from_ack = self.silent_since.is_some();
        self.silent_flight = in_flight;
        self.probes_in_silence = 0;
    }

    fn on_probe_sent(&mut self) {
        self.probes_in_silence = self.probes_in_silence.saturating_add(1);
    }

    fn outage_suspected(&self, now: Instant, tau: Option<Duration>, in_flight: u64) -> bool {
        decision::paced_outage_suspected(now, self.silent_since, self.ack_timeout(tau), in_flight)
    }

    fn probe_due(
        &self,
        now: Instant,
        last_sent: Option<Instant>,
        tau: Option<Duration>,
        in_flight: u64,
    ) -> bool {
        let suspected = self.outage_suspected(now, tau, in_flight);
        decision::probe_due(now, suspected, last_sent, self.probe_interval(tau))
    }

    fn keeps_probe_references(&self) -> bool {
        true
    }
}

impl PacedOutage {
    /// The probe interval after the probes sent in this silence.
    fn probe_interval(&self, tau: Option<Duration>) -> Duration {
        let cap = match self.paced_cap {
            true => decision::probe_interval_cap(
                self.base,
                self.max_interval,
                self.factor,
                decision::link_pace(tau, self.ack_gap),
            ),
            false => self.max_interval,
        };
        decision::probe_interval(self.base, cap, self.probes_in_silence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    #[test]
    fn a_silence_with_fragments_out_becomes_an_outage_after_the_floor() {
        let mut rule = PacedOutage::new(&SenderConfig::default());
        assert!(!rule.outage_suspected(ms(10_000), None, 3));
        rule.on_fragment_sent(ms(1_000), 1);
        rule.on_fragment_sent(ms(1_100), 2);
        assert!(!rule.outage_suspected(ms(1_249), None, 2));
        assert!(rule.outage_suspected(ms(1_250), None, 2));
        // Nothing in flight: no outage, however long the silence.
        assert!(!rule.outage_suspected(ms(9_000), None, 0));
        // An ACK restarts the clock.
        rule.on_ack(ms(1_300), None, Some(0), 1);
        assert!(!rule.outage_suspected(ms(1_500), None, 1));
        assert!(rule.outage_suspected(ms(1_550), None, 1));
    }

    #[test]
    fn probes_back_off_until_an_ack_and_the_link_pace_comes_from_acks() {
        let config = SenderConfig::default();
        let mut rule = PacedOutage::new(&config);
        let base = config.outage_probe_interval;
        // No pace known: the full backoff applies.
        assert_eq!(rule.probe_interval(None), base);
        rule.on_probe_sent();
        rule.on_probe_sent();
        assert_eq!(rule.probe_interval(None), base * 4);
        // A fast link (tau 1 ms): the cap is the base interval.
        assert_eq!(rule.probe_interval(Some(Duration::from_millis(1))), base);
        rule.on_fragment_sent(ms(0), 10);
        rule.on_ack(ms(10), None, Some(0), 9);
        assert_eq!(rule.probe_interval(None), base, "an ACK resets the backoff");
        // 9 fragments in 2.7 s after a silence that began with fragments out: 300 ms each,
        // so the timeout for the one fragment out is 2 x 300 ms.
        rule.on_ack(ms(2_710), Some(0), Some(9), 1);
        assert_eq!(rule.ack_timeout(None), Duration::from_millis(600));
        assert!(!rule.outage_suspected(ms(3_309), None, 1));
        assert!(rule.outage_suspected(ms(3_310), None, 1));
    }

    #[test]
    fn the_paper_never_suspects_an_outage() {
        let mut rule = NoOutage;
        rule.on_fragment_sent(ms(0), 5);
        assert!(!rule.outage_suspected(ms(60_000), None, 5));
        assert!(!rule.probe_due(ms(60_000), None, None, 5));
    }
}
