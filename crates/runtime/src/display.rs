//! "Display": what the receiver does with a shown frame — hand the picture to a live view (a
//! window, [`LiveView`]), write it to a Y4M file or pipe, append the frame's coded data (VP8
//! or AV1) to an IVF file, and log the frame as a CSV line.
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
//! Every output file is created when the display is (before any datagram arrives), so a bad
//! path is an error at once, and two outputs naming one file are refused; the video headers
//! are written at the first frame (whose size they may take). A file created for a run that
//! showed nothing is removed again.
//!
//! The IVF file holds the shown frames' coded data ([`Displayed::coded`]: a VP8 frame, or an
//! AV1 temporal unit as libaom wrote it, without Salsify's state hashes) in the order shown,
//! one record per shown frame, timestamped in ticks of 1/fps of display time (the header's
//! timebase: `fps` is the configured rate), across sessions (each starts with a keyframe).
//! The header's length field gets the duration in ticks, as ffmpeg reads it. The header's
//! fourcc (`VP80` or `AV01`) is the first shown frame's codec, learnt from the stream
//! ([`FunctionalCodec::of_plain_frame`]); an IVF file holds one codec, so frames of another
//! (a later session of a call on the other codec) are left out and counted. It plays in
//! ffplay, vpxdec (VP8) or aomdec (AV1). Frames are written as they were coded: a
//! resolution ladder's keyframe of another size is written at that size, and VP8 and AV1
//! decoders follow it, though the IVF header names only the first frame's size. What a
//! player shows matches the receiver as long as each frame was decoded from the previous
//! one's state, which holds except right after loss recovery (Salsify decoding a frame from
//! an older state, a baseline decoding past a lost frame); a player may then show damaged
//! pictures until the next keyframe. The Y4M output is always exactly what was shown.
//!
//! The files are written by a recorder thread, never on the receiver's own: a shown frame is
//! handed over with the time it was shown, and the receiver goes on. Recording is the
//! testbed's instrument and must not share the path it measures: scaling a picture coded
//! smaller up to a 1280x720 recording takes about 6 ms on an idle core (a third of a 60 fps
//! frame interval), and a write waits on the disk. The hand-over holds at most
//! [`RECORDER_BACKLOG`] frames; a recorder that stays further behind slows the receiver
//! rather than hold unbounded memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use salsify_codec::ivf::{IvfHeader, IvfWriter};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{scale, CodecError, FunctionalCodec, Image};
use salsify_endpoint::Displayed;
use salsify_time::Instant;

use crate::csv_log::ReceiverLog;

/// Where shown frames go. Every output is optional.
#[derive(Debug, Clone)]
pub struct DisplayConfig {
    /// Y4M of the shown pictures; `-` is standard output.
    pub y4m: Option<PathBuf>,
    /// The Y4M picture size; `None`: the first shown picture's.
    pub size: Option<(u32, u32)>,
    /// IVF of the shown frames' coded data, VP8 or AV1 as the stream is (plays in ffplay,
    /// vpxdec, aomdec); `-` is standard output.
    pub ivf: Option<PathBuf>,
    /// Per-frame CSV log.
    pub log: Option<PathBuf>,
    /// Frame rate written in the Y4M header (frames are written as shown). Default 30.
    pub fps: u32,
    /// A live view every shown picture is handed to as it is shown (a window).
    pub view: Option<LiveView>,
}

impl Default for DisplayConfig {
    fn default() -> Self {
        DisplayConfig {
            y4m: None,
            size: None,
            ivf: None,
            log: None,
            fps: 30,
            view: None,
        }
    }
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

/// Shown frames the recorder may be behind by before [`Display::show`] waits for it (4 s at
/// 60 fps; at most about 330 MB of 1280x720 pictures).
pub const RECORDER_BACKLOG: usize = 240;

/// Where shown frames go: the live view at once, the files through the recorder thread.
pub struct Display {
    view: Option<LiveView>,
    /// `None` when no file is written.
    recorder: Option<Recorder>,
    /// Files this display created (they did not exist), removed if nothing was shown.
    created: Vec<PathBuf>,
    /// Frames shown.
    shown: u64,
}

/// A shown frame on its way to the files.
struct Record {
    session: u32,
    at: Instant,
    frame: Displayed,
}

/// The recorder thread and the hand-over to it.
struct Recorder {
    queue: Option<SyncSender<Record>>,
    thread: Option<JoinHandle<Result<Outputs>>>,
}

impl Recorder {
    fn start(mut outputs: Outputs) -> Result<Recorder> {
        let (queue, records) = mpsc::sync_channel::<Record>(RECORDER_BACKLOG);
        let thread = std::thread::Builder::new()
            .name("salsify-recorder".into())
            .spawn(move || {
                for r in records {
                    outputs.write(r.session, r.at, &r.frame)?;
                }
                Ok(outputs)
            })
            .context("cannot start the recorder thread")?;
        Ok(Recorder {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    /// Hands `record` over; if the recorder has stopped, its error.
    fn record(&mut self, record: Record) -> Result<()> {
        let queue = self.queue.as_ref().context("the recorder has stopped")?;
        if queue.send(record).is_ok() {
            return Ok(());
        }
        match self.stop() {
            Err(e) => Err(e),
            Ok(_) => Err(anyhow::anyhow!("the recorder stopped early")),
        }
    }

    /// Lets the recorder write what it holds, and takes its outputs back.
    fn stop(&mut self) -> Result<Outputs> {
        self.queue = None;
        let thread = self.thread.take().context("the recorder has stopped")?;
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("the recorder thread panicked"))?
    }
}

/// The open files, written by the recorder.
struct Outputs {
    config: DisplayConfig,
    /// The Y4M output, created; its header is written at the first frame.
    y4m_sink: Option<Sink>,
    y4m: Option<Y4mWriter<Sink>>,
    /// The IVF output, created; its header is written at the first frame.
    ivf_sink: Option<IvfSink>,
    ivf: Option<Ivf>,
    log: Option<ReceiverLog>,
    /// Pictures scaled to the output size.
    scaled: u64,
}

/// A created IVF output waiting for its first frame.
enum IvfSink {
    File(BufWriter<File>),
    Pipe(Sink),
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
    /// Frames of another codec than the header's, left out.
    other_codec: u64,
}

/// An IVF writer on a file (whose header gets the frame count at the end) or a pipe.
enum IvfOut {
    File(IvfWriter<BufWriter<File>>),
    Pipe(IvfWriter<Sink>),
}

impl IvfOut {
    fn start(sink: IvfSink, header: IvfHeader) -> Result<IvfOut> {
        Ok(match sink {
            IvfSink::Pipe(out) => IvfOut::Pipe(IvfWriter::new(out, header)?),
            IvfSink::File(out) => IvfOut::File(IvfWriter::new(out, header)?),
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

    /// Flushes; a file's header gets `length`, the duration in ticks.
    fn finish(self, length: u64) -> Result<(), CodecError> {
        match self {
            IvfOut::File(w) => w
                .finish_seekable_with_length(u32::try_from(length).unwrap_or(u32::MAX))
                .map(drop),
            IvfOut::Pipe(w) => w.finish().map(drop),
        }
    }
}

impl Display {
    /// Creates every output file now (two outputs naming one file are refused); the video
    /// headers are written at the first frame (whose size they may take).
    pub fn new(config: DisplayConfig) -> Result<Display> {
        Display::with_y4m_sink(config, None)
    }

    /// As [`Display::new`], with `y4m` (if given) as the Y4M output instead of the file the
    /// configuration names.
    fn with_y4m_sink(config: DisplayConfig, y4m: Option<Sink>) -> Result<Display> {
        let named = [
            ("the Y4M output", config.y4m.as_deref()),
            ("the IVF output", config.ivf.as_deref()),
            ("the log", config.log.as_deref()),
        ];
        check_distinct(&named)?;
        let mut display = Display {
            view: config.view.clone(),
            recorder: None,
            created: Vec::new(),
            shown: 0,
        };
        let mut note = |path: &Path| {
            if path.as_os_str() != "-" && !path.exists() {
                display.created.push(path.to_path_buf());
            }
        };
        named.iter().filter_map(|(_, p)| *p).for_each(&mut note);
        let mut outputs = Outputs {
            config,
            y4m_sink: y4m,
            y4m: None,
            ivf_sink: None,
            ivf: None,
            log: None,
            scaled: 0,
        };
        // On an error, what was created so far is removed (the display is dropped unused).
        let opened = (|| -> Result<bool> {
            let c = &outputs.config;
            if let Some(path) = &c.log {
                outputs.log = Some(ReceiverLog::create(path)?);
            }
            if let Some(path) = &c.ivf {
                outputs.ivf_sink = Some(match path.as_os_str() == "-" {
                    true => IvfSink::Pipe(sink(path)?),
                    false => IvfSink::File(create(path)?),
                });
            }
            if let (Some(path), None) = (&c.y4m, &outputs.y4m_sink) {
                outputs.y4m_sink = Some(sink(path)?);
            }
            Ok(outputs.log.is_some() || outputs.ivf_sink.is_some() || outputs.y4m_sink.is_some())
        })();
        match opened {
            Ok(true) => match Recorder::start(outputs) {
                Ok(recorder) => display.recorder = Some(recorder),
                Err(e) => {
                    display.remove_created();
                    return Err(e);
                }
            },
            Ok(false) => {}
            Err(e) => {
                drop(outputs);
                display.remove_created();
                return Err(e);
            }
        }
        Ok(display)
    }

    /// Removes the files this display created (once the recorder has closed them).
    fn remove_created(&mut self) {
        for path in self.created.drain(..) {
            if path.is_file() {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// Frames shown so far.
    pub fn shown(&self) -> u64 {
        self.shown
    }

    /// Shows pictures on `view` from now on.
    pub fn set_view(&mut self, view: Option<LiveView>) {
        self.view = view;
    }

    /// Shows frame `d` of receiver session `session` at `at`: the live view first (a copy
    /// of the picture, about 0.2 ms at 720p), then a copy to the recorder, which writes the
    /// files on its own thread. An error is the recorder's, if it has stopped.
    pub fn show(&mut self, session: u32, at: Instant, d: &Displayed) -> Result<()> {
        self.shown += 1;
        if let Some(view) = &self.view {
            view.show(Arc::new(d.picture.clone()));
        }
        match &mut self.recorder {
            Some(recorder) => recorder.record(Record {
                session,
                at,
                frame: d.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Waits for the recorder to write every frame shown, and flushes every output; a run
    /// that showed nothing leaves no file.
    pub fn finish(&mut self) -> Result<()> {
        let finished = match self.recorder.take() {
            Some(mut recorder) => recorder
                .stop()
                .and_then(|mut outputs| outputs.finish(self.shown)),
            None => Ok(()),
        };
        if self.shown == 0 {
            self.remove_created();
        }
        finished
    }
}

/// A display dropped before it showed anything (an error before the first frame) removes
/// the files it created, as [`Display::finish`] does; one dropped unfinished still lets its
/// recorder write what it was handed.
impl Drop for Display {
    fn drop(&mut self) {
        if let Some(mut recorder) = self.recorder.take() {
            let _ = recorder.stop();
        }
        if self.shown == 0 {
            self.remove_created();
        }
    }
}

/// ` 'PATH'` for an output file, nothing for standard output (`-`) or none.
fn named(path: &Option<std::path::PathBuf>) -> String {
    match path {
        Some(p) if p.as_os_str() != "-" => format!(" '{}'", p.display()),
        _ => String::new(),
    }
}

impl Outputs {
    /// Writes frame `d` of session `session`, shown at `at`, to every output.
    fn write(&mut self, session: u32, at: Instant, d: &Displayed) -> Result<()> {
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
            None => {
                let out = self.y4m_sink.take().context("the Y4M output is gone")?;
                self.y4m.insert(open_y4m(out, &self.config, picture)?)
            }
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
        .with_context(|| format!("writing the Y4M output{}", named(&self.config.y4m)))
    }

    /// Appends `d`'s coded data to the IVF output (opened at the first frame, whose coded
    /// size and codec its header takes); a frame of another codec is left out.
    fn write_ivf(&mut self, at: Instant, d: &Displayed) -> Result<()> {
        let size = (d.picture.width(), d.picture.height());
        let codec = FunctionalCodec::of_plain_frame(&d.coded);
        let ivf = match &mut self.ivf {
            Some(ivf) => ivf,
            None => {
                let out = self.ivf_sink.take().context("the IVF output is gone")?;
                let (w, h) = (u16::try_from(size.0), u16::try_from(size.1));
                let (Ok(w), Ok(h)) = (w, h) else {
                    anyhow::bail!("a {}x{} picture is too large for IVF", size.0, size.1);
                };
                let header = IvfHeader {
                    codec,
                    ..IvfHeader::new(w, h, self.config.fps.max(1), 1)
                };
                self.ivf.insert(Ivf {
                    writer: IvfOut::start(out, header)?,
                    first: at,
                    last_pts: 0,
                    resized: 0,
                    other_codec: 0,
                })
            }
        };
        let header = ivf.writer.header();
        if header.codec != codec {
            ivf.other_codec += 1;
            return Ok(());
        }
        if (u32::from(header.width), u32::from(header.height)) != size {
            ivf.resized += 1;
        }
        // Ticks of 1/fps of display time, strictly increasing as players require.
        let fps = u128::from(self.config.fps.max(1));
        let elapsed = at.saturating_duration_since(ivf.first).as_micros();
        let ticks = u64::try_from((elapsed * fps + 500_000) / 1_000_000).unwrap_or(u64::MAX);
        let pts = match ivf.writer.header().frame_count {
            0 => ticks,
            _ => ticks.max(ivf.last_pts + 1),
        };
        ivf.last_pts = pts;
        ivf.writer
            .write_frame(pts, &d.coded)
            .with_context(|| format!("writing the IVF output{}", named(&self.config.ivf)))
    }

    /// Flushes every output; `shown` frames were shown.
    fn finish(&mut self, shown: u64) -> Result<()> {
        if let Some(w) = self.y4m.take() {
            w.finish().context("finishing the Y4M output")?;
        }
        if shown == 0 {
            // Nothing to keep (the display removes the files): headerless files would not
            // even play.
            if let Some(log) = self.log.take() {
                log.finish()?;
            }
            if let Some(mut out) = self.y4m_sink.take() {
                out.flush().context("finishing the Y4M output")?;
            }
            return Ok(());
        }
        if let Some(ivf) = self.ivf.take() {
            let length = ivf.last_pts + 1;
            let codec = ivf.writer.header().codec;
            ivf.writer
                .finish(length)
                .context("finishing the IVF output")?;
            if ivf.resized > 0 {
                eprintln!(
                    "salsify recv: {} frames in the IVF output are coded at another size than its header's (players follow the keyframes that change it)",
                    ivf.resized
                );
            }
            if ivf.other_codec > 0 {
                eprintln!(
                    "salsify recv: {} frames of another codec than the IVF output's {} were left out of it (an IVF file holds one codec)",
                    ivf.other_codec, codec
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

fn open_y4m(out: Sink, config: &DisplayConfig, first: &Image) -> Result<Y4mWriter<Sink>> {
    let (width, height) = config.size.unwrap_or((first.width(), first.height()));
    let fps = Rational::new(config.fps.max(1), 1);
    let header = Y4mHeader::new(width, height, fps);
    Ok(Y4mWriter::new(out, header)?)
}

/// Refuses an output that is a symbolic link, and two of `outputs` (what, path) that name
/// one file (`-`, standard output, may be named once): the same device and inode, whatever
/// the names ([`salsify_codec::output::same_file`]).
pub fn check_distinct(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let given: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|(what, path)| path.map(|p| (*what, p)))
        .collect();
    for (what, path) in &given {
        salsify_codec::output::check_not_link(path).with_context(|| what.to_string())?;
    }
    for (i, (a, pa)) in given.iter().enumerate() {
        for (b, pb) in &given[i + 1..] {
            let same = if pa.as_os_str() == "-" || pb.as_os_str() == "-" {
                pa == pb
            } else {
                salsify_codec::output::same_file(pa, pb)
            };
            if same {
                anyhow::bail!(
                    "{a} and {b} are both '{}': give each its own file",
                    pb.display()
                );
            }
        }
    }
    Ok(())
}

fn sink(path: &Path) -> Result<Sink> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::new(std::io::stdout())));
    }
    Ok(Box::new(create(path)?))
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    if path.is_dir() {
        anyhow::bail!("cannot create '{}': it is a folder", path.display());
    }
    let file = salsify_codec::output::create(path)
        .with_context(|| format!("cannot create '{}'", path.display()))?;
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
        // Ticks of 1/30 s: 0, 33, 66, 99, 132 and 132 ms.
        assert_eq!(pts, [0, 1, 2, 3, 4, 5]);
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

    /// The IVF header names the codec of the first frame shown (learnt from its bytes: an
    /// AV1 temporal unit starts with a temporal delimiter), and frames of the other codec,
    /// which an IVF file cannot hold beside it, are left out.
    #[test]
    fn ivf_names_the_streams_codec_and_holds_only_it() {
        let dir = temp("codec");
        let path = dir.join("av1.ivf");
        let mut display = Display::new(DisplayConfig {
            ivf: Some(path.clone()),
            ..DisplayConfig::default()
        })
        .unwrap();
        let av1 = |n: u8| vec![0x12, 0x00, 0x32, 0x01, n];
        let vp8 = [0x50u8, 0x01, 0x00, 0x9d];
        for (n, data) in [av1(0), av1(1), vp8.to_vec(), av1(3)].iter().enumerate() {
            let at = Instant::from_millis(n as u64 * 33);
            display
                .show(1, at, &displayed(n as u32, at, data, n == 0))
                .unwrap();
        }
        display.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[8..12], b"AV01");
        let reader = IvfReader::new(&bytes[..]).unwrap();
        assert_eq!(reader.header().codec, FunctionalCodec::Av1);
        let frames: Vec<Vec<u8>> = reader.map(|f| f.unwrap().data).collect();
        assert_eq!(frames, [av1(0), av1(1), av1(3)]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn displayed(n: u32, at: Instant, data: &[u8], keyframe: bool) -> Displayed {
        Displayed {
            frame: n,
            at,
            picture: Image::new(64, 48).unwrap(),
            bytes: data.len(),
            coded: data.to_vec().into(),
            keyframe,
            first_sent_at: None,
            states: None,
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("salsify-display-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The IVF header's timebase is the frame rate, and its length field (what ffmpeg reads
    /// as the duration) covers the time frames were shown over, gaps included: frames shown
    /// at 0, 0.1 and 1.0 s at 30 fps make a 31-tick (1.03 s) stream, not 3 ms.
    #[test]
    fn ivf_header_says_the_frame_rate_and_the_shown_duration() {
        let dir = temp("rate");
        let path = dir.join("out.ivf");
        let mut display = Display::new(DisplayConfig {
            ivf: Some(path.clone()),
            fps: 30,
            ..DisplayConfig::default()
        })
        .unwrap();
        let mut enc = CbrEncoder::new(64, 48, CbrConfig::default()).unwrap();
        let video = SyntheticSource::new(64, 48, 30, 5).unwrap();
        for (n, ms) in [0u64, 100, 1000].into_iter().enumerate() {
            let f = enc
                .encode(&video.frame(n as u64), ms * 1000, n == 0)
                .unwrap()
                .unwrap();
            let d = displayed(n as u32, Instant::from_millis(ms), &f.data, f.keyframe);
            display.show(1, Instant::from_millis(ms), &d).unwrap();
        }
        display.finish().unwrap();
        let reader = IvfReader::new(File::open(&path).unwrap()).unwrap();
        let h = *reader.header();
        assert_eq!((h.rate, h.scale), (30, 1));
        let pts: Vec<u64> = reader.map(|f| f.unwrap().pts).collect();
        assert_eq!(pts, [0, 3, 30]);
        let seconds = f64::from(h.frame_count) * f64::from(h.scale) / f64::from(h.rate);
        assert!((seconds - 1.0).abs() <= 1.0 / 30.0 + 1e-9, "{seconds} s");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A Y4M output that writes nothing until `open` is set (waiting up to 10 s), and counts
    /// the writes that found it still closed.
    struct GatedSink {
        open: Arc<std::sync::atomic::AtomicBool>,
        early: Arc<std::sync::atomic::AtomicU64>,
        bytes: Arc<std::sync::atomic::AtomicU64>,
    }

    impl Write for GatedSink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            use std::sync::atomic::Ordering::SeqCst;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !self.open.load(SeqCst) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if !self.open.load(SeqCst) {
                self.early.fetch_add(1, SeqCst);
            }
            self.bytes.fetch_add(buf.len() as u64, SeqCst);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Showing never waits for the files: with the Y4M output stuck, frames are still shown
    /// (each handed to the recorder), and once it moves every picture is written, scaled to
    /// the output's size, before `finish` returns. Written on the receiver's thread, the
    /// first `show` would wait for the stuck output and find it closed.
    #[test]
    fn showing_never_waits_for_a_slow_output() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
        let dir = temp("gated");
        let sink = GatedSink {
            open: Arc::new(AtomicBool::new(false)),
            early: Arc::new(AtomicU64::new(0)),
            bytes: Arc::new(AtomicU64::new(0)),
        };
        let (open, early, bytes) = (sink.open.clone(), sink.early.clone(), sink.bytes.clone());
        let mut display = Display::with_y4m_sink(
            DisplayConfig {
                y4m: Some(dir.join("shown.y4m")),
                size: Some((64, 48)),
                ..DisplayConfig::default()
            },
            Some(Box::new(sink)),
        )
        .unwrap();
        for n in 0..5u32 {
            let mut d = displayed(n, Instant::from_millis(u64::from(n) * 16), &[0], n == 0);
            d.picture = Image::new(32, 24).unwrap();
            display.show(1, d.at, &d).unwrap();
        }
        assert_eq!(display.shown(), 5);
        assert_eq!(
            bytes.load(SeqCst),
            0,
            "nothing written while the output is stuck"
        );
        open.store(true, SeqCst);
        display.finish().unwrap();
        assert_eq!(
            early.load(SeqCst),
            0,
            "a write gave up waiting: showing waited for it"
        );
        let frame = 64 * 48 * 3 / 2 + "FRAME\n".len();
        let header = bytes.load(SeqCst) as usize - 5 * frame;
        assert!(header > 0 && header < 100, "{header} bytes of header");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Outputs are created before anything is shown (a bad path fails at once), one file
    /// named by two outputs is refused, and files of a run that showed nothing are removed.
    #[test]
    fn outputs_are_created_at_once_distinct_and_removed_when_nothing_was_shown() {
        let dir = temp("create");
        let (y4m, ivf) = (dir.join("a.y4m"), dir.join("a.ivf"));
        let display = Display::new(DisplayConfig {
            y4m: Some(y4m.clone()),
            ivf: Some(ivf.clone()),
            ..DisplayConfig::default()
        })
        .unwrap();
        assert!(
            y4m.is_file() && ivf.is_file(),
            "created before the first frame"
        );
        let other = dir.join("b.ivf");
        drop(
            Display::new(DisplayConfig {
                ivf: Some(other.clone()),
                ..DisplayConfig::default()
            })
            .unwrap(),
        );
        assert!(!other.exists(), "dropped unused: removed");
        let mut display = display;
        display.finish().unwrap();
        assert!(!y4m.exists() && !ivf.exists(), "empty outputs removed");

        let err = Display::new(DisplayConfig {
            y4m: Some(dir.join("same.out")),
            ivf: Some(dir.join(".").join("same.out")),
            ..DisplayConfig::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("both"), "{err}");
        assert!(!dir.join("same.out").exists(), "nothing created");

        let err = Display::new(DisplayConfig {
            log: Some(dir.join("ok.csv")),
            ivf: Some(dir.join("missing-folder/x/../../nope").join("a.ivf")),
            y4m: Some(PathBuf::from("/proc/nope.y4m")),
            ..DisplayConfig::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("cannot create"), "{err}");
        assert!(
            !dir.join("ok.csv").exists(),
            "the log created first is removed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
