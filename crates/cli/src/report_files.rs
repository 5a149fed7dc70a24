//! Writing an evaluation's report from its folders (`salsify report`, and `salsify eval` at
//! the end of a run): the runs merged, the machine described.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use salsify_eval::campaign::{RunResult, Store};
use salsify_eval::report::{self, Context};

/// Merges the runs of `dirs` (which must come from the same matrix) into a report in `out`;
/// returns a line saying what it wrote.
pub fn write_report(dirs: &[PathBuf], out: &std::path::Path) -> Result<String> {
    let stores = dirs
        .iter()
        .map(|d| Store::open(d))
        .collect::<std::io::Result<Vec<_>>>()?;
    let plan = stores[0].read_plan()?;
    for (store, dir) in stores.iter().zip(dirs).skip(1) {
        if store.read_plan()? != plan {
            bail!(
                "'{}' and '{}' hold different matrices; a report merges shards of one matrix",
                dirs[0].display(),
                dir.display()
            );
        }
    }
    let mut results: BTreeMap<String, RunResult> = BTreeMap::new();
    for run in &plan.runs {
        for store in &stores {
            if let Some(result) = store
                .load(&run.id)
                .with_context(|| format!("reading run {}", run.id))?
            {
                results.insert(run.id.clone(), result);
                break;
            }
        }
    }
    let context = Context {
        command: stores[0]
            .read_command()
            .unwrap_or_else(|_| "salsify eval".into()),
        machine: machine_description(),
    };
    let built = report::build(&plan, &results, &context);
    std::fs::create_dir_all(out).with_context(|| format!("cannot create '{}'", out.display()))?;
    report::write(&built, out)
        .with_context(|| format!("writing the report to '{}'", out.display()))?;
    Ok(format!(
        "report of {} of {} runs: {} and {} ({} figures)",
        results.len(),
        plan.runs.len(),
        out.join("report.html").display(),
        out.join("report.md").display(),
        built.figures.len()
    ))
}

/// CPU model, core count and memory, from /proc where it exists.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(String::new(), |kb| {
            format!(", {:.0} GiB", kb / 1024.0 / 1024.0)
        });
    format!("{cpu}, {cores} cores{mem_gib} ({})", std::env::consts::OS)
}
