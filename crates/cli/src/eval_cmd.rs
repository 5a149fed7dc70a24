//! `salsify eval`: the paper's evaluation (or any matrix) as one command. Runs every run of
//! the matrix not already finished in the output folder, several at once, with a progress
//! bar and ETA; then writes the report. `--shard I/N` runs every N-th run for job arrays.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant as WallInstant;

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use salsify_eval::campaign::{default_matrix, Matrix, PlannedRun, Shard, Store};
use salsify_eval::experiment::Clip;
use salsify_eval::sim::{simulate, simulate_two_way, LoopedClip, VideoSource};

use crate::clips::{frames_needed, live_excerpt, read_clip, synthetic_video};
use crate::input::Size;
use crate::report_files;

/// Options of `salsify eval`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Matrix file (TOML: `[defaults]` and `[[group]]` tables naming schemes, links and seeds;
    /// `--print-matrix` prints the built-in one as an example). Default: the built-in matrix
    /// of the paper's experiments 1-7.
    #[arg(long)]
    matrix: Option<PathBuf>,
    /// Folder of Mahimahi traces (NAME.down / NAME.up), e.g.
    /// /usr/share/mahimahi/traces. The built-in matrix then runs experiment 1 on every trace
    /// in it and experiments 4 and 7 on Verizon LTE; without it every link is synthetic.
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Video for every run (a .y4m or any file ffmpeg reads), e.g.
    /// FourPeople_1280x720_60.mp4. Default: the built-in synthetic source.
    #[arg(long)]
    video: Option<String>,
    /// Output folder: runs/, matrix.toml, report.html, report.md, figures/. An evaluation
    /// resumes in it (shards may share it; finished runs of the same experiments are
    /// reused); a folder holding another command's run is refused.
    #[arg(long, default_value = "salsify-eval-out")]
    out: PathBuf,
    /// Empty the output folder first (its finished runs are lost), also when it holds
    /// another command's run.
    #[arg(long)]
    force: bool,
    /// Runs at once (each Salsify-2c run itself keeps about two cores busy).
    #[arg(long, default_value_t = default_jobs())]
    jobs: usize,
    /// Run only shard I of N (counted from 1): every N-th run of the sorted matrix. Point
    /// `salsify report` at all shards' folders (or one shared folder) afterwards.
    #[arg(long)]
    shard: Option<Shard>,
    /// Cap every run's simulated seconds (a quick look; changes the runs' ids). A group whose
    /// link exists to show an event (dropout, cliff, ramp, fade, ACK stall) keeps 5 s past its
    /// first one; each shortened group's title says how much of it ran and why.
    #[arg(long)]
    max_duration: Option<f64>,
    /// Synthetic video size for every run (default 1280x720, the paper's).
    #[arg(long)]
    size: Option<Size>,
    /// Seeds for every group (comma-separated), replacing the matrix's.
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Print the matrix (after the flags above) as TOML and exit.
    #[arg(long)]
    print_matrix: bool,
    /// List the runs and whether each is finished, and exit.
    #[arg(long)]
    dry_run: bool,
    /// Do not write the report at the end.
    #[arg(long)]
    no_report: bool,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2))
}

impl EvalArgs {
    /// The matrix: the file's or the built-in one, with the flags laid over it.
    fn matrix(&self) -> Result<Matrix> {
        let video = self.video.clone().unwrap_or_else(|| "synthetic".into());
        let mut m = match &self.matrix {
            Some(path) => {
                let text = crate::paths::read_text("matrix file", path)?;
                let mut m = Matrix::from_toml(&text).map_err(|e| {
                    let why = match e {
                        salsify_eval::campaign::MatrixError::Parse(why) => why,
                        other => other.to_string(),
                    };
                    anyhow::anyhow!(
                        "in matrix file '{}': {}",
                        path.display(),
                        crate::usage::with_suggestion(&why)
                    )
                })?;
                if let Some(dir) = &self.traces {
                    m.traces = Some(dir.clone());
                }
                if let Some(v) = &self.video {
                    m.defaults.video = v.clone();
                }
                m
            }
            None => default_matrix(self.traces.as_deref(), &video)?,
        };
        if let Some(size) = self.size {
            m.defaults.size = size.to_string();
        }
        if !self.seeds.is_empty() {
            for g in &mut m.groups {
                g.seeds = self.seeds.clone();
            }
        }
        if let Some(cap) = self.max_duration {
            if !(cap.is_finite() && cap > 0.0) {
                return Err(crate::usage::usage(format!(
                    "--max-duration {cap} is not a positive number of seconds"
                )));
            }
            for line in m
                .cap_durations(cap)
                .map_err(|e| anyhow::anyhow!("bad matrix: {e}"))?
            {
                eprintln!("--max-duration {cap}: {line}");
            }
        }
        Ok(m)
    }
}

/// Runs the matrix.
pub fn run(args: &EvalArgs) -> Result<()> {
    if args.jobs == 0 {
        return Err(crate::usage::usage("--jobs must be at least 1"));
    }
    let matrix = args.matrix()?;
    if args.print_matrix {
        print!("{}", matrix.to_toml());
        return Ok(());
    }
    let plan = matrix.plan().context("bad matrix")?;
    check_videos(&plan)?;
    let shard = args.shard.unwrap_or(Shard::ALL);
    // Checked before anything is written (and --dry-run writes nothing).
    let about = format!("an evaluation of {} runs", plan.runs.len());
    let key = crate::out_dir::eval_key(plan.runs.iter().map(|r| r.id.as_str()));
    let mark = crate::out_dir::RunMark::with_key("eval", key, about);
    let reuse = crate::out_dir::Reuse {
        force: args.force,
        default_folder: false,
    };
    let folder = crate::out_dir::plan(&args.out, "--out", mark, reuse, true)?;
    // A folder about to be emptied has no finished run.
    let replacing = folder.replaces().is_some();
    // Looked up without the store, which --dry-run must not create.
    let done = |id: &str| {
        !replacing
            && args
                .out
                .join("runs")
                .join(id)
                .join("summary.json")
                .is_file()
    };
    let mine: Vec<&PlannedRun> = plan
        .runs
        .iter()
        .enumerate()
        .filter(|(i, _)| shard.takes(*i))
        .map(|(_, r)| r)
        .collect();
    let todo: Vec<PlannedRun> = mine
        .iter()
        .filter(|r| !done(&r.id))
        .map(|r| (*r).clone())
        .collect();
    if args.dry_run {
        for r in &mine {
            let state = if done(&r.id) { "done" } else { "to run" };
            println!("{state:7} {}", r.id);
        }
        println!(
            "{} runs in shard {}/{}, {} to run",
            mine.len(),
            shard.index,
            shard.count,
            todo.len()
        );
        return Ok(());
    }
    check_live_systems(&todo)?;
    folder.take()?;
    let store = Store::create(&args.out)
        .with_context(|| format!("cannot use output folder '{}'", args.out.display()))?;
    store.write_matrix(&matrix)?;
    store.write_plan(&plan)?;
    store.write_command(&command_line())?;
    let live = todo.iter().filter(|r| r.live).count();
    eprintln!(
        "{} runs in the matrix, {} in shard {}/{}, {} already finished, {} to run with {} at once{}; results in {}",
        plan.runs.len(),
        mine.len(),
        shard.index,
        shard.count,
        mine.len() - todo.len(),
        todo.len(),
        args.jobs.min(todo.len().max(1)),
        match live {
            0 => String::new(),
            n => format!(" ({n} live, run one at a time after the others)"),
        },
        args.out.display()
    );
    let failures = run_all(&store, todo, args.jobs, args.quiet)?;
    for (id, err) in &failures {
        eprintln!("run {id} failed: {err:#}");
    }
    let unfinished = plan.runs.iter().filter(|r| !store.is_done(&r.id)).count();
    if !args.no_report {
        if unfinished == 0 {
            let summary = report_files::write_report(&[store.root().to_path_buf()], store.root())?;
            if !args.quiet {
                eprintln!("{summary}");
            }
        } else {
            eprintln!(
                "{unfinished} runs of the matrix are not in {} yet (other shards?): merge with `salsify report {} OTHER_DIRS...`",
                args.out.display(),
                args.out.display()
            );
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} runs failed (finished runs are kept; rerun to retry)",
            failures.len()
        );
    }
    Ok(())
}

/// A live Chromium cell needs Chromium: said before anything runs, not after an hour of
/// simulations.
fn check_live_systems(todo: &[PlannedRun]) -> Result<()> {
    let chromium = salsify_eval::campaign::live::chromium_systems();
    if let Some(run) = todo
        .iter()
        .find(|r| r.live && chromium.contains(&r.experiment.scheme.as_str()))
    {
        salsify_peer::chromium::find_binary(None)
            .with_context(|| format!("live run {} needs Chromium", run.id))?;
    }
    Ok(())
}

/// Opens every video file the plan plays once, so a missing or unreadable one is one clear
/// error before anything is written, rather than one failure per run.
fn check_videos(plan: &salsify_eval::campaign::Plan) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for run in &plan.runs {
        let video = &run.experiment.video;
        if video != "synthetic" && seen.insert(video.clone()) {
            let tiny = Size {
                width: 2,
                height: 2,
            };
            crate::input::VideoInput::open(video, tiny, 30.0)?;
        }
    }
    Ok(())
}

/// Videos read from files, shared by every run that plays them.
#[derive(Default)]
struct ClipCache {
    clips: Mutex<HashMap<String, Arc<Mutex<Option<LoopedClip>>>>>,
}

impl ClipCache {
    fn video(&self, run: &PlannedRun, needed: usize) -> Result<Box<dyn VideoSource>> {
        let e = &run.experiment;
        let excerpt = e.clip == Clip::LiveExcerpt;
        if e.video == "synthetic" && !excerpt {
            return synthetic_video(e);
        }
        // A live excerpt of the synthetic source depends on its size and rate too.
        let key = match excerpt {
            true => format!("live excerpt of {} at {} {} fps", e.video, e.size, e.fps),
            false => e.video.clone(),
        };
        let slot = self
            .clips
            .lock()
            .expect("clip cache lock")
            .entry(key)
            .or_default()
            .clone();
        // One reader per file; the others wait for it rather than decode it again.
        let mut slot = slot.lock().expect("clip lock");
        if slot.is_none() {
            *slot = Some(match excerpt {
                true => live_excerpt(e)?,
                false => read_clip(&e.video, needed)?,
            });
        }
        Ok(Box::new(slot.clone().expect("just filled")))
    }
}

/// Runs `todo`: the simulated runs on `jobs` threads, then the live cells one at a time
/// (nothing else of the evaluation runs beside a live cell, which would take the CPU its
/// real-time encoders and browser need); returns the runs that failed.
fn run_all(
    store: &Store,
    todo: Vec<PlannedRun>,
    jobs: usize,
    quiet: bool,
) -> Result<Vec<(String, anyhow::Error)>> {
    if todo.is_empty() {
        return Ok(Vec::new());
    }
    let progress = Progress::new(&todo, quiet);
    let (live, simulated): (Vec<PlannedRun>, Vec<PlannedRun>) =
        todo.into_iter().partition(|r| r.live);
    let mut failures = run_simulated(store, simulated, jobs, &progress);
    for run in &live {
        if crate::runtime::interrupted() {
            break;
        }
        let line = progress.start(run);
        let result = crate::eval_live::run_live(store, run);
        progress.advance((run.experiment.duration_s * 1000.0) as u64);
        progress.done(line, result.is_ok());
        if let Err(e) = result {
            failures.push((run.id.clone(), e));
        }
    }
    progress.finish();
    Ok(failures)
}

/// Runs simulated runs on `jobs` threads; returns the runs that failed.
fn run_simulated(
    store: &Store,
    todo: Vec<PlannedRun>,
    jobs: usize,
    progress: &Progress,
) -> Vec<(String, anyhow::Error)> {
    if todo.is_empty() {
        return Vec::new();
    }
    let most_frames = todo
        .iter()
        .map(|r| frames_needed(&r.experiment))
        .max()
        .unwrap_or(1);
    let next = AtomicUsize::new(0);
    let clips = ClipCache::default();
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(todo.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(run) = todo.get(i) else { break };
                if let Err(e) = run_one(store, run, &clips, most_frames, progress) {
                    failures
                        .lock()
                        .expect("failures lock")
                        .push((run.id.clone(), e));
                }
            });
        }
    });
    failures.into_inner().expect("failures lock")
}

fn run_one(
    store: &Store,
    run: &PlannedRun,
    clips: &ClipCache,
    most_frames: usize,
    progress: &Progress,
) -> Result<()> {
    let line = progress.start(run);
    let result = (|| -> Result<()> {
        let mut config = run.experiment.sim_config()?;
        config.record_packets = true;
        let mut video = clips.video(run, most_frames)?;
        let started = WallInstant::now();
        let mut reached_ms = 0;
        let mut advance = |t: salsify_time::Duration| {
            let ms = t.as_millis() as u64;
            line.set_position(ms);
            progress.advance(ms.saturating_sub(reached_ms));
            reached_ms = reached_ms.max(ms);
        };
        let played = video.name();
        if run.experiment.two_way {
            let output = simulate_two_way(&config, video.as_mut(), &mut advance)?;
            store.save_two_way(run, &output, &played, started.elapsed().as_secs_f64())?;
        } else {
            let output = simulate(&config, video.as_mut(), &mut advance)?;
            store.save(run, &output, &played, started.elapsed().as_secs_f64())?;
        }
        let total_ms = (run.experiment.duration_s * 1000.0) as u64;
        progress.advance(total_ms.saturating_sub(reached_ms));
        Ok(())
    })();
    progress.done(line, result.is_ok());
    result
}

/// The overall bar (simulated seconds over the whole to-do list, with ETA) and a line per
/// run under way.
struct Progress {
    multi: MultiProgress,
    total: ProgressBar,
    runs: usize,
    finished: AtomicUsize,
}

impl Progress {
    fn new(todo: &[PlannedRun], quiet: bool) -> Progress {
        let multi = MultiProgress::new();
        if quiet {
            multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let total_ms: f64 = todo.iter().map(|r| r.experiment.duration_s * 1000.0).sum();
        let total = multi.add(ProgressBar::new(total_ms as u64));
        total.set_style(
            ProgressStyle::with_template(
                "{bar:40} {msg} | {elapsed_precise} elapsed, eta {eta_precise}",
            )
            .expect("constant template"),
        );
        let progress = Progress {
            multi,
            total,
            runs: todo.len(),
            finished: AtomicUsize::new(0),
        };
        progress.set_message();
        progress
    }

    fn set_message(&self) {
        self.total.set_message(format!(
            "{}/{} runs finished",
            self.finished.load(Ordering::SeqCst),
            self.runs
        ));
    }

    fn start(&self, run: &PlannedRun) -> ProgressBar {
        let line = self.multi.add(ProgressBar::new(
            (run.experiment.duration_s * 1000.0) as u64,
        ));
        line.set_style(
            ProgressStyle::with_template("  {msg} {pos}/{len} ms").expect("constant template"),
        );
        line.set_message(run.id.clone());
        line
    }

    fn advance(&self, ms: u64) {
        self.total.inc(ms);
    }

    fn done(&self, line: ProgressBar, ok: bool) {
        let id = line.message();
        line.finish_and_clear();
        self.multi.remove(&line);
        self.finished.fetch_add(1, Ordering::SeqCst);
        self.set_message();
        let verdict = if ok { "finished" } else { "FAILED" };
        if self.multi.is_hidden() {
            eprintln!("{verdict} {id}");
        } else {
            let _ = self.multi.println(format!("{verdict} {id}"));
        }
    }

    fn finish(&self) {
        self.total.finish();
    }
}

/// This process's command line, quoted where a shell would need it.
fn command_line() -> String {
    let quote = |a: String| {
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    // The program is named as a user types it, wherever the binary lives.
    let args = std::env::args().skip(1);
    let program = "salsify".to_string();
    std::iter::once(program)
        .chain(args.map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}
