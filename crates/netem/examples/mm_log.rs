//! Writes an `mm-link` log of a sender offering more than the link can carry, so the log can
//! be checked with Mahimahi's own tools:
//!
//! ```text
//! cargo run -p salsify-netem --example mm_log -- [TRACE_FILE] > run.log
//! mm-delay-graph run.log > delay.svg
//! mm-throughput-graph 500 run.log > throughput.svg   # needs --no-drops (see log.rs)
//! ```
//! Flags: `--no-drops` leaves out `d` lines; `--secs N` sets the run length (default 30).
//! Without a trace file the embedded synthetic cellular trace is used.

use std::io::{self, BufWriter};

use salsify_netem::{LinkConfig, LogHeader, MahimahiLog, Trace};
use salsify_time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut trace_path, mut drops, mut secs) = (None, true, 30u64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--no-drops" => drops = false,
            "--secs" => secs = args.next().ok_or("--secs needs a value")?.parse()?,
            _ => trace_path = Some(a),
        }
    }
    let (trace, name) = match &trace_path {
        Some(p) => (Trace::from_path(p)?, p.clone()),
        None => (
            salsify_netem::default_trace(),
            "synthetic-cellular".to_owned(),
        ),
    };
    let mut config = LinkConfig::with_trace(trace);
    config.record_events = true;
    let mut link = salsify_netem::Link::new(config, Instant::ZERO)?;
    let header = LogHeader::for_link(&link, "Downlink", &name);
    let mut log = MahimahiLog::new(BufWriter::new(io::stdout().lock()), &header)?;
    if !drops {
        log = log.without_drops();
    }
    // 1200-byte packets at 8 Mb/s (one every 1.2 ms): above the trace's mean, so the queue
    // fills and overflows at times.
    let gap = Duration::from_micros(1200);
    let end = Instant::ZERO + Duration::from_secs(secs);
    let mut now = Instant::ZERO;
    while now < end {
        let _ = link.handle_packet(now, (), 1200)?;
        while link.poll_delivery(now).is_some() {}
        log.drain(&mut link)?;
        now += gap;
    }
    link.handle_timeout(end);
    log.drain(&mut link)?;
    log.finish()?;
    Ok(())
}
