//! The data channel live ([`salsify_call::data`]): lines read from a file or standard input
//! become messages (one a line), messages from the peer are written one a line, and their
//! delay (sent to delivered) is measured.
//!
//! Lines are read on their own thread into a bounded queue, so a large file waits for the
//! peer instead of filling memory; the reader wakes the loop for each line so a *latest*
//! message goes out at once. Nothing is handed to the channel before the peer can be sent to
//! (a *latest* message would be lost; an *ordered* one would only be retransmitted).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use salsify_call::data::{
    DataChannel, DataConfig, DataOutput, DataSendError, DataStats, Delivery, MAX_MESSAGE,
};
use salsify_time::Instant;

/// Lines waiting between the reader thread and the loop.
const LINE_QUEUE: usize = 256;

/// Where a side's data messages come from and go.
#[derive(Debug, Clone, Default)]
pub struct DataIoConfig {
    /// Read messages from this file, one a line (`-`: standard input).
    pub input: Option<PathBuf>,
    /// How the lines read are sent (one stream).
    pub delivery: Option<Delivery>,
    /// Write messages received here, one a line (`-`: standard output).
    pub output: Option<PathBuf>,
    /// The channel's timing and bounds.
    pub channel: DataConfig,
}

/// What one side's data channel did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DataTotals {
    /// The channel's counters.
    pub stats: DataStats,
    /// Lines read from the input (all of them sent, or the run ended first).
    pub lines_read: u64,
    /// Lines read but not yet taken by the peer's side when the run ended (ordered
    /// messages unacknowledged or waiting to be sent).
    pub undelivered: u64,
    /// Delay of the messages received, sent to delivered, in ms: mean and 95th percentile.
    pub delay_mean_ms: Option<f64>,
    /// See `delay_mean_ms`.
    pub delay_p95_ms: Option<f64>,
}

/// What the reader thread hands over.
pub(crate) enum Line {
    /// A line's bytes (without its end).
    Text(Vec<u8>),
    /// The input ended.
    End,
    /// The input failed or had a line too long: why.
    Failed(String),
}

/// Delays of delivered messages, kept as a histogram of 0.1 ms bins up to 10 s (and one
/// bin above), so an hour's messages take the same memory as a second's.
#[derive(Debug)]
struct DelayHistogram {
    bins: Vec<u32>,
    sum_ms: f64,
    count: u64,
}

const BIN_MS: f64 = 0.1;
const BINS: usize = 100_000;

impl DelayHistogram {
    fn new() -> Self {
        DelayHistogram {
            bins: vec![0; BINS + 1],
            sum_ms: 0.0,
            count: 0,
        }
    }

    fn add(&mut self, ms: f64) {
        let bin = ((ms.max(0.0) / BIN_MS) as usize).min(BINS);
        self.bins[bin] += 1;
        self.sum_ms += ms.max(0.0);
        self.count += 1;
    }

    fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ms / self.count as f64)
    }

    /// The upper edge of the bin holding the `q` quantile.
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = (q * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, n) in self.bins.iter().enumerate() {
            seen += u64::from(*n);
            if seen >= rank {
                return Some((i + 1) as f64 * BIN_MS);
            }
        }
        None
    }
}

/// One side's data channel, its input and its output.
pub(crate) struct LiveData {
    channel: DataChannel,
    delivery: Delivery,
    lines: Option<mpsc::Receiver<Line>>,
    /// Lines taken from the reader, not yet given to the channel.
    waiting: VecDeque<Vec<u8>>,
    lines_read: u64,
    input_ended: bool,
    out: Option<Box<dyn Write + Send>>,
    delays: DelayHistogram,
}

impl LiveData {
    /// The channel of `config`, its input's reader thread started (it calls `wake` after
    /// each line), its output created. `None` when neither is asked for.
    pub(crate) fn start(
        config: &DataIoConfig,
        wake: impl Fn() + Send + 'static,
    ) -> Result<Option<Self>> {
        if config.input.is_none() && config.output.is_none() {
            return Ok(None);
        }
        let out: Option<Box<dyn Write + Send>> = match &config.output {
            None => None,
            Some(p) if p.as_os_str() == "-" => Some(Box::new(std::io::stdout())),
            Some(p) => Some(Box::new(BufWriter::new(File::create(p).with_context(
                || format!("cannot create the data output '{}'", p.display()),
            )?))),
        };
        let lines = match &config.input {
            None => None,
            Some(p) => Some(spawn_reader(p, wake)?),
        };
        Ok(Some(LiveData {
            channel: DataChannel::new(config.channel.clone()),
            delivery: config.delivery.unwrap_or(Delivery::Ordered),
            lines,
            waiting: VecDeque::new(),
            lines_read: 0,
            input_ended: config.input.is_none(),
            out,
            delays: DelayHistogram::new(),
        }))
    }

    /// A data-channel datagram from the peer. A malformed one is counted by the channel.
    pub(crate) fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) {
        let _ = self.channel.handle_message(now, bytes);
    }

    /// Takes the lines read (while the peer can be sent to), runs the channel's timers, and
    /// returns the datagrams to send now; writes what was delivered. An input that failed
    /// (a line over [`MAX_MESSAGE`] bytes, a read error) is an error naming the line.
    pub(crate) fn poll(&mut self, now: Instant, ready: bool) -> Result<Vec<Vec<u8>>> {
        self.take_lines()?;
        if ready {
            while let Some(line) = self.waiting.front() {
                match self.channel.send(now, self.delivery, 0, line) {
                    Ok(_) => {
                        self.waiting.pop_front();
                    }
                    Err(DataSendError::Backlog(_)) => break,
                    Err(e @ DataSendError::Size(_)) => bail!("data message: {e}"),
                }
            }
        }
        self.channel.handle_timeout(now);
        let mut out = Vec::new();
        loop {
            match self.channel.poll_output(now) {
                DataOutput::Transmit(d) => out.push(d),
                DataOutput::Event(m) => {
                    let ms = m.delivered_at.saturating_duration_since(m.sent_at);
                    self.delays.add(ms.as_secs_f64() * 1e3);
                    if let Some(w) = &mut self.out {
                        write_line(w.as_mut(), &m.payload)
                            .context("cannot write a data message")?;
                    }
                }
                DataOutput::Timeout(_) => break,
            }
        }
        if let Some(w) = &mut self.out {
            w.flush().context("cannot write a data message")?;
        }
        Ok(out)
    }

    /// When the channel next has something to do on its own.
    pub(crate) fn next_at(&mut self, now: Instant) -> Instant {
        match self.channel.poll_output(now) {
            DataOutput::Timeout(t) => t,
            // Nothing is taken from a channel here; poll_output only reports a deadline
            // when nothing is queued, and the loop polls before it waits.
            _ => now,
        }
    }

    fn take_lines(&mut self) -> Result<()> {
        let Some(lines) = &self.lines else {
            return Ok(());
        };
        while self.waiting.len() < LINE_QUEUE {
            match lines.try_recv() {
                Ok(Line::Text(t)) => {
                    self.lines_read += 1;
                    self.waiting.push_back(t);
                }
                Ok(Line::End) | Err(mpsc::TryRecvError::Disconnected) => {
                    self.input_ended = true;
                    self.lines = None;
                    break;
                }
                Ok(Line::Failed(why)) => bail!("{why}"),
                Err(mpsc::TryRecvError::Empty) => break,
            }
        }
        Ok(())
    }

    /// What it did.
    pub(crate) fn totals(&self) -> DataTotals {
        DataTotals {
            stats: self.channel.stats(),
            lines_read: self.lines_read,
            undelivered: (self.waiting.len() + self.channel.unacked()) as u64,
            delay_mean_ms: self.delays.mean(),
            delay_p95_ms: self.delays.quantile(0.95),
        }
    }
}

/// A message as a line: its bytes, with a newline or backslash in it escaped (`\n`, `\\`)
/// so one message stays one line.
fn write_line(w: &mut dyn Write, payload: &[u8]) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(payload.len() + 1);
    for &b in payload {
        match b {
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\\' => line.extend_from_slice(b"\\\\"),
            _ => line.push(b),
        }
    }
    line.push(b'\n');
    w.write_all(&line)
}

/// Reads `path` (`-`: standard input) a line at a time on a thread, each line checked
/// against [`MAX_MESSAGE`] (an error naming the line); empty lines are skipped.
fn spawn_reader(path: &PathBuf, wake: impl Fn() + Send + 'static) -> Result<mpsc::Receiver<Line>> {
    let input: Box<dyn BufRead + Send> = if path.as_os_str() == "-" {
        Box::new(BufReader::new(std::io::stdin()))
    } else {
        let file = File::open(path)
            .with_context(|| format!("cannot read the data input '{}'", path.display()))?;
        Box::new(BufReader::new(file))
    };
    let name = path.display().to_string();
    let (tx, rx) = mpsc::sync_channel(LINE_QUEUE);
    std::thread::Builder::new()
        .name("data-in".into())
        .spawn(move || read_lines(input, &name, &tx, &wake))
        .context("cannot start the data input's thread")?;
    Ok(rx)
}

fn read_lines(
    mut input: Box<dyn BufRead + Send>,
    name: &str,
    tx: &mpsc::SyncSender<Line>,
    wake: &dyn Fn(),
) {
    let mut number = 0u64;
    loop {
        let mut line = Vec::new();
        // One byte over the limit is enough to tell a line is too long.
        let read =
            std::io::Read::take(&mut input, (MAX_MESSAGE + 2) as u64).read_until(b'\n', &mut line);
        let result = match read {
            Ok(0) => Line::End,
            Ok(_) => {
                number += 1;
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                if line.len() > MAX_MESSAGE {
                    Line::Failed(format!(
                        "line {number} of the data input '{name}' is over {MAX_MESSAGE} bytes \
                         (one message a line, {MAX_MESSAGE} bytes at most)"
                    ))
                } else if line.is_empty() {
                    continue;
                } else {
                    Line::Text(line)
                }
            }
            Err(e) => Line::Failed(format!("cannot read the data input '{name}': {e}")),
        };
        let last = !matches!(result, Line::Text(_));
        if tx.send(result).is_err() {
            return;
        }
        wake();
        if last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_an_error_naming_it() {
        let text = format!("one\n\n{}\nthree\n", "x".repeat(MAX_MESSAGE + 1));
        let (tx, rx) = mpsc::sync_channel(8);
        read_lines(Box::new(std::io::Cursor::new(text)), "in.txt", &tx, &|| {});
        drop(tx);
        let got: Vec<Line> = rx.iter().collect();
        assert!(matches!(&got[0], Line::Text(t) if t == b"one"));
        match &got[1] {
            Line::Failed(why) => {
                assert!(why.contains("line 3 of the data input 'in.txt'"), "{why}")
            }
            _ => panic!("an error"),
        }
        assert_eq!(got.len(), 2, "nothing read after the bad line");
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_taken() {
        let text = format!("{}\r\n{}", "y".repeat(MAX_MESSAGE), "z");
        let (tx, rx) = mpsc::sync_channel(8);
        read_lines(Box::new(std::io::Cursor::new(text)), "in", &tx, &|| {});
        drop(tx);
        let got: Vec<Line> = rx.iter().collect();
        assert!(matches!(&got[0], Line::Text(t) if t.len() == MAX_MESSAGE));
        assert!(matches!(&got[1], Line::Text(t) if t == b"z"));
        assert!(matches!(&got[2], Line::End));
    }

    #[test]
    fn messages_are_one_line_each() {
        let mut out = Vec::new();
        write_line(&mut out, b"a\nb\\c").unwrap();
        assert_eq!(out, b"a\\nb\\\\c\n");
    }

    #[test]
    fn the_delay_histogram_gives_mean_and_p95() {
        let mut h = DelayHistogram::new();
        for ms in 1..=100 {
            h.add(f64::from(ms));
        }
        assert!((h.mean().unwrap() - 50.5).abs() < 1e-9);
        let p95 = h.quantile(0.95).unwrap();
        assert!((95.0..=95.2).contains(&p95), "{p95}");
        h.add(1e9);
        assert_eq!(h.count, 101);
    }
}
