//! The scheme's flags (`salsify send`, `salsify demo`) and the parameter file (`send`,
//! `recv`), converted into the runtime's [`SchemeChoice`] and [`SenderSide`].

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use salsify_runtime::{SchemeChoice, SenderSide};
use salsify_schemes::families::salsify::Shorthands;
use salsify_schemes::SchemeParams;
use salsify_time::Duration;
use salsify_transport::{SenderConfig, SenderMode};

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
    /// The scheme: salsify-2c, salsify-1c, salsify-no-grace, salsify-conventional-codec,
    /// salsify-conventional-transport, salsify-paper,
    /// conventional (WebRTC: libwebrtc's GoogCC through the goog_cc port, its pacer and video
    /// sender, libvpx CBR, NACK/PLI), vidaptive (Copa, padding, encoder pause/reset), sprout or
    /// sprout-ewma (Sprout's forecast window sizing each frame, as Alfalfa), or sprout-bulk /
    /// sprout-ewma-bulk (Sprout's filler, no video). Default salsify-2c, or
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
    /// Salsify: the functional codec, vp8 or av1 (`[salsify] codec`; AV1's quality options are
    /// `[salsify.av1]`'s). The receiver learns it from the stream [default: vp8].
    #[arg(long, value_parser = parse_codec)]
    pub codec: Option<salsify_codec::FunctionalCodec>,
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
    #[arg(long, value_parser = crate::runtime::parse_seconds)]
    pub reset_after: Option<Duration>,
}

impl SchemeArgs {
    /// The sender these flags describe; without `--reset-after` it starts a new session
    /// after `reset_default` of silence (`None`: never).
    pub fn sender(&self, reset_default: Option<Duration>) -> Result<SenderSide> {
        SenderSide::check_cpu_used(self.cpu_used)?;
        let scheme = self.choice()?;
        crate::usage::check_live_scheme("--scheme", &scheme.name)?;
        Ok(SenderSide {
            scheme,
            cpu_used: self.cpu_used,
            connection_id: self.connection_id,
            reset_after: self.reset_after.or(reset_default),
        })
    }

    /// The scheme these flags describe: its name and parameters, the Salsify flags applied.
    pub fn choice(&self) -> Result<SchemeChoice> {
        let mut params = read_params(self.scheme_params.as_deref())?;
        if let Some(name) = &self.scheme {
            crate::usage::check_scheme("--scheme", name)?;
        }
        let name = self.scheme.as_deref().unwrap_or_else(|| self.shorthand());
        if salsify_schemes::families::salsify::FAMILY.owns(name) {
            let table = salsify_schemes::families::salsify::SENDER_TABLE;
            let base = params.get_or_default(table).map_err(|e| anyhow!("{e}"))?;
            params.set(table, &self.salsify_sender(base)?);
        } else if let Some(flag) = self.salsify_flags().first() {
            return Err(crate::usage::usage(format!(
                "{flag} applies to the salsify schemes, not {name}"
            )));
        }
        Ok(SchemeChoice {
            name: name.to_string(),
            params,
            parallel: self.mode.map(|mode| mode == EncodeMode::S2),
        })
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
            (self.codec.is_some(), "--codec"),
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
        if let Some(codec) = self.codec {
            config.codec = codec;
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
}

/// `--codec`'s value: `vp8` or `av1`.
pub(crate) fn parse_codec(
    name: &str,
) -> std::result::Result<salsify_codec::FunctionalCodec, String> {
    salsify_codec::FunctionalCodec::from_name(name)
        .ok_or_else(|| format!("unknown codec {name:?}: vp8 or av1"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use salsify_runtime::sender_loop::DEFAULT_RESET_AFTER;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        scheme: SchemeArgs,
    }

    fn args(flags: &[&str]) -> SchemeArgs {
        let mut all = vec!["salsify"];
        all.extend_from_slice(flags);
        Wrapper::try_parse_from(all).unwrap().scheme
    }

    /// The shorthands name a scheme, --mode sets an ablation's cores, and the Salsify flags
    /// are refused for another family.
    #[test]
    fn flags_name_the_scheme() {
        let choice = args(&["--no-grace-period", "--mode", "s1"])
            .choice()
            .unwrap();
        assert_eq!(choice.name, "salsify-no-grace");
        // The configured scheme is opaque to drivers; its Debug text shows the settings.
        let built = format!("{:?}", choice.build().unwrap());
        assert!(built.contains("parallel: false"), "{built}");
        assert!(built.contains("grace_period: false"), "{built}");
        assert_eq!(args(&[]).choice().unwrap().name, "salsify-2c");
        let err = args(&["--scheme", "conventional", "--delay-target-ms", "50"])
            .choice()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--delay-target-ms applies to the salsify schemes, not conventional"
        );
    }

    /// `salsify send` resets after 2 s of silence unless told; the demo (no default) never
    /// does unless --reset-after is given; a bad libvpx speed is refused first.
    #[test]
    fn reset_after_is_the_callers_default_unless_given() {
        let plain = args(&[]);
        let alone = plain.sender(Some(DEFAULT_RESET_AFTER)).unwrap();
        assert_eq!(alone.reset_after, Some(DEFAULT_RESET_AFTER));
        assert_eq!(plain.sender(None).unwrap().reset_after, None);
        let given = args(&["--reset-after", "0.5"]).sender(None).unwrap();
        assert_eq!(given.reset_after, Some(Duration::from_millis(500)));
        let err = args(&["--cpu-used", "0"]).sender(None).unwrap_err();
        assert!(err.to_string().starts_with("--cpu-used 0"), "{err}");
    }
}
