//! Where a matrix's results live on disk, so an interrupted evaluation resumes and shards
//! run anywhere merge:
//!
//! ```text
//! OUT/matrix.toml              the matrix as run (flags applied), to rerun or edit
//! OUT/plan.json                its runs and groups (what `salsify report` draws from)
//! OUT/command.txt              the command line, for the report
//! OUT/runs/ID/experiment.toml  the run's experiment, exactly as run
//! OUT/runs/ID/summary.json     the paper's summary; its presence marks the run finished
//! OUT/runs/ID/run.json         link name, wall time, state counts
//! OUT/runs/ID/frames.csv       one line per camera picture
//! OUT/runs/ID/timeseries.csv   capacity, sending rate, delay in 250 ms bins
//! OUT/runs/ID/audio.csv        a run with audio: one line per audio frame played, on
//!                              frames.csv's time axis
//! OUT/runs/ID/feedback.json    a simulated run: how long its ACKs took to reach the sender
//! OUT/runs/ID/b-to-a/          a two-way call: side B's direction's frames.csv,
//!                              timeseries.csv and feedback.json (side A's are above, and
//!                              summary.json holds both: `a_to_b`, `b_to_a`)
//! OUT/runs/ID/live/            a live run's own files: the call's logs, match.json, ...
//! ```
//!
//! A run is written into `runs/.ID.partial` and renamed into place when complete, so a
//! killed evaluation never leaves a half-written run that looks finished.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use salsify_audio::PlayedFrame;
use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use super::spec::{Matrix, Plan, PlannedRun};
use super::timeseries::{self, Bin};
use crate::metrics::{FrameRecord, Summary};
use crate::sim::{write_frames_csv, FeedbackDelay, SimOutput, TwoWayOutput, B_TO_A_DIR};
use salsify_netem::LinkEvent;

/// Width of the time-series bins.
pub const BIN_WIDTH: Duration = Duration::from_millis(250);

/// Facts about a finished run beyond the paper's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The run's id.
    pub id: String,
    /// The link's name in the matrix.
    pub link: String,
    /// Wall-clock seconds the simulation took.
    pub wall_s: f64,
    /// Most decoder states the Salsify sender held at once (0 for other schemes).
    pub sender_states_max: usize,
    /// Most decoder states the Salsify receiver held at once (0 for other schemes).
    pub receiver_states_max: usize,
    /// The picture sizes shown, in order, each with how many pictures in a row (a scheme
    /// that changes resolution lists several). Empty in runs stored before it was recorded.
    #[serde(default)]
    pub sizes_shown: Vec<(u32, u32, u64)>,
    /// A live run's facts (load average before and after, pictures matched); none for a
    /// simulated run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<super::live::LiveFacts>,
    /// The commit whose code made the run ([`crate::CODE`]); empty in runs stored before it
    /// was recorded.
    #[serde(default)]
    pub code: String,
    /// What the simulated camera played (the source's own description, e.g. a live
    /// excerpt's); empty for live runs and runs stored before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub video: String,
}

/// A finished run read back.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// Its facts.
    pub meta: RunMeta,
    /// Its summary.
    pub summary: Summary,
    /// Its folder.
    pub dir: PathBuf,
}

/// What a run's `summary.json` holds: a two-way call's two directions, or one.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredSummary {
    TwoWay {
        a_to_b: Box<Summary>,
        b_to_a: Box<Summary>,
    },
    OneWay(Box<Summary>),
}

/// A two-way call's `summary.json`.
#[derive(Serialize)]
struct TwoWaySummary<'a> {
    a_to_b: &'a Summary,
    b_to_a: &'a Summary,
}

impl RunResult {
    /// A two-way call's B-to-A direction's summary (its `summary` is A to B's); `None`
    /// for a one-way run.
    pub fn b_to_a(&self) -> Result<Option<Summary>, String> {
        let path = self.dir.join("summary.json");
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        match serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))? {
            StoredSummary::TwoWay { b_to_a, .. } => Ok(Some(*b_to_a)),
            StoredSummary::OneWay(_) => Ok(None),
        }
    }

    /// How long the run's ACKs took to reach its sender (of a call, side A's sender's;
    /// `b_to_a`: side B's). `None` for a run stored without it (live, or made before it).
    pub fn feedback(&self, b_to_a: bool) -> Option<FeedbackDelay> {
        let dir = match b_to_a {
            true => self.dir.join(B_TO_A_DIR),
            false => self.dir.clone(),
        };
        let text = fs::read_to_string(dir.join("feedback.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The run's time series.
    pub fn time_series(&self) -> Result<Vec<Bin>, String> {
        let path = self.dir.join("timeseries.csv");
        let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        timeseries::read_csv(BufReader::new(file)).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// An evaluation's output folder.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
}

fn context(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {e}", path.display()))
}

impl Store {
    /// The store at `root` (created when missing).
    pub fn create(root: &Path) -> io::Result<Store> {
        let runs = root.join("runs");
        fs::create_dir_all(&runs).map_err(|e| context(&runs, e))?;
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// An existing store; an error if `root` holds no evaluation.
    pub fn open(root: &Path) -> io::Result<Store> {
        if !root.join("plan.json").is_file() {
            return Err(io::Error::other(format!(
                "'{}' holds no evaluation (no plan.json): run `salsify eval --out {}` first",
                root.display(),
                root.display()
            )));
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A run's folder.
    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(id)
    }

    /// Whether the run finished in an earlier invocation.
    pub fn is_done(&self, id: &str) -> bool {
        self.run_dir(id).join("summary.json").is_file()
    }

    /// Writes the matrix the runs came from.
    pub fn write_matrix(&self, matrix: &Matrix) -> io::Result<()> {
        let path = self.root.join("matrix.toml");
        salsify_codec::output::write(&path, matrix.to_toml()).map_err(|e| context(&path, e))
    }

    /// Records the command line that produced the runs (shown in the report).
    pub fn write_command(&self, command: &str) -> io::Result<()> {
        let path = self.root.join("command.txt");
        salsify_codec::output::write(&path, format!("{command}\n")).map_err(|e| context(&path, e))
    }

    /// The recorded command line.
    pub fn read_command(&self) -> io::Result<String> {
        let path = self.root.join("command.txt");
        Ok(fs::read_to_string(&path)
            .map_err(|e| context(&path, e))?
            .trim()
            .to_string())
    }

    /// Writes the plan the report is drawn from.
    pub fn write_plan(&self, plan: &Plan) -> io::Result<()> {
        let path = self.root.join("plan.json");
        let text = serde_json::to_string_pretty(plan).map_err(io::Error::other)?;
        salsify_codec::output::write(&path, text).map_err(|e| context(&path, e))
    }

    /// Reads the plan back.
    pub fn read_plan(&self) -> io::Result<Plan> {
        let path = self.root.join("plan.json");
        let text = fs::read_to_string(&path).map_err(|e| context(&path, e))?;
        serde_json::from_str(&text).map_err(|e| context(&path, e))
    }

    /// Saves a finished run, atomically; `video` says what its camera played.
    pub fn save(
        &self,
        run: &PlannedRun,
        output: &SimOutput,
        video: &str,
        wall_s: f64,
    ) -> io::Result<()> {
        self.save_with(run, |partial| {
            write_run(partial, run, output, video, wall_s, None)
        })
    }

    /// Saves a finished two-way call, atomically: side A's direction as a one-way run's
    /// files, side B's in `b-to-a/`, both in `summary.json`.
    pub fn save_two_way(
        &self,
        run: &PlannedRun,
        output: &TwoWayOutput,
        video: &str,
        wall_s: f64,
    ) -> io::Result<()> {
        self.save_with(run, |partial| {
            let b_dir = partial.join(B_TO_A_DIR);
            fs::create_dir_all(&b_dir)?;
            let b = &output.b_to_a;
            write_series(&b_dir, run, &b.records, &b.packet_events)?;
            write_feedback(&b_dir, &b.feedback)?;
            write_run(
                partial,
                run,
                &output.a_to_b,
                video,
                wall_s,
                Some(&b.summary),
            )
        })
    }

    /// Saves a finished live run, atomically, in the shape of a simulated one: its
    /// barcode-scored `records` and `summary`, the emulated link's `events` (both with the
    /// start of scoring as time zero), its facts, and `work` (the call's own files, moved in
    /// as `live/`).
    pub fn save_live(&self, run: &PlannedRun, live: LiveRun<'_>, work: &Path) -> io::Result<()> {
        self.save_with(run, |partial| {
            if let Some((played, zero)) = live.audio {
                write_audio(partial, played, zero)?;
            }
            write_parts(
                partial,
                run,
                live.records,
                live.events,
                live.meta,
                live.summary,
            )?;
            fs::rename(work, partial.join("live"))
        })
    }

    /// A live cell's scratch folder (beside the runs, never taken for a finished run).
    pub fn live_work_dir(&self, id: &str) -> PathBuf {
        self.root.join("runs").join(format!(".{id}.live"))
    }

    fn save_with(
        &self,
        run: &PlannedRun,
        write: impl FnOnce(&Path) -> io::Result<()>,
    ) -> io::Result<()> {
        let dir = self.run_dir(&run.id);
        let partial = self.root.join("runs").join(format!(".{}.partial", run.id));
        if partial.exists() {
            fs::remove_dir_all(&partial).map_err(|e| context(&partial, e))?;
        }
        fs::create_dir_all(&partial).map_err(|e| context(&partial, e))?;
        write(&partial).map_err(|e| context(&partial, e))?;
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| context(&dir, e))?;
        }
        fs::rename(&partial, &dir).map_err(|e| context(&dir, e))
    }

    /// A finished run, or `None` if it has not finished.
    pub fn load(&self, id: &str) -> io::Result<Option<RunResult>> {
        if !self.is_done(id) {
            return Ok(None);
        }
        let dir = self.run_dir(id);
        let read_json = |name: &str| -> io::Result<String> {
            let path = dir.join(name);
            fs::read_to_string(&path).map_err(|e| context(&path, e))
        };
        let stored: StoredSummary = serde_json::from_str(&read_json("summary.json")?)
            .map_err(|e| context(&dir.join("summary.json"), e))?;
        let summary = match stored {
            StoredSummary::TwoWay { a_to_b, .. } => *a_to_b,
            StoredSummary::OneWay(summary) => *summary,
        };
        let meta: RunMeta = serde_json::from_str(&read_json("run.json")?)
            .map_err(|e| context(&dir.join("run.json"), e))?;
        Ok(Some(RunResult { meta, summary, dir }))
    }
}

/// A finished live run's results, for [`Store::save_live`].
#[derive(Clone, Copy, Debug)]
pub struct LiveRun<'a> {
    /// One record per camera picture, scored by barcodes.
    pub records: &'a [FrameRecord],
    /// The video direction's link events.
    pub events: &'a [LinkEvent],
    /// The summary of `records`.
    pub summary: &'a Summary,
    /// Its facts.
    pub meta: &'a RunMeta,
    /// In a call with audio, every audio frame the receiver played and the host time of the
    /// records' zero (frames before it are left out of `audio.csv`).
    pub audio: Option<(&'a [PlayedFrame], Instant)>,
}

/// Writes `audio.csv`: every frame played, in ms from `zero`, left out if played or captured
/// before it.
fn write_audio(dir: &Path, played: &[PlayedFrame], zero: Instant) -> io::Result<()> {
    let kept: Vec<PlayedFrame> = played
        .iter()
        .filter(|p| p.at >= zero && p.captured >= zero)
        .copied()
        .collect();
    let mut csv = salsify_codec::output::create(&dir.join("audio.csv")).map(BufWriter::new)?;
    salsify_audio::write_played_csv(&kept, zero, &mut csv)?;
    csv.flush()
}

/// Writes a simulated run's files (of a call, side A's, with side B's summary `b_to_a`).
fn write_run(
    dir: &Path,
    run: &PlannedRun,
    output: &SimOutput,
    video: &str,
    wall_s: f64,
    b_to_a: Option<&Summary>,
) -> io::Result<()> {
    let meta = RunMeta {
        id: run.id.clone(),
        link: run.link.clone(),
        wall_s,
        sender_states_max: output.sender.max_states_held,
        receiver_states_max: output.receiver.max_states_held,
        sizes_shown: output.shown_sizes.clone(),
        live: None,
        code: crate::CODE.to_string(),
        video: video.to_string(),
    };
    if let Some(audio) = &output.audio {
        write_audio(dir, &audio.played, Instant::ZERO)?;
    }
    write_feedback(dir, &output.feedback)?;
    write_parts(
        dir,
        run,
        &output.records,
        &output.packet_events,
        &meta,
        &output.summary,
    )?;
    if let Some(b_to_a) = b_to_a {
        // Over the one-way summary write_parts put there: the run is finished either way.
        let both = TwoWaySummary {
            a_to_b: &output.summary,
            b_to_a,
        };
        salsify_codec::output::write(
            &dir.join("summary.json"),
            serde_json::to_string_pretty(&both)?,
        )?;
    }
    Ok(())
}

fn write_feedback(dir: &Path, feedback: &FeedbackDelay) -> io::Result<()> {
    salsify_codec::output::write(
        &dir.join("feedback.json"),
        serde_json::to_string_pretty(feedback)?,
    )
}

/// Writes a direction's `frames.csv` and `timeseries.csv`.
fn write_series(
    dir: &Path,
    run: &PlannedRun,
    records: &[FrameRecord],
    events: &[LinkEvent],
) -> io::Result<()> {
    let create = |name: &str| salsify_codec::output::create(&dir.join(name)).map(BufWriter::new);
    let mut frames = create("frames.csv")?;
    write_frames_csv(records, &mut frames)?;
    frames.flush()?;
    let duration = Duration::from_secs_f64(run.experiment.duration_s);
    let bins =
        timeseries::bin_run(events, records, duration, BIN_WIDTH).map_err(io::Error::other)?;
    let mut series = create("timeseries.csv")?;
    timeseries::write_csv(&bins, &mut series)?;
    series.flush()
}

/// Writes a run's files; `summary.json` last, as its presence marks the run finished.
fn write_parts(
    dir: &Path,
    run: &PlannedRun,
    records: &[FrameRecord],
    events: &[LinkEvent],
    meta: &RunMeta,
    summary: &Summary,
) -> io::Result<()> {
    write_series(dir, run, records, events)?;
    let experiment = toml::to_string(&run.experiment).map_err(io::Error::other)?;
    salsify_codec::output::write(&dir.join("experiment.toml"), experiment)?;
    salsify_codec::output::write(&dir.join("run.json"), serde_json::to_string_pretty(meta)?)?;
    // Last: its presence is what marks the run finished.
    salsify_codec::output::write(
        &dir.join("summary.json"),
        serde_json::to_string_pretty(summary)?,
    )
}
