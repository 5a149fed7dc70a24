//! Throughput logs as links: the common "time rate" per interval format most public link
//! data comes in (cellular and Wi-Fi measurement sets), turned into Mahimahi delivery
//! opportunities so the emulator replays it like any [`Trace`].
//!
//! A log has one line per interval: the time the interval ends and the rate delivered over
//! it, separated by spaces, tabs or a comma (`300.2 24.7192`, `0.4,27.98`). Lines starting
//! with `#` and blank lines are skipped; the first other line may be a header naming the
//! columns (`time_s Mbps`, `timestamp(ms),throughput_kbps`), which states the units. Units
//! are, in order of precedence, the ones a [`RateLogFormat`] states (a spec's options), the
//! header's, or the defaults: seconds and Mb/s. The interval is stated the same way, or
//! inferred: the median gap between consecutive lines.
//!
//! How the intervals become a link:
//! - **Rebased.** The first line's interval starts at zero, wherever the log's times start
//!   (a slice of a longer recording starts at, say, 300.2 s).
//! - **Outages.** A gap of about k intervals between two lines (k = the gap over the
//!   interval, rounded) is k - 1 missing intervals: the later line's rate covers the last
//!   k-th of the gap and nothing is delivered before it. A gap of about one interval (0.5 to
//!   1.5 of it) is just the recorder's jitter and the whole gap carries the line's rate.
//! - **Deliveries.** The log is a fluid: bits arrive at each interval's rate, and the n-th
//!   1500-byte opportunity comes at the first whole millisecond by which n x 12,000 bits have
//!   arrived. So each interval carries its rate exactly, up to one packet carried over to the
//!   next.
//! - **Period.** Like every trace, the link repeats; its period is the log's length (rounded
//!   to the millisecond). Mahimahi's period is a trace's last opportunity, so where the last
//!   opportunity falls before the log's end one more is put at the end: one extra packet per
//!   period.
//!
//! Bad input never panics: a line that is not two numbers, a time not after the one before,
//! a negative or non-finite rate, or an unknown unit is an error naming the line.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use salsify_time::Duration;

use crate::trace::{Trace, MAX_LINE_BYTES, MAX_OPPORTUNITIES, TRACE_PACKET_BYTES};

/// What a `trace` setting starts with to name a rate log instead of a Mahimahi trace.
pub const SPEC_PREFIX: &str = "rate:";

/// Highest rate accepted on a line: 100 Gb/s, beyond any recorded access link.
pub const MAX_RATE_BPS: f64 = 100e9;

/// Most lines read (4 million: over nine days of 200 ms intervals).
pub const MAX_LINES: usize = 1 << 22;

/// Longest log accepted, rebased: ten days, so times in microseconds never overflow and the
/// trace's timestamps stay far below its ceiling.
pub const MAX_LOG_SECONDS: f64 = 864_000.0;

/// A gap up to this many intervals is one interval (the recorder's jitter); a longer one
/// holds missing intervals (an outage).
const JITTER_INTERVALS: f64 = 1.5;

/// Longest excerpt of a bad line kept in an error.
const MAX_EXCERPT_CHARS: usize = 32;

/// Bits one delivery opportunity carries.
const OPPORTUNITY_BITS: f64 = TRACE_PACKET_BYTES as f64 * 8.0;

/// The unit of the time column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds (the default).
    Seconds,
    /// Milliseconds.
    Millis,
}

impl TimeUnit {
    fn micros(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1e6,
            TimeUnit::Millis => 1e3,
        }
    }
}

/// The unit of the rate column: bits per second times a power of 1000.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnit {
    /// Bits per second.
    Bps,
    /// Kilobits per second (1000 b/s).
    Kbps,
    /// Megabits per second (the default).
    Mbps,
    /// Gigabits per second.
    Gbps,
}

impl RateUnit {
    fn bps(self) -> f64 {
        match self {
            RateUnit::Bps => 1.0,
            RateUnit::Kbps => 1e3,
            RateUnit::Mbps => 1e6,
            RateUnit::Gbps => 1e9,
        }
    }

    /// The unit a word names (`Mbps`, `kbit/s`, `throughput_kbps`), if any; a unit of bytes
    /// (`MBps`, `bytes/s`) is refused rather than read as bits.
    fn named_in(word: &str) -> Result<Option<RateUnit>, String> {
        if word.contains("Bps") || word.to_ascii_lowercase().contains("byte") {
            return Err(format!(
                "'{word}': a rate in bytes; give bits per second (unit=bps, kbps, mbps, gbps)"
            ));
        }
        let lower = word.to_ascii_lowercase();
        let unit = [
            ("gbps", RateUnit::Gbps),
            ("gbit", RateUnit::Gbps),
            ("mbps", RateUnit::Mbps),
            ("mbit", RateUnit::Mbps),
            ("kbps", RateUnit::Kbps),
            ("kbit", RateUnit::Kbps),
            ("bps", RateUnit::Bps),
            ("bit", RateUnit::Bps),
        ]
        .into_iter()
        .find(|(name, _)| lower.contains(name))
        .map(|(_, unit)| unit);
        Ok(unit)
    }
}

/// How to read a log: each unit stated or left to the header and defaults, the interval
/// stated or inferred. `Default` states nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateLogFormat {
    /// The time column's unit; `None`: the header's, else seconds.
    pub time: Option<TimeUnit>,
    /// The rate column's unit; `None`: the header's, else Mb/s.
    pub rate: Option<RateUnit>,
    /// The interval each line covers; `None`: the median gap between lines.
    pub interval: Option<Duration>,
}

/// A rate log named by a link setting: `rate:FILE`, optionally with options after a `?`,
/// `&`-separated: `time=s|ms`, `unit=bps|kbps|mbps|gbps`, `interval=200ms|0.2s`
/// (`rate:wifi.csv?unit=kbps&interval=1s`).
#[derive(Clone, Debug, PartialEq)]
pub struct RateLogSpec {
    /// The log file.
    pub path: PathBuf,
    /// What the options state.
    pub format: RateLogFormat,
}

impl RateLogSpec {
    /// The spec a `trace` setting holds: `None` if it does not start with [`SPEC_PREFIX`]
    /// (a Mahimahi trace), else the spec or why its options are wrong.
    pub fn from_setting(setting: &str) -> Option<Result<RateLogSpec, String>> {
        let rest = setting.strip_prefix(SPEC_PREFIX)?;
        Some(parse_spec(rest))
    }

    /// Reads the log and turns it into a trace.
    pub fn load(&self) -> Result<Trace, RateLogError> {
        RateLog::from_path(&self.path, self.format)?.to_trace()
    }
}

fn parse_spec(rest: &str) -> Result<RateLogSpec, String> {
    let (path, options) = match rest.split_once('?') {
        Some((path, options)) => (path, Some(options)),
        None => (rest, None),
    };
    if path.is_empty() {
        return Err("rate: needs a file (rate:FILE)".into());
    }
    let mut format = RateLogFormat::default();
    for option in options.into_iter().flat_map(|o| o.split('&')) {
        let (key, value) = option
            .split_once('=')
            .ok_or_else(|| format!("option '{option}' is not KEY=VALUE"))?;
        match key {
            "time" => {
                format.time = Some(match value {
                    "s" => TimeUnit::Seconds,
                    "ms" => TimeUnit::Millis,
                    _ => return Err(format!("time={value}: s or ms")),
                })
            }
            "unit" => {
                format.rate = Some(match RateUnit::named_in(value)? {
                    Some(unit) if value.len() <= 4 => unit,
                    _ => return Err(format!("unit={value}: bps, kbps, mbps or gbps")),
                })
            }
            "interval" => format.interval = Some(parse_interval(value)?),
            _ => return Err(format!("unknown option '{key}': time, unit or interval")),
        }
    }
    Ok(RateLogSpec {
        path: PathBuf::from(path),
        format,
    })
}

/// `200ms`, `0.2s`: a positive interval of at most an hour.
fn parse_interval(value: &str) -> Result<Duration, String> {
    let bad = || format!("interval={value}: a length such as 200ms or 0.2s (up to 3600s)");
    let (number, scale) = if let Some(n) = value.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(bad());
    };
    let seconds = number.parse::<f64>().map_err(|_| bad())? * scale;
    if !(seconds.is_finite() && (1e-3..=3600.0).contains(&seconds)) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Why a rate log was rejected. Line numbers start at 1 and count every line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RateLogError {
    /// The log could not be read.
    #[error("reading rate log: {0}")]
    Io(io::Error),
    /// A line is longer than [`MAX_LINE_BYTES`].
    #[error("line {line}: longer than {MAX_LINE_BYTES} bytes: not a rate log")]
    LineTooLong {
        /// The offending line.
        line: usize,
    },
    /// A line is not `TIME RATE`.
    #[error("line {line}: {why}: {excerpt:?}")]
    BadLine {
        /// The offending line.
        line: usize,
        /// What is wrong with it.
        why: String,
        /// The start of the line's text (lossy UTF-8, shortened).
        excerpt: String,
    },
    /// A time is not after the one before it.
    #[error("line {line}: time {value} is not after the previous one ({previous})")]
    NotIncreasing {
        /// The offending line.
        line: usize,
        /// The time on the line before.
        previous: f64,
        /// The time on this line.
        value: f64,
    },
    /// More than [`MAX_LINES`] lines.
    #[error("more than {MAX_LINES} lines: too large for a rate log")]
    TooManyLines,
    /// No line holds a sample.
    #[error("rate log has no samples")]
    NoSamples,
    /// One sample, so no interval to infer.
    #[error("rate log has one sample: state its interval (rate:FILE?interval=200ms)")]
    NoInterval,
    /// Longer than [`MAX_LOG_SECONDS`] once rebased.
    #[error("line {line}: the log would last more than {MAX_LOG_SECONDS} s")]
    TooLong {
        /// The line that passes the limit.
        line: usize,
    },
    /// More delivery opportunities than a trace holds.
    #[error("rate log delivers more than {MAX_OPPORTUNITIES} packets per period")]
    TooManyOpportunities,
    /// Every rate is zero.
    #[error("rate log delivers nothing (every rate is 0)")]
    DeliversNothing,
    /// Shorter than a millisecond.
    #[error("rate log lasts less than a millisecond")]
    TooShort,
}

impl From<io::Error> for RateLogError {
    fn from(e: io::Error) -> Self {
        RateLogError::Io(e)
    }
}

/// One interval of a log, rebased: `[start, end)` in microseconds at `bps`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateInterval {
    /// When the interval starts, from the log's start (µs).
    pub start_us: f64,
    /// When it ends (µs).
    pub end_us: f64,
    /// Its rate in bits per second.
    pub bps: f64,
}

/// A parsed, rebased throughput log: intervals in time order, gaps between them outages.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLog {
    intervals: Vec<RateInterval>,
    interval: Duration,
}

/// One sample as read: its line, time in µs (not rebased) and rate in b/s.
struct Sample {
    line: usize,
    time_us: f64,
    bps: f64,
}

impl RateLog {
    /// Parses a log's text.
    pub fn parse(text: &str, format: RateLogFormat) -> Result<RateLog, RateLogError> {
        RateLog::from_reader(text.as_bytes(), format)
    }

    /// Reads and parses a log file.
    pub fn from_path(
        path: impl AsRef<Path>,
        format: RateLogFormat,
    ) -> Result<RateLog, RateLogError> {
        let file = std::fs::File::open(path)?;
        RateLog::from_reader(io::BufReader::new(file), format)
    }

    /// Parses a log from a reader, line by line.
    pub fn from_reader<R: BufRead>(
        reader: R,
        format: RateLogFormat,
    ) -> Result<RateLog, RateLogError> {
        let samples = read_samples(reader, format)?;
        let interval_us = match format.interval {
            Some(d) => salsify_time::duration_micros(d) as f64,
            None => median_gap(&samples).ok_or(RateLogError::NoInterval)?,
        };
        let intervals = rebase(&samples, interval_us)?;
        Ok(RateLog {
            intervals,
            interval: Duration::from_micros(interval_us.round() as u64),
        })
    }

    /// The intervals, rebased, in time order.
    pub fn intervals(&self) -> &[RateInterval] {
        &self.intervals
    }

    /// The interval each line covers (stated or inferred), to the microsecond.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The log's length, rebased: the end of its last interval.
    pub fn duration(&self) -> Duration {
        let end = self.intervals.last().map_or(0.0, |i| i.end_us);
        Duration::from_micros(end.round() as u64)
    }

    /// Time no line covers (missing intervals, the outages).
    pub fn outage_time(&self) -> Duration {
        let covered: f64 = self.intervals.iter().map(|i| i.end_us - i.start_us).sum();
        let end = self.intervals.last().map_or(0.0, |i| i.end_us);
        Duration::from_micros((end - covered).max(0.0).round() as u64)
    }

    /// Mean rate over the whole log, outages included, in bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        let bits: f64 = self.intervals.iter().map(bits_of).sum();
        let end = self.intervals.last().map_or(0.0, |i| i.end_us);
        if end > 0.0 {
            bits / (end / 1e6)
        } else {
            0.0
        }
    }

    /// The delivery opportunities of the log (see the module's "Deliveries" and "Period").
    pub fn to_trace(&self) -> Result<Trace, RateLogError> {
        let total_bits: f64 = self.intervals.iter().map(bits_of).sum();
        let packets = (total_bits / OPPORTUNITY_BITS).floor();
        if packets >= MAX_OPPORTUNITIES as f64 {
            return Err(RateLogError::TooManyOpportunities);
        }
        if packets < 1.0 {
            return Err(RateLogError::DeliversNothing);
        }
        let period_ms = (self.duration().as_micros() as f64 / 1000.0).round() as u64;
        if period_ms == 0 {
            return Err(RateLogError::TooShort);
        }
        let mut millis = Vec::with_capacity(packets as usize + 1);
        let mut delivered = 0.0; // bits that arrived before the current interval
        let mut next = 1.0; // the opportunity to place, counted from 1
        for i in &self.intervals {
            let bits = bits_of(i);
            while next * OPPORTUNITY_BITS <= delivered + bits && bits > 0.0 {
                let at_us = i.start_us + (next * OPPORTUNITY_BITS - delivered) / i.bps * 1e6;
                // A hair of rounding must not push an opportunity a millisecond late.
                let ms = ((at_us / 1000.0) - 1e-6).ceil().max(0.0) as u64;
                millis.push(ms.min(period_ms));
                next += 1.0;
            }
            delivered += bits;
        }
        if millis.last().is_some_and(|&last| last < period_ms) {
            millis.push(period_ms);
        }
        Trace::from_millis(millis).map_err(|_| RateLogError::DeliversNothing)
    }
}

fn bits_of(i: &RateInterval) -> f64 {
    i.bps * (i.end_us - i.start_us) / 1e6
}

/// Every sample of the log, units applied, times strictly increasing.
fn read_samples<R: BufRead>(
    mut reader: R,
    format: RateLogFormat,
) -> Result<Vec<Sample>, RateLogError> {
    let mut samples: Vec<Sample> = Vec::new();
    let (mut time, mut rate) = (format.time, format.rate);
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        let got = io::Read::take(&mut reader, MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
        if got == 0 {
            break;
        }
        line += 1;
        if got == MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
            return Err(RateLogError::LineTooLong { line });
        }
        if line > MAX_LINES {
            return Err(RateLogError::TooManyLines);
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let bad = |why: &str| RateLogError::BadLine {
            line,
            why: why.to_string(),
            excerpt: text.chars().take(MAX_EXCERPT_CHARS).collect(),
        };
        let fields: Vec<&str> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        if fields.len() != 2 {
            return Err(bad("not TIME RATE (two numbers)"));
        }
        if samples.is_empty() && is_header(&fields) {
            read_header(&fields, &mut time, &mut rate, format).map_err(|why| bad(&why))?;
            continue;
        }
        let t: f64 = fields[0]
            .parse()
            .map_err(|_| bad("the time is not a number"))?;
        let r: f64 = fields[1]
            .parse()
            .map_err(|_| bad("the rate is not a number"))?;
        if !t.is_finite() || t < 0.0 {
            return Err(bad("the time is not a finite number of at least 0"));
        }
        let bps = r * rate.unwrap_or(RateUnit::Mbps).bps();
        if !(r.is_finite() && r >= 0.0 && bps <= MAX_RATE_BPS) {
            return Err(bad(&format!(
                "the rate is not a number from 0 to {} Gb/s",
                MAX_RATE_BPS / 1e9
            )));
        }
        let time_us = t * time.unwrap_or(TimeUnit::Seconds).micros();
        if let Some(previous) = samples.last() {
            if time_us <= previous.time_us {
                return Err(RateLogError::NotIncreasing {
                    line,
                    previous: previous.time_us / time.unwrap_or(TimeUnit::Seconds).micros(),
                    value: t,
                });
            }
        }
        samples.push(Sample { line, time_us, bps });
    }
    if samples.is_empty() {
        return Err(RateLogError::NoSamples);
    }
    Ok(samples)
}

/// A header (looked for before the first sample only) is two words, neither a number: a
/// line with one number in it is a bad sample, not a header.
fn is_header(fields: &[&str]) -> bool {
    fields.iter().all(|f| {
        f.parse::<f64>().is_err() && f.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
    })
}

/// The units a header line names, where the format does not state them.
fn read_header(
    fields: &[&str],
    time: &mut Option<TimeUnit>,
    rate: &mut Option<RateUnit>,
    format: RateLogFormat,
) -> Result<(), String> {
    if format.time.is_none() {
        let lower = fields[0].to_ascii_lowercase();
        let millis = lower.ends_with("ms") || lower.contains("(ms)") || lower.contains("_ms");
        *time = Some(if millis {
            TimeUnit::Millis
        } else {
            TimeUnit::Seconds
        });
    }
    let named = RateUnit::named_in(fields[1])?;
    if format.rate.is_none() {
        *rate = named;
    }
    Ok(())
}

/// The median gap between consecutive samples, in µs; `None` with one sample.
fn median_gap(samples: &[Sample]) -> Option<f64> {
    let mut gaps: Vec<f64> = samples
        .windows(2)
        .map(|w| w[1].time_us - w[0].time_us)
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    // The lower median: outages make long gaps, never short ones.
    Some(gaps[(gaps.len() - 1) / 2])
}

/// The samples as intervals from zero (see the module's "Rebased" and "Outages").
fn rebase(samples: &[Sample], interval_us: f64) -> Result<Vec<RateInterval>, RateLogError> {
    let origin = samples[0].time_us - interval_us;
    let mut out = Vec::with_capacity(samples.len());
    let mut previous_end = 0.0;
    for s in samples {
        let end = s.time_us - origin;
        if end > MAX_LOG_SECONDS * 1e6 {
            return Err(RateLogError::TooLong { line: s.line });
        }
        let gap = end - previous_end;
        let whole = (gap / interval_us).round().max(1.0);
        let covered = if gap <= JITTER_INTERVALS * interval_us {
            gap
        } else {
            gap / whole
        };
        out.push(RateInterval {
            start_us: end - covered,
            end_us: end,
            bps: s.bps,
        });
        previous_end = end;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "rate_log_tests.rs"]
mod tests;
