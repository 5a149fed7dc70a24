//! The paper-style table: one row per link and system, ours simulated or live beside the
//! paper's published points.

use super::published::PUBLISHED;
use super::tables::{num, paper_trace_of, Entry, Table};
use crate::experiment::Clip;

/// Figure 11's DropTail queue: runs at another queue size (experiment 7) are not the
/// paper's figure-11 setting and stay in their own group's table.
const PAPER_QUEUE_PACKETS: u32 = 256;

/// The paper-style table: for every link the paper measured or a live group ran on, our
/// runs at figure 11's queue size (simulated and live, each system once per kind) and the
/// paper's published points; then the paper's links we do not have.
pub fn paper_table(runs: &[Entry]) -> Table {
    let header = [
        "link",
        "system",
        "run",
        "SSIM dB p25",
        "SSIM dB mean",
        "delay ms mean",
        "delay ms p95",
        "frames/s shown",
    ]
    .map(String::from)
    .to_vec();
    let trace_of = |link: &str| {
        runs.iter()
            .filter(|r| r.link() == link)
            .find_map(paper_trace_of)
    };
    let mut links: Vec<&str> = Vec::new();
    for r in runs {
        let wanted =
            paper_trace_of(r).is_some() || runs.iter().any(|x| x.live() && x.link() == r.link());
        if wanted && !links.contains(&r.link()) {
            links.push(r.link());
        }
    }
    let mut rows = Vec::new();
    let mut traces_shown: Vec<&str> = Vec::new();
    for link in links {
        let mut seen: Vec<&str> = Vec::new();
        let mut here: Vec<&Entry> = runs
            .iter()
            .filter(|r| r.link() == link && r.queue() == PAPER_QUEUE_PACKETS)
            .collect();
        // Each system's rows together: simulated, its live cells' twins, live.
        let rank = |r: &Entry| match (r.live(), r.plan.experiment.clip) {
            (false, Clip::Whole) => 0,
            (false, Clip::LiveExcerpt) => 1,
            (true, _) => 2,
        };
        here.sort_by_key(|r| (r.scheme().to_string(), r.setting(), rank(r)));
        for r in here {
            if seen.contains(&r.result.meta.id.as_str()) {
                continue;
            }
            seen.push(&r.result.meta.id);
            let s = &r.result.summary;
            rows.push(vec![
                link.to_string(),
                r.name(),
                r.how().to_string(),
                num(s.ssim_db_p25, 2),
                num(s.ssim_db_mean, 2),
                num(s.delay_mean_ms, 0),
                num(s.delay_p95_ms, 0),
                format!("{:.1}", s.displayed_fps),
            ]);
        }
        if let Some(trace) = trace_of(link) {
            if !traces_shown.contains(&trace) {
                traces_shown.push(trace);
                rows.extend(published_rows(link, trace));
            }
        }
    }
    for p in &PUBLISHED {
        if !traces_shown.contains(&p.trace) {
            traces_shown.push(p.trace);
            rows.extend(published_rows(
                &format!("{} (not in this report)", p.trace),
                p.trace,
            ));
        }
    }
    Table { header, rows }
}

/// The paper's rows of `trace`, under the link name `link`.
fn published_rows(link: &str, trace: &str) -> Vec<Vec<String>> {
    PUBLISHED
        .iter()
        .filter(|p| p.trace == trace)
        .map(|p| {
            vec![
                link.to_string(),
                p.system.to_string(),
                "paper (NSDI 2018)".to_string(),
                num(p.ssim_db_p25, 1),
                format!("{:.1}", p.ssim_db_mean),
                format!("{:.0}", p.delay_mean_ms),
                format!("{:.0}", p.delay_p95_ms),
                "-".to_string(),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
    use super::*;

    #[test]
    fn ours_and_the_papers_rows_share_one_table() {
        let mut made = runs(&[
            (
                "salsify-2c",
                "Verizon-LTE-short",
                1,
                Some(120.0),
                Some(290.0),
            ),
            (
                "chromium-vp8",
                "Verizon-LTE-short",
                1,
                Some(100.0),
                Some(250.0),
            ),
            ("salsify-2c", "dropout", 1, Some(130.0), Some(300.0)),
            ("salsify-2c", "ramp", 1, Some(130.0), Some(300.0)),
            (
                "conventional",
                "Verizon-LTE-short",
                1,
                Some(80.0),
                Some(280.0),
            ),
        ]);
        made[1].0.live = true;
        made[2].0.live = true;
        // Another queue size is experiment 7's, not figure 11's.
        made[4].0.experiment.link.queue_packets = 64;
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = paper_table(&entries);
        let cells = |i: usize| t.rows[i][..3].join(" ");
        // Our rows by system, whatever order the runs came in.
        assert_eq!(cells(0), "Verizon-LTE-short chromium-vp8 live");
        assert_eq!(cells(1), "Verizon-LTE-short salsify-2c sim");
        // Then the paper's six Verizon LTE points, under our link's name.
        assert_eq!(cells(2), "Verizon-LTE-short Salsify-2c paper (NSDI 2018)");
        assert_eq!(t.rows[3][6], "4977");
        // The live dropout run is shown (no published point there); the ramp is neither.
        assert_eq!(cells(8), "dropout salsify-2c live");
        assert!(!t
            .rows
            .iter()
            .any(|r| r[0] == "ramp" || r[1] == "conventional"));
        // The paper's links we lack follow, each once.
        assert_eq!(
            t.rows
                .iter()
                .filter(|r| r[0] == "AT&T LTE (not in this report)")
                .count(),
            3
        );
        assert_eq!(t.rows.len(), 2 + 6 + 1 + 3 + 2 + 2 + 2);
    }

    /// The paper measured AT&T LTE's downlink: a run over its uplink is not set beside the
    /// paper's rows, which stay among the links not in this report.
    #[test]
    fn a_traces_uplink_is_not_the_papers_link() {
        let mut made = runs(&[
            (
                "salsify-2c",
                "ATT-LTE-driving-up",
                1,
                Some(120.0),
                Some(290.0),
            ),
            (
                "salsify-2c",
                "Verizon-LTE-short",
                1,
                Some(120.0),
                Some(290.0),
            ),
        ]);
        made[0].0.experiment.link.uplink = true;
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = paper_table(&entries);
        assert!(
            !t.rows.iter().any(|r| r[0] == "ATT-LTE-driving-up"),
            "{:#?}",
            t.rows
        );
        assert_eq!(
            t.rows
                .iter()
                .filter(|r| r[0] == "AT&T LTE (not in this report)")
                .count(),
            3
        );
        assert_eq!(t.rows[0][..3].join(" "), "Verizon-LTE-short salsify-2c sim");
    }
}
