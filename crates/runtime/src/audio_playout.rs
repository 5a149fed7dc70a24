//! The bounded ring between the receiver's player (which writes each frame as it is played,
//! the same samples the WAV file gets) and an output device's callback (which takes what the
//! device asks for). One writer, one reader, no lock: the callback never waits for the player.
//!
//! The reader starts (and starts again after running dry) only once [`RingConfig::prefill`]
//! samples are queued, so the 20 ms steps of the player do not starve a device that asks
//! for less at a time. Running dry while playing is an underrun: the missing samples are
//! silence, counted. A full ring drops what the writer cannot fit (an overrun), counted.
//! Silence before the first sound ever queued is waiting, not an underrun.

use std::sync::atomic::{AtomicI16, AtomicU64, Ordering};
use std::sync::Arc;

/// The ring's size and start threshold, in samples (of the device's rate, mono).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// Samples the ring holds.
    pub capacity: usize,
    /// Samples queued before the reader starts (again).
    pub prefill: usize,
}

impl RingConfig {
    /// For a device at `rate` Hz: 250 ms of room (a device clock slower than the player's
    /// by 50 ppm fills it in over an hour), 30 ms before starting (a 20 ms frame and the
    /// player's wake-up jitter).
    pub fn for_rate(rate: u32) -> Self {
        let ms = |n: u64| (u64::from(rate) * n / 1_000) as usize;
        RingConfig {
            capacity: ms(250).max(2),
            prefill: ms(30).max(1),
        }
    }
}

/// What the ring counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlayoutCounts {
    /// Times the reader ran dry while playing.
    pub underruns: u64,
    /// Silent samples given to the device because of those (until the ring refilled).
    pub silence_samples: u64,
    /// Writes that did not fit whole.
    pub overruns: u64,
    /// Samples those dropped.
    pub dropped_samples: u64,
    /// Samples the device played from the ring.
    pub played_samples: u64,
}

#[derive(Debug)]
struct Shared {
    slots: Box<[AtomicI16]>,
    /// Samples ever written and ever read; their difference is what is queued.
    written: AtomicU64,
    read: AtomicU64,
    underruns: AtomicU64,
    silence: AtomicU64,
    overruns: AtomicU64,
    dropped: AtomicU64,
}

/// A ring of `config.capacity` samples: its writing half (the player's) and its reading half
/// (the device callback's).
pub fn playout_ring(config: RingConfig) -> (RingWriter, RingReader) {
    let capacity = config.capacity.max(1);
    let shared = Arc::new(Shared {
        slots: (0..capacity).map(|_| AtomicI16::new(0)).collect(),
        written: AtomicU64::new(0),
        read: AtomicU64::new(0),
        underruns: AtomicU64::new(0),
        silence: AtomicU64::new(0),
        overruns: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
    });
    (
        RingWriter {
            shared: shared.clone(),
        },
        RingReader {
            shared,
            prefill: config.prefill.clamp(1, capacity),
            playing: false,
            started: false,
        },
    )
}

/// The player's half.
#[derive(Debug)]
pub struct RingWriter {
    shared: Arc<Shared>,
}

impl RingWriter {
    /// Queues as much of `samples` as fits (the rest is dropped and counted); how many
    /// were queued.
    pub fn push(&mut self, samples: &[i16]) -> usize {
        let s = &*self.shared;
        let written = s.written.load(Ordering::Relaxed);
        let read = s.read.load(Ordering::Acquire);
        let capacity = s.slots.len() as u64;
        let free = (capacity - (written - read)) as usize;
        let n = free.min(samples.len());
        for (i, &v) in samples[..n].iter().enumerate() {
            s.slots[((written + i as u64) % capacity) as usize].store(v, Ordering::Relaxed);
        }
        s.written.store(written + n as u64, Ordering::Release);
        if n < samples.len() {
            s.overruns.fetch_add(1, Ordering::Relaxed);
            s.dropped
                .fetch_add((samples.len() - n) as u64, Ordering::Relaxed);
        }
        n
    }

    /// Samples queued now.
    pub fn queued(&self) -> usize {
        let s = &*self.shared;
        (s.written.load(Ordering::Relaxed) - s.read.load(Ordering::Acquire)) as usize
    }

    /// The counts so far.
    pub fn counts(&self) -> PlayoutCounts {
        let s = &*self.shared;
        PlayoutCounts {
            underruns: s.underruns.load(Ordering::Relaxed),
            silence_samples: s.silence.load(Ordering::Relaxed),
            overruns: s.overruns.load(Ordering::Relaxed),
            dropped_samples: s.dropped.load(Ordering::Relaxed),
            played_samples: s.read.load(Ordering::Relaxed),
        }
    }
}

/// The device callback's half.
#[derive(Debug)]
pub struct RingReader {
    shared: Arc<Shared>,
    prefill: usize,
    /// Taking samples (else waiting for `prefill`).
    playing: bool,
    /// Has played since the start (silence before that is not counted).
    started: bool,
}

impl RingReader {
    /// Fills `out` from the ring; silence where it has nothing (counted once playing began).
    pub fn fill(&mut self, out: &mut [i16]) {
        let s = &*self.shared;
        let read = s.read.load(Ordering::Relaxed);
        let queued = (s.written.load(Ordering::Acquire) - read) as usize;
        if !self.playing {
            if queued < self.prefill {
                out.fill(0);
                if self.started {
                    s.silence.fetch_add(out.len() as u64, Ordering::Relaxed);
                }
                return;
            }
            self.playing = true;
            self.started = true;
        }
        let capacity = s.slots.len() as u64;
        let n = queued.min(out.len());
        for (i, v) in out[..n].iter_mut().enumerate() {
            *v = s.slots[((read + i as u64) % capacity) as usize].load(Ordering::Relaxed);
        }
        s.read.store(read + n as u64, Ordering::Release);
        if n < out.len() {
            out[n..].fill(0);
            self.playing = false;
            s.underruns.fetch_add(1, Ordering::Relaxed);
            s.silence
                .fetch_add((out.len() - n) as u64, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn waits_for_the_prefill_then_counts_underruns_and_overruns() {
        let (mut w, mut r) = playout_ring(RingConfig {
            capacity: 100,
            prefill: 30,
        });
        let mut out = [7i16; 10];
        // Nothing yet: silence, not an underrun.
        r.fill(&mut out);
        assert_eq!(out, [0; 10]);
        assert_eq!(w.push(&[1; 20]), 20);
        r.fill(&mut out);
        assert_eq!(w.counts(), PlayoutCounts::default(), "still waiting");
        assert_eq!(w.push(&[2; 20]), 20);
        r.fill(&mut out);
        assert_eq!(out, [1; 10]);
        let mut big = [9i16; 40];
        r.fill(&mut big);
        assert_eq!(&big[..10], &[1; 10]);
        assert_eq!(&big[10..30], &[2; 20]);
        assert_eq!(&big[30..], &[0; 10]);
        let c = w.counts();
        assert_eq!(
            (c.underruns, c.silence_samples, c.played_samples),
            (1, 10, 40)
        );
        // Dry again: waits for the prefill, its silence counted.
        assert_eq!(w.push(&[3; 10]), 10);
        r.fill(&mut out);
        assert_eq!(out, [0; 10]);
        assert_eq!(w.counts().silence_samples, 20);
        assert_eq!(w.counts().underruns, 1);
        // Full: 90 more fit, the rest is dropped.
        assert_eq!(w.push(&[4; 120]), 90);
        assert_eq!(w.queued(), 100);
        let c = w.counts();
        assert_eq!((c.overruns, c.dropped_samples), (1, 30));
        r.fill(&mut out);
        assert_eq!(out, [3; 10]);
    }

    proptest! {
        /// Any interleaving of writes and reads of any sizes: what the device plays is what
        /// was queued, in order, less what was dropped; every sample given is played, silent
        /// while waiting, or counted silence; every sample written is played, dropped or
        /// still queued.
        #[test]
        fn the_ring_accounts_for_every_sample(
            steps in proptest::collection::vec((any::<bool>(), 1usize..200), 1..200),
            capacity in 1usize..400,
            prefill in 1usize..400,
        ) {
            let (mut w, mut r) = playout_ring(RingConfig { capacity, prefill });
            let mut next = 1i32;
            let mut kept = Vec::new();
            let mut played = Vec::new();
            let (mut given, mut waiting, mut written) = (0u64, 0u64, 0u64);
            for (write, n) in steps {
                if write {
                    let samples: Vec<i16> = (0..n).map(|i| ((next + i as i32) % 30_000 + 1) as i16).collect();
                    next += n as i32;
                    let queued = w.push(&samples);
                    kept.extend_from_slice(&samples[..queued]);
                    written += n as u64;
                } else {
                    let before = w.counts();
                    let mut out = vec![-1i16; n];
                    r.fill(&mut out);
                    let after = w.counts();
                    let took = (after.played_samples - before.played_samples) as usize;
                    played.extend_from_slice(&out[..took]);
                    prop_assert!(out[took..].iter().all(|&v| v == 0));
                    if after.silence_samples == before.silence_samples {
                        waiting += (n - took) as u64;
                    }
                    given += n as u64;
                }
            }
            let c = w.counts();
            prop_assert_eq!(&played[..], &kept[..played.len()]);
            prop_assert_eq!(given, c.played_samples + c.silence_samples + waiting);
            prop_assert_eq!(written, c.played_samples + c.dropped_samples + w.queued() as u64);
        }
    }

    /// A writer and a reader on two threads: every sample arrives, in order.
    #[test]
    fn two_threads_see_every_sample_in_order() {
        let (mut w, mut r) = playout_ring(RingConfig {
            capacity: 256,
            prefill: 1,
        });
        const TOTAL: usize = 200_000;
        let writer = std::thread::spawn(move || {
            let mut v = 0usize;
            while v < TOTAL {
                let chunk: Vec<i16> = (v..(v + 97).min(TOTAL))
                    .map(|i| (i % 30_000 + 1) as i16)
                    .collect();
                let mut at = 0;
                while at < chunk.len() {
                    at += w.push(&chunk[at..]);
                    std::thread::yield_now();
                }
                v += chunk.len();
            }
        });
        let mut got = Vec::with_capacity(TOTAL);
        let mut out = [0i16; 61];
        while got.len() < TOTAL {
            r.fill(&mut out);
            got.extend(out.iter().copied().filter(|&v| v != 0));
            std::thread::yield_now();
        }
        writer.join().unwrap();
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (i % 30_000 + 1) as i16));
    }
}
