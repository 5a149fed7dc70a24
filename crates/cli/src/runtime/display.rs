//! "Display": what the receiver does with a shown frame — write it to a Y4M file or pipe,
//! append the frame's VP8 data to an IVF file, and log it as a CSV line.
//!
//! The IVF file holds the shown frames in the order shown. It plays in any VP8 player as long
//! as each frame was decoded from the previous one's state, which holds except right after
//! loss recovery (a frame decoded from an older state); players then show a damaged picture
//! until the next keyframe. The Y4M output is always exactly what was shown.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::ivf::{IvfHeader, IvfWriter};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{Image, State, StateHash};
use salsify_time::Instant;
use salsify_transport::{DecodeError, FrameDecoder, Vp8Decoder};

use super::csv_log::CsvLog;

/// Where shown frames go. Every output is optional.
#[derive(Debug, Clone, Default)]
pub struct DisplayConfig {
    /// Y4M of the shown pictures; `-` is standard output.
    pub y4m: Option<PathBuf>,
    /// IVF of the shown frames' VP8 data.
    pub ivf: Option<PathBuf>,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Frame rate written in the Y4M header (frames are written as shown). Default 30.
    pub fps: u32,
}

/// A picture the decoder produced, with its VP8 data when an IVF file wants it.
#[derive(Debug, Clone)]
pub struct Picture {
    /// The decoded picture.
    pub image: Arc<Image>,
    /// The VP8 frame (empty unless asked for).
    pub vp8: Vec<u8>,
}

/// The VP8 decoder, keeping each decoded frame's bytes when asked to.
pub struct ShowingDecoder {
    inner: Vp8Decoder,
    keep_bytes: bool,
}

impl ShowingDecoder {
    /// A decoder; `keep_bytes` keeps the VP8 data of each frame.
    pub fn new(keep_bytes: bool) -> Result<Self> {
        Ok(ShowingDecoder {
            inner: Vp8Decoder::new().context("cannot create the VP8 decoder")?,
            keep_bytes,
        })
    }
}

impl FrameDecoder for ShowingDecoder {
    type State = State;
    type Picture = Picture;

    fn decode(&mut self, state: &State, frame: &[u8]) -> Result<(State, Picture), DecodeError> {
        let (next, image) = self.inner.decode(state, frame)?;
        let vp8 = match self.keep_bytes {
            true => frame
                .get(salsify_codec::frame::HEADER_LEN..)
                .unwrap_or(&[])
                .to_vec(),
            false => Vec::new(),
        };
        let image = Arc::new(image);
        Ok((next, Picture { image, vp8 }))
    }

    fn initial_state(&self) -> State {
        self.inner.initial_state()
    }
}

/// One shown frame.
pub struct Shown {
    /// The session's connection id.
    pub session: u16,
    /// Frame number.
    pub frame: u32,
    /// When it was shown.
    pub at: Instant,
    /// The sender's send time of its first fragment (the same clock on one machine).
    pub first_sent_at: Instant,
    /// States it went between.
    pub source: StateHash,
    /// The state it reached.
    pub target: StateHash,
    /// Size in bytes.
    pub bytes: usize,
    /// The picture.
    pub picture: Picture,
}

/// Columns of the receiver's CSV log. `display_us` and `first_sent_us` are µs on the
/// machine's monotonic clock; `delay_us` is their difference (meaningful when sender and
/// receiver share a machine).
pub const RECEIVER_CSV_HEADER: &str =
    "session,frame,display_us,first_sent_us,delay_us,source_state,target_state,bytes";

type Sink = Box<dyn Write + Send>;

/// The open outputs.
pub struct Display {
    config: DisplayConfig,
    y4m: Option<Y4mWriter<Sink>>,
    ivf: Option<IvfWriter<Sink>>,
    log: Option<CsvLog>,
    first_shown: Option<Instant>,
    last_pts: Option<u64>,
    wrong_size: u64,
}

impl Display {
    /// Creates the log now; the video files at the first frame (whose size they take).
    pub fn new(config: DisplayConfig) -> Result<Display> {
        let log = match &config.log {
            Some(path) => Some(CsvLog::create(path, RECEIVER_CSV_HEADER)?),
            None => None,
        };
        Ok(Display {
            config,
            y4m: None,
            ivf: None,
            log,
            first_shown: None,
            last_pts: None,
            wrong_size: 0,
        })
    }

    /// Whether the decoder must keep frame bytes.
    pub fn wants_bytes(&self) -> bool {
        self.config.ivf.is_some()
    }

    /// Shows one frame.
    pub fn show(&mut self, s: &Shown) -> Result<()> {
        if let Some(log) = &mut self.log {
            let delay = s.at.saturating_duration_since(s.first_sent_at).as_micros();
            log.line(format_args!(
                "{},{},{},{},{delay},{},{},{}",
                s.session,
                s.frame,
                s.at.as_micros(),
                s.first_sent_at.as_micros(),
                s.source,
                s.target,
                s.bytes
            ))?;
        }
        self.open_video(&s.picture.image)?;
        let image = &s.picture.image;
        if let Some(w) = &mut self.y4m {
            let h = w.header();
            if (h.width, h.height) != (image.width(), image.height()) {
                self.wrong_size += 1;
                return Ok(());
            }
            w.write_frame(image).context("writing the Y4M output")?;
        }
        if let Some(w) = &mut self.ivf {
            let first = *self.first_shown.get_or_insert(s.at);
            // Millisecond timestamps, strictly increasing as players require.
            let ms = s.at.saturating_duration_since(first).as_millis() as u64;
            let pts = self.last_pts.map_or(ms, |last| ms.max(last + 1));
            self.last_pts = Some(pts);
            w.write_frame(pts, &s.picture.vp8)
                .context("writing the IVF output")?;
        }
        Ok(())
    }

    fn open_video(&mut self, image: &Image) -> Result<()> {
        if self.y4m.is_none() {
            if let Some(path) = &self.config.y4m {
                let fps = Rational::new(self.config.fps.max(1), 1);
                let header = Y4mHeader::new(image.width(), image.height(), fps);
                self.y4m = Some(Y4mWriter::new(sink(path)?, header)?);
            }
        }
        if self.ivf.is_none() {
            if let Some(path) = &self.config.ivf {
                let header = IvfHeader::new(image.width() as u16, image.height() as u16, 1000, 1);
                self.ivf = Some(IvfWriter::new(sink(path)?, header)?);
            }
        }
        Ok(())
    }

    /// Flushes every output.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(w) = self.y4m.take() {
            w.finish().context("finishing the Y4M output")?;
        }
        if let Some(w) = self.ivf.take() {
            w.finish().context("finishing the IVF output")?;
        }
        if let Some(log) = self.log.take() {
            log.finish()?;
        }
        if self.wrong_size > 0 {
            eprintln!(
                "salsify recv: {} frames of another size were not written to the Y4M output",
                self.wrong_size
            );
        }
        Ok(())
    }
}

fn sink(path: &PathBuf) -> Result<Sink> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::new(std::io::stdout())));
    }
    let file = File::create(path).with_context(|| format!("cannot create '{}'", path.display()))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 20, file)))
}
