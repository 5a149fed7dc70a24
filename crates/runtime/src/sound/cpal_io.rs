//! The devices through cpal. What a device offers is taken as it comes: 48 kHz is asked for
//! when the device lists it, the fewest channels it offers, 16-bit integers or floats; else
//! its default configuration. Input channels are averaged to mono and the rate resampled to
//! 48 kHz ([`FrameChunker`]); output gets the mono samples on every channel at its own rate.
//! Errors name the device and the host, never panic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{
    Device, FromSample, Host, InputCallbackInfo, Sample, SampleFormat, SizedSample, StreamConfig,
    SupportedStreamConfig, SupportedStreamConfigRange,
};
use salsify_audio::SAMPLE_RATE;
use salsify_time::{Duration, Instant};

use super::opened::OpenedOutput;
use crate::audio_capture::{CaptureSink, ChunkerConfig, FrameChunker};
use crate::audio_playout::{playout_ring, RingConfig, RingReader};
use crate::clock;

/// How long a backend may take to open a stream.
const OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// A running cpal stream (stops when dropped, saying how it went).
pub(super) struct Stream {
    stream: cpal::Stream,
    counts: Arc<StreamCounts>,
    /// "microphone" or "speakers".
    what: &'static str,
}

/// How a stream went, counted by its callbacks.
#[derive(Debug, Default)]
struct StreamCounts {
    /// Errors the backend reported while running (device gone, xruns).
    errors: AtomicU64,
    /// Callbacks.
    callbacks: AtomicU64,
    /// The longest time between two callbacks, µs (how bursty the device is).
    longest_gap_us: AtomicU64,
    /// Times the capture chunker started again on the grid (a device gap or clock jump).
    resyncs: AtomicU64,
}

impl StreamCounts {
    /// A callback at `now`; `last`: the previous one's time, kept by the callback.
    fn on_callback(&self, now: Instant, last: &mut Option<Instant>) {
        self.callbacks.fetch_add(1, Ordering::Relaxed);
        if let Some(before) = last.replace(now) {
            let gap = now.saturating_duration_since(before).as_micros() as u64;
            self.longest_gap_us.fetch_max(gap, Ordering::Relaxed);
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.stream.pause();
        let c = &self.counts;
        let resyncs = c.resyncs.load(Ordering::Relaxed);
        eprintln!(
            "salsify: {} stream: {} callbacks, longest gap between two {:.1} ms, {} device errors{}",
            self.what,
            c.callbacks.load(Ordering::Relaxed),
            c.longest_gap_us.load(Ordering::Relaxed) as f64 / 1e3,
            c.errors.load(Ordering::Relaxed),
            match self.what {
                "microphone" => format!(", {resyncs} restarts on the frame grid (gaps in its stream)"),
                _ => String::new(),
            }
        );
    }
}

fn host() -> Result<Host> {
    let id = *cpal::available_hosts()
        .first()
        .ok_or_else(|| anyhow!("no sound system (cpal found no host on this machine)"))?;
    cpal::host_from_id(id).map_err(|e| anyhow!("the sound system {id:?} is not available: {e}"))
}

/// The sample formats taken, best first.
fn format_rank(format: SampleFormat) -> Option<u8> {
    match format {
        SampleFormat::I16 => Some(0),
        SampleFormat::F32 => Some(1),
        SampleFormat::I32 => Some(2),
        SampleFormat::F64 => Some(3),
        SampleFormat::U16 => Some(4),
        SampleFormat::I8 => Some(5),
        SampleFormat::U8 => Some(6),
        _ => None,
    }
}

/// 48 kHz in the fewest channels and the best format the device lists, else its default.
fn choose(
    ranges: Result<Vec<SupportedStreamConfigRange>>,
    default: impl FnOnce() -> Result<SupportedStreamConfig>,
) -> Result<SupportedStreamConfig> {
    let best = ranges.ok().and_then(|ranges| {
        ranges
            .into_iter()
            .filter(|r| r.contains_rate(SAMPLE_RATE))
            .filter_map(|r| format_rank(r.sample_format()).map(|rank| (r.channels(), rank, r)))
            .min_by_key(|(channels, rank, _)| (*channels, *rank))
            .map(|(_, _, r)| r.with_sample_rate(SAMPLE_RATE))
    });
    match best {
        Some(config) => Ok(config),
        None => default(),
    }
}

fn describe(device: &Device, config: &SupportedStreamConfig) -> String {
    format!(
        "'{device}', {} Hz, {} channel{}, {:?}",
        config.sample_rate(),
        config.channels(),
        if config.channels() == 1 { "" } else { "s" },
        config.sample_format()
    )
}

/// ALSA's messages while a device is looked for and opened on this thread (it would print
/// them to stderr, a dozen lines for a machine without a sound card): the first is quoted in
/// the error if opening fails.
struct AlsaMessages {
    #[cfg(target_os = "linux")]
    buffer: Option<std::rc::Rc<std::cell::RefCell<alsa::Output>>>,
}

impl AlsaMessages {
    fn catch() -> Self {
        AlsaMessages {
            #[cfg(target_os = "linux")]
            buffer: alsa::Output::local_error_handler().ok(),
        }
    }

    /// `result`, its error followed by ALSA's first message if it had one.
    fn explain<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| match self.first() {
            Some(said) => anyhow!("{e:#} (ALSA: {said})"),
            None => e,
        })
    }

    fn first(&self) -> Option<String> {
        #[cfg(target_os = "linux")]
        if let Some(buffer) = &self.buffer {
            let text = buffer.borrow().to_string();
            return text
                .lines()
                .map(|l| l.rsplit_once(") ").map_or(l, |(_, m)| m).trim().to_string())
                .find(|l| !l.is_empty());
        }
        None
    }
}

/// Opens the default input device; its frames go to `sink` on the grid from `origin`.
pub(super) fn open_input(origin: Instant, sink: CaptureSink) -> Result<(Stream, String)> {
    let alsa = AlsaMessages::catch();
    alsa.explain(start_input(origin, sink))
}

/// The default input device and the configuration it would be opened with, or why not.
pub(super) fn probe_input() -> Result<String> {
    let alsa = AlsaMessages::catch();
    alsa.explain(input_config().map(|(device, config, _)| describe(&device, &config)))
}

fn input_config() -> Result<(Device, SupportedStreamConfig, String)> {
    let host = host()?;
    let name = format!("{:?}", host.id());
    let device = host
        .default_input_device()
        .ok_or_else(|| anyhow!("--audio mic: no default input device (microphone) in {name}"))?;
    let config = choose(
        device
            .supported_input_configs()
            .map(Iterator::collect)
            .map_err(Into::into),
        || Ok(device.default_input_config()?),
    )
    .with_context(|| {
        format!("--audio mic: no usable microphone: the default input device '{device}' ({name})")
    })?;
    Ok((device, config, name))
}

fn start_input(origin: Instant, sink: CaptureSink) -> Result<(Stream, String)> {
    let (device, config, name) = input_config()?;
    let description = describe(&device, &config);
    let format = config.sample_format();
    let config: StreamConfig = config.config();
    let chunker = FrameChunker::new(ChunkerConfig::new(config.sample_rate, origin));
    let counts = Arc::<StreamCounts>::default();
    let stream = match format {
        SampleFormat::I16 => build_input::<i16>(&device, &config, chunker, sink, &counts),
        SampleFormat::F32 => build_input::<f32>(&device, &config, chunker, sink, &counts),
        SampleFormat::I32 => build_input::<i32>(&device, &config, chunker, sink, &counts),
        SampleFormat::F64 => build_input::<f64>(&device, &config, chunker, sink, &counts),
        SampleFormat::U16 => build_input::<u16>(&device, &config, chunker, sink, &counts),
        SampleFormat::I8 => build_input::<i8>(&device, &config, chunker, sink, &counts),
        SampleFormat::U8 => build_input::<u8>(&device, &config, chunker, sink, &counts),
        other => bail!("--audio mic: the input device {description} offers only {other:?} samples"),
    }
    .with_context(|| format!("--audio mic: cannot open the input device {description} ({name})"))?;
    stream
        .play()
        .with_context(|| format!("--audio mic: cannot start the input device {description}"))?;
    let stream = Stream {
        stream,
        counts,
        what: "microphone",
    };
    Ok((stream, description))
}

fn build_input<T>(
    device: &Device,
    config: &StreamConfig,
    mut chunker: FrameChunker,
    sink: CaptureSink,
    counts: &Arc<StreamCounts>,
) -> Result<cpal::Stream>
where
    T: SizedSample,
    i16: FromSample<T>,
{
    let channels = usize::from(config.channels.max(1));
    let rate = config.sample_rate.max(1);
    // Grown once to the device's buffer size, then reused: no allocation per callback
    // beyond the frames handed on.
    let mut mono: Vec<i16> = Vec::new();
    let on_error = error_counter(counts);
    let counts = counts.clone();
    let mut last = None;
    let stream = device.build_input_stream::<T, _, _>(
        *config,
        move |data: &[T], info: &InputCallbackInfo| {
            let now = clock::now();
            counts.on_callback(now, &mut last);
            mono.clear();
            mono.extend(data.chunks(channels).map(|frame| {
                let sum: i32 = frame.iter().map(|&s| i32::from(i16::from_sample(s))).sum();
                (sum / frame.len() as i32) as i16
            }));
            let captured = now
                .checked_sub(first_sample_age(info, mono.len(), rate))
                .unwrap_or(now);
            let resyncs = chunker.resyncs;
            chunker.push(captured, &mono, |frame| sink.offer(frame));
            if chunker.resyncs != resyncs {
                counts.resyncs.fetch_add(1, Ordering::Relaxed);
            }
        },
        on_error,
        Some(OPEN_TIMEOUT),
    )?;
    Ok(stream)
}

/// How long ago the buffer's first sample was captured: the backend's figure when it gives
/// one, else the buffer's length (its last sample is just in).
fn first_sample_age(info: &InputCallbackInfo, samples: usize, rate: u32) -> Duration {
    let t = info.timestamp();
    let reported = t.callback.saturating_duration_since(t.capture);
    if reported.is_zero() {
        Duration::from_micros(samples as u64 * 1_000_000 / u64::from(rate))
    } else {
        reported
    }
}

fn error_counter(counts: &Arc<StreamCounts>) -> impl FnMut(cpal::Error) + Send + 'static {
    let counts = counts.clone();
    move |_| {
        counts.errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// Opens the default output device and starts it reading a fresh ring.
pub(super) fn open_output() -> Result<OpenedOutput<Stream>> {
    let alsa = AlsaMessages::catch();
    alsa.explain(start_output())
}

/// The default output device and the configuration it would be opened with, or why not.
pub(super) fn probe_output() -> Result<String> {
    let alsa = AlsaMessages::catch();
    alsa.explain(output_config().map(|(device, config, _)| describe(&device, &config)))
}

fn output_config() -> Result<(Device, SupportedStreamConfig, String)> {
    let host = host()?;
    let name = format!("{:?}", host.id());
    let device = host
        .default_output_device()
        .ok_or_else(|| anyhow!("--play: no default output device (speakers) in {name}"))?;
    let config = choose(
        device
            .supported_output_configs()
            .map(Iterator::collect)
            .map_err(Into::into),
        || Ok(device.default_output_config()?),
    )
    .with_context(|| {
        format!("--play: no usable speakers: the default output device '{device}' ({name})")
    })?;
    Ok((device, config, name))
}

fn start_output() -> Result<OpenedOutput<Stream>> {
    let (device, config, name) = output_config()?;
    let description = describe(&device, &config);
    let format = config.sample_format();
    let config: StreamConfig = config.config();
    let (ring, reader) = playout_ring(RingConfig::for_rate(config.sample_rate));
    let counts = Arc::<StreamCounts>::default();
    let stream = match format {
        SampleFormat::I16 => build_output::<i16>(&device, &config, reader, &counts),
        SampleFormat::F32 => build_output::<f32>(&device, &config, reader, &counts),
        SampleFormat::I32 => build_output::<i32>(&device, &config, reader, &counts),
        SampleFormat::F64 => build_output::<f64>(&device, &config, reader, &counts),
        SampleFormat::U16 => build_output::<u16>(&device, &config, reader, &counts),
        SampleFormat::I8 => build_output::<i8>(&device, &config, reader, &counts),
        SampleFormat::U8 => build_output::<u8>(&device, &config, reader, &counts),
        other => bail!("--play: the output device {description} takes only {other:?} samples"),
    }
    .with_context(|| format!("--play: cannot open the output device {description} ({name})"))?;
    stream
        .play()
        .with_context(|| format!("--play: cannot start the output device {description}"))?;
    Ok(OpenedOutput {
        stream: Stream {
            stream,
            counts,
            what: "speakers",
        },
        ring,
        rate: config.sample_rate,
        description,
    })
}

fn build_output<T>(
    device: &Device,
    config: &StreamConfig,
    mut reader: RingReader,
    counts: &Arc<StreamCounts>,
) -> Result<cpal::Stream>
where
    T: SizedSample + FromSample<i16>,
{
    let channels = usize::from(config.channels.max(1));
    let mut mono: Vec<i16> = Vec::new();
    let on_error = error_counter(counts);
    let counts = counts.clone();
    let mut last = None;
    let stream = device.build_output_stream::<T, _, _>(
        *config,
        move |data: &mut [T], _| {
            counts.on_callback(clock::now(), &mut last);
            mono.resize(data.len() / channels, 0);
            reader.fill(&mut mono);
            for (frame, &v) in data.chunks_mut(channels).zip(&mono) {
                frame.fill(T::from_sample(v));
            }
        },
        on_error,
        Some(OPEN_TIMEOUT),
    )?;
    Ok(stream)
}
