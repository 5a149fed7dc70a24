//! `salsify report`: the report of one or more evaluation folders (e.g. one per shard),
//! merged: report.md, report.html and figures/.

use std::path::PathBuf;

use anyhow::Result;

use crate::report_files::write_report;

/// Options of `salsify report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Evaluation folders written by `salsify eval` (one per shard, or one shared folder).
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Where to write the report (default: the first folder).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Quiet: no summary line (errors are still printed).
    #[arg(long, short)]
    quiet: bool,
}

/// Writes the report.
pub fn run(args: &ReportArgs) -> Result<()> {
    let out = args.out.clone().unwrap_or_else(|| args.dirs[0].clone());
    let summary = write_report(&args.dirs, &out)?;
    if !args.quiet {
        eprintln!("{summary}");
    }
    Ok(())
}
