//! "Display": what the receiver does with a shown frame — write the picture to a Y4M file or
//! pipe and log the frame as a CSV line.
//!
//! A Y4M stream has one picture size, but a scheme with a resolution ladder codes some
//! frames smaller than its source. Every picture is therefore written at one size — the one
//! configured (the source's, when known), else the first picture's — scaling the others to
//! it, so the file always has one picture per shown frame and can be scored frame by frame
//! against the source.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{scale, Image};
use salsify_endpoint::Displayed;
use salsify_time::Instant;

use crate::csv_log::ReceiverLog;

/// Where shown frames go. Every output is optional.
#[derive(Debug, Clone, Default)]
pub struct DisplayConfig {
    /// Y4M of the shown pictures; `-` is standard output.
    pub y4m: Option<PathBuf>,
    /// The Y4M picture size; `None`: the first shown picture's.
    pub size: Option<(u32, u32)>,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Frame rate written in the Y4M header (frames are written as shown). Default 30.
    pub fps: u32,
}

type Sink = Box<dyn Write + Send>;

/// The open outputs.
pub struct Display {
    config: DisplayConfig,
    y4m: Option<Y4mWriter<Sink>>,
    log: Option<ReceiverLog>,
    /// Pictures scaled to the output size.
    scaled: u64,
}

impl Display {
    /// Creates the log now; the video file at the first frame (whose size it may take).
    pub fn new(config: DisplayConfig) -> Result<Display> {
        let log = match &config.log {
            Some(path) => Some(ReceiverLog::create(path)?),
            None => None,
        };
        Ok(Display {
            config,
            y4m: None,
            log,
            scaled: 0,
        })
    }

    /// Shows frame `d` of receiver session `session` at `at`.
    pub fn show(&mut self, session: u32, at: Instant, d: &Displayed) -> Result<()> {
        if let Some(log) = &mut self.log {
            log.shown(session, at, d)?;
        }
        if self.config.y4m.is_none() {
            return Ok(());
        }
        let picture = &d.picture;
        let w = match &mut self.y4m {
            Some(w) => w,
            None => self.y4m.insert(open_y4m(&self.config, picture)?),
        };
        let h = w.header();
        let size = (h.width, h.height);
        if size == (picture.width(), picture.height()) {
            w.write_frame(picture)
        } else {
            self.scaled += 1;
            let scaled = scale(picture, size.0, size.1).context("scaling a shown picture")?;
            w.write_frame(&scaled)
        }
        .context("writing the Y4M output")
    }

    /// Flushes every output.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(w) = self.y4m.take() {
            w.finish().context("finishing the Y4M output")?;
        }
        if let Some(log) = self.log.take() {
            log.finish()?;
        }
        if self.scaled > 0 {
            eprintln!(
                "salsify recv: {} pictures coded at another size were scaled for the Y4M output",
                self.scaled
            );
        }
        Ok(())
    }
}

fn open_y4m(config: &DisplayConfig, first: &Image) -> Result<Y4mWriter<Sink>> {
    let path = config.y4m.as_ref().expect("only called with a Y4M output"); // checked by show
    let (width, height) = config.size.unwrap_or((first.width(), first.height()));
    let fps = Rational::new(config.fps.max(1), 1);
    let header = Y4mHeader::new(width, height, fps);
    Ok(Y4mWriter::new(sink(path)?, header)?)
}

fn sink(path: &PathBuf) -> Result<Sink> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::new(std::io::stdout())));
    }
    let file = File::create(path).with_context(|| format!("cannot create '{}'", path.display()))?;
    Ok(Box::new(BufWriter::with_capacity(1 << 20, file)))
}
