//! From a capture device's callback buffers (any size, any rate) to the sender's exact 20 ms
//! frames of 48 kHz mono with their capture times, and the bounded queue that carries them from
//! the device's callback thread to the sender loop without ever blocking the callback.
//!
//! No device here (that is [`crate::sound`], behind the `sound` feature): the pieces are plain
//! state machines so they are tested without a sound card.
//!
//! Frames sit on the sender's grid: frame `k` is the 960 samples whose first was captured at
//! `origin + k * 20 ms` (within one sample), so the capture time a packet carries is the one
//! the receiver's player derives from the frame number. The chunker starts on the first grid
//! boundary after the first sample, keeps its own sample clock while the buffers' stated
//! times agree with it, and starts again on the grid (frames missing in between) when they
//! stop agreeing (the device dropped samples, or its clock drifted by more than
//! [`ChunkerConfig::resync`] from the system's) for [`ChunkerConfig::confirm`] buffers in a
//! row: one buffer's late callback is jitter, not a gap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use salsify_audio::SAMPLE_RATE;
use salsify_time::{Duration, Instant};

/// Samples in one 20 ms frame at 48 kHz.
pub const FRAME_SAMPLES: usize = 960;
/// Microseconds per frame.
const FRAME_MICROS: u64 = 20_000;

/// Microseconds taken by `n` samples at 48 kHz (rounded down).
fn samples_to_micros(n: u64) -> u64 {
    n * 1_000_000 / u64::from(SAMPLE_RATE)
}

/// Samples at 48 kHz in `micros` (rounded to nearest).
fn micros_to_samples(micros: u64) -> u64 {
    (micros * u64::from(SAMPLE_RATE) + 500_000) / 1_000_000
}

/// One frame for the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedFrame {
    /// Its number on the sender's grid (frames lost before the sender leave gaps).
    pub index: u64,
    /// When its first sample was captured: `origin + index * 20 ms`.
    pub captured: Instant,
    /// [`FRAME_SAMPLES`] samples, 48 kHz mono.
    pub samples: Vec<i16>,
}

/// Linear interpolation from one sample rate to another, across buffers. Simple on purpose:
/// a voice channel at 48 kHz with Opus's own low-pass behind it; a device offering another
/// rate (44.1 kHz is the usual one) is rare enough that a polyphase filter is not worth it.
#[derive(Debug, Clone)]
pub struct LinearResampler {
    /// Input samples per output sample; `None` when the rates are equal (samples pass as
    /// they are).
    step: Option<f64>,
    /// Where the next output sample falls, in input samples from the current buffer's first
    /// (-1 is the previous buffer's last, kept in `last`).
    position: f64,
    last: i16,
}

impl LinearResampler {
    /// From `from_hz` to `to_hz` (both above zero).
    pub fn new(from_hz: u32, to_hz: u32) -> Self {
        let step = (from_hz != to_hz).then(|| f64::from(from_hz) / f64::from(to_hz.max(1)));
        LinearResampler {
            step,
            position: 0.0,
            last: 0,
        }
    }

    /// Appends `input` converted to `out`; returns where the first sample appended falls, in
    /// input samples from `input`'s first (0 when the rates are equal; from -1, the previous
    /// buffer's last, otherwise; past the end when nothing was appended).
    pub fn process(&mut self, input: &[i16], out: &mut Vec<i16>) -> f64 {
        let Some(step) = self.step else {
            out.extend_from_slice(input);
            return 0.0;
        };
        let first = self.position;
        let n = input.len() as f64;
        let at = |i: isize| -> f64 {
            if i < 0 {
                f64::from(self.last)
            } else {
                f64::from(input[i as usize])
            }
        };
        while self.position < n - 1.0 {
            let i = self.position.floor();
            let frac = self.position - i;
            let (a, b) = (at(i as isize), at(i as isize + 1));
            out.push((a + (b - a) * frac).round() as i16);
            self.position += step;
        }
        if let Some(&last) = input.last() {
            self.last = last;
            self.position -= n;
        }
        first
    }
}

/// How the chunker follows the device's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkerConfig {
    /// The sample rate the device delivers (resampled to 48 kHz).
    pub device_rate: u32,
    /// Frame 0's capture time: the sender's clock origin.
    pub origin: Instant,
    /// A buffer whose stated capture time is this far from the chunker's own sample clock
    /// starts the frames again on the grid (default 30 ms: more than callback timing jitter,
    /// less than a glitch worth hearing as late audio).
    pub resync: Duration,
    /// Buffers in a row that must disagree before starting again (default 3; sound
    /// servers such as PulseAudio report capture times that jump now and then).
    pub confirm: u32,
}

impl ChunkerConfig {
    /// A device at `device_rate` for a sender whose frame 0 is at `origin`.
    pub fn new(device_rate: u32, origin: Instant) -> Self {
        ChunkerConfig {
            device_rate,
            origin,
            resync: Duration::from_millis(30),
            confirm: 3,
        }
    }
}

/// Callback buffers in, exact frames on the sender's grid out.
#[derive(Debug, Clone)]
pub struct FrameChunker {
    config: ChunkerConfig,
    resampler: LinearResampler,
    /// Resampled samples of the current buffer (kept to reuse its allocation).
    scratch: Vec<i16>,
    /// The running sample clock: (capture time of a sample, samples at 48 kHz since it).
    clock: Option<(Instant, u64)>,
    /// Samples to drop before the next grid boundary.
    skip: u64,
    /// The frame being filled, and its samples so far.
    index: u64,
    pending: Vec<i16>,
    /// Buffers in a row whose times disagreed with the sample clock.
    off_in_a_row: u32,
    /// Times the chunker started again on the grid after the first start.
    pub resyncs: u64,
}

impl FrameChunker {
    /// A chunker that has seen nothing yet.
    pub fn new(config: ChunkerConfig) -> Self {
        FrameChunker {
            resampler: LinearResampler::new(config.device_rate, SAMPLE_RATE),
            config,
            scratch: Vec::new(),
            clock: None,
            skip: 0,
            index: 0,
            pending: Vec::with_capacity(FRAME_SAMPLES),
            off_in_a_row: 0,
            resyncs: 0,
        }
    }

    /// A buffer of mono samples at the device's rate whose first sample was captured at
    /// `captured`; every frame it completes goes to `out`, oldest first.
    pub fn push(&mut self, captured: Instant, samples: &[i16], mut out: impl FnMut(CapturedFrame)) {
        let mut resampled = std::mem::take(&mut self.scratch);
        resampled.clear();
        let offset = self.resampler.process(samples, &mut resampled);
        let offset_micros = offset * 1e6 / f64::from(self.config.device_rate.max(1));
        let first = Instant::from_micros(
            (captured.as_micros() as f64 + offset_micros)
                .max(0.0)
                .round() as u64,
        );
        self.follow_clock(first);
        for &s in &resampled {
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.pending.push(s);
            if self.pending.len() == FRAME_SAMPLES {
                let samples =
                    std::mem::replace(&mut self.pending, Vec::with_capacity(FRAME_SAMPLES));
                out(CapturedFrame {
                    index: self.index,
                    captured: self.grid(self.index),
                    samples,
                });
                self.index += 1;
            }
        }
        if let Some((_, n)) = &mut self.clock {
            *n += resampled.len() as u64;
        }
        self.scratch = resampled;
    }

    /// Frame `index`'s capture time.
    fn grid(&self, index: u64) -> Instant {
        self.config.origin + Duration::from_micros(index * FRAME_MICROS)
    }

    /// Keeps the sample clock if `first` (the buffer's first resampled sample) agrees with
    /// it, else starts again on the next grid boundary at or after `first`.
    fn follow_clock(&mut self, first: Instant) {
        if let Some((at, n)) = self.clock {
            let expected = at + Duration::from_micros(samples_to_micros(n));
            let off = first
                .saturating_duration_since(expected)
                .max(expected.saturating_duration_since(first));
            if off <= self.config.resync {
                self.off_in_a_row = 0;
                return;
            }
            self.off_in_a_row += 1;
            if self.off_in_a_row < self.config.confirm.max(1) {
                return;
            }
            self.resyncs += 1;
        }
        self.off_in_a_row = 0;
        let since_origin = first.saturating_duration_since(self.config.origin);
        let index = (since_origin.as_micros() as u64).div_ceil(FRAME_MICROS);
        // Never a number already used (the frame being filled is not sent yet): a clock
        // that went back loses frames rather than sending two with one number.
        self.index = index.max(self.index);
        self.pending.clear();
        let boundary = self.grid(self.index);
        self.skip = micros_to_samples(boundary.saturating_duration_since(first).as_micros() as u64);
        self.clock = Some((first, 0));
    }
}

/// The queue's sending half, for the device's callback: never blocks, counts what it drops.
#[derive(Debug, Clone)]
pub struct CaptureSink {
    tx: SyncSender<CapturedFrame>,
    overruns: Arc<AtomicU64>,
}

impl CaptureSink {
    /// Queues `frame` if there is room; a full queue drops it (the newest: one writer cannot
    /// take back what the reader may be taking) and counts an overrun, which the receiver
    /// hears as a gap. A receiver that is gone drops it too (the call is ending).
    pub fn offer(&self, frame: CapturedFrame) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(frame) {
            self.overruns.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The queue's receiving half, for the sender loop.
#[derive(Debug)]
pub struct CaptureQueue {
    rx: Receiver<CapturedFrame>,
    overruns: Arc<AtomicU64>,
}

impl CaptureQueue {
    /// A queue holding at most `frames` frames, and its sending half.
    pub fn bounded(frames: usize) -> (CaptureSink, CaptureQueue) {
        let (tx, rx) = mpsc::sync_channel(frames);
        let overruns = Arc::new(AtomicU64::new(0));
        (
            CaptureSink {
                tx,
                overruns: overruns.clone(),
            },
            CaptureQueue { rx, overruns },
        )
    }

    /// The next frame queued, if any (never waits).
    pub fn try_next(&self) -> Option<CapturedFrame> {
        self.rx.try_recv().ok()
    }

    /// Frames dropped because the queue was full.
    pub fn overruns(&self) -> u64 {
        self.overruns.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Capture time of sample `n` of a device at `rate` whose sample 0 was at `t0`.
    fn sample_time(t0: Instant, n: u64, rate: u32) -> Instant {
        t0 + Duration::from_micros(n * 1_000_000 / u64::from(rate))
    }

    fn chunk_all(
        config: ChunkerConfig,
        t0: Instant,
        input: &[i16],
        sizes: &[usize],
    ) -> (Vec<CapturedFrame>, FrameChunker) {
        let mut chunker = FrameChunker::new(config);
        let mut frames = Vec::new();
        let mut at = 0usize;
        for &size in sizes.iter().cycle() {
            if at >= input.len() {
                break;
            }
            let end = (at + size).min(input.len());
            let t = sample_time(t0, at as u64, config.device_rate);
            chunker.push(t, &input[at..end], |f| frames.push(f));
            at = end;
        }
        (frames, chunker)
    }

    proptest! {
        /// Buffers of any sizes at 48 kHz come out as exact 960-sample frames, numbered one
        /// after another from the first grid boundary after the first sample, each with its
        /// grid time (within one sample of its first sample's capture time), carrying the
        /// input's samples unchanged and in order; what is left is less than a frame.
        #[test]
        fn buffers_of_any_size_become_exact_frames_on_the_grid(
            sizes in proptest::collection::vec(1usize..3_000, 1..40),
            start_micros in 0u64..200_000,
            total in 0usize..40_000,
        ) {
            let origin = Instant::from_millis(1_000);
            let t0 = origin + Duration::from_micros(start_micros);
            let input: Vec<i16> = (0..total).map(|i| (i % 30_011) as i16).collect();
            let config = ChunkerConfig::new(48_000, origin);
            let (frames, chunker) = chunk_all(config, t0, &input, &sizes);
            let first_index = start_micros.div_ceil(FRAME_MICROS);
            let skip = micros_to_samples(first_index * FRAME_MICROS - start_micros) as usize;
            prop_assert_eq!(chunker.resyncs, 0);
            prop_assert_eq!(frames.len(), total.saturating_sub(skip) / FRAME_SAMPLES);
            for (k, f) in frames.iter().enumerate() {
                prop_assert_eq!(f.index, first_index + k as u64);
                prop_assert_eq!(f.captured, origin + Duration::from_micros(f.index * FRAME_MICROS));
                prop_assert_eq!(f.samples.len(), FRAME_SAMPLES);
                let first = skip + k * FRAME_SAMPLES;
                prop_assert_eq!(&f.samples[..], &input[first..first + FRAME_SAMPLES]);
                let real = sample_time(t0, first as u64, 48_000);
                let off = real.saturating_duration_since(f.captured)
                    .max(f.captured.saturating_duration_since(real));
                prop_assert!(off <= Duration::from_micros(21), "frame {} off by {:?}", k, off);
            }
        }

        /// Callback times that jitter (a few ms either way) do not move the frames: the
        /// chunker keeps its sample clock, numbers stay consecutive.
        #[test]
        fn jittery_callback_times_keep_the_sample_clock(
            sizes in proptest::collection::vec(64usize..2_000, 1..20),
            jitter in proptest::collection::vec(-8_000i64..8_000, 1..20),
        ) {
            let origin = Instant::from_millis(500);
            let mut chunker = FrameChunker::new(ChunkerConfig::new(48_000, origin));
            let mut frames = Vec::new();
            let mut n = 0u64;
            for (i, &size) in sizes.iter().cycle().take(200).enumerate() {
                let exact = sample_time(origin, n, 48_000).as_micros() as i64 + 10_000;
                let t = Instant::from_micros((exact + jitter[i % jitter.len()]) as u64);
                chunker.push(t, &vec![1; size], |f| frames.push(f));
                n += size as u64;
            }
            prop_assert_eq!(chunker.resyncs, 0);
            prop_assert!(frames.windows(2).all(|w| w[1].index == w[0].index + 1));
        }

        /// A gap in the device's stream (samples it never delivered) or a clock that jumps
        /// back starts again on the grid: numbers only grow, times stay on the grid and
        /// within one sample of the real capture time of each frame's first sample.
        #[test]
        fn a_gap_starts_again_on_the_grid(
            before in 1usize..20_000,
            gap_micros in 31_000u64..500_000,
            back in any::<bool>(),
            after in 1usize..20_000,
            size in 100usize..1_500,
        ) {
            let origin = Instant::from_millis(2_000);
            let t0 = origin + Duration::from_micros(7_000);
            // At the first buffer that disagrees, so every frame after the gap is exact.
            let config = ChunkerConfig { confirm: 1, ..ChunkerConfig::new(48_000, origin) };
            let mut chunker = FrameChunker::new(config);
            let mut frames: Vec<(CapturedFrame, Instant)> = Vec::new();
            let mut feed = |chunker: &mut FrameChunker, start: Instant, len: usize| {
                let mut at = 0;
                while at < len {
                    let end = (at + size).min(len);
                    let t = sample_time(start, at as u64, 48_000);
                    let mut got = vec![];
                    chunker.push(t, &vec![3; end - at], |f| got.push(f));
                    for f in got {
                        frames.push((f, start));
                    }
                    at = end;
                }
            };
            feed(&mut chunker, t0, before);
            let end_of_first = sample_time(t0, before as u64, 48_000);
            let second = if back {
                end_of_first.checked_sub(Duration::from_micros(gap_micros)).unwrap_or(origin)
            } else {
                end_of_first + Duration::from_micros(gap_micros)
            };
            feed(&mut chunker, second, after);
            prop_assert!(frames.windows(2).all(|w| w[1].0.index > w[0].0.index));
            for (f, _) in &frames {
                prop_assert_eq!(f.captured, origin + Duration::from_micros(f.index * FRAME_MICROS));
                prop_assert_eq!(f.samples.len(), FRAME_SAMPLES);
            }
            if !back {
                // Forward: every frame of the second part is on time for its samples.
                for (f, start) in frames.iter().filter(|(_, s)| *s == second) {
                    prop_assert!(f.captured >= *start);
                }
            }
        }
    }

    /// One late callback is jitter: the clock holds. Buffers late in a row (a gap the
    /// device left) start again on the grid at the third, leaving frames out.
    #[test]
    fn a_gap_is_confirmed_by_buffers_in_a_row() {
        let origin = Instant::from_millis(100);
        let mut chunker = FrameChunker::new(ChunkerConfig::new(48_000, origin));
        let mut frames = vec![];
        let buffer = vec![5i16; 480];
        let ms = |n: u64| Duration::from_millis(n);
        let mut t = origin;
        for i in 0..20 {
            // Buffer 10 comes with a time 100 ms late, once.
            let stated = if i == 10 { t + ms(100) } else { t };
            chunker.push(stated, &buffer, |f| frames.push(f));
            t += ms(10);
        }
        assert_eq!(chunker.resyncs, 0);
        assert_eq!(frames.len(), 10);
        assert!(frames.windows(2).all(|w| w[1].index == w[0].index + 1));
        // Now every buffer is 200 ms later than the samples say (the device lost them).
        for i in 0..10 {
            chunker.push(t + ms(200), &buffer, |f| frames.push(f));
            t += ms(10);
            assert_eq!(chunker.resyncs, u64::from(i >= 2), "buffer {i}");
        }
        let gap = frames
            .windows(2)
            .map(|w| w[1].index - w[0].index)
            .max()
            .unwrap();
        assert!((10..=12).contains(&gap), "a gap of {gap} frames");
        for f in &frames {
            assert_eq!(f.captured, origin + ms(20) * f.index as u32);
        }
    }

    /// A 44.1 kHz device: the frames still come every 960 samples at 48 kHz, and a tone
    /// survives the conversion.
    #[test]
    fn another_device_rate_is_resampled_to_48_khz() {
        let rate = 44_100;
        let origin = Instant::from_millis(0);
        let seconds = 2;
        let tone = |t: f64| (8_000.0 * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as i16;
        let input: Vec<i16> = (0..rate * seconds)
            .map(|i| tone(f64::from(i) / f64::from(rate)))
            .collect();
        let (frames, chunker) = chunk_all(
            ChunkerConfig::new(rate, origin),
            origin,
            &input,
            &[441, 1_000, 17],
        );
        assert_eq!(chunker.resyncs, 0);
        assert!(
            (99..=100).contains(&frames.len()),
            "{} frames in 2 s",
            frames.len()
        );
        for (k, f) in frames.iter().enumerate() {
            assert_eq!(f.index, k as u64);
            for (i, &s) in f.samples.iter().enumerate() {
                let t = (k * FRAME_SAMPLES + i) as f64 / 48_000.0;
                let err = (i32::from(s) - i32::from(tone(t))).abs();
                assert!(err < 300, "frame {k} sample {i}: {s} vs {}", tone(t));
            }
        }
    }

    #[test]
    fn resampling_keeps_the_count_across_buffers() {
        let mut r = LinearResampler::new(16_000, 48_000);
        let mut out = vec![];
        for chunk in [1usize, 7, 160, 3, 829] {
            r.process(&vec![100; chunk], &mut out);
        }
        // 1000 input samples at 16 kHz: 3000 at 48 kHz, less the one held for the next.
        assert!((2_995..=3_000).contains(&out.len()), "{}", out.len());
        assert!(out.iter().skip(1).all(|&s| s == 100));
    }

    /// The queue never waits: a full one drops the frame and counts it.
    #[test]
    fn a_full_queue_counts_overruns() {
        let (sink, queue) = CaptureQueue::bounded(3);
        let frame = |index| CapturedFrame {
            index,
            captured: Instant::ZERO,
            samples: vec![],
        };
        for i in 0..5 {
            sink.offer(frame(i));
        }
        assert_eq!(queue.overruns(), 2);
        assert_eq!(queue.try_next().map(|f| f.index), Some(0));
        sink.offer(frame(5));
        let rest: Vec<u64> = std::iter::from_fn(|| queue.try_next().map(|f| f.index)).collect();
        assert_eq!(rest, [1, 2, 5]);
        assert_eq!(queue.overruns(), 2);
        assert!(queue.try_next().is_none());
    }
}
