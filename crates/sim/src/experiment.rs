//! One experiment, as a TOML file or command-line flags describe it: scheme, video, link,
//! duration and seed. [`Experiment::sim_config`] turns it into a simulator configuration.
//!
//! ```toml
//! scheme = "salsify-2c"          # salsify-1c, salsify-no-grace, salsify-conventional-codec,
//!                                # salsify-conventional-transport, conventional (libwebrtc's
//!                                # GoogCC + CBR), vidaptive, oracle, sprout, sprout-ewma,
//!                                # sprout-bulk, sprout-ewma-bulk
//! video = "synthetic"            # or a .y4m / .mp4 path (played forwards and backwards)
//! # clip = "live-excerpt"         # instead: as a live cell plays it (see `Clip`)
//! size = "1280x720"              # synthetic source only
//! fps = 60                       # synthetic source only
//! duration_s = 30
//! seed = 1
//! # audio = "synthetic"          # the call's audio: none (default), synthetic (a voice with
//! #                              # timing marks) or a 48 kHz WAV file
//! # sync = "none"                # audio at its own least delay, not held to the video's
//! # two_way = true               # a call: B's video back over PREFIX.up, each side's ACKs
//! #                              # queued behind the other side's video (`simulate_two_way`)
//!
//! [link]
//! trace = "../shared/traces/Verizon-LTE-short"   # PREFIX: video over PREFIX.down, ACKs over PREFIX.up
//! # trace = "rate:FILE"           # a throughput log ("time rate" per interval) both ways, see
//! #                               # salsify_netem::rate_log (options: rate:FILE?unit=kbps&interval=1s)
//! # preset = "cellular"         # instead of a trace: cellular, intermittent, wifi, ramp,
//! #                             # dropout, constant:KBPS; slow and fading: fade, 3g,
//! #                             # ack-stall, cliff, vidaptive-fig1 (see presets())
//! queue_packets = 256
//! delay_ms = 20                  # one way, each direction
//! loss = 0.0                     # i.i.d. loss on the video direction
//! datagram_overhead_bytes = 0    # bytes added to each datagram both ways (29: encrypted)
//!
//! # Optional: the scheme's own parameters, one table per scheme family; only the table of
//! # the scheme run is used. Every field and its default is documented on the config type
//! # (salsify-transport SenderConfig / ReceiverConfig, salsify-baselines ConventionalConfig,
//! # VidaptiveConfig, OracleConfig); an unknown or out-of-range field is an error naming it.
//! [salsify]
//! delay_target_ms = 100.0
//! [conventional]
//! encoder_max_kbps = 12000
//! ```

use std::path::{Path, PathBuf};

use salsify_netem::{
    generators, presets, Bitrate, LinkConfig, LossModel, QueueLimit, RateLogSpec, Trace,
};
use salsify_schemes::{SchemeConfig, SchemeError, SchemeParams};
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::{CostModel, SimConfig};

/// The schemes `salsify sim` can run: every registered scheme but the browser peers.
pub fn schemes() -> Vec<&'static str> {
    salsify_schemes::registry::scheme_names()
}

/// The link presets a [`LinkSpec`] can name: `salsify_netem::presets::BUILTIN`'s, in its
/// order (`constant:KBPS` stands for any rate). Unless a preset says otherwise the ACK
/// direction replays the video direction's trace without its losses; all are seeded by the
/// experiment's seed where random (see `salsify_netem::presets` for each one's definition,
/// and `docs/simulator.md`). `none` is no emulation: the live relay forwards at once; the
/// simulator runs an unconstrained 1 Gb/s path without added delay, queue limit or loss.
pub fn presets() -> Vec<&'static str> {
    presets::BUILTIN.iter().map(|p| p.name).collect()
}

/// The presets' names and the link models a crate added (`Registry::with_link`), for
/// messages.
fn preset_names() -> String {
    let added = salsify_schemes::registry::installed()
        .links()
        .map(|l| l.name());
    let names: Vec<&str> = presets().into_iter().chain(added).collect();
    names.join(", ")
}

/// The link presets and the added link models as help text, one list for every command's
/// `--link`: "cellular (Sprout-style, about 5 Mb/s), ..., or none (no emulation)".
pub fn link_presets_help() -> String {
    let added = salsify_schemes::registry::installed()
        .links()
        .map(|l| (l.name(), l.about()));
    let mut items: Vec<String> = presets::BUILTIN
        .iter()
        .filter(|p| p.name != "none")
        .map(|p| (p.name, p.about))
        .chain(added)
        .map(|(name, about)| match name {
            "constant:KBPS" => name.to_string(),
            _ => format!("{name} ({about})"),
        })
        .collect();
    if let Some(none) = presets::find("none") {
        let last = format!("or none ({})", none.about);
        items.push(last);
    }
    items.join(", ")
}

/// Latest outage of the `dropout` preset, in seconds (a million: 11.6 days).
pub const MAX_DROPOUT_AT_S: f64 = 1e6;

/// Most bytes `datagram_overhead_bytes` may add to a datagram.
pub const MAX_DATAGRAM_OVERHEAD: u32 = 1000;

/// Highest frame rate of the synthetic video.
pub const MAX_FPS: u32 = 1000;

/// Highest rate of `constant:KBPS` (10 Gb/s).
pub const MAX_CONSTANT_KBPS: u64 = 10_000_000;

/// Rate of the `none` preset in the simulator: far above any video rate.
const UNCONSTRAINED_KBPS: u64 = 1_000_000;

/// An experiment. Every field has a default, so an empty file is a valid experiment. A key
/// that is neither a field nor a registered parameter table is an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Experiment {
    /// Which scheme (see [`schemes`]).
    pub scheme: String,
    /// `synthetic`, or a video file.
    pub video: String,
    /// Synthetic source size, `WIDTHxHEIGHT`.
    pub size: String,
    /// Synthetic source frame rate.
    pub fps: u32,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Seed of every random choice (link loss, synthetic traces, synthetic video).
    pub seed: u64,
    /// libvpx speed.
    pub cpu_used: i32,
    /// Modelled codec time.
    pub cost: CostModel,
    /// How the video is played: the whole clip (default; then not written out, so run ids
    /// stay as they were) or a live cell's barcoded excerpt.
    #[serde(skip_serializing_if = "Clip::is_whole")]
    pub clip: Clip,
    /// Seconds skipped before Sprout's network measurement scores the run (Sprout's own
    /// experiment skips the first minute). Default 0, then not written out (run ids stay
    /// as they were).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub network_skip_s: f64,
    /// The call's audio beside the video: `none` (default; then not written out, so run ids
    /// stay as they were), `synthetic` (a voice with a timing mark each second) or a WAV
    /// file at 48 kHz.
    #[serde(skip_serializing_if = "is_no_audio")]
    pub audio: String,
    /// Lip sync: `video` (default: the audio is held back to the video's delay; not written
    /// out) or `none` (the audio plays at its own least delay).
    #[serde(skip_serializing_if = "is_video_sync")]
    pub sync: String,
    /// A two-way call ([`crate::simulate_two_way`]): side A's video over the video link
    /// (`PREFIX.down`), side B's back over the ACK link (`PREFIX.up`), each side's feedback
    /// over the other's video link, behind its video; i.i.d. `loss` then applies to both
    /// links. Default false (one-way), then not written out (run ids stay as they were).
    #[serde(skip_serializing_if = "is_false")]
    pub two_way: bool,
    /// The network.
    pub link: LinkSpec,
    /// The scheme parameter tables given (`[salsify]`, `[conventional]`, ... : one table per
    /// name a registered family reads, each its family's type; every field and its default
    /// is documented on the type and in docs/schemes.md).
    #[serde(flatten)]
    pub params: SchemeParams,
}

impl Default for Experiment {
    fn default() -> Self {
        Experiment {
            scheme: salsify_schemes::registry::default_scheme().into(),
            video: "synthetic".into(),
            size: "1280x720".into(),
            fps: 60,
            duration_s: 30.0,
            seed: 1,
            cpu_used: -8,
            cost: CostModel::default(),
            clip: Clip::Whole,
            network_skip_s: 0.0,
            audio: "none".into(),
            sync: "video".into(),
            two_way: false,
            link: LinkSpec::default(),
            params: SchemeParams::default(),
        }
    }
}

/// Pictures of the barcoded excerpt a live cell's camera loops (5 s at 30 fps): enough
/// distinct barcodes that a late picture is never taken for a newer one, few enough to keep
/// beside the results at 1280x720.
pub const LIVE_EXCERPT_FRAMES: u64 = 150;

/// How an experiment's video is played.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clip {
    /// The whole clip (up to 3600 pictures) forwards, then backwards and so on, so the loop
    /// has no cut; the synthetic source never repeats.
    #[default]
    Whole,
    /// What a live cell's camera plays: the video's first [`LIVE_EXCERPT_FRAMES`] pictures
    /// (for the synthetic source, at the experiment's size and rate), each with its barcode
    /// stamped in, looped with a cut back to the first. The simulated twin of a live cell
    /// plays this, so the two code the same pictures in the same order.
    LiveExcerpt,
}

impl Clip {
    /// The default, left out when an experiment is written.
    pub fn is_whole(&self) -> bool {
        *self == Clip::Whole
    }
}

/// The emulated network path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkSpec {
    /// Mahimahi trace prefix: video over `PREFIX.down`, ACKs over `PREFIX.up`; or one file,
    /// used for video with ACKs over the same trace; or `rate:FILE`, a throughput log
    /// (`salsify_netem::rate_log`) turned into a trace, both directions.
    pub trace: Option<PathBuf>,
    /// A synthetic link when no trace is given (see [`presets()`]).
    pub preset: String,
    /// DropTail queue in packets (0 = unlimited).
    pub queue_packets: u32,
    /// One-way propagation delay in each direction, in milliseconds.
    pub delay_ms: u64,
    /// I.i.d. loss probability on the video direction.
    pub loss: f64,
    /// For the `dropout` preset: when the one-second outage starts, in seconds.
    pub dropout_at_s: f64,
    /// Bytes added to every datagram in both directions, for a wrapper the scheme does not
    /// see: 29 models encrypted sessions (`salsify send/recv --key`: 13-byte header and
    /// 16-byte tag). Default 0 (plaintext), then not written out, so experiments (and the
    /// eval's run ids, hashed from them) read as they did before the field existed.
    #[serde(skip_serializing_if = "is_zero")]
    pub datagram_overhead_bytes: u32,
    /// The other direction of a trace prefix: video over `PREFIX.up`, ACKs over
    /// `PREFIX.down` (Sprout's experiment runs both). Default false, then not written out.
    #[serde(skip_serializing_if = "is_false")]
    pub uplink: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

fn is_no_audio(audio: &str) -> bool {
    audio == "none"
}

fn is_video_sync(sync: &str) -> bool {
    sync == "video"
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            trace: None,
            preset: "cellular".into(),
            queue_packets: 256,
            delay_ms: 20,
            loss: 0.0,
            dropout_at_s: 10.0,
            datagram_overhead_bytes: 0,
            uplink: false,
        }
    }
}

/// What is wrong with an experiment; the message names the field.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ExperimentError {
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

fn fail<T>(field: &'static str, message: impl Into<String>) -> Result<T, ExperimentError> {
    Err(ExperimentError {
        field,
        message: message.into(),
    })
}

impl Experiment {
    /// Parses a TOML experiment file's text.
    pub fn from_toml(text: &str) -> Result<Experiment, ExperimentError> {
        toml::from_str(text).or_else(|e: toml::de::Error| fail("file", toml_error(text, &e)))
    }

    /// The scheme parameter tables given.
    pub fn scheme_params(&self) -> SchemeParams {
        self.params.clone()
    }

    /// The simulator configuration for this experiment (the video is opened by the caller).
    pub fn sim_config(&self) -> Result<SimConfig, ExperimentError> {
        if !(self.network_skip_s.is_finite() && (0.0..=86_400.0).contains(&self.network_skip_s)) {
            return fail(
                "network_skip_s",
                format!("{} is not in [0, 86400]", self.network_skip_s),
            );
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0 && self.duration_s <= 86_400.0) {
            return fail(
                "duration_s",
                format!("{} is not in (0, 86400]", self.duration_s),
            );
        }
        if !(-16..=-1).contains(&self.cpu_used) {
            return fail("cpu_used", format!("{} is not in -16..=-1", self.cpu_used));
        }
        if self.seed > i64::MAX as u64 {
            return fail(
                "seed",
                format!(
                    "{} is above {} (the largest a TOML file holds)",
                    self.seed,
                    i64::MAX
                ),
            );
        }
        if self.video == "synthetic" {
            let size = self
                .size
                .split_once('x')
                .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)));
            let Some((w, h)) = size else {
                return fail("size", format!("'{}' is not WIDTHxHEIGHT", self.size));
            };
            salsify_codec::image::check_source_size(w, h)
                .or_else(|e| fail("size", e.to_string()))?;
            if w < 16 || h < 16 {
                return fail("size", format!("{w}x{h}: at least 16x16"));
            }
            if !(1..=MAX_FPS).contains(&self.fps) {
                return fail("fps", format!("{} is not in 1..={MAX_FPS}", self.fps));
            }
        }
        self.cost
            .validate()
            .or_else(|e| fail("cost", e.to_string()))?;
        let scheme = SchemeConfig::named(&self.scheme, &self.scheme_params()).map_err(|e| {
            let field = match &e {
                SchemeError::Invalid { scheme, .. } => scheme,
                _ => "scheme",
            };
            ExperimentError {
                field,
                message: e.to_string(),
            }
        })?;
        if self.two_way && self.link.uplink {
            return fail(
                "two_way",
                "a call runs both directions; link.uplink picks one (leave it out)",
            );
        }
        let (data_link, mut feedback_link) = self.link.build(self.seed)?;
        // In a call the ACK link carries B's video: it loses as the video link does.
        if self.two_way && self.link.loss > 0.0 {
            feedback_link.loss.push(LossModel::iid(self.link.loss));
        }
        let audio = self.audio_config()?;
        Ok(SimConfig {
            scheme,
            data_link,
            feedback_link,
            duration: Duration::from_secs_f64(self.duration_s),
            cost: self.cost,
            cpu_used: self.cpu_used,
            datagram_overhead: self.link.datagram_overhead_bytes as usize,
            network_skip: Duration::from_secs_f64(self.network_skip_s),
            // A live excerpt is barcoded: scored as its live run is, below the band.
            score_below_band: self.clip == Clip::LiveExcerpt,
            audio,
            ..SimConfig::default()
        })
    }

    /// The run's audio from `audio` and `sync` (a WAV file is read now).
    fn audio_config(&self) -> Result<Option<crate::SimAudio>, ExperimentError> {
        let sync: salsify_audio::SyncMode =
            self.sync.parse().or_else(|e: String| fail("sync", e))?;
        let input = match self.audio.as_str() {
            "none" => return Ok(None),
            "synthetic" => crate::SimAudioInput::Synthetic,
            path if path.ends_with(".wav") || path.ends_with(".WAV") => {
                let samples = salsify_audio::read_wav(Path::new(path))
                    .or_else(|e| fail("audio", e.to_string()))?;
                crate::SimAudioInput::Samples(std::sync::Arc::new(samples))
            }
            "mic" => {
                return fail(
                    "audio",
                    "'mic': a simulated call has no microphone (it runs in virtual time); \
                     record one to a .wav file and give that, or use synthetic",
                )
            }
            other => {
                return fail(
                    "audio",
                    format!(
                        "'{other}': none, synthetic or a .wav file (48 kHz; \
                         ffmpeg -i IN -ac 1 -ar 48000 OUT.wav converts any other)"
                    ),
                )
            }
        };
        let mut audio = crate::SimAudio::new(input);
        audio.player.sync.mode = sync;
        Ok(Some(audio))
    }
}

impl LinkSpec {
    /// The video-direction and ACK-direction links.
    fn build(&self, seed: u64) -> Result<(LinkConfig, LinkConfig), ExperimentError> {
        if !(0.0..=1.0).contains(&self.loss) {
            return fail("link.loss", format!("{} is not a probability", self.loss));
        }
        if self.datagram_overhead_bytes > MAX_DATAGRAM_OVERHEAD {
            return fail(
                "link.datagram_overhead_bytes",
                format!(
                    "{} bytes: at most {MAX_DATAGRAM_OVERHEAD} (a datagram must still fit a \
                     path's MTU; encryption adds 29)",
                    self.datagram_overhead_bytes
                ),
            );
        }
        if self.delay_ms > 10_000 {
            return fail(
                "link.delay_ms",
                format!("{} ms is more than 10 s", self.delay_ms),
            );
        }
        if self.trace.is_none() && self.preset == "none" {
            if self.uplink {
                return fail("link.uplink", "needs a trace prefix");
            }
            let trace = generators::constant(Bitrate::kbps(UNCONSTRAINED_KBPS))
                .or_else(|e| fail("link.preset", e.to_string()))?;
            let mut link = LinkConfig::with_trace(trace);
            link.queue = QueueLimit::UNLIMITED;
            link.propagation_delay = Duration::ZERO;
            return Ok((link.clone(), link));
        }
        if self.uplink && self.trace.as_deref().is_some_and(is_rate_log) {
            return fail(
                "link.uplink",
                "a rate log is one direction; it has no uplink",
            );
        }
        let (mut data, mut feedback) = match (&self.trace, self.uplink) {
            (Some(prefix), false) => trace_pair(prefix)?,
            (Some(prefix), true) => {
                let (down, up) = trace_pair(prefix)?;
                (up, down)
            }
            (None, false) => self.preset_links(seed)?,
            (None, true) => return fail("link.uplink", "needs a trace prefix"),
        };
        let queue = match self.queue_packets {
            0 => QueueLimit::UNLIMITED,
            n => QueueLimit::packets(n),
        };
        for (link, link_seed) in [(&mut data, seed), (&mut feedback, seed ^ 0x5eed)] {
            link.queue = queue;
            link.propagation_delay = Duration::from_millis(self.delay_ms);
            link.seed = link_seed;
        }
        if self.loss > 0.0 {
            data.loss.push(LossModel::iid(self.loss));
        }
        Ok((data, feedback))
    }

    /// A preset's video and ACK links (the table's [`presets::Build`]): outages and failures
    /// belong to the video direction only, except where a preset builds both (`ack-stall`,
    /// whose point is an ACK path that fails).
    fn preset_links(&self, seed: u64) -> Result<(LinkConfig, LinkConfig), ExperimentError> {
        let generated = |e: salsify_netem::GeneratorError| ExperimentError {
            field: "link.preset",
            message: e.to_string(),
        };
        let data = match presets::find(&self.preset).map(|p| p.build) {
            Some(presets::Build::BothWays(build)) => return build(seed).map_err(generated),
            Some(presets::Build::Video(build)) => build(seed).map_err(generated)?,
            Some(presets::Build::Driver) | None => self.driver_link(seed)?,
        };
        let mut feedback = data.clone();
        feedback.loss.clear();
        Ok((data, feedback))
    }

    /// The video link of a preset built from a parameter of the experiment's (`dropout`,
    /// `constant:KBPS`), or of a link model a crate added.
    fn driver_link(&self, seed: u64) -> Result<LinkConfig, ExperimentError> {
        let generated = |r: Result<LinkConfig, salsify_netem::GeneratorError>| {
            r.or_else(|e| fail("link.preset", e.to_string()))
        };
        match self.preset.as_str() {
            "dropout" => {
                if !(self.dropout_at_s.is_finite()
                    && (0.0..=MAX_DROPOUT_AT_S).contains(&self.dropout_at_s))
                {
                    return fail(
                        "link.dropout_at_s",
                        format!("must be a number of seconds from 0 to {MAX_DROPOUT_AT_S}"),
                    );
                }
                generated(presets::dropout_500k(Duration::from_secs_f64(
                    self.dropout_at_s,
                )))
            }
            other => match other.strip_prefix("constant:").map(str::parse::<u64>) {
                Some(Ok(kbps)) if (1..=MAX_CONSTANT_KBPS).contains(&kbps) => {
                    let trace = generators::constant(Bitrate::kbps(kbps))
                        .or_else(|e| fail("link.preset", format!("{other}: {e}")))?;
                    Ok(LinkConfig::with_trace(trace))
                }
                Some(_) => fail(
                    "link.preset",
                    format!(
                        "'{other}': constant:KBPS needs a whole number of kb/s from 1 to \
                         {MAX_CONSTANT_KBPS}, e.g. constant:5000"
                    ),
                ),
                None => match salsify_schemes::registry::link_model(other) {
                    Some(model) => generated(salsify_netem::link_of(model, seed)),
                    None => fail(
                        "link.preset",
                        format!("unknown preset '{other}'; one of {}", preset_names()),
                    ),
                },
            },
        }
    }
}

/// A TOML error as "line N, column C: what". An unknown key is placed at its own line: the
/// scheme tables are flattened into [`Experiment`], so the parser's span for it is the whole
/// file (line 1, column 1).
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end().replace('\n', ": ");
    let message = message.as_str();
    let key = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key);
    let at = key
        .and_then(|key| key_line(text, key).map(|line| (line, 1)))
        .or_else(|| {
            e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                (line, column)
            })
        });
    match at {
        Some((line, 1)) if key.is_some() => format!("line {line}: {message}"),
        Some((line, column)) => format!("line {line}, column {column}: {message}"),
        None => message.to_string(),
    }
}

/// The first line (from 1) where `key` is written as a key: `key = ...`, `key.x = ...`, or
/// a table header naming it (`[key]`, `[link.key]`).
fn key_line(text: &str, key: &str) -> Option<usize> {
    let names_key = |line: &str| {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_start_matches('[');
            let header = header.split(']').next().unwrap_or("");
            return header.split('.').any(|part| part.trim() == key);
        }
        line.strip_prefix(key)
            .is_some_and(|rest| matches!(rest.trim_start().chars().next(), Some('=' | '.')))
    };
    text.lines().position(names_key).map(|i| i + 1)
}

/// Whether a `trace` setting names a rate log (`rate:FILE`).
pub fn is_rate_log(trace: &Path) -> bool {
    trace
        .to_str()
        .is_some_and(|t| t.starts_with(salsify_netem::rate_log::SPEC_PREFIX))
}

/// Links from a trace prefix (`PREFIX.down` / `PREFIX.up`), a single trace file, or a rate
/// log (`rate:FILE`, both directions).
fn trace_pair(prefix: &Path) -> Result<(LinkConfig, LinkConfig), ExperimentError> {
    if let Some(spec) = prefix.to_str().and_then(RateLogSpec::from_setting) {
        let spec = spec.or_else(|e| fail("link.trace", format!("{}: {e}", prefix.display())))?;
        let trace = spec
            .load()
            .or_else(|e| fail("link.trace", format!("{}: {e}", spec.path.display())))?;
        let link = LinkConfig::with_trace(trace);
        return Ok((link.clone(), link));
    }
    let load = |path: &Path| {
        Trace::from_path(path)
            .map(LinkConfig::with_trace)
            .or_else(|e| fail("link.trace", format!("{}: {e}", path.display())))
    };
    if prefix.is_file() {
        let link = load(prefix)?;
        return Ok((link.clone(), link));
    }
    let with = |ext: &str| PathBuf::from(format!("{}.{ext}", prefix.display()));
    let (down, up) = (with("down"), with("up"));
    if !down.is_file() {
        return fail(
            "link.trace",
            format!(
                "neither '{}' nor '{}' is a trace file",
                prefix.display(),
                down.display()
            ),
        );
    }
    let data = load(&down)?;
    let feedback = if up.is_file() {
        load(&up)?
    } else {
        data.clone()
    };
    Ok((data, feedback))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live excerpt is written out and read back, scored below its barcode band, and the
    /// whole clip (the default) is neither written nor scored so.
    #[test]
    fn a_live_excerpt_is_kept_and_scored_as_live() {
        let whole = Experiment::default();
        assert!(!toml::to_string(&whole).unwrap().contains("clip"));
        assert!(!whole.sim_config().unwrap().score_below_band);
        let excerpt = Experiment {
            clip: Clip::LiveExcerpt,
            ..Experiment::default()
        };
        assert!(toml::to_string(&excerpt)
            .unwrap()
            .contains("clip = \"live-excerpt\""));
        assert_eq!(
            Experiment::from_toml(&toml::to_string(&excerpt).unwrap()).unwrap(),
            excerpt
        );
        assert!(excerpt.sim_config().unwrap().score_below_band);
    }

    #[test]
    fn the_uplink_flag_swaps_a_traces_directions() {
        let dir = std::env::temp_dir().join(format!("salsify-uplink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("t.down"), "1\n2\n").unwrap();
        std::fs::write(dir.join("t.up"), "5\n").unwrap();
        let mut e = Experiment::default();
        e.link.trace = Some(dir.join("t"));
        let down = e.sim_config().unwrap();
        e.link.uplink = true;
        let up = e.sim_config().unwrap();
        assert_eq!(down.data_link.trace, up.feedback_link.trace);
        assert_eq!(down.feedback_link.trace, up.data_link.trace);
        assert_ne!(up.data_link.trace, up.feedback_link.trace);
        e.link.trace = None;
        assert_eq!(e.sim_config().unwrap_err().field, "link.uplink");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A `rate:` link is the log's trace both ways; a bad line, a bad option and an uplink
    /// are errors on `link.trace` / `link.uplink` naming what is wrong.
    #[test]
    fn a_rate_log_is_a_link_both_ways() {
        let dir = std::env::temp_dir().join(format!("salsify-ratelog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.rate");
        std::fs::write(&good, "10.2 1.2\n10.4 2.4\n").unwrap();
        std::fs::write(dir.join("bad.rate"), "10.2 1.2\n10.4 fast\n").unwrap();
        let text = format!("[link]\ntrace = \"rate:{}\"\n", good.display());
        let mut e = Experiment::from_toml(&text).unwrap();
        let c = e.sim_config().unwrap();
        assert_eq!(c.data_link.trace.opportunities_per_period(), 60);
        assert_eq!(c.data_link.trace.period(), Duration::from_millis(400));
        assert_eq!(c.data_link.trace, c.feedback_link.trace);
        e.link.uplink = true;
        assert_eq!(e.sim_config().unwrap_err().field, "link.uplink");
        for (trace, want) in [
            (
                format!("rate:{}", dir.join("bad.rate").display()),
                "line 2: the rate",
            ),
            (format!("rate:{}?unit=knots", good.display()), "unit=knots"),
            (
                "rate:/nonexistent/x.rate".to_string(),
                "/nonexistent/x.rate",
            ),
        ] {
            let e = Experiment::from_toml(&format!("[link]\ntrace = \"{trace}\"\n")).unwrap();
            let err = e.sim_config().unwrap_err();
            assert_eq!(err.field, "link.trace");
            assert!(err.message.contains(want), "{trace}: {}", err.message);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `audio = "mic"` names what a simulation cannot have rather than listing the values.
    #[test]
    fn a_microphone_is_refused_with_the_reason() {
        let e = Experiment::from_toml("audio = \"mic\"").unwrap();
        let err = e.sim_config().unwrap_err();
        assert_eq!(err.field, "audio");
        assert!(err.message.contains("no microphone"), "{}", err.message);
    }

    #[test]
    fn empty_file_is_the_default_experiment() {
        let e = Experiment::from_toml("").unwrap();
        assert_eq!(e, Experiment::default());
        let c = e.sim_config().unwrap();
        assert_eq!(c.scheme.name(), "salsify-2c");
        assert_eq!(c.data_link.queue, QueueLimit::packets(256));
    }

    #[test]
    fn fields_are_checked_by_name() {
        let cases = [
            ("scheme = \"webrtc\"", "scheme"),
            ("duration_s = -1", "duration_s"),
            ("size = \"8000x8000\"", "size"),
            ("size = \"640\"", "size"),
            ("size = \"2x2\"", "size"),
            (
                "[link]\npreset = \"dropout\"\ndropout_at_s = 1e300",
                "link.dropout_at_s",
            ),
            ("fps = 0", "fps"),
            (
                "[link]\ndatagram_overhead_bytes = 4000000000",
                "link.datagram_overhead_bytes",
            ),
            ("fps = 100000", "fps"),
            ("[link]\nloss = 2.0", "link.loss"),
            ("[link]\npreset = \"constant:0\"", "link.preset"),
            ("[link]\ntrace = \"/nonexistent/x\"", "link.trace"),
            ("colour = 1", "file"),
        ];
        for (text, field) in cases {
            let err = Experiment::from_toml(text)
                .and_then(|e| e.sim_config())
                .unwrap_err();
            assert_eq!(err.field, field, "{text}: {err}");
        }
    }

    /// A TOML error names its own line: an unknown key (the parser's span is the whole
    /// file, the scheme tables being flattened in) and a syntax error alike.
    #[test]
    fn toml_errors_name_their_line() {
        let cases = [
            (
                "scheme = \"salsify-2c\"\nduraton_s = 5\n",
                "line 2: unknown field `duraton_s`",
            ),
            (
                "seed = 1\n\n[link]\ndely_ms = 5\n",
                "line 4: unknown field `dely_ms`",
            ),
            (
                "seed = 1\n[duraton]\nx = 1\n",
                "line 2: unknown field `duraton`",
            ),
            ("seed = 1\nfps = = 3\n", "line 2, column"),
        ];
        for (text, says) in cases {
            let err = Experiment::from_toml(text).unwrap_err();
            assert_eq!(err.field, "file");
            assert!(err.message.starts_with(says), "{text:?}: {}", err.message);
            assert!(!err.message.contains("TOML parse error"), "{}", err.message);
        }
    }

    /// The help text every command shows lists exactly the presets, in the table's order,
    /// each with what it is.
    #[test]
    fn the_preset_help_lists_every_preset() {
        let help = link_presets_help();
        let all = presets();
        let listed: Vec<&str> = help.split([',', ' ']).filter(|w| all.contains(w)).collect();
        assert_eq!(listed, all, "{help}");
        assert!(help.contains("fade (5 Mb/s with deep fades"), "{help}");
        assert!(help.ends_with(", or none (no emulation)"), "{help}");
    }

    /// Every preset of the table builds, and only one whose table entry builds both ways
    /// has losses on its ACK path.
    #[test]
    fn every_preset_of_the_table_builds() {
        for p in presets::BUILTIN {
            let name = p.name.replace("KBPS", "800");
            let e = Experiment::from_toml(&format!("[link]\npreset = \"{name}\"")).unwrap();
            let c = e.sim_config().unwrap_or_else(|e| panic!("{name}: {e}"));
            let both = matches!(p.build, presets::Build::BothWays(_));
            assert_eq!(c.feedback_link.loss.is_empty(), !both, "{name}");
        }
    }

    /// A constant rate of 0 or a non-number is named as such, not as an unknown preset.
    #[test]
    fn a_bad_constant_rate_says_what_is_wrong() {
        for bad in ["constant:0", "constant:abc", "constant:99999999999"] {
            let text = format!("[link]\npreset = \"{bad}\"");
            let err = Experiment::from_toml(&text)
                .unwrap()
                .sim_config()
                .unwrap_err()
                .to_string();
            assert!(err.contains("whole number of kb/s"), "{bad}: {err}");
            assert!(!err.contains("unknown preset"), "{bad}: {err}");
        }
        let none = Experiment::from_toml("[link]\npreset = \"none\"").unwrap();
        let c = none.sim_config().unwrap();
        assert_eq!(c.data_link.propagation_delay, Duration::ZERO);
    }

    #[test]
    fn schemes_and_presets_build() {
        for name in schemes() {
            let e = Experiment {
                scheme: name.to_string(),
                ..Experiment::default()
            };
            e.sim_config().unwrap();
        }
        for preset in [
            "cellular",
            "intermittent",
            "wifi",
            "ramp",
            "dropout",
            "constant:500",
        ] {
            let mut e = Experiment::default();
            e.link.preset = preset.into();
            let c = e.sim_config().unwrap();
            assert!(c.feedback_link.loss.is_empty(), "{preset}");
        }
    }

    #[test]
    fn slow_presets_build_and_only_ack_stall_stalls_the_ack_path() {
        for preset in ["fade", "3g", "ack-stall", "cliff"] {
            assert!(presets().contains(&preset), "{preset}");
            let e = Experiment::from_toml(&format!("[link]\npreset = \"{preset}\"")).unwrap();
            let c = e.sim_config().unwrap();
            assert!(c.data_link.loss.is_empty(), "{preset}");
            assert_eq!(
                c.feedback_link.loss.is_empty(),
                preset != "ack-stall",
                "{preset}"
            );
            assert_eq!(c.data_link.queue, QueueLimit::packets(256), "{preset}");
            assert_eq!(c.feedback_link.propagation_delay, Duration::from_millis(20));
        }
        let e = Experiment::from_toml("[link]\npreset = \"ack-stall\"\nloss = 0.1").unwrap();
        let c = e.sim_config().unwrap();
        assert_eq!(c.data_link.loss, vec![LossModel::iid(0.1)]);
        assert_eq!(
            c.feedback_link.loss,
            vec![LossModel::Outages(presets::ack_stall_outages(1))]
        );
        // Same seed, same links; another seed, other fades.
        let fade = |seed| {
            let e = Experiment {
                seed,
                link: LinkSpec {
                    preset: "fade".into(),
                    ..LinkSpec::default()
                },
                ..Experiment::default()
            };
            e.sim_config().unwrap().data_link.trace
        };
        assert_eq!(fade(2), fade(2));
        assert_ne!(fade(2), fade(3));
    }

    /// `two_way` is written only when set, loses on both links, and refuses `uplink`.
    #[test]
    fn a_two_way_call_is_written_only_when_set_and_loses_both_ways() {
        let plain = toml::to_string(&Experiment::default()).unwrap();
        assert!(!plain.contains("two_way"), "{plain}");
        let e = Experiment::from_toml("two_way = true\n[link]\nloss = 0.1").unwrap();
        assert!(toml::to_string(&e).unwrap().contains("two_way = true"));
        let c = e.sim_config().unwrap();
        assert_eq!(c.data_link.loss, vec![LossModel::iid(0.1)]);
        assert_eq!(c.feedback_link.loss, vec![LossModel::iid(0.1)]);
        let mut up = e.clone();
        up.link.uplink = true;
        up.link.trace = Some(std::env::temp_dir());
        assert_eq!(up.sim_config().unwrap_err().field, "two_way");
    }

    #[test]
    fn the_datagram_overhead_is_read_and_written_only_when_set() {
        let e = Experiment::from_toml("[link]\ndatagram_overhead_bytes = 29").unwrap();
        assert_eq!(e.sim_config().unwrap().datagram_overhead, 29);
        assert!(toml::to_string(&e)
            .unwrap()
            .contains("datagram_overhead_bytes = 29"));
        let plain = toml::to_string(&Experiment::default()).unwrap();
        assert!(!plain.contains("datagram_overhead"), "{plain}");
    }
}
