//! A corpus group's report (a group with a `corpus:` link, see
//! [`crate::campaign::corpus`]): per-trace tables of each scheme's delay, SSIM and frames
//! shown, and, against each reference scheme, the distribution over the traces of every other
//! scheme's delay ratios and SSIM difference: a table (on how many traces it leads on all
//! three, median and worst) and CDF figures. One run per scheme and trace is compared; where
//! a group varies queue, delay or seed, each combination is a trace of its own.

use std::collections::BTreeMap;

use super::figures::{slug, Drawn};
use super::plot::{Axis, Chart, Series};
use super::style::styled;
use super::tables::{cell_columns, num, Entry, Table};
use crate::campaign::corpus::{CorpusSpec, PREFIX};
use crate::campaign::Group;

const PER_TRACE_TITLE: &str = "The corpus, trace by trace";

const PER_TRACE: [(&str, Metric); 4] = [
    (
        "Each scheme's 95th-percentile delay (ms) on each trace; capacity is the link's mean \
         over the run (Mb/s, Sprout's measurement of the first run on it).",
        Metric::P95,
    ),
    ("Mean delay (ms).", Metric::Mean),
    ("Mean SSIM (dB).", Metric::Ssim),
    ("Frames shown per second.", Metric::Fps),
];

const COMPARISON_TITLE: &str = "The corpus: each scheme against the reference";

const COMPARISON_INTRO: &str = "For each reference scheme (`[group.corpus] references`, else \
the group's first scheme) and each other scheme, over the traces both finished: on how many the \
scheme leads on all three (lower mean delay, lower p95 delay, higher mean SSIM), on how many its \
p95 is no higher and its SSIM higher, and the median and worst over the traces of its mean and \
p95 delay over the reference's (below 1: less delay), its SSIM minus the reference's (dB; above \
0: better pictures) and its frames shown over the reference's (worst: the largest delay ratio, \
the lowest SSIM difference and frame ratio). The corpus figures draw each distribution as a CDF.";

const SLOW_INTRO: &str = "The same over the slow traces alone: those whose capacity (mean over \
the run) is below the group's `[group.corpus] low_rate_kbps` (default 1000 kb/s), where frame \
rate suffers first.";

/// What a table or figure reads from a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    Mean,
    P95,
    Ssim,
    Fps,
}

/// One run's figures.
#[derive(Clone, Copy, Debug)]
struct Point {
    mean: f64,
    p95: f64,
    ssim: f64,
    fps: f64,
}

impl Point {
    fn of(r: &Entry) -> Option<Point> {
        let s = &r.result.summary;
        Some(Point {
            mean: s.delay_mean_ms?,
            p95: s.delay_p95_ms?,
            ssim: s.ssim_db_mean?,
            fps: s.displayed_fps,
        })
    }

    fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::Mean => self.mean,
            Metric::P95 => self.p95,
            Metric::Ssim => self.ssim,
            Metric::Fps => self.fps,
        }
    }
}

/// Every trace's runs, by trace then by run name, with the trace's capacity in kb/s.
struct Corpus {
    schemes: Vec<String>,
    traces: BTreeMap<String, (Option<f64>, BTreeMap<String, Point>)>,
}

impl Corpus {
    fn of(runs: &[Entry]) -> Corpus {
        let cells = cell_columns(runs);
        let mut schemes: Vec<String> = Vec::new();
        let mut traces: BTreeMap<String, (Option<f64>, BTreeMap<String, Point>)> = BTreeMap::new();
        for r in runs.iter().filter(|r| !r.live()) {
            let name = r.name();
            if !schemes.contains(&name) {
                schemes.push(name.clone());
            }
            let mut trace = r.link().to_string();
            for (header, value) in &cells {
                trace += &format!(" [{header} {}]", value(r));
            }
            let capacity = r.result.summary.network.as_ref().map(|n| n.capacity_kbps);
            let slot = traces.entry(trace).or_default();
            slot.0 = slot.0.or(capacity);
            if let Some(p) = Point::of(r) {
                slot.1.entry(name).or_insert(p);
            }
        }
        Corpus { schemes, traces }
    }

    /// `(trace, scheme's point, reference's point)` of every trace both have.
    fn pairs(&self, scheme: &str, reference: &str, below_kbps: Option<f64>) -> Vec<(Point, Point)> {
        self.traces
            .values()
            .filter(|(capacity, _)| below_kbps.is_none_or(|b| capacity.is_some_and(|c| c < b)))
            .filter_map(|(_, points)| Some((*points.get(scheme)?, *points.get(reference)?)))
            .collect()
    }
}

/// Whether a group is a corpus group (one of its links is `corpus:DIR`).
pub fn is_corpus(group: &Group) -> bool {
    group.links.iter().any(|l| l.starts_with(PREFIX))
}

/// A table under a group's own: its heading (if any), its intro and the table.
pub type Titled = (Option<&'static str>, &'static str, Table);

/// The corpus tables under a corpus group's own table (none for another group).
pub fn extras(group: &Group, runs: &[Entry]) -> Vec<Titled> {
    if !is_corpus(group) {
        return Vec::new();
    }
    let corpus = Corpus::of(runs);
    let mut out = Vec::new();
    for (i, (intro, metric)) in PER_TRACE.into_iter().enumerate() {
        out.push((
            (i == 0).then_some(PER_TRACE_TITLE),
            intro,
            per_trace_table(&corpus, metric),
        ));
    }
    let refs = group.corpus.references(&group.schemes);
    out.push((
        Some(COMPARISON_TITLE),
        COMPARISON_INTRO,
        comparison_table(&corpus, &refs, None),
    ));
    let below = group.corpus.low_rate_kbps();
    out.push((
        None,
        SLOW_INTRO,
        comparison_table(&corpus, &refs, Some(below)),
    ));
    out
}

/// One row per trace: its capacity and each scheme's `metric`.
fn per_trace_table(corpus: &Corpus, metric: Metric) -> Table {
    let mut header = vec!["trace".to_string(), "capacity Mb/s".to_string()];
    header.extend(corpus.schemes.iter().cloned());
    let digits = match metric {
        Metric::Mean | Metric::P95 => 0,
        Metric::Ssim => 2,
        Metric::Fps => 1,
    };
    let rows = corpus
        .traces
        .iter()
        .map(|(trace, (capacity, points))| {
            let mut row = vec![trace.clone(), num(capacity.map(|c| c / 1000.0), 2)];
            row.extend(
                corpus
                    .schemes
                    .iter()
                    .map(|s| num(points.get(s).map(|p| p.get(metric)), digits)),
            );
            row
        })
        .collect();
    Table { header, rows }
}

/// Each scheme against each reference, over the traces (below `below_kbps` where given).
fn comparison_table(corpus: &Corpus, references: &[&str], below_kbps: Option<f64>) -> Table {
    let traces = match below_kbps {
        Some(kbps) => format!("traces under {:.2} Mb/s", kbps / 1000.0),
        None => "traces".to_string(),
    };
    let header = [
        "reference",
        "scheme",
        &traces,
        "leads on all three",
        "p95 no higher",
        "SSIM higher",
        "mean delay ratio: median / worst",
        "p95 delay ratio: median / worst",
        "SSIM difference dB: median / worst",
        "frames shown ratio: median / worst",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for &reference in references {
        for scheme in corpus.schemes.iter().filter(|s| *s != reference) {
            let pairs = corpus.pairs(scheme, reference, below_kbps);
            rows.push(comparison_row(reference, scheme, &pairs));
        }
    }
    Table { header, rows }
}

fn comparison_row(reference: &str, scheme: &str, pairs: &[(Point, Point)]) -> Vec<String> {
    let n = pairs.len();
    let count = |pred: &dyn Fn(&Point, &Point) -> bool| {
        let k = pairs.iter().filter(|(s, r)| pred(s, r)).count();
        match n {
            0 => "-".to_string(),
            _ => format!("{k} of {n} ({:.0}%)", 100.0 * k as f64 / n as f64),
        }
    };
    let leads = count(&|s, r| s.mean < r.mean && s.p95 < r.p95 && s.ssim > r.ssim);
    let p95 = count(&|s, r| s.p95 <= r.p95);
    let ssim = count(&|s, r| s.ssim > r.ssim);
    let ratio = |m: Metric, worst_is_max: bool| {
        let values = relative(pairs, m);
        let worst = if worst_is_max {
            values.last()
        } else {
            values.first()
        };
        format!("{} / {}", num(median(&values), 2), num(worst.copied(), 2))
    };
    let diff = {
        let values = relative(pairs, Metric::Ssim);
        let signed = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:+.2}"));
        format!(
            "{} / {}",
            signed(median(&values)),
            signed(values.first().copied())
        )
    };
    vec![
        reference.to_string(),
        scheme.to_string(),
        n.to_string(),
        leads,
        p95,
        ssim,
        ratio(Metric::Mean, true),
        ratio(Metric::P95, true),
        diff,
        ratio(Metric::Fps, false),
    ]
}

/// The scheme relative to the reference on each trace, sorted: a ratio for delay and
/// frames (traces where the reference's is 0 left out), a difference for SSIM.
fn relative(pairs: &[(Point, Point)], m: Metric) -> Vec<f64> {
    let mut v: Vec<f64> = pairs
        .iter()
        .filter_map(|(s, r)| match m {
            Metric::Ssim => Some(s.ssim - r.ssim),
            _ => (r.get(m) > 0.0).then(|| s.get(m) / r.get(m)),
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Per reference, three CDFs over the traces of every other scheme: its mean and p95 delay
/// over the reference's and its SSIM minus the reference's.
pub fn figures(group: &Group, runs: &[Entry]) -> Vec<Drawn> {
    if !is_corpus(group) {
        return Vec::new();
    }
    let corpus = Corpus::of(runs);
    let spec: &CorpusSpec = &group.corpus;
    let mut out = Vec::new();
    for reference in spec.references(&group.schemes) {
        for (m, what, axis) in [
            (
                Metric::Mean,
                "mean delay",
                Axis::log(format!(
                    "mean delay / {reference}'s (log scale; <1: less delay)"
                )),
            ),
            (
                Metric::P95,
                "p95 delay",
                Axis::log(format!(
                    "p95 delay / {reference}'s (log scale; <1: less delay)"
                )),
            ),
            (
                Metric::Ssim,
                "SSIM",
                Axis::linear(format!("SSIM dB - {reference}'s (>0: better pictures)")),
            ),
        ] {
            let mut chart = Chart::new(
                format!(
                    "{}: {what} against {reference}, over the corpus",
                    group.name
                ),
                axis,
                Axis::linear("share of traces").range(0.0, 1.0),
            );
            for scheme in corpus.schemes.iter().filter(|s| *s != reference) {
                let values = relative(&corpus.pairs(scheme, reference, None), m);
                if values.is_empty() {
                    continue;
                }
                let n = values.len() as f64;
                let points = values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (v, (i + 1) as f64 / n))
                    .collect();
                let family = scheme.split(' ').next().unwrap_or(scheme);
                chart.push(styled(Series::step(scheme.clone(), points), family, false));
            }
            out.push(Drawn {
                name: format!(
                    "{}-corpus-{}-vs-{}",
                    group.name,
                    slug(what),
                    slug(reference)
                ),
                caption: format!(
                    "Corpus {}: the distribution over the traces of each scheme's {what} \
                     relative to {reference}'s on the same trace (a CDF: the share of traces at \
                     or left of each value).",
                    group.name
                ),
                svg: chart.to_svg(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
    use super::*;

    fn group(text: &str) -> Group {
        toml::from_str(text).unwrap()
    }

    /// Two traces, two schemes: the per-trace tables hold each run's figure, the comparison
    /// counts leads and takes medians and worsts, the slow table keeps the slow trace only,
    /// and one CDF per metric is drawn.
    #[test]
    fn per_trace_and_comparison_tables_and_cdfs() {
        let mut made = runs(&[
            ("salsify-2c", "a", 1, Some(100.0), Some(200.0)),
            ("conventional", "a", 1, Some(200.0), Some(300.0)),
            ("salsify-2c", "b", 1, Some(90.0), Some(400.0)),
            ("conventional", "b", 1, Some(60.0), Some(200.0)),
        ]);
        for (i, (_, r)) in made.iter_mut().enumerate() {
            r.summary.ssim_db_mean = Some([12.0, 11.0, 10.0, 10.5][i]);
            r.summary.displayed_fps = [30.0, 20.0, 15.0, 30.0][i];
            let kbps = if i < 2 { 5000.0 } else { 600.0 };
            r.summary.network = serde_json::from_value(serde_json::json!({
                "scored_from_s": 0.0, "scored_s": 10.0, "throughput_kbps": 1.0,
                "capacity_kbps": kbps, "utilisation": 0.5, "delay_p95_ms": null,
                "omniscient_delay_p95_ms": null, "self_inflicted_delay_ms": null
            }))
            .unwrap();
        }
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let g = group(
            "name = \"c\"\nschemes = [\"salsify-2c\", \"conventional\"]\n\
             links = [\"corpus:/x\"]\n[corpus]\nreferences = [\"conventional\"]\n",
        );
        let extras = extras(&g, &entries);
        assert_eq!(extras.len(), 6);
        let p95 = &extras[0].2;
        assert_eq!(
            p95.header,
            ["trace", "capacity Mb/s", "salsify-2c", "conventional"]
        );
        assert_eq!(
            p95.rows,
            [["a", "5.00", "200", "300"], ["b", "0.60", "400", "200"]]
        );
        assert_eq!(extras[3].2.rows[1], ["b", "0.60", "15.0", "30.0"]);
        let all = &extras[4].2;
        assert_eq!(
            all.rows,
            [[
                "conventional",
                "salsify-2c",
                "2",
                "1 of 2 (50%)",
                "1 of 2 (50%)",
                "1 of 2 (50%)",
                "1.00 / 1.50",
                "1.33 / 2.00",
                "+0.25 / -0.50",
                "1.00 / 0.50",
            ]]
        );
        let slow = &extras[5].2;
        assert_eq!(slow.header[2], "traces under 1.00 Mb/s");
        assert_eq!(slow.rows[0][2..4], ["1", "0 of 1 (0%)"]);
        let drawn = figures(&g, &entries);
        let names: Vec<&str> = drawn.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "c-corpus-mean-delay-vs-conventional",
                "c-corpus-p95-delay-vs-conventional",
                "c-corpus-ssim-vs-conventional"
            ]
        );
        assert!(
            drawn[2].svg.contains(">salsify-2c</text>"),
            "{}",
            drawn[2].svg
        );
        // Not a corpus group: nothing.
        let plain = group("name = \"p\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\n");
        assert!(super::extras(&plain, &entries).is_empty());
        assert!(figures(&plain, &entries).is_empty());
    }
}
