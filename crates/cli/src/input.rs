//! Video inputs named on the command line: the built-in synthetic source, a Y4M file or pipe,
//! a live screen or camera (`x11grab:`, `v4l2:`, through ffmpeg: [`crate::live_input`]), or
//! any other file ffmpeg can read (decoded through an ffmpeg child process).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};
use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::Y4mReader;
use salsify_codec::Image;

use crate::live_input::LiveSource;
pub use crate::size::Size;

/// Frame rate assumed for a Y4M stream that does not say (`F0:0` or no F).
const DEFAULT_Y4M_FPS: f64 = 30.0;

/// Highest frame rate accepted for a source (`--fps`, a file's own).
pub const MAX_FPS: f64 = 1000.0;

/// Lowest frame rate a video file may say it has.
const MIN_FILE_FPS: f64 = 0.01;

/// Parses `--fps` of a source: a positive, finite frame rate of at most [`MAX_FPS`].
pub fn parse_fps(s: &str) -> Result<f64, String> {
    let fps: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a frame rate (frames per second, e.g. 30)"))?;
    if !(fps.is_finite() && fps > 0.0 && fps <= MAX_FPS) {
        return Err(format!(
            "{s} frames per second: give a rate above 0 and at most {MAX_FPS}"
        ));
    }
    Ok(fps)
}

/// Parses a whole frame rate (`--fps` of the synthetic source in the simulator and the
/// peers): 1 to [`MAX_FPS`].
pub fn parse_whole_fps(s: &str) -> Result<u32, String> {
    let fps = parse_fps(s)?;
    if fps.fract() != 0.0 {
        return Err(format!("{s} frames per second: give a whole number"));
    }
    Ok(fps as u32)
}

/// An open video input: its size, frame rate and a stream of pictures.
pub struct VideoInput {
    /// What was opened, for messages.
    pub name: String,
    /// Picture size.
    pub size: Size,
    /// Frames per second.
    pub fps: f64,
    /// A live source (screen, camera): pictures come when they are grabbed, so they are
    /// passed on as read rather than played at `fps`.
    pub live: bool,
    frames: Frames,
    /// The first picture, read at open to prove the input has one.
    first: Option<Image>,
}

enum Frames {
    Synthetic(SyntheticSource),
    Y4m(Y4mReader<Box<dyn Read + Send>>, Option<FfmpegChild>),
}

impl VideoInput {
    /// Opens `spec`: `synthetic` (the built-in source at `size` and `fps`), `-` (Y4M on
    /// standard input), a `.y4m` file, `x11grab:DISPLAY` / `v4l2:DEVICE` (a screen or camera
    /// grabbed by ffmpeg at `size` and `fps`), or any other file through ffmpeg.
    pub fn open(spec: &str, size: Size, fps: f64) -> Result<VideoInput> {
        if spec == "synthetic" {
            if !(fps.fract() == 0.0 && (1.0..=MAX_FPS).contains(&fps)) {
                bail!(
                    "the synthetic source needs a whole number of frames per second from 1 to \
                     {MAX_FPS}, not {fps}"
                );
            }
            let source = SyntheticSource::new(size.width, size.height, fps as u32, 1)
                .context("synthetic source")?;
            return Ok(VideoInput {
                name: format!("synthetic {size} at {fps} fps"),
                size,
                fps,
                live: false,
                frames: Frames::Synthetic(source),
                first: None,
            });
        }
        if let Some(live) = LiveSource::parse(spec) {
            return open_live(spec, &live?, size, fps);
        }
        let (reader, child): (Box<dyn Read + Send>, _) = if spec == "-" {
            (Box::new(std::io::stdin()), None)
        } else if spec.ends_with(".y4m") {
            let file = open_file(spec)?;
            (Box::new(BufReader::with_capacity(1 << 20, file)), None)
        } else {
            let (child, output) = FfmpegChild::spawn(Path::new(spec))?;
            (output, Some(child))
        };
        let reader = match Y4mReader::new(reader) {
            Ok(reader) => reader,
            Err(e) => {
                let why = anyhow::Error::new(e).context(format!("'{spec}' is not a Y4M video"));
                return Err(not_video(spec, child, why));
            }
        };
        let mut input = VideoInput::from_y4m(spec, reader, child, DEFAULT_Y4M_FPS, false);
        if !(MIN_FILE_FPS..=MAX_FPS).contains(&input.fps) {
            bail!(
                "'{spec}' says {} frames per second: a video needs {MIN_FILE_FPS} to {MAX_FPS}",
                input.fps
            );
        }
        let why = match input.next_frame() {
            Ok(Some(first)) => {
                input.first = Some(first);
                return Ok(input);
            }
            Ok(None) => anyhow::anyhow!("'{spec}' has a header but no picture"),
            Err(e) => e.context(format!("'{spec}': its first picture is unreadable")),
        };
        let child = input.take_child();
        drop(input); // closes the pipe, so the child can end
        Err(not_video(spec, child, why))
    }

    /// The ffmpeg child feeding this input, if any (stopped when dropped).
    fn take_child(&mut self) -> Option<FfmpegChild> {
        match &mut self.frames {
            Frames::Y4m(_, child) => child.take(),
            Frames::Synthetic(_) => None,
        }
    }

    /// An input reading `reader` (fed by `child`, if any); `fps` when the header names none.
    fn from_y4m(
        spec: &str,
        reader: Y4mReader<Box<dyn Read + Send>>,
        child: Option<FfmpegChild>,
        fps: f64,
        live: bool,
    ) -> VideoInput {
        let header = reader.header();
        VideoInput {
            name: spec.to_string(),
            size: Size {
                width: header.width,
                height: header.height,
            },
            fps: header.frame_rate.map_or(fps, |r| r.to_f64()),
            live,
            frames: Frames::Y4m(reader, child),
            first: None,
        }
    }

    /// The next picture, or `None` at the end of the input.
    pub fn next_frame(&mut self) -> Result<Option<Image>> {
        if let Some(first) = self.first.take() {
            return Ok(Some(first));
        }
        match &mut self.frames {
            Frames::Synthetic(source) => Ok(Some(source.next_frame().image)),
            Frames::Y4m(reader, _) => reader
                .next_frame()
                .with_context(|| format!("reading '{}'", self.name)),
        }
    }

    /// Reads up to `n` pictures into memory.
    pub fn read_frames(&mut self, n: usize) -> Result<Vec<Image>> {
        let mut frames = Vec::with_capacity(n);
        while frames.len() < n {
            match self.next_frame()? {
                Some(f) => frames.push(f),
                None => break,
            }
        }
        if frames.is_empty() {
            bail!("'{}' has no frames", self.name);
        }
        Ok(frames)
    }
}

/// Opens a video file, saying clearly when it is missing, unreadable or a folder.
fn open_file(spec: &str) -> Result<File> {
    let path = Path::new(spec);
    if path.is_dir() {
        bail!("video '{spec}' is a folder, not a file");
    }
    File::open(path).with_context(|| format!("cannot open video '{spec}'"))
}

/// The error for input `spec` that gave no picture: `why` (which names it), or what ffmpeg
/// said if it decoded the input and failed.
fn not_video(spec: &str, child: Option<FfmpegChild>, why: anyhow::Error) -> anyhow::Error {
    match child.and_then(FfmpegChild::failure) {
        Some(said) => anyhow::anyhow!(
            "ffmpeg could not decode '{spec}' as video (not a video file, or damaged): {said}"
        ),
        None => why,
    }
}

/// Opens live source `live` (named `spec`) through an ffmpeg child process.
fn open_live(spec: &str, live: &LiveSource, size: Size, fps: f64) -> Result<VideoInput> {
    live.check()?;
    if !(fps.is_finite() && fps > 0.0) {
        bail!("--fps {fps}: a live source needs a positive frame rate");
    }
    let mut child = Command::new("ffmpeg")
        .args(live.ffmpeg_args(size, fps))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("cannot run ffmpeg to read '{spec}': install it (scripts/setup --bench)")
        })?;
    let stdout = child.stdout.take().context("ffmpeg has no output pipe")?;
    let child = FfmpegChild {
        child,
        stderr: None,
    };
    // A buffered pipe adds no delay: a read returns what ffmpeg has written so far.
    let reader: Box<dyn Read + Send> = Box::new(BufReader::with_capacity(1 << 20, stdout));
    let reader = match Y4mReader::new(reader) {
        Ok(r) => r,
        Err(e) => {
            drop(child);
            return Err(anyhow::Error::new(e).context(live.hint()));
        }
    };
    Ok(VideoInput::from_y4m(spec, reader, Some(child), fps, true))
}

/// Bytes of ffmpeg's error output kept for messages.
const FFMPEG_STDERR_KEEP: usize = 2048;

/// An ffmpeg child process decoding to Y4M on its standard output; its error output is
/// collected (the last [`FFMPEG_STDERR_KEEP`] bytes) to explain a failure. Stopped when
/// dropped.
struct FfmpegChild {
    child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl FfmpegChild {
    /// Starts `ffmpeg` decoding `path` to Y4M; its standard output, buffered, beside it.
    fn spawn(path: &Path) -> Result<(FfmpegChild, Box<dyn Read + Send>)> {
        if path.is_dir() {
            bail!("video '{}' is a folder, not a file", path.display());
        }
        if !path.exists() {
            bail!("video file '{}' does not exist", path.display());
        }
        std::fs::File::open(path)
            .with_context(|| format!("cannot open video '{}'", path.display()))?;
        let mut child = Command::new("ffmpeg")
            .args(["-v", "error", "-nostdin", "-i"])
            .arg(path)
            .args(["-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot run ffmpeg to read '{}': install it (scripts/setup --bench) or give a .y4m file",
                    path.display()
                )
            })?;
        let stdout = child.stdout.take().context("ffmpeg has no output pipe")?;
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                // Drained to the end, so ffmpeg never blocks on a full pipe; the tail kept.
                let mut kept: Vec<u8> = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > FFMPEG_STDERR_KEEP {
                        kept.drain(..kept.len() - FFMPEG_STDERR_KEEP);
                    }
                }
                String::from_utf8_lossy(&kept).trim().to_string()
            })
        });
        let output = Box::new(BufReader::with_capacity(1 << 20, stdout));
        Ok((FfmpegChild { child, stderr }, output))
    }

    /// What ffmpeg said if it failed (waits for it to end), `None` if it succeeded.
    fn failure(mut self) -> Option<String> {
        let status = self.child.wait().ok()?;
        let said = self
            .stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if status.success() {
            return None;
        }
        let said = said.lines().last().unwrap_or("").to_string();
        Some(match said.is_empty() {
            true => format!("ffmpeg exited with {status}"),
            false => said,
        })
    }
}

impl Drop for FfmpegChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
