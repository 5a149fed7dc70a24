//! `salsify recv`: receive, decode and "display" a Salsify stream.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use salsify_time::Duration;

use crate::runtime::display::DisplayConfig;
use crate::runtime::observe::Observer;
use crate::runtime::receiver_loop::{self, ReceiverLoopConfig};
use crate::runtime::{self, udp};

/// Flags of `salsify recv`.
#[derive(Args, Debug, Clone)]
pub struct RecvArgs {
    /// Where to listen, HOST:PORT (e.g. 127.0.0.1:9000, or 0.0.0.0:9000 for every interface).
    #[arg(long)]
    pub listen: String,
    /// Write the shown pictures as Y4M here; `-` writes to standard output
    /// (`salsify recv ... -o - | ffplay -`).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Write the shown frames' VP8 data as IVF here (plays in ffplay / vpxdec).
    #[arg(long)]
    pub ivf: Option<PathBuf>,
    /// Write a per-frame CSV log here: session, frame, display time, first fragment's send
    /// time, their difference, source and target state, bytes.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Seconds of silence after which another sender may take over the receiver.
    #[arg(long, default_value = "2", value_parser = runtime::parse_seconds)]
    pub session_timeout: Duration,
    /// Frame rate written in the Y4M header (frames are written as they are shown).
    #[arg(long, default_value_t = 30)]
    pub fps: u32,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No status line per second.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RecvArgs {
    /// The loop configuration these flags describe.
    pub fn loop_config(&self) -> ReceiverLoopConfig {
        ReceiverLoopConfig {
            session_timeout: self.session_timeout,
            display: DisplayConfig {
                y4m: self.output.clone(),
                ivf: self.ivf.clone(),
                log: self.log.clone(),
                fps: self.fps,
            },
            status: !self.quiet,
            ..ReceiverLoopConfig::default()
        }
    }
}

/// Runs `salsify recv`.
pub fn run(args: &RecvArgs) -> Result<()> {
    let socket = receiver_loop::bind(udp::resolve(&args.listen)?)?;
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        eprintln!("salsify recv: listening on {}", socket.local_addr()?);
    }
    let totals = receiver_loop::run(args.loop_config(), socket, stop, Observer::default())?;
    eprintln!(
        "salsify recv: {} frames shown, {} sessions, {} datagrams ignored, {} of {} datagrams kernel-timestamped",
        totals.shown, totals.sessions, totals.ignored, totals.kernel_stamps, totals.datagrams
    );
    Ok(())
}
