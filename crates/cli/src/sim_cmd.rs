//! `salsify sim`: one simulated run from flags or a TOML experiment file.
//!
//! Writes `frames.csv` (one line per camera picture), `summary.json` (the paper's summary),
//! `rates.csv` (the controller's encoder and pacing rates, as a live sender logs them),
//! `packets.log` (the video link in Mahimahi's mm-link log format) and `experiment.toml`
//! (the experiment as run, flags merged in) to the output folder. A two-way call
//! (`--two-way`) writes side A's video direction's files there and side B's in `b-to-a/`,
//! and one `summary.json` holding both (`a_to_b`, `b_to_a`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use salsify_codec::FunctionalCodec;
use salsify_eval::experiment::{Clip, Experiment};
use salsify_eval::sim::{
    simulate_two_way_until, simulate_until, write_frames_csv, SimError, SimOutput, VideoSource,
    B_TO_A_DIR,
};
use salsify_netem::{LogHeader, MahimahiLog, QueueLimit};
use salsify_runtime::csv_log;
use salsify_time::Instant;

use crate::clips::{frames_needed, live_excerpt, read_clip, synthetic_video};
use crate::input::Size;
use crate::out_dir::{self, Reuse, RunMark};
use crate::usage::Interrupted;

/// Options of `salsify sim`. Flags override the experiment file's values.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// TOML experiment file: scheme, video, size, fps, duration_s, seed, cpu_used and a
    /// `[link]` table (trace, preset, queue_packets, delay_ms, loss, dropout_at_s,
    /// datagram_overhead_bytes), plus the schemes' own tables (`[salsify]`, `[conventional]`, `[sprout]`, ...);
    /// every field is optional and an unknown one is an error naming it. Flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Scheme: any registered scheme but the browser peers (docs/schemes.md lists them:
    /// salsify-2c, salsify-1c, the Salsify ablations, salsify-paper, conventional,
    /// vidaptive, oracle, the sprout schemes, and any family added since; the registry's
    /// default is the default) [default: salsify-2c].
    #[arg(long)]
    scheme: Option<String>,
    /// Video: `synthetic`, or a .y4m or other video file (held in memory, played forwards
    /// then backwards to cover the run) [default: synthetic].
    #[arg(long)]
    video: Option<String>,
    /// Synthetic video size [default: 1280x720].
    #[arg(long)]
    size: Option<Size>,
    /// Synthetic video frame rate [default: 60].
    #[arg(long, value_parser = crate::input::parse_whole_fps)]
    fps: Option<u32>,
    /// Mahimahi trace prefix (video over PREFIX.down, ACKs over PREFIX.up) or one trace file,
    /// e.g. /usr/share/mahimahi/traces/Verizon-LTE-short; or rate:FILE, a throughput log
    /// ("time rate" per interval, seconds and Mb/s unless stated: rate:FILE?unit=kbps&time=ms&interval=1s),
    /// both directions.
    #[arg(long)]
    trace: Option<PathBuf>,
    #[arg(
        long,
        help = format!(
            "Synthetic link when no trace is given: {} [default: cellular]",
            salsify_eval::experiment::link_presets_help()
        )
    )]
    link: Option<String>,
    /// DropTail queue in packets (0 = unlimited) [default: 256].
    #[arg(long)]
    queue: Option<u32>,
    /// One-way propagation delay each way, in milliseconds [default: 20].
    #[arg(long)]
    delay_ms: Option<u64>,
    /// I.i.d. loss probability on the video direction [default: 0].
    #[arg(long)]
    loss: Option<f64>,
    /// Bytes added to every datagram both ways, to model a wrapper the scheme does not see:
    /// 29 for encrypted sessions (`send`/`recv --key`) [default: 0].
    #[arg(long)]
    datagram_overhead: Option<u32>,
    /// The functional codec of a Salsify scheme: vp8 or av1 (`[salsify] codec`; AV1's
    /// quality options are `[salsify.av1]`'s) [default: vp8, or the experiment file's]. The
    /// other schemes run on VP8 only.
    #[arg(long, value_parser = crate::flags::scheme::parse_codec)]
    codec: Option<FunctionalCodec>,
    /// Simulated seconds [default: 30].
    #[arg(long)]
    duration: Option<f64>,
    /// Seed of every random choice [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// The call's audio beside the video: `synthetic` (a voice with a timing mark each
    /// second), a 48 kHz .wav file, or `none`: real Opus packets in the link's queue beside
    /// the video's, the scheme's controller counting them; writes audio.csv and the audio
    /// figures in summary.json [default: none].
    #[arg(long)]
    audio: Option<String>,
    /// Lip sync: `video` (the audio is held back to the delay of the pictures shown) or
    /// `none` (the audio plays at its own least delay) [default: video].
    #[arg(long, value_parser = ["video", "none"])]
    sync: Option<String>,
    /// A two-way call: side A's video over the video link (PREFIX.down), side B's back
    /// over the ACK link (PREFIX.up), each side's ACKs queued behind the other side's
    /// video; writes B's files in `b-to-a/` and both directions in summary.json (`a_to_b`,
    /// `b_to_a`) [default: one-way].
    #[arg(long)]
    two_way: bool,
    /// Output folder. One run's: a folder holding another command's or another
    /// experiment's run is refused (the same experiment is replaced, and so is an earlier sim
    /// in the default folder).
    #[arg(long, default_value = DEFAULT_OUT)]
    out: PathBuf,
    /// Empty the output folder first when it holds another run.
    #[arg(long)]
    force: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Also print the summary as one markdown table row with this label (see --row-header).
    #[arg(long)]
    row: Option<String>,
    /// Print the markdown header for --row lines and exit.
    #[arg(long)]
    row_header: bool,
}

/// The output folder when none is given.
const DEFAULT_OUT: &str = "salsify-sim-out";

/// Columns of `--row`.
const ROW_HEADER: &str = "| run | SSIM dB p25 | SSIM dB mean | delay ms mean | delay ms p95 | frames/s shown | kbit/s | utilisation | better/worse/skip % |\n|---|---|---|---|---|---|---|---|---|";

impl SimArgs {
    /// The experiment: the file's (or the defaults), with flags laid over it.
    fn experiment(&self) -> Result<Experiment> {
        if let Some(name) = &self.scheme {
            crate::usage::check_scheme("--scheme", name)?;
        }
        if let Some(preset) = &self.link {
            crate::usage::check_link("--link", preset)?;
        }
        if let Some(d) = self.duration {
            if !(d.is_finite() && d > 0.0 && d <= 86_400.0) {
                return Err(crate::usage::usage(format!(
                    "--duration {d}: give a positive number of seconds, at most 86400"
                )));
            }
        }
        let mut e = match &self.config {
            Some(path) => {
                let text = crate::paths::read_text("experiment file", path)?;
                Experiment::from_toml(&text).map_err(|e| {
                    anyhow::anyhow!(
                        "experiment file '{}', {}",
                        path.display(),
                        crate::usage::with_suggestion_among(&e.message, &experiment_fields())
                    )
                })?
            }
            None => Experiment::default(),
        };
        macro_rules! set {
            ($flag:expr => $field:expr) => {
                if let Some(v) = $flag.clone() {
                    $field = v.into();
                }
            };
        }
        set!(self.scheme => e.scheme);
        set!(self.video => e.video);
        set!(self.size.map(|s| s.to_string()) => e.size);
        set!(self.fps => e.fps);
        set!(self.duration => e.duration_s);
        set!(self.seed => e.seed);
        set!(self.audio => e.audio);
        set!(self.sync => e.sync);
        set!(self.link => e.link.preset);
        set!(self.queue => e.link.queue_packets);
        set!(self.delay_ms => e.link.delay_ms);
        set!(self.loss => e.link.loss);
        set!(self.datagram_overhead => e.link.datagram_overhead_bytes);
        if let Some(t) = &self.trace {
            e.link.trace = Some(t.clone());
        }
        e.two_way |= self.two_way;
        // VP8 with no [salsify] table is the default as it stands: nothing written.
        let table = salsify_schemes::families::salsify::SENDER_TABLE;
        match self.codec {
            Some(FunctionalCodec::Vp8) if !e.params.has(table) => {}
            Some(codec) => e
                .params
                .update(table, |c: &mut salsify_transport::SenderConfig| {
                    c.codec = codec
                }),
            None => {}
        }
        Ok(e)
    }
}

/// Runs one simulation and writes its outputs.
pub fn run(args: &SimArgs) -> Result<()> {
    if args.row_header {
        println!("{ROW_HEADER}");
        return Ok(());
    }
    let experiment = args.experiment()?;
    let mut config = experiment.sim_config().context("bad experiment")?;
    if let Some(codec) = args.codec.filter(|c| *c != config.scheme.codec()) {
        return Err(crate::usage::usage(format!(
            "--codec {codec}: {} runs on {} only (a Salsify scheme takes --codec)",
            config.scheme.name(),
            config.scheme.codec()
        )));
    }
    config.record_packets = true;
    let mut video = open_video(&experiment)?;
    // Checked now, so a bad folder fails before the simulation; made (or emptied) only once
    // it succeeded, so a failed or interrupted one leaves nothing behind.
    let about = format!(
        "a sim of {} over {}, {} s",
        experiment.scheme,
        link_name(&experiment),
        experiment.duration_s
    );
    let mark = RunMark::new("sim", &toml::to_string(&experiment)?, about);
    let reuse = Reuse {
        force: args.force,
        default_folder: args.out == Path::new(DEFAULT_OUT),
    };
    let folder = out_dir::plan(&args.out, "--out", mark, reuse, false)?;
    // Our own handler, installed before the run is announced: a SIGINT the process inherited
    // as ignored (a background job of a script, as `scripts/test &`) would else not stop it.
    let stop = crate::runtime::stop_on_ctrl_c()?;
    eprintln!(
        "simulating {} s of {} over {} with {}",
        experiment.duration_s,
        video.name(),
        link_name(&experiment),
        experiment.scheme
    );
    let bar = progress_bar(experiment.duration_s, args.quiet);
    let mut progress = |t: salsify_time::Duration| bar.set_position(t.as_millis() as u64);
    let stopped = || stop.load(Ordering::Relaxed);
    let outputs = match experiment.two_way {
        true => simulate_two_way_until(&config, video.as_mut(), &mut progress, &stopped)
            .map(|o| vec![o.a_to_b, o.b_to_a]),
        false => simulate_until(&config, video.as_mut(), &mut progress, &stopped).map(|o| vec![o]),
    };
    bar.finish_and_clear();
    if let Err(SimError::Stopped) = outputs {
        return Err(anyhow::Error::new(Interrupted(
            "interrupted (Ctrl-C): nothing written".into(),
        )));
    }
    let outputs = outputs?;
    let folder = folder.take()?;
    write_outputs(&args.out, &experiment, &outputs, &config.data_link.queue)?;
    folder.record_length(experiment.duration_s)?;
    let two_way = outputs.len() > 1;
    for (output, direction) in outputs.iter().zip(DIRECTIONS) {
        if two_way {
            println!("{direction}:");
        }
        print_summary(output);
        if let Some(label) = &args.row {
            match two_way {
                true => print_row(&format!("{label} {direction}"), output),
                false => print_row(label, output),
            }
        }
    }
    println!(
        "wrote frames.csv, summary.json, rates.csv, packets.log, feedback.json, experiment.toml{}{} to {}",
        if outputs[0].audio.is_some() {
            ", audio.csv"
        } else {
            ""
        },
        if two_way { ", b-to-a/" } else { "" },
        args.out.display()
    );
    Ok(())
}

/// A call's directions, as the summary and the terminal name them.
const DIRECTIONS: [&str; 2] = ["A to B", "B to A"];

fn link_name(e: &Experiment) -> String {
    match &e.link.trace {
        Some(t) => format!("trace {}", t.display()),
        None => format!("the {} link", e.link.preset),
    }
}

fn progress_bar(seconds: f64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new((seconds * 1000.0) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} ms simulated, {elapsed} elapsed, eta {eta}",
        )
        .expect("constant template"),
    );
    bar
}

/// The experiment's video: the synthetic source, a file read into memory, or either's
/// barcoded excerpt as a live cell plays it.
fn open_video(e: &Experiment) -> Result<Box<dyn VideoSource>> {
    if e.clip == Clip::LiveExcerpt {
        return Ok(Box::new(live_excerpt(e)?));
    }
    if e.video == "synthetic" {
        return synthetic_video(e);
    }
    Ok(Box::new(read_clip(&e.video, frames_needed(e))?))
}

/// Every top-level name an experiment file takes: its fields and the scheme tables.
fn experiment_fields() -> Vec<String> {
    let mut names: Vec<String> = toml::to_string(&Experiment::default())
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    names.extend(salsify_schemes::registry::tables().map(|t| t.name.to_string()));
    names
}

/// The summary with the run's name first: its scheme and its setting (what its parameters
/// change from the scheme's defaults, "default" for none), so two runs' summaries are never
/// told apart only by their folders.
#[derive(serde::Serialize)]
struct NamedSummary<'a> {
    scheme: &'a str,
    setting: String,
    #[serde(flatten)]
    summary: &'a salsify_metrics::Summary,
}

impl<'a> NamedSummary<'a> {
    fn new(e: &'a Experiment, summary: &'a salsify_metrics::Summary) -> NamedSummary<'a> {
        NamedSummary {
            scheme: &e.scheme,
            setting: salsify_schemes::setting_or_default(&e.scheme, &e.params),
            summary,
        }
    }
}

/// A two-way run's summary: the run's name, then each direction's summary.
#[derive(serde::Serialize)]
struct TwoWaySummary<'a> {
    scheme: &'a str,
    setting: String,
    two_way: bool,
    a_to_b: &'a salsify_metrics::Summary,
    b_to_a: &'a salsify_metrics::Summary,
}

/// Writes a run's files: one direction's (or, for a call, side A's) in `out`, side B's in
/// `out/b-to-a`, and one summary.json.
fn write_outputs(out: &Path, e: &Experiment, o: &[SimOutput], queue: &QueueLimit) -> Result<()> {
    write_direction(out, e, &o[0], queue)?;
    let path = out.join("summary.json");
    let mut json = BufWriter::new(
        salsify_codec::output::create(&path)
            .with_context(|| format!("cannot create '{}'", path.display()))?,
    );
    match o {
        [one] => serde_json::to_writer_pretty(&mut json, &NamedSummary::new(e, &one.summary))?,
        [a, b, ..] => {
            let b_dir = out.join(B_TO_A_DIR);
            std::fs::create_dir_all(&b_dir)
                .with_context(|| format!("cannot create '{}'", b_dir.display()))?;
            write_direction(&b_dir, e, b, queue)?;
            let named = NamedSummary::new(e, &a.summary);
            let summary = TwoWaySummary {
                scheme: named.scheme,
                setting: named.setting,
                two_way: true,
                a_to_b: &a.summary,
                b_to_a: &b.summary,
            };
            serde_json::to_writer_pretty(&mut json, &summary)?
        }
        [] => unreachable!("a run has a direction"),
    }
    writeln!(json)?;
    json.flush()?;
    salsify_codec::output::write(&out.join("experiment.toml"), toml::to_string(e)?)?;
    Ok(())
}

/// One direction's files: frames, rates, its media link's log, its feedback's delay, its
/// audio.
fn write_direction(out: &Path, e: &Experiment, o: &SimOutput, queue: &QueueLimit) -> Result<()> {
    let create = |name: &str| -> Result<BufWriter<File>> {
        let path = out.join(name);
        Ok(BufWriter::new(
            salsify_codec::output::create(&path)
                .with_context(|| format!("cannot create '{}'", path.display()))?,
        ))
    };
    let mut csv = create("frames.csv")?;
    write_frames_csv(&o.records, &mut csv)?;
    csv.flush()?;
    let mut feedback = create("feedback.json")?;
    serde_json::to_writer_pretty(&mut feedback, &o.feedback)?;
    writeln!(feedback)?;
    feedback.flush()?;
    let mut rates = create("rates.csv")?;
    writeln!(rates, "{}", csv_log::RATES_CSV_HEADER)?;
    for &(at, encoder, pacing) in &o.rates {
        writeln!(rates, "{}", csv_log::rates_line(1, at, encoder, pacing))?;
    }
    rates.flush()?;
    let header = LogHeader {
        link_name: "Uplink".into(),
        trace_name: link_name(e),
        queue: *queue,
        base: Instant::ZERO,
    };
    let mut log = MahimahiLog::new(create("packets.log")?, &header)?;
    for event in &o.packet_events {
        log.write_event(event)?;
    }
    log.finish()?.flush()?;
    if let Some(audio) = &o.audio {
        let mut csv = create("audio.csv")?;
        salsify_eval::sim::write_audio_csv(&audio.played, &mut csv)?;
        csv.flush()?;
    }
    Ok(())
}

fn print_summary(o: &SimOutput) {
    let s = &o.summary;
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    println!(
        "SSIM dB mean {} p25 {} | delay ms mean {} median {} p95 {} | {:.1} frames/s shown | {:.0} kbit/s | utilisation {}",
        f(s.ssim_db_mean),
        f(s.ssim_db_p25),
        f(s.delay_mean_ms),
        f(s.delay_median_ms),
        f(s.delay_p95_ms),
        s.displayed_fps,
        s.video_bitrate_bps / 1000.0,
        f(s.link_utilisation),
    );
    println!(
        "choices: better {:.0}% worse {:.0}% skipped {:.0}% | states held max: sender {} receiver {}",
        s.better_share * 100.0,
        s.worse_share * 100.0,
        s.skip_share * 100.0,
        o.sender.max_states_held,
        o.receiver.max_states_held
    );
    if let Some(n) = &s.network {
        println!(
            "network (Sprout's measure from {:.0} s): {:.0} of {:.0} kbit/s ({:.0}%) | per-packet delay p95 {} ms, omniscient {} ms, self-inflicted {} ms",
            n.scored_from_s,
            n.throughput_kbps,
            n.capacity_kbps,
            n.utilisation * 100.0,
            f(n.delay_p95_ms),
            f(n.omniscient_delay_p95_ms),
            f(n.self_inflicted_delay_ms),
        );
    }
    let fb = &o.feedback;
    println!(
        "feedback to the sender: delay ms mean {} p95 {}, of which queued mean {} p95 {} ({} datagrams)",
        f(fb.delay_mean_ms),
        f(fb.delay_p95_ms),
        f(fb.queue_mean_ms),
        f(fb.queue_p95_ms),
        fb.datagrams
    );
    if let Some(a) = &s.audio {
        println!(
            "audio: delay ms mean {:.1} p95 {:.1} | concealed {:.2}% (FEC-recovered {:.2}%) | A/V skew in BT.1359 window {}",
            a.audio_delay_mean_ms,
            a.audio_delay_p95_ms,
            a.audio_concealed_fraction * 100.0,
            a.audio_fec_fraction * 100.0,
            a.av_skew_in_window_fraction
                .map_or("-".to_string(), |f| format!("{:.1}% of pictures", f * 100.0)),
        );
    }
    // A bulk sender (no video: every picture ignored) shows no frame by design.
    let bulk = o.sender.frames_sent + o.sender.skipped + o.sender.dropped == 0
        && o.sender.datagrams_sent > 0;
    if o.summary.frames_shown == 0 && !bulk {
        eprintln!("warning: no frame was shown");
    }
}

fn print_row(label: &str, o: &SimOutput) {
    let s = &o.summary;
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    println!(
        "| {label} | {} | {} | {} | {} | {:.1} | {:.0} | {} | {:.0}/{:.0}/{:.0} |",
        f(s.ssim_db_p25, 2),
        f(s.ssim_db_mean, 2),
        f(s.delay_mean_ms, 0),
        f(s.delay_p95_ms, 0),
        s.displayed_fps,
        s.video_bitrate_bps / 1000.0,
        f(s.link_utilisation, 2),
        s.better_share * 100.0,
        s.worse_share * 100.0,
        s.skip_share * 100.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use salsify_eval::experiment::LIVE_EXCERPT_FRAMES;

    /// A live cell's simulated twin plays exactly the pictures of the live cell's source
    /// file, barcodes and all, looped as the live camera loops it (a cut back to the first).
    #[test]
    fn the_twin_plays_the_live_cells_source_picture_for_picture() {
        use salsify_codec::{Image, PlaneId};
        let dir = std::env::temp_dir().join(format!("salsify-twin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = Experiment {
            video: "synthetic".into(),
            size: "320x180".into(),
            fps: 30,
            clip: Clip::LiveExcerpt,
            ..Experiment::default()
        };
        let path = dir.join("source.y4m");
        let size = crate::clips::live_excerpt_size(&e).unwrap();
        crate::stamp::stamp_video(
            &e.video,
            size,
            e.fps,
            Some(LIVE_EXCERPT_FRAMES),
            0,
            &path,
            true,
        )
        .unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut reader = salsify_codec::y4m::Y4mReader::new(std::io::BufReader::new(file)).unwrap();
        let mut source = Vec::new();
        while let Some(p) = reader.next_frame().unwrap() {
            source.push(p);
        }
        assert_eq!(source.len() as u64, LIVE_EXCERPT_FRAMES);
        let same = |a: &Image, b: &Image| {
            PlaneId::ALL.iter().all(|&id| {
                let (pa, pb) = (a.plane(id), b.plane(id));
                pa.width() == pb.width()
                    && pa.height() == pb.height()
                    && (0..pa.height()).all(|y| pa.row(y)[..pa.width()] == pb.row(y)[..pb.width()])
            })
        };
        let mut clip = live_excerpt(&e).unwrap();
        assert_eq!(clip.fps(), 30.0);
        let n = LIVE_EXCERPT_FRAMES;
        for i in [0, 1, n - 1, n, n + 1, 2 * n + 7] {
            let want = &source[(i % n) as usize];
            assert!(same(&clip.picture(i), want), "picture {i}");
            assert_eq!(
                salsify_barcode::read(&clip.picture(i)).unwrap() as u64,
                i % n
            );
        }
        assert!(!same(&source[0], &source[1]), "a moving source");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: SimArgs,
    }

    /// `--codec av1` names the codec in the `[salsify]` table; `--codec vp8` with no table
    /// leaves the experiment as it was (its run id unchanged); a bad name is refused.
    #[test]
    fn codec_flag_sets_the_salsify_table_only_when_it_must() {
        use clap::Parser;
        let experiment = |extra: &[&str]| {
            let argv = [&["sim"][..], extra].concat();
            Wrapper::try_parse_from(argv).map(|w| w.args.experiment().unwrap())
        };
        let plain = experiment(&[]).unwrap();
        assert_eq!(experiment(&["--codec", "vp8"]).unwrap(), plain);
        let av1 = experiment(&["--codec", "av1"]).unwrap();
        let sender: salsify_transport::SenderConfig = av1.params.get("salsify").unwrap().unwrap();
        assert_eq!(sender.codec, FunctionalCodec::Av1);
        assert_eq!(
            av1.sim_config().unwrap().scheme.codec(),
            FunctionalCodec::Av1
        );
        assert!(experiment(&["--codec", "h264"]).is_err());
    }

    /// `--two-way` makes the experiment a call; without it the experiment is one-way and
    /// written as it always was (no `two_way` key, so run ids stay).
    #[test]
    fn the_two_way_flag_makes_a_call() {
        use clap::Parser;
        let experiment = |argv: &[&str]| {
            let w = Wrapper::try_parse_from(argv).unwrap();
            w.args.experiment().unwrap()
        };
        assert!(experiment(&["sim", "--two-way"]).two_way);
        let plain = experiment(&["sim"]);
        assert!(!plain.two_way);
        assert!(!toml::to_string(&plain).unwrap().contains("two_way"));
    }

    /// `sim --help` states each default, and states it as the experiment defaults are.
    #[test]
    fn help_states_the_experiment_defaults() {
        let help = Wrapper::command().render_long_help().to_string();
        let e = Experiment::default();
        for (flag, value) in [
            ("--scheme", e.scheme.clone()),
            ("--video", e.video.clone()),
            ("--size", e.size.clone()),
            ("--fps", e.fps.to_string()),
            ("--duration", e.duration_s.to_string()),
            ("--seed", e.seed.to_string()),
            ("--link", e.link.preset.clone()),
            ("--queue", e.link.queue_packets.to_string()),
            ("--delay-ms", e.link.delay_ms.to_string()),
            ("--loss", e.link.loss.to_string()),
        ] {
            let start = help
                .find(&format!("{flag} <"))
                .unwrap_or_else(|| panic!("{flag} not in {help}"));
            let rest = &help[start..];
            let end = rest[2..].find("\n  -").map_or(rest.len(), |i| i + 2);
            assert!(
                rest[..end].contains(&format!("[default: {value}]")),
                "{flag}: {}",
                &rest[..end]
            );
        }
        assert!(!help.contains("crates/"), "no source paths in help");
    }
}
