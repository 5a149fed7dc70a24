//! The experiment matrix: groups of schemes x links x videos x seeds x queue sizes x
//! delays, from a TOML file or the built-in default (the paper's section 5), expanded into
//! individual runs.
//!
//! ```toml
//! traces = "../shared/traces"        # where `trace:NAME` and `traces:*` links are looked up
//!
//! [defaults]                         # any field of an experiment (crates/eval/src/experiment.rs)
//! video = "synthetic"
//! size = "1280x720"
//! fps = 60
//! duration_s = 60
//!
//! [[group]]
//! name = "cellular"                  # a short id: runs and figures are named after it
//! title = "Experiment 1: cellular links"
//! schemes = ["salsify-2c", "conventional"]
//! links = ["trace:Verizon-LTE-short", "cellular", "constant:500"]
//! queue_packets = [256]              # optional, default: the defaults' queue
//! delay_ms = [20]                    # optional, one way each direction
//! seeds = [1]                        # optional
//! videos = ["synthetic"]             # optional
//! duration_s = 140                   # optional, this group only
//! figures = ["quality-delay", "time-series"]   # also "queue-size", "sprout", "frontier"
//!
//! [group.sweep]                      # optional: each scheme's own knob (campaign::sweep)
//! delay_target_ms = [25, 50, 100, 200]
//!
//! [[group]]
//! name = "live"
//! live = true                        # real time through the link relay, scored by barcodes
//! schemes = ["chromium-vp8", "chromium-vp9-svc", "salsify-2c"]
//! links = ["trace:Verizon-LTE-short", "dropout"]
//! duration_s = 20
//! ```
//!
//! A link is a preset of [`crate::experiment::presets()`], `trace:NAME` (the prefix NAME in
//! the traces folder: video over NAME.down, ACKs over NAME.up), `trace-up:NAME` (the other
//! direction: video over NAME.up, ACKs over NAME.down; named `NAME-up`), `traces:*` (every
//! trace prefix in that folder, sorted), `corpus:DIR` (every trace and rate log in folder DIR,
//! each a link named by its file, see [`super::corpus`]), `rate:FILE` (a throughput log), or
//! a path to a trace prefix.
//!
//! A group with `live = true` runs each cell in real time (see [`super::live`]): our
//! schemes over UDP through the link relay, or Chromium's WebRTC (`chromium-vp8`,
//! `chromium-vp9-svc`, `chromium-av1`), every cell scored black-box by the barcodes in its
//! pictures. Live cells run after every simulated cell, one at a time whatever `--jobs`
//! says, and their ids end in `__live`, so a live and a simulated run of one scheme on one
//! link never share a folder. A live cell plays its video's barcoded excerpt
//! ([`crate::experiment::Clip::LiveExcerpt`]), and each live cell of ours has a simulated twin
//! in its group: the same experiment, simulated, so the report sets the two side by side.
//!
//! A group with `two_way = true` runs each cell as a call (`Experiment::two_way`: side B's
//! video back over the trace's uplink, each side's ACKs behind the other's video) and plans
//! beside it the same cell one-way both ways (over `NAME`, and over `NAME.up` as
//! `trace-up:NAME` runs it), so the report sets each direction beside itself alone. Its
//! links are trace prefixes; its ids end in `__two-way`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::corpus::{self, CorpusSpec};
use super::live::{chromium_systems, live_encryption, LiveSystem};
use crate::campaign::sweep::Sweep;
use crate::experiment::{schemes, Clip, Experiment, ExperimentError};

/// A figure the report can draw for a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    /// SSIM dB against p95 delay, one point per scheme, one chart per link (figure 6).
    QualityDelay,
    /// Capacity vs sending rate and per-frame delay over time, one chart per link (7, 8).
    TimeSeries,
    /// Delay and SSIM against the queue size, one line per scheme (figure 9).
    QueueSize,
    /// Sprout's Figure 1: per link, one panel per scheme of capacity, throughput and
    /// per-packet delay over time.
    Sprout,
    /// The quality-delay frontier: per link, SSIM against p95 and against mean delay, one
    /// line per scheme through its swept points (`[group.sweep]`), with the idealised
    /// causal and clairvoyant senders' delay as bounds.
    Frontier,
}

/// One group of the matrix: every combination of its lists is a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Short id (letters, digits, `-`, `_`).
    pub name: String,
    /// Heading in the report.
    #[serde(default)]
    pub title: String,
    /// Run every cell in real time instead of the simulator, one at a time after the
    /// simulated ones; its schemes may then also be Chromium's (see [`super::live`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
    /// Run every cell as a two-way call, beside the same cell one-way in each direction
    /// (see the module's text); simulated groups on trace prefixes only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub two_way: bool,
    /// Schemes (see [`schemes`]; in a live group also [`super::live::chromium_systems`]).
    pub schemes: Vec<String>,
    /// Links: presets, `trace:NAME`, `traces:*` or trace prefix paths.
    pub links: Vec<String>,
    /// Queue sizes in packets; empty = the defaults'.
    #[serde(default)]
    pub queue_packets: Vec<u32>,
    /// One-way delays in milliseconds; empty = the defaults'.
    #[serde(default)]
    pub delay_ms: Vec<u64>,
    /// Seeds; empty = the defaults'.
    #[serde(default)]
    pub seeds: Vec<u64>,
    /// Videos; empty = the defaults'.
    #[serde(default)]
    pub videos: Vec<String>,
    /// Simulated seconds for this group; none = the defaults'.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Figures the report draws for this group.
    #[serde(default)]
    pub figures: Vec<Figure>,
    /// Each scheme's own knob at several values (`[group.sweep]`, see
    /// [`crate::campaign::sweep`]); empty: each scheme once.
    #[serde(default, skip_serializing_if = "Sweep::is_empty")]
    pub sweep: Sweep,
    /// What a group with a `corpus:` link compares its schemes against
    /// (`[group.corpus]`, see [`super::corpus`]).
    #[serde(default, skip_serializing_if = "CorpusSpec::is_empty")]
    pub corpus: CorpusSpec,
}

/// A whole matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// Folder of Mahimahi traces for `trace:` and `traces:*` links.
    #[serde(default)]
    pub traces: Option<PathBuf>,
    /// Every run starts from these values.
    #[serde(default)]
    pub defaults: Experiment,
    /// The groups, in report order.
    #[serde(rename = "group")]
    pub groups: Vec<Group>,
}

/// A group's link as (name, trace prefix, preset, video over the uplink).
type ResolvedLink = (String, Option<PathBuf>, String, bool);

/// One run of the matrix: the groups that asked for it and the experiment itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Stable name, also its folder: scheme, link, queue, delay, seed and a content hash.
    pub id: String,
    /// Name of the link as the matrix wrote it (a trace's file name for `traces:*`).
    pub link: String,
    /// What to run.
    pub experiment: Experiment,
    /// Run in real time (a live group's cell), not simulated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
}

/// A group's runs, by id, for the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedGroup {
    /// The group as written.
    pub group: Group,
    /// Its runs' ids (a run shared by two groups is run once).
    pub runs: Vec<String>,
}

/// Seconds a quick look keeps past the end of a link's event, to show the recovery.
pub const EVENT_MARGIN_S: f64 = 5.0;

/// The expanded matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Every distinct run, sorted by id.
    pub runs: Vec<PlannedRun>,
    /// The groups with their runs.
    pub groups: Vec<PlannedGroup>,
}

/// What is wrong with a matrix.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The TOML does not parse or has an unknown field.
    #[error("matrix file: {0}")]
    Parse(String),
    /// A group is malformed.
    #[error("group '{group}': {message}")]
    Group {
        /// The group's name.
        group: String,
        /// What is wrong.
        message: String,
    },
    /// A run's experiment is invalid.
    #[error("group '{group}', run {run}: {why}")]
    Experiment {
        /// The group's name.
        group: String,
        /// The run.
        run: String,
        /// Why. (Not an error `source`: the message already says it, and a source would
        /// print it twice in an error chain.)
        why: ExperimentError,
    },
}

fn group_error<T>(group: &str, message: impl Into<String>) -> Result<T, MatrixError> {
    Err(MatrixError::Group {
        group: group.to_string(),
        message: message.into(),
    })
}

impl Matrix {
    /// Parses a matrix file's text.
    pub fn from_toml(text: &str) -> Result<Matrix, MatrixError> {
        toml::from_str(text).map_err(|e| MatrixError::Parse(e.to_string()))
    }

    /// The matrix as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a matrix always serialises")
    }

    /// Every run, checked: each experiment is valid and every file it names exists.
    pub fn plan(&self) -> Result<Plan, MatrixError> {
        let mut runs: Vec<PlannedRun> = Vec::new();
        let mut groups = Vec::new();
        let mut names = BTreeSet::new();
        for group in &self.groups {
            check_group(group)?;
            if !names.insert(group.name.clone()) {
                return group_error(&group.name, "two groups have this name");
            }
            let mut ids = Vec::new();
            for run in self.expand(group)? {
                ids.push(run.id.clone());
                if !runs.iter().any(|r| r.id == run.id) {
                    runs.push(run);
                }
            }
            groups.push(PlannedGroup {
                group: group.clone(),
                runs: ids,
            });
        }
        runs.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(Plan { runs, groups })
    }

    /// Caps every group's simulated seconds at `cap` (a quick look), but never so short that
    /// a group's link loses the event it is built to show (`dropout`'s outage, `cliff`'s
    /// fall, a fade): such a group keeps [`EVENT_MARGIN_S`] past the event's end, up to its
    /// own length. Each group's title then says how much of it runs and why; the lines
    /// returned say the same for the terminal.
    pub fn cap_durations(&mut self, cap: f64) -> Result<Vec<String>, MatrixError> {
        let default = self.defaults.duration_s;
        let mut said = Vec::new();
        let mut groups = std::mem::take(&mut self.groups);
        for g in &mut groups {
            let full = g.duration_s.unwrap_or(default);
            let mut keep = cap.min(full);
            let mut kept_for = None;
            for run in self.expand(g)? {
                let e = &run.experiment;
                if e.link.trace.is_some() {
                    continue;
                }
                let at = salsify_time::Duration::from_secs_f64(e.link.dropout_at_s);
                let added = || {
                    let model = salsify_schemes::registry::link_model(&e.link.preset)?;
                    model.first_event(e.seed)
                };
                let built_in = salsify_netem::presets::first_event(&e.link.preset, e.seed, at);
                let Some(event) = built_in.or_else(added) else {
                    continue;
                };
                let needed = (event.end.as_secs_f64() + EVENT_MARGIN_S).min(full);
                if needed > keep {
                    keep = needed;
                    kept_for = Some(event);
                }
            }
            g.duration_s = Some(keep);
            if keep >= full {
                continue;
            }
            let why = match kept_for {
                Some(ev) => format!(
                    "{keep:.0} s of {full:.0} s, to keep {} ({:.0}-{:.0} s)",
                    ev.what,
                    ev.start.as_secs_f64(),
                    ev.end.as_secs_f64()
                ),
                None => format!("the first {keep:.0} s of {full:.0} s"),
            };
            let title = if g.title.is_empty() {
                g.name.clone()
            } else {
                g.title.clone()
            };
            g.title = format!("{title} (quick look: {why})");
            said.push(format!("group '{}': {why}", g.name));
        }
        self.groups = groups;
        self.defaults.duration_s = default.min(cap);
        Ok(said)
    }

    fn expand(&self, group: &Group) -> Result<Vec<PlannedRun>, MatrixError> {
        let d = &self.defaults;
        let or = |list: &[u64], default: u64| -> Vec<u64> {
            if list.is_empty() {
                vec![default]
            } else {
                list.to_vec()
            }
        };
        let queues: Vec<u64> = or(
            &group
                .queue_packets
                .iter()
                .map(|&q| q as u64)
                .collect::<Vec<_>>(),
            d.link.queue_packets as u64,
        );
        let delays = or(&group.delay_ms, d.link.delay_ms);
        let seeds = or(&group.seeds, d.seed);
        let videos = if group.videos.is_empty() {
            vec![d.video.clone()]
        } else {
            group.videos.clone()
        };
        let links = self.resolve_links(group)?;
        let mut runs = Vec::new();
        for scheme in &group.schemes {
            for (link_name, link_trace, link_preset, uplink) in &links {
                for video in &videos {
                    for &queue in &queues {
                        for &delay in &delays {
                            for &seed in &seeds {
                                let mut e = d.clone();
                                e.scheme = scheme.clone();
                                e.video = video.clone();
                                e.seed = seed;
                                e.duration_s = group.duration_s.unwrap_or(d.duration_s);
                                e.link.trace = link_trace.clone();
                                e.link.preset = link_preset.clone();
                                e.link.uplink = *uplink;
                                e.link.queue_packets = queue as u32;
                                e.link.delay_ms = delay;
                                for mut e in super::sweep::variants(&group.sweep, &e) {
                                    if group.live {
                                        e.clip = Clip::LiveExcerpt;
                                    }
                                    e.two_way = group.two_way;
                                    let id = run_id(&e, link_name, group.live);
                                    check_experiment(group, &id, &e)?;
                                    if let Some(twin) = simulated_twin(group, &e, link_name) {
                                        runs.push(twin);
                                    }
                                    runs.extend(one_way_twins(&e, link_name));
                                    runs.push(PlannedRun {
                                        id,
                                        link: link_name.clone(),
                                        experiment: e,
                                        live: group.live,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(runs)
    }

    /// Each link of a group as (name, trace prefix, preset, video over the uplink).
    fn resolve_links(&self, group: &Group) -> Result<Vec<ResolvedLink>, MatrixError> {
        let preset = self.defaults.link.preset.clone();
        let mut out = Vec::new();
        for link in &group.links {
            if link == "traces:*" {
                let dir = self.traces_dir(group, link)?;
                let prefixes = trace_prefixes(dir)
                    .or_else(|e| group_error(&group.name, format!("traces:*: {e}")))?;
                if prefixes.is_empty() {
                    return group_error(
                        &group.name,
                        format!("traces:*: no NAME.down file in '{}'", dir.display()),
                    );
                }
                for name in prefixes {
                    out.push((name.clone(), Some(dir.join(&name)), preset.clone(), false));
                }
            } else if let Some(name) = link.strip_prefix("trace:") {
                let dir = self.traces_dir(group, link)?;
                out.push((
                    name.to_string(),
                    Some(dir.join(name)),
                    preset.clone(),
                    false,
                ));
            } else if let Some(name) = link.strip_prefix("trace-up:") {
                let dir = self.traces_dir(group, link)?;
                let label = format!("{name}-up");
                out.push((label, Some(dir.join(name)), preset.clone(), true));
            } else if let Some(dir) = link.strip_prefix(corpus::PREFIX) {
                let found = corpus::links(Path::new(dir))
                    .or_else(|e| group_error(&group.name, format!("{link}: {e}")))?;
                for l in found {
                    out.push((l.name, Some(l.trace), preset.clone(), false));
                }
            } else if let Some(file) = link.strip_prefix(salsify_netem::rate_log::SPEC_PREFIX) {
                let name = Path::new(file.split('?').next().unwrap_or(file))
                    .file_stem()
                    .map_or(link.clone(), |n| n.to_string_lossy().into_owned());
                out.push((name, Some(PathBuf::from(link)), preset.clone(), false));
            } else if link.contains('/') {
                let name = Path::new(link)
                    .file_name()
                    .map_or(link.clone(), |n| n.to_string_lossy().into_owned());
                out.push((name, Some(PathBuf::from(link)), preset.clone(), false));
            } else {
                out.push((link.clone(), None, link.clone(), false));
            }
        }
        Ok(out)
    }

    fn traces_dir(&self, group: &Group, link: &str) -> Result<&Path, MatrixError> {
        match &self.traces {
            Some(dir) => Ok(dir),
            None => group_error(
                &group.name,
                format!("link '{link}' needs a traces folder: set `traces` in the matrix or pass --traces DIR"),
            ),
        }
    }
}

/// Largest seed: experiments are written as TOML, whose integers are signed 64-bit.
const MAX_SEED: u64 = i64::MAX as u64;

fn check_group(group: &Group) -> Result<(), MatrixError> {
    let valid_name = !group.name.is_empty()
        && group
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return group_error(&group.name, "a name is letters, digits, '-' and '_'");
    }
    if group.schemes.is_empty() || group.links.is_empty() {
        return group_error(&group.name, "needs at least one scheme and one link");
    }
    if let Err(why) = group.sweep.check() {
        return group_error(&group.name, why);
    }
    if let Err(why) = group.corpus.check(&group.schemes) {
        return group_error(&group.name, why);
    }
    if let Some(seed) = group.seeds.iter().find(|&&s| s > MAX_SEED) {
        return group_error(
            &group.name,
            format!("seed {seed} is above {MAX_SEED} (the largest a TOML file holds)"),
        );
    }
    if group.two_way {
        let trace = |l: &String| l.starts_with("trace:") || l == "traces:*" || l.contains('/');
        if group.live {
            return group_error(&group.name, "a two-way group runs in the simulator only");
        }
        if let Some(link) = group.links.iter().find(|l| !trace(l)) {
            return group_error(
                &group.name,
                format!("link '{link}': a two-way call runs B's video over a trace prefix's uplink (trace:NAME, traces:* or a path)"),
            );
        }
    }
    if group.live {
        for s in &group.schemes {
            LiveSystem::parse(s).or_else(|e| group_error(&group.name, e))?;
        }
        if let Some(link) = group.links.iter().find(|l| l.starts_with("trace-up:")) {
            return group_error(
                &group.name,
                format!("link '{link}': the live relay runs video over a trace's downlink only"),
            );
        }
    } else if let Some(s) = group
        .schemes
        .iter()
        .find(|s| !schemes().contains(&s.as_str()))
    {
        return group_error(
            &group.name,
            format!("unknown scheme '{s}'; one of {}", schemes().join(", ")),
        );
    }
    Ok(())
}

/// A live cell's simulated twin, when the simulator runs its scheme (Chromium's it cannot):
/// the same experiment, the video played as the live cell plays it, so the two differ only
/// in being simulated or live.
fn simulated_twin(group: &Group, e: &Experiment, link: &str) -> Option<PlannedRun> {
    if !group.live || chromium_systems().contains(&e.scheme.as_str()) {
        return None;
    }
    Some(PlannedRun {
        id: run_id(e, link, false),
        link: link.to_string(),
        experiment: e.clone(),
        live: false,
    })
}

/// A two-way cell's one-way twins: the same experiment one-way over the video link (A to
/// B alone) and over the ACK link (B to A alone, named `NAME-up` as `trace-up:` names it).
fn one_way_twins(e: &Experiment, link: &str) -> Vec<PlannedRun> {
    if !e.two_way {
        return Vec::new();
    }
    let mut down = e.clone();
    down.two_way = false;
    let mut up = down.clone();
    up.link.uplink = true;
    let up_link = format!("{link}-up");
    vec![
        PlannedRun {
            id: run_id(&down, link, false),
            link: link.to_string(),
            experiment: down,
            live: false,
        },
        PlannedRun {
            id: run_id(&up, &up_link, false),
            link: up_link,
            experiment: up,
            live: false,
        },
    ]
}

/// Checks the run's experiment before anything runs: a missing file is an error now, not
/// after an hour of other runs.
fn check_experiment(group: &Group, id: &str, e: &Experiment) -> Result<(), MatrixError> {
    let fail = |why| MatrixError::Experiment {
        group: group.name.clone(),
        run: id.to_string(),
        why,
    };
    if let Some(setting) = e.link.trace.as_deref().and_then(|t| t.to_str()) {
        if let Some(spec) = salsify_netem::RateLogSpec::from_setting(setting) {
            let message = match spec {
                Ok(spec) if spec.path.is_file() => None,
                Ok(spec) => Some(format!("'{}' is not a rate log file", spec.path.display())),
                Err(why) => Some(format!("{setting}: {why}")),
            };
            if let Some(message) = message {
                return Err(fail(ExperimentError {
                    field: "link.trace",
                    message,
                }));
            }
        }
    }
    if let Some(prefix) = e
        .link
        .trace
        .as_ref()
        .filter(|t| !crate::experiment::is_rate_log(t))
    {
        let down = PathBuf::from(format!("{}.down", prefix.display()));
        if !prefix.is_file() && !down.is_file() {
            return Err(fail(ExperimentError {
                field: "link.trace",
                message: format!(
                    "neither '{}' nor '{}' is a trace file",
                    prefix.display(),
                    down.display()
                ),
            }));
        }
    }
    if group.live && !chromium_systems().contains(&e.scheme.as_str()) {
        live_encryption(e.link.datagram_overhead_bytes).map_err(|message| {
            fail(ExperimentError {
                field: "link.datagram_overhead_bytes",
                message,
            })
        })?;
    }
    // Every other field is checked as the simulator would (a trace is parsed only when run);
    // a Chromium cell's scheme is not the simulator's, so a stand-in checks the rest.
    let mut without_trace = e.clone();
    if chromium_systems().contains(&e.scheme.as_str()) {
        without_trace.scheme = salsify_schemes::registry::default_scheme().into();
    }
    if without_trace.link.trace.take().is_some() {
        without_trace.link.preset = "constant:1000".into();
        without_trace.link.uplink = false;
    }
    without_trace.sim_config().map_err(fail)?;
    if e.video != "synthetic" && !Path::new(&e.video).is_file() {
        return Err(fail(ExperimentError {
            field: "video",
            message: format!("'{}' is not a file", e.video),
        }));
    }
    Ok(())
}

/// The trace prefixes in a folder: names `NAME` with a `NAME.down` file, sorted.
pub fn trace_prefixes(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("'{}': {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".down").map(str::to_string)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// A run's stable id: readable parts plus a hash of the whole experiment, so two runs that
/// differ in any field (video, duration, cost model...) never share a folder.
fn run_id(e: &Experiment, link: &str, live: bool) -> String {
    let mut text = toml::to_string(e).expect("an experiment always serialises");
    if live {
        text += "\nlive";
    }
    let hash = fnv1a(text.as_bytes());
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!(
        "{}__{}__q{}_d{}_s{}__{:08x}{}",
        clean(&e.scheme),
        clean(link),
        e.link.queue_packets,
        e.link.delay_ms,
        e.seed,
        hash as u32,
        match (live, e.two_way) {
            (true, _) => "__live",
            (false, true) => "__two-way",
            (false, false) => "",
        }
    )
}

/// FNV-1a: a hash fixed by its definition, so ids stay the same across builds and machines.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::Shard;

    fn matrix(groups: &str) -> Matrix {
        Matrix::from_toml(&format!(
            "[defaults]\nsize = \"64x48\"\nduration_s = 2\n{groups}"
        ))
        .unwrap()
    }

    /// A quick look keeps each link's event: the dropout group runs past its outage, the
    /// cliff group past its fall, a steady link's group is cut to the cap; titles say so.
    #[test]
    fn a_quick_look_keeps_each_links_event() {
        let mut m = Matrix::from_toml(
            "[defaults]\nduration_s = 60\n\
             [[group]]\nname = \"dropout\"\nschemes = [\"salsify-2c\"]\nlinks = [\"dropout\"]\nduration_s = 20\n\
             [[group]]\nname = \"cliff\"\ntitle = \"Cliff\"\nschemes = [\"salsify-2c\"]\nlinks = [\"cliff\"]\n\
             [[group]]\nname = \"wifi\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\n\
             [[group]]\nname = \"short\"\nschemes = [\"salsify-2c\"]\nlinks = [\"dropout\"]\nduration_s = 8\n",
        )
        .unwrap();
        let said = m.cap_durations(10.0).unwrap();
        let seconds: Vec<f64> = m.groups.iter().map(|g| g.duration_s.unwrap()).collect();
        // Dropout at 10-11 s: 16 s; cliff 20-30 s: 35 s; wifi: the cap; a group shorter
        // than the cap keeps its own length.
        assert_eq!(seconds, [16.0, 35.0, 10.0, 8.0]);
        assert_eq!(
            m.groups[0].title,
            "dropout (quick look: 16 s of 20 s, to keep the dropout (10-11 s))"
        );
        assert_eq!(
            m.groups[1].title,
            "Cliff (quick look: 35 s of 60 s, to keep the cliff (20-30 s))"
        );
        assert_eq!(
            m.groups[2].title,
            "wifi (quick look: the first 10 s of 60 s)"
        );
        assert_eq!(m.groups[3].title, "");
        assert_eq!(said.len(), 3, "{said:?}");
    }

    /// A seed TOML cannot hold is refused (it was a panic when the run's id was made).
    #[test]
    fn a_seed_toml_cannot_hold_is_refused() {
        let text = "[[group]]\nname = \"a\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\n";
        let mut m = Matrix::from_toml(text).unwrap();
        m.groups[0].seeds = vec![u64::MAX];
        let err = m.plan().err().unwrap().to_string();
        assert!(err.contains("seed"), "{err}");
    }

    /// An experiment's error is said once in an error chain, not twice.
    #[test]
    fn an_experiment_error_is_said_once() {
        let err = MatrixError::Experiment {
            group: "g".into(),
            run: "r".into(),
            why: ExperimentError {
                field: "video",
                message: "'missing.mp4' is not a file".into(),
            },
        };
        let text = err.to_string();
        assert_eq!(text.matches("missing.mp4").count(), 1, "{text}");
        // An error chain prints a source after the message: there must be none.
        assert!(std::error::Error::source(&err).is_none());
    }

    #[test]
    fn groups_expand_to_the_product_and_share_identical_runs() {
        let m = matrix(
            "[[group]]\nname = \"a\"\nschemes = [\"salsify-2c\", \"conventional\"]\nlinks = [\"constant:500\", \"wifi\"]\nseeds = [1, 2]\n\
             [[group]]\nname = \"b\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\nseeds = [2]\n",
        );
        let plan = m.plan().unwrap();
        assert_eq!(plan.groups[0].runs.len(), 8);
        assert_eq!(plan.groups[1].runs.len(), 1);
        assert_eq!(plan.runs.len(), 8, "group b's run is one of group a's");
        assert!(plan.groups[0].runs.contains(&plan.groups[1].runs[0]));
        let mut ids: Vec<_> = plan.runs.iter().map(|r| r.id.clone()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        assert!(plan.runs.windows(2).all(|w| w[0].id < w[1].id));
    }

    #[test]
    fn a_trace_up_link_runs_the_video_over_the_uplink() {
        let dir = std::env::temp_dir().join(format!("salsify-spec-up-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("T.down"), "1\n").unwrap();
        std::fs::write(dir.join("T.up"), "2\n").unwrap();
        let mut m = matrix(
            "[[group]]\nname = \"a\"\nschemes = [\"sprout\"]\nlinks = [\"trace:T\", \"trace-up:T\"]\n",
        );
        m.traces = Some(dir.clone());
        let plan = m.plan().unwrap();
        let up: Vec<(&str, bool)> = plan
            .runs
            .iter()
            .map(|r| (r.link.as_str(), r.experiment.link.uplink))
            .collect();
        assert_eq!(up.len(), 2);
        assert!(
            up.contains(&("T", false)) && up.contains(&("T-up", true)),
            "{up:?}"
        );
        assert_ne!(plan.runs[0].id, plan.runs[1].id);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A two-way group plans each call beside its cell one-way both ways (the downlink twin
    /// shared with a one-way group of the same cell); a preset link is refused.
    #[test]
    fn a_two_way_group_plans_each_call_beside_both_one_way_runs() {
        let dir = std::env::temp_dir().join(format!("salsify-spec-2way-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("T.down"), "1\n").unwrap();
        std::fs::write(dir.join("T.up"), "2\n").unwrap();
        let mut m = matrix(
            "[[group]]\nname = \"one\"\nschemes = [\"salsify-2c\"]\nlinks = [\"trace:T\"]\n\
             [[group]]\nname = \"two\"\ntwo_way = true\nschemes = [\"salsify-2c\"]\nlinks = [\"trace:T\"]\n",
        );
        m.traces = Some(dir.clone());
        let plan = m.plan().unwrap();
        assert_eq!(
            plan.runs.len(),
            3,
            "the call, its uplink twin, the shared downlink run"
        );
        assert_eq!(plan.groups[1].runs.len(), 3);
        assert!(plan.groups[1].runs.contains(&plan.groups[0].runs[0]));
        let call = plan.runs.iter().find(|r| r.experiment.two_way).unwrap();
        assert!(call.id.ends_with("__two-way"), "{}", call.id);
        let up = plan.runs.iter().find(|r| r.experiment.link.uplink).unwrap();
        assert_eq!(up.link, "T-up");
        assert!(!up.experiment.two_way);
        assert_eq!(Matrix::from_toml(&m.to_toml()).unwrap(), m);
        std::fs::remove_dir_all(&dir).unwrap();
        let preset = matrix(
            "[[group]]\nname = \"two\"\ntwo_way = true\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\n",
        );
        let err = preset.plan().unwrap_err().to_string();
        assert!(err.contains("uplink"), "{err}");
    }

    #[test]
    fn live_groups_take_chromium_and_never_share_a_simulated_runs_id() {
        let m = matrix(
            "[[group]]\nname = \"s\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\n\
             [[group]]\nname = \"l\"\nlive = true\nschemes = [\"salsify-2c\", \"chromium-vp9-svc\"]\nlinks = [\"wifi\"]\n",
        );
        let plan = m.plan().unwrap();
        assert_eq!(
            plan.runs.len(),
            4,
            "the live salsify-2c is a run of its own, and so is its simulated twin"
        );
        let live: Vec<&PlannedRun> = plan.runs.iter().filter(|r| r.live).collect();
        assert_eq!(live.len(), 2);
        assert!(live.iter().all(|r| r.id.ends_with("__live")));
        assert!(live.iter().all(|r| r.experiment.clip == Clip::LiveExcerpt));
        // The twin: in the live group, simulated, with the live cell's experiment exactly.
        let group = &plan.groups[1].runs;
        let twins: Vec<&PlannedRun> = plan
            .runs
            .iter()
            .filter(|r| !r.live && group.contains(&r.id))
            .collect();
        assert_eq!(twins.len(), 1, "Chromium has no twin");
        let cell = live
            .iter()
            .find(|r| r.experiment.scheme == "salsify-2c")
            .unwrap();
        assert_eq!(twins[0].experiment, cell.experiment);
        // The simulated group's run plays the whole clip, as before (its id unchanged).
        let whole = plan
            .runs
            .iter()
            .find(|r| !r.live && !group.contains(&r.id))
            .unwrap();
        assert_eq!(whole.experiment.clip, Clip::Whole);
        assert!(!toml::to_string(&whole.experiment).unwrap().contains("clip"));
        assert_eq!(Matrix::from_toml(&m.to_toml()).unwrap(), m);
        for (body, expected) in [
            ("schemes = [\"chromium-vp8\"]", "unknown scheme"),
            (
                "live = true\nschemes = [\"oracle\"]",
                "only in the simulator",
            ),
            ("live = true\nschemes = [\"skype\"]", "unknown live system"),
        ] {
            let m = matrix(&format!(
                "[[group]]\nname = \"g\"\n{body}\nlinks = [\"wifi\"]\n"
            ));
            let err = m.plan().unwrap_err().to_string();
            assert!(err.contains(expected), "{body}: {err}");
        }
    }

    #[test]
    fn ids_change_with_any_field() {
        let a = matrix("[[group]]\nname = \"a\"\nschemes = [\"oracle\"]\nlinks = [\"wifi\"]\n");
        let mut b = a.clone();
        b.defaults.duration_s = 3.0;
        let (ra, rb) = (a.plan().unwrap(), b.plan().unwrap());
        assert_ne!(ra.runs[0].id, rb.runs[0].id);
        assert_eq!(ra, a.plan().unwrap(), "planning is deterministic");
    }

    #[test]
    fn bad_groups_and_missing_files_are_named() {
        let cases = [
            (
                "schemes = [\"skype\"]\nlinks = [\"wifi\"]",
                "unknown scheme",
            ),
            ("schemes = [\"oracle\"]\nlinks = []", "at least one"),
            (
                "schemes = [\"oracle\"]\nlinks = [\"trace:X\"]",
                "traces folder",
            ),
            (
                "schemes = [\"oracle\"]\nlinks = [\"/no/such/trace\"]",
                "trace file",
            ),
            (
                "schemes = [\"oracle\"]\nlinks = [\"moon\"]",
                "unknown preset",
            ),
            (
                "schemes = [\"oracle\"]\nlinks = [\"wifi\"]\nvideos = [\"/no/clip.y4m\"]",
                "not a file",
            ),
        ];
        for (body, expected) in cases {
            let m = matrix(&format!("[[group]]\nname = \"g\"\n{body}\n"));
            let err = m.plan().unwrap_err().to_string();
            assert!(err.contains(expected), "{body}: {err}");
        }
        let err =
            Matrix::from_toml("[[group]]\nname = \"g\"\nschemes = []\nlinks = []\ncolour = 1")
                .unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn shards_partition_the_runs() {
        for count in 1..6 {
            let mut seen = vec![0; 23];
            for index in 1..=count {
                let shard: Shard = format!("{index}/{count}").parse().unwrap();
                for (pos, n) in seen.iter_mut().enumerate() {
                    if shard.takes(pos) {
                        *n += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{count}: {seen:?}");
        }
        for bad in ["0/3", "4/3", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn round_trips_through_toml() {
        let m = matrix(
            "[[group]]\nname = \"q\"\nschemes = [\"salsify-2c\"]\nlinks = [\"wifi\"]\nqueue_packets = [64, 1024]\nfigures = [\"queue-size\"]\n",
        );
        assert_eq!(Matrix::from_toml(&m.to_toml()).unwrap(), m);
    }

    proptest::proptest! {
        /// Any text is a matrix or an error, never a panic; a parsed one plans or errs.
        #[test]
        fn any_text_parses_or_fails_cleanly(text in "(\\[\\[group\\]\\]\n|name = \"g\"\n|schemes = \\[\"oracle\"\\]\n|links = \\[\"wifi\"\\]\n|seeds = \\[\\]\n|[a-z =\"\\[\\]0-9\n]){0,40}") {
            if let Ok(m) = Matrix::from_toml(&text) {
                let _ = m.plan();
            }
        }

        #[test]
        fn shard_text_parses_or_fails_cleanly(text in "[0-9/ x]{0,8}") {
            if let Ok(shard) = text.parse::<Shard>() {
                proptest::prop_assert!(shard.index >= 1 && shard.index <= shard.count);
            }
        }
    }
}
