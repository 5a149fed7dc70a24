//! `salsify eval`'s live cells: one cell of a `live = true` group run in real time through
//! the link relay, our scheme as `salsify demo --barcoded` runs it or Chromium as `salsify
//! peer chromium` does (the same library code, not a child process), scored black-box by
//! barcodes and saved in a simulated run's shape (frames.csv, summary.json, timeseries.csv,
//! run.json with the load average before and after; with the experiment's `audio`, our
//! scheme's call carries it and the run has audio.csv and the audio figures, Chromium's runs
//! video only). The cell's call is built as typed
//! configuration from its experiment ([`LiveCall`], [`ChromiumCall`]), as the commands' flags
//! are converted into the same types.

use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;

use anyhow::{anyhow, bail, Context, Result};
use salsify_audio::PlayerConfig;
use salsify_eval::campaign::live::{
    encoder_in_stats, events_from, live_encryption, parse_link_log, parse_load_average, LiveFacts,
    LiveSystem,
};
use salsify_eval::campaign::{LiveRun, PlannedRun, RunMeta, Store};
use salsify_eval::experiment::{Clip, Experiment, LIVE_EXCERPT_FRAMES};
use salsify_peer::Analysis;
use salsify_runtime::{
    AudioSendConfig, CallAudio, CameraConfig, LinkPath, LiveAudioInput, LiveCall, PathStart,
    ReceiverSide, SchemeChoice, SenderSide,
};
use salsify_time::{Duration, Instant};

use crate::chromium_call::{call_and_score, ChromiumCall};
use crate::flags::link_path;
use crate::input::Size;

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
    let (analysis, system_name, encoder, audio) = match system {
        LiveSystem::Chromium(codec) => {
            let call = ChromiumCall {
                barcoded: true,
                duration: seconds(e.duration_s)?,
                codec: codec
                    .mime_type()
                    .trim_start_matches("video/")
                    .to_lowercase(),
                scalability_mode: codec.scalability_mode().map(str::to_string),
                ..ChromiumCall::new(source.display().to_string(), work.clone(), live_path(e)?)
            };
            let (call, analysis) = call_and_score(&call)?;
            let stats = std::fs::read_to_string(work.join("stats.jsonl")).unwrap_or_default();
            // Chromium's cells run video only, whatever the experiment's `audio` says.
            (analysis, call.browser, encoder_in_stats(&stats), None)
        }
        LiveSystem::Scheme(name) => {
            let call = live_call(e, &name, &source, &work)?;
            let outcome = crate::call::run(&call, None)?;
            let analysis = outcome
                .analysis
                .context("the demo was not scored black-box")?;
            let audio = outcome.audio.map(|summary| CellAudio {
                summary,
                played: outcome.played,
            });
            (analysis, name, None, audio)
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
        audio.as_ref(),
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

/// A live cell's audio: the receiver's figures and every frame it played (host times).
struct CellAudio {
    summary: salsify_audio::AudioSummary,
    played: Vec<salsify_audio::PlayedFrame>,
}

/// The cell's summary: the black-box one, with the audio's figures where the call carried
/// audio, its A/V skew measured against the pictures the barcodes scored (as the report's
/// figure draws it from `audio.csv` and `frames.csv`).
fn cell_summary(analysis: &Analysis, audio: Option<&CellAudio>) -> salsify_eval::metrics::Summary {
    let mut summary = analysis.summary.clone();
    if let Some(a) = audio {
        let host = |t: Instant| analysis.origin + (t - Instant::ZERO);
        let shown: Vec<(Instant, Instant)> = analysis
            .records
            .iter()
            .filter_map(|r| Some((host(r.capture), host(r.display?))))
            .collect();
        let frame = salsify_audio::OpusConfig::default().frame.duration();
        let scored = crate::flags::audio::with_skew(a.summary, &a.played, &shown, frame);
        summary.audio = Some(crate::flags::audio::figures(&scored));
    }
    summary
}

/// Saves the scored cell: records, the relay's link events and the audio played rebased
/// onto the first scored capture, the call's own files (large pictures left out) as `live/`.
fn save(
    store: &Store,
    run: &PlannedRun,
    work: &Path,
    analysis: &Analysis,
    audio: Option<&CellAudio>,
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
    let summary = cell_summary(analysis, audio);
    let live = LiveRun {
        records,
        events: &events,
        summary: &summary,
        meta: &meta,
        audio: audio.map(|a| (a.played.as_slice(), analysis.origin)),
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

/// The relay's path for the experiment's link, starting with the call.
fn live_path(e: &Experiment) -> Result<LinkPath> {
    if e.link.uplink {
        bail!("the live relay runs video over a trace's downlink only (trace-up links)");
    }
    link_path(e.seed, &e.link, PathStart::Call).map_err(|err| anyhow!("{err}"))
}

/// The experiment's duration as a call's.
fn seconds(s: f64) -> Result<Duration> {
    crate::runtime::parse_seconds(&s.to_string()).map_err(|m| anyhow!("duration_s: {m}"))
}

/// The call `salsify demo --barcoded` would make of the cell: the scheme with the
/// experiment's tables, the barcoded source looped, SSIM not scored (the barcodes score it),
/// quiet, encrypted exactly when the simulated twin charges the encrypted datagram's bytes.
fn live_call(e: &Experiment, scheme: &str, source: &Path, work: &Path) -> Result<LiveCall> {
    // As in the simulator, a file plays at its own size and rate; these shape the synthetic
    // source only.
    let (size, fps) = match e.video == "synthetic" {
        true => {
            let size: Size = e.size.parse().map_err(anyhow::Error::msg).context("size")?;
            ((size.width, size.height), f64::from(e.fps))
        }
        false => ((640, 360), 30.0),
    };
    let sender = SenderSide {
        reset_after: None,
        cpu_used: e.cpu_used,
        ..SenderSide::new(SchemeChoice::new(scheme, e.scheme_params()))
    };
    SenderSide::check_cpu_used(sender.cpu_used)?;
    Ok(LiveCall {
        sender,
        camera: CameraConfig {
            input: source.display().to_string(),
            size,
            fps,
            looped: true,
        },
        path: live_path(e)?,
        receiver: ReceiverSide {
            y4m: false,
            display: false,
            ssim: false,
        },
        duration: seconds(e.duration_s)?,
        out: work.to_path_buf(),
        encrypted: live_encryption(e.link.datagram_overhead_bytes).map_err(|m| anyhow!(m))?,
        barcoded: true,
        quiet: true,
        dashboard: None,
        audio: cell_audio(e, work)?,
    })
}

/// The call's audio as the experiment says (`audio`, `sync`), as its simulated twin carries
/// it; what the receiver played is written to `audio.wav` in the cell's folder.
fn cell_audio(e: &Experiment, work: &Path) -> Result<Option<CallAudio>> {
    let Some(input) = LiveAudioInput::parse("audio", &e.audio)? else {
        return Ok(None);
    };
    let mut player = PlayerConfig::default();
    player.sync.mode = e.sync.parse().map_err(|m: String| anyhow!("sync: {m}"))?;
    Ok(Some(CallAudio {
        send: AudioSendConfig::new(input),
        player,
        wav: Some(work.join("audio.wav")),
        // A cell is measured, not listened to.
        play: false,
    }))
}

/// The experiment's video, barcoded (its first [`LIVE_EXCERPT_FRAMES`] pictures, as its
/// simulated twin plays them: [`Clip::LiveExcerpt`]), made once per evaluation folder and
/// shared by every live cell that plays it. As in the simulator, a file plays at its own size
/// and rate and the experiment's `size` and `fps` are the synthetic source's.
fn barcoded_source(store: &Store, e: &Experiment) -> Result<PathBuf> {
    if e.clip != Clip::LiveExcerpt {
        bail!("a live cell plays its video's barcoded excerpt: its experiment needs clip = \"live-excerpt\"");
    }
    let size = crate::clips::live_excerpt_size(e)?;
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
        crate::stamp::stamp_video(
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
        let call = live_call(&e, "conventional", source, work).unwrap();
        assert!(!call.encrypted);
        e.link.datagram_overhead_bytes = ENCRYPTED_OVERHEAD_BYTES;
        let call = live_call(&e, "conventional", source, work).unwrap();
        assert!(call.encrypted);
        e.link.datagram_overhead_bytes = 10;
        assert!(live_call(&e, "conventional", source, work).is_err());
    }

    /// A live cell carries the audio its experiment names, lip-synced as it says, and none
    /// when it names none (an experiment without audio runs the call it always did).
    #[test]
    fn a_live_cell_carries_its_experiments_audio() {
        let (source, work) = (Path::new("source.y4m"), Path::new("work"));
        let mut e = Experiment::default();
        assert!(live_call(&e, "salsify-2c", source, work)
            .unwrap()
            .audio
            .is_none());
        e.audio = "synthetic".into();
        e.sync = "none".into();
        let audio = live_call(&e, "salsify-2c", source, work)
            .unwrap()
            .audio
            .unwrap();
        assert_eq!(audio.send.input, LiveAudioInput::Synthetic);
        assert_eq!(audio.player.sync.mode, salsify_audio::SyncMode::None);
        assert_eq!(audio.wav, Some(work.join("audio.wav")));
        e.sync = "sometimes".into();
        assert!(live_call(&e, "salsify-2c", source, work).is_err());
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
