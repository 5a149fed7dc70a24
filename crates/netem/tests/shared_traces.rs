//! The real Mahimahi traces in /work/shared/traces (data outside the repo; skipped with a note
//! when absent, e.g. on another machine).

use std::path::{Path, PathBuf};

use salsify_netem::{Link, LinkConfig, QueueLimit, Trace, TRACE_PACKET_BYTES};
use salsify_time::{Duration, Instant};

fn shared_trace(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SALSIFY_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new("/work/shared/traces").to_path_buf());
    let path = dir.join(name);
    if path.is_file() {
        Some(path)
    } else {
        println!("note: {} absent; test skipped", path.display());
        None
    }
}

#[test]
fn verizon_lte_short_parses_and_averages_about_5_mbps() {
    let Some(path) = shared_trace("Verizon-LTE-short.down") else {
        return;
    };
    let trace = Trace::from_path(&path).unwrap();
    let mbps = trace.mean_rate_bps(TRACE_PACKET_BYTES) / 1e6;
    println!(
        "{}: {} opportunities, period {:?}, {mbps:.3} Mb/s",
        path.display(),
        trace.opportunities_per_period(),
        trace.period()
    );
    assert!((4.5..5.5).contains(&mbps), "{mbps} Mb/s");
    // Written back out it is the same file, line for line.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(trace.to_mahimahi_string(), text);
}

#[test]
fn every_shared_trace_parses() {
    for name in [
        "Verizon-LTE-short.up",
        "Verizon-LTE-short.down",
        "TMobile-LTE-short.up",
        "TMobile-LTE-short.down",
        "Verizon-EVDO-driving.up",
        "Verizon-EVDO-driving.down",
    ] {
        let Some(path) = shared_trace(name) else {
            continue;
        };
        let trace = Trace::from_path(&path).unwrap();
        assert!(trace.period() > Duration::from_secs(10), "{name}");
    }
}

#[test]
fn a_backlogged_sender_gets_the_verizon_traces_capacity() {
    let Some(path) = shared_trace("Verizon-LTE-short.down") else {
        return;
    };
    let trace = Trace::from_path(&path).unwrap();
    let period = trace.period();
    let mut c = LinkConfig::with_trace(trace.clone());
    c.queue = QueueLimit::UNLIMITED;
    let mut link = Link::new(c, Instant::ZERO).unwrap();
    let end = Instant::ZERO + period;
    let mut now = Instant::ZERO;
    let mut departed = 0u64;
    loop {
        while link.queued_packets() < 50 {
            let _ = link.handle_packet(now, (), 1500).unwrap();
        }
        while let Some(d) = link.poll_delivery(now) {
            departed += u64::from(d.departed_at <= end);
        }
        let next = link.poll_timeout().unwrap();
        assert!(next > now, "link stuck at {now:?}");
        now = next;
        // Everything that departs by `end` is delivered 20 ms later.
        if now > end + Duration::from_millis(20) {
            break;
        }
    }
    // Every opportunity of one period carried exactly one full packet, except those at
    // time 0: the first packets arrive at 0 and cannot use an opportunity at their arrival.
    let at_zero = trace.opportunities_until(Duration::ZERO);
    assert_eq!(departed, trace.opportunities_until(period) - at_zero);
}
