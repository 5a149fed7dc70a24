//! The emulated path's flags (`salsify link`, `demo`, `peer chromium`), converted into the
//! runtime's [`LinkPath`]; [`link_path`] builds the same from an experiment's link, for
//! `salsify eval`'s live cells.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use salsify_eval::experiment::{Experiment, ExperimentError, LinkSpec};
use salsify_netem::LossModel;
use salsify_runtime::{LinkPath, PathStart};
use salsify_time::Duration;

/// Longest one-way delay accepted, as in experiment files.
const MAX_DELAY_MS: u64 = 10_000;

/// The emulated path, shared by `salsify link`, `salsify demo` and `salsify peer`.
#[derive(Args, Debug, Clone)]
pub struct LinkFlags {
    /// Mahimahi trace: PREFIX (video over PREFIX.down, ACKs over PREFIX.up) or one file for
    /// both directions; or rate:FILE, a throughput log ("time rate" per interval, seconds and
    /// Mb/s unless stated: rate:FILE?unit=kbps&time=ms&interval=1s), both directions.
    /// Overrides --link.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[arg(
        long,
        default_value = "cellular",
        help = format!(
            "Synthetic link when no trace is given: {}",
            salsify_eval::experiment::link_presets_help()
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

impl From<LinkStartFlag> for PathStart {
    fn from(flag: LinkStartFlag) -> PathStart {
        match flag {
            LinkStartFlag::Call => PathStart::Call,
            LinkStartFlag::FirstDatagram => PathStart::FirstDatagram,
            LinkStartFlag::Launch => PathStart::Launch,
        }
    }
}

/// The path of an experiment's link (its trace or preset, queue, delay, loss and dropout
/// time) with the links' `seed`, built as the simulator builds them; `none` without a trace
/// is no emulation. The datagram overhead is left out (a live call carries its own) and the
/// trace's downlink carries the video. Errors name the experiment's field at fault.
pub fn link_path(
    seed: u64,
    link: &LinkSpec,
    start: PathStart,
) -> Result<LinkPath, ExperimentError> {
    let trace_name = match &link.trace {
        Some(p) => p.display().to_string(),
        None => format!("synthetic {}", link.preset),
    };
    let synthetic = link.trace.is_none();
    let (video, ack) = if link.preset == "none" && synthetic {
        (None, None)
    } else {
        let experiment = Experiment {
            seed,
            link: LinkSpec {
                datagram_overhead_bytes: 0,
                uplink: false,
                ..link.clone()
            },
            ..Experiment::default()
        };
        let c = experiment.sim_config()?;
        (Some(c.data_link), Some(c.feedback_link))
    };
    Ok(LinkPath {
        video,
        ack,
        trace_name,
        start,
        outage_at: (link.preset == "dropout" && synthetic)
            .then(|| Duration::from_secs_f64(link.dropout_at_s)),
    })
}

impl TryFrom<&LinkFlags> for LinkPath {
    type Error = anyhow::Error;

    /// The path these flags describe; errors name the flag at fault.
    fn try_from(f: &LinkFlags) -> Result<LinkPath> {
        if !(0.0..=1.0).contains(&f.ack_loss) {
            bail!("--ack-loss {} is not a probability (0 to 1)", f.ack_loss);
        }
        if f.ack_delay_ms.is_some_and(|ms| ms > MAX_DELAY_MS) {
            bail!("--ack-delay-ms: more than {MAX_DELAY_MS} ms");
        }
        let mut path = f.path(&f.link, "--link")?;
        if let Some(preset) = &f.ack_link {
            path.ack = f.path(preset, "--ack-link")?.ack;
        }
        if let Some(ack) = &mut path.ack {
            if let Some(ms) = f.ack_delay_ms {
                ack.propagation_delay = Duration::from_millis(ms);
            }
            if f.ack_loss > 0.0 {
                ack.loss.push(LossModel::iid(f.ack_loss));
            }
        }
        Ok(path)
    }
}

impl LinkFlags {
    /// The path of `preset` with the other flags, named by flag `flag` in errors.
    fn path(&self, preset: &str, flag: &str) -> Result<LinkPath> {
        if self.trace.is_none() {
            crate::usage::check_link(flag, preset)?;
        }
        let spec = LinkSpec {
            trace: self.trace.clone(),
            preset: preset.to_string(),
            queue_packets: self.queue,
            delay_ms: self.delay_ms,
            loss: self.loss,
            dropout_at_s: self.dropout_at,
            ..LinkSpec::default()
        };
        link_path(self.seed, &spec, self.link_start.into()).map_err(|e| {
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
        })
    }

    /// A name for the trace in log headers.
    pub fn trace_name(&self) -> String {
        match &self.trace {
            Some(p) => p.display().to_string(),
            None => format!("synthetic {}", self.link),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use salsify_netem::LinkConfig;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        path: LinkFlags,
    }

    fn flags(args: &[&str]) -> LinkFlags {
        let mut all = vec!["salsify"];
        all.extend_from_slice(args);
        Wrapper::try_parse_from(all).unwrap().path
    }

    fn build(args: &[&str]) -> Result<(Option<LinkConfig>, Option<LinkConfig>)> {
        LinkPath::try_from(&flags(args)).map(|p| (p.video, p.ack))
    }

    /// Errors name the flag at fault (not an experiment file's field), and a bad constant
    /// rate says what is wrong with it.
    #[test]
    fn link_errors_name_the_flag() {
        let err = build(&["--ack-link", "bogus"]).unwrap_err();
        assert_eq!(crate::usage::exit_code(&err), 2, "{err:#}");
        let err = format!("{err:#}");
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

    /// Every preset of the one list builds here, as in the simulator.
    #[test]
    fn every_listed_preset_builds() {
        for preset in salsify_eval::experiment::presets() {
            let preset = preset.replace("KBPS", "800");
            let built = build(&["--link", &preset]).unwrap();
            assert_eq!(built.0.is_none(), preset == "none", "{preset}");
        }
    }

    /// `salsify link --trace rate:FILE` relays over the log's trace both ways; a bad line is
    /// an error on `--trace` naming the line.
    #[test]
    fn a_rate_log_is_a_relay_link() {
        let dir = std::env::temp_dir().join(format!("salsify-link-rate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (good, bad) = (dir.join("good.rate"), dir.join("bad.rate"));
        std::fs::write(&good, "time_s Mbps\n600.2 1.2\n600.4 2.4\n").unwrap();
        std::fs::write(&bad, "600.2 1.2\n600.4 -2\n").unwrap();
        let setting = format!("rate:{}", good.display());
        let (video, ack) = build(&["--trace", &setting]).unwrap();
        let (video, ack) = (video.unwrap(), ack.unwrap());
        assert_eq!(video.trace.opportunities_per_period(), 60);
        assert_eq!(video.trace, ack.trace);
        let setting = format!("rate:{}", bad.display());
        let err = build(&["--trace", &setting]).unwrap_err().to_string();
        assert!(
            err.starts_with("--trace: ") && err.contains("line 2: the rate"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The flags and an experiment's link of the same values give the same path: the
    /// outage time for the dropout preset only, the ACK overrides on the flags' side only.
    #[test]
    fn flags_and_experiments_give_one_path() {
        let from_flags =
            LinkPath::try_from(&flags(&["--link", "dropout", "--dropout-at", "3"])).unwrap();
        let spec = LinkSpec {
            preset: "dropout".into(),
            dropout_at_s: 3.0,
            datagram_overhead_bytes: 29,
            ..LinkSpec::default()
        };
        let from_spec = link_path(1, &spec, PathStart::Call).unwrap();
        // LinkConfig has no PartialEq: its Debug form says every field.
        let same = |a: &Option<LinkConfig>, b: &Option<LinkConfig>| {
            assert!(a.is_some());
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        };
        same(&from_flags.video, &from_spec.video);
        same(&from_flags.ack, &from_spec.ack);
        assert_eq!(from_flags.trace_name, "synthetic dropout");
        assert_eq!(from_flags.outage_at, Some(Duration::from_secs(3)));
        assert_eq!(from_spec.outage_at, from_flags.outage_at);
        let cellular = LinkPath::try_from(&flags(&["--ack-delay-ms", "5"])).unwrap();
        assert_eq!(cellular.outage_at, None);
        let ack = cellular.ack.unwrap();
        assert_eq!(ack.propagation_delay, Duration::from_millis(5));
        assert_ne!(
            cellular.video.unwrap().propagation_delay,
            ack.propagation_delay
        );
    }
}
