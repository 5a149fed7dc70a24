//! `salsify demo`: receiver, link relay and sender on loopback in one process, with a live
//! line per second and a final summary, for any scheme that runs live (`--scheme`). Needs no
//! data files. The flags convert into the runtime's [`LiveCall`], which [`crate::call`] runs.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use salsify_audio::{PlayerConfig, SyncMode};
use salsify_runtime::{CallAudio, LinkPath, LiveCall, ReceiverSide};
use salsify_time::Duration;

use crate::dashboard::DashboardArgs;
use crate::flags::{LinkFlags, SchemeArgs, SourceArgs};
use crate::out_dir::{self, Reuse, RunMark};
use crate::runtime;

/// The output folder when none is given.
pub const DEFAULT_OUT: &str = "salsify-demo-out";

/// Flags of `salsify demo`.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Seconds to run.
    #[arg(long, default_value = "30", value_parser = runtime::parse_seconds)]
    pub duration: Duration,
    /// Folder for the received video (received.ivf; received.y4m with --y4m) and the logs.
    /// One run's: a folder holding another command's or another experiment's run is
    /// refused; the same experiment again, and an earlier demo in the default folder, are
    /// replaced (with a line that says so).
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// Empty the output folder first when it holds another run.
    #[arg(long)]
    pub force: bool,
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
    /// The call's audio beside the video: `synthetic` (a speech-like voice with a timing mark
    /// each second), a 48 kHz `.wav` file (looped), `mic` (the machine's default input device, mixed to mono and resampled to 48 kHz;
    /// needs a build with `--features sound`, see `scripts/setup --sound`), or `none`. Opus in the same encrypted
    /// session and the same link queue as the video, counted in the scheme's budget; the
    /// receiver plays it lip-synced and the line per second shows its delay and concealment.
    #[arg(long, default_value = "synthetic")]
    pub audio: String,
    /// Write what the receiver played (concealed frames included) to this WAV file
    /// [default: OUT/audio.wav]; `salsify audio-marks FILE` reads its timing marks.
    #[arg(long)]
    pub audio_out: Option<PathBuf>,
    /// Also play the call's audio on the machine's default output device as it is played
    /// (the same samples `--audio-out` writes), through a 250 ms ring the device reads;
    /// running dry fills silence, and underruns and overruns are counted and printed at the
    /// end. Needs a build with `--features sound` (see `scripts/setup --sound`); an error
    /// when the machine has no output device.
    #[arg(long)]
    pub play: bool,
    /// Lip sync: `video` (the audio is held back to the delay of the pictures shown) or
    /// `none` (the audio plays at its own least delay).
    #[arg(long, default_value = "video", value_parser = crate::flags::audio::parse_sync)]
    pub sync: SyncMode,
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

impl TryFrom<&DemoArgs> for LiveCall {
    type Error = anyhow::Error;

    /// The call these flags describe. Its sender never starts a new session on silence
    /// unless `--reset-after` asks: its receiver runs in this process for the whole run, so a
    /// silence is the link's outage, and a fresh sender (new congestion state, a keyframe)
    /// would part ways with the simulation of the same run.
    fn try_from(args: &DemoArgs) -> Result<LiveCall> {
        if args.play && args.audio == "none" {
            return Err(crate::usage::usage(
                "--play: there is no audio to play with --audio none",
            ));
        }
        let play = crate::flags::audio::play(args.play)?;
        let audio = crate::flags::audio::audio_source("--audio", &args.audio)?;
        let audio = audio.map(|send| {
            let mut player = PlayerConfig::default();
            player.sync.mode = args.sync;
            CallAudio {
                player,
                wav: Some(
                    args.audio_out
                        .clone()
                        .unwrap_or_else(|| args.out.join("audio.wav")),
                ),
                play,
                send,
            }
        });
        Ok(LiveCall {
            audio,
            sender: args.scheme.sender(None)?,
            camera: (&args.source).into(),
            path: LinkPath::try_from(&args.path)?,
            receiver: ReceiverSide {
                y4m: args.y4m,
                display: args.display,
                ssim: !args.no_ssim,
            },
            duration: args.duration,
            out: args.out.clone(),
            encrypted: !args.plaintext,
            barcoded: args.barcoded,
            quiet: args.quiet,
            dashboard: args.dashboard.dashboard.clone(),
        })
    }
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> Result<()> {
    crate::paths::check_outputs(&[("--audio-out", args.audio_out.as_deref())])?;
    let call = LiveCall::try_from(args)?;
    let folder = out_dir::plan(
        &args.out,
        "--out",
        run_mark(args, &call),
        Reuse {
            force: args.force,
            default_folder: args.out == std::path::Path::new(DEFAULT_OUT),
        },
        false,
    )?;
    crate::call::run(&call, Some(folder)).map(drop)
}

/// What marks the demo's folder: every flag that changes what runs (not where its files go
/// or what is printed and shown meanwhile).
fn run_mark(args: &DemoArgs, call: &LiveCall) -> RunMark {
    let what = format!(
        "{:?}",
        (
            args.duration,
            args.y4m,
            args.no_ssim,
            args.plaintext,
            args.barcoded,
            (&args.audio, args.sync),
            &args.source,
            &args.scheme,
            &args.path
        )
    );
    let about = format!(
        "a demo of {} over {}, {:.0} s",
        call.sender.scheme.run_name(),
        call.path.trace_name,
        args.duration.as_secs_f64()
    );
    RunMark::new("demo", &what, about)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's sender (and so every live cell of `salsify eval`) rides out a silent link
    /// as the simulated sender does; `--reset-after` still applies to the demo. The flags'
    /// defaults make the call the README describes.
    #[test]
    fn the_demo_call_from_its_flags() {
        let mut args = DemoArgs::default();
        let call = LiveCall::try_from(&args).unwrap();
        assert_eq!(call.sender.reset_after, None);
        assert_eq!(call.sender.scheme.name, "salsify-2c");
        assert_eq!(call.camera.size, (640, 360));
        assert_eq!(call.duration, Duration::from_secs(30));
        assert!(call.encrypted && call.receiver.ssim && !call.barcoded);
        assert_eq!(call.path.trace_name, "synthetic cellular");
        let audio = call.audio.as_ref().expect("synthetic audio by default");
        assert_eq!(
            audio.wav,
            Some(PathBuf::from(DEFAULT_OUT).join("audio.wav"))
        );
        assert_eq!(audio.player.sync.mode, SyncMode::Video);
        args.audio = "none".into();
        assert!(LiveCall::try_from(&args).unwrap().audio.is_none());
        args.scheme.reset_after = Some(Duration::from_millis(500));
        args.plaintext = true;
        let call = LiveCall::try_from(&args).unwrap();
        assert_eq!(call.sender.reset_after, Some(Duration::from_millis(500)));
        assert!(!call.encrypted);
    }

    /// `--codec av1` names the AV1 variant in the folder's mark, not the bare scheme.
    #[test]
    fn the_folder_mark_names_the_codec_run() {
        let mut args = DemoArgs::default();
        let call = LiveCall::try_from(&args).unwrap();
        let plain = run_mark(&args, &call).about;
        assert!(plain.starts_with("a demo of salsify-2c over"), "{plain}");
        args.scheme.codec = Some(salsify_codec::FunctionalCodec::Av1);
        let call = LiveCall::try_from(&args).unwrap();
        let av1 = run_mark(&args, &call).about;
        assert!(av1.starts_with("a demo of salsify-2c [codec av1]"), "{av1}");
    }
}
