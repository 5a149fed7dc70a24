//! The paper's evaluation as a matrix of runs: the matrix ([`spec`]), the built-in default
//! that mirrors the paper's section 5 ([`default_matrix`]), where results live so runs
//! resume and shards merge ([`store`]), and each run's time series ([`timeseries`]).
//! Running the matrix in parallel and drawing the report are the command's and
//! [`crate::report`]'s business.

pub mod corpus;
pub mod live;
mod shard;
pub mod spec;
pub mod store;
pub mod sweep;
pub mod timeseries;

use std::path::Path;

pub use shard::Shard;
pub use spec::{Figure, Group, Matrix, MatrixError, Plan, PlannedGroup, PlannedRun};
pub use store::{LiveRun, RunMeta, RunResult, Store};

use crate::experiment::Experiment;
use salsify_schemes::registry::with_role;
use salsify_schemes::SchemeRole;
use sweep::Sweep;

/// The trace experiments 4 and 7 use when real traces are given: the paper used Verizon LTE.
const PREFERRED_TRACE: &str = "Verizon-LTE";

/// The slow and fading link presets of the `slow` group: those the preset table
/// (`salsify_netem::presets::BUILTIN`) marks slow, in its order (fade, 3g, ack-stall, cliff).
pub fn slow_presets() -> Vec<&'static str> {
    salsify_netem::presets::BUILTIN
        .iter()
        .filter(|p| p.slow)
        .map(|p| p.name)
        .collect()
}

/// The recorded slow link the `slow` group adds when the traces folder holds it: a 3G
/// (EV-DO) trace recorded while driving, about 0.5 Mb/s.
pub const SLOW_TRACE: &str = "Verizon-EVDO-driving";

/// How long each run of the `slow` group lasts: two or three of `fade`'s fades, four
/// `cliff` cycles, several ACK stalls.
const SLOW_SECS: f64 = 120.0;

/// The built-in frontier group's sweep (its schemes play [`SchemeRole::Frontier`]): Salsify's delay target (the paper's 100 ms, half and
/// quarter of it, and twice it) with either budget, and the oracle from delay-first (slack
/// 0) to quality-first (8 frame intervals).
fn frontier_sweep() -> Sweep {
    Sweep {
        delay_target_ms: vec![25.0, 50.0, 100.0, 200.0],
        budget: vec![
            salsify_schemes::BudgetSource::Ewma,
            salsify_schemes::BudgetSource::Forecast,
        ],
        oracle_slack_frames: vec![0.0, 0.5, 2.0, 8.0],
        ..Sweep::default()
    }
}

/// The paper's experiments 1-7 (see ../shared/PAPER-NOTES.md).
///
/// With no traces folder every link is synthetic (the Sprout-style cellular generator stands
/// in for the cellular traces), so it runs anywhere. With one, experiment 1 runs every trace
/// prefix in it and experiments 4 and 7 the first whose name contains "Verizon-LTE" (else
/// the first). Cellular runs last 140 s with traces (the shared traces' length), 60 s
/// otherwise; the ramp and the dropout 20 s, like the paper's windows.
///
/// With traces, group `two-way` runs the main schemes on the LTE traces as two-way calls,
/// each beside its one-way runs in both directions (see [`spec`]).
///
/// After the paper's experiments, group `slow` ("Slow and fading links") runs the main
/// schemes for 120 s on [`slow_presets()`], plus the trace [`SLOW_TRACE`] when the traces
/// folder holds it.
pub fn default_matrix(traces: Option<&Path>, video: &str) -> Result<Matrix, MatrixError> {
    let mut lte_links: Vec<String> = Vec::new();
    let slow = slow_presets();
    let mut slow_links: Vec<String> = slow.iter().map(|s| s.to_string()).collect();
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
            if names.iter().any(|n| n == SLOW_TRACE) {
                slow_links.push(format!("trace:{SLOW_TRACE}"));
            }
            lte_links = names
                .iter()
                .filter(|n| n.contains("LTE"))
                .map(|n| format!("trace:{n}"))
                .collect();
            if lte_links.is_empty() {
                lte_links.push(format!("trace:{preferred}"));
            }
            ("traces:*".to_string(), format!("trace:{preferred}"), 140.0)
        }
        None => {
            lte_links.push("cellular".to_string());
            ("cellular".to_string(), "cellular".to_string(), 60.0)
        }
    };
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let group = |name: &str, title: &str, schemes: &[&str], link: &str, secs: f64| Group {
        name: name.into(),
        title: title.into(),
        live: false,
        two_way: false,
        schemes: strings(schemes),
        links: vec![link.to_string()],
        queue_packets: vec![],
        delay_ms: vec![],
        seeds: vec![],
        videos: vec![],
        duration_s: Some(secs),
        figures: vec![Figure::QualityDelay],
        sweep: Sweep::default(),
        corpus: corpus::CorpusSpec::default(),
    };
    let with = |mut g: Group, figures: &[Figure]| {
        g.figures = figures.to_vec();
        g
    };
    use Figure::{QualityDelay, QueueSize, TimeSeries};
    let mut queue = group(
        "queue",
        "Experiment 7: queue size",
        &with_role(SchemeRole::Queue),
        &single,
        cellular_s,
    );
    queue.queue_packets = vec![64, 256, 1024];
    let two_way_links = lte_links.clone();
    let mut groups = vec![
        with(
            group(
                "cellular",
                "Experiment 1: cellular links",
                &with_role(SchemeRole::Main),
                &cellular,
                cellular_s,
            ),
            &[QualityDelay, TimeSeries],
        ),
        with(
            group(
                "intermittent",
                "Experiment 2: intermittent link (12 Mb/s, failures every ~5 s for ~0.2 s)",
                &with_role(SchemeRole::Main),
                "intermittent",
                60.0,
            ),
            &[QualityDelay, TimeSeries],
        ),
        group(
            "wifi",
            "Experiment 3: emulated Wi-Fi (570 kb/s, Poisson deliveries)",
            &with_role(SchemeRole::Main),
            "wifi",
            60.0,
        ),
        group(
            "ablation",
            "Experiment 4: ablations of Salsify-2c",
            &with_role(SchemeRole::Ablation),
            &single,
            cellular_s,
        ),
        with(
            group(
                "ramp",
                "Experiment 5: capacity ramp to zero and back",
                &with_role(SchemeRole::Main),
                "ramp",
                20.0,
            ),
            &[TimeSeries, QualityDelay],
        ),
        with(
            group(
                "dropout",
                "Experiment 6: one-second dropout at 10 s on a 500 kb/s link",
                &with_role(SchemeRole::Main),
                "dropout",
                20.0,
            ),
            &[TimeSeries, QualityDelay],
        ),
        with(queue, &[QueueSize]),
        Group {
            links: slow_links,
            ..with(
                group(
                    "slow",
                    "Slow and fading links",
                    &with_role(SchemeRole::Slow),
                    slow[0],
                    SLOW_SECS,
                ),
                &[QualityDelay, TimeSeries],
            )
        },
        Group {
            links: lte_links,
            sweep: frontier_sweep(),
            ..with(
                group(
                    "frontier",
                    "The quality-delay frontier on LTE links: each scheme's own knob swept",
                    &with_role(SchemeRole::Frontier),
                    "cellular",
                    cellular_s,
                ),
                &[Figure::Frontier],
            )
        },
    ];
    // A call's B-to-A direction runs over a trace's uplink: only with traces.
    if traces.is_some() {
        groups.push(Group {
            links: two_way_links,
            two_way: true,
            ..group(
                "two-way",
                "A call both ways: each direction beside itself one-way",
                &with_role(SchemeRole::Main),
                "cellular",
                cellular_s,
            )
        });
    }
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

    /// A live cell of ours whose simulation would charge a datagram overhead that neither
    /// plaintext nor encryption has is refused before anything runs; Chromium's cells, whose
    /// datagrams are Chromium's, are not.
    #[test]
    fn a_live_cell_with_an_overhead_it_cannot_have_is_refused_at_plan() {
        let matrix = |schemes: &str| {
            let text = format!(
                "[defaults.link]\ndatagram_overhead_bytes = 13\n\n[[group]]\nname = \"live\"\n\
                 title = \"Live\"\nlive = true\nschemes = [{schemes}]\nlinks = [\"dropout\"]\n"
            );
            Matrix::from_toml(&text).unwrap()
        };
        let refused = matrix("\"conventional\"").plan().unwrap_err().to_string();
        assert!(
            refused.contains("link.datagram_overhead_bytes"),
            "{refused}"
        );
        matrix("\"chromium-vp8\"").plan().unwrap();
    }

    /// `experiments/paper.toml` is the paper's experiments 1-7 plus live groups whose every
    /// Salsify-2c and conventional cell has a simulated run of exactly its experiment, so the
    /// report puts each live row beside its simulation. Planning needs the shared traces and
    /// video (`../shared` beside the repository); without them only the groups are checked.
    #[test]
    fn the_paper_matrix_puts_every_live_run_of_ours_beside_its_simulation() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join("experiments/paper.toml")).unwrap();
        let mut m = Matrix::from_toml(&text).unwrap();
        let names: Vec<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cellular",
                "intermittent",
                "wifi",
                "ablation",
                "ramp",
                "dropout",
                "queue",
                "live-lte",
                "live-dropout"
            ]
        );
        for g in m.groups.iter().filter(|g| g.live) {
            for system in [
                "chromium-vp8",
                "chromium-vp9-svc",
                "salsify-2c",
                "conventional",
            ] {
                assert!(
                    g.schemes.iter().any(|s| s == system),
                    "{}: {system}",
                    g.name
                );
            }
        }
        // The matrix names its files relative to the repository, where `salsify eval` runs.
        let traces = root.join(m.traces.as_ref().unwrap());
        let video = root.join(&m.defaults.video);
        if !traces.is_dir() || !video.is_file() {
            eprintln!(
                "skipped planning: no {} or {}",
                traces.display(),
                video.display()
            );
            return;
        }
        m.traces = Some(traces);
        m.defaults.video = video.to_string_lossy().into_owned();
        let plan = m.plan().unwrap();
        assert_eq!(plan.runs.iter().filter(|r| r.live).count(), 18);
        // 44 of the paper's experiments, and the six live cells of ours simulated as played.
        assert_eq!(plan.runs.iter().filter(|r| !r.live).count(), 50);
        let ours = plan
            .runs
            .iter()
            .filter(|r| r.live && !r.experiment.scheme.starts_with("chromium"));
        for live in ours {
            assert!(
                plan.runs
                    .iter()
                    .any(|r| !r.live && r.experiment == live.experiment),
                "{} has no simulated twin",
                live.id
            );
        }
    }

    #[test]
    fn the_default_matrix_plans_without_files() {
        let m = default_matrix(None, "synthetic").unwrap();
        let plan = m.plan().unwrap();
        assert_eq!(plan.groups.len(), 9);
        // Experiment 7 shares its 256-packet runs with experiment 1.
        let cellular = &plan.groups[0].runs;
        let queue = &plan.groups[6].runs;
        assert_eq!(queue.len(), 9);
        assert_eq!(queue.iter().filter(|id| cellular.contains(id)).count(), 3);
        // The slow group: the six slow-group schemes on the four slow presets, nothing shared.
        let slow = &plan.groups[7];
        assert_eq!(slow.group.name, "slow");
        assert_eq!(slow.group.links, slow_presets());
        assert_eq!(slow.runs.len(), 6 * 4);
        // The frontier group: Salsify-2c at 4 targets x 2 budgets, the oracle at 4 slacks,
        // Sprout, and the conventional run it shares with experiment 1.
        let frontier = &plan.groups[8];
        assert_eq!(frontier.group.name, "frontier");
        assert_eq!(frontier.runs.len(), 8 + 4 + 1 + 1);
        assert_eq!(
            frontier
                .runs
                .iter()
                .filter(|id| cellular.contains(id))
                .count(),
            1
        );
        assert_eq!(
            plan.runs.len(),
            5 + 5 + 5 + 3 + 5 + 5 + 6 + 24 + 13,
            "distinct runs"
        );
        assert_eq!(slow_presets(), ["fade", "3g", "ack-stall", "cliff"]);
    }

    #[test]
    fn the_paper_groups_keep_their_run_ids() {
        // Adding the slow group must not rename a run of experiments 1-7: these ids were
        // planned before it existed.
        let plan = default_matrix(None, "synthetic").unwrap().plan().unwrap();
        let ids: Vec<&str> = plan.groups[..7]
            .iter()
            .flat_map(|g| g.runs.iter().map(String::as_str))
            .collect();
        let digest = ids
            .join("\n")
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        assert_eq!(ids.len(), 5 + 5 + 5 + 4 + 5 + 5 + 9);
        assert_eq!(format!("{digest:016x}"), "9b8fb2fdd84d3f35", "{ids:?}");
    }

    #[test]
    fn slow_group_adds_the_evdo_trace_when_present() {
        let dir = std::env::temp_dir().join(format!("salsify-slow-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("A-LTE.down"), "1\n").unwrap();
        let slow_links = |dir: &Path| {
            let m = default_matrix(Some(dir), "synthetic").unwrap();
            m.groups[7].links.clone()
        };
        assert_eq!(slow_links(&dir), slow_presets());
        std::fs::write(dir.join(format!("{SLOW_TRACE}.down")), "1\n").unwrap();
        let links = slow_links(&dir);
        assert_eq!(links[..4], slow_presets());
        assert_eq!(links[4], format!("trace:{SLOW_TRACE}"));
        let plan = default_matrix(Some(&dir), "synthetic")
            .unwrap()
            .plan()
            .unwrap();
        assert_eq!(plan.groups[7].runs.len(), 6 * 5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// With traces, the built-in matrix ends with the two-way group on the LTE traces: each
    /// main scheme's call beside its one-way runs, the downlink ones shared with experiment 1.
    #[test]
    fn the_two_way_group_runs_the_main_schemes_on_the_lte_traces() {
        let dir = std::env::temp_dir().join(format!("salsify-2way-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["A-LTE.down", "A-LTE.up", "B-3G.down"] {
            std::fs::write(dir.join(name), "1\n").unwrap();
        }
        let plan = default_matrix(Some(&dir), "synthetic")
            .unwrap()
            .plan()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let two_way = plan.groups.last().unwrap();
        assert_eq!(two_way.group.name, "two-way");
        assert_eq!(two_way.group.links, ["trace:A-LTE"]);
        let main = with_role(SchemeRole::Main).len();
        assert_eq!(two_way.runs.len(), 3 * main);
        let cellular = &plan.groups[0].runs;
        let shared = two_way.runs.iter().filter(|id| cellular.contains(id));
        assert_eq!(shared.count(), main);
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
        let slow = &plan.groups[7];
        assert_eq!(slow.runs.len(), 6 * 5);
        assert_eq!(
            slow.runs
                .iter()
                .filter(|id| id.contains("__Verizon-EVDO-driving__"))
                .count(),
            6
        );
    }
}
