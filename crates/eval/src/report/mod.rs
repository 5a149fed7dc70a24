//! The evaluation report: summary tables, Salsify-2c against the conventional scheme next
//! to the paper's numbers, a flagged line under a group's table for every scheme whose mean
//! or p95 delay is below the oracle's on the same link, and figures, as markdown (figures as SVG files beside it) and as
//! one self-contained HTML page (figures inline). Built only from finished runs on disk, so
//! it is the same whichever machines and shards produced them.

pub mod audio;
pub mod corpus;
pub mod figures;
#[cfg(test)]
mod fixtures;
pub mod frontier;
pub mod genie;
pub mod paper_table;
pub mod peers;
pub mod plot;
pub mod published;
pub mod style;
pub mod tables;
pub mod two_way;

use std::collections::BTreeMap;
use std::path::Path;

use crate::campaign::{Figure, Plan, PlannedRun, RunResult};
use figures::Drawn;
use tables::{escape, Entry, Table};

/// What the report is about, beyond the runs.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The command that produced the runs, as a user would type it.
    pub command: String,
    /// The machine it ran on.
    pub machine: String,
}

/// One section per matrix group.
struct Section {
    title: String,
    table: Table,
    /// The tables after the group's, each with its heading (if any) and intro: Sprout's
    /// measurement of the runs, live cells beside their twins, each peer against
    /// Salsify-2c's frontier, where the group has them.
    extras: Vec<Extra>,
    /// Schemes whose delay is below the oracle's at its quality or better
    /// ([`tables::below_the_bound`]).
    violations: Vec<String>,
    /// Schemes below the oracle's delay at lower quality, each with why that is no violation.
    bound_notes: Vec<String>,
    figures: Vec<Drawn>,
    missing: Vec<String>,
}

/// A table under a group's own, with what it is.
struct Extra {
    /// A heading of its own, or `None` to follow on.
    title: Option<&'static str>,
    intro: &'static str,
    table: Table,
}

impl Extra {
    fn new(
        title: Option<&'static str>,
        intro: &'static str,
        table: Option<Table>,
    ) -> Option<Extra> {
        Some(Extra {
            title,
            intro,
            table: table?,
        })
    }
}

/// A built report.
pub struct Report {
    /// Markdown, referring to `figures/NAME.svg`.
    pub markdown: String,
    /// One HTML page with every figure inline.
    pub html: String,
    /// The figures.
    pub figures: Vec<Drawn>,
}

/// Builds the report of `plan` from the finished runs in `results` (by run id).
pub fn build(plan: &Plan, results: &BTreeMap<String, RunResult>, context: &Context) -> Report {
    let planned: BTreeMap<&str, &PlannedRun> =
        plan.runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let entries = |ids: &[String]| -> Vec<Entry> {
        ids.iter()
            .filter_map(|id| {
                Some(Entry {
                    plan: planned.get(id.as_str())?,
                    result: results.get(id)?,
                })
            })
            .collect()
    };
    let mut sections = Vec::new();
    let mut comparison_runs = Vec::new();
    let genies = genie::Genies::default();
    let every_run = one_way(entries(
        &plan.runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
    ));
    for g in &plan.groups {
        let runs = entries(&g.runs);
        if g.group.name == "cellular" || comparison_runs.is_empty() {
            comparison_runs = one_way(runs.clone());
        }
        let mut drawn = Vec::new();
        for figure in &g.group.figures {
            drawn.extend(match figure {
                Figure::QualityDelay => figures::quality_delay(&g.group.name, &runs),
                Figure::TimeSeries => figures::time_series(&g.group.name, &runs),
                Figure::QueueSize => figures::queue_size(&g.group.name, &runs),
                Figure::Sprout => figures::sprout(&g.group.name, &runs),
                Figure::Frontier => frontier::frontier(&g.group.name, &runs, &genies),
            });
        }
        // Every run that carried audio, whatever figures the group asked for.
        drawn.extend(audio::figures(&g.group.name, &runs));
        drawn.extend(corpus::figures(&g.group, &runs));
        let below = tables::below_the_bound(&runs);
        sections.push(Section {
            title: if g.group.title.is_empty() {
                g.group.name.clone()
            } else {
                g.group.title.clone()
            },
            table: tables::group_table(&runs),
            extras: [
                Extra::new(None, NETWORK_INTRO, tables::network_table(&runs)),
                Extra::new(None, TWINS_INTRO, tables::twin_table(&runs)),
                Extra::new(Some(PEERS_TITLE), PEERS_INTRO, peers::peer_table(&runs)),
                Extra::new(Some(AUDIO_TITLE), AUDIO_INTRO, audio::table(&runs)),
                Extra::new(Some(TWO_WAY_TITLE), TWO_WAY_INTRO, two_way::table(&runs)),
            ]
            .into_iter()
            .flatten()
            .chain(
                corpus::extras(&g.group, &runs)
                    .into_iter()
                    .map(|(title, intro, table)| Extra {
                        title,
                        intro,
                        table,
                    }),
            )
            .collect(),
            violations: below.violations,
            bound_notes: below.notes,
            figures: drawn,
            missing: g
                .runs
                .iter()
                .filter(|id| !results.contains_key(*id))
                .cloned()
                .collect(),
        });
    }
    let comparison = tables::comparison_table(&comparison_runs);
    let paper = paper_table::paper_table(&every_run);
    let finished = plan
        .runs
        .iter()
        .filter(|r| results.contains_key(&r.id))
        .count();
    let status = format!(
        "{finished} of {} runs finished.  \n{}",
        plan.runs.len(),
        code_line(results.values().map(|r| r.meta.code.as_str()), crate::CODE)
    );
    Report {
        markdown: markdown(&sections, &comparison, &paper, context, &status),
        html: html(&sections, &comparison, &paper, context, &status),
        figures: sections.into_iter().flat_map(|s| s.figures).collect(),
    }
}

/// The runs of one direction at a time: the paper measured no two-way call, so a call is
/// set beside the paper (and in the headline comparison) nowhere.
fn one_way(runs: Vec<Entry<'_>>) -> Vec<Entry<'_>> {
    runs.into_iter()
        .filter(|e| !e.plan.experiment.two_way)
        .collect()
}

/// Which code made the runs (commit and how many runs each) and which drew the report.
fn code_line<'a>(codes: impl Iterator<Item = &'a str>, report: &str) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for code in codes {
        *counts.entry(code).or_default() += 1;
    }
    let runs: Vec<String> = counts
        .iter()
        .map(|(code, n)| {
            let code = if code.is_empty() {
                "not recorded"
            } else {
                code
            };
            format!("{code} ({n} runs)")
        })
        .collect();
    format!(
        "Code: runs made by commit {}; report drawn by commit {report}.",
        runs.join(", ")
    )
}

const INTRO: &str =
    "A simulated run (`sim` in the tables) is a virtual-time simulation: the real VP8 codec \
(libvpx) encodes and decodes every picture, the link replays delivery opportunities with \
Mahimahi's rules, and codec time is modelled; such runs are deterministic: the same matrix and \
seeds give the same numbers. A run marked `sim, live clip` is a live cell's simulated twin: \
its camera plays the live cell's barcoded excerpt, looped as the live camera loops it, where \
other simulated runs play the whole clip forwards and backwards. A live run (`live`; dashed \
lines and outlined markers in the figures) ran in real time on this machine through the link relay, one at a time after the \
simulated runs, and was scored black-box by the barcode in each picture; its numbers depend \
on how busy the machine was (the 1-minute load average before and after is in its row), and \
its video bit rate and utilisation are not known from outside the sender (`-`). SSIM is \
ffmpeg's (luma), in dB; delay is the paper's: display time minus capture time, where a \
picture never shown counts until the next one is shown. QoE uses the paper's two fitted \
models (video call, driving).";

const TWINS_INTRO: &str = "Each live cell of ours beside its simulated twin: the same experiment, \
simulated, its camera playing the same barcoded excerpt the same way. A single live run is one \
draw: where a scheme's control loops can take one of two paths on a small difference in timing \
(GoogCC with the conventional scheme's quality scaler), runs of one cell differ by a decibel and \
more, and the twin follows one path.";

const NETWORK_INTRO: &str = "Sprout's measurement of the video link (Winstein et al., NSDI 2013): \
throughput and capacity over the scored window; the per-packet delay function (at each moment, \
the time since the newest packet that has arrived was sent) at its 95th percentile; the same for \
an omniscient sender that sends each packet to arrive exactly at a delivery opportunity; \
self-inflicted delay is their difference.";

const PEERS_TITLE: &str = "Each peer against Salsify-2c's frontier";

const PEERS_INTRO: &str = "Every other scheme's run set against all of Salsify-2c's runs of the \
same link and video (its sweep, both budgets): Salsify-2c's SSIM at the peer's delay, and its \
delay at the peer's SSIM, read by linear interpolation between the neighbouring Pareto-efficient \
points of the sweep (a point with more delay and no more SSIM than another is left out). Where \
the peer's value is outside the efficient points' range the cell says \"beyond the sweep\" \
rather than extrapolate. Positive differences and ratios below 1 favour Salsify-2c. The oracle \
is the bound, not a peer.";

const AUDIO_TITLE: &str = "The call's audio";

const AUDIO_INTRO: &str = "The runs that carried audio beside the video (issue 46; `audio` in \
the experiment): real Opus packets in the same link queue, played by an adaptive jitter buffer \
that, with `sync video`, holds the audio back to the delay of the pictures shown. Mouth-to-ear \
delay is capture to playout of each audio frame, any lip-sync hold included; concealed: frames \
played whose packet was lost or late and not recovered by FEC; skipped: frames sent but never \
heard (the jitter buffer caught up); stalled: frames of filler played while waiting out a \
stalled link (the audio held up, none lost); played faster: frames played at 1.3-2x speed, pitch kept, \
to shed the delay a stall added; A/V skew in window: the share of pictures shown while audio \
played whose audio was at most 45 ms ahead or 125 ms behind (ITU-R BT.1359), from what the \
receiver actually played and showed. Each run's delay and skew over time are in its figures \
below. Chromium's live cells carry no audio.";

const TWO_WAY_TITLE: &str = "One-way against two-way";

const TWO_WAY_INTRO: &str = "Each direction of a two-way call (issue 54; `two_way` in the \
experiment) beside the same direction run alone: A to B over the trace's downlink, B to A over \
its uplink, where in the call each link also carries the other direction's ACKs, queued behind \
its video (in the group's own table a call's row, `sim, two-way`, is its A-to-B direction). ACKs queued: the mean time a direction's feedback waited and was serialised at the \
bottleneck (the delay less propagation). The bar: each direction's SSIM within 0.5 dB and its \
mean and p95 delay within 1.15x of the same direction one-way (judged on the unrounded figures).";

const COMPARISON_TITLE: &str =
    "Salsify-2c against the conventional scheme (WebRTC-style GCC + libvpx CBR)";

const PAPER_TITLE: &str = "The paper's systems beside ours";

const PAPER_INTRO: &str = "Every link the paper measured or a live group ran on: our runs at \
figure 11's 256-packet queue, simulated and live, and the paper's published points (figure 11 and \
the ablations of section 5, as `shared/PAPER-NOTES.md` reads them).";

fn markdown(
    sections: &[Section],
    comparison: &Table,
    paper: &Table,
    c: &Context,
    status: &str,
) -> String {
    let mut md = String::from("# Salsify evaluation\n\n");
    md += &format!(
        "Command: `{}`  \nMachine: {}  \n{status}\n\n{INTRO}\n\n",
        c.command, c.machine
    );
    if !comparison.rows.is_empty() {
        md += &format!("## {COMPARISON_TITLE}\n\n");
        md += &comparison.markdown();
    }
    if !paper.rows.is_empty() {
        md += &format!("\n## {PAPER_TITLE}\n\n{PAPER_INTRO}\n\n");
        md += &paper.markdown();
        md += &format!("\n{}\n", published::SYSTEMS);
    }
    for s in sections {
        md += &format!("\n## {}\n\n", s.title);
        md += &s.table.markdown();
        for e in &s.extras {
            if let Some(title) = e.title {
                md += &format!("\n### {title}\n");
            }
            md += &format!("\n{}\n\n", e.intro);
            md += &e.table.markdown();
        }
        if !s.violations.is_empty() {
            md += "\n";
            for v in &s.violations {
                md += &format!("> **⚠ {v}**  \n");
            }
        }
        for n in &s.bound_notes {
            md += &format!("\nBelow the oracle's delay: {n}.\n");
        }
        if !s.missing.is_empty() {
            md += &format!("\nNot finished: {}\n", s.missing.join(", "));
        }
        for f in &s.figures {
            md += &format!(
                "\n![{}](figures/{}.svg)\n\n*{}*\n",
                f.name, f.name, f.caption
            );
        }
    }
    md
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}\
th{background:#f3f3f3}td:first-child,td:nth-child(2){text-align:left}figure{margin:1.5em 0}\
figcaption{font-size:90%;color:#444;max-width:800px}.violation{color:#b00;font-weight:bold}svg{max-width:100%;height:auto}code{background:#f3f3f3}";

fn html(
    sections: &[Section],
    comparison: &Table,
    paper: &Table,
    c: &Context,
    status: &str,
) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Salsify evaluation</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Salsify evaluation</h1>\n"
    );
    h += &format!(
        "<p>Command: <code>{}</code><br>Machine: {}<br>{}</p>\n<p>{}</p>\n",
        escape(&c.command),
        escape(&c.machine),
        escape(status),
        escape(INTRO)
    );
    if !comparison.rows.is_empty() {
        h += &format!("<h2>{}</h2>\n", escape(COMPARISON_TITLE));
        h += &comparison.html();
    }
    if !paper.rows.is_empty() {
        h += &format!(
            "<h2>{}</h2>\n<p>{}</p>\n",
            escape(PAPER_TITLE),
            escape(PAPER_INTRO)
        );
        h += &paper.html();
        h += &format!("<p>{}</p>\n", escape(published::SYSTEMS));
    }
    for s in sections {
        h += &format!("<h2>{}</h2>\n", escape(&s.title));
        h += &s.table.html();
        for e in &s.extras {
            if let Some(title) = e.title {
                h += &format!("<h3>{}</h3>\n", escape(title));
            }
            h += &format!("<p>{}</p>\n", escape(e.intro));
            h += &e.table.html();
        }
        for v in &s.violations {
            h += &format!("<p class=\"violation\">&#9888; {}</p>\n", escape(v));
        }
        for n in &s.bound_notes {
            h += &format!("<p>Below the oracle's delay: {}.</p>\n", escape(n));
        }
        if !s.missing.is_empty() {
            h += &format!("<p>Not finished: {}</p>\n", escape(&s.missing.join(", ")));
        }
        for f in &s.figures {
            h += &format!(
                "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                escape(&f.name),
                f.svg,
                escape(&f.caption)
            );
        }
    }
    h + "</body>\n</html>\n"
}

/// Writes `report.md`, `report.html` and `figures/*.svg` into `dir`.
pub fn write(report: &Report, dir: &Path) -> std::io::Result<()> {
    let figures = dir.join("figures");
    std::fs::create_dir_all(&figures)?;
    for f in &report.figures {
        salsify_codec::output::write(&figures.join(format!("{}.svg", f.name)), &f.svg)?;
    }
    salsify_codec::output::write(&dir.join("report.md"), &report.markdown)?;
    salsify_codec::output::write(&dir.join("report.html"), &report.html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_says_which_commits_made_its_runs() {
        let line = code_line(["abc1234", "", "abc1234", "def5678"].into_iter(), "def5678");
        assert_eq!(
            line,
            "Code: runs made by commit not recorded (1 runs), abc1234 (2 runs), def5678 (1 runs); \
             report drawn by commit def5678."
        );
    }

    /// Every `id` attribute's value in `page`, in order.
    fn ids(page: &str) -> Vec<&str> {
        page.match_indices(" id=\"")
            .map(|(i, m)| {
                let rest = &page[i + m.len()..];
                &rest[..rest.find('"').unwrap_or(rest.len())]
            })
            .collect()
    }

    /// The page inlines every figure: no two elements may share an id (each chart's clip
    /// included), or a browser clips every chart with the first one's rectangle.
    #[test]
    fn a_report_page_has_no_duplicate_ids() {
        use plot::{Axis, Chart, Series};
        let chart = |title: &str, y: f64| {
            let mut c = Chart::new(title, Axis::linear("delay (ms)"), Axis::linear("SSIM (dB)"));
            c.push(Series::line_with_points(
                "salsify-2c",
                vec![(50.0, y), (80.0, y + 1.0)],
            ));
            c.push(Series::line(
                "oracle",
                vec![(40.0, y - 1.0), (90.0, y + 2.0)],
            ));
            c.to_svg()
        };
        let figure = |name: &str, svg: String| Drawn {
            name: name.into(),
            caption: "a caption".into(),
            svg,
        };
        let sections = [Section {
            title: "cellular".into(),
            table: Table::default(),
            extras: vec![],
            violations: vec![],
            bound_notes: vec![],
            figures: vec![
                figure("a-quality-delay", chart("Verizon", 10.0)),
                figure("b-quality-delay", chart("TMobile", 12.0)),
                figure("c-quality-delay", chart("TMobile", 13.0)),
            ],
            missing: vec![],
        }];
        let none = Table::default();
        let page = html(
            &sections,
            &none,
            &none,
            &Context::default(),
            "3 of 3 runs finished.",
        );
        let ids = ids(&page);
        assert_eq!(
            ids.iter().filter(|i| i.starts_with("plot-")).count(),
            3,
            "{ids:?}"
        );
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "duplicate ids: {ids:?}");
        // Each chart refers to its own clip.
        for id in ids.iter().filter(|i| i.starts_with("plot-")) {
            assert_eq!(page.matches(&format!("url(#{id})")).count(), 1, "{id}");
        }
        // And a chart drawn twice draws the same document.
        assert_eq!(chart("Verizon", 10.0), chart("Verizon", 10.0));
    }

    /// A table of one cell under its group's.
    fn extra(title: Option<&'static str>, intro: &'static str, header: &str, cell: &str) -> Extra {
        Extra {
            title,
            intro,
            table: Table {
                header: vec![header.into()],
                rows: vec![vec![cell.into()]],
            },
        }
    }

    /// A bound violation is a visible line under its group's table in both renderings, and
    /// the network table is shown where a group has one.
    #[test]
    fn bound_violations_are_shown() {
        let flag = "bound violated: salsify-2c p95 812 ms < oracle 905 ms (link cellular)";
        let sections = [Section {
            title: "cellular".into(),
            table: Table::default(),
            extras: vec![
                extra(None, NETWORK_INTRO, "self-inflicted delay ms", "62"),
                extra(None, TWINS_INTRO, "live - twin dB", "+0.13"),
                extra(
                    Some(PEERS_TITLE),
                    PEERS_INTRO,
                    "Salsify-2c p95 ms at the peer's SSIM (ratio)",
                    "130 (0.87x)",
                ),
            ],
            violations: vec![flag.into()],
            bound_notes: vec![],
            figures: vec![],
            missing: vec![],
        }];
        let c = Context::default();
        let none = Table::default();
        let md = markdown(&sections, &none, &none, &c, "1 of 1 runs finished.");
        assert!(md.contains(&format!("> **⚠ {flag}**")), "{md}");
        let h = html(&sections, &none, &none, &c, "1 of 1 runs finished.");
        assert!(
            h.contains("<p class=\"violation\">&#9888; bound violated: salsify-2c p95 812 ms &lt; oracle 905 ms (link cellular)</p>"),
            "{h}"
        );
        // Sprout's network table follows the group's table in both.
        assert!(
            md.contains("| self-inflicted delay ms |\n| --- |\n| 62 |"),
            "{md}"
        );
        assert!(md.contains("Sprout's measurement"), "{md}");
        assert!(h.contains("<th>self-inflicted delay ms</th>"), "{h}");
        // The twins' table too.
        assert!(
            md.contains("| live - twin dB |\n| --- |\n| +0.13 |"),
            "{md}"
        );
        assert!(h.contains("<th>live - twin dB</th>"), "{h}");
        // The peers' table under a heading of its own.
        assert!(
            md.contains(&format!(
                "### {PEERS_TITLE}\n\n{PEERS_INTRO}\n\n| Salsify-2c p95"
            )),
            "{md}"
        );
        assert!(
            h.contains("<h3>Each peer against Salsify-2c's frontier</h3>"),
            "{h}"
        );
        assert!(h.contains("<td>130 (0.87x)</td>"), "{h}");
        // No Salsify-2c beside the conventional scheme: no comparison section at all.
        assert!(!md.contains(COMPARISON_TITLE), "{md}");
        assert!(!h.contains("Salsify-2c against the conventional"), "{h}");
        let one = Table {
            header: vec!["link".into()],
            rows: vec![vec!["cellular".into()]],
        };
        let md = markdown(&sections, &one, &none, &c, "");
        assert!(
            md.contains(&format!("## {COMPARISON_TITLE}\n\n| link |")),
            "{md}"
        );
        let h = html(&sections, &one, &none, &c, "");
        assert!(h.contains("<h2>Salsify-2c against the conventional"), "{h}");
    }

    /// The bar of issue 45: Salsify-2c swept over two delay targets beside the conventional
    /// scheme. The headline's first row is the default point's (d 100 ms), and no two rows
    /// of any table, nor two legend entries of a chart, carry the same labels.
    #[test]
    fn a_sweeps_points_are_named_everywhere_and_the_default_leads() {
        use super::fixtures::runs;
        let mut made = runs(&[
            ("salsify-2c", "Verizon-LTE-short", 1, Some(49.0), Some(91.0)),
            (
                "salsify-2c",
                "Verizon-LTE-short",
                1,
                Some(73.0),
                Some(155.0),
            ),
            (
                "conventional",
                "Verizon-LTE-short",
                1,
                Some(34.0),
                Some(74.0),
            ),
        ]);
        let sweep: salsify_schemes::Sweep = toml::from_str("delay_target_ms = [50, 100]").unwrap();
        for (i, d) in [(0, 50.0), (1, 100.0)] {
            let e = &mut made[i].0.experiment;
            let base = e.clone();
            *e = crate::campaign::sweep::variants(&sweep, &base)
                .into_iter()
                .find(|v| crate::campaign::sweep::setting(v).contains("50") == (d == 50.0))
                .unwrap();
            made[i].0.id = format!("run-{i}");
            made[i].1.meta.id = format!("run-{i}");
        }
        let group: crate::campaign::Group = toml::from_str(
            "name = \"sweep\"\nschemes = [\"salsify-2c\", \"conventional\"]\n\
             links = [\"trace:Verizon-LTE-short\"]\nfigures = [\"quality-delay\"]",
        )
        .unwrap();
        let plan = Plan {
            runs: made.iter().map(|(p, _)| p.clone()).collect(),
            groups: vec![crate::campaign::PlannedGroup {
                group,
                runs: made.iter().map(|(p, _)| p.id.clone()).collect(),
            }],
        };
        let results: BTreeMap<String, RunResult> = made
            .iter()
            .map(|(p, r)| (p.id.clone(), r.clone()))
            .collect();
        let report = build(&plan, &results, &Context::default());
        let md = &report.markdown;
        // The headline: the default point first, its p95 the first number.
        let headline: Vec<&str> = md
            .lines()
            .skip_while(|l| !l.starts_with(&format!("## {COMPARISON_TITLE}")))
            .filter(|l| l.starts_with("| Verizon"))
            .collect();
        assert!(
            headline[0].starts_with("| Verizon-LTE-short | default | default | 155 | 74 |"),
            "{md}"
        );
        assert!(headline[1].contains("| d 50 ms | default | 91 |"), "{md}");
        // Every table's rows differ in their words (cells that are not numbers).
        let mut table: Vec<Vec<String>> = Vec::new();
        for line in md.lines().chain(std::iter::once("")) {
            if line.starts_with('|') && !line.starts_with("| ---") {
                let words: Vec<String> = line
                    .split('|')
                    .map(str::trim)
                    .filter(|c| c.parse::<f64>().is_err() && !c.ends_with('x'))
                    .map(String::from)
                    .collect();
                assert!(!table.contains(&words), "rows alike: {words:?}\n{md}");
                table.push(words);
            } else {
                table.clear();
            }
        }
        // The legend names both points of the sweep apart, and the conventional run.
        let svg = &report.figures[0].svg;
        for name in [
            ">salsify-2c</text>",
            ">salsify-2c [d 50 ms]</text>",
            ">conventional</text>",
        ] {
            assert!(svg.contains(name), "{name} not in the figure:\n{svg}");
        }
    }
}

#[cfg(test)]
mod audio_tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use salsify_audio::{write_played_csv, PlayedFrame};
    use salsify_metrics::{AudioFigures, FrameRecord};
    use salsify_time::Instant;

    use super::fixtures::runs;
    use super::{build, Context};
    use crate::campaign::{Plan, PlannedGroup, RunResult};

    /// A run folder's files: 3 s of pictures shown 150 ms after capture, and with audio a
    /// frame played every 20 ms, 100 ms after its capture (so each picture's audio leads
    /// it by 50 ms: outside the window's 45 ms).
    fn write_run(dir: &Path, audio: bool) {
        std::fs::create_dir_all(dir).unwrap();
        let records: Vec<FrameRecord> = (0..90)
            .map(|i| {
                let mut r = FrameRecord::captured(i, Instant::from_millis(i * 33));
                r.display = Some(Instant::from_millis(i * 33 + 150));
                r
            })
            .collect();
        let mut frames = Vec::new();
        salsify_sim::write_frames_csv(&records, &mut frames).unwrap();
        std::fs::write(dir.join("frames.csv"), frames).unwrap();
        if audio {
            let played: Vec<PlayedFrame> = (0..150)
                .map(|i| PlayedFrame {
                    at: Instant::from_millis(100 + 20 * i),
                    frame: Some(i),
                    captured: Instant::from_millis(20 * i),
                    kind: salsify_audio::PlayedKind::Packet,
                })
                .collect();
            let mut csv = Vec::new();
            write_played_csv(&played, Instant::ZERO, &mut csv).unwrap();
            std::fs::write(dir.join("audio.csv"), csv).unwrap();
        }
    }

    /// The report's audio (`audio.rs`): the run with audio gets its two figures, each naming the run, and a row in the audio
    /// table; the run without gets neither.
    #[test]
    fn a_run_with_audio_gets_its_figures_and_row() {
        let root =
            std::env::temp_dir().join(format!("salsify-report-audio-{}", std::process::id()));
        let mut made = runs(&[
            (
                "salsify-2c",
                "Verizon-LTE-short",
                1,
                Some(120.0),
                Some(160.0),
            ),
            (
                "conventional",
                "Verizon-LTE-short",
                1,
                Some(90.0),
                Some(300.0),
            ),
        ]);
        for (i, (plan, result)) in made.iter_mut().enumerate() {
            let audio = i == 0;
            result.dir = root.join(&plan.id);
            write_run(&result.dir, audio);
            if audio {
                plan.experiment.audio = "synthetic".into();
                result.summary.audio = Some(AudioFigures {
                    audio_delay_mean_ms: 100.0,
                    audio_delay_p95_ms: 104.0,
                    audio_concealed_fraction: 0.0125,
                    av_skew_in_window_fraction: Some(0.0),
                    audio_fec_fraction: 0.0,
                    audio_stretch_fraction: 0.0,
                    audio_skipped_fraction: 0.0,
                    audio_stalled_fraction: 0.0,
                    audio_accelerated_fraction: 0.0,
                    audio_frames_played: 150,
                });
            }
        }
        let group: crate::campaign::Group = toml::from_str(
            "name = \"lte\"\nschemes = [\"salsify-2c\", \"conventional\"]\n\
             links = [\"trace:Verizon-LTE-short\"]",
        )
        .unwrap();
        let plan = Plan {
            runs: made.iter().map(|(p, _)| p.clone()).collect(),
            groups: vec![PlannedGroup {
                group,
                runs: made.iter().map(|(p, _)| p.id.clone()).collect(),
            }],
        };
        let results: BTreeMap<String, RunResult> = made
            .iter()
            .map(|(p, r)| (p.id.clone(), r.clone()))
            .collect();
        let report = build(&plan, &results, &Context::default());
        let names: Vec<&str> = report.figures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lte-salsify-2c-verizon-lte-short-1-audio-delay",
                "lte-salsify-2c-verizon-lte-short-1-av-skew"
            ]
        );
        for f in &report.figures {
            assert!(
                f.caption.contains("run salsify-2c-Verizon-LTE-short-1"),
                "{}",
                f.caption
            );
            assert!(
                f.svg.contains(
                    "Verizon-LTE-short: salsify-2c (sim, seed 1; audio synthetic, sync video)"
                ),
                "{}",
                f.svg
            );
        }
        let skew = &report.figures[1];
        assert!(skew.svg.contains("BT.1359: -125..+45 ms"), "{}", skew.svg);
        // Every picture's audio leads by 50 ms, outside the window.
        assert!(
            skew.caption
                .contains("0.0% of its 90 pictures inside the window"),
            "{}",
            skew.caption
        );
        let md = &report.markdown;
        assert!(md.contains("### The call's audio"), "{md}");
        assert!(
            md.contains("| Verizon-LTE-short | salsify-2c | sim | synthetic | video | 100 | 104 | 160 | 1.25 | 0.00 | 0.00 | 0.00 | 0.00 | 0.0 |"),
            "{md}"
        );
        assert!(!md.contains("| conventional | sim | synthetic"), "{md}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
