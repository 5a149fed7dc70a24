//! Packetization-layer path MTU discovery (RFC 8899, "DPLPMTUD"), sans-IO.
//!
//! Sizes are UDP payload bytes. A path starts at the base size, which every path is assumed
//! to carry. Once the driver sends datagrams as large as the size in use (a call that needs
//! more), a search begins: padded probes, acknowledged by the peer, test a size; a size is
//! taken to pass on its first acknowledgement and to fail after
//! [`PathConfig::max_probes`] unanswered probes. The search tries the largest size first (most
//! paths carry 1500-byte packets, so one round trip confirms it), then halves the interval
//! between the largest size known to pass and the smallest known to fail.
//!
//! **Black holes.** When the path shrinks mid-call and the ICMP that would say so is
//! filtered, datagrams above the new limit vanish while smaller ones still arrive. The peer
//! reports every [`PathConfig::report_every`] what arrived: in an encrypted session the
//! highest secure-layer counter received and the highest of a datagram above the base size.
//! Datagrams above the base sent between those two counters were overtaken by a later,
//! smaller one: on a path that keeps order, lost. When [`PathConfig::black_hole_losses`] of
//! them are, the size falls back to the base at once and a new search finds what the path
//! carries now. A plaintext session has no counters; its reports count datagrams instead,
//! and datagrams above the base sent long enough ago (twice the probes' round trip and two
//! report intervals) since the count of large ones last grew, while the count of all still
//! grows, make the black hole: slower, and fooled by a queue deeper than that wait.

use std::collections::VecDeque;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use salsify_time::{Duration, Instant};

use crate::config::PathConfig;

/// Probes remembered (their ids and sizes): an acknowledgement that comes after its probe was
/// given up on still counts.
const REMEMBERED_PROBES: usize = 16;
/// Sends above the base remembered for the black-hole test.
const REMEMBERED_SENDS: usize = 256;
/// A datagram this close to the size in use counts as full-size (the search starts when one
/// is sent).
const FULL_SIZE_SLACK: usize = 64;

/// What the prober is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No search yet: waiting for a datagram as large as the size in use.
    Waiting,
    /// A probe of `size` is out; `tries` sent so far; another (or a verdict) at `next`.
    Probing {
        size: usize,
        tries: u32,
        next: Instant,
    },
    /// Searched; search above the size again at `raise_at`.
    Done { raise_at: Instant },
}

/// A probe to send: pad a probe message with this id so the datagram has `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Its id (random).
    pub id: u64,
    /// Bytes of the datagram as it leaves (sealed, where a secure layer seals it).
    pub size: usize,
}

/// The prober's random stream of [`PathConfig::seed`].
const RNG_STREAM: u64 = 2;

/// The path MTU prober of one side of a call.
#[derive(Debug, Clone)]
pub struct Prober {
    config: PathConfig,
    /// The size in use (known to pass, or the base).
    size: usize,
    /// The smallest size known to fail (or one above the largest searched).
    fails_at: usize,
    phase: Phase,
    /// Probes sent: (id, size, when), newest last.
    sent: VecDeque<(u64, usize, Instant)>,
    /// A probe to hand out.
    pending: Option<Probe>,
    /// Smoothed round trip of probes.
    srtt: Option<Duration>,
    /// When datagrams above the base were sent, and their secure-layer counters, oldest first.
    large_sends: VecDeque<(Instant, Option<u64>)>,
    /// The peer's last report (received, large) and when the large count last grew.
    report: Option<(u32, u32)>,
    large_progress_at: Instant,
    /// Size changes not yet taken by the driver: (from, to, black hole).
    changes: VecDeque<(usize, usize, bool)>,
    /// Draws the probes' ids ([`PathConfig::seed`]); kept across a [`Prober::restart`].
    rng: ChaCha8Rng,
}

impl Prober {
    /// A prober at the base size.
    pub fn new(config: PathConfig, now: Instant) -> Self {
        let size = config.base_datagram;
        Prober {
            fails_at: config.max_datagram + 1,
            rng: config.rng(RNG_STREAM),
            config,
            size,
            phase: Phase::Waiting,
            sent: VecDeque::new(),
            pending: None,
            srtt: None,
            large_sends: VecDeque::new(),
            report: None,
            large_progress_at: now,
            changes: VecDeque::new(),
        }
    }

    /// A search from the base again (the peer moved to another network), drawing on from
    /// the same random stream (so no probe id of before comes again).
    pub fn restart(&mut self, now: Instant) {
        let rng = self.rng.clone();
        *self = Prober::new(self.config.clone(), now);
        self.rng = rng;
    }

    /// The largest datagram to send now (UDP payload bytes).
    pub fn max_datagram(&self) -> usize {
        self.size
    }

    /// The smoothed round trip of the probes, once one was acknowledged.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// A size change not yet taken: (from, to, whether a black hole caused it).
    pub fn take_change(&mut self) -> Option<(usize, usize, bool)> {
        self.changes.pop_front()
    }

    /// A datagram of `size` bytes was sent to the peer (probes are not), sealed under
    /// `counter` in an encrypted session.
    pub fn on_sent(&mut self, now: Instant, size: usize, counter: Option<u64>) {
        if size > self.config.base_datagram {
            if self.large_sends.len() == REMEMBERED_SENDS {
                self.large_sends.pop_front();
            }
            self.large_sends.push_back((now, counter));
        }
        if self.phase == Phase::Waiting && size + FULL_SIZE_SLACK >= self.size {
            self.search(now);
        }
    }

    /// How long to wait for a probe's acknowledgement.
    fn probe_wait(&self) -> Duration {
        match self.srtt {
            None => self.config.probe_wait,
            Some(rtt) => (rtt * 2 + self.config.report_every)
                .clamp(self.config.min_probe_wait, self.config.probe_wait),
        }
    }

    /// The next size to test, or `None` when the search is over.
    fn candidate(&self) -> Option<usize> {
        if self.fails_at <= self.size + self.config.search_step {
            return None;
        }
        // The largest first: most paths carry it, and one round trip then ends the search.
        if self.fails_at == self.config.max_datagram + 1 {
            return Some(self.config.max_datagram);
        }
        Some((self.size + self.fails_at) / 2)
    }

    /// Starts (or goes on with) a search: the next probe, or the end of the search.
    fn search(&mut self, now: Instant) {
        match self.candidate() {
            Some(size) => {
                self.phase = Phase::Probing {
                    size,
                    tries: 0,
                    next: now,
                };
            }
            None => {
                self.phase = Phase::Done {
                    raise_at: now + self.config.raise_after,
                };
            }
        }
    }

    /// Time passed: probes to send, sizes given up on, a search to start again.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Probing { size, tries, next } if now >= next => {
                if tries >= self.config.max_probes {
                    self.fails_at = self.fails_at.min(size);
                    self.search(now);
                    return self.handle_timeout(now);
                }
                let id = self.rng.gen();
                if self.sent.len() == REMEMBERED_PROBES {
                    self.sent.pop_front();
                }
                self.sent.push_back((id, size, now));
                self.pending = Some(Probe { id, size });
                self.phase = Phase::Probing {
                    size,
                    tries: tries + 1,
                    next: now + self.probe_wait(),
                };
            }
            Phase::Done { raise_at } if now >= raise_at => {
                self.fails_at = self.config.max_datagram + 1;
                self.search(now);
                self.handle_timeout(now);
            }
            _ => {}
        }
    }

    /// When [`Prober::handle_timeout`] next has something to do.
    pub fn poll_timeout(&self) -> Instant {
        match self.phase {
            Phase::Waiting => Instant::FAR_FUTURE,
            Phase::Probing { next, .. } => next,
            Phase::Done { raise_at } => raise_at,
        }
    }

    /// A probe to send now, if one is due.
    pub fn poll_probe(&mut self) -> Option<Probe> {
        self.pending.take()
    }

    /// The peer acknowledged probe `id`.
    pub fn on_ack(&mut self, now: Instant, id: u64) {
        let Some(i) = self.sent.iter().position(|(sent_id, _, _)| *sent_id == id) else {
            return; // not ours, or long forgotten
        };
        let (_, size, at) = self.sent.remove(i).expect("found above");
        let rtt = now.saturating_duration_since(at);
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        if size <= self.size {
            return; // tells nothing new (an old search's)
        }
        // An acknowledgement after its size was given up on: the size passes after all.
        self.fails_at = self.fails_at.max(size + 1);
        self.set_size(size, false);
        if let Phase::Probing { size: testing, .. } = self.phase {
            if testing <= size {
                self.search(now);
                self.handle_timeout(now);
            }
        }
    }

    fn set_size(&mut self, size: usize, black_hole: bool) {
        if size != self.size {
            self.changes.push_back((self.size, size, black_hole));
            self.size = size;
        }
    }

    /// The peer reports `received` datagrams from us so far, `large` of them above the base
    /// (both wrapping counters), and in an encrypted session `counters`: the highest counter
    /// received and the highest of a datagram above the base.
    pub fn on_report(
        &mut self,
        now: Instant,
        received: u32,
        large: u32,
        counters: Option<(u64, u64)>,
    ) {
        if let Some((newest, newest_large)) = counters {
            // Settled: sends the peer's newest large datagram is not older than.
            self.large_sends
                .retain(|(_, c)| c.is_none_or(|c| c > newest_large));
            if self.size <= self.config.base_datagram {
                return;
            }
            let overtaken = self
                .large_sends
                .iter()
                .filter(|(_, c)| c.is_some_and(|c| c < newest))
                .count();
            if overtaken >= self.config.black_hole_losses {
                self.black_hole(now);
            }
            return;
        }
        let Some((last_received, last_large)) = self.report.replace((received, large)) else {
            self.large_progress_at = now;
            return;
        };
        if large != last_large {
            self.large_progress_at = now;
            return;
        }
        let path_alive = received != last_received;
        if !path_alive || self.size <= self.config.base_datagram {
            return;
        }
        // Large datagrams sent after the last sign of one arriving, long enough ago that
        // they would have been reported by now.
        let grace = self.srtt.unwrap_or(self.config.probe_wait) * 2 + self.config.report_every * 2;
        let due_by = now.checked_sub(grace).unwrap_or(Instant::ZERO);
        let lost = self
            .large_sends
            .iter()
            .filter(|(t, _)| *t > self.large_progress_at && *t <= due_by)
            .count();
        if lost >= self.config.black_hole_losses {
            self.black_hole(now);
        }
    }

    /// Datagrams above the base vanish: back to the base, and search again from there.
    fn black_hole(&mut self, now: Instant) {
        self.fails_at = self.size;
        self.set_size(self.config.base_datagram, true);
        self.large_sends.clear();
        self.large_progress_at = now;
        self.sent.clear();
        self.search(now);
        self.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    /// Runs a prober against a path that carries `carries` bytes, with a 40 ms round trip,
    /// sending one full-size datagram every 10 ms, until `end_ms`; returns the size in use.
    fn settle(p: &mut Prober, carries: usize, from_ms: u64, end_ms: u64) -> usize {
        let mut acks: Vec<(Instant, u64)> = Vec::new();
        let mut t = from_ms;
        while t < end_ms {
            let now = ms(t);
            p.handle_timeout(now);
            while let Some(probe) = p.poll_probe() {
                if probe.size <= carries {
                    acks.push((now + Duration::from_millis(40), probe.id));
                }
            }
            acks.retain(|(at, id)| {
                if *at <= now {
                    p.on_ack(now, *id);
                    return false;
                }
                true
            });
            p.on_sent(now, p.max_datagram(), None);
            t += 10;
        }
        p.max_datagram()
    }

    #[test]
    fn a_1500_byte_path_is_found_in_one_round_trip() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(p.max_datagram(), 1200);
        assert_eq!(settle(&mut p, 1472, 0, 100), 1472);
        assert_eq!(p.take_change(), Some((1200, 1472, false)));
    }

    #[test]
    fn a_1280_byte_path_settles_within_a_step_below_its_limit() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        // 1280 - 20 (IPv4) - 8 (UDP).
        let size = settle(&mut p, 1252, 0, 20_000);
        assert!((1252 - 8..=1252).contains(&size), "{size}");
    }

    #[test]
    fn nothing_is_probed_until_a_full_size_datagram_is_sent() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        p.on_sent(ms(0), 200, None);
        p.handle_timeout(ms(1000));
        assert_eq!(p.poll_probe(), None);
        p.on_sent(ms(1000), 1200, None);
        p.handle_timeout(ms(1000));
        assert_eq!(p.poll_probe().map(|x| x.size), Some(1472));
    }

    #[test]
    fn a_black_hole_drops_to_the_base_and_the_search_finds_the_new_limit() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(settle(&mut p, 1472, 0, 200), 1472);
        while p.take_change().is_some() {}
        // The path shrinks to 1252 at 1 s: the reports stop counting large datagrams.
        let (mut received, large) = (100u32, 50u32);
        let mut t = 1000;
        while p.max_datagram() > 1200 && t < 3000 {
            p.on_sent(ms(t), 1472, None);
            p.on_sent(ms(t), 300, None);
            if t % 100 == 0 {
                received += 10;
                p.on_report(ms(t), received, large, None);
            }
            t += 10;
        }
        assert_eq!(p.max_datagram(), 1200, "fell back by {t} ms");
        assert!(t <= 1000 + 1600, "detected within 1.6 s: {t}");
        assert_eq!(p.take_change(), Some((1472, 1200, true)));
        let size = settle(&mut p, 1252, t, t + 20_000);
        assert!((1244..=1252).contains(&size), "{size}");
    }

    #[test]
    fn reports_of_large_datagrams_arriving_keep_the_size() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(settle(&mut p, 1472, 0, 200), 1472);
        let (mut received, mut large) = (0u32, 0u32);
        for t in (1000..5000).step_by(10) {
            p.on_sent(ms(t), 1472, None);
            if t % 100 == 0 {
                received += 10;
                large += 10;
                p.on_report(ms(t), received, large, None);
            }
        }
        assert_eq!(p.max_datagram(), 1472);
    }

    #[test]
    fn a_silent_peer_is_no_black_hole() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(settle(&mut p, 1472, 0, 200), 1472);
        p.on_report(ms(300), 10, 5, None);
        for t in (400..5000).step_by(10) {
            p.on_sent(ms(t), 1472, None);
            if t % 100 == 0 {
                p.on_report(ms(t), 10, 5, None); // nothing arrives at all: an outage
            }
        }
        assert_eq!(p.max_datagram(), 1472);
    }

    #[test]
    fn a_late_acknowledgement_still_counts() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        p.on_sent(ms(0), 1200, None);
        p.handle_timeout(ms(0));
        let first = p.poll_probe().unwrap();
        // Given up on after three tries...
        for t in [500, 1000, 1500] {
            p.handle_timeout(ms(t));
            let _ = p.poll_probe();
        }
        // ...then its acknowledgement arrives.
        p.on_ack(ms(1600), first.id);
        assert_eq!(p.max_datagram(), 1472);
    }

    #[test]
    fn counters_tell_a_black_hole_within_a_report() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(settle(&mut p, 1472, 0, 200), 1472);
        while p.take_change().is_some() {}
        // Counters 1..: large datagrams 1-10 arrive; from 11 on only the small ones do.
        for c in 1..=30u64 {
            p.on_sent(ms(1000 + c), if c % 3 == 0 { 300 } else { 1472 }, Some(c));
        }
        p.on_report(ms(1040), 5, 5, Some((10, 10)));
        assert_eq!(p.max_datagram(), 1472, "nothing overtaken yet");
        p.on_report(ms(1100), 12, 7, Some((30, 10)));
        assert_eq!(p.max_datagram(), 1200, "large 11..29 overtaken by 30");
        assert_eq!(p.take_change(), Some((1472, 1200, true)));
    }

    #[test]
    fn a_deep_queue_is_no_black_hole_with_counters() {
        let mut p = Prober::new(PathConfig::default(), ms(0));
        assert_eq!(settle(&mut p, 1472, 0, 200), 1472);
        // Two seconds of queue: reports lag far behind the sends, but in order.
        for c in 1..=400u64 {
            let t = 1000 + 10 * c;
            p.on_sent(ms(t), if c % 4 == 0 { 200 } else { 1472 }, Some(c));
            if c > 200 && c % 10 == 0 {
                let arrived = c - 200;
                let large = arrived - arrived % 4 + (arrived % 4).min(3);
                let newest_large = if arrived % 4 == 0 {
                    arrived - 1
                } else {
                    arrived
                };
                p.on_report(
                    ms(t),
                    arrived as u32,
                    large as u32,
                    Some((arrived, newest_large)),
                );
            }
        }
        assert_eq!(p.max_datagram(), 1472);
    }

    proptest! {
        /// Whatever the path carries and however acks come, the size in use is one the path
        /// carries (or the base), and never above the largest searched.
        #[test]
        fn the_size_in_use_always_crosses_the_path(carries in 1200usize..1600, lossy in any::<bool>()) {
            let mut p = Prober::new(PathConfig::default(), ms(0));
            let mut acks: Vec<(Instant, u64)> = Vec::new();
            let mut n = 0u32;
            for t in (0..30_000).step_by(10) {
                let now = ms(t);
                p.handle_timeout(now);
                while let Some(probe) = p.poll_probe() {
                    n += 1;
                    if probe.size <= carries && !(lossy && n.is_multiple_of(3)) {
                        acks.push((now + Duration::from_millis(30), probe.id));
                    }
                }
                acks.retain(|(at, id)| if *at <= now { p.on_ack(now, *id); false } else { true });
                p.on_sent(now, p.max_datagram(), None);
                prop_assert!(p.max_datagram() <= carries.max(1200));
                prop_assert!(p.max_datagram() <= 1472);
            }
            prop_assert!(p.max_datagram() + 8 >= carries.min(1472) || p.max_datagram() == 1200 && carries < 1208);
        }
    }
}
