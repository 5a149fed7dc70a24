//! Mahimahi packet-delivery traces: parsing, validation and writing.
//!
//! A trace file has one decimal millisecond timestamp per line. Each line is one delivery
//! opportunity: the bottleneck may send up to one MTU-sized packet (1500 bytes) at that time.
//! A timestamp repeated N times is N opportunities in that millisecond. The trace repeats
//! forever with a period equal to its last timestamp, so the last line both is an opportunity
//! and marks the end of the period (Mahimahi `LinkQueue`: `base_timestamp_ += schedule_.back()`
//! when the schedule wraps).
//!
//! Parsing follows the rules Mahimahi's `LinkQueue` constructor enforces (empty lines,
//! decreasing timestamps, no timestamps, last timestamp 0 are errors) and adds a few of its own
//! so a bad file fails here with a line number rather than misbehaving later: only decimal
//! digits (no sign; Mahimahi's `strtol` would accept `-5` and wrap it), and a ceiling of
//! [`MAX_TIMESTAMP_MS`] so microsecond arithmetic cannot overflow. Spaces, tabs and a trailing
//! `\r` (CRLF files) around a number are tolerated.

use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use salsify_time::Duration;

/// Bytes one delivery opportunity of a Mahimahi trace carries (one Ethernet MTU).
pub const TRACE_PACKET_BYTES: u32 = 1500;

/// Largest timestamp accepted in a trace: 10^12 ms (about 31 years), far beyond any recording,
/// low enough that times in microseconds never overflow a `u64`.
pub const MAX_TIMESTAMP_MS: u64 = 1_000_000_000_000;

/// Longest line read, newline included: a timestamp takes 13 digits, so anything longer is
/// not a trace (a binary file, `/dev/zero`), and is refused without reading it whole.
pub const MAX_LINE_BYTES: usize = 256;

/// Most timestamps accepted (16.7 million: 130 MB; real traces hold 10^5 to 10^6), so a huge
/// file is refused rather than filling memory.
pub const MAX_OPPORTUNITIES: usize = 1 << 24;

/// Longest excerpt of a bad line kept in an error, so a binary file does not make a huge error.
const MAX_EXCERPT_CHARS: usize = 32;

/// Why a trace was rejected. Line numbers start at 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace could not be read.
    #[error("reading trace: {0}")]
    Io(io::Error),
    /// A line holds nothing (Mahimahi rejects these too).
    #[error("line {line}: empty line")]
    EmptyLine {
        /// The offending line.
        line: usize,
    },
    /// A line is not a non-negative decimal integer.
    #[error("line {line}: not a millisecond timestamp: {excerpt:?}")]
    NotANumber {
        /// The offending line.
        line: usize,
        /// The start of the line's text (lossy UTF-8, shortened).
        excerpt: String,
    },
    /// A timestamp exceeds [`MAX_TIMESTAMP_MS`].
    #[error("line {line}: timestamp above the maximum of {MAX_TIMESTAMP_MS} ms")]
    TooLarge {
        /// The offending line.
        line: usize,
    },
    /// A timestamp is smaller than the one before it.
    #[error("line {line}: timestamp {value} ms is before the previous one ({previous} ms)")]
    Decreasing {
        /// The offending line.
        line: usize,
        /// The timestamp on the line before.
        previous: u64,
        /// The timestamp on this line.
        value: u64,
    },
    /// A line is longer than [`MAX_LINE_BYTES`].
    #[error("line {line}: longer than {MAX_LINE_BYTES} bytes: not a trace file")]
    LineTooLong {
        /// The offending line.
        line: usize,
    },
    /// More timestamps than [`MAX_OPPORTUNITIES`].
    #[error("more than {MAX_OPPORTUNITIES} timestamps: too large for a trace")]
    TooManyOpportunities,
    /// The trace has no timestamps at all.
    #[error("trace has no timestamps")]
    NoTimestamps,
    /// The last timestamp is 0, so the trace would repeat with period zero.
    #[error("trace must last a nonzero time (its last timestamp, on line {line}, is 0)")]
    ZeroPeriod {
        /// The last line.
        line: usize,
    },
}

// By hand rather than `#[from]`, which would also make it the error's source: the message
// already says it, and an error chain would print it twice.
impl From<io::Error> for TraceError {
    fn from(e: io::Error) -> Self {
        TraceError::Io(e)
    }
}

/// A validated delivery schedule: nondecreasing millisecond timestamps, at least one, the last
/// nonzero. Cheap to clone (shared storage), so configs and links can each hold one.
#[derive(Clone, PartialEq, Eq)]
pub struct Trace {
    millis: Arc<[u64]>,
}

impl Trace {
    /// Builds a trace from timestamps in milliseconds, checking the same rules as the parser
    /// (the "line" in an error is the 1-based index).
    pub fn from_millis(millis: Vec<u64>) -> Result<Trace, TraceError> {
        let mut checker = Checker::default();
        for (i, &ms) in millis.iter().enumerate() {
            checker.accept(i + 1, ms)?;
        }
        checker.finish()?;
        Ok(Trace {
            millis: millis.into(),
        })
    }

    /// Parses the text of a Mahimahi trace file.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        Trace::from_reader(text.as_bytes())
    }

    /// Parses a Mahimahi trace from a reader, line by line.
    pub fn from_reader<R: BufRead>(mut reader: R) -> Result<Trace, TraceError> {
        let mut millis = Vec::new();
        let mut checker = Checker::default();
        let mut buf = Vec::new();
        let mut line = 0;
        loop {
            buf.clear();
            let got =
                io::Read::take(&mut reader, MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
            if got == 0 {
                break;
            }
            line += 1;
            if got == MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
                return Err(TraceError::LineTooLong { line });
            }
            if millis.len() == MAX_OPPORTUNITIES {
                return Err(TraceError::TooManyOpportunities);
            }
            let ms = parse_line(line, &buf)?;
            checker.accept(line, ms)?;
            millis.push(ms);
        }
        checker.finish()?;
        Ok(Trace {
            millis: millis.into(),
        })
    }

    /// Reads and parses a Mahimahi trace file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let file = std::fs::File::open(path)?;
        Trace::from_reader(io::BufReader::new(file))
    }

    /// The opportunity timestamps of one period, in milliseconds from the period's start.
    pub fn millis(&self) -> &[u64] {
        &self.millis
    }

    /// Number of delivery opportunities in one period (never zero).
    pub fn opportunities_per_period(&self) -> usize {
        self.millis.len()
    }

    /// The period after which the trace repeats (its last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms())
    }

    pub(crate) fn period_ms(&self) -> u64 {
        // Invariant of the type: non-empty.
        self.millis[self.millis.len() - 1]
    }

    /// Mean capacity in bits per second if every opportunity carries `opportunity_bytes`.
    pub fn mean_rate_bps(&self, opportunity_bytes: u32) -> f64 {
        let bits = self.millis.len() as f64 * f64::from(opportunity_bytes) * 8.0;
        bits / self.period().as_secs_f64()
    }

    /// Number of opportunities at times `<= t` after the trace starts, counting repetitions.
    /// Lets a caller report the link's capacity over any window without running the link.
    pub fn opportunities_until(&self, t: Duration) -> u64 {
        let rel_us = salsify_time::duration_micros(t);
        let period_us = self.period_ms() * 1000;
        let cycles = rel_us / period_us;
        let within_ms = (rel_us % period_us) / 1000;
        let partial = self.millis.partition_point(|&ms| ms <= within_ms) as u64;
        cycles
            .saturating_mul(self.millis.len() as u64)
            .saturating_add(partial)
    }

    /// When opportunity `n` (counted from 0, repetitions included) comes after the trace
    /// starts: the inverse of [`Self::opportunities_until`], for schemes that read the link's
    /// future (the oracle).
    pub fn opportunity_time(&self, n: u64) -> Duration {
        let len = self.millis.len() as u64;
        let period_us = self.period_ms() * 1000;
        let within_us = self.millis[(n % len) as usize] * 1000;
        Duration::from_micros(
            (n / len)
                .saturating_mul(period_us)
                .saturating_add(within_us),
        )
    }

    /// Writes the trace in Mahimahi's file format (one timestamp per line).
    pub fn write_mahimahi<W: Write>(&self, mut out: W) -> io::Result<()> {
        for ms in self.millis.iter() {
            writeln!(out, "{ms}")?;
        }
        out.flush()
    }

    /// The trace in Mahimahi's file format.
    pub fn to_mahimahi_string(&self) -> String {
        let mut s = String::with_capacity(self.millis.len() * 7);
        for ms in self.millis.iter() {
            s.push_str(&ms.to_string());
            s.push('\n');
        }
        s
    }
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A trace can hold 10^5 entries; show its shape, not its contents.
        f.debug_struct("Trace")
            .field("opportunities_per_period", &self.millis.len())
            .field("period", &self.period())
            .field("mean_mbps", &(self.mean_rate_bps(TRACE_PACKET_BYTES) / 1e6))
            .finish()
    }
}

/// The running checks shared by the parser and [`Trace::from_millis`].
#[derive(Default)]
struct Checker {
    last: Option<(usize, u64)>,
}

impl Checker {
    fn accept(&mut self, line: usize, ms: u64) -> Result<(), TraceError> {
        if ms > MAX_TIMESTAMP_MS {
            return Err(TraceError::TooLarge { line });
        }
        if let Some((_, previous)) = self.last {
            if ms < previous {
                return Err(TraceError::Decreasing {
                    line,
                    previous,
                    value: ms,
                });
            }
        }
        self.last = Some((line, ms));
        Ok(())
    }

    fn finish(self) -> Result<(), TraceError> {
        match self.last {
            None => Err(TraceError::NoTimestamps),
            Some((line, 0)) => Err(TraceError::ZeroPeriod { line }),
            Some(_) => Ok(()),
        }
    }
}

/// Parses one raw line (possibly ending in `\n`) as a millisecond timestamp.
fn parse_line(line: usize, raw: &[u8]) -> Result<u64, TraceError> {
    let text = raw.strip_suffix(b"\n").unwrap_or(raw);
    let digits = text.trim_ascii();
    if digits.is_empty() {
        return Err(TraceError::EmptyLine { line });
    }
    let not_a_number = || TraceError::NotANumber {
        line,
        excerpt: String::from_utf8_lossy(text)
            .chars()
            .take(MAX_EXCERPT_CHARS)
            .collect(),
    };
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err(not_a_number());
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(TraceError::TooLarge { line })?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file with no line breaks (`/dev/zero`, a binary file) is refused after one short
    /// read, not read into memory whole.
    #[test]
    fn an_endless_line_is_refused_without_reading_it() {
        let endless = std::io::BufReader::new(std::io::repeat(b'7'));
        assert!(matches!(
            Trace::from_reader(endless),
            Err(TraceError::LineTooLong { line: 1 })
        ));
        let ok = format!("{}12\n", " ".repeat(MAX_LINE_BYTES - 4));
        assert!(Trace::from_reader(ok.as_bytes()).is_ok());
    }

    #[test]
    fn parses_a_small_trace_with_repeats_and_crlf() {
        let t = Trace::parse("0\r\n0\n 5\n12\t\n").unwrap();
        assert_eq!(t.millis(), &[0, 0, 5, 12]);
        assert_eq!(t.period(), Duration::from_millis(12));
        assert_eq!(t.opportunities_per_period(), 4);
        // Without a final newline too.
        assert_eq!(Trace::parse("3\n7").unwrap().millis(), &[3, 7]);
    }

    /// Opportunity `n` happens at the time after which `n + 1` opportunities have come, across
    /// repetitions of the trace.
    #[test]
    fn opportunity_time_inverts_opportunities_until() {
        let t = Trace::parse("0\n0\n5\n12\n").unwrap();
        let times: Vec<u64> = (0..9)
            .map(|n| t.opportunity_time(n).as_millis() as u64)
            .collect();
        assert_eq!(times, [0, 0, 5, 12, 12, 12, 17, 24, 24]);
        for n in 0..40 {
            let at = t.opportunity_time(n);
            assert!(t.opportunities_until(at) > n, "n {n} at {at:?}");
        }
    }

    #[test]
    fn rejects_bad_files_with_the_line_number() {
        let cases: &[(&str, &str)] = &[
            ("1\n2\nx\n", "line 3: not a millisecond timestamp"),
            ("1\n\n2\n", "line 2: empty line"),
            ("1\n   \n", "line 2: empty line"),
            (
                "5\n4\n",
                "line 2: timestamp 4 ms is before the previous one (5 ms)",
            ),
            ("1\n-5\n", "line 2: not a millisecond"),
            ("1\n+5\n", "line 2: not a millisecond"),
            ("1\n2.5\n", "line 2: not a millisecond"),
            ("1\n99999999999999999999999\n", "line 2: timestamp above"),
            ("1\n1000000000001\n", "line 2: timestamp above"),
            ("", "trace has no timestamps"),
            ("0\n0\n0\n", "its last timestamp, on line 3, is 0"),
            ("\n", "line 1: empty line"),
        ];
        for (text, want) in cases {
            let err = Trace::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn rejects_invalid_utf8_without_panicking() {
        let err = Trace::from_reader(&b"1\n\xff\xfe\n"[..]).unwrap_err();
        assert!(
            matches!(err, TraceError::NotANumber { line: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn from_millis_checks_like_the_parser() {
        assert!(matches!(
            Trace::from_millis(vec![3, 2]),
            Err(TraceError::Decreasing { line: 2, .. })
        ));
        assert!(matches!(
            Trace::from_millis(vec![]),
            Err(TraceError::NoTimestamps)
        ));
        assert!(matches!(
            Trace::from_millis(vec![0]),
            Err(TraceError::ZeroPeriod { line: 1 })
        ));
    }

    #[test]
    fn writes_what_it_parses() {
        let t = Trace::from_millis(vec![0, 1, 1, 9]).unwrap();
        assert_eq!(t.to_mahimahi_string(), "0\n1\n1\n9\n");
        let mut buf = Vec::new();
        t.write_mahimahi(&mut buf).unwrap();
        assert_eq!(Trace::from_reader(&buf[..]).unwrap(), t);
    }

    #[test]
    fn counts_opportunities_across_repetitions() {
        // Period 10 ms: opportunities at 0, 4, 4, 10 | 10, 14, 14, 20 | ...
        let t = Trace::from_millis(vec![0, 4, 4, 10]).unwrap();
        let at = |ms| t.opportunities_until(Duration::from_millis(ms));
        assert_eq!(at(0), 1);
        assert_eq!(at(3), 1);
        assert_eq!(at(4), 3);
        assert_eq!(at(9), 3);
        // At 10 ms both the last entry of period 1 and the first of period 2 have happened.
        assert_eq!(at(10), 5);
        assert_eq!(at(14), 7);
        assert_eq!(at(20), 9);
        assert_eq!(at(100), 41);
        assert_eq!(t.mean_rate_bps(TRACE_PACKET_BYTES), 4.0 * 12_000.0 / 0.010);
    }
}
