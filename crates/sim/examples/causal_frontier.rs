//! Whether any sender that only knows the past could match the oracle's delay at the oracle's
//! utilisation (issue 24): the lower envelope of the genie family of `salsify_sim::bounds` on
//! the link of each experiment file given, beside the same rule told the future.
//!
//! ```text
//! cargo run --release -p salsify-sim --example causal_frontier -- [--at U,U...] [--points] [--dense] EXPERIMENT.toml...
//! ```
//!
//! Each genie sizes the frame captured at `t` as `max(0, k * C_W(t) * target - queued(t))`,
//! where `C_W` is the rate of the trace's opportunities over `[t - W, t)` (the past genie) or
//! `[t, t + W)` (the future genie) and `queued` is exactly what waits at the bottleneck; the
//! ACK-lagged genie knows both only a round trip late (`bounds::Horizon::Acked`). Swept
//! over `W`, target and `k`; the envelope gives, for each utilisation level, the lowest p95 and
//! the lowest mean among members reaching it. `--at` adds levels (the utilisations of measured
//! schemes); `--points` also prints every member; `--dense` sweeps a finer grid than the issue's
//! (10 windows x 14 targets x 13 gains), to see whether the envelope is the grid's artefact. No codec runs: the video settings of the
//! experiment are ignored, except its frame rate and duration.

use salsify_sim::bounds::{
    envelope, genie_family, genie_grid, genie_sweep, EnvelopeRow, GeniePoint, Horizon,
    ENVELOPE_LEVELS,
};
use salsify_sim::experiment::Experiment;

/// What the command line asked for.
struct Args {
    levels: Vec<f64>,
    points: bool,
    dense: bool,
    paths: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        levels: ENVELOPE_LEVELS.to_vec(),
        points: false,
        dense: false,
        paths: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--points" => args.points = true,
            "--dense" => args.dense = true,
            "--at" => {
                let list = it.next().ok_or("--at needs a list of utilisations")?;
                for u in list.split(',') {
                    args.levels
                        .push(u.parse().map_err(|_| format!("--at: '{u}' is no number"))?);
                }
            }
            _ => args.paths.push(arg),
        }
    }
    args.levels.sort_by(f64::total_cmp);
    args.levels.dedup();
    if args.paths.is_empty() {
        return Err(
            "usage: causal_frontier [--at U,U...] [--points] [--dense] EXPERIMENT.toml...".into(),
        );
    }
    Ok(args)
}

/// The finer grid of `--dense`.
fn dense_family() -> Vec<salsify_sim::bounds::GenieParams> {
    let windows = [
        20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 300.0, 500.0, 1000.0,
    ];
    let targets = [
        10.0, 13.0, 17.0, 20.0, 25.0, 33.0, 40.0, 50.0, 60.0, 75.0, 100.0, 125.0, 150.0, 200.0,
    ];
    let gains: Vec<f64> = (8..=20).map(|i| f64::from(i) * 0.05).collect();
    genie_grid(&windows, &targets, &gains)
}

/// `p95 / mean (W, target, k; utilisation)` of an envelope's point, or `-`.
fn cell(point: Option<GeniePoint>) -> String {
    let Some(p) = point else { return "-".into() };
    let g = p.params;
    format!(
        "{:.0} / {:.0} ({:.0}, {:.0}, {:.2}; {:.2})",
        p.delay.p95_ms, p.delay.mean_ms, g.window_ms, g.target_ms, g.k, p.utilisation
    )
}

/// One envelope table per genie (past, ACK-lagged past, future): for each level, the lowest
/// p95 and the lowest mean.
fn print_envelopes(levels: &[f64], genies: &[(&str, Vec<EnvelopeRow>)]) {
    let mut header = String::from("| utilisation at least |");
    for (name, _) in genies {
        header += &format!(" {name}, lowest p95: p95 / mean ms (W ms, target ms, k; utilisation) | {name}, lowest mean |");
    }
    println!("{header}");
    println!("|---{}|", "|---|---".repeat(genies.len()));
    for (i, level) in levels.iter().enumerate() {
        let mut row = format!("| {level:.2} |");
        for (_, rows) in genies {
            row += &format!(" {} | {} |", cell(rows[i].by_p95), cell(rows[i].by_mean));
        }
        println!("{row}");
    }
}

fn print_points(horizon: &str, points: &[GeniePoint]) {
    for p in points {
        let g = p.params;
        println!(
            "| {horizon} | {:.0} | {:.0} | {:.2} | {:.3} | {:.3} | {:.1} | {:.1} | {:.0} | {:.3} |",
            g.window_ms,
            g.target_ms,
            g.k,
            p.utilisation,
            p.wire_utilisation,
            p.delay.mean_ms,
            p.delay.p95_ms,
            p.mean_frame_bytes,
            p.sent_share,
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let family = match args.dense {
        false => genie_family(),
        true => dense_family(),
    };
    for path in &args.paths {
        let experiment = Experiment::from_toml(&std::fs::read_to_string(path)?)?;
        let past = genie_sweep(&experiment, Horizon::Past, &family)?;
        let acked = genie_sweep(&experiment, Horizon::Acked, &family)?;
        let future = genie_sweep(&experiment, Horizon::Future, &family)?;
        println!("## {path}\n");
        if past.lossy {
            println!("The link also loses packets or fails: ignored here.\n");
        }
        let c = past.clairvoyant;
        println!(
            "One-datagram clairvoyant bound (delay_bounds): mean {:.0} ms, p95 {:.0} ms, at utilisation {:.3}.\n",
            c.mean_ms, c.p95_ms, past.clairvoyant_utilisation
        );
        print_envelopes(
            &args.levels,
            &[
                ("past genie", envelope(&past.points, &args.levels)),
                ("past genie a round trip late", envelope(&acked.points, &args.levels)),
                ("future genie", envelope(&future.points, &args.levels)),
            ],
        );
        if args.points {
            println!("\n| genie | W ms | target ms | k | utilisation | wire utilisation | mean ms | p95 ms | mean frame bytes | share sent |");
            println!("|---|---|---|---|---|---|---|---|---|---|");
            print_points("past", &past.points);
            print_points("acked", &acked.points);
            print_points("future", &future.points);
        }
        println!();
    }
    Ok(())
}
