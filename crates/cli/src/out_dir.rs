//! Output folders (`--out` of `sim`, `demo` and `eval`): each holds one run, never two
//! mixed (`link --log-dir` refuses another run's folder too, [`refuse_marked_runs`]). A run marks its folder ([`MARK`]: the command, a key of what it
//! ran, a line about it); a folder that holds a run of another command or another
//! experiment is refused (bad usage, exit 2: the folder named is the wrong one for this run,
//! and another `--out` or `--force` is the remedy) or, with `--force`, emptied first. The
//! same experiment again replaces the earlier run, and a command's default folder
//! (`salsify-demo-out`, `salsify-sim-out`) is replaced with a line that says so. `eval`
//! resumes instead: its folder keeps each run under its experiment's id and reports only
//! its plan's, so another evaluation's folder is taken (with a line), reusing the runs of
//! the same experiments. A folder of files that are no run's is never emptied.
//!
//! What to do is decided ([`plan`]) before anything runs, and done ([`Plan::take`]) only when
//! the run is about to write, so a failed start or an interrupted simulation leaves no empty
//! folder behind ([`Taken::abandon`] removes one the run made and did not use).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::usage::usage;

/// The file that says which run a folder holds.
pub const MARK: &str = "salsify-run.json";

/// The run about to write into a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunMark {
    /// `sim`, `demo`, `eval`, `link`.
    pub command: &'static str,
    /// What it runs, as a key: the same key is the same experiment.
    pub experiment: String,
    /// One line about it, for messages and `salsify view`'s title.
    pub about: String,
}

impl RunMark {
    /// A mark whose key is given as it is (see [`eval_key`]).
    pub fn with_key(command: &'static str, key: String, about: impl Into<String>) -> RunMark {
        RunMark {
            command,
            experiment: key,
            about: about.into(),
        }
    }

    /// A mark whose key is a hash of `experiment` (any text that says all the run does).
    pub fn new(command: &'static str, experiment: &str, about: impl Into<String>) -> RunMark {
        RunMark {
            command,
            experiment: format!("{:016x}", fnv1a(experiment.as_bytes())),
            about: about.into(),
        }
    }
}

/// 64-bit FNV-1a: a key that stays the same from one build to the next (std's hasher may
/// not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// How a folder that holds a run may be reused.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reuse {
    /// `--force`: empty a folder that holds any run.
    pub force: bool,
    /// The folder is the command's default one: an earlier run of the same command in it is
    /// replaced (with a line that says so).
    pub default_folder: bool,
}

/// What a folder holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Holds {
    /// Nothing (or it does not exist).
    Nothing,
    /// A run: its command, its key where known (runs from before marks have none), and what
    /// to call it.
    Run {
        /// The command that wrote it.
        command: String,
        /// Its experiment's key, where known.
        experiment: Option<String>,
        /// A line about it.
        about: String,
    },
    /// Files that are no run's.
    Other,
}

/// Files only one command writes, to tell an unmarked run folder's command by.
const SIGNS: &[(&str, &str)] = &[
    ("plan.json", "eval"),
    ("received.ivf", "demo"),
    ("sender.csv", "demo"),
    ("receiver.csv", "demo"),
    ("packets.log", "sim"),
    ("match.json", "peer"),
    ("video.log", "link"),
    ("relay.csv", "link"),
    ("frames.csv", "sim"),
    ("summary.json", "sim"),
];

/// What `dir` holds (read from its mark, else guessed from its files).
pub fn holds(dir: &Path) -> Result<Holds> {
    let mut entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holds::Nothing),
        Err(e) => return Err(e).with_context(|| format!("cannot read '{}'", dir.display())),
    };
    if entries.next().is_none() {
        return Ok(Holds::Nothing);
    }
    if let Some(mark) = read_mark(dir) {
        let text = |k: &str| mark.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(command) = text("command") {
            return Ok(Holds::Run {
                about: text("about").unwrap_or_else(|| format!("a run of `salsify {command}`")),
                experiment: text("experiment"),
                command,
            });
        }
    }
    match SIGNS.iter().find(|(file, _)| dir.join(file).exists()) {
        Some((_, command)) => Ok(Holds::Run {
            command: command.to_string(),
            // An evaluation from before marks is known by its plan's runs.
            experiment: (*command == "eval").then(|| plan_key(dir)).flatten(),
            about: format!("a run of `salsify {command}`"),
        }),
        None => Ok(Holds::Other),
    }
}

/// The key of an evaluation of the runs `ids`: the same runs are the same evaluation
/// (however the matrix was written), so it resumes and its shards share a folder.
pub fn eval_key<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let mut ids: Vec<&str> = ids.into_iter().collect();
    ids.sort_unstable();
    format!("{:016x}", fnv1a(ids.join("\n").as_bytes()))
}

/// [`eval_key`] of the plan stored in `dir`.
fn plan_key(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("plan.json")).ok()?;
    let plan: Value = serde_json::from_str(&text).ok()?;
    let runs = plan.get("runs")?.as_array()?;
    let ids: Option<Vec<&str>> = runs.iter().map(|r| r.get("id")?.as_str()).collect();
    Some(eval_key(ids?))
}

/// The mark of `dir`, if it has one that parses.
pub fn read_mark(dir: &Path) -> Option<Value> {
    let text = fs::read_to_string(dir.join(MARK)).ok()?;
    serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object)
}

/// Refuses `dir` (given with `flag`) for logs when it holds a marked run of a command
/// (`sim`, `demo`, `eval`): a folder where other logs of a call may already be (`link
/// --log-dir` beside `send --log` and `recv --log`), but not another run's files.
pub fn refuse_marked_runs(dir: &Path, flag: &str) -> Result<()> {
    let Some(mark) = read_mark(dir) else {
        return Ok(());
    };
    let about = mark.get("about").and_then(Value::as_str).unwrap_or("a run");
    Err(usage(format!(
        "{flag} '{}' holds {about}: its logs would be mixed with this one's; give another folder",
        dir.display()
    )))
}

/// What will be done with the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// It does not exist: make it.
    Make,
    /// It exists and is empty, or holds a run the command resumes (`note`: what to say).
    Use { note: Option<String> },
    /// Empty it first (what it holds, said when `say`).
    Replace { what: String, say: bool },
}

/// A folder checked for a run, not yet touched.
#[derive(Debug, Clone)]
#[must_use = "a plan does nothing until taken"]
pub struct Plan {
    path: PathBuf,
    mark: RunMark,
    action: Action,
}

/// Decides what `mark`'s run may do with `path` (given with `flag`): refuses a folder that
/// holds another command's or another experiment's run unless `reuse` allows it, and a
/// folder of files that are no run's. `resumes`: the command adds to an earlier run of the
/// same experiment rather than replacing it (`eval`). Touches nothing on disk but a folder it
/// makes to see that it can, and removes at once.
pub fn plan(path: &Path, flag: &str, mark: RunMark, reuse: Reuse, resumes: bool) -> Result<Plan> {
    let shown = path.display();
    if path.exists() && !path.is_dir() {
        return Err(usage(format!(
            "{flag} '{shown}' is a file, not a folder: give a folder for the run's files"
        )));
    }
    let action = match holds(path)? {
        Holds::Nothing if path.is_dir() => Action::Use { note: None },
        Holds::Nothing => {
            can_make(path).with_context(|| flag.to_string())?;
            Action::Make
        }
        Holds::Other => {
            return Err(usage(format!(
                "{flag} '{shown}' holds files that are not a salsify run's: give a new or empty \
                 folder (--force empties only a folder that holds a run)"
            )))
        }
        Holds::Run {
            command,
            experiment,
            about,
        } => {
            let same_command = command == mark.command;
            let same = same_command && experiment.as_deref() == Some(mark.experiment.as_str());
            if reuse.force {
                Action::Replace {
                    what: about,
                    say: true,
                }
            } else if same && resumes {
                Action::Use { note: None }
            } else if same_command && resumes {
                // Its runs are kept by experiment: the same experiments are reused, and the
                // others are in no plan or report of this one.
                Action::Use {
                    note: Some(format!(
                        "'{shown}' holds {about}, not all of them this plan's: finished runs \
                         of the same experiments are reused; the others stay in runs/, outside \
                         this plan and its report"
                    )),
                }
            } else if same {
                Action::Replace {
                    what: format!("the earlier run of the same experiment ({about})"),
                    say: true,
                }
            } else if same_command && reuse.default_folder {
                Action::Replace {
                    what: about,
                    say: true,
                }
            } else {
                let other = match same_command {
                    true => "another experiment",
                    false => "another command",
                };
                return Err(usage(format!(
                    "{flag} '{shown}' holds a run of {other} ({about}): runs are not mixed in \
                     one folder; give another {flag}, or --force to empty it first"
                )));
            }
        }
    };
    Ok(Plan {
        path: path.to_path_buf(),
        mark,
        action,
    })
}

/// Makes `path` (and missing parents) and removes what it made: the run would fail later
/// for a folder it cannot make, after the work.
fn can_make(path: &Path) -> Result<()> {
    let missing = missing_folders(path);
    fs::create_dir_all(path)
        .with_context(|| format!("cannot create folder '{}'", path.display()))?;
    remove_made(&missing);
    Ok(())
}

/// `path` and those of its parents that do not exist, deepest first.
fn missing_folders(path: &Path) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        missing.push(p.to_path_buf());
        at = p.parent();
    }
    missing
}

/// Removes the folders `made` (deepest first) that are empty.
fn remove_made(made: &[PathBuf]) {
    for p in made {
        if fs::remove_dir(p).is_err() {
            break;
        }
    }
}

impl Plan {
    /// Whether the run will replace an earlier one (and what it is), to say before it starts.
    pub fn replaces(&self) -> Option<&str> {
        match &self.action {
            Action::Replace { what, say: true } => Some(what),
            _ => None,
        }
    }

    /// Does what was decided: makes the folder or empties it (saying so on standard error,
    /// as `command`), and marks it as this run's.
    pub fn take(self) -> Result<Taken> {
        let made = missing_folders(&self.path);
        if let Action::Use { note: Some(note) } = &self.action {
            eprintln!("salsify {}: {note}", self.mark.command);
        }
        if let Action::Replace { what, say } = &self.action {
            if *say {
                eprintln!(
                    "salsify {}: replacing {what} in '{}'",
                    self.mark.command,
                    self.path.display()
                );
            }
            empty(&self.path)?;
        }
        fs::create_dir_all(&self.path)
            .with_context(|| format!("cannot create folder '{}'", self.path.display()))?;
        let taken = Taken {
            path: self.path,
            mark: self.mark,
            made,
        };
        taken.write_mark(None)?;
        Ok(taken)
    }
}

/// Removes everything in `dir` (links themselves, not what they point at).
fn empty(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read '{}'", dir.display()))? {
        let path = entry?.path();
        let gone = match fs::symlink_metadata(&path)?.is_dir() {
            true => fs::remove_dir_all(&path),
            false => fs::remove_file(&path),
        };
        gone.with_context(|| format!("cannot remove '{}'", path.display()))?;
    }
    Ok(())
}

/// A folder taken by a run.
#[derive(Debug)]
pub struct Taken {
    path: PathBuf,
    mark: RunMark,
    /// The folders taking it made, deepest first.
    made: Vec<PathBuf>,
}

impl Taken {
    /// Writes the mark; `seconds`, the run's length once known, for `salsify view`.
    fn write_mark(&self, seconds: Option<f64>) -> Result<()> {
        let mut mark = json!({
            "command": self.mark.command,
            "experiment": self.mark.experiment,
            "about": self.mark.about,
        });
        if let Some(s) = seconds.filter(|s| s.is_finite()) {
            mark["seconds"] = json!(s);
        }
        let path = self.path.join(MARK);
        let text = serde_json::to_string_pretty(&mark)? + "\n";
        salsify_codec::output::write(&path, text)
            .with_context(|| format!("cannot write '{}'", path.display()))
    }

    /// Records how long the run lasted (what `salsify view` draws up to).
    pub fn record_length(&self, seconds: f64) -> Result<()> {
        self.write_mark(Some(seconds))
    }

    /// The run did not start: removes the folder if this run made it and wrote nothing but
    /// its mark in it.
    pub fn abandon(self) {
        let _ = fs::remove_file(self.path.join(MARK));
        remove_made(&self.made);
    }
}

/// The run's length from `dir`'s mark, if it recorded one.
pub fn recorded_seconds(dir: &Path) -> Option<f64> {
    read_mark(dir)?.get("seconds")?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("salsify-out-dir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn sim(key: &str) -> RunMark {
        RunMark::new("sim", key, format!("a sim of {key}"))
    }

    fn refused(p: Result<Plan>) -> String {
        let err = p.unwrap_err();
        assert_eq!(crate::usage::exit_code(&err), 2, "{err:#}");
        format!("{err:#}")
    }

    /// A new folder is made only when taken; the same experiment replaces itself; another
    /// experiment or command is refused, or emptied with --force; a default folder's earlier
    /// run of the same command is replaced.
    #[test]
    fn runs_are_never_mixed() {
        let dir = temp("mixed");
        let first = plan(&dir, "--out", sim("a"), Reuse::default(), false).unwrap();
        assert!(!dir.exists(), "planning makes nothing");
        let taken = first.take().unwrap();
        fs::write(dir.join("frames.csv"), "x").unwrap();
        assert_eq!(
            holds(&dir).unwrap(),
            Holds::Run {
                command: "sim".into(),
                experiment: Some(sim("a").experiment),
                about: "a sim of a".into()
            }
        );
        drop(taken);
        // The same experiment again: replaced.
        let again = plan(&dir, "--out", sim("a"), Reuse::default(), false).unwrap();
        assert!(again.replaces().is_some());
        // Resumed, for a command that resumes.
        let resumed = plan(&dir, "--out", sim("a"), Reuse::default(), true).unwrap();
        assert!(resumed.replaces().is_none());
        // Another experiment, another command: refused, naming what is there.
        let err = refused(plan(&dir, "--out", sim("b"), Reuse::default(), false));
        assert!(
            err.contains("a sim of a") && err.contains("another experiment"),
            "{err}"
        );
        let demo = RunMark::new("demo", "d", "a demo");
        let err = refused(plan(&dir, "--out", demo.clone(), Reuse::default(), false));
        assert!(
            err.contains("another command") && err.contains("--force"),
            "{err}"
        );
        // The default folder of the same command: replaced; of another command: refused.
        let default = Reuse {
            default_folder: true,
            force: false,
        };
        assert!(plan(&dir, "--out", sim("b"), default, false).is_ok());
        refused(plan(&dir, "--out", demo.clone(), default, false));
        // --force empties it.
        let force = Reuse {
            force: true,
            default_folder: false,
        };
        let forced = plan(&dir, "--out", demo, force, false).unwrap();
        let taken = forced.take().unwrap();
        assert!(!dir.join("frames.csv").exists(), "emptied");
        assert_eq!(read_mark(&dir).unwrap()["command"], "demo");
        taken.record_length(20.0).unwrap();
        assert_eq!(recorded_seconds(&dir), Some(20.0));
        let _ = fs::remove_dir_all(&dir);
    }

    /// Folders of other files are never emptied, not even with --force; a run from before
    /// marks is known by its files; a file is no folder.
    #[test]
    fn other_files_and_old_runs() {
        let dir = temp("other");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        let force = Reuse {
            force: true,
            default_folder: true,
        };
        let err = refused(plan(&dir, "--out", sim("a"), force, false));
        assert!(err.contains("not a salsify run"), "{err}");
        assert!(dir.join("notes.txt").exists());
        fs::remove_file(dir.join("notes.txt")).unwrap();
        fs::write(dir.join("received.ivf"), "").unwrap();
        let err = refused(plan(&dir, "--log-dir", sim("a"), Reuse::default(), false));
        assert!(err.contains("`salsify demo`"), "{err}");
        let file = dir.join("received.ivf");
        let err = refused(plan(&file, "--out", sim("a"), Reuse::default(), false));
        assert!(err.contains("is a file"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    /// An evaluation from before marks resumes: its plan's runs are its key; an evaluation
    /// of other runs is taken too (its runs are kept by experiment), with a note.
    #[test]
    fn an_old_evaluation_resumes() {
        let dir = temp("eval");
        fs::create_dir_all(dir.join("runs")).unwrap();
        fs::write(
            dir.join("plan.json"),
            r#"{"runs": [{"id": "b"}, {"id": "a"}], "groups": []}"#,
        )
        .unwrap();
        let mark = |ids: &[&str]| RunMark::with_key("eval", eval_key(ids.iter().copied()), "x");
        let same = plan(&dir, "--out", mark(&["a", "b"]), Reuse::default(), true).unwrap();
        assert_eq!(same.action, Action::Use { note: None });
        let other = plan(&dir, "--out", mark(&["a", "c"]), Reuse::default(), true).unwrap();
        assert!(matches!(other.action, Action::Use { note: Some(_) }));
        let demo = RunMark::new("demo", "d", "a demo");
        refused(plan(&dir, "--out", demo, Reuse::default(), true));
        let _ = fs::remove_dir_all(&dir);
    }

    /// A run that did not start leaves no folder it made, and never removes one it did not
    /// make.
    #[test]
    fn an_abandoned_run_leaves_no_folder() {
        let dir = temp("abandon");
        let nested = dir.join("a").join("b");
        let taken = plan(&nested, "--out", sim("a"), Reuse::default(), false)
            .unwrap()
            .take()
            .unwrap();
        assert!(nested.join(MARK).is_file());
        taken.abandon();
        assert!(!dir.exists(), "nor the parents it made");
        fs::create_dir_all(&dir).unwrap();
        let taken = plan(&dir, "--out", sim("a"), Reuse::default(), false)
            .unwrap()
            .take()
            .unwrap();
        taken.abandon();
        assert!(dir.is_dir(), "a folder that was there stays");
        let _ = fs::remove_dir_all(&dir);
    }
}
