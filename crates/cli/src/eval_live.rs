//! `salsify eval`'s live cells: one cell of a `live = true` group run in real time through
//! the link relay, our scheme as `salsify demo --barcoded` runs it or Chromium as `salsify
//! peer chromium` does (the same library code, not a child process), scored black-box by
//! barcodes and saved in a simulated run's shape (frames.csv, summary.json, timeseries.csv,
//! run.json with the load average before and after).

use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use salsify_eval::campaign::live::{
    encoder_in_stats, events_from, live_encryption, parse_link_log, parse_load_average, LiveFacts,
    LiveSystem,
};
use salsify_eval::campaign::{LiveRun, PlannedRun, RunMeta, Store};
use salsify_eval::experiment::{Clip, Experiment, LIVE_EXCERPT_FRAMES};
use salsify_peer::Analysis;

use crate::demo::DemoArgs;
use crate::peer_cmd::ChromiumArgs;

/// Runs one live cell and saves it into `store`.
pub fn run_live(store: &Store, run: &PlannedRun) -> Result<()> {
    let e = &run.experiment;
    let system = LiveSystem::parse(&e.scheme).map_err(|m| anyhow!(m))?;
    let work = store.live_work_dir(&run.id);
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .with_context(|| format!("cannot clear '{}'", work.display()))?;
    }
    std::fs::create_dir_all(&work)
        .with_context(|| format!("cannot create '{}'", work.display()))?;
    let source = barcoded_source(store, e)?;
    let load_before = load_average()?;
    let started = WallInstant::now();
    let (analysis, system_name, encoder) = match system {
        LiveSystem::Chromium(codec) => {
            let mut flags = vec![
                "--codec".to_string(),
                codec
                    .mime_type()
                    .trim_start_matches("video/")
                    .to_lowercase(),
            ];
            if let Some(mode) = codec.scalability_mode() {
                flags.extend(["--scalability-mode".to_string(), mode.to_string()]);
            }
            let args: ChromiumArgs = parse_flags(&chromium_flags(e, &source, &work, flags)?)?;
            let (call, analysis) = crate::peer_cmd::call_and_score(&args)?;
            let stats = std::fs::read_to_string(work.join("stats.jsonl")).unwrap_or_default();
            (analysis, call.browser, encoder_in_stats(&stats))
        }
        LiveSystem::Scheme(name) => {
            let args: DemoArgs = parse_flags(&scheme_flags(e, &name, &source, &work)?)?;
            let analysis =
                crate::demo::run_scored(&args)?.context("the demo was not scored black-box")?;
            (analysis, name, None)
        }
    };
    if crate::runtime::interrupted() {
        bail!("interrupted: the live cell {} is not saved", run.id);
    }
    let wall_s = started.elapsed().as_secs_f64();
    let load_after = load_average()?;
    let relay = std::fs::read_to_string(work.join("relay.csv"))
        .ok()
        .and_then(|t| relay_video_row(&t));
    save(
        store,
        run,
        &work,
        &analysis,
        LiveFacts {
            load_before,
            load_after,
            pictures_matched: (analysis.counts.shown_matched, analysis.counts.shown),
            presentations_missed: analysis.counts.presentations_missed,
            system: system_name,
            encoder,
            relay_late_p99_us: relay.map(|r| r.0),
            relay_realtime: relay.map(|r| r.1),
        },
        wall_s,
    )
}

/// The video row of the relay's `relay.csv`: its 99th-percentile lateness (µs) and whether
/// it ran under real-time scheduling.
fn relay_video_row(csv: &str) -> Option<(u64, bool)> {
    let header: Vec<&str> = csv.lines().next()?.split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name);
    let (p99, realtime) = (column("late_p99_us")?, column("realtime")?);
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("video,"))?
        .split(',')
        .collect();
    Some((row.get(p99)?.parse().ok()?, row.get(realtime)? == &"1"))
}

/// Saves the scored cell: records and the relay's link events rebased onto the first
/// scored capture, the call's own files (large pictures left out) as `live/`.
fn save(
    store: &Store,
    run: &PlannedRun,
    work: &Path,
    analysis: &Analysis,
    facts: LiveFacts,
    wall_s: f64,
) -> Result<()> {
    let log = work.join("video.log");
    let events = match std::fs::read_to_string(&log) {
        Ok(text) => parse_link_log(&text).map_err(|m| anyhow!("{}: {m}", log.display()))?,
        // No emulated link (`none`), no log.
        Err(_) => Vec::new(),
    };
    // The analysis counts its records from the first scored camera picture, and names the
    // host time that was; the link log is in host times.
    let events = events_from(&events, analysis.origin);
    let records = &analysis.records;
    remove_pictures(work)?;
    let meta = RunMeta {
        id: run.id.clone(),
        link: run.link.clone(),
        wall_s,
        sender_states_max: 0,
        receiver_states_max: 0,
        sizes_shown: Vec::new(),
        live: Some(facts),
        code: salsify_eval::CODE.to_string(),
        video: String::new(),
    };
    let live = LiveRun {
        records,
        events: &events,
        summary: &analysis.summary,
        meta: &meta,
    };
    store
        .save_live(run, live, work)
        .with_context(|| format!("cannot save live run {}", run.id))
}

/// Deletes the recorded pictures (`*.y4m`, `received.ivf`) of a scored cell: at 1280x720 a
/// minute of them is gigabytes, and the scores are already taken.
fn remove_pictures(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("'{}'", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            remove_pictures(&path)?;
        } else if path.extension().is_some_and(|x| x == "y4m" || x == "ivf") {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove '{}'", path.display()))?;
        }
    }
    Ok(())
}

/// Flags of the link relay for the experiment's link, as `salsify link` takes them.
fn link_flags(e: &Experiment) -> Result<Vec<String>> {
    let l = &e.link;
    if l.uplink {
        bail!("the live relay runs video over a trace's downlink only (trace-up links)");
    }
    let mut flags = match &l.trace {
        Some(trace) => vec!["--trace".to_string(), trace.display().to_string()],
        None => vec!["--link".to_string(), l.preset.clone()],
    };
    for (flag, value) in [
        ("--queue", l.queue_packets.to_string()),
        ("--delay-ms", l.delay_ms.to_string()),
        ("--loss", l.loss.to_string()),
        ("--dropout-at", l.dropout_at_s.to_string()),
        ("--seed", e.seed.to_string()),
    ] {
        flags.extend([flag.to_string(), value]);
    }
    Ok(flags)
}

/// `salsify peer chromium`'s flags for the cell.
fn chromium_flags(
    e: &Experiment,
    source: &Path,
    work: &Path,
    codec: Vec<String>,
) -> Result<Vec<String>> {
    let mut flags = vec![
        "--input".to_string(),
        source.display().to_string(),
        "--barcoded".to_string(),
        "--duration".to_string(),
        e.duration_s.to_string(),
        "--out".to_string(),
        work.display().to_string(),
    ];
    flags.extend(codec);
    flags.extend(link_flags(e)?);
    Ok(flags)
}

/// `salsify demo`'s flags for the cell; the experiment's scheme tables go in a file.
fn scheme_flags(e: &Experiment, scheme: &str, source: &Path, work: &Path) -> Result<Vec<String>> {
    let mut flags = vec![
        "--scheme".to_string(),
        scheme.to_string(),
        "--input".to_string(),
        source.display().to_string(),
        "--loop".to_string(),
        "--barcoded".to_string(),
        "--no-ssim".to_string(),
        "--quiet".to_string(),
        "--cpu-used".to_string(),
        e.cpu_used.to_string(),
        "--duration".to_string(),
        e.duration_s.to_string(),
        "--out".to_string(),
        work.display().to_string(),
    ];
    if e.video == "synthetic" {
        flags.extend(["--size".to_string(), e.size.clone()]);
        flags.extend(["--fps".to_string(), e.fps.to_string()]);
    }
    let params = e.scheme_params();
    if params != Default::default() {
        let path = work.join("scheme-params.toml");
        let text = toml::to_string(&params).context("the experiment's scheme tables")?;
        salsify_codec::output::write(&path, text)
            .with_context(|| format!("cannot write '{}'", path.display()))?;
        flags.extend(["--scheme-params".to_string(), path.display().to_string()]);
    }
    // Encrypted exactly when the simulated twin charges the encrypted datagram's bytes.
    if !live_encryption(e.link.datagram_overhead_bytes).map_err(|m| anyhow!(m))? {
        flags.push("--plaintext".to_string());
    }
    flags.extend(link_flags(e)?);
    Ok(flags)
}

/// Parses flags into a command's arguments, as its command line would.
fn parse_flags<T: clap::Args>(flags: &[String]) -> Result<T> {
    #[derive(Parser)]
    struct Wrapper<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    let argv = std::iter::once("salsify".to_string()).chain(flags.iter().cloned());
    Wrapper::<T>::try_parse_from(argv)
        .map(|w| w.args)
        .map_err(|e| anyhow!("live cell flags {flags:?}: {e}"))
}

/// The experiment's video, barcoded (its first [`LIVE_EXCERPT_FRAMES`] pictures, as its
/// simulated twin plays them: [`Clip::LiveExcerpt`]), made once per evaluation folder and
/// shared by every live cell that plays it. As in the simulator, a file plays at its own size
/// and rate and the experiment's `size` and `fps` are the synthetic source's.
fn barcoded_source(store: &Store, e: &Experiment) -> Result<PathBuf> {
    if e.clip != Clip::LiveExcerpt {
        bail!("a live cell plays its video's barcoded excerpt: its experiment needs clip = \"live-excerpt\"");
    }
    let size = crate::sim_cmd::live_excerpt_size(e)?;
    let stem = Path::new(&e.video)
        .file_stem()
        .map_or("video".into(), |s| s.to_string_lossy().into_owned());
    let clean: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = match size {
        Some(size) => format!("{clean}_{size}_{}fps", e.fps),
        None => clean,
    };
    let dir = store.root().join("live-sources");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let path = dir.join(format!("{name}.y4m"));
    if !path.is_file() {
        let partial = dir.join(format!(".{name}.partial.y4m"));
        crate::barcode_cmd::stamp_video(
            &e.video,
            size,
            e.fps,
            Some(LIVE_EXCERPT_FRAMES),
            0,
            &partial,
            false,
        )?;
        std::fs::rename(&partial, &path)
            .with_context(|| format!("cannot rename to '{}'", path.display()))?;
    }
    Ok(path)
}

/// The 1-minute load average.
fn load_average() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").context("cannot read /proc/loadavg")?;
    parse_load_average(&text).map_err(|m| anyhow!("/proc/loadavg: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_eval::campaign::live::ENCRYPTED_OVERHEAD_BYTES;

    /// A live cell of ours runs in plaintext when its simulated twin charges no datagram
    /// overhead (the default) and encrypted when it charges exactly what encryption adds.
    #[test]
    fn a_live_cell_encrypts_exactly_when_its_simulation_charges_for_it() {
        assert_eq!(ENCRYPTED_OVERHEAD_BYTES as usize, salsify_secure::OVERHEAD);
        let (source, work) = (Path::new("source.y4m"), Path::new("work"));
        let mut e = Experiment::default();
        let flags = scheme_flags(&e, "conventional", source, work).unwrap();
        assert!(flags.iter().any(|f| f == "--plaintext"), "{flags:?}");
        e.link.datagram_overhead_bytes = ENCRYPTED_OVERHEAD_BYTES;
        let flags = scheme_flags(&e, "conventional", source, work).unwrap();
        assert!(!flags.iter().any(|f| f == "--plaintext"), "{flags:?}");
        e.link.datagram_overhead_bytes = 10;
        assert!(scheme_flags(&e, "conventional", source, work).is_err());
    }

    /// The relay's report is read by column name, from the relay's own writer.
    #[test]
    fn the_relay_report_gives_the_video_lateness_and_scheduling() {
        let mut totals = salsify_runtime::RelayTotals::default();
        totals.ack.lateness.p99 = salsify_time::Duration::from_micros(7);
        let mut lateness = salsify_runtime::lateness::Lateness::default();
        lateness.record(salsify_time::Duration::from_micros(1234));
        totals.video.lateness = lateness.summary();
        totals.realtime = true;
        assert_eq!(relay_video_row(&totals.to_csv()), Some((1234, true)));
        totals.realtime = false;
        assert_eq!(relay_video_row(&totals.to_csv()), Some((1234, false)));
        assert_eq!(relay_video_row("direction\nvideo\n"), None);
        assert_eq!(relay_video_row(""), None);
    }
}
