//! The data channel's flags (`salsify call`, `send`, `recv`), converted into the runtime's
//! [`DataIoConfig`].

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use salsify_call::data::Delivery;
use salsify_runtime::data_io::{DataIoConfig, DataTotals};

/// Messages to and from the peer beside the media.
#[derive(Args, Debug, Clone, Default)]
pub struct DataArgs {
    /// Send each line of this file (`-`: standard input) as one data message to the peer,
    /// up to 1024 bytes a line: *ordered* (every message, in order, retransmitted until
    /// acknowledged), or *latest* with --data-latest. A longer line is an error naming it.
    /// In the same session, counted in the sender's budget, never waiting behind video.
    #[arg(long)]
    pub data_in: Option<PathBuf>,
    /// The --data-in lines are *latest* messages: sent at once, never retransmitted, a
    /// queued one replaced by a newer line (a joystick's position, a cursor).
    #[arg(long, requires = "data_in")]
    pub data_latest: bool,
    /// Write each data message from the peer here as one line (`-`: standard output), a
    /// newline or backslash in it escaped as `\n` or `\\`.
    #[arg(long)]
    pub data_out: Option<PathBuf>,
}

impl DataArgs {
    /// The data channel these flags ask for (an empty configuration when none).
    pub fn config(&self) -> Result<DataIoConfig> {
        if let Some(p) = &self.data_in {
            if p.as_os_str() != "-" && !p.is_file() {
                bail!("--data-in '{}' is not a file", p.display());
            }
        }
        crate::paths::check_outputs(&[("--data-out", self.data_out.as_deref())])?;
        Ok(DataIoConfig {
            input: self.data_in.clone(),
            delivery: Some(match self.data_latest {
                true => Delivery::Latest,
                false => Delivery::Ordered,
            }),
            output: self.data_out.clone(),
            channel: Default::default(),
        })
    }

    /// Whether a side's standard output carries data messages (so it cannot carry video).
    pub fn to_stdout(&self) -> bool {
        self.data_out.as_ref().is_some_and(|p| p.as_os_str() == "-")
    }
}

/// The data channel's closing line: sent, retransmitted, superseded, received with its
/// delay, refused.
pub fn line(d: &DataTotals) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    format!(
        "{} sent ({} retransmitted, {} superseded), {} received (delay mean {} ms, p95 {} ms), {} refused",
        d.stats.submitted,
        d.stats.retransmitted,
        d.stats.superseded,
        d.stats.delivered,
        ms(d.delay_mean_ms),
        ms(d.delay_p95_ms),
        d.stats.bad,
    )
}

/// An error when ordered messages read were not all acknowledged by the peer.
pub fn check_delivered(d: &DataTotals) -> Result<()> {
    if d.undelivered > 0 {
        bail!(
            "{} of {} data messages read were not acknowledged by the peer",
            d.undelivered,
            d.lines_read
        );
    }
    Ok(())
}

/// The data channel's figures for a summary file.
pub fn json(d: &DataTotals) -> serde_json::Value {
    serde_json::json!({
        "sent": d.stats.submitted,
        "retransmitted": d.stats.retransmitted,
        "superseded": d.stats.superseded,
        "received": d.stats.delivered,
        "refused": d.stats.bad,
        "undelivered": d.undelivered,
        "delay_mean_ms": d.delay_mean_ms,
        "delay_p95_ms": d.delay_p95_ms,
    })
}
