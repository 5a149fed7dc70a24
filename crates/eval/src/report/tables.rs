//! The report's tables: every run's summary, Salsify-2c against the conventional scheme
//! next to the paper's numbers, and the check that no scheme beats the oracle's delay.

use super::published;
use crate::campaign::sweep::{run_name, setting};
use crate::campaign::{PlannedRun, RunResult};
use crate::experiment::Clip;
use salsify_schemes::{registry, SchemeRole};

/// A table: header and rows of cells, rendered as markdown or HTML.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// GitHub-flavoured markdown.
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = line(&self.header);
        out += &line(&vec!["---".to_string(); self.header.len()]);
        for row in &self.rows {
            out += &line(row);
        }
        out
    }

    /// An HTML table (cells escaped).
    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n<thead><tr>");
        for h in &self.header {
            out += &format!("<th>{}</th>", escape(h));
        }
        out += "</tr></thead>\n<tbody>\n";
        for row in &self.rows {
            out += "<tr>";
            for cell in row {
                out += &format!("<td>{}</td>", escape(cell));
            }
            out += "</tr>\n";
        }
        out + "</tbody>\n</table>\n"
    }
}

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// A finished run with the experiment that made it.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    /// What was run.
    pub plan: &'a PlannedRun,
    /// What came out.
    pub result: &'a RunResult,
}

impl Entry<'_> {
    /// The run's scheme.
    pub fn scheme(&self) -> &str {
        &self.plan.experiment.scheme
    }
    /// What the run's parameters change from its scheme's defaults (`d 50 ms`), empty for
    /// the defaults.
    pub fn setting(&self) -> String {
        setting(&self.plan.experiment)
    }
    /// The run's name in tables and legends: its scheme and its setting, if any
    /// (`salsify-2c [d 50 ms]`).
    pub fn name(&self) -> String {
        run_name(&self.plan.experiment)
    }
    /// The run's link name.
    pub fn link(&self) -> &str {
        &self.plan.link
    }
    /// The run's queue size in packets.
    pub fn queue(&self) -> u32 {
        self.plan.experiment.link.queue_packets
    }
    /// Whether the run was live (real time, scored by barcodes) rather than simulated.
    pub fn live(&self) -> bool {
        self.plan.live
    }
    /// "live", "sim", or "sim, live clip" (a live cell's simulated twin, playing the live
    /// camera's barcoded excerpt), as tables say it.
    /// A two-way call's row (its A-to-B direction) says "sim, two-way".
    pub fn how(&self) -> &'static str {
        match (self.live(), self.plan.experiment.clip) {
            (true, _) => "live",
            (false, Clip::LiveExcerpt) => "sim, live clip",
            (false, Clip::Whole) if self.plan.experiment.two_way => "sim, two-way",
            (false, Clip::Whole) => "sim",
        }
    }
}

/// Each live run beside its simulated twin (the run of `runs` with exactly its experiment,
/// simulated): SSIM and delay both ways and their difference, so a reader sees at once how far
/// live and simulation agree. `None` when no live run has a twin among `runs`.
pub fn twin_table(runs: &[Entry]) -> Option<Table> {
    let header = [
        "link",
        "scheme",
        "SSIM dB twin / live",
        "live - twin dB",
        "delay mean ms twin / live",
        "live vs twin",
        "delay p95 ms twin / live",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for live in runs.iter().filter(|r| r.live()) {
        let Some(twin) = runs
            .iter()
            .find(|r| !r.live() && r.plan.experiment == live.plan.experiment)
        else {
            continue;
        };
        let (t, l) = (&twin.result.summary, &live.result.summary);
        let pair = |a: Option<f64>, b: Option<f64>, digits| {
            format!("{} / {}", num(a, digits), num(b, digits))
        };
        let difference = match (t.ssim_db_mean, l.ssim_db_mean) {
            (Some(a), Some(b)) => format!("{:+.2}", b - a),
            _ => "-".into(),
        };
        let ratio = match (t.delay_mean_ms, l.delay_mean_ms) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:+.0}%", (b / a - 1.0) * 100.0),
            _ => "-".into(),
        };
        rows.push(vec![
            live.link().to_string(),
            live.name(),
            pair(t.ssim_db_mean, l.ssim_db_mean, 2),
            difference,
            pair(t.delay_mean_ms, l.delay_mean_ms, 0),
            ratio,
            pair(t.delay_p95_ms, l.delay_p95_ms, 0),
        ]);
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}

/// A run's setting as a table cell: "default" for the scheme's defaults.
pub(crate) fn setting_cell(r: &Entry) -> String {
    match r.setting() {
        s if s.is_empty() => salsify_schemes::DEFAULT_SETTING.to_string(),
        s => s,
    }
}

/// Whether the group varies queue, delay or seed (then those columns are shown).
fn varies(runs: &[Entry], key: impl Fn(&Entry) -> String) -> bool {
    runs.windows(2).any(|w| key(&w[0]) != key(&w[1]))
}

/// A column of the experiment's cell: its header and its value for a run.
pub(super) type CellColumn = (&'static str, fn(&Entry) -> String);

/// The cell's columns a table shows: queue, one-way delay and seed, each only where the runs
/// differ in it (so no two rows of a table carry the same labels).
pub(super) fn cell_columns(runs: &[Entry]) -> Vec<CellColumn> {
    let columns: [CellColumn; 3] = [
        ("queue (pkts)", |r| r.queue().to_string()),
        ("one-way delay (ms)", |r| {
            r.plan.experiment.link.delay_ms.to_string()
        }),
        ("seed", |r| r.plan.experiment.seed.to_string()),
    ];
    columns
        .into_iter()
        .filter(|(_, value)| varies(runs, value))
        .collect()
}

/// Every finished run of a group: SSIM dB mean/p25, delay mean/p95, frame rate, bit rate,
/// utilisation and both QoE models.
pub fn group_table(runs: &[Entry]) -> Table {
    let cells = cell_columns(runs);
    // Only where one scheme ran at several settings (a sweep).
    let show_setting = runs.iter().any(|a| {
        runs.iter()
            .any(|b| a.scheme() == b.scheme() && a.setting() != b.setting())
    });
    let mut header: Vec<String> = vec!["link".into(), "scheme".into(), "run".into()];
    if show_setting {
        header.push("setting".into());
    }
    header.extend(cells.iter().map(|(name, _)| name.to_string()));
    let show_load = runs.iter().any(|r| r.live());
    header.extend(
        [
            "SSIM dB mean",
            "SSIM dB p25",
            "delay ms mean",
            "delay ms p95",
            "frames/s shown",
            "video kbit/s",
            "utilisation",
            "QoE call",
            "QoE driving",
        ]
        .map(String::from),
    );
    if show_load {
        header.push("load before / after".into());
    }
    let rows = runs
        .iter()
        .map(|r| {
            let s = &r.result.summary;
            let mut row = vec![
                r.link().to_string(),
                r.scheme().to_string(),
                r.how().to_string(),
            ];
            if show_setting {
                row.push(setting_cell(r));
            }
            row.extend(cells.iter().map(|(_, value)| value(r)));
            // Bytes per frame are unknown from outside a live sender.
            let (rate, utilisation) = match r.live() {
                true => ("-".into(), "-".into()),
                false => (
                    format!("{:.0}", s.video_bitrate_bps / 1000.0),
                    num(s.link_utilisation, 2),
                ),
            };
            row.extend([
                num(s.ssim_db_mean, 2),
                num(s.ssim_db_p25, 2),
                num(s.delay_mean_ms, 0),
                num(s.delay_p95_ms, 0),
                format!("{:.1}", s.displayed_fps),
                rate,
                utilisation,
                num(s.qoe_video_call, 2),
                num(s.qoe_driving, 2),
            ]);
            if show_load {
                row.push(r.result.meta.live.as_ref().map_or("-".into(), |l| {
                    format!("{:.2} / {:.2}", l.load_before, l.load_after)
                }));
            }
            row
        })
        .collect();
    Table { header, rows }
}

/// Sprout's network measurement of every run that has one (simulated runs): throughput,
/// capacity and utilisation over the scored window, the per-packet delay function's p95,
/// the omniscient sender's, the self-inflicted delay, and for video schemes SSIM and frame
/// delay. `None` when no run has it.
pub fn network_table(runs: &[Entry]) -> Option<Table> {
    let with: Vec<(&Entry, &salsify_metrics::SproutMeasure)> = runs
        .iter()
        .filter_map(|r| r.result.summary.network.as_ref().map(|n| (r, n)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let entries: Vec<Entry> = with.iter().map(|(r, _)| **r).collect();
    let cells = cell_columns(&entries);
    let mut header: Vec<String> = ["link", "scheme"].map(String::from).to_vec();
    header.extend(cells.iter().map(|(name, _)| name.to_string()));
    header.extend(
        [
            "scored from (s)",
            "throughput kbit/s",
            "capacity kbit/s",
            "utilisation",
            "self-inflicted delay ms",
            "packet delay p95 ms",
            "omniscient p95 ms",
            "SSIM dB mean",
            "frame delay ms mean",
            "frame delay ms p95",
        ]
        .map(String::from),
    );
    let rows = with
        .iter()
        .map(|(r, n)| {
            let s = &r.result.summary;
            let video = s.frames_shown > 0;
            let v = |x: Option<f64>, d| if video { num(x, d) } else { "-".into() };
            let mut row = vec![r.link().to_string(), r.name()];
            row.extend(cells.iter().map(|(_, value)| value(r)));
            row.extend([
                format!("{:.0}", n.scored_from_s),
                format!("{:.0}", n.throughput_kbps),
                format!("{:.0}", n.capacity_kbps),
                format!("{:.2}", n.utilisation),
                num(n.self_inflicted_delay_ms, 0),
                num(n.delay_p95_ms, 0),
                num(n.omniscient_delay_p95_ms, 0),
                v(s.ssim_db_mean, 2),
                v(s.delay_mean_ms, 0),
                v(s.delay_p95_ms, 0),
            ]);
            row
        })
        .collect();
    Some(Table { header, rows })
}

/// The bound's scheme name (the oracle, which reads the link's future).
fn bound() -> &'static str {
    registry::the(SchemeRole::Bound)
}

/// The runs below the oracle's delay, as [`below_the_bound`] sorts them: violations only.
pub fn bound_violations(runs: &[Entry]) -> Vec<String> {
    below_the_bound(runs).violations
}

/// Runs with less delay than the oracle, in two kinds.
#[derive(Debug, Default, PartialEq)]
pub struct BelowTheBound {
    /// At the oracle's quality or better: the bound is broken (a bug, or a link the oracle
    /// misread), e.g. "bound violated: salsify-2c p95 812 ms < oracle 905 ms (link cellular)".
    pub violations: Vec<String>,
    /// At lower quality: no contradiction, and each line says why.
    pub notes: Vec<String>,
}

/// The oracle is the bound on delay at the quality it reaches: on a link (and queue, delay,
/// seed) where it ran, no scheme showing pictures at least as good should have a lower mean
/// or p95 delay. A scheme below its delay at lower quality (a sender using a fraction of the
/// link, or still ramping up) is noted with its SSIM and utilisation beside the oracle's,
/// not flagged. Nothing when the group did not run the oracle.
pub fn below_the_bound(runs: &[Entry]) -> BelowTheBound {
    let key = |r: &Entry| {
        let e = &r.plan.experiment;
        (
            r.link().to_string(),
            e.link.queue_packets,
            e.link.delay_ms,
            e.seed,
        )
    };
    let mut out = BelowTheBound::default();
    // A swept oracle bounds with its most delay-first point: the lowest of its delays.
    let oracles: Vec<&Entry> = runs.iter().filter(|r| r.scheme() == bound()).collect();
    let mut firsts: Vec<&Entry> = Vec::new();
    for o in &oracles {
        if !firsts.iter().any(|f| key(f) == key(o)) {
            firsts.push(o);
        }
    }
    for oracle in firsts {
        let same: Vec<&&Entry> = oracles.iter().filter(|o| key(o) == key(oracle)).collect();
        let lowest = |f: fn(&RunResult) -> Option<f64>| {
            same.iter()
                .filter_map(|o| f(o.result))
                .min_by(f64::total_cmp)
        };
        // Its quality: the best of its points' (the bound is on delay at that quality).
        let best = |f: fn(&RunResult) -> Option<f64>| {
            same.iter()
                .filter_map(|o| f(o.result))
                .max_by(f64::total_cmp)
        };
        let o = Bound {
            delay_p95_ms: lowest(|r| r.summary.delay_p95_ms),
            delay_mean_ms: lowest(|r| r.summary.delay_mean_ms),
            ssim_db_mean: best(|r| r.summary.ssim_db_mean),
            utilisation: best(|r| r.summary.link_utilisation),
        };
        for r in runs
            .iter()
            .filter(|r| r.scheme() != bound() && key(r) == key(oracle))
        {
            let s = &r.result.summary;
            for (what, theirs, bound) in [
                ("p95", s.delay_p95_ms, o.delay_p95_ms),
                ("mean", s.delay_mean_ms, o.delay_mean_ms),
            ] {
                // A run with no delay at all (nothing shown) is not below anything; an
                // oracle with none is above every scheme that showed a frame.
                let below = match (theirs, bound) {
                    (Some(t), Some(b)) => t < b,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if below {
                    let (k, q, d, seed) = key(r);
                    let mut at = format!("link {k}");
                    if runs.iter().any(|x| key(x) != (k.clone(), q, d, seed)) {
                        at += &format!(", queue {q}, delay {d} ms, seed {seed}");
                    }
                    let bound = bound.map_or("(nothing shown)".into(), |b| format!("{b:.0} ms"));
                    let worse = match (s.ssim_db_mean, o.ssim_db_mean) {
                        (Some(theirs), Some(oracle)) => theirs < oracle,
                        _ => false,
                    };
                    if worse {
                        out.notes.push(format!(
                            "{} {what} {} ms is below the oracle's {bound} ({at}) at lower quality \
                             (SSIM {} dB against the oracle's {} dB; link utilisation {} against \
                             {}): not a violation, since the oracle bounds the delay of a sender \
                             reaching its quality, and a sender that uses a fraction of the link \
                             (or is still ramping up) queues less",
                            r.name(),
                            num(theirs, 0),
                            num(s.ssim_db_mean, 2),
                            num(o.ssim_db_mean, 2),
                            num(s.link_utilisation, 2),
                            num(o.utilisation, 2),
                        ));
                    } else {
                        out.violations.push(format!(
                            "bound violated: {} {what} {} ms < oracle {bound} ({at})",
                            r.name(),
                            num(theirs, 0),
                        ));
                    }
                }
            }
        }
    }
    out
}

/// The oracle's delays a run is compared with, and the quality and share of the link they
/// came with.
struct Bound {
    delay_p95_ms: Option<f64>,
    delay_mean_ms: Option<f64>,
    ssim_db_mean: Option<f64>,
    utilisation: Option<f64>,
}

/// The paper's name of the link `r` ran on, if the paper measured it: only the downlink of a
/// trace, as the paper did (a `trace-up:` run goes the other way on the same trace).
pub(super) fn paper_trace_of(r: &Entry) -> Option<&'static str> {
    if r.plan.experiment.link.uplink {
        return None;
    }
    published::paper_trace(r.link())
}

/// The paper's figure 11 on one trace: (p95 delay ms, mean SSIM dB) of each system.
struct PaperResult {
    trace: &'static str,
    salsify: (f64, f64),
    webrtc: (f64, f64),
}

/// The paper's Salsify-2c and WebRTC numbers on the trace `r` ran over, if the paper
/// measured it in that direction.
fn paper_numbers(r: &Entry) -> Option<PaperResult> {
    let trace = paper_trace_of(r)?;
    let point =
        |system| published::published(trace, system).map(|p| (p.delay_p95_ms, p.ssim_db_mean));
    Some(PaperResult {
        trace,
        salsify: point("Salsify-2c")?,
        webrtc: point("WebRTC")?,
    })
}

/// One scheme's runs on a link for the headline comparison: simulated ones when there are
/// any (else live), of one experiment cell (queue, propagation delay, seed, direction: those of
/// the first), the scheme's default point first (or, where the sweep left it out, its first
/// point, which the row names).
fn headline_points<'a, 'b>(runs: &'b [Entry<'a>], link: &str, scheme: &str) -> Vec<&'b Entry<'a>> {
    let mine: Vec<&Entry> = runs
        .iter()
        .filter(|r| r.link() == link && r.scheme() == scheme)
        .collect();
    let simulated: Vec<&Entry> = mine.iter().copied().filter(|r| !r.live()).collect();
    let pool = if simulated.is_empty() {
        mine
    } else {
        simulated
    };
    let cell = |r: &Entry| {
        let e = &r.plan.experiment;
        (e.link.queue_packets, e.link.delay_ms, e.seed, e.link.uplink)
    };
    let Some(first) = pool.first() else {
        return Vec::new();
    };
    let mut points: Vec<&Entry> = pool
        .iter()
        .copied()
        .filter(|r| cell(r) == cell(first))
        .collect();
    if let Some(i) = points.iter().position(|r| r.setting().is_empty()) {
        let default = points.remove(i);
        points.insert(0, default);
    }
    points
}

/// Salsify-2c against the conventional scheme per link: p95 delay ratio and SSIM
/// difference, beside the paper's where the trace is one the paper used. A link's first row
/// sets each scheme's default point against the other's; swept points follow, each against
/// the other scheme's default; the setting columns say which point each row shows.
pub fn comparison_table(runs: &[Entry]) -> Table {
    let header = [
        "link",
        "Salsify-2c setting",
        "conventional setting",
        "Salsify-2c p95 ms",
        "conventional p95 ms",
        "p95 ratio (conv / Salsify)",
        "Salsify-2c SSIM dB",
        "conventional SSIM dB",
        "SSIM diff dB",
        "paper: p95 ms (Salsify / WebRTC), ratio",
        "paper: SSIM dB (Salsify / WebRTC), diff",
    ]
    .map(String::from)
    .to_vec();
    let mut links: Vec<&str> = Vec::new();
    for r in runs {
        if !links.contains(&r.link()) {
            links.push(r.link());
        }
    }
    let mut rows = Vec::new();
    for link in links {
        let salsify = headline_points(runs, link, registry::the(SchemeRole::Salsify));
        let conventional = headline_points(runs, link, registry::the(SchemeRole::Webrtc));
        let (Some(&s0), Some(&c0)) = (salsify.first(), conventional.first()) else {
            continue;
        };
        let pairs = std::iter::once((s0, c0))
            .chain(salsify[1..].iter().map(|&s| (s, c0)))
            .chain(conventional[1..].iter().map(|&c| (s0, c)));
        for (s, c) in pairs {
            rows.push(comparison_row(link, s, c));
        }
    }
    Table { header, rows }
}

/// One row of [`comparison_table`].
fn comparison_row(link: &str, s_run: &Entry, c_run: &Entry) -> Vec<String> {
    let paper = paper_numbers(s_run);
    let (s, c) = (&s_run.result.summary, &c_run.result.summary);
    let ratio = match (s.delay_p95_ms, c.delay_p95_ms) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a),
        _ => None,
    };
    let diff = match (s.ssim_db_mean, c.ssim_db_mean) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };
    let (paper_delay, paper_ssim) = match paper {
        Some(PaperResult {
            trace,
            salsify: (sd, ss),
            webrtc: (wd, ws),
        }) => (
            format!("{trace}: {sd:.0} / {wd:.0}, {:.1}x", wd / sd),
            format!("{ss:.1} / {ws:.1}, {:+.1}", ss - ws),
        ),
        None => ("-".into(), "-".into()),
    };
    vec![
        link.to_string(),
        setting_cell(s_run),
        setting_cell(c_run),
        num(s.delay_p95_ms, 0),
        num(c.delay_p95_ms, 0),
        ratio.map_or("-".into(), |r| format!("{r:.2}x")),
        num(s.ssim_db_mean, 2),
        num(c.ssim_db_mean, 2),
        diff.map_or("-".into(), |d| format!("{d:+.2}")),
        paper_delay,
        paper_ssim,
    ]
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
    use super::*;

    /// Runs that differ only in their queue (experiment 7) are told apart in the network
    /// table as in the group's: a queue column, and no two rows with the same labels.
    #[test]
    fn the_network_table_names_the_queue_where_runs_differ_in_it() {
        let mut made = runs(&[
            ("salsify-2c", "cellular", 1, Some(80.0), Some(200.0)),
            ("salsify-2c", "cellular", 1, Some(90.0), Some(250.0)),
        ]);
        for ((plan, result), queue) in made.iter_mut().zip([64, 1024]) {
            plan.experiment.link.queue_packets = queue;
            result.summary.network = Some(salsify_metrics::SproutMeasure {
                scored_from_s: 0.0,
                scored_s: 10.0,
                throughput_kbps: 1000.0,
                capacity_kbps: 2000.0,
                utilisation: 0.5,
                delay_p95_ms: Some(150.0),
                omniscient_delay_p95_ms: Some(50.0),
                self_inflicted_delay_ms: Some(100.0),
            });
        }
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = network_table(&entries).unwrap();
        assert_eq!(t.header[..3], ["link", "scheme", "queue (pkts)"]);
        assert_eq!(t.rows[0][..3], ["cellular", "salsify-2c", "64"]);
        assert_eq!(t.rows[1][2], "1024");
        let g = group_table(&entries);
        assert!(g.header.contains(&"queue (pkts)".to_string()));
        assert!(!g.header.contains(&"seed".to_string()));
        let one = network_table(&entries[..1]).unwrap();
        assert_eq!(one.header[2], "scored from (s)");
    }

    /// A live run is set beside the simulated run with exactly its experiment, not beside
    /// another seed's; without a twin there is no table.
    #[test]
    fn a_live_run_is_set_beside_its_twin() {
        let mut made = runs(&[
            ("salsify-2c", "wifi", 1, Some(100.0), Some(200.0)),
            ("salsify-2c", "wifi", 1, Some(110.0), Some(230.0)),
            ("salsify-2c", "wifi", 2, Some(300.0), Some(400.0)),
        ]);
        made[1].0.live = true;
        made[1].1.summary.ssim_db_mean = Some(10.5);
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = twin_table(&entries).unwrap();
        assert_eq!(t.rows.len(), 1);
        assert_eq!(
            t.rows[0],
            [
                "wifi",
                "salsify-2c",
                "10.00 / 10.50",
                "+0.50",
                "100 / 110",
                "+10%",
                "200 / 230"
            ]
        );
        assert!(twin_table(&entries[..1]).is_none());
        assert!(twin_table(&[entries[1], entries[2]]).is_none());
    }

    #[test]
    fn tables_render_and_escape() {
        let t = Table {
            header: vec!["a".into(), "b<".into()],
            rows: vec![vec!["1".into(), "x & y".into()]],
        };
        assert_eq!(t.markdown(), "| a | b< |\n| --- | --- |\n| 1 | x & y |\n");
        assert!(t.html().contains("<th>b&lt;</th>"));
        assert!(t.html().contains("<td>x &amp; y</td>"));
    }

    #[test]
    fn schemes_below_the_oracle_are_flagged() {
        let runs = runs(&[
            ("oracle", "cellular", 1, Some(300.0), Some(900.0)),
            ("salsify-2c", "cellular", 1, Some(250.0), Some(1200.0)),
            ("conventional", "cellular", 1, Some(400.0), Some(850.0)),
            ("vidaptive", "cellular", 1, None, None),
            // Another seed: compared with no oracle, so never flagged.
            ("salsify-2c", "cellular", 2, Some(10.0), Some(10.0)),
            // A link without the oracle.
            ("salsify-2c", "wifi", 1, Some(10.0), Some(10.0)),
            // An oracle that showed nothing is below nobody that showed something.
            ("oracle", "dropout", 1, None, None),
            ("conventional", "dropout", 1, Some(5000.0), Some(9000.0)),
        ]);
        let entries: Vec<Entry> = runs
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let flags = bound_violations(&entries);
        assert_eq!(
            flags,
            [
                "bound violated: salsify-2c mean 250 ms < oracle 300 ms \
                 (link cellular, queue 256, delay 20 ms, seed 1)",
                "bound violated: conventional p95 850 ms < oracle 900 ms \
                 (link cellular, queue 256, delay 20 ms, seed 1)",
                "bound violated: conventional p95 9000 ms < oracle (nothing shown) \
                 (link dropout, queue 256, delay 20 ms, seed 1)",
                "bound violated: conventional mean 5000 ms < oracle (nothing shown) \
                 (link dropout, queue 256, delay 20 ms, seed 1)",
            ],
            "{flags:#?}"
        );
        // One link, one seed: the key is just the link.
        let one: Vec<Entry> = entries[..2].to_vec();
        assert_eq!(
            bound_violations(&one),
            ["bound violated: salsify-2c mean 250 ms < oracle 300 ms (link cellular)"]
        );
        // No oracle, no flags.
        assert!(bound_violations(&entries[1..6]).is_empty());
    }

    /// The paper measured the downlink: a run over a trace's uplink has no paper numbers.
    #[test]
    fn paper_traces_are_recognised_downlink_only() {
        let mut made = runs(&[
            ("salsify-2c", "Verizon-LTE-short", 1, None, None),
            ("salsify-2c", "ATT-LTE-driving", 1, None, None),
            ("salsify-2c", "TMobile-LTE-short", 1, None, None),
            ("salsify-2c", "ATT-LTE-driving-up", 1, None, None),
            // Another drive on the same network is not the paper's link.
            ("salsify-2c", "ATT-LTE-driving-2016", 1, None, None),
        ]);
        made[3].0.experiment.link.uplink = true;
        let trace = |i: usize| {
            let (plan, result) = &made[i];
            paper_numbers(&Entry { plan, result }).map(|p| p.trace)
        };
        assert_eq!(trace(0), Some("Verizon LTE"));
        assert_eq!(trace(1), Some("AT&T LTE"));
        assert_eq!(trace(2), None);
        assert_eq!(trace(3), None);
        assert_eq!(trace(4), None);
    }

    /// Below the oracle's delay at lower quality is explained, not flagged.
    #[test]
    fn lower_quality_below_the_bound_is_a_note() {
        let mut made = runs(&[
            ("oracle", "cellular", 1, Some(300.0), Some(900.0)),
            ("conventional", "cellular", 1, Some(150.0), Some(800.0)),
        ]);
        made[0].1.summary.ssim_db_mean = Some(15.0);
        made[1].1.summary.ssim_db_mean = Some(9.0);
        made[1].1.summary.link_utilisation = Some(0.14);
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let below = below_the_bound(&entries);
        assert!(below.violations.is_empty(), "{below:?}");
        assert_eq!(below.notes.len(), 2, "{below:?}");
        assert!(
            below.notes[0].starts_with("conventional p95 800 ms is below the oracle's 900 ms"),
            "{below:?}"
        );
        assert!(below.notes[0].contains("SSIM 9.00 dB against the oracle's 15.00 dB"));
        assert!(below.notes[0].contains("link utilisation 0.14 against 0.50"));
    }

    #[test]
    fn a_swept_oracle_bounds_with_its_lowest_delays() {
        let runs = runs(&[
            ("oracle", "cellular", 1, Some(300.0), Some(900.0)),
            ("oracle", "cellular", 1, Some(100.0), Some(100.0)),
            ("salsify-2c", "cellular", 1, Some(250.0), Some(1200.0)),
            ("conventional", "cellular", 1, Some(150.0), Some(90.0)),
        ]);
        let entries: Vec<Entry> = runs
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        // salsify-2c is below the slower oracle point but not below the lowest: not flagged.
        assert_eq!(
            bound_violations(&entries),
            ["bound violated: conventional p95 90 ms < oracle 100 ms (link cellular)"]
        );
    }
}
