//! A live call on loopback (`salsify demo`, `salsify eval`'s live cells) run from the
//! runtime's typed [`LiveCall`]: the runtime starts receiver, relay and sender; this adds
//! what a person watches: the window, the dashboard, a line per second, the summary, and the
//! black-box score of a barcoded call.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use anyhow::{anyhow, Context, Result};
use salsify_runtime::{LiveCall, Observation, PictureSource};
use salsify_schemes::SourceInfo;
use salsify_time::Duration;

use crate::blackbox::BlackBoxRecorder;
use crate::dashboard::{self, Fact};
use crate::monitor::{DemoSummary, Monitor, MonitorConfig};
use crate::out_dir;
use crate::runtime::{self, clock, CameraInput};
use crate::window;

/// What a finished call gives its caller beyond its files.
pub struct CallOutcome {
    /// The black-box analysis it wrote, when it was barcoded.
    pub analysis: Option<salsify_peer::Analysis>,
    /// The receiver's audio figures (the A/V skew from the pictures' true capture times), in
    /// a call that heard audio.
    pub audio: Option<salsify_audio::AudioSummary>,
    /// Every audio frame the receiver played (on the machine's monotonic clock, like the
    /// analysis' origin).
    pub played: Vec<salsify_audio::PlayedFrame>,
}

/// Runs the call. `folder`: the output folder, checked; taken (made or emptied) only once
/// the dashboard's port is bound and the window open, and given up again if the call cannot
/// start, so a failed start leaves no empty folder. Without it (an evaluation's live cell),
/// the folder is the caller's.
pub fn run(call: &LiveCall, folder: Option<out_dir::Plan>) -> Result<CallOutcome> {
    if call.barcoded && !std::path::Path::new(&call.camera.input).is_file() {
        anyhow::bail!(
            "--barcoded needs a barcoded Y4M file as --input (from `salsify barcode`), not '{}'",
            call.camera.input
        );
    }
    // The input, the scheme and the window first: a bad one is an error before anything is
    // created.
    let source = CameraInput::open(&call.camera)?;
    let (width, height) = source.size();
    let scheme = call.sender.scheme.build()?.name().to_string();
    let title = format!("salsify demo: {scheme}");
    let window = window::open(call.receiver.display, &title, (width, height), false)?;
    let receiver_fps = source.fps();
    let dash_title = format!(
        "salsify demo: {} over {}",
        call.sender.scheme.run_name(),
        call.path.trace_name
    );
    let dash = dashboard::start::<Fact>(
        call.dashboard.as_deref(),
        &dash_title,
        Some(&scheme),
        dashboard::Runner::Demo,
    )?;
    let folder = folder.map(out_dir::Plan::take).transpose()?;
    let started = (|| {
        let prepared = call.prepare(SourceInfo {
            width,
            height,
            fps: source.fps(),
        })?;
        let stop = runtime::stop_on_ctrl_c()?;
        Ok((prepared, stop))
    })();
    let (prepared, stop) = match started {
        Ok(s) => s,
        Err(e) => {
            if let Some(folder) = folder {
                folder.abandon();
            }
            return Err(e);
        }
    };
    let monitor = MonitorConfig {
        ssim: call.receiver.ssim,
        link: prepared.relay.video.link.clone(),
        outage_at: call.path.outage_at,
        audio_frame: call.audio.as_ref().map(|a| a.player.frame.duration()),
    };
    let scheme = call.sender.scheme.run_name();
    let feed = dash.as_ref().map(|d| d.feed());
    let (tx, rx) = mpsc::channel();
    let view = window.as_ref().map(|w| w.view());
    let running = prepared.spawn(Box::new(source), view, &stop, &tx)?;
    drop(tx);
    print_setup(call, &scheme);
    let blackbox = if call.barcoded {
        let dir = call.out.join("blackbox");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create folder '{}'", dir.display()))?;
        Some(BlackBoxRecorder::new(&dir, width, height, receiver_fps)?)
    } else {
        None
    };
    let start = clock::now();
    let watch_stop = stop.clone();
    let watched = window::run_in(window, "salsify demo", &stop, move || {
        watch(&rx, &watch_stop, call, monitor, blackbox, feed)
    });
    dashboard::finish(dash);
    let (summary, blackbox, played) = watched?;
    let failed = running.join();
    if let Some(folder) = &folder {
        folder.record_length(summary.seconds)?;
    }
    print_summary(&summary, call);
    if summary.shown == 0 {
        return Err(match failed {
            Some(e) => e.context("no frame was shown in the demo"),
            None => anyhow!("no frame was shown in the demo"),
        });
    }
    let analysis = match blackbox {
        Some(recorder) => Some(recorder.score(&call.camera.input, start, start + call.duration)?),
        None => None,
    };
    let outcome = CallOutcome {
        analysis,
        audio: summary.audio,
        played,
    };
    failed.map_or(Ok(outcome), Err)
}

/// What [`watch`] ends with: the summary, the black-box recorder and the audio frames
/// played.
type Watched = (
    DemoSummary,
    Option<BlackBoxRecorder>,
    Vec<salsify_audio::PlayedFrame>,
);

/// Feeds observations to the monitor and prints its line each second until the end; writes
/// `frames.csv` and, with audio, `audio.csv` (both from the monitor's start).
fn watch(
    rx: &mpsc::Receiver<Observation>,
    stop: &AtomicBool,
    call: &LiveCall,
    config: MonitorConfig,
    mut blackbox: Option<BlackBoxRecorder>,
    feed: Option<salsify_dashboard::Feed<Fact>>,
) -> Result<Watched> {
    let start = clock::now();
    let end = start + call.duration;
    let mut monitor = Monitor::new(config, start);
    if let Some(f) = &feed {
        f.mark_start(start);
    }
    let mut ended = false;
    loop {
        let now = clock::now();
        if now >= end {
            stop.store(true, Ordering::SeqCst);
        }
        // The page's last point is where the summary's time ends.
        if !ended && stop.load(Ordering::Relaxed) {
            ended = true;
            if let Some(f) = &feed {
                f.mark_end(now.min(end));
            }
        }
        if let Some(line) = monitor.tick(now).filter(|_| !call.quiet) {
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
    monitor.write_frames_csv(&call.out.join("frames.csv"))?;
    if call.audio.is_some() {
        monitor.write_audio_csv(&call.out.join("audio.csv"))?;
    }
    Ok((summary, blackbox, monitor.played().to_vec()))
}

fn print_setup(call: &LiveCall, scheme: &str) {
    let c = &call.camera;
    // The size and rate shape only the synthetic source and live grabs; a file plays as it is.
    let generated =
        c.input == "synthetic" || c.input.starts_with("x11grab:") || c.input.starts_with("v4l2:");
    let shape = match generated {
        true => format!("{}x{} at {} fps", c.size.0, c.size.1, c.fps),
        false => "at its own size and rate".to_string(),
    };
    println!(
        "salsify demo: {scheme}: {} ({shape}) -> link '{}' -> receiver, all on 127.0.0.1, {:.0} s, {}",
        c.input,
        call.path.trace_name,
        call.duration.as_secs_f64(),
        match call.encrypted {
            false => "plaintext",
            true => "encrypted (fresh keys)",
        }
    );
}

fn print_summary(s: &DemoSummary, call: &LiveCall) {
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
    if let Some(audio) = &s.audio {
        println!("{}", crate::flags::audio::line(audio));
    }
    if let Some(ms) = s.outage_recovery_ms {
        println!("outage: first frame shown {ms:.0} ms after the link came back");
    }
    if s.shown == 0 {
        return;
    }
    let out = call.out.display();
    println!(
        "written to {out}/: received.ivf (ffplay {out}/received.ivf), {}frames.csv, sender.csv, rates.csv, receiver.csv, video.log / ack.log (mm-link format), relay.csv (the relay's own lateness){}",
        if call.receiver.y4m { format!("received.y4m (ffplay {out}/received.y4m), ") } else { String::new() },
        match (&s.audio, call.audio.as_ref().and_then(|a| a.wav.as_ref())) {
            (Some(_), Some(wav)) => format!(", audio.csv; the audio played: {}", wav.display()),
            _ => String::new(),
        }
    );
}
