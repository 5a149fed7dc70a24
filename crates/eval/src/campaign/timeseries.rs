//! A run over time, in fixed bins: link capacity against what the sender offered and what
//! got through, drops, frames shown and per-frame delay — the data of the paper's figures 7
//! and 8, small enough to keep beside every run.

use std::io::{self, BufRead, Write};

use salsify_metrics::Fixed;
use salsify_netem::{LinkEvent, LinkEventKind};
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

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

/// One line as written: every number with three decimals.
#[derive(Serialize)]
struct WrittenBin {
    start_s: Fixed<3>,
    capacity_kbps: Fixed<3>,
    offered_kbps: Fixed<3>,
    delivered_kbps: Fixed<3>,
    dropped: u32,
    frames_shown: u32,
    delay_mean_ms: Option<Fixed<3>>,
    delay_max_ms: Option<Fixed<3>>,
    packet_delay_max_ms: Option<Fixed<3>>,
}

/// One line as read (by column name; an old file lacks the last column).
#[derive(Deserialize)]
struct ReadBin {
    start_s: f64,
    capacity_kbps: f64,
    offered_kbps: f64,
    delivered_kbps: f64,
    dropped: u32,
    frames_shown: u32,
    delay_mean_ms: Option<f64>,
    delay_max_ms: Option<f64>,
    #[serde(default)]
    packet_delay_max_ms: Option<f64>,
}

/// Writes bins as CSV.
pub fn write_csv(bins: &[Bin], out: impl Write) -> io::Result<()> {
    // The header is written here rather than from the row type, so no bins still have one.
    let mut csv = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    csv.write_record(HEADER.split(','))?;
    for b in bins {
        csv.serialize(WrittenBin {
            start_s: Fixed(b.start_s),
            capacity_kbps: Fixed(b.capacity_kbps),
            offered_kbps: Fixed(b.offered_kbps),
            delivered_kbps: Fixed(b.delivered_kbps),
            dropped: b.dropped,
            frames_shown: b.frames_shown,
            delay_mean_ms: b.delay_mean_ms.map(Fixed),
            delay_max_ms: b.delay_max_ms.map(Fixed),
            packet_delay_max_ms: b.packet_delay_max_ms.map(Fixed),
        })?;
    }
    csv.flush()
}

/// Reads what [`write_csv`] wrote; the error names the line.
pub fn read_csv(input: impl BufRead) -> Result<Vec<Bin>, String> {
    let mut csv = csv::Reader::from_reader(input);
    let header = csv.headers().map_err(|e| format!("line 1: {e}"))?;
    let header: Vec<&str> = header.iter().collect();
    if header.join(",") != HEADER && header.join(",") != HEADER_8 {
        return Err("line 1: not a time-series header".into());
    }
    let mut bins = Vec::new();
    for row in csv.deserialize::<ReadBin>() {
        let r = row.map_err(|e| match e.position() {
            Some(p) => format!("line {}: malformed ({e})", p.line()),
            None => format!("malformed: {e}"),
        })?;
        bins.push(Bin {
            start_s: r.start_s,
            capacity_kbps: r.capacity_kbps,
            offered_kbps: r.offered_kbps,
            delivered_kbps: r.delivered_kbps,
            dropped: r.dropped,
            frames_shown: r.frames_shown,
            delay_mean_ms: r.delay_mean_ms,
            delay_max_ms: r.delay_max_ms,
            packet_delay_max_ms: r.packet_delay_max_ms,
        });
    }
    Ok(bins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::FrameOutcome;
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
                    reason: salsify_netem::LinkDrop::Lost,
                },
            ),
        ];
        let mut shown = FrameRecord::captured(0, at(100));
        shown.display = Some(at(150));
        shown.choice = FrameOutcome::Single;
        let mut later = FrameRecord::captured(1, at(600));
        later.display = Some(at(900));
        later.choice = FrameOutcome::Single;
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
        assert!(read_csv(short.as_bytes())
            .unwrap_err()
            .starts_with("line 2:"));
        let bad = format!("{HEADER}\n0.000,1.0,2.0,3.0,0,1,5.000,,\n0.500,x,2.0,3.0,0,1,,,\n");
        assert!(read_csv(bad.as_bytes()).unwrap_err().starts_with("line 3:"));
        // Written as before: three decimals, empty where absent.
        let mut text = Vec::new();
        write_csv(&bins[1..], &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            format!("{HEADER}\n0.500,24.000,0.000,0.000,1,1,300.000,300.000,\n")
        );
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
