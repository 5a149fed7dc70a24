//! The quality-delay frontier (`figures = ["frontier"]`): per link, each scheme's SSIM
//! against its p95 and its mean delay at every point of its sweep (`[group.sweep]`), one line
//! per scheme (and budget) through its points, with the delay of the idealised causal and
//! clairvoyant senders of [`salsify_sim::bounds`] as vertical lines; and beside them each
//! run's delay against its utilisation with the past genie's envelope ([`super::genie`]).
//! Schemes are then compared at equal quality, not each at its one default operating point:
//! [`Frontier`] reads a sweep's efficient points at another scheme's delay or quality.

use salsify_sim::bounds::{delay_bounds, DelayFigures};

use super::figures::{links, scheme_color, slug, Drawn};
use super::genie::{self, Genies};
use super::plot::{Axis, Chart, Series};
use super::tables::Entry;

/// Which delay a chart or a reading uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    /// The 95th percentile.
    P95,
    /// The mean.
    Mean,
}

impl Delay {
    /// This delay of a run, ms.
    pub fn of(self, r: &Entry) -> Option<f64> {
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

    pub(super) fn words(self) -> &'static str {
        match self {
            Delay::P95 => "95th-percentile",
            Delay::Mean => "mean",
        }
    }

    /// Its short name, in file names and table headers.
    pub(super) fn short(self) -> &'static str {
        match self {
            Delay::P95 => "p95",
            Delay::Mean => "mean",
        }
    }
}

/// A sweep's Pareto-efficient points (delay ms, SSIM dB), by rising delay: along them both
/// delay and quality rise strictly, so either reads the other by linear interpolation. A
/// dominated point (another has no more delay and no less quality) would fold the line back.
#[derive(Clone, Debug, PartialEq)]
pub struct Frontier {
    points: Vec<(f64, f64)>,
}

impl Frontier {
    /// The efficient points among `points` (non-finite ones ignored).
    pub fn new(points: impl IntoIterator<Item = (f64, f64)>) -> Frontier {
        let mut all: Vec<(f64, f64)> = points
            .into_iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        // At equal delay the best quality first, so the others are dropped as dominated.
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut points: Vec<(f64, f64)> = Vec::new();
        for p in all {
            if points.last().is_none_or(|last| p.1 > last.1) {
                points.push(p);
            }
        }
        Frontier { points }
    }

    /// The efficient points, by rising delay.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// The quality at `delay_ms`; `None` beyond the sweep (below its lowest delay or above
    /// its highest: no extrapolation).
    pub fn ssim_at(&self, delay_ms: f64) -> Option<f64> {
        along(self.points.iter().copied(), delay_ms)
    }

    /// The delay at `ssim_db`; `None` beyond the sweep.
    pub fn delay_at(&self, ssim_db: f64) -> Option<f64> {
        along(self.points.iter().map(|&(d, q)| (q, d)), ssim_db)
    }
}

/// `y` at `x` on the line through `points` (rising `x`), `None` outside their range.
fn along(points: impl Iterator<Item = (f64, f64)>, x: f64) -> Option<f64> {
    let mut before: Option<(f64, f64)> = None;
    for (px, py) in points {
        if px == x {
            return Some(py);
        }
        if px > x {
            let (bx, by) = before?;
            return Some(by + (py - by) * (x - bx) / (px - bx));
        }
        before = Some((px, py));
    }
    None
}

/// The line a run belongs to: its scheme, and what its family adds (Salsify: its budget
/// source).
fn series_of(r: &Entry) -> String {
    crate::campaign::sweep::series(&r.plan.experiment)
}

/// Every frontier chart of every link of a group: quality against each delay, and each
/// delay against utilisation with the past genie's envelope (the genie's sweeps computed
/// once per link in `genies`).
pub fn frontier(group: &str, runs: &[Entry], genies: &Genies) -> Vec<Drawn> {
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
                name: format!("{group}-{}-frontier-{}", slug(link), delay.short()),
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
        out.extend(utilisation_figures(group, link, &here, genies));
    }
    out
}

/// Each delay of `link`'s simulated runs against their utilisation, with the past genie's
/// envelope where the link has one. Live runs are left out: their utilisation is not known
/// from outside the sender.
pub fn utilisation_figures(
    group: &str,
    link: &str,
    here: &[&Entry],
    genies: &Genies,
) -> Vec<Drawn> {
    let simulated: Vec<&Entry> = here
        .iter()
        .copied()
        .filter(|r| !r.live() && r.result.summary.link_utilisation.is_some())
        .collect();
    let Some(first) = simulated.first() else {
        return Vec::new();
    };
    let genie = genies.points(&first.plan.experiment);
    [Delay::P95, Delay::Mean]
        .into_iter()
        .map(|delay| {
            let which = delay.words();
            let mut chart = Chart::new(
                format!("{link}: delay against utilisation ({which} delay)"),
                Axis::linear("link utilisation (bytes delivered / capacity; better ->)"),
                Axis::log(format!("video delay, {which} (ms, log scale)")),
            );
            push_lines(&mut chart, &simulated, |r| {
                Some((r.result.summary.link_utilisation?, delay.of(r)?))
            });
            if let Some(points) = &genie {
                chart.push(
                    Series::line(
                        "past genie's envelope",
                        genie::envelope_points(points, delay == Delay::P95),
                    )
                    .with_color("#555555")
                    .dashed(),
                );
            }
            Drawn {
                name: format!("{group}-{}-utilisation-{}", slug(link), delay.short()),
                caption: format!(
                    "{link}: each simulated run's {which} delay (log scale, down is better) \
                     against the share of the link's capacity it used (right is better), one \
                     line per scheme as in the frontier. Dashed grey: the past genie's envelope \
                     on this link, the lowest {which} delay of any sender of the genie family \
                     (it knows the link's whole past and the bottleneck's queue exactly, and \
                     codes no pictures: utilisation stands in for quality) using at least that \
                     share; a run above it has room to close with the past alone."
                ),
                svg: chart.to_svg(),
            }
        })
        .collect()
}

/// One line per scheme (and budget) through its runs' (`x`, `y`), sorted by `x`, in the
/// scheme's colours; returns the lowest and highest `y` drawn.
fn push_lines(
    chart: &mut Chart,
    here: &[&Entry],
    xy: impl Fn(&Entry) -> Option<(f64, f64)>,
) -> (f64, f64) {
    let mut names: Vec<String> = Vec::new();
    for r in here {
        let name = series_of(r);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for name in &names {
        let mut points: Vec<(f64, f64)> = here
            .iter()
            .filter(|r| series_of(r) == *name)
            .filter_map(|r| xy(r))
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
        let line = Series::line_with_points(name.clone(), points)
            .with_color(scheme_color(scheme))
            .with_marker(super::style::style(scheme).marker);
        chart.push(if name.ends_with(" forecast") {
            line.dashed()
        } else {
            line
        });
    }
    (lo, hi)
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
    let (lo, hi) = push_lines(&mut chart, here, |r| {
        Some((delay.of(r)?, r.result.summary.ssim_db_mean?))
    });
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

    /// Dominated points leave the frontier; a reading inside it interpolates, one below or
    /// above its range is none (no extrapolation).
    #[test]
    fn a_frontier_reads_inside_its_sweep_only() {
        let f = Frontier::new([
            (300.0, 13.0),
            (100.0, 10.0),
            (250.0, 11.0),
            (200.0, 12.0),
            (100.0, 9.0),
            (f64::NAN, 20.0),
        ]);
        assert_eq!(f.points(), [(100.0, 10.0), (200.0, 12.0), (300.0, 13.0)]);
        assert_eq!(f.ssim_at(150.0), Some(11.0));
        assert_eq!(f.ssim_at(300.0), Some(13.0));
        assert_eq!(f.ssim_at(99.0), None);
        assert_eq!(f.ssim_at(301.0), None);
        assert_eq!(f.delay_at(12.5), Some(250.0));
        assert_eq!(f.delay_at(10.0), Some(100.0));
        assert_eq!(f.delay_at(9.9), None);
        assert_eq!(f.delay_at(13.1), None);
        let one = Frontier::new([(100.0, 10.0)]);
        assert_eq!(one.ssim_at(100.0), Some(10.0));
        assert_eq!(one.ssim_at(101.0), None);
        assert_eq!(Frontier::new([]).delay_at(10.0), None);
    }

    #[test]
    fn the_frontier_draws_both_delays_per_link_with_the_bounds_and_the_genie() {
        let mut runs = runs(&[
            ("oracle", "cellular", 1, Some(60.0), Some(90.0)),
            ("salsify-2c", "cellular", 1, Some(120.0), Some(300.0)),
            ("conventional", "cellular", 1, Some(80.0), Some(250.0)),
        ]);
        // A short link keeps the genie's sweep quick in a debug build.
        for (plan, _) in &mut runs {
            plan.experiment.duration_s = 3.0;
        }
        let entries: Vec<Entry> = runs
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let drawn = frontier("g", &entries, &Genies::default());
        let names: Vec<&str> = drawn.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "g-cellular-frontier-p95",
                "g-cellular-frontier-mean",
                "g-cellular-utilisation-p95",
                "g-cellular-utilisation-mean"
            ]
        );
        for d in &drawn[2..] {
            for series in ["salsify-2c ewma", "conventional", "past genie's envelope"] {
                assert!(d.svg.contains(series), "{} lacks {series}", d.name);
            }
        }
        for d in &drawn[..2] {
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

    /// Runs that differ only in what the genie ignores share one sweep; a live run has no
    /// utilisation, so a link with only live runs gets no panel.
    #[test]
    fn a_link_is_swept_once_and_live_runs_stay_out() {
        let mut made = runs(&[
            ("salsify-2c", "cellular", 1, Some(120.0), Some(300.0)),
            ("conventional", "cellular", 1, Some(80.0), Some(250.0)),
            ("chromium-vp8", "wifi", 1, Some(80.0), Some(250.0)),
        ]);
        for (plan, _) in &mut made {
            plan.experiment.duration_s = 2.0;
        }
        made[1].0.experiment.video = "other.mp4".into();
        made[2].0.live = true;
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let genies = Genies::default();
        let cellular: Vec<&Entry> = entries[..2].iter().collect();
        assert_eq!(
            utilisation_figures("g", "cellular", &cellular, &genies).len(),
            2
        );
        assert!(genies.points(&entries[1].plan.experiment).is_some());
        assert_eq!(genies.swept(), 1);
        assert!(utilisation_figures("g", "wifi", &[&entries[2]], &genies).is_empty());
    }
}
