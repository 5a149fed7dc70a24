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
}

enum Frames {
    Synthetic(SyntheticSource),
    Y4m(Y4mReader<Box<dyn Read + Send>>, Option<Child>),
}

impl VideoInput {
    /// Opens `spec`: `synthetic` (the built-in source at `size` and `fps`), `-` (Y4M on
    /// standard input), a `.y4m` file, `x11grab:DISPLAY` / `v4l2:DEVICE` (a screen or camera
    /// grabbed by ffmpeg at `size` and `fps`), or any other file through ffmpeg.
    pub fn open(spec: &str, size: Size, fps: f64) -> Result<VideoInput> {
        if spec == "synthetic" {
            if fps.fract() != 0.0 || fps < 1.0 {
                bail!("the synthetic source needs a whole number of frames per second, not {fps}");
            }
            let source = SyntheticSource::new(size.width, size.height, fps as u32, 1)
                .context("synthetic source")?;
            return Ok(VideoInput {
                name: format!("synthetic {size} at {fps} fps"),
                size,
                fps,
                live: false,
                frames: Frames::Synthetic(source),
            });
        }
        if let Some(live) = LiveSource::parse(spec) {
            return open_live(spec, &live?, size, fps);
        }
        let (reader, child): (Box<dyn Read + Send>, _) = if spec == "-" {
            (Box::new(std::io::stdin()), None)
        } else if spec.ends_with(".y4m") {
            let file = File::open(spec).with_context(|| format!("cannot open video '{spec}'"))?;
            (Box::new(BufReader::with_capacity(1 << 20, file)), None)
        } else {
            let mut child = spawn_ffmpeg(Path::new(spec))?;
            let stdout = child.stdout.take().context("ffmpeg has no output pipe")?;
            (
                Box::new(BufReader::with_capacity(1 << 20, stdout)),
                Some(child),
            )
        };
        let reader = Y4mReader::new(reader).with_context(|| format!("reading '{spec}'"))?;
        Ok(VideoInput::from_y4m(
            spec,
            reader,
            child,
            DEFAULT_Y4M_FPS,
            false,
        ))
    }

    /// An input reading `reader` (fed by `child`, if any); `fps` when the header names none.
    fn from_y4m(
        spec: &str,
        reader: Y4mReader<Box<dyn Read + Send>>,
        child: Option<Child>,
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
        }
    }

    /// The next picture, or `None` at the end of the input.
    pub fn next_frame(&mut self) -> Result<Option<Image>> {
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

impl Drop for VideoInput {
    fn drop(&mut self) {
        if let Frames::Y4m(_, Some(child)) = &mut self.frames {
            let _ = child.kill();
            let _ = child.wait();
        }
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
    // A buffered pipe adds no delay: a read returns what ffmpeg has written so far.
    let reader: Box<dyn Read + Send> = Box::new(BufReader::with_capacity(1 << 20, stdout));
    let reader = match Y4mReader::new(reader) {
        Ok(r) => r,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(anyhow::Error::new(e).context(live.hint()));
        }
    };
    Ok(VideoInput::from_y4m(spec, reader, Some(child), fps, true))
}

/// Starts `ffmpeg` decoding `path` to Y4M on its standard output.
fn spawn_ffmpeg(path: &Path) -> Result<Child> {
    if !path.exists() {
        bail!("video file '{}' does not exist", path.display());
    }
    Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "cannot run ffmpeg to read '{}': install it (scripts/setup --bench) or give a .y4m file",
                path.display()
            )
        })
}
