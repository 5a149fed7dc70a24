//! "Display": what the receiver does with a shown frame — hand the picture to a live view (a
//! window, [`LiveView`]), write it to a Y4M file or pipe, append the frame's VP8 data to an
//! IVF file, and log the frame as a CSV line.
//!
//! The live view comes first, before any file is written, and must not block: it is a
//! hand-over, not a jitter buffer (`salsify-window` keeps only the newest picture).
//!
//! A Y4M stream has one picture size, but a scheme with a resolution ladder codes some
//! frames smaller than its source. Every picture is therefore written at one size — the one
//! configured (the source's, when known), else the first picture's — scaling the others to
//! it, so the file always has one picture per shown frame and can be scored frame by frame
//! against the source.
//!
//! The IVF file holds the shown frames' VP8 data ([`Displayed::coded`]) in the order shown,
//! one record per shown frame, timestamped in milliseconds of display time, across sessions
//! (each starts with a keyframe). It plays in ffplay or vpxdec. Frames are written as they
//! were coded: a resolution ladder's keyframe of another size is written at that size, and
//! VP8 decoders follow it, though the IVF header names only the first frame's size. What a
//! player shows matches the receiver as long as each frame was decoded from the previous
//! one's state, which holds except right after loss recovery (Salsify decoding a frame from
//! an older state, a baseline decoding past a lost frame); a player may then show damaged
//! pictures until the next keyframe. The Y4M output is always exactly what was shown.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::ivf::{IvfHeader, IvfWriter};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{scale, CodecError, Image};
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
    /// IVF of the shown frames' VP8 data, as coded (plays in ffplay / vpxdec); `-` is
    /// standard output.
    pub ivf: Option<PathBuf>,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Frame rate written in the Y4M header (frames are written as shown). Default 30.
    pub fps: u32,
    /// A live view every shown picture is handed to as it is shown (a window).
    pub view: Option<LiveView>,
}

/// Something that shows pictures live (a window). `show` is called on the receiver's thread
/// for every shown picture and must return at once: a view that falls behind drops pictures,
/// it never delays the receiver.
#[derive(Clone)]
pub struct LiveView(Arc<dyn Fn(Arc<Image>) + Send + Sync>);

impl LiveView {
    /// A view that hands each picture to `show`.
    pub fn new(show: impl Fn(Arc<Image>) + Send + Sync + 'static) -> LiveView {
        LiveView(Arc::new(show))
    }

    /// Hands `picture` over.
    pub fn show(&self, picture: Arc<Image>) {
        (self.0)(picture)
    }
}

impl std::fmt::Debug for LiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveView")
    }
}

type Sink = Box<dyn Write + Send>;

/// The open outputs.
pub struct Display {
    config: DisplayConfig,
    y4m: Option<Y4mWriter<Sink>>,
    ivf: Option<Ivf>,
    log: Option<ReceiverLog>,
    /// Pictures scaled to the output size.
    scaled: u64,
}

/// The open IVF output.
struct Ivf {
    writer: IvfOut,
    /// When the first frame was shown: time 0.
    first: Instant,
    /// The last timestamp written, ms.
    last_pts: u64,
    /// Frames coded at another size than the header's.
    resized: u64,
}

/// An IVF writer on a file (whose header gets the frame count at the end) or a pipe.
enum IvfOut {
    File(IvfWriter<BufWriter<File>>),
    Pipe(IvfWriter<Sink>),
}

impl IvfOut {
    fn create(path: &PathBuf, header: IvfHeader) -> Result<IvfOut> {
        Ok(match path.as_os_str() == "-" {
            true => IvfOut::Pipe(IvfWriter::new(sink(path)?, header)?),
            false => IvfOut::File(IvfWriter::new(create(path)?, header)?),
        })
    }

    fn header(&self) -> &IvfHeader {
        match self {
            IvfOut::File(w) => w.header(),
            IvfOut::Pipe(w) => w.header(),
        }
    }

    fn write_frame(&mut self, pts: u64, data: &[u8]) -> Result<(), CodecError> {
        match self {
            IvfOut::File(w) => w.write_frame(pts, data),
            IvfOut::Pipe(w) => w.write_frame(pts, data),
        }
    }

    fn finish(self) -> Result<(), CodecError> {
        match self {
            IvfOut::File(w) => w.finish_seekable().map(drop),
            IvfOut::Pipe(w) => w.finish().map(drop),
        }
    }
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
            ivf: None,
            log,
            scaled: 0,
        })
    }

    /// Shows frame `d` of receiver session `session` at `at`: the live view first (a copy
    /// of the picture, about 0.2 ms at 720p), then the files.
    pub fn show(&mut self, session: u32, at: Instant, d: &Displayed) -> Result<()> {
        if let Some(view) = &self.config.view {
            view.show(Arc::new(d.picture.clone()));
        }
        if let Some(log) = &mut self.log {
            log.shown(session, at, d)?;
        }
        if self.config.ivf.is_some() {
            self.write_ivf(at, d)?;
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

    /// Appends `d`'s VP8 data to the IVF output (opened at the first frame, whose coded size
    /// its header takes).
    fn write_ivf(&mut self, at: Instant, d: &Displayed) -> Result<()> {
        let size = (d.picture.width(), d.picture.height());
        let ivf = match &mut self.ivf {
            Some(ivf) => ivf,
            None => {
                let path = self
                    .config
                    .ivf
                    .as_ref()
                    .expect("only called with an IVF output");
                let (w, h) = (u16::try_from(size.0), u16::try_from(size.1));
                let (Ok(w), Ok(h)) = (w, h) else {
                    anyhow::bail!("a {}x{} picture is too large for IVF", size.0, size.1);
                };
                let writer = IvfOut::create(path, IvfHeader::new(w, h, 1000, 1))?;
                self.ivf.insert(Ivf {
                    writer,
                    first: at,
                    last_pts: 0,
                    resized: 0,
                })
            }
        };
        let header = ivf.writer.header();
        if (u32::from(header.width), u32::from(header.height)) != size {
            ivf.resized += 1;
        }
        // Millisecond timestamps, strictly increasing as players require.
        let ms =
            u64::try_from(at.saturating_duration_since(ivf.first).as_millis()).unwrap_or(u64::MAX);
        let pts = match ivf.writer.header().frame_count {
            0 => ms,
            _ => ms.max(ivf.last_pts + 1),
        };
        ivf.last_pts = pts;
        ivf.writer
            .write_frame(pts, &d.coded)
            .context("writing the IVF output")
    }

    /// Flushes every output.
    pub fn finish(&mut self) -> Result<()> {
        if let Some(w) = self.y4m.take() {
            w.finish().context("finishing the Y4M output")?;
        }
        if let Some(ivf) = self.ivf.take() {
            ivf.writer.finish().context("finishing the IVF output")?;
            if ivf.resized > 0 {
                eprintln!(
                    "salsify recv: {} frames in the IVF output are coded at another size than its header's (VP8 players follow the keyframes that change it)",
                    ivf.resized
                );
            }
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
    Ok(Box::new(create(path)?))
}

fn create(path: &PathBuf) -> Result<BufWriter<File>> {
    let file = File::create(path).with_context(|| format!("cannot create '{}'", path.display()))?;
    Ok(BufWriter::with_capacity(1 << 20, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::frame::parse_vp8_header;
    use salsify_codec::{CbrConfig, CbrEncoder, IvfReader, PlainDecoder, SyntheticSource};

    /// The IVF output has every shown frame as coded, in order, with strictly increasing
    /// timestamps and the frame count in its header; a resolution ladder's smaller keyframe is
    /// written at its own size and a player follows it.
    #[test]
    fn ivf_holds_every_shown_frame_as_coded_across_a_size_change() {
        let dir = std::env::temp_dir().join(format!("salsify-display-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.ivf");
        let mut display = Display::new(DisplayConfig {
            ivf: Some(path.clone()),
            ..DisplayConfig::default()
        })
        .unwrap();
        let video = SyntheticSource::new(160, 96, 30, 5).unwrap();
        let mut sent = vec![];
        for (rung, size) in [(160, 96), (80, 48)].into_iter().enumerate() {
            let mut enc = CbrEncoder::new(size.0, size.1, CbrConfig::default()).unwrap();
            for i in 0..3u64 {
                let n = rung as u64 * 3 + i;
                let picture = scale(&video.frame(n), size.0, size.1).unwrap();
                let f = enc.encode(&picture, n * 33_333, i == 0).unwrap().unwrap();
                // Two frames shown in the same millisecond still get distinct timestamps.
                let at = Instant::from_millis(n.min(4) * 33);
                let d = Displayed {
                    frame: n as u32,
                    at,
                    picture,
                    bytes: f.data.len(),
                    coded: f.data.clone().into(),
                    keyframe: f.keyframe,
                    first_sent_at: None,
                    states: None,
                };
                display.show(1, at, &d).unwrap();
                sent.push((f.data, size));
            }
        }
        display.finish().unwrap();

        let reader = IvfReader::new(File::open(&path).unwrap()).unwrap();
        let header = *reader.header();
        assert_eq!(
            (header.width, header.height, header.frame_count),
            (160, 96, 6)
        );
        let frames: Vec<_> = reader.map(Result::unwrap).collect();
        let pts: Vec<u64> = frames.iter().map(|f| f.pts).collect();
        assert_eq!(pts, [0, 33, 66, 99, 132, 133]);
        let mut decoder = None;
        for (f, (data, size)) in frames.iter().zip(&sent) {
            assert_eq!(&f.data, data);
            if let Some(s) = parse_vp8_header(&f.data).unwrap().keyframe_size {
                decoder = Some(PlainDecoder::new(s.0, s.1).unwrap());
            }
            let picture = decoder.as_mut().unwrap().decode(&f.data).unwrap();
            assert_eq!((picture.width(), picture.height()), *size);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
