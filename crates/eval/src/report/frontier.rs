//! The quality-delay frontier (`figures = ["frontier"]`): per link, each scheme's SSIM
//! against its p95 and its mean delay at every point of its sweep (`[group.sweep]`), one line
//! per scheme (and budget) through its points, with the delay of the idealised causal and
//! clairvoyant senders of [`salsify_sim::bounds`] as vertical lines. Schemes are then
//! compared at equal quality, not each at its one default operating point.

use salsify_sim::bounds::{delay_bounds, DelayFigures};
use salsify_transport::BudgetSource;

use super::figures::{links, scheme_color, slug, Drawn};
use super::plot::{Axis, Chart, Series};
use super::tables::Entry;
use crate::campaign::sweep::setting;

/// Which delay a chart plots.
#[derive(Clone, Copy)]
enum Delay {
    P95,
    Mean,
}

impl Delay {
    fn of(self, r: &Entry) -> Option<f64> {
        let s = &r.result.summary;
        match self {
            Delay::P95 => s.delay_p95_ms,
            Delay::Mean => s.delay_mean_ms,
        }
    }

    fn bound(self, f: &DelayFigures) -> f64 {
        match self {
            Delay::P95 => f.p95_ms,
            Delay::Mean => f.mean_ms,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Delay::P95 => "95th-percentile",
            Delay::Mean => "mean",
        }
    }
}

/// The line a run belongs to: its scheme, and for Salsify its budget source.
fn series_of(r: &Entry) -> String {
    let e = &r.plan.experiment;
    match &e.salsify {
        Some(s) if e.scheme.starts_with("salsify-") && s.budget == BudgetSource::Forecast => {
            format!("{} forecast", e.scheme)
        }
        _ if e.scheme.starts_with("salsify-") => format!("{} ewma", e.scheme),
        _ => e.scheme.clone(),
    }
}

/// Both frontier charts of every link of a group.
pub fn frontier(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let mut out = Vec::new();
    for link in links(runs) {
        let here: Vec<&Entry> = runs.iter().filter(|r| r.link() == link).collect();
        let bounds = here
            .first()
            .and_then(|r| delay_bounds(&r.plan.experiment).ok())
            .filter(|b| !b.lossy);
        for delay in [Delay::P95, Delay::Mean] {
            let chart = chart(link, &here, delay, bounds.as_ref());
            let which = delay.words();
            out.push(Drawn {
                name: format!(
                    "{group}-{}-frontier-{}",
                    slug(link),
                    match delay {
                        Delay::P95 => "p95",
                        Delay::Mean => "mean",
                    }
                ),
                caption: format!(
                    "{link}: the quality-delay frontier at the {which} delay. Each point is one \
                     setting of a scheme's own knob (Salsify: delay target, budget source; \
                     oracle: quality slack), each line joins one scheme's points; up and to the \
                     right is better (dashed: Salsify with the forecast budget). Vertical lines: the {which} delay of the best idealised \
                     causal sender and of the clairvoyant sender on this link (one-datagram \
                     frames, no coding time: no quality is achievable at their delay)."
                ),
                svg: chart.to_svg(),
            });
        }
    }
    out
}

fn chart(
    link: &str,
    here: &[&Entry],
    delay: Delay,
    bounds: Option<&salsify_sim::bounds::DelayBounds>,
) -> Chart {
    let mut chart = Chart::new(
        format!("{link}: quality-delay frontier ({} delay)", delay.words()),
        Axis::log(format!(
            "video delay, {} (ms, log scale; better ->)",
            delay.words()
        ))
        .reversed(),
        Axis::linear("SSIM (dB), mean"),
    );
    let mut names: Vec<String> = Vec::new();
    for r in here {
        let name = series_of(r);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for name in &names {
        let mut points: Vec<(f64, f64, String)> = here
            .iter()
            .filter(|r| series_of(r) == *name)
            .filter_map(|r| {
                let db = r.result.summary.ssim_db_mean?;
                Some((delay.of(r)?, db, setting(&r.plan.experiment)))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        for p in &points {
            lo = lo.min(p.1);
            hi = hi.max(p.1);
        }
        let scheme = name.split(' ').next().unwrap_or(name);
        let line =
            Series::line_with_points(name.clone(), points.iter().map(|p| (p.0, p.1)).collect())
                .with_color(scheme_color(scheme))
                .with_marker(super::style::style(scheme).marker);
        chart.push(if name.ends_with(" forecast") {
            line.dashed()
        } else {
            line
        });
    }
    if let (Some(b), true) = (bounds, lo.is_finite()) {
        let causal = delay.bound(&match delay {
            Delay::P95 => b.causal_by_p95.1,
            Delay::Mean => b.causal_by_mean.1,
        });
        let clairvoyant = delay.bound(&b.clairvoyant);
        for (name, x, color) in [
            ("idealised causal sender", causal, "#555555"),
            ("clairvoyant sender", clairvoyant, "#aaaaaa"),
        ] {
            if x.is_finite() && x > 0.0 {
                chart.push(
                    Series::line(name, vec![(x, lo), (x, hi)])
                        .with_color(color)
                        .dashed(),
                );
            }
        }
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
    use super::*;

    #[test]
    fn the_frontier_draws_both_delays_per_link_with_the_bounds() {
        let runs = runs(&[
            ("oracle", "cellular", 1, Some(60.0), Some(90.0)),
            ("salsify-2c", "cellular", 1, Some(120.0), Some(300.0)),
            ("conventional", "cellular", 1, Some(80.0), Some(250.0)),
        ]);
        let entries: Vec<Entry> = runs
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let drawn = frontier("g", &entries);
        let names: Vec<&str> = drawn.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["g-cellular-frontier-p95", "g-cellular-frontier-mean"]
        );
        for d in &drawn {
            for series in [
                "salsify-2c ewma",
                "oracle",
                "conventional",
                "idealised causal sender",
            ] {
                assert!(d.svg.contains(series), "{} lacks {series}", d.name);
            }
        }
    }
}
