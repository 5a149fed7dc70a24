//! The machine's microphone and speakers: the sender's `--audio mic` ([`Microphone`]) and the
//! receiver's `--play` ([`Speaker`]), through cpal's default input and output devices.
//!
//! The device code is behind the `sound` cargo feature (cpal links ALSA on Linux, which
//! needs `libasound2-dev`), so the default build needs no sound library: without it,
//! [`Microphone::open`] and [`Speaker::open`] say how to build with it. With it, a machine
//! without the device gets an error naming it. What the devices deliver or ask for is fitted
//! by [`crate::audio_capture`] (any buffers to 20 ms frames of 48 kHz mono) and
//! [`crate::audio_playout`] (a bounded ring the output callback reads), both tested without a
//! sound card.

#[cfg(feature = "sound")]
mod cpal_io;
mod opened;
mod support;
#[cfg(not(feature = "sound"))]
mod without;
#[cfg(not(feature = "sound"))]
use without as cpal_io;

pub use support::{NOT_BUILT, SUPPORTED};

use anyhow::Result;
use salsify_audio::SAMPLE_RATE;
use salsify_time::Instant;

use crate::audio_capture::{CaptureQueue, CapturedFrame, LinearResampler};
use crate::audio_playout::{PlayoutCounts, RingWriter};

/// Frames the capture queue holds (0.5 s): the sender loop takes them as they come, so a
/// full queue means it stalled; then the newest are dropped and counted.
const CAPTURE_QUEUE_FRAMES: usize = 25;

/// Whether there is a default input device to capture from: its description (name, rate,
/// channels, format), or an error naming what is missing. Nothing is opened for long: a
/// command checks before its call starts rather than failing once it runs.
pub fn probe_microphone() -> Result<String> {
    cpal_io::probe_input()
}

/// Whether there is a default output device to play on: as [`probe_microphone`].
pub fn probe_speakers() -> Result<String> {
    cpal_io::probe_output()
}

/// The default input device, capturing into 20 ms frames of 48 kHz mono on a sender's grid.
pub struct Microphone {
    queue: CaptureQueue,
    description: String,
    /// The device's stream (`None`: frames pushed by a test).
    _stream: Option<cpal_io::Stream>,
}

impl std::fmt::Debug for Microphone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Microphone")
            .field("device", &self.description)
            .finish()
    }
}

impl Microphone {
    /// Opens the default input device and starts capturing; frame 0 is the one captured at
    /// `origin` (see [`crate::audio_capture::FrameChunker`]).
    pub fn open(origin: Instant) -> Result<Microphone> {
        let (sink, queue) = CaptureQueue::bounded(CAPTURE_QUEUE_FRAMES);
        let (stream, description) = cpal_io::open_input(origin, sink)?;
        Ok(Microphone {
            queue,
            description,
            _stream: Some(stream),
        })
    }

    /// A microphone whose frames a test pushes into the queue's other half.
    #[cfg(test)]
    pub(crate) fn from_queue(queue: CaptureQueue) -> Microphone {
        Microphone {
            queue,
            description: "test frames".to_string(),
            _stream: None,
        }
    }

    /// The next frame captured, if one is waiting.
    pub fn try_next(&self) -> Option<CapturedFrame> {
        self.queue.try_next()
    }

    /// Frames dropped because the sender did not take them in time.
    pub fn overruns(&self) -> u64 {
        self.queue.overruns()
    }

    /// The device and what it delivers (name, rate, channels, sample format).
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl Drop for Microphone {
    fn drop(&mut self) {
        let overruns = self.overruns();
        if overruns > 0 {
            eprintln!(
                "salsify: microphone: {overruns} frames of 20 ms dropped (the sender did not take them in time)"
            );
        }
    }
}

/// The default output device, fed through a bounded ring with the frames as they are played.
pub struct Speaker {
    ring: RingWriter,
    resampler: LinearResampler,
    scratch: Vec<i16>,
    /// The device's sample rate.
    rate: u32,
    description: String,
    _stream: cpal_io::Stream,
}

impl std::fmt::Debug for Speaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Speaker")
            .field("device", &self.description)
            .finish()
    }
}

impl Speaker {
    /// Opens the default output device and starts it (silent until samples come).
    pub fn open() -> Result<Speaker> {
        let opened = cpal_io::open_output()?;
        Ok(Speaker {
            ring: opened.ring,
            resampler: LinearResampler::new(SAMPLE_RATE, opened.rate),
            scratch: Vec::new(),
            rate: opened.rate.max(1),
            description: opened.description,
            _stream: opened.stream,
        })
    }

    /// Queues samples (48 kHz mono) just played; what does not fit is dropped and counted.
    pub fn write(&mut self, samples: &[i16]) {
        self.scratch.clear();
        self.resampler.process(samples, &mut self.scratch);
        self.ring.push(&self.scratch);
    }

    /// Underruns and overruns so far.
    pub fn counts(&self) -> PlayoutCounts {
        self.ring.counts()
    }

    /// The device and what it takes (name, rate, channels, sample format).
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl Drop for Speaker {
    fn drop(&mut self) {
        let c = self.counts();
        let ms = |samples: u64| samples as f64 * 1e3 / f64::from(self.rate);
        eprintln!(
            "salsify: speakers: {} underruns ({:.0} ms of silence filled in), {} overruns ({:.0} ms dropped), {:.1} s played",
            c.underruns,
            ms(c.silence_samples),
            c.overruns,
            ms(c.dropped_samples),
            ms(c.played_samples) / 1e3,
        );
    }
}
