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

    fn end_us(&self) -> u64 {
        (self.pictures as f64 * self.frame_interval_us) as u64
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
    })
}
