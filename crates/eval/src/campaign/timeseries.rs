//! A run over time, in fixed bins: link capacity against what the sender offered and what
//! got through, drops, frames shown and per-frame delay — the data of the paper's figures 7
//! and 8, small enough to keep beside every run.

use std::io::{self, BufRead, Write};

use salsify_netem::{LinkEvent, LinkEventKind};
use salsify_time::Duration;

use crate::metrics::{record_delays, FrameRecord, MetricsError};

/// One bin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bin {
    /// Start of the bin, seconds from the start of the run.
    pub start_s: f64,
    /// What the link could have carried, kbit/s.
    pub capacity_kbps: f64,
    /// What arrived at the link (the sending rate), kbit/s.
    pub offered_kbps: f64,
    /// What left the bottleneck, kbit/s.
    pub delivered_kbps: f64,
    /// Packets dropped (queue full or loss).
    pub dropped: u32,
    /// Frames displayed in the bin.
    pub frames_shown: u32,
    /// Mean of the paper's per-frame delay over frames captured in the bin (ms).
    pub delay_mean_ms: Option<f64>,
    /// Largest such delay (ms).
    pub delay_max_ms: Option<f64>,
    /// Largest time a packet leaving the bottleneck in the bin spent in the link's queue
    /// (ms; add the propagation delay for its one-way delay). Absent in series written before
    /// it existed.
    pub packet_delay_max_ms: Option<f64>,
}

/// Bins `events` of the video link and the run's frame `records`.
pub fn bin_run(
    events: &[LinkEvent],
    records: &[FrameRecord],
    duration: Duration,
    width: Duration,
) -> Result<Vec<Bin>, MetricsError> {
    let width_us = (width.as_micros() as u64).max(1);
    let count = (duration.as_micros() as u64).div_ceil(width_us).max(1) as usize;
    let mut bins: Vec<Bin> = (0..count)
        .map(|i| Bin {
            start_s: (i as u64 * width_us) as f64 / 1e6,
            ..Bin::default()
        })
        .collect();
    let index = |micros: u64| ((micros / width_us) as usize).min(count - 1);
    let kbps = |bytes: u64| bytes as f64 * 8.0 / (width_us as f64 / 1e6) / 1000.0;
    let mut bytes = vec![(0u64, 0u64, 0u64); count];
    for event in events {
        let i = index(event.time.as_micros());
        match event.kind {
            LinkEventKind::Opportunity { bytes: b } => bytes[i].0 += b as u64,
            LinkEventKind::Arrival { size_bytes, .. } => bytes[i].1 += size_bytes as u64,
            LinkEventKind::Departure {
                size_bytes,
                enqueued_at,
                ..
            } => {
                bytes[i].2 += size_bytes as u64;
                let ms = event
                    .time
                    .saturating_duration_since(enqueued_at)
                    .as_secs_f64()
                    * 1e3;
                let max = bins[i].packet_delay_max_ms.get_or_insert(ms);
                *max = max.max(ms);
            }
            LinkEventKind::Drop { .. } => bins[i].dropped += 1,
            _ => {}
        }
    }
    for (bin, (capacity, offered, delivered)) in bins.iter_mut().zip(bytes) {
        bin.capacity_kbps = kbps(capacity);
        bin.offered_kbps = kbps(offered);
        bin.delivered_kbps = kbps(delivered);
    }
    let delays = record_delays(records)?;
    let mut sums = vec![(0.0f64, 0u32); count];
    for (record, delay) in records.iter().zip(delays) {
        if let Some(shown) = record.display {
            bins[index(shown.as_micros())].frames_shown += 1;
        }
        if let Some(delay) = delay {
            let ms = delay.as_micros() as f64 / 1000.0;
            let i = index(record.capture.as_micros());
            sums[i].0 += ms;
            sums[i].1 += 1;
            let max = bins[i].delay_max_ms.get_or_insert(ms);
            *max = max.max(ms);
        }
    }
    for (bin, (sum, n)) in bins.iter_mut().zip(sums) {
        if n > 0 {
            bin.delay_mean_ms = Some(sum / n as f64);
        }
    }
    Ok(bins)
}

const HEADER: &str = "start_s,capacity_kbps,offered_kbps,delivered_kbps,dropped,frames_shown,delay_mean_ms,delay_max_ms,packet_delay_max_ms";
/// The header before `packet_delay_max_ms` existed (still read).
const HEADER_8: &str = "start_s,capacity_kbps,offered_kbps,delivered_kbps,dropped,frames_shown,delay_mean_ms,delay_max_ms";

/// Writes bins as CSV.
pub fn write_csv(bins: &[Bin], mut out: impl Write) -> io::Result<()> {
    writeln!(out, "{HEADER}")?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    for b in bins {
        writeln!(
            out,
            "{:.3},{:.3},{:.3},{:.3},{},{},{},{},{}",
            b.start_s,
            b.capacity_kbps,
            b.offered_kbps,
            b.delivered_kbps,
            b.dropped,
            b.frames_shown,
            opt(b.delay_mean_ms),
            opt(b.delay_max_ms),
            opt(b.packet_delay_max_ms)
        )?;
    }
    Ok(())
}

/// Reads what [`write_csv`] wrote; the error names the line.
pub fn read_csv(input: impl BufRead) -> Result<Vec<Bin>, String> {
    let mut lines = input.lines();
    let columns = match lines.next() {
        Some(Ok(h)) if h == HEADER => 9,
        Some(Ok(h)) if h == HEADER_8 => 8,
        _ => return Err("line 1: not a time-series header".into()),
    };
    let mut bins = Vec::new();
    for (n, line) in lines.enumerate() {
        let line = line.map_err(|e| e.to_string())?;
        let bad = || format!("line {}: malformed", n + 2);
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != columns {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<f64>().map_err(|_| bad());
        let opt = |s: &str| {
            if s.is_empty() {
                Ok(None)
            } else {
                num(s).map(Some)
            }
        };
        bins.push(Bin {
            start_s: num(f[0])?,
            capacity_kbps: num(f[1])?,
            offered_kbps: num(f[2])?,
            delivered_kbps: num(f[3])?,
            dropped: f[4].parse().map_err(|_| bad())?,
            frames_shown: f[5].parse().map_err(|_| bad())?,
            delay_mean_ms: opt(f[6])?,
            delay_max_ms: opt(f[7])?,
            packet_delay_max_ms: match columns {
                9 => opt(f[8])?,
                _ => None,
            },
        });
    }
    Ok(bins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Choice;
    use salsify_time::Instant;

    fn at(ms: u64) -> Instant {
        Instant::from_micros(ms * 1000)
    }

    #[test]
    fn bins_count_bytes_frames_and_delay() {
        let ev = |ms, kind| LinkEvent { time: at(ms), kind };
        let events = vec![
            ev(10, LinkEventKind::Opportunity { bytes: 1500 }),
            ev(
                20,
                LinkEventKind::Arrival {
                    seq: 0,
                    size_bytes: 1000,
                },
            ),
            ev(
                30,
                LinkEventKind::Departure {
                    seq: 0,
                    size_bytes: 1000,
                    enqueued_at: at(20),
                },
            ),
            ev(600, LinkEventKind::Opportunity { bytes: 1500 }),
            ev(
                700,
                LinkEventKind::Drop {
                    seq: 1,
                    size_bytes: 1000,
                    reason: salsify_netem::DropReason::Lost,
                },
            ),
        ];
        let mut shown = FrameRecord::captured(0, at(100));
        shown.display = Some(at(150));
        shown.choice = Choice::Single;
        let mut later = FrameRecord::captured(1, at(600));
        later.display = Some(at(900));
        later.choice = Choice::Single;
        let bins = bin_run(
            &events,
            &[shown, later],
            Duration::from_secs(1),
            Duration::from_millis(500),
        )
        .unwrap();
        assert_eq!(bins.len(), 2);
        assert_eq!(bins[0].capacity_kbps, 24.0);
        assert_eq!(bins[0].offered_kbps, 16.0);
        assert_eq!(bins[0].delivered_kbps, 16.0);
        assert_eq!(
            (bins[1].dropped, bins[0].frames_shown, bins[1].frames_shown),
            (1, 1, 1)
        );
        assert_eq!(bins[0].delay_mean_ms, Some(50.0));
        assert_eq!(bins[1].delay_max_ms, Some(300.0));
        // The packet that left at 30 ms had queued 10 ms.
        assert_eq!(bins[0].packet_delay_max_ms, Some(10.0));
        assert_eq!(bins[1].packet_delay_max_ms, None);
        let mut text = Vec::new();
        write_csv(&bins, &mut text).unwrap();
        assert_eq!(read_csv(&text[..]).unwrap(), bins);
        assert!(read_csv(&b"start_s\n"[..]).is_err());
        // A series written before the per-packet column still reads.
        let old = format!("{HEADER_8}\n0.000,1.0,2.0,3.0,0,1,5.000,\n");
        let read = read_csv(old.as_bytes()).unwrap();
        assert_eq!(
            (read[0].delay_mean_ms, read[0].packet_delay_max_ms),
            (Some(5.0), None)
        );
        let short = format!("{HEADER}\n0.000,1.0,2.0,3.0,0,1,5.000,\n");
        assert!(read_csv(short.as_bytes()).is_err());
    }

    proptest::proptest! {
        /// A damaged time-series file is an error naming a line, never a panic.
        #[test]
        fn damaged_csv_fails_cleanly(tail in "[0-9.,\n-]{0,200}") {
            let text = format!("{HEADER}\n{tail}");
            let _ = read_csv(text.as_bytes());
        }
    }
}
