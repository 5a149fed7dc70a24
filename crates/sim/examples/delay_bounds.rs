//! How much of the oracle's lead on a link any causal sender can close (issue 13): the paper's
//! delay metric for a sender that knows every future delivery opportunity, against the best of
//! a family of idealised causal senders, on the link of each experiment file given.
//!
//! ```text
//! cargo run --release -p salsify-sim --example delay_bounds -- EXPERIMENT.toml...
//! ```
//!
//! Both senders are idealised the same way, far beyond what a real one can do: every frame is
//! one datagram (it fits one delivery opportunity), encoding, decoding and serialisation take
//! no time, nothing is lost, and only the video direction's trace and propagation delay count
//! (a link that also loses packets or fails is flagged: its figures are no bounds).
//!
//! - **clairvoyant**: at every opportunity the newest picture captured by then (if not sent
//!   yet) is waiting at the bottleneck and goes; it is shown one propagation delay later.
//! - **causal(phi)**: the sender learns of each delivery the instant it happens (no ACK
//!   path), and keeps exactly one frame waiting at the bottleneck: after a delivery at `t` it
//!   waits `phi` times the last gap between deliveries (a fresher picture, at the risk of
//!   missing the next opportunity), then hands over the newest picture. Reported for the
//!   `phi` with the lowest mean delay and, separately, the lowest p95.
//!
//! The causal family is not a proof that no causal sender does better (on a link whose
//! opportunities are periodic a sender could learn their phase), but on links whose slow
//! stretches deliver at random times — Poisson, as Sprout modelled cellular links — a frame
//! handed over at any moment waits a whole mean gap for its opportunity, while the
//! clairvoyant one waits for none: its mean delay is about half a gap, the causal one's at
//! least one and a half. Delay is the metric `salsify sim` reports: for each picture, the time
//! from its capture until it or a newer picture is shown.

use salsify_sim::bounds::delay_bounds;
use salsify_sim::experiment::Experiment;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: delay_bounds EXPERIMENT.toml...");
        std::process::exit(2);
    }
    println!("| experiment | clairvoyant mean / p95 ms | causal best mean (phi) | causal best p95 (phi) | ratio mean / p95 |");
    println!("|---|---|---|---|---|");
    for path in &paths {
        let experiment = Experiment::from_toml(&std::fs::read_to_string(path)?)?;
        let b = delay_bounds(&experiment)?;
        let (c, (pm, m), (pp, p)) = (b.clairvoyant, b.causal_by_mean, b.causal_by_p95);
        assert!(
            m.mean_ms >= c.mean_ms - 1e-6,
            "a causal sender beat the clairvoyant one: the model is wrong"
        );
        let path = if b.lossy {
            format!("{path} (loss and failures ignored)")
        } else {
            path.clone()
        };
        println!(
            "| {path} | {:.0} / {:.0} | {:.0} / {:.0} ({pm:.1}) | {:.0} / {:.0} ({pp:.1}) | {:.2} / {:.2} |",
            c.mean_ms,
            c.p95_ms,
            m.mean_ms,
            m.p95_ms,
            p.mean_ms,
            p.p95_ms,
            m.mean_ms / c.mean_ms,
            p.p95_ms / c.p95_ms,
        );
    }
    Ok(())
}
