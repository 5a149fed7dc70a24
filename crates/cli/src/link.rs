//! `salsify link`: a user-space UDP relay applying the emulated link in real time.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use salsify_eval::experiment::{Experiment, LinkSpec};
use salsify_netem::{LinkConfig, LossModel, QueueLimit};
use salsify_time::Duration;

use crate::runtime::relay::{self, DirectionConfig, LinkStart, RelayConfig};
use crate::runtime::relay_sender::SenderRule;
use crate::runtime::CallStart;
use crate::runtime::{self, udp};

/// Most bytes the live relay queues per direction, whatever `--queue` says.
const RELAY_MAX_QUEUE_BYTES: u64 = 256 << 20;

/// Longest one-way delay accepted, as in experiment files.
const MAX_DELAY_MS: u64 = 10_000;

/// The emulated path, shared by `salsify link`, `salsify demo` and `salsify peer`.
#[derive(Args, Debug, Clone)]
pub struct LinkFlags {
    /// Mahimahi trace: PREFIX (video over PREFIX.down, ACKs over PREFIX.up) or one file for
    /// both directions. Overrides --link.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[arg(
        long,
        default_value = "cellular",
        help = concat!(
            "Synthetic link when no trace is given: ",
            salsify_eval::sim::link_presets_help!()
        )
    )]
    pub link: String,
    /// DropTail queue in packets, each direction (0 = unlimited in packets; the live relay
    /// still holds at most 256 MiB per direction, so a flood cannot exhaust memory).
    #[arg(long, default_value_t = 256)]
    pub queue: u32,
    /// One-way propagation delay in milliseconds, each direction.
    #[arg(long, default_value_t = 20)]
    pub delay_ms: u64,
    /// I.i.d. loss probability on the video direction.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// For --link dropout: seconds after the link starts (see --link-start) when the outage
    /// begins.
    #[arg(long, default_value_t = 10.0)]
    pub dropout_at: f64,
    /// ACK direction: another preset (as --link) instead of the video direction's.
    #[arg(long)]
    pub ack_link: Option<String>,
    /// ACK direction: another one-way delay in milliseconds.
    #[arg(long)]
    pub ack_delay_ms: Option<u64>,
    /// ACK direction: i.i.d. loss probability.
    #[arg(long, default_value_t = 0.0)]
    pub ack_loss: f64,
    /// Seed of the link's random choices (loss, synthetic traces).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// When the link starts playing its trace (and a preset its schedule). call: with the
    /// sender's first picture where the sender runs in this process (`demo`, `eval`), as the
    /// simulator starts a trace with the call, so a live run meets the part of the trace its
    /// simulation met; otherwise (`link`, `peer`) at the first datagram. first-datagram: at
    /// the first datagram from either side. launch: when the relay starts, as Mahimahi's
    /// mm-link does.
    #[arg(long, value_enum, default_value_t = LinkStartFlag::Call)]
    pub link_start: LinkStartFlag,
}

/// `--link-start`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStartFlag {
    /// With the call: its first picture, or its first datagram.
    Call,
    /// At the first datagram.
    FirstDatagram,
    /// When the relay starts.
    Launch,
}

impl LinkStartFlag {
    /// The relay's start for this flag; `call` is the sender's mark when there is one.
    pub fn relay_start(self, call: Option<&CallStart>) -> LinkStart {
        match (self, call) {
            (LinkStartFlag::Call, Some(call)) => LinkStart::Call(call.clone()),
            (LinkStartFlag::Call | LinkStartFlag::FirstDatagram, _) => LinkStart::FirstDatagram,
            (LinkStartFlag::Launch, _) => LinkStart::Launch,
        }
    }
}

impl LinkFlags {
    /// The video-direction and ACK-direction links (`None`: no emulation).
    pub fn build(&self) -> Result<(Option<LinkConfig>, Option<LinkConfig>)> {
        if !(0.0..=1.0).contains(&self.ack_loss) {
            bail!("--ack-loss {} is not a probability (0 to 1)", self.ack_loss);
        }
        if self.ack_delay_ms.is_some_and(|ms| ms > MAX_DELAY_MS) {
            bail!("--ack-delay-ms: more than {MAX_DELAY_MS} ms");
        }
        let (video, mut ack) = self.pair(&self.link, "--link")?;
        if let Some(preset) = &self.ack_link {
            ack = self.pair(preset, "--ack-link")?.1;
        }
        if let Some(ack) = &mut ack {
            if let Some(ms) = self.ack_delay_ms {
                ack.propagation_delay = Duration::from_millis(ms);
            }
            if self.ack_loss > 0.0 {
                ack.loss.push(LossModel::iid(self.ack_loss));
            }
        }
        Ok((video, ack))
    }

    /// The links of `preset`, named by flag `flag` in errors.
    fn pair(&self, preset: &str, flag: &str) -> Result<(Option<LinkConfig>, Option<LinkConfig>)> {
        if preset == "none" && self.trace.is_none() {
            return Ok((None, None));
        }
        let experiment = Experiment {
            seed: self.seed,
            link: LinkSpec {
                trace: self.trace.clone(),
                preset: preset.to_string(),
                queue_packets: self.queue,
                delay_ms: self.delay_ms,
                loss: self.loss,
                dropout_at_s: self.dropout_at,
                ..LinkSpec::default()
            },
            ..Experiment::default()
        };
        let c = experiment.sim_config().map_err(|e| {
            let flag = match e.field {
                "link.preset" => flag,
                "link.trace" => "--trace",
                "link.delay_ms" => "--delay-ms",
                "link.loss" => "--loss",
                "link.dropout_at_s" => "--dropout-at",
                "link.queue_packets" => "--queue",
                other => other,
            };
            anyhow!("{flag}: {}", e.message)
        })?;
        Ok((Some(c.data_link), Some(c.feedback_link)))
    }

    /// A name for the trace in log headers.
    pub fn trace_name(&self) -> String {
        match &self.trace {
            Some(p) => p.display().to_string(),
            None => format!("synthetic {}", self.link),
        }
    }
}

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

/// The relay configuration for `path`, forwarding to `to`, logging into `log_dir`.
pub fn relay_config(
    path: &LinkFlags,
    to: std::net::SocketAddr,
    log_dir: Option<&std::path::Path>,
) -> Result<RelayConfig> {
    let (video, ack) = path.build()?;
    if let Some(dir) = log_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("cannot create folder '{}': {e}", dir.display()))?;
    }
    let bound = |link: Option<LinkConfig>| {
        link.map(|mut l| {
            l.queue = match (l.queue.packets, l.queue.bytes) {
                (Some(p), None) => QueueLimit::packets_and_bytes(p, RELAY_MAX_QUEUE_BYTES),
                (None, None) => QueueLimit::bytes(RELAY_MAX_QUEUE_BYTES),
                _ => l.queue,
            };
            l
        })
    };
    let (video, ack) = (bound(video), bound(ack));
    let direction = |link: Option<LinkConfig>, file: &str| DirectionConfig {
        log: log_dir.filter(|_| link.is_some()).map(|d| d.join(file)),
        link,
        trace_name: path.trace_name(),
    };
    Ok(RelayConfig {
        to,
        video: direction(video, "video.log"),
        ack: direction(ack, "ack.log"),
        loopback_only: false,
        realtime: true,
        report: log_dir.map(|d| d.join("relay.csv")),
        start: path.link_start.relay_start(None),
        sender: SenderRule::default(),
    })
}

/// Runs `salsify link`.
pub fn run(args: &LinkArgs) -> Result<()> {
    let to = udp::resolve_destination(&args.to)?;
    // Checked (and the port taken) before the log folder is made.
    args.path.build()?;
    let socket = udp::bind(udp::resolve(&args.listen)?)?;
    let fixed = match &args.sender {
        Some(spec) => Some(udp::resolve_destination(spec).context("--sender")?),
        None => None,
    };
    let config = RelayConfig {
        sender: SenderRule {
            fixed,
            silence: args.sender_silence,
            ..SenderRule::default()
        },
        ..relay_config(&args.path, to, args.log_dir.as_deref())?
    };
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        eprintln!(
            "salsify link: {} -> {to}, link {}",
            socket.local_addr()?,
            args.path.trace_name()
        );
    }
    let title = format!("salsify link: {}", args.path.trace_name());
    let dash =
        crate::dashboard::start(&args.dashboard, &title, None, crate::dashboard::Role::Link)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        path: LinkFlags,
    }

    fn build(args: &[&str]) -> Result<(Option<LinkConfig>, Option<LinkConfig>)> {
        let mut all = vec!["salsify"];
        all.extend_from_slice(args);
        Wrapper::try_parse_from(all).unwrap().path.build()
    }

    /// Errors name the flag at fault (not an experiment file's field), and a bad constant
    /// rate says what is wrong with it.
    #[test]
    fn link_errors_name_the_flag() {
        let err = build(&["--ack-link", "bogus"]).unwrap_err().to_string();
        assert!(
            err.starts_with("--ack-link: unknown preset 'bogus'"),
            "{err}"
        );
        let err = build(&["--link", "constant:0"]).unwrap_err().to_string();
        assert!(
            err.starts_with("--link:") && err.contains("whole number of kb/s"),
            "{err}"
        );
        assert!(!err.contains("unknown preset"), "{err}");
        let err = build(&["--loss", "NaN"]).unwrap_err().to_string();
        assert!(err.starts_with("--loss:"), "{err}");
        assert!(build(&["--ack-loss", "NaN"]).is_err());
        assert!(build(&["--ack-loss=-0.5"]).is_err());
        assert!(build(&["--ack-delay-ms", "99999999"]).is_err());
    }

    /// Even an unlimited queue is bounded in bytes in the live relay.
    #[test]
    fn the_relay_queue_is_bounded_in_bytes() {
        let path = Wrapper::try_parse_from(["salsify", "--queue", "0"])
            .unwrap()
            .path;
        let to = "127.0.0.1:9".parse().unwrap();
        let config = relay_config(&path, to, None).unwrap();
        for link in [config.video.link.unwrap(), config.ack.link.unwrap()] {
            assert_eq!(link.queue.bytes, Some(RELAY_MAX_QUEUE_BYTES));
            assert_eq!(link.queue.packets, None);
        }
        let path = Wrapper::try_parse_from(["salsify"]).unwrap().path;
        let config = relay_config(&path, to, None).unwrap();
        let queue = config.video.link.unwrap().queue;
        assert_eq!(
            (queue.packets, queue.bytes),
            (Some(256), Some(RELAY_MAX_QUEUE_BYTES))
        );
    }

    /// Every preset of the one list builds here, as in the simulator.
    #[test]
    fn every_listed_preset_builds() {
        for preset in salsify_eval::experiment::PRESETS {
            let preset = preset.replace("KBPS", "800");
            let built = build(&["--link", &preset]).unwrap();
            assert_eq!(built.0.is_none(), preset == "none", "{preset}");
        }
    }
}
