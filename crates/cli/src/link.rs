//! `salsify link`: a user-space UDP relay applying the emulated link in real time. Its path
//! flags convert into the runtime's `LinkPath`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use salsify_runtime::LinkPath;
use salsify_time::Duration;

use crate::flags::LinkFlags;
use crate::out_dir;
use crate::runtime::relay::{self, RelayConfig};
use crate::runtime::relay_sender::SenderRule;
use crate::runtime::{self, udp};

/// Flags of `salsify link`.
#[derive(Args, Debug, Clone)]
pub struct LinkArgs {
    /// Where the sender sends to, HOST:PORT.
    #[arg(long)]
    pub listen: String,
    /// Where the receiver listens, HOST:PORT.
    #[arg(long)]
    pub to: String,
    #[command(flatten)]
    pub path: LinkFlags,
    /// Write per-packet logs in Mahimahi's mm-link format here: video.log (sender to
    /// receiver) and ack.log (back); `mm-delay-graph video.log` plots them. relay.csv says how
    /// late the relay itself forwarded datagrams, and whether it ran in real time.
    /// The folder may hold other logs of the call (`send`'s, `recv`'s), but not another
    /// command's run (`sim`, `demo`, `eval`: their video.log would be mixed with this one).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// The sender's address, HOST:PORT: video is taken from it alone and the receiver's
    /// datagrams go to it alone. Default: learned from the first valid datagram (of any
    /// scheme, or a handshake) and kept until it is silent for --sender-silence.
    #[arg(long)]
    pub sender: Option<String>,
    /// Seconds a learned sender must be silent before another address may take its place;
    /// until then anyone else's datagrams are dropped (and counted).
    #[arg(long, default_value = "3", value_parser = runtime::parse_seconds)]
    pub sender_silence: Duration,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No start line and no summary (errors are still printed).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// Runs `salsify link`.
pub fn run(args: &LinkArgs) -> Result<()> {
    let to = crate::usage::resolve_destination("--to", &args.to)?;
    // Checked (and the port taken) before the log folder is made.
    let path = LinkPath::try_from(&args.path)?;
    let socket = udp::bind(crate::usage::resolve("--listen", &args.listen)?)?;
    let fixed = match &args.sender {
        Some(spec) => Some(crate::usage::resolve_destination("--sender", spec)?),
        None => None,
    };
    if let Some(dir) = &args.log_dir {
        out_dir::refuse_marked_runs(dir, "--log-dir")?;
    }
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    let title = format!("salsify link: {}", args.path.trace_name());
    let dash = crate::dashboard::start(
        args.dashboard.dashboard.as_deref(),
        &title,
        None,
        crate::dashboard::Runner::Link,
    )?;
    // The log folder is made only now that the dashboard's port is bound: a failed start
    // leaves no folder.
    let config = RelayConfig {
        sender: SenderRule {
            fixed,
            silence: args.sender_silence,
            ..SenderRule::default()
        },
        ..path.relay_config(to, args.log_dir.as_deref(), None)?
    };
    if !args.quiet {
        eprintln!(
            "salsify link: {} -> {to}, link {}",
            socket.local_addr()?,
            args.path.trace_name()
        );
    }
    let totals = relay::run(config, socket, stop, crate::dashboard::observer(&dash));
    crate::dashboard::finish(dash);
    let totals = totals?;
    if !args.quiet {
        for (name, d) in [("video", totals.video), ("ack", totals.ack)] {
            let dropped = d
                .link
                .map_or(0, |l| l.packets_in.saturating_sub(l.packets_delivered));
            eprintln!(
                "salsify link: {name}: {} in, {} out ({dropped} dropped or still queued); sent on {}",
                d.packets_in, d.packets_out, d.lateness
            );
        }
        if totals.strangers > 0 {
            eprintln!(
                "salsify link: {} datagrams from addresses other than the sender dropped",
                totals.strangers
            );
        }
        if !totals.realtime {
            eprintln!("salsify link: ran without real-time scheduling (needs root or CAP_SYS_NICE): under load its lateness reads as queueing");
        }
        if let Some(dir) = &args.log_dir {
            eprintln!("salsify link: mm-link logs in {}", dir.display());
        }
    }
    if totals.video.packets_in == 0 {
        bail!("no datagram arrived from a sender: nothing relayed");
    }
    Ok(())
}
