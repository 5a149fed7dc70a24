//! `salsify send`: stream a video source to a receiver (or a relay) over UDP.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use salsify_time::Duration;
use salsify_transport::{SenderConfig, SenderMode};

use crate::input::Size;
use crate::runtime::camera::CameraConfig;
use crate::runtime::encoder::EncodeMode;
use crate::runtime::observe::Observer;
use crate::runtime::sender_loop::{self, SenderLoopConfig};
use crate::runtime::{self, udp};

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
    /// Write a per-frame CSV log here (sent and skipped pictures; times in µs on the
    /// machine's monotonic clock, comparable with `salsify recv --log`).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Stop after this many seconds (default: until Ctrl-C or the end of the input).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No status line per second.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Where pictures come from.
#[derive(Args, Debug, Clone)]
pub struct SourceArgs {
    /// `synthetic` (built in), a `.y4m` file (played at its own rate, like a webcam), `-` for
    /// Y4M on standard input (`ffmpeg -i any.mp4 -f yuv4mpegpipe - | salsify send --input -`),
    /// or any other file, decoded through ffmpeg.
    #[arg(long, default_value = "synthetic")]
    pub input: String,
    /// Picture size of the synthetic source.
    #[arg(long, default_value = "640x360")]
    pub size: Size,
    /// Frame rate of the synthetic source (files play at their own rate).
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Play a file again from the start when it ends (not for `-`).
    #[arg(long = "loop")]
    pub looped: bool,
}

/// The sender's scheme: Salsify 1c/2c and the paper's ablations.
#[derive(Args, Debug, Clone)]
pub struct SchemeArgs {
    /// s2 = Salsify-2c (the two encodes of a picture in parallel on two cores), s1 =
    /// Salsify-1c (one after the other on one core).
    #[arg(long, value_enum, default_value = "s2")]
    pub mode: EncodeMode,
    /// Ablation: no grace period in fragments (the receiver's inter-arrival estimate then
    /// counts the sender's pauses between frames as low capacity).
    #[arg(long)]
    pub no_grace_period: bool,
    /// Ablation "conventional codec": the budget becomes a size target before encoding
    /// (one encode, quality predicted from a small trial encode), always sent.
    #[arg(long, conflicts_with = "conventional_transport")]
    pub conventional_codec: bool,
    /// Ablation "conventional transport + codec": quality updated once a second from the
    /// averaged rate, one encode per picture, every picture sent.
    #[arg(long)]
    pub conventional_transport: bool,
    /// The delay target d of the budget MTU x (d / tau - N), in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub delay_target_ms: u64,
    /// Finest VP8 quantizer index the sender may ask for (0..=127; lower is finer). On an
    /// unconstrained path Salsify climbs to the finest, whose encodes are the slowest.
    #[arg(long, default_value_t = 3)]
    pub finest_quality: u8,
    /// Smallest gap between fragments in µs (the pacer's floor: 1400 B per gap caps the
    /// sending rate, 22 Mb/s at the default 500).
    #[arg(long, default_value_t = 500)]
    pub pacing_min_gap_us: u64,
    /// libvpx speed, -16..=-1 (more negative is faster and coarser).
    #[arg(long, default_value_t = -8, allow_hyphen_values = true)]
    pub cpu_used: i32,
    /// Session id of the first session (default: chosen from the process id and time).
    #[arg(long)]
    pub connection_id: Option<u16>,
    /// Start a new session (keyframe) after this many seconds without an ACK while sending.
    #[arg(long, default_value = "2", value_parser = runtime::parse_seconds)]
    pub reset_after: Duration,
}

impl SchemeArgs {
    /// The sender configuration these flags describe.
    pub fn sender_config(&self) -> Result<SenderConfig> {
        if !(-16..=-1).contains(&self.cpu_used) {
            bail!("--cpu-used {} is not in -16..=-1", self.cpu_used);
        }
        let mode = match (self.conventional_codec, self.conventional_transport) {
            (true, _) => SenderMode::ConventionalCodec,
            (_, true) => SenderMode::ConventionalTransport {
                update_interval: Duration::from_secs(1),
            },
            _ => SenderMode::Salsify,
        };
        let min_quality = salsify_codec::Quality::new(self.finest_quality)
            .map_err(|e| anyhow::anyhow!("--finest-quality: {e}"))?;
        let defaults = SenderConfig::default();
        let pacing = salsify_transport::PacingConfig {
            min_gap: Duration::from_micros(self.pacing_min_gap_us),
            max_gap: defaults
                .pacing
                .max_gap
                .max(Duration::from_micros(self.pacing_min_gap_us)),
            ..defaults.pacing
        };
        let config = SenderConfig {
            min_quality,
            pacing,
            connection_id: self.connection_id.unwrap_or_else(fresh_connection_id),
            delay_target: Duration::from_millis(self.delay_target_ms),
            grace_period: !self.no_grace_period,
            mode,
            ..defaults
        };
        config
            .validate()
            .map_err(|e| anyhow::anyhow!("sender settings: {e}"))?;
        Ok(config)
    }
}

impl SourceArgs {
    /// The camera these flags describe.
    pub fn camera(&self) -> Result<CameraConfig> {
        if self.looped && self.input == "-" {
            bail!("--loop cannot replay standard input");
        }
        Ok(CameraConfig {
            input: self.input.clone(),
            size: self.size,
            fps: self.fps,
            looped: self.looped,
        })
    }
}

/// A connection id unlikely to match a previous run's.
fn fresh_connection_id() -> u16 {
    let t = runtime::clock::now().as_micros();
    (t as u16) ^ (std::process::id() as u16).rotate_left(7)
}

/// The loop configuration for `args`, sending to `to`.
pub fn loop_config(args: &SendArgs) -> Result<SenderLoopConfig> {
    let to = udp::resolve(&args.to)?;
    Ok(SenderLoopConfig {
        camera: args.source.camera()?,
        sender: args.scheme.sender_config()?,
        mode: args.scheme.mode,
        cpu_used: args.scheme.cpu_used,
        reset_after: args.scheme.reset_after,
        log: args.log.clone(),
        status: !args.quiet,
        ..SenderLoopConfig::new(to)
    })
}

/// Runs `salsify send`.
pub fn run(args: &SendArgs) -> Result<()> {
    let config = loop_config(args)?;
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    let totals = sender_loop::run(config, stop, Observer::default())?;
    let s = totals.stats;
    eprintln!(
        "salsify send: {} pictures, {} frames sent ({} better, {} worse, {} forced), {} skipped, {} sessions",
        totals.pictures,
        s.frames_sent(),
        s.sent_better,
        s.sent_worse,
        s.sent_forced,
        s.skipped,
        totals.sessions
    );
    if let Some(path) = &args.log {
        eprintln!("salsify send: log in {}", path.display());
    }
    Ok(())
}
