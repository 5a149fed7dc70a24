//! Where a run's delay tail comes from (issue 24): each picture's delay against the link's own
//! floor, split by what the link was doing when the picture was captured.
//!
//! ```text
//! cargo run --release -p salsify-sim --example tail_by_link_floor -- FRAMES.csv TRACE.down [DELAY_MS]
//! ```
//!
//! The floor of a picture captured at `t` is what a one-datagram frame sent at `t` into an
//! empty queue would take: the wait for the trace's next delivery opportunity after `t`'s
//! millisecond, plus the one-way propagation delay (`DELAY_MS`, default 20). No sender beats it;
//! the clairvoyant one of `delay_bounds` meets it. A picture's **excess** is its delay (the
//! paper's metric, from `frames.csv`) less its floor: what the sender's own queue, skips and
//! reactions added. Pictures are grouped by that wait: `flowing` (under 20 ms), `short gap`
//! (20-50 ms) and `long gap` (50 ms or more: captured in or just before a stretch with no
//! delivery at all, where the delay is the link's and the excess is what the sender queued
//! before the gap and how fast it reacted after). Per group: its share of the pictures, the share
//! of all pictures that it puts at or above the run's 95th percentile, its mean delay and
//! excess, and the share of all pictures with an excess of 100 ms or more.

use std::collections::HashMap;
use std::error::Error;

use salsify_netem::Trace;
use salsify_time::Duration;

/// The groups, by the wait for the next opportunity (ms): name and lower bound.
const GROUPS: [(&str, f64); 3] = [("flowing", 0.0), ("short gap", 20.0), ("long gap", 50.0)];

/// An excess from this many ms counts as large.
const LARGE_EXCESS_MS: f64 = 100.0;

/// One picture: capture time and delay, ms.
struct Picture {
    capture_ms: f64,
    delay_ms: f64,
}

fn read_pictures(path: &str) -> Result<Vec<Picture>, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty frames.csv")?.split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(format!("{path}: no column '{name}'"))
    };
    let (capture, delay) = (column("capture_ms")?, column("delay_ms")?);
    let mut pictures = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let field = |i: usize| fields.get(i).copied().unwrap_or("");
        if field(delay).is_empty() {
            continue;
        }
        pictures.push(Picture {
            capture_ms: field(capture).parse()?,
            delay_ms: field(delay).parse()?,
        });
    }
    Ok(pictures)
}

/// The wait from `capture_ms` to the trace's next opportunity after that millisecond.
fn wait_ms(trace: &Trace, capture_ms: f64) -> f64 {
    let t = Duration::from_micros((capture_ms.max(0.0) * 1000.0) as u64);
    let next = trace.opportunity_time(trace.opportunities_until(t));
    next.as_secs_f64() * 1000.0 - capture_ms
}

#[derive(Default)]
struct Group {
    pictures: usize,
    at_tail: usize,
    delay_sum: f64,
    excess_sum: f64,
    large_excess: usize,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 || args.len() > 3 {
        eprintln!("usage: tail_by_link_floor FRAMES.csv TRACE.down [DELAY_MS]");
        std::process::exit(2);
    }
    let pictures = read_pictures(&args[0])?;
    let trace = Trace::from_path(&args[1]).map_err(|e| format!("{}: {e}", args[1]))?;
    let propagation: f64 = args.get(2).map_or(Ok(20.0), |d| d.parse())?;
    if pictures.is_empty() {
        return Err("no picture with a delay".into());
    }
    let mut sorted: Vec<f64> = pictures.iter().map(|p| p.delay_ms).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let p95 = sorted[(n * 95 / 100).min(n - 1)];
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let mut groups: HashMap<&str, Group> = HashMap::new();
    for p in &pictures {
        let wait = wait_ms(&trace, p.capture_ms);
        let name = GROUPS
            .iter()
            .rev()
            .find(|(_, from)| wait >= *from)
            .map_or(GROUPS[0].0, |g| g.0);
        let g = groups.entry(name).or_default();
        let excess = p.delay_ms - (wait + propagation);
        g.pictures += 1;
        g.at_tail += usize::from(p.delay_ms >= p95);
        g.delay_sum += p.delay_ms;
        g.excess_sum += excess;
        g.large_excess += usize::from(excess >= LARGE_EXCESS_MS);
    }
    println!(
        "{}: {n} pictures, delay mean {mean:.0} ms, p95 {p95:.0} ms",
        args[0]
    );
    println!();
    println!("| group | pictures | at or above p95 (of all) | mean delay ms | mean excess ms | excess >= 100 ms (of all) |");
    println!("|---|---|---|---|---|---|");
    let share = |k: usize| 100.0 * k as f64 / n as f64;
    for (name, _) in GROUPS {
        let Some(g) = groups.get(name) else { continue };
        println!(
            "| {name} | {:.1}% | {:.2}% | {:.0} | {:.0} | {:.2}% |",
            share(g.pictures),
            share(g.at_tail),
            g.delay_sum / g.pictures as f64,
            g.excess_sum / g.pictures as f64,
            share(g.large_excess),
        );
    }
    Ok(())
}
