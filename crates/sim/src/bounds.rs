//! How much of the oracle's lead on a link any causal sender can close (issue 13): the paper's
//! delay metric for a sender that knows every future delivery opportunity, against the best of
//! a family of idealised causal senders, on the link of each experiment file given.
//!
//! ```text
//! cargo run --release -p salsify-sim --example delay_bounds -- EXPERIMENT.toml...
//! ```
//!
//! Both senders are idealised the same way, far beyond what a real one can do: every frame is
//! one datagram (it fits one delivery opportunity), encoding, decoding and serialisation take
//! no time, nothing is lost, and only the video direction's trace and propagation delay count
//! (a link that also loses packets or fails is flagged: its figures are no bounds).
//!
//! - **clairvoyant**: at every opportunity the newest picture captured by then (if not sent
//!   yet) is waiting at the bottleneck and goes; it is shown one propagation delay later.
//! - **causal(phi)**: the sender learns of each delivery the instant it happens (no ACK
//!   path), and keeps exactly one frame waiting at the bottleneck: after a delivery at `t` it
//!   waits `phi` times the last gap between deliveries (a fresher picture, at the risk of
//!   missing the next opportunity), then hands over the newest picture. Reported for the
//!   `phi` with the lowest mean delay and, separately, the lowest p95.
//!
//! The causal family is not a proof that no causal sender does better (on a link whose
//! opportunities are periodic a sender could learn their phase), but on links whose slow
//! stretches deliver at random times — Poisson, as Sprout modelled cellular links — a frame
//! handed over at any moment waits a whole mean gap for its opportunity, while the
//! clairvoyant one waits for none: its mean delay is about half a gap, the causal one's at
//! least one and a half. Delay is the metric `salsify sim` reports: for each picture, the time
//! from its capture until it or a newer picture is shown.
//!
//! Issue 24 asks the same question at equal quality, which one-datagram frames cannot: the
//! **genie** family ([`genie_sweep`]) sends real frames (bursts of 1500-byte packets through a
//! DropTail FIFO, one packet per opportunity) sized from an exact knowledge of the link's past
//! and of the bottleneck's queue, more than any causal sender has. Its lower envelope over
//! utilisation ([`envelope`]) is what the past alone buys; the same rule told the link's future
//! ([`Horizon::Future`]) shows how much of the oracle's lead is information, not mechanism.
//! Bytes delivered stand in for quality (same encoder: equal bytes, about equal quality).

use std::collections::VecDeque;

use salsify_time::Duration;

use crate::experiment::{Experiment, ExperimentError};

/// Mean and p95 of the delay metric (ms) of one idealised sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayFigures {
    /// Mean delay, ms.
    pub mean_ms: f64,
    /// 95th-percentile delay, ms.
    pub p95_ms: f64,
}

/// The two bounds on one experiment's link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayBounds {
    /// The clairvoyant sender.
    pub clairvoyant: DelayFigures,
    /// The causal family's member with the lowest mean, and its `phi`.
    pub causal_by_mean: (f64, DelayFigures),
    /// The causal family's member with the lowest p95, and its `phi`.
    pub causal_by_p95: (f64, DelayFigures),
    /// The link also loses packets or fails: the figures are no bounds.
    pub lossy: bool,
}

/// Both bounds for `experiment`'s link, video and duration.
pub fn delay_bounds(experiment: &Experiment) -> Result<DelayBounds, ExperimentError> {
    let link = link_of(experiment)?;
    let figures = |(mean_ms, p95_ms)| DelayFigures { mean_ms, p95_ms };
    let clairvoyant = figures(link.delays(&link.clairvoyant()));
    let family: Vec<(f64, DelayFigures)> = (0..10)
        .map(|i| {
            let phi = f64::from(i) / 10.0;
            (phi, figures(link.delays(&link.causal(phi))))
        })
        .collect();
    let best = |key: fn(&DelayFigures) -> f64| {
        family
            .iter()
            .copied()
            .min_by(|a, b| key(&a.1).total_cmp(&key(&b.1)))
            .unwrap_or((0.0, clairvoyant))
    };
    Ok(DelayBounds {
        clairvoyant,
        causal_by_mean: best(|f| f.mean_ms),
        causal_by_p95: best(|f| f.p95_ms),
        lossy: link.lossy,
    })
}

/// One frame shown: when, and which picture (capture index).
#[derive(Clone, Copy, Debug)]
struct Shown {
    at_us: u64,
    picture: u64,
}

/// The link as the idealised senders see it.
struct Link {
    /// Delivery opportunities in µs since the run's start, over the run and a margin.
    opportunities: Vec<u64>,
    propagation_us: u64,
    frame_interval_us: f64,
    pictures: u64,
    /// The link also loses packets or fails (ignored here: the figures are not bounds).
    lossy: bool,
    /// DropTail limit of the bottleneck in packets (`None`: unlimited); only the genie family,
    /// which sends whole frames of many packets, can fill it.
    queue_packets: Option<usize>,
}

impl Link {
    /// The newest picture captured at or before `t_us`.
    fn newest_at(&self, t_us: u64) -> u64 {
        ((t_us as f64 / self.frame_interval_us).floor() as u64).min(self.pictures - 1)
    }

    fn captured_us(&self, picture: u64) -> f64 {
        picture as f64 * self.frame_interval_us
    }

    fn clairvoyant(&self) -> Vec<Shown> {
        let mut shown: Vec<Shown> = Vec::new();
        for &o in &self.opportunities {
            let picture = self.newest_at(o);
            if shown.last().is_some_and(|s| s.picture >= picture) {
                continue;
            }
            shown.push(Shown {
                at_us: o + self.propagation_us,
                picture,
            });
        }
        shown
    }

    fn causal(&self, phi: f64) -> Vec<Shown> {
        let mut shown: Vec<Shown> = Vec::new();
        let (mut next, mut last_delivery, mut last_gap) = (0usize, 0u64, 0u64);
        loop {
            let wait = (phi * last_gap as f64) as u64;
            let mut handed = last_delivery + wait;
            // A picture already sent is not sent again: wait for the next capture.
            if let Some(s) = shown.last() {
                handed = handed.max(self.captured_us(s.picture + 1).ceil() as u64);
            }
            if handed >= self.end_us() {
                return shown;
            }
            let picture = self.newest_at(handed);
            while next < self.opportunities.len() && self.opportunities[next] < handed {
                next += 1;
            }
            let Some(&o) = self.opportunities.get(next) else {
                return shown;
            };
            next += 1;
            shown.push(Shown {
                at_us: o + self.propagation_us,
                picture,
            });
            last_gap = o - last_delivery;
            last_delivery = o;
        }
    }

    /// Mean and p95 of the delay metric in ms, over pictures followed by a frame shown.
    fn delays(&self, shown: &[Shown]) -> (f64, f64) {
        let mut delays = Vec::with_capacity(self.pictures as usize);
        let mut i = 0;
        for picture in 0..self.pictures {
            while i < shown.len() && shown[i].picture < picture {
                i += 1;
            }
            let Some(s) = shown.get(i) else { break };
            delays.push((s.at_us as f64 - self.captured_us(picture)) / 1000.0);
        }
        delays.sort_by(f64::total_cmp);
        let mean = delays.iter().sum::<f64>() / delays.len().max(1) as f64;
        let p95 = delays
            .get(((delays.len() as f64) * 0.95) as usize)
            .copied()
            .unwrap_or(f64::NAN);
        (mean, p95)
    }
}

fn link_of(experiment: &Experiment) -> Result<Link, ExperimentError> {
    let config = experiment.sim_config()?;
    let trace = &config.data_link.trace;
    let end = config.duration + Duration::from_secs(60);
    let opportunities = (0..trace.opportunities_until(end))
        .map(|n| trace.opportunity_time(n).as_micros() as u64)
        .collect();
    Ok(Link {
        opportunities,
        propagation_us: config.data_link.propagation_delay.as_micros() as u64,
        frame_interval_us: 1e6 / f64::from(experiment.fps),
        pictures: (config.duration.as_secs_f64() * f64::from(experiment.fps)) as u64,
        lossy: !config.data_link.loss.is_empty(),
        queue_packets: config.data_link.queue.packets.map(|n| n as usize),
    })
}

// ---------------------------------------------------------------------------------------------
// Issue 24: the genie family. Could any causal sender match the oracle's delay at the oracle's
// utilisation, or is the gap the future itself? The senders below know more of the past than
// any real one can (every opportunity before now, and the bottleneck's queue exactly), and size
// each frame from it; their lower envelope is what knowing the past buys. The same rule fed the
// link's future instead ([`Horizon::Future`]) separates the information from the mechanism.
// ---------------------------------------------------------------------------------------------

/// Bytes one delivery opportunity carries (Mahimahi's MTU-sized packet).
const PACKET_BYTES: u64 = 1500;

/// The swept capacity windows `W` (ms).
pub const GENIE_WINDOWS_MS: [f64; 6] = [20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];
/// The swept delay targets (ms).
pub const GENIE_TARGETS_MS: [f64; 8] = [10.0, 17.0, 33.0, 50.0, 75.0, 100.0, 150.0, 200.0];
/// The swept gains `k` on the capacity estimate.
pub const GENIE_GAINS: [f64; 4] = [0.5, 0.7, 0.85, 1.0];
/// The utilisation levels of the lower envelope.
pub const ENVELOPE_LEVELS: [f64; 8] = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95];

/// Which stretch of the trace a genie's capacity estimate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Horizon {
    /// `[t - W, t)`: the past genie, better informed than any causal sender but still causal.
    Past,
    /// `[t, t + W)`: the same rule told the future, for the information-versus-mechanism
    /// comparison (not causal).
    Future,
    /// The past genie told everything a round trip late, as a sender hears of it through
    /// ACKs: at `t` it knows the opportunities and deliveries before `t - L` (`L`, twice the
    /// one-way delay: the propagation after the bottleneck and the ACK's way back), and
    /// estimates the queue as what it handed over less what it knows was delivered less what
    /// its rate estimate delivers in `L`. What it still has that a real sender lacks: every
    /// opportunity of its window, used or not, frames of exactly the size asked, no coding
    /// time. Its gap to [`Horizon::Past`] is what the round trip's lag costs.
    Acked,
}

/// One member of the genie family: each frame is sized
/// `max(0, k * C_W(t) * target - queued_bytes(t))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenieParams {
    /// Window `W` of the capacity estimate `C_W`, ms.
    pub window_ms: f64,
    /// How much delivery time the queue should hold after the frame is added, ms.
    pub target_ms: f64,
    /// Gain on the capacity estimate.
    pub k: f64,
}

/// What one genie achieved over the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeniePoint {
    /// The member.
    pub params: GenieParams,
    /// Bytes of frames shown over the capacity of the run: the video that counts for quality
    /// (a frame that lost a packet wasted its bytes).
    pub utilisation: f64,
    /// Every byte the bottleneck delivered over the same capacity, shown or not.
    pub wire_utilisation: f64,
    /// The paper's delay metric.
    pub delay: DelayFigures,
    /// Mean size of the frames sent (skipped pictures not counted), bytes.
    pub mean_frame_bytes: f64,
    /// Share of pictures sent (not skipped for a size of 0).
    pub sent_share: f64,
}

/// The lowest delays among genies at or above one utilisation level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvelopeRow {
    /// The level.
    pub utilisation: f64,
    /// The point with the lowest p95 at or above it (`None`: no point reaches it).
    pub by_p95: Option<GeniePoint>,
    /// The point with the lowest mean at or above it.
    pub by_mean: Option<GeniePoint>,
}

/// Every genie of the sweep on one experiment's link, and the clairvoyant bound for context.
#[derive(Debug, Clone, PartialEq)]
pub struct GenieSweep {
    /// One point per member of the sweep, in sweep order.
    pub points: Vec<GeniePoint>,
    /// The one-datagram clairvoyant sender of [`delay_bounds`]: a delay floor at a
    /// utilisation of about one packet per picture, not at equal quality.
    pub clairvoyant: DelayFigures,
    /// Its utilisation (bytes delivered, one packet per picture shown, over the capacity).
    pub clairvoyant_utilisation: f64,
    /// The link also loses packets or fails (ignored: the figures are not bounds).
    pub lossy: bool,
}

/// Every member of the issue's sweep: `W` x target x `k`.
pub fn genie_family() -> Vec<GenieParams> {
    genie_grid(&GENIE_WINDOWS_MS, &GENIE_TARGETS_MS, &GENIE_GAINS)
}

/// Every combination of `windows_ms` x `targets_ms` x `gains`: a denser grid than the
/// issue's tells whether its envelope is an artefact of where the grid's points fall.
pub fn genie_grid(windows_ms: &[f64], targets_ms: &[f64], gains: &[f64]) -> Vec<GenieParams> {
    let mut family = Vec::new();
    for &window_ms in windows_ms {
        for &target_ms in targets_ms {
            for &k in gains {
                family.push(GenieParams {
                    window_ms,
                    target_ms,
                    k,
                });
            }
        }
    }
    family
}

/// Runs every member of `family` with `horizon` on `experiment`'s link.
pub fn genie_sweep(
    experiment: &Experiment,
    horizon: Horizon,
    family: &[GenieParams],
) -> Result<GenieSweep, ExperimentError> {
    let link = link_of(experiment)?;
    let points = family
        .iter()
        .map(|&p| link.genie_point(p, horizon))
        .collect();
    let shown = link.clairvoyant();
    let (mean_ms, p95_ms) = link.delays(&shown);
    let clairvoyant_utilisation =
        shown.len() as f64 * PACKET_BYTES as f64 / link.capacity_bytes().max(1.0);
    Ok(GenieSweep {
        points,
        clairvoyant: DelayFigures { mean_ms, p95_ms },
        clairvoyant_utilisation,
        lossy: link.lossy,
    })
}

/// The lower envelope: for each level, the lowest p95 and the lowest mean among `points` whose
/// utilisation is at least the level. Each row's figures can only rise with the level (fewer
/// points qualify), which is what makes them read as a frontier.
pub fn envelope(points: &[GeniePoint], levels: &[f64]) -> Vec<EnvelopeRow> {
    levels
        .iter()
        .map(|&level| {
            let eligible = || points.iter().filter(move |p| p.utilisation >= level);
            let lowest = |key: fn(&GeniePoint) -> f64| {
                eligible().copied().min_by(|a, b| key(a).total_cmp(&key(b)))
            };
            EnvelopeRow {
                utilisation: level,
                by_p95: lowest(|p| p.delay.p95_ms),
                by_mean: lowest(|p| p.delay.mean_ms),
            }
        })
        .collect()
}

/// One packet waiting at the bottleneck: which picture, how many bytes.
#[derive(Debug, Clone, Copy)]
struct Packet {
    picture: u64,
    bytes: u64,
}

/// Mahimahi's bottleneck as the genie sees it: a FIFO of packets with a DropTail limit, one
/// packet per opportunity.
struct Bottleneck {
    queue: VecDeque<Packet>,
    queued_bytes: u64,
    limit: Option<usize>,
}

impl Bottleneck {
    fn new(limit: Option<usize>) -> Bottleneck {
        Bottleneck {
            queue: VecDeque::new(),
            queued_bytes: 0,
            limit,
        }
    }

    /// Admits `packet` unless the queue is full (then it is dropped: `false`).
    fn offer(&mut self, packet: Packet) -> bool {
        if self.limit.is_some_and(|n| self.queue.len() >= n) {
            return false;
        }
        self.queued_bytes += packet.bytes;
        self.queue.push_back(packet);
        true
    }

    /// What one opportunity delivers: the head packet, if any.
    fn serve(&mut self) -> Option<Packet> {
        let packet = self.queue.pop_front()?;
        self.queued_bytes -= packet.bytes;
        Some(packet)
    }
}

/// A sent picture's progress through the bottleneck.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    bytes: u64,
    packets_left: u64,
    dropped: bool,
}

/// One genie's run: the bottleneck, every picture's progress, and what was shown.
struct GenieRun<'a> {
    link: &'a Link,
    bottleneck: Bottleneck,
    progress: Vec<Progress>,
    shown: Vec<Shown>,
    /// Bytes delivered at opportunities inside the run, shown or not.
    wire_bytes: u64,
    /// Index of the next opportunity not yet served.
    next: usize,
    /// Bytes the bottleneck accepted so far.
    accepted_bytes: u64,
    /// (opportunity µs, bytes delivered up to and including it), one per packet delivered.
    delivered_log: Vec<(u64, u64)>,
}

impl GenieRun<'_> {
    /// Bytes delivered at opportunities before `t_us`.
    fn delivered_before(&self, t_us: f64) -> u64 {
        let n = self
            .delivered_log
            .partition_point(|&(o, _)| (o as f64) < t_us);
        n.checked_sub(1).map_or(0, |i| self.delivered_log[i].1)
    }
}

impl<'a> GenieRun<'a> {
    fn new(link: &'a Link) -> GenieRun<'a> {
        GenieRun {
            link,
            bottleneck: Bottleneck::new(link.queue_packets),
            progress: vec![Progress::default(); link.pictures as usize],
            shown: Vec::new(),
            wire_bytes: 0,
            next: 0,
            accepted_bytes: 0,
            delivered_log: Vec::new(),
        }
    }

    /// Serves every opportunity strictly before `t_us` (one at `t_us` exactly may already
    /// carry a packet handed over at `t_us`).
    fn serve_until(&mut self, t_us: f64) {
        while let Some(&o) = self.link.opportunities.get(self.next) {
            if o as f64 >= t_us {
                return;
            }
            self.next += 1;
            if let Some(packet) = self.bottleneck.serve() {
                self.delivered(o, packet);
            }
        }
    }

    /// Serves opportunities until the queue is empty or the margin of the trace runs out.
    fn drain(&mut self) {
        while !self.bottleneck.queue.is_empty() && self.next < self.link.opportunities.len() {
            self.serve_until(self.link.opportunities[self.next] as f64 + 1.0);
        }
    }

    /// Books `packet`'s delivery at `o_us`; its picture is shown if this was its last packet,
    /// none was dropped, and no newer picture was shown already.
    fn delivered(&mut self, o_us: u64, packet: Packet) {
        if (o_us as f64) < self.link.end_us() as f64 {
            self.wire_bytes += packet.bytes;
        }
        let total = self.delivered_log.last().map_or(0, |&(_, b)| b) + packet.bytes;
        self.delivered_log.push((o_us, total));
        let progress = &mut self.progress[packet.picture as usize];
        progress.packets_left -= 1;
        if progress.packets_left > 0 || progress.dropped {
            return;
        }
        if self
            .shown
            .last()
            .is_some_and(|s| s.picture >= packet.picture)
        {
            return;
        }
        self.shown.push(Shown {
            at_us: o_us + self.link.propagation_us,
            picture: packet.picture,
        });
    }

    /// Hands `picture` to the bottleneck as a burst of packets totalling `bytes`.
    fn send(&mut self, picture: u64, bytes: u64) {
        let packets = bytes.div_ceil(PACKET_BYTES);
        self.progress[picture as usize] = Progress {
            bytes,
            packets_left: packets,
            dropped: false,
        };
        for i in 0..packets {
            let size = PACKET_BYTES.min(bytes - i * PACKET_BYTES);
            let accepted = self.bottleneck.offer(Packet {
                picture,
                bytes: size,
            });
            if accepted {
                self.accepted_bytes += size;
            } else {
                // Later packets of the burst find the queue just as full.
                let progress = &mut self.progress[picture as usize];
                progress.dropped = true;
                progress.packets_left = i;
                return;
            }
        }
    }
}

impl Link {
    fn end_us(&self) -> u64 {
        (self.pictures as f64 * self.frame_interval_us) as u64
    }

    /// Bytes of the delivery opportunities in `[from_us, to_us)`.
    fn opportunity_bytes(&self, from_us: f64, to_us: f64) -> f64 {
        let count_before = |t: f64| self.opportunities.partition_point(|&o| (o as f64) < t);
        (count_before(to_us) - count_before(from_us)) as f64 * PACKET_BYTES as f64
    }

    /// The link's capacity over the run, bytes.
    fn capacity_bytes(&self) -> f64 {
        self.opportunity_bytes(0.0, self.end_us() as f64)
    }

    /// The genie's estimate of the link's rate at `t_us`, bytes per µs: the opportunities of
    /// the window before (or, told the future, after) `t_us` over the window's length.
    fn rate_estimate(&self, t_us: f64, window_us: f64, horizon: Horizon) -> f64 {
        match horizon {
            Horizon::Past => self.opportunity_bytes(t_us - window_us, t_us) / window_us,
            Horizon::Future => self.opportunity_bytes(t_us, t_us + window_us) / window_us,
            Horizon::Acked => {
                self.rate_estimate(t_us - self.ack_lag_us(), window_us, Horizon::Past)
            }
        }
    }

    /// How late a sender hears of the link through ACKs: the propagation after the
    /// bottleneck and the same again for the ACK's way back.
    fn ack_lag_us(&self) -> f64 {
        2.0 * self.propagation_us as f64
    }

    /// The frame the genie sends at `t_us`, `run` holding the bottleneck as it is.
    fn genie_frame_bytes(
        &self,
        params: GenieParams,
        horizon: Horizon,
        t_us: f64,
        run: &GenieRun<'_>,
    ) -> u64 {
        let rate = self.rate_estimate(t_us, params.window_ms * 1000.0, horizon);
        let queued = match horizon {
            Horizon::Past | Horizon::Future => run.bottleneck.queued_bytes as f64,
            Horizon::Acked => {
                let lag = self.ack_lag_us();
                let known = run.delivered_before(t_us - lag) as f64;
                (run.accepted_bytes as f64 - known - rate * lag).max(0.0)
            }
        };
        let level = params.k * rate * params.target_ms * 1000.0;
        (level - queued).max(0.0).round() as u64
    }

    /// Runs one genie over the whole run; returns the run for its books.
    fn run_genie(&self, params: GenieParams, horizon: Horizon) -> GenieRun<'_> {
        let mut run = GenieRun::new(self);
        for picture in 0..self.pictures {
            let t_us = self.captured_us(picture);
            run.serve_until(t_us);
            let bytes = self.genie_frame_bytes(params, horizon, t_us, &run);
            if bytes > 0 {
                run.send(picture, bytes);
            }
        }
        run.drain();
        run
    }

    /// One genie's utilisation, delays and frame sizes.
    fn genie_point(&self, params: GenieParams, horizon: Horizon) -> GeniePoint {
        let run = self.run_genie(params, horizon);
        let capacity = self.capacity_bytes().max(1.0);
        let shown_bytes: u64 = run
            .shown
            .iter()
            .map(|s| run.progress[s.picture as usize].bytes)
            .sum();
        let sent: Vec<u64> = run
            .progress
            .iter()
            .map(|p| p.bytes)
            .filter(|&b| b > 0)
            .collect();
        // Nothing shown is unbounded delay, not the empty metric's zero.
        let (mean_ms, p95_ms) = match run.shown.is_empty() {
            true => (f64::INFINITY, f64::INFINITY),
            false => self.delays(&run.shown),
        };
        GeniePoint {
            params,
            utilisation: shown_bytes as f64 / capacity,
            wire_utilisation: run.wire_bytes as f64 / capacity,
            delay: DelayFigures { mean_ms, p95_ms },
            mean_frame_bytes: sent.iter().sum::<u64>() as f64 / sent.len().max(1) as f64,
            sent_share: sent.len() as f64 / self.pictures.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROPAGATION_US: u64 = 20_000;

    /// A link of `seconds` at 60 fps with the opportunities `at` (µs), 20 ms propagation.
    fn link(opportunities: Vec<u64>, seconds: u64, queue_packets: Option<usize>) -> Link {
        Link {
            opportunities,
            propagation_us: PROPAGATION_US,
            frame_interval_us: 1e6 / 60.0,
            pictures: seconds * 60,
            lossy: false,
            queue_packets,
        }
    }

    /// One opportunity every `gap_us`, over the run and a 2 s margin.
    fn constant(gap_us: u64, seconds: u64, queue_packets: Option<usize>) -> Link {
        let end = (seconds + 2) * 1_000_000;
        link(
            (1..).map(|n| n * gap_us).take_while(|&o| o < end).collect(),
            seconds,
            queue_packets,
        )
    }

    /// Gaps drawn from a fixed pseudo-random sequence (mean 1 ms, from 0 to 3 ms, with a
    /// 300 ms outage every 2 s): bursty enough that the sizing rule matters.
    fn variable(seconds: u64) -> Link {
        let (mut state, mut t, mut opportunities) = (0x2545_f491_4f6c_dd1du64, 0u64, Vec::new());
        let end = (seconds + 2) * 1_000_000;
        while t < end {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            t += state % 3_000;
            if t % 2_000_000 < 1_700_000 {
                opportunities.push(t);
            }
        }
        link(opportunities, seconds, Some(256))
    }

    fn params(window_ms: f64, target_ms: f64, k: f64) -> GenieParams {
        GenieParams {
            window_ms,
            target_ms,
            k,
        }
    }

    #[test]
    fn one_frame_interval_on_a_constant_link_queues_next_to_nothing() {
        let link = constant(1_000, 10, Some(256));
        let interval_ms = 1000.0 / 60.0;
        let full = link.genie_point(params(100.0, interval_ms, 1.0), Horizon::Past);
        // Each frame takes one frame interval to cross; the next finds the queue empty.
        assert!(full.utilisation > 0.93, "{full:?}");
        assert!(full.delay.mean_ms < 20.0 + interval_ms + 3.0, "{full:?}");
        assert!(full.delay.p95_ms < 20.0 + interval_ms + 4.0, "{full:?}");
        let half = link.genie_point(params(100.0, interval_ms, 0.5), Horizon::Past);
        // Half the capacity per frame: half the utilisation, half the crossing time.
        assert!((half.utilisation - 0.5).abs() < 0.05, "{half:?}");
        assert!(
            half.delay.mean_ms < 20.0 + interval_ms / 2.0 + 3.0,
            "{half:?}"
        );
        assert!((half.mean_frame_bytes - 12_500.0).abs() < 800.0, "{half:?}");
    }

    #[test]
    fn a_larger_target_never_lowers_utilisation() {
        let link = variable(20);
        for window_ms in [20.0, 200.0] {
            let utilisations: Vec<f64> = GENIE_TARGETS_MS
                .iter()
                .map(|&target| {
                    link.genie_point(params(window_ms, target, 0.85), Horizon::Past)
                        .utilisation
                })
                .collect();
            for pair in utilisations.windows(2) {
                assert!(
                    pair[1] >= pair[0] - 0.005,
                    "W {window_ms}: {utilisations:?}"
                );
            }
            assert!(utilisations[7] > utilisations[0] + 0.1, "{utilisations:?}");
        }
    }

    #[test]
    fn the_envelope_rises_with_utilisation_and_only_holds_points_that_reach_it() {
        let link = variable(10);
        let family = genie_family();
        let points: Vec<GeniePoint> = family
            .iter()
            .map(|&p| link.genie_point(p, Horizon::Past))
            .collect();
        let rows = envelope(&points, &ENVELOPE_LEVELS);
        assert!(rows[0].by_p95.is_some(), "{rows:?}");
        for row in &rows {
            for point in [row.by_p95, row.by_mean].into_iter().flatten() {
                assert!(point.utilisation >= row.utilisation);
            }
        }
        for pair in rows.windows(2) {
            match (pair[0].by_p95, pair[1].by_p95) {
                (Some(lower), Some(higher)) => {
                    assert!(higher.delay.p95_ms >= lower.delay.p95_ms, "{pair:?}")
                }
                (None, Some(_)) => panic!("a higher level was reached but not a lower one"),
                _ => {}
            }
            if let (Some(lower), Some(higher)) = (pair[0].by_mean, pair[1].by_mean) {
                assert!(higher.delay.mean_ms >= lower.delay.mean_ms, "{pair:?}");
            }
        }
    }

    #[test]
    fn a_frame_that_overflows_the_queue_is_never_shown() {
        // 100 ms of a 12 Mbit/s link is 100 packets; the queue holds 4.
        let link = constant(1_000, 5, Some(4));
        let point = link.genie_point(params(100.0, 100.0, 1.0), Horizon::Past);
        assert_eq!(point.utilisation, 0.0, "{point:?}");
        assert!(point.wire_utilisation > 0.1, "{point:?}");
        assert_eq!(
            point.delay.mean_ms,
            f64::INFINITY,
            "nothing shown: {point:?}"
        );
    }

    #[test]
    fn the_past_genie_skips_frames_in_an_outage_that_the_future_one_sees_coming() {
        let link = variable(10);
        let p = params(50.0, 50.0, 1.0);
        let past = link.genie_point(p, Horizon::Past);
        let future = link.genie_point(p, Horizon::Future);
        // About 15% of the time has no opportunity: neither sends into an empty window.
        assert!(
            past.sent_share < 0.9 && future.sent_share < 0.9,
            "{past:?} {future:?}"
        );
        // Told when each outage starts, the genie stops filling the queue before it.
        assert!(
            future.delay.p95_ms < past.delay.p95_ms,
            "{past:?} {future:?}"
        );
    }

    /// Told the link a round trip late, the genie estimates the queue from what it knows was
    /// delivered: with no propagation delay there is no lag and it is the past genie exactly;
    /// with 20 ms each way on a link that clumps, it queues on stale knowledge and waits longer.
    #[test]
    fn the_genie_a_round_trip_late_is_the_past_genie_without_a_lag() {
        // Bursts of 12 opportunities every 24 ms: 0.5 packets per ms on average.
        let opportunities: Vec<u64> = (0..500u64)
            .flat_map(|b| (0..12).map(move |i| b * 24_000 + i * 100))
            .collect();
        let p = params(100.0, 33.0, 1.0);
        let mut no_lag = link(opportunities.clone(), 10, Some(256));
        no_lag.propagation_us = 0;
        assert_eq!(
            no_lag.genie_point(p, Horizon::Acked),
            no_lag.genie_point(p, Horizon::Past)
        );
        let lagged = link(opportunities, 10, Some(256));
        let past = lagged.genie_point(p, Horizon::Past);
        let acked = lagged.genie_point(p, Horizon::Acked);
        assert_ne!(acked, past);
        assert!(
            acked.delay.p95_ms >= past.delay.p95_ms,
            "{acked:?} {past:?}"
        );
    }
}
