//! A seeded one-way link: serialisation at a fixed rate, propagation delay, random loss,
//! reordering (extra delay for some packets) and duplication.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_time::{Duration, Instant};

/// What the link does to packets.
#[derive(Debug, Clone, Copy)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub latency: Duration,
    /// Bottleneck rate; `None` for infinitely fast.
    pub bytes_per_sec: Option<f64>,
    /// Probability a packet is dropped.
    pub loss: f64,
    /// Probability a packet is held back by up to `reorder_delay` (overtaken by later ones).
    pub reorder: f64,
    /// Largest extra delay of a reordered packet.
    pub reorder_delay: Duration,
    /// Probability a packet is delivered twice.
    pub duplicate: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency: Duration::from_millis(20),
            bytes_per_sec: Some(500_000.0),
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(8),
            duplicate: 0.0,
        }
    }
}

/// Counters of what the link did.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkStats {
    pub sent: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicated: u64,
}

/// The link itself.
pub struct Link {
    pub config: LinkConfig,
    rng: ChaCha8Rng,
    queue: BinaryHeap<Reverse<(Instant, u64, Vec<u8>)>>,
    busy_until: Instant,
    seq: u64,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Link {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: BinaryHeap::new(),
            busy_until: Instant::ZERO,
            seq: 0,
            stats: LinkStats::default(),
        }
    }

    /// Puts a packet on the link at `now`.
    pub fn send(&mut self, now: Instant, bytes: Vec<u8>) {
        self.stats.sent += 1;
        if self.rng.gen_bool(self.config.loss.clamp(0.0, 1.0)) {
            self.stats.lost += 1;
            return;
        }
        let start = now.max(self.busy_until);
        let serialise = self.config.bytes_per_sec.map_or(Duration::ZERO, |r| {
            Duration::from_secs_f64(bytes.len() as f64 / r)
        });
        self.busy_until = start + serialise;
        let mut arrival = self.busy_until + self.config.latency;
        if self.rng.gen_bool(self.config.reorder.clamp(0.0, 1.0)) {
            self.stats.reordered += 1;
            let max = self.config.reorder_delay.as_micros() as u64;
            arrival += Duration::from_micros(self.rng.gen_range(1..=max.max(1)));
        }
        if self.rng.gen_bool(self.config.duplicate.clamp(0.0, 1.0)) {
            self.stats.duplicated += 1;
            self.push(arrival + Duration::from_micros(300), bytes.clone());
        }
        self.push(arrival, bytes);
    }

    fn push(&mut self, at: Instant, bytes: Vec<u8>) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq, bytes)));
    }

    /// When the next packet arrives.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }

    /// A packet that has arrived by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_arrival()? > now {
            return None;
        }
        self.queue.pop().map(|Reverse((_, _, b))| b)
    }
}
