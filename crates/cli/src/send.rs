//! `salsify send`: stream a video source to a receiver (or a relay) over UDP, with any scheme
//! that runs live.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use salsify_schemes::families::salsify::Shorthands;
use salsify_schemes::{SchemeConfig, SchemeError, SchemeParams};
use salsify_time::Duration;
use salsify_transport::{SenderConfig, SenderMode};

use crate::dashboard;
use crate::input::Size;
use crate::keys::{plaintext_warning, KeyArgs};
use crate::runtime::sender_loop::{self, SenderLoopConfig, DEFAULT_RESET_AFTER};
use crate::runtime::{self, udp, CameraConfig, VideoSource};

/// Flags of `salsify send`.
#[derive(Args, Debug, Clone)]
pub struct SendArgs {
    /// Where the receiver (or `salsify link`) listens, HOST:PORT.
    #[arg(long)]
    pub to: String,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub scheme: SchemeArgs,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Write a per-frame CSV log here (frames sent, pictures skipped or dropped; times in µs
    /// on the machine's monotonic clock, comparable with `salsify recv --log`).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Stop after this many seconds (default: until Ctrl-C or the end of the input).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No status line per second.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: crate::dashboard::DashboardArgs,
}

/// Where pictures come from.
#[derive(Args, Debug, Clone)]
pub struct SourceArgs {
    /// `synthetic` (built in), a `.y4m` file (played at its own rate, like a webcam), `-` for
    /// Y4M on standard input (`ffmpeg -i any.mp4 -f yuv4mpegpipe - | salsify send --input -`),
    /// a live screen `x11grab:DISPLAY[+X,Y]` (e.g. `x11grab::0.0`; `x11grab:` is $DISPLAY) or
    /// camera `v4l2:DEVICE` (`v4l2:` is /dev/video0), grabbed by ffmpeg at --size and --fps
    /// and sent as grabbed, or any other file, decoded through ffmpeg.
    #[arg(long, default_value = "synthetic")]
    pub input: String,
    /// Picture size of the synthetic source, or the area a live screen or camera is asked for.
    #[arg(long, default_value = "640x360")]
    pub size: Size,
    /// Frame rate of the synthetic source, or what a live screen or camera is asked for
    /// (files play at their own rate).
    #[arg(long, default_value_t = 30.0, value_parser = crate::input::parse_fps)]
    pub fps: f64,
    /// Play a file again from the start when it ends (not for `-`).
    #[arg(long = "loop")]
    pub looped: bool,
}

/// How the two encodes of a Salsify picture share cores (`--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EncodeMode {
    /// Salsify-1c: one core, the two encodes in series.
    S1,
    /// Salsify-2c: two cores, the two encodes in parallel.
    S2,
}

/// The scheme and its parameters.
#[derive(Args, Debug, Clone)]
pub struct SchemeArgs {
    /// The scheme: any registered scheme that runs live (docs/schemes.md): salsify-2c,
    /// salsify-1c, salsify-no-grace, salsify-conventional-codec,
    /// salsify-conventional-transport, salsify-paper, conventional (WebRTC: libwebrtc's GoogCC through the goog_cc port, its pacer and video
    /// sender, libvpx CBR, NACK/PLI), vidaptive (Copa, padding, encoder pause/reset), sprout or
    /// sprout-ewma (Sprout's forecast window sizing each frame, as Alfalfa), or sprout-bulk /
    /// sprout-ewma-bulk (Sprout's filler, no video), or a family added since. Default
    /// the registry's (salsify-2c), or
    /// what the Salsify shorthands below name. (The oracle reads the link's future and runs
    /// only in the simulator.)
    #[arg(long)]
    pub scheme: Option<String>,
    /// Scheme parameters: a TOML file with the tables of experiment files (`salsify`,
    /// `salsify_receiver`, `conventional`, `vidaptive`); the flags
    /// below override it.
    #[arg(long)]
    pub scheme_params: Option<PathBuf>,
    /// Salsify shorthand: s2 = salsify-2c (the two encodes of a picture in parallel on two
    /// cores), s1 = salsify-1c (one after the other on one core). With an ablation below it
    /// sets that ablation's cores.
    #[arg(long, value_enum)]
    pub mode: Option<EncodeMode>,
    /// Salsify shorthand for --scheme salsify-no-grace: no grace period in fragments (the
    /// receiver's inter-arrival estimate then counts the sender's pauses as low capacity).
    /// With another salsify scheme it turns that scheme's grace period off.
    #[arg(long)]
    pub no_grace_period: bool,
    /// Salsify shorthand for --scheme salsify-conventional-codec: the budget becomes a size
    /// target before encoding (one encode, quality predicted from a small trial encode),
    /// always sent.
    #[arg(long, conflicts_with = "conventional_transport")]
    pub conventional_codec: bool,
    /// Salsify shorthand for --scheme salsify-conventional-transport: quality updated once a
    /// second from the averaged rate, one encode per picture, every picture sent.
    #[arg(long)]
    pub conventional_transport: bool,
    /// Salsify: the delay target d of the budget MTU x (d / tau - N), in milliseconds
    /// [default: 100].
    #[arg(long)]
    pub delay_target_ms: Option<u64>,
    /// Salsify: finest VP8 quantizer index the sender may ask for (0..=127; lower is finer).
    /// On an unconstrained path Salsify climbs to the finest, whose encodes are the slowest
    /// [default: 3].
    #[arg(long)]
    pub finest_quality: Option<u8>,
    /// Salsify: smallest gap between fragments in µs (the pacer's floor: 1400 B per gap caps
    /// the sending rate, 22 Mb/s at 500) [default: 500].
    #[arg(long)]
    pub pacing_min_gap_us: Option<u64>,
    /// libvpx speed, -16..=-1 (more negative is faster and coarser).
    #[arg(long, default_value_t = -8, allow_hyphen_values = true)]
    pub cpu_used: i32,
    /// Session id of the first session, for schemes that tell sessions apart by one
    /// (default: chosen from the process id and time).
    #[arg(long)]
    pub connection_id: Option<u16>,
    /// Start a new session (a fresh sender, keyframe first) after this many seconds without
    /// feedback while sending [default: 2]. `salsify demo` (and the evaluation's live cells)
    /// never do unless this is given: their receiver is in the same process and cannot
    /// restart, so a silence there is the link's outage, which the simulator never answers
    /// with a fresh sender either.
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub reset_after: Option<Duration>,
}

impl SchemeArgs {
    /// The scheme these flags describe; it must run live.
    pub fn scheme(&self) -> Result<SchemeConfig> {
        if !(-16..=-1).contains(&self.cpu_used) {
            bail!("--cpu-used {} is not in -16..=-1", self.cpu_used);
        }
        let mut params = read_params(self.scheme_params.as_deref())?;
        let salsify = &salsify_schemes::families::salsify::FAMILY;
        let name = self.scheme.as_deref().unwrap_or_else(|| self.shorthand());
        let scheme = if salsify.owns(name) {
            let table = salsify_schemes::families::salsify::SENDER_TABLE;
            let base = params.get_or_default(table).map_err(|e| anyhow!("{e}"))?;
            params.set(table, &self.salsify_sender(base)?);
            let parallel = self.mode.map(|mode| mode == EncodeMode::S2);
            salsify.configure_with(name, &params, parallel)
        } else if let Some(flag) = self.salsify_flags().first() {
            bail!("{flag} applies to the salsify schemes, not {name}");
        } else {
            SchemeConfig::named(name, &params)
        }
        .map_err(|e| anyhow!("--scheme: {e}"))?;
        if !scheme.runs_live() {
            bail!("{}", SchemeError::SimulationOnly(scheme.name()));
        }
        Ok(scheme)
    }

    /// The scheme the Salsify shorthands name when --scheme is not given.
    fn shorthand(&self) -> &'static str {
        salsify_schemes::families::salsify::FAMILY.shorthand(Shorthands {
            serial: self.mode == Some(EncodeMode::S1),
            no_grace_period: self.no_grace_period,
            conventional_codec: self.conventional_codec,
            conventional_transport: self.conventional_transport,
        })
    }

    /// The Salsify-only flags given.
    fn salsify_flags(&self) -> Vec<&'static str> {
        [
            (self.mode.is_some(), "--mode"),
            (self.no_grace_period, "--no-grace-period"),
            (self.conventional_codec, "--conventional-codec"),
            (self.conventional_transport, "--conventional-transport"),
            (self.delay_target_ms.is_some(), "--delay-target-ms"),
            (self.finest_quality.is_some(), "--finest-quality"),
            (self.pacing_min_gap_us.is_some(), "--pacing-min-gap-us"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// The Salsify sender parameters: `base` (defaults or the parameter file) with the flags
    /// applied.
    fn salsify_sender(&self, base: SenderConfig) -> Result<SenderConfig> {
        let mut config = base;
        if let Some(ms) = self.delay_target_ms {
            if !(1..=10_000).contains(&ms) {
                bail!("--delay-target-ms {ms}: give 1 to 10000 ms");
            }
            config.delay_target = Duration::from_millis(ms);
        }
        if let Some(q) = self.finest_quality {
            config.min_quality =
                salsify_codec::Quality::new(q).map_err(|e| anyhow!("--finest-quality: {e}"))?;
        }
        if let Some(us) = self.pacing_min_gap_us {
            if us > 1_000_000 {
                bail!("--pacing-min-gap-us {us}: more than a second between fragments");
            }
            let min_gap = Duration::from_micros(us);
            config.pacing.min_gap = min_gap;
            config.pacing.max_gap = config.pacing.max_gap.max(min_gap);
        }
        if self.no_grace_period {
            config.grace_period = false;
        }
        if self.conventional_codec {
            config.mode = SenderMode::ConventionalCodec;
        }
        if self.conventional_transport {
            config.mode = SenderMode::ConventionalTransport {
                update_interval: Duration::from_secs(1),
            };
        }
        config
            .validate()
            .map_err(|e| anyhow!("sender settings: {e}"))?;
        Ok(config)
    }

    /// The loop configuration for these flags, sending to `to`.
    pub fn loop_config(&self, to: std::net::SocketAddr) -> Result<SenderLoopConfig> {
        Ok(SenderLoopConfig {
            connection_id: self.connection_id.unwrap_or_else(fresh_connection_id),
            cpu_used: self.cpu_used,
            reset_after: Some(self.reset_after.unwrap_or(DEFAULT_RESET_AFTER)),
            ..SenderLoopConfig::new(to, self.scheme()?)
        })
    }
}

/// Scheme parameters from a TOML file (the tables of experiment files); defaults without one.
pub fn read_params(path: Option<&std::path::Path>) -> Result<SchemeParams> {
    let Some(path) = path else {
        return Ok(SchemeParams::default());
    };
    let text = crate::paths::read_text("scheme parameter file", path)?;
    let params: SchemeParams = toml::from_str(&text)
        .with_context(|| format!("scheme parameters in '{}'", path.display()))?;
    params
        .validate()
        .with_context(|| format!("scheme parameters in '{}'", path.display()))?;
    Ok(params)
}

impl SourceArgs {
    /// The camera these flags describe.
    pub fn camera(&self) -> CameraConfig {
        CameraConfig {
            input: self.input.clone(),
            size: self.size,
            fps: self.fps,
            looped: self.looped,
        }
    }
}

/// A connection id unlikely to match a previous run's.
fn fresh_connection_id() -> u16 {
    let t = runtime::clock::now().as_micros();
    (t as u16) ^ (std::process::id() as u16).rotate_left(7)
}

/// Runs `salsify send`.
pub fn run(args: &SendArgs) -> Result<()> {
    let to = udp::resolve_destination(&args.to)?;
    crate::paths::check_outputs(&[("--log", args.log.as_deref())])?;
    let config = SenderLoopConfig {
        log: args.log.clone(),
        status: !args.quiet,
        secure: args.keys.secure_config()?,
        ..args.scheme.loop_config(to)?
    };
    let source = VideoSource::open(&args.source.camera())?;
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        let how = match &config.secure {
            Some(c) => format!("encrypted, peer key {}", c.peer.fingerprint()),
            None => "plaintext".to_string(),
        };
        eprintln!("salsify send: {} to {to} ({how})", config.scheme.name());
    }
    if config.secure.is_none() {
        eprintln!("{}", plaintext_warning("salsify send"));
    }
    let title = format!("salsify send: {} to {to}", config.scheme.name());
    let scheme = Some(config.scheme.name());
    let dash = dashboard::start(&args.dashboard, &title, scheme, dashboard::Role::Send)?;
    let totals = sender_loop::run(config, Box::new(source), stop, dashboard::observer(&dash));
    dashboard::finish(dash);
    let totals = totals?;
    let s = totals.stats;
    if totals.pictures == 0 {
        bail!(
            "no picture was read from '{}': nothing sent",
            args.source.input
        );
    }
    let options = match s.sent_better + s.sent_worse {
        0 => String::new(),
        _ => format!(" ({} better, {} worse)", s.sent_better, s.sent_worse),
    };
    eprintln!(
        "salsify send: {}: {} pictures, {} frames sent{options}, {} keyframes, {} skipped, {} dropped, over {} sessions",
        totals.scheme,
        totals.pictures,
        s.frames_sent,
        s.keyframes,
        s.skipped,
        s.dropped,
        totals.sessions
    );
    if let Some(path) = &args.log {
        eprintln!("salsify send: log in {}", path.display());
    }
    if let Some(why) = &totals.source_failed {
        bail!(
            "the input '{}' failed after {} pictures: {why}",
            args.source.input,
            totals.pictures
        );
    }
    if args.keys.key.is_some() && !totals.keyed {
        bail!(
            "{to} never answered the handshake (is the receiver running, with --key/--peer-key \
             matching ours?): nothing was delivered"
        );
    }
    Ok(())
}
