//! A per-packet log in Mahimahi's `mm-link` format, so `mm-throughput-graph` and
//! `mm-delay-graph` (and any script written for them) can read the emulator's runs.
//!
//! # The format, as checked in Mahimahi's source
//! Read from `src/frontend/link_queue.cc` (github.com/ravinet/mahimahi, commit ae477d4):
//! header lines start with `#`; the graphing scripts (`scripts/mm-throughput-graph`,
//! `scripts/mm-delay-graph`) need exactly one `# base timestamp: N` line and subtract N from
//! every event time. Events are one per line, times in whole milliseconds:
//! - `T + SIZE` a packet arrived (`record_arrival`, before the queue decides);
//! - `T # BYTES` a delivery opportunity, used or not (`record_departure_opportunity`,
//!   logged before the packets it carries);
//! - `T - SIZE DELAY` a packet left, `DELAY = T - arrival` in ms (`record_departure`);
//! - `T d PACKETS BYTES` packets dropped (`record_drop`, after the `+` line of the arrival
//!   that overflowed the queue).
//!
//! Here times are the link's [`Instant`]s truncated to milliseconds, and `DELAY` is the
//! difference of the truncated times, as Mahimahi computes it from its millisecond clock.
//! One `d` line is written per dropped packet (`d 1 SIZE`); drops by a loss model are logged
//! too, at the time of the loss. A packet lost on exit gets its `-` line (it did use the
//! link) followed by a `d` line.
//!
//! Caveat found while checking: `mm-throughput-graph` at that commit dies with "Unknown event
//! type" on `d` lines, which `mm-link` itself has written since 2018 (commit 9f0dcb7);
//! `mm-delay-graph` ignores them. Use [`MahimahiLog::without_drops`] to feed the former.
//! Sizes are those the caller gave; Mahimahi's include the 4-byte TUN header, so its `#`
//! lines say 1504 where ours say 1500 by default.

use std::io::{self, Write};

use salsify_time::Instant;

use crate::link::{Link, LinkEvent, LinkEventKind};
use crate::queue::QueueLimit;

/// What the header of a log says about the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// A name for the link (Mahimahi writes "Uplink" or "Downlink").
    pub link_name: String,
    /// Where the trace came from (a file name, or a generator's description).
    pub trace_name: String,
    /// The queue in force.
    pub queue: QueueLimit,
    /// When the link started; written as the base timestamp.
    pub base: Instant,
}

impl LogHeader {
    /// The header for `link`.
    pub fn for_link<P>(link: &Link<P>, link_name: &str, trace_name: &str) -> LogHeader {
        LogHeader {
            link_name: link_name.to_owned(),
            trace_name: trace_name.to_owned(),
            queue: link.queue_limit(),
            base: link.start(),
        }
    }
}

/// Writes [`LinkEvent`]s as an `mm-link` log.
#[derive(Debug)]
pub struct MahimahiLog<W: Write> {
    out: W,
    drops: bool,
}

impl<W: Write> MahimahiLog<W> {
    /// Starts a log on `out`, writing its header.
    pub fn new(mut out: W, header: &LogHeader) -> io::Result<MahimahiLog<W>> {
        let one_line = |s: &str| s.replace(['\n', '\r'], " ");
        writeln!(
            out,
            "# mahimahi mm-link ({}) [{}] > salsify-netem",
            one_line(&header.link_name),
            one_line(&header.trace_name)
        )?;
        writeln!(out, "# command line: salsify-netem")?;
        writeln!(out, "# queue: {}", header.queue)?;
        // No wall clock in a sans-IO emulator: times are from the run's epoch.
        writeln!(out, "# init timestamp: 0")?;
        writeln!(out, "# base timestamp: {}", millis(header.base))?;
        Ok(MahimahiLog { out, drops: true })
    }

    /// Leaves out `d` lines, which `mm-throughput-graph` cannot parse (see the module docs).
    pub fn without_drops(mut self) -> MahimahiLog<W> {
        self.drops = false;
        self
    }

    /// Writes one event.
    pub fn write_event(&mut self, event: &LinkEvent) -> io::Result<()> {
        let t = millis(event.time);
        match event.kind {
            LinkEventKind::Arrival { size_bytes, .. } => writeln!(self.out, "{t} + {size_bytes}"),
            LinkEventKind::Opportunity { bytes } => writeln!(self.out, "{t} # {bytes}"),
            LinkEventKind::Departure {
                size_bytes,
                enqueued_at,
                ..
            } => {
                let delay = t.saturating_sub(millis(enqueued_at));
                writeln!(self.out, "{t} - {size_bytes} {delay}")
            }
            LinkEventKind::Drop { size_bytes, .. } if self.drops => {
                writeln!(self.out, "{t} d 1 {size_bytes}")
            }
            LinkEventKind::Drop { .. } => Ok(()),
        }
    }

    /// Writes every event `link` has recorded so far.
    pub fn drain<P>(&mut self, link: &mut Link<P>) -> io::Result<()> {
        while let Some(e) = link.poll_event() {
            self.write_event(&e)?;
        }
        Ok(())
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn millis(t: Instant) -> u64 {
    t.as_micros() / 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LinkConfig, Trace};
    use salsify_time::Duration;

    /// A small run whose log can be written out by hand.
    fn small_run(drops: bool) -> String {
        let mut config = LinkConfig::with_trace(Trace::from_millis(vec![2, 5]).unwrap());
        config.queue = QueueLimit::packets(1);
        config.record_events = true;
        config.propagation_delay = Duration::from_millis(7);
        let start = Instant::from_millis(1000);
        let mut link = Link::new(config, start).unwrap();
        let header = LogHeader::for_link(&link, "Uplink", "two.trace");
        let mut log = MahimahiLog::new(Vec::new(), &header).unwrap();
        if !drops {
            log = log.without_drops();
        }
        let t = |us: u64| Instant::from_micros(1_000_000 + us);
        // 1000 + 1.5 ms: queued. Second packet: the queue (limit 1) is full.
        let _ = link.handle_packet(t(1500), 'a', 1000).unwrap();
        let _ = link.handle_packet(t(1600), 'b', 700).unwrap();
        // At 1003 ms: the opportunity at 1002 sent 'a' (500 bytes of it wasted); 'c' waits
        // for the one at 1005.
        let _ = link.handle_packet(t(3000), 'c', 1500).unwrap();
        link.handle_timeout(t(6000));
        log.drain(&mut link).unwrap();
        String::from_utf8(log.finish().unwrap()).unwrap()
    }

    #[test]
    fn writes_mm_link_lines() {
        let want = "\
# mahimahi mm-link (Uplink) [two.trace] > salsify-netem
# command line: salsify-netem
# queue: droptail [packets=1]
# init timestamp: 0
# base timestamp: 1000
1001 + 1000
1001 + 700
1001 d 1 700
1002 # 1500
1002 - 1000 1
1003 + 1500
1005 # 1500
1005 - 1500 2
";
        assert_eq!(small_run(true), want);
        let without: String = want
            .lines()
            .filter(|l| !l.contains(" d "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(small_run(false), without);
    }
}
