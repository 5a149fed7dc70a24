//! `salsify sim`: one simulated run.

use anyhow::Result;

/// Options of `salsify sim`.
#[derive(clap::Args, Debug)]
pub struct SimArgs {}

/// Runs one simulation.
pub fn run(_args: &SimArgs) -> Result<()> {
    anyhow::bail!("salsify sim is being written")
}
