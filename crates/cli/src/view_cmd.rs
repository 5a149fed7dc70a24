//! `salsify view DIR`: a finished run's folder on the dashboard's page, read from its files
//! into the same series a live call shows, with the page's time cursor to move through it.
//!
//! Reads what is there: `frames.csv` (the simulator's, an evaluation run's and a Chromium
//! peer run's, one line per camera picture in ms; or the demo's, in µs from its start),
//! `sender.csv` and `rates.csv` (live senders; the simulator writes `rates.csv` too), the
//! link's `mm-link` log (`packets.log` from `salsify sim`, `video.log` from the relay),
//! `audio.csv` (the audio frames played, on `frames.csv`'s clock) and `summary.json`.
//!
//! Clocks: a simulated run counts from zero in every file; a live run's logs are on the
//! machine's monotonic clock, and the demo's `frames.csv` counts from the demo's start, so
//! the demo's files are lined up by the capture time `sender.csv` gives its pictures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use salsify_dashboard::{Agg, Board, Listen, Sample};
use salsify_time::Duration;
use serde_json::{json, Map, Value};

use crate::dashboard::{audio_values, parse_listen};
use crate::out_dir;
use crate::runtime;

/// Flags of `salsify view`.
#[derive(Args, Debug, Clone)]
pub struct ViewArgs {
    /// A run's folder: from `salsify demo` (--out), `salsify sim` (--out), a run of
    /// `salsify eval` (OUT/runs/ID) or a Chromium peer run.
    pub dir: PathBuf,
    /// Where to serve the page: 127.0.0.1 and a free port by default; any other address is
    /// served behind a random token, printed in the URL.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Stop serving after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
}

/// Runs `salsify view`.
pub fn run(args: &ViewArgs) -> Result<()> {
    let run = read_run(&args.dir)?;
    let listen = Listen::new(parse_listen(&args.listen)?);
    let (server, _shared) = salsify_dashboard::serve_recorded(&listen, run.meta, &run.samples)?;
    eprintln!(
        "salsify view: {} ({} s, {} samples) at {}",
        args.dir.display(),
        run.samples.last().map_or(0.0, |s| s.t.as_secs_f64()),
        run.samples.len(),
        server.url()
    );
    for note in &run.notes {
        eprintln!("salsify view: {note}");
    }
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(())
}

/// A run folder read into the page's samples.
pub struct RecordedRun {
    /// Title, summary, what is missing.
    pub meta: Value,
    /// The series, bin by bin.
    pub samples: Vec<Sample>,
    /// What could not be read, to say.
    pub notes: Vec<String>,
}

/// One value on the run's time axis (µs from its start).
type Point = (i64, &'static str, Agg, f64);

/// Reads the run in `dir`.
pub fn read_run(dir: &Path) -> Result<RecordedRun> {
    let frames = dir.join("frames.csv");
    if !frames.is_file() {
        bail!(
            "'{}' has no frames.csv: give a run's folder (salsify demo/sim --out, OUT/runs/ID of salsify eval, a peer run)",
            dir.display()
        );
    }
    let frames = Csv::read(&frames)?;
    let sender = Csv::read_if(&dir.join("sender.csv"))?;
    let mut notes = Vec::new();
    let mut points = Vec::new();
    // `shift`: subtracted from the logs' µs to put them on the run's axis; `frames_shift`:
    // from frames.csv's (and audio.csv's) µs.
    let mut frames_shift = 0;
    let shift = if frames.has("capture_us") {
        points.extend(demo_frames(&frames));
        let shift = sender.as_ref().and_then(|s| demo_shift(&frames, s));
        if shift.is_none() {
            notes.push("no sender.csv to line the logs up with frames.csv: frames only".into());
        }
        shift
    } else {
        let first = frames
            .column_f64("capture_ms")
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min);
        let shift = if first.is_finite() {
            (first * 1e3) as i64
        } else {
            0
        };
        points.extend(sim_frames(&frames, shift, sender.is_none()));
        frames_shift = shift;
        Some(shift)
    };
    points.extend(audio_points(&dir.join("audio.csv"), frames_shift)?);
    if let Some(shift) = shift {
        if let Some(s) = &sender {
            points.extend(sender_points(s, shift));
        }
        if let Some(r) = Csv::read_if(&dir.join("rates.csv"))? {
            points.extend(rate_points(&r, shift));
        }
        match ["packets.log", "video.log"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
        {
            Some(log) => points.extend(link_points(&log, shift)?),
            None => notes.push("no link log (packets.log or video.log): no link charts".into()),
        }
    }
    points.sort_by_key(|p| p.0);
    let last = points.last().map_or(0, |p| p.0.max(0) as u64);
    // The run's length where it says (its mark, a simulation's experiment), else its last
    // event: the last point is the run's end, not the end of a bin past it.
    let end = run_seconds(dir)
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_micros(last), Duration::from_secs_f64);
    let mut board = Board::new(salsify_dashboard::live::BIN);
    board.set_end(end);
    for (at, name, agg, value) in points {
        board.add(Duration::from_micros(at.max(0) as u64), name, agg, value);
    }
    let samples = board.finish(end);
    if let Some(mixed) = mixed_runs(dir) {
        notes.push(mixed);
    }
    let summary = read_summary(&dir.join("summary.json"))?;
    let mark = out_dir::read_mark(dir);
    let about = mark
        .as_ref()
        .and_then(|m| m.get("about"))
        .and_then(Value::as_str)
        .map_or(String::new(), |a| format!(": {a}"));
    let meta = json!({
        "mode": "replay",
        "title": format!("{} (recorded){about}", dir.display()),
        "summary": summary,
        "picture_note": picture_note(dir),
        "notes": notes,
    });
    Ok(RecordedRun {
        meta,
        samples,
        notes,
    })
}

/// The run's length in seconds: what its folder's mark recorded, or a simulation's
/// `duration_s` from its `experiment.toml`.
fn run_seconds(dir: &Path) -> Option<f64> {
    if let Some(s) = out_dir::recorded_seconds(dir) {
        return Some(s);
    }
    let text = std::fs::read_to_string(dir.join("experiment.toml")).ok()?;
    let value: toml::Value = toml::from_str(&text).ok()?;
    value.get("duration_s")?.as_float()
}

/// What the page says instead of a picture: the video file the run wrote, if it wrote one.
fn picture_note(dir: &Path) -> String {
    let video = ["received.ivf", "received.y4m", "live/received.ivf"]
        .into_iter()
        .find(|f| dir.join(f).is_file());
    match video {
        Some(f) => format!(
            "a recorded run keeps no pictures for the page (play {})",
            dir.join(f).display()
        ),
        None => "this run wrote no video: no pictures to show".to_string(),
    }
}

/// A folder from before runs marked their folders, holding the files of a simulation and
/// of a live call at once: said, since the charts then mix the two.
fn mixed_runs(dir: &Path) -> Option<String> {
    if out_dir::read_mark(dir).is_some() {
        return None;
    }
    let sim = dir.join("packets.log").is_file();
    let live = ["received.ivf", "sender.csv", "video.log"]
        .iter()
        .any(|f| dir.join(f).is_file());
    (sim && live).then(|| {
        "this folder holds a simulation's files (packets.log) and a live call's (received.ivf, sender.csv, video.log): two runs mixed".to_string()
    })
}

/// The top-level numbers of `summary.json`, if there is one.
fn read_summary(path: &Path) -> Result<Value> {
    if !path.is_file() {
        return Ok(Value::Null);
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("'{}' is not JSON", path.display()))?;
    let numbers: Map<String, Value> = v
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, x)| x.is_number())
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect();
    Ok(Value::Object(numbers))
}

/// A CSV file with a header line, as text cells.
struct Csv {
    columns: HashMap<String, usize>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(path: &Path) -> Result<Csv> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read '{}'", path.display()))?;
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default();
        let columns = header
            .split(',')
            .enumerate()
            .map(|(i, c)| (c.trim().to_string(), i))
            .collect();
        let rows = lines
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        Ok(Csv { columns, rows })
    }

    fn read_if(path: &Path) -> Result<Option<Csv>> {
        path.is_file().then(|| Csv::read(path)).transpose()
    }

    fn has(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }

    /// The cell of `row` in `column` (empty when missing).
    fn cell<'a>(&self, row: &'a [String], column: &str) -> &'a str {
        self.columns
            .get(column)
            .and_then(|&i| row.get(i))
            .map_or("", |s| s.trim())
    }

    fn f64(&self, row: &[String], column: &str) -> Option<f64> {
        self.cell(row, column).parse().ok()
    }

    fn column_f64(&self, column: &str) -> Vec<Option<f64>> {
        self.rows.iter().map(|r| self.f64(r, column)).collect()
    }
}

/// A shown frame: shown count, delay and SSIM (dB) at its display time.
fn shown_points(at: i64, delay_ms: Option<f64>, ssim_db: Option<f64>) -> Vec<Point> {
    let mut p = vec![(at, "recv.shown", Agg::Rate, 1.0)];
    if let Some(d) = delay_ms {
        p.push((at, "recv.delay_ms", Agg::Mean, d));
        p.push((at, "recv.delay_max_ms", Agg::Max, d));
    }
    if let Some(s) = ssim_db {
        p.push((at, "recv.ssim_db", Agg::Mean, s));
    }
    p
}

/// A frame sent at `at`: its size, quantizer and option.
fn sent_points(at: i64, bytes: f64, quality: Option<f64>, choice: &'static str) -> Vec<Point> {
    let kb = bytes / 1e3;
    let mut p = vec![
        (at, "send.sent_kbps", Agg::Rate, kb * 8.0),
        (at, "send.frames", Agg::Rate, 1.0),
        (at, "send.frame_kB", Agg::Mean, kb),
        (at, "send.frame_max_kB", Agg::Max, kb),
        (at, choice, Agg::Rate, 1.0),
    ];
    if let Some(q) = quality {
        p.push((at, "send.quantizer", Agg::Mean, q));
    }
    p
}

/// The demo's `frames.csv`: `picture,capture_us,display_us,delay_us,ssim`, µs from its start.
fn demo_frames(f: &Csv) -> Vec<Point> {
    let mut points = Vec::new();
    for row in &f.rows {
        let Some(shown) = f.f64(row, "display_us") else {
            continue;
        };
        let delay = f.f64(row, "delay_us").map(|d| d / 1e3);
        let ssim = f.f64(row, "ssim").map(salsify_eval::metrics::ssim_to_db);
        points.extend(shown_points(shown as i64, delay, ssim));
    }
    points
}

/// The µs to subtract from a demo's logs: a picture's capture time in `sender.csv` (the
/// monotonic clock) less its capture time in `frames.csv` (from the demo's start).
fn demo_shift(frames: &Csv, sender: &Csv) -> Option<i64> {
    let row = sender
        .rows
        .iter()
        .find(|r| sender.f64(r, "captured_us").is_some())?;
    let picture = sender.cell(row, "picture");
    let absolute = sender.f64(row, "captured_us")?;
    let line = frames
        .rows
        .iter()
        .find(|r| frames.cell(r, "picture") == picture)?;
    Some((absolute - frames.f64(line, "capture_us")?) as i64)
}

/// The simulator's `frames.csv` (also an evaluation's and a peer's): one line per camera
/// picture in ms. Its sender side (`with_sender`: no `sender.csv` says more) at capture.
fn sim_frames(f: &Csv, shift: i64, with_sender: bool) -> Vec<Point> {
    let us = |ms: f64| (ms * 1e3) as i64 - shift;
    let mut points = Vec::new();
    for row in &f.rows {
        if let Some(shown) = f.f64(row, "display_ms") {
            let ssim = f.f64(row, "ssim_db");
            points.extend(shown_points(us(shown), f.f64(row, "delay_ms"), ssim));
        }
        let (Some(captured), true) = (f.f64(row, "capture_ms"), with_sender) else {
            continue;
        };
        let at = us(captured);
        let bytes = f.f64(row, "bytes").unwrap_or(0.0);
        let choice = match f.cell(row, "choice") {
            "Better" => "send.better",
            "Worse" => "send.worse",
            "Single" => "send.only",
            "Skipped" => {
                points.push((at, "send.skipped", Agg::Rate, 1.0));
                continue;
            }
            _ => continue,
        };
        points.extend(sent_points(at, bytes, f.f64(row, "quality"), choice));
    }
    points
}

/// A live sender's `sender.csv`: frames sent, pictures skipped or dropped, at their send time.
fn sender_points(s: &Csv, shift: i64) -> Vec<Point> {
    let mut points = Vec::new();
    for row in &s.rows {
        let Some(at) = s.f64(row, "sent_us").map(|t| t as i64 - shift) else {
            continue;
        };
        let choice = match s.cell(row, "choice") {
            "better" => "send.better",
            "worse" => "send.worse",
            "forcedworse" => "send.forced",
            "only" => "send.only",
            "skipped" => {
                points.push((at, "send.skipped", Agg::Rate, 1.0));
                continue;
            }
            c if c.starts_with("dropped") => {
                points.push((at, "send.dropped", Agg::Rate, 1.0));
                continue;
            }
            _ => continue,
        };
        let bytes = s.f64(row, "bytes").unwrap_or(0.0);
        points.extend(sent_points(at, bytes, s.f64(row, "quality"), choice));
        if let Some(b) = s.f64(row, "budget") {
            points.push((at, "send.budget_kB", Agg::Mean, b / 1e3));
        }
    }
    points
}

/// `rates.csv`: the encoder's target and the pacing rate, at each change.
fn rate_points(r: &Csv, shift: i64) -> Vec<Point> {
    let mut points = Vec::new();
    for row in &r.rows {
        let Some(at) = r.f64(row, "at_us").map(|t| t as i64 - shift) else {
            continue;
        };
        if let Some(bps) = r.f64(row, "encoder_bps") {
            points.push((at, "send.target_kbps", Agg::Last, bps / 1e3));
        }
        if let Some(bps) = r.f64(row, "pacing_bps") {
            points.push((at, "scheme.pacing_kbps", Agg::Last, bps / 1e3));
        }
    }
    points
}

/// `audio.csv`, if the run has one: each frame played, as the live page shows it.
fn audio_points(path: &Path, shift: i64) -> Result<Vec<Point>> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let played = salsify_audio::read_played_csv(&text)
        .with_context(|| format!("reading '{}'", path.display()))?;
    Ok(played
        .iter()
        .flat_map(|p| {
            let at = p.at.as_micros() as i64 - shift;
            audio_values(p)
                .into_iter()
                .map(move |(name, agg, value)| (at, name, agg, value))
        })
        .collect())
}

/// An `mm-link` log: capacity (`#`), delivered (`-`), drops (`d`) and the queue they leave.
fn link_points(path: &Path, shift: i64) -> Result<Vec<Point>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let mut points = Vec::new();
    let mut queued = 0.0_f64;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(t), Some(kind)) = (f.first().and_then(|t| t.parse::<f64>().ok()), f.get(1))
        else {
            continue;
        };
        let at = (t * 1e3) as i64 - shift;
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        match *kind {
            "#" => points.push((at, "link.capacity_kbps", Agg::Rate, num(2) * 8.0 / 1e3)),
            "+" => queued += num(2),
            "-" => {
                queued -= num(2);
                points.push((at, "link.delivered_kbps", Agg::Rate, num(2) * 8.0 / 1e3));
            }
            // Mostly a packet refused by a full queue (it had its `+` line); one lost on exit
            // had its `-` line too, and the clamp below keeps that from going negative.
            "d" => {
                queued -= num(3);
                points.push((at, "link.drops", Agg::Rate, num(2)));
            }
            _ => continue,
        }
        points.push((at, "link.queue_kB", Agg::Max, queued.max(0.0) / 1e3));
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_audio::{write_played_csv, PlayedFrame, PlayedKind};
    use salsify_eval::metrics::FrameRecord;
    use salsify_time::Instant;

    /// A simulated run's folder: 2 s of pictures, and with `audio` a frame played every
    /// 20 ms, 100 ms after its capture, one of them missing.
    fn run_folder(name: &str, audio: bool) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("salsify-view-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let records: Vec<FrameRecord> = (0..60)
            .map(|i| {
                let mut r = FrameRecord::captured(i, Instant::from_millis(i * 33));
                r.display = Some(Instant::from_millis(i * 33 + 80));
                r
            })
            .collect();
        let mut frames = Vec::new();
        salsify_eval::sim::write_frames_csv(&records, &mut frames).unwrap();
        std::fs::write(dir.join("frames.csv"), frames).unwrap();
        if audio {
            let played: Vec<PlayedFrame> = (0..100)
                .map(|i| PlayedFrame {
                    at: Instant::from_millis(100 + 20 * i),
                    frame: Some(i),
                    captured: Instant::from_millis(20 * i),
                    kind: match i {
                        50 => PlayedKind::Missing,
                        _ => PlayedKind::Packet,
                    },
                })
                .collect();
            let mut csv = Vec::new();
            write_played_csv(&played, Instant::ZERO, &mut csv).unwrap();
            std::fs::write(dir.join("audio.csv"), csv).unwrap();
        }
        dir
    }

    /// The replay serves the audio series the live page draws, from audio.csv: the delay of
    /// every frame played and the one missing; a run without audio.csv has none.
    #[test]
    fn a_replay_serves_the_audio_it_played() {
        let dir = run_folder("audio", true);
        let run = read_run(&dir).unwrap();
        let series = |name: &str| -> Vec<f64> {
            run.samples
                .iter()
                .filter_map(|s| s.values.get(name).copied())
                .collect()
        };
        let delays = series("recv.audio_delay_ms");
        assert!(!delays.is_empty(), "no audio delay in {:?}", run.samples);
        assert!(
            delays.iter().all(|&d| (d - 100.0).abs() < 1e-9),
            "{delays:?}"
        );
        let last = run.samples.last().unwrap();
        assert_eq!(last.totals.get("recv.audio_missing"), Some(&1.0));
        assert_eq!(last.totals.get("recv.audio_stretched"), Some(&0.0));
        std::fs::remove_dir_all(&dir).unwrap();

        let dir = run_folder("silent", false);
        let run = read_run(&dir).unwrap();
        assert!(run
            .samples
            .iter()
            .all(|s| s.values.keys().all(|k| !k.starts_with("recv.audio"))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
