//! The paper's evaluation as a matrix of runs: the matrix ([`spec`]), the built-in default
//! that mirrors the paper's section 5 ([`default_matrix`]), where results live so runs
//! resume and shards merge ([`store`]), and each run's time series ([`timeseries`]).
//! Running the matrix in parallel and drawing the report are the command's and
//! [`crate::report`]'s business.

pub mod spec;
pub mod store;
pub mod timeseries;

use std::path::Path;

pub use spec::{Figure, Group, Matrix, MatrixError, Plan, PlannedGroup, PlannedRun, Shard};
pub use store::{RunMeta, RunResult, Store};

use crate::experiment::Experiment;

/// The schemes of the paper's main comparison (figures 6-8).
pub const MAIN_SCHEMES: &[&str] = &[
    "salsify-2c",
    "salsify-1c",
    "conventional",
    "vidaptive",
    "oracle",
];

/// Salsify-2c and its three ablations (experiment 4).
pub const ABLATION_SCHEMES: &[&str] = &[
    "salsify-2c",
    "salsify-no-grace",
    "salsify-conventional-codec",
    "salsify-conventional-transport",
];

/// The trace experiments 4 and 7 use when real traces are given: the paper used Verizon LTE.
const PREFERRED_TRACE: &str = "Verizon-LTE";

/// The paper's experiments 1-7 (see ../shared/PAPER-NOTES.md).
///
/// With no traces folder every link is synthetic (the Sprout-style cellular generator stands
/// in for the cellular traces), so it runs anywhere. With one, experiment 1 runs every trace
/// prefix in it and experiments 4 and 7 the first whose name contains "Verizon-LTE" (else
/// the first). Cellular runs last 140 s with traces (the shared traces' length), 60 s
/// otherwise; the ramp and the dropout 20 s, like the paper's windows.
pub fn default_matrix(traces: Option<&Path>, video: &str) -> Result<Matrix, MatrixError> {
    let (cellular, single, cellular_s) = match traces {
        Some(dir) => {
            let names = spec::trace_prefixes(dir).map_err(|e| MatrixError::Group {
                group: "cellular".into(),
                message: format!("--traces: {e}"),
            })?;
            let Some(first) = names.first() else {
                return Err(MatrixError::Group {
                    group: "cellular".into(),
                    message: format!("--traces: no NAME.down file in '{}'", dir.display()),
                });
            };
            let preferred = names
                .iter()
                .find(|n| n.contains(PREFERRED_TRACE))
                .unwrap_or(first);
            ("traces:*".to_string(), format!("trace:{preferred}"), 140.0)
        }
        None => ("cellular".to_string(), "cellular".to_string(), 60.0),
    };
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let group = |name: &str, title: &str, schemes: &[&str], link: &str, secs: f64| Group {
        name: name.into(),
        title: title.into(),
        schemes: strings(schemes),
        links: vec![link.to_string()],
        queue_packets: vec![],
        delay_ms: vec![],
        seeds: vec![],
        videos: vec![],
        duration_s: Some(secs),
        figures: vec![Figure::QualityDelay],
    };
    let with = |mut g: Group, figures: &[Figure]| {
        g.figures = figures.to_vec();
        g
    };
    use Figure::{QualityDelay, QueueSize, TimeSeries};
    let mut queue = group(
        "queue",
        "Experiment 7: queue size",
        &["salsify-2c", "conventional", "vidaptive"],
        &single,
        cellular_s,
    );
    queue.queue_packets = vec![64, 256, 1024];
    let groups = vec![
        with(
            group(
                "cellular",
                "Experiment 1: cellular links",
                MAIN_SCHEMES,
                &cellular,
                cellular_s,
            ),
            &[QualityDelay, TimeSeries],
        ),
        with(
            group(
                "intermittent",
                "Experiment 2: intermittent link (12 Mb/s, failures every ~5 s for ~0.2 s)",
                MAIN_SCHEMES,
                "intermittent",
                60.0,
            ),
            &[QualityDelay, TimeSeries],
        ),
        group(
            "wifi",
            "Experiment 3: emulated Wi-Fi (570 kb/s, Poisson deliveries)",
            MAIN_SCHEMES,
            "wifi",
            60.0,
        ),
        group(
            "ablation",
            "Experiment 4: ablations of Salsify-2c",
            ABLATION_SCHEMES,
            &single,
            cellular_s,
        ),
        with(
            group(
                "ramp",
                "Experiment 5: capacity ramp to zero and back",
                MAIN_SCHEMES,
                "ramp",
                20.0,
            ),
            &[TimeSeries, QualityDelay],
        ),
        with(
            group(
                "dropout",
                "Experiment 6: one-second dropout at 10 s on a 500 kb/s link",
                MAIN_SCHEMES,
                "dropout",
                20.0,
            ),
            &[TimeSeries, QualityDelay],
        ),
        with(queue, &[QueueSize]),
    ];
    let defaults = Experiment {
        video: video.to_string(),
        ..Experiment::default()
    };
    Ok(Matrix {
        traces: traces.map(Path::to_path_buf),
        defaults,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_matrix_plans_without_files() {
        let m = default_matrix(None, "synthetic").unwrap();
        let plan = m.plan().unwrap();
        assert_eq!(plan.groups.len(), 7);
        // Experiment 7 shares its 256-packet runs with experiment 1.
        let cellular = &plan.groups[0].runs;
        let queue = &plan.groups[6].runs;
        assert_eq!(queue.len(), 9);
        assert_eq!(queue.iter().filter(|id| cellular.contains(id)).count(), 3);
        assert_eq!(plan.runs.len(), 5 + 5 + 5 + 3 + 5 + 5 + 6, "distinct runs");
    }

    #[test]
    fn traces_folder_must_hold_traces() {
        let empty = std::env::temp_dir().join(format!("salsify-no-traces-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let err = default_matrix(Some(&empty), "synthetic").unwrap_err();
        assert!(err.to_string().contains("no NAME.down"), "{err}");
        let err = default_matrix(Some(Path::new("/no/such/dir")), "synthetic").unwrap_err();
        assert!(err.to_string().contains("/no/such/dir"), "{err}");
        std::fs::remove_dir_all(&empty).unwrap();
    }

    #[test]
    fn shared_traces_when_present() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces");
        if !dir.is_dir() {
            eprintln!("skipped: no {}", dir.display());
            return;
        }
        let plan = default_matrix(Some(&dir), "synthetic")
            .unwrap()
            .plan()
            .unwrap();
        let links: std::collections::BTreeSet<_> =
            plan.runs.iter().map(|r| r.link.as_str()).collect();
        assert!(links.contains("Verizon-LTE-short"), "{links:?}");
        assert!(plan.groups[3]
            .runs
            .iter()
            .all(|id| id.contains("Verizon-LTE-short")));
    }
}
