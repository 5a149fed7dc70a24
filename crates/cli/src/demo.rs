//! `salsify demo`: receiver, link relay and sender on loopback in one process, with a live
//! line per second and a final summary, for any scheme that runs live (`--scheme`). Needs no
//! data files.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use salsify_schemes::SourceInfo;
use salsify_secure::{Keypair, SecureConfig};
use salsify_time::{Duration, Instant};

use crate::dashboard::{self, DashboardArgs, Fact};
use crate::link::{relay_config, LinkFlags};
use crate::monitor::{DemoSummary, Monitor, MonitorConfig};
use crate::runtime::display::DisplayConfig;
use crate::runtime::observe::{Observation, Observer};
use crate::runtime::receiver_loop::{self, ReceiverLoopConfig};
use crate::runtime::relay::RelayConfig;
use crate::runtime::sender_loop::{self, SenderLoopConfig};
use crate::runtime::{self, clock, relay, udp, CallStart, PictureSource, VideoSource};
use crate::send::{SchemeArgs, SourceArgs};
use crate::window;

/// Flags of `salsify demo`.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Seconds to run.
    #[arg(long, default_value = "30", value_parser = runtime::parse_seconds)]
    pub duration: Duration,
    /// Folder for the received video (received.ivf; received.y4m with --y4m) and the logs.
    #[arg(long, default_value = "salsify-demo-out")]
    pub out: PathBuf,
    /// Also write every shown picture to OUT/received.y4m (large: about 10 MB/s at 640x360).
    #[arg(long)]
    pub y4m: bool,
    /// Show the received video in a window as frames are decoded (no jitter buffer; pictures
    /// the window could not keep up with are dropped and counted). Closing it (or Escape / q)
    /// ends the demo like Ctrl-C. Needs a display (DISPLAY or WAYLAND_DISPLAY).
    #[arg(long)]
    pub display: bool,
    /// Do not score shown pictures with SSIM (saves CPU at large sizes).
    #[arg(long)]
    pub no_ssim: bool,
    /// Send plaintext datagrams (by default the demo encrypts its session with fresh keys,
    /// as `salsify send/recv --key --peer-key` do).
    #[arg(long)]
    pub plaintext: bool,
    /// The input is a barcoded Y4M file (`salsify barcode`): also score the run black-box,
    /// by barcodes read from the captured and shown pictures, with the same analysis as
    /// `salsify peer chromium` (OUT/blackbox: frames.csv, summary.json, match.json).
    #[arg(long)]
    pub barcoded: bool,
    /// No line per second (the setup and the summary are still printed).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub dashboard: DashboardArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub scheme: SchemeArgs,
    #[command(flatten)]
    pub path: LinkFlags,
}

impl Default for DemoArgs {
    fn default() -> Self {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: DemoArgs,
        }
        // Panic = bug: the defaults above parse.
        Wrapper::try_parse_from(["salsify"])
            .expect("demo defaults parse")
            .args
    }
}

/// The demo's sender, sending to the relay at `to`. Its receiver runs in this process for
/// the whole run, so it never starts a new session on silence unless `--reset-after` asks:
/// a silence is the link's outage, and a fresh sender (new congestion state, a keyframe)
/// would part ways with the simulation of the same run.
fn sender_config(
    args: &DemoArgs,
    to: std::net::SocketAddr,
    secure: Option<SecureConfig>,
) -> Result<SenderLoopConfig> {
    Ok(SenderLoopConfig {
        log: Some(args.out.join("sender.csv")),
        secure,
        reset_after: args.scheme.reset_after,
        ..args.scheme.loop_config(to)?
    })
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> Result<()> {
    run_scored(args).map(drop)
}

/// Runs the demo; with `--barcoded`, also returns the black-box analysis it wrote.
pub(crate) fn run_scored(args: &DemoArgs) -> Result<Option<salsify_peer::Analysis>> {
    if args.barcoded && !std::path::Path::new(&args.source.input).is_file() {
        anyhow::bail!(
            "--barcoded needs a barcoded Y4M file as --input (from `salsify barcode`), not '{}'",
            args.source.input
        );
    }
    // The input, the scheme and the window first: a bad one is an error before anything is
    // created.
    let source = VideoSource::open(&args.source.camera())?;
    let (width, height) = source.size();
    let title = format!("salsify demo: {}", args.scheme.scheme()?.name());
    let window = window::open(args.display, &title, (width, height), false)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create folder '{}'", args.out.display()))?;
    let loopback = "127.0.0.1:0".parse().expect("literal address");
    let recv_socket = udp::bind(loopback)?;
    let relay_socket = udp::bind(loopback)?;
    let call_start = CallStart::new();
    let relay = RelayConfig {
        start: args.path.link_start.relay_start(Some(&call_start)),
        ..relay_config(&args.path, recv_socket.local_addr()?, Some(&args.out))?
    };
    let (sender_secure, receiver_secure) = match args.plaintext {
        true => (None, None),
        false => {
            let fresh = || Keypair::generate().context("cannot generate session keys");
            let (s, r) = (fresh()?, fresh()?);
            (
                Some(SecureConfig::new(s.private, r.public)),
                Some(SecureConfig::new(r.private, s.public)),
            )
        }
    };
    let sender = SenderLoopConfig {
        call_start: Some(call_start),
        ..sender_config(args, relay_socket.local_addr()?, sender_secure)?
    };
    let receiver_fps = source.fps();
    let receiver = ReceiverLoopConfig {
        scheme: Some(sender.scheme.clone()),
        source: SourceInfo {
            width,
            height,
            fps: source.fps(),
        },
        display: DisplayConfig {
            y4m: args.y4m.then(|| args.out.join("received.y4m")),
            size: Some((width, height)),
            ivf: Some(args.out.join("received.ivf")),
            log: Some(args.out.join("receiver.csv")),
            fps: source.fps().round().max(1.0) as u32,
            view: None,
        },
        secure: receiver_secure,
        // Its one sender stays for the run: frames held in a deep queue after an outage are
        // late, not another sender's.
        session_timeout: None,
        ..ReceiverLoopConfig::default()
    };
    let monitor = MonitorConfig {
        ssim: !args.no_ssim,
        link: relay.video.link.clone(),
        outage_at: (args.path.link == "dropout" && args.path.trace.is_none())
            .then(|| Duration::from_secs_f64(args.path.dropout_at)),
    };
    let scheme = sender.scheme.name();
    let mut receiver = receiver;
    receiver.display.view = window.as_ref().map(|w| w.view());
    let stop = runtime::stop_on_ctrl_c()?;
    let dash_title = format!("salsify demo: {scheme} over {}", args.path.trace_name());
    let dash = dashboard::start::<Fact>(
        &args.dashboard,
        &dash_title,
        Some(scheme),
        dashboard::Role::Demo,
    )?;
    let feed = dash.as_ref().map(|d| d.feed());
    let (tx, rx) = mpsc::channel();
    let threads = [
        spawn("receiver", &stop, {
            let (stop, obs) = (stop.clone(), Observer::new(tx.clone()));
            move || receiver_loop::run(receiver, recv_socket, stop, obs).map(drop)
        })?,
        spawn("link", &stop, {
            let (stop, obs) = (stop.clone(), Observer::new(tx.clone()));
            move || relay::run(relay, relay_socket, stop, obs).map(drop)
        })?,
        spawn("sender", &stop, {
            let (stop, obs) = (stop.clone(), Observer::new(tx.clone()));
            move || {
                let totals = sender_loop::run(sender, Box::new(source), stop, obs)?;
                match totals.source_failed {
                    Some(why) => Err(anyhow!("the input failed: {why}")),
                    None => Ok(()),
                }
            }
        })?,
    ];
    drop(tx);
    print_setup(args, scheme);
    let blackbox = if args.barcoded {
        let dir = args.out.join("blackbox");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create folder '{}'", dir.display()))?;
        Some(BlackBoxRecorder::new(&dir, width, height, receiver_fps)?)
    } else {
        None
    };
    let start = clock::now();
    let watch_stop = stop.clone();
    let watched = window::run_in(window, "salsify demo", &stop, move || {
        watch(&rx, &watch_stop, args, monitor, blackbox, feed)
    });
    dashboard::finish(dash);
    let (summary, blackbox) = watched?;
    let mut failed = None;
    for t in threads {
        if let Ok(Err(e)) | Err(e) = t.join().map_err(|_| anyhow!("a thread panicked")) {
            failed.get_or_insert(e);
        }
    }
    print_summary(&summary, args);
    if summary.shown == 0 {
        return Err(match failed {
            Some(e) => e.context("no frame was shown in the demo"),
            None => anyhow!("no frame was shown in the demo"),
        });
    }
    let analysis = match blackbox {
        Some(recorder) => Some(recorder.score(&args.source.input, start, start + args.duration)?),
        None => None,
    };
    failed.map_or(Ok(analysis), Err)
}

/// The demo's run recorded as a black-box peer's is: barcodes of captured pictures, shown
/// pictures with their display times, scored afterwards by `salsify_peer::analyse`.
struct BlackBoxRecorder {
    dir: PathBuf,
    writer: salsify_peer::records::RecordWriter,
}

impl BlackBoxRecorder {
    fn new(dir: &std::path::Path, width: u32, height: u32, fps: f64) -> Result<Self> {
        let rate = salsify_codec::y4m::Rational::new((fps * 1000.0).round() as u32, 1000);
        Ok(BlackBoxRecorder {
            dir: dir.to_path_buf(),
            writer: salsify_peer::records::RecordWriter::create(dir, width, height, rate)?,
        })
    }

    fn observe(&mut self, o: &Observation) -> Result<()> {
        match o {
            Observation::Captured { at, image, .. } => {
                self.writer.capture(&salsify_peer::records::CaptureRecord {
                    capture: *at,
                    read: *at,
                    barcode: salsify_barcode::read(image).map_err(|e| e.to_string()),
                })
            }
            Observation::Shown { at, image, .. } => {
                let mut packed = Vec::with_capacity(image.visible_len());
                image.write_packed(&mut packed);
                let record = salsify_peer::records::ShownRecord {
                    display: *at,
                    received: None,
                    width: image.width(),
                    height: image.height(),
                    rtp: 0,
                    missed_before: 0,
                };
                self.writer.shown(&record, &packed)
            }
            _ => Ok(()),
        }
    }

    fn score(
        self,
        reference: &str,
        from: Instant,
        until: Instant,
    ) -> Result<salsify_peer::Analysis> {
        self.writer.finish()?;
        let analysis = salsify_peer::analyse(&salsify_peer::AnalysisInput {
            dir: &self.dir,
            reference: std::path::Path::new(reference),
            from: Some(from),
            until: Some(until),
        })?;
        salsify_peer::write_outputs(&self.dir, &analysis)?;
        let (s, c) = (&analysis.summary, &analysis.counts);
        println!(
            "black-box (barcodes): {} of {} shown pictures matched; SSIM {} dB, delay mean {} ms p95 {} ms, {:.1} fps shown; in {}",
            c.shown_matched,
            c.shown,
            s.ssim_db_mean.map_or("-".into(), |v| format!("{v:.2}")),
            s.delay_mean_ms.map_or("-".into(), |v| format!("{v:.1}")),
            s.delay_p95_ms.map_or("-".into(), |v| format!("{v:.1}")),
            s.displayed_fps,
            self.dir.display()
        );
        Ok(analysis)
    }
}

/// Runs `f` on a named thread; an error stops the others.
fn spawn(
    name: &str,
    stop: &Arc<AtomicBool>,
    f: impl FnOnce() -> Result<()> + Send + 'static,
) -> Result<JoinHandle<Result<()>>> {
    let stop = stop.clone();
    let label = name.to_string();
    std::thread::Builder::new()
        .name(label.clone())
        .spawn(move || {
            let result = f().with_context(|| format!("{label} failed"));
            stop.store(true, Ordering::SeqCst);
            result
        })
        .with_context(|| format!("cannot start the {name} thread"))
}

/// Feeds observations to the monitor and prints its line each second until the end.
fn watch(
    rx: &mpsc::Receiver<Observation>,
    stop: &AtomicBool,
    args: &DemoArgs,
    config: MonitorConfig,
    mut blackbox: Option<BlackBoxRecorder>,
    feed: Option<salsify_dashboard::Feed<Fact>>,
) -> Result<(DemoSummary, Option<BlackBoxRecorder>)> {
    let start = clock::now();
    let end = start + args.duration;
    let mut monitor = Monitor::new(config, start);
    loop {
        let now = clock::now();
        if now >= end {
            stop.store(true, Ordering::SeqCst);
        }
        if let Some(line) = monitor.tick(now).filter(|_| !args.quiet) {
            println!("{line}");
            let _ = std::io::stdout().flush();
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(o) => {
                if let Some(b) = &mut blackbox {
                    b.observe(&o)?;
                }
                let Some(f) = &feed else {
                    monitor.observe(o);
                    continue;
                };
                let scored = monitor.observe(o.clone());
                f.offer(Fact::Observed(o));
                if let Some((at, delay, ssim)) = scored {
                    f.offer(Fact::Scored { at, delay, ssim });
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) if stop.load(Ordering::Relaxed) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let summary = monitor.summary(clock::now().min(end))?;
    monitor.write_frames_csv(&args.out.join("frames.csv"))?;
    Ok((summary, blackbox))
}

fn print_setup(args: &DemoArgs, scheme: &str) {
    let s = &args.source;
    // --size and --fps shape only the synthetic source and live grabs; a file plays as it is.
    let generated =
        s.input == "synthetic" || s.input.starts_with("x11grab:") || s.input.starts_with("v4l2:");
    let shape = match generated {
        true => format!("{} at {} fps", s.size, s.fps),
        false => "at its own size and rate".to_string(),
    };
    println!(
        "salsify demo: {scheme}: {} ({shape}) -> link '{}' -> receiver, all on 127.0.0.1, {:.0} s, {}",
        s.input,
        args.path.trace_name(),
        args.duration.as_secs_f64(),
        match args.plaintext {
            true => "plaintext",
            false => "encrypted (fresh keys)",
        }
    );
}

fn print_summary(s: &DemoSummary, args: &DemoArgs) {
    println!("---");
    println!(
        "shown {} of {} pictures in {:.1} s ({:.1} frames/s); sent {:.2} Mb/s",
        s.shown,
        s.pictures,
        s.seconds,
        s.shown as f64 / s.seconds.max(1e-3),
        s.sent_bytes as f64 * 8.0 / 1e6 / s.seconds.max(1e-3),
    );
    if let Some((mean, p95)) = s.delay_ms {
        println!(
            "delay (capture to display, the paper's metric): mean {mean:.1} ms, p95 {p95:.1} ms"
        );
    }
    if let Some(db) = s.ssim_db {
        println!("quality: mean SSIM {db:.2} dB");
    }
    if let Some(ms) = s.outage_recovery_ms {
        println!("outage: first frame shown {ms:.0} ms after the link came back");
    }
    if s.shown == 0 {
        return;
    }
    let out = args.out.display();
    println!(
        "written to {out}/: received.ivf (ffplay {out}/received.ivf), {}frames.csv, sender.csv, rates.csv, receiver.csv, video.log / ack.log (mm-link format), relay.csv (the relay's own lateness)",
        if args.y4m { format!("received.y4m (ffplay {out}/received.y4m), ") } else { String::new() }
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::sender_loop::DEFAULT_RESET_AFTER;

    /// The demo's sender (and so every live cell of `salsify eval`) rides out a silent link
    /// as the simulated sender does; `salsify send` on its own, whose receiver may restart
    /// unseen, starts a new session after 2 s; `--reset-after` still applies to the demo.
    #[test]
    fn only_a_sender_on_its_own_resets_on_silence() {
        let to = "127.0.0.1:9".parse().unwrap();
        let mut args = DemoArgs::default();
        assert_eq!(sender_config(&args, to, None).unwrap().reset_after, None);
        assert_eq!(
            args.scheme.loop_config(to).unwrap().reset_after,
            Some(DEFAULT_RESET_AFTER)
        );
        args.scheme.reset_after = Some(Duration::from_millis(500));
        assert_eq!(
            sender_config(&args, to, None).unwrap().reset_after,
            Some(Duration::from_millis(500))
        );
    }
}
