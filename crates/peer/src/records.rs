//! A call's raw records on disk, written while it runs and scored afterwards:
//!
//! - `captures.csv`: one line per camera picture the sender side saw: its capture time
//!   (host monotonic µs), when the page read it, and the barcode read from its band (empty,
//!   with the reason, if unreadable);
//! - `shown.csv` + `shown.y4m`: one line and one picture per picture the receiving page
//!   presented: display time, receive time, the size it arrived at (pictures are scaled to
//!   the source size before they are stored), its RTP timestamp, and how many presentations
//!   the page missed before it.
//!
//! Scoring later, from files, keeps the CPU free for the browser during the call and lets a
//! run be re-scored (e.g. against another reference).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{Image, PlaneId};
use salsify_time::Instant;

/// Luma rows of the band the page sends for each camera picture.
pub const BAND_ROWS: usize = salsify_barcode::BAND_ROWS as usize;

/// One camera picture seen by the sender side.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureRecord {
    /// Capture time (the camera's timestamp: host monotonic clock).
    pub capture: Instant,
    /// When the page read it (mapped onto the same clock).
    pub read: Instant,
    /// The barcode, or why it could not be read.
    pub barcode: Result<u32, String>,
}

/// One picture presented by the receiving page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShownRecord {
    /// Expected display time (host monotonic clock).
    pub display: Instant,
    /// When its last packet arrived, if the page said.
    pub received: Option<Instant>,
    /// Size it arrived at.
    pub width: u32,
    /// Size it arrived at.
    pub height: u32,
    /// RTP timestamp.
    pub rtp: u32,
    /// Presentations the page missed just before this one.
    pub missed_before: u32,
}

/// Reads the barcode from the top `BAND_ROWS` luma rows of a `width`-wide picture.
pub fn read_band(width: u32, luma: &[u8]) -> Result<u32, String> {
    let w = width as usize;
    if luma.len() != w * BAND_ROWS {
        return Err(format!(
            "band of {} bytes for width {width} (expected {})",
            luma.len(),
            w * BAND_ROWS
        ));
    }
    let mut image = Image::new(width, salsify_barcode::MIN_HEIGHT).map_err(|e| e.to_string())?;
    let plane = image.plane_mut(PlaneId::Y);
    for (row, line) in luma.chunks_exact(w).enumerate() {
        plane.row_mut(row)[..w].copy_from_slice(line);
    }
    salsify_barcode::read(&image).map_err(|e| e.to_string())
}

/// Writes the records of a running call.
pub struct RecordWriter {
    captures: BufWriter<File>,
    shown: BufWriter<File>,
    pictures: Y4mWriter<BufWriter<File>>,
    size: (u32, u32),
    /// Camera pictures recorded.
    pub captures_written: u64,
    /// Presented pictures recorded.
    pub shown_written: u64,
}

impl RecordWriter {
    /// New record files in `dir` for a `width` x `height` source at `fps`.
    pub fn create(dir: &Path, width: u32, height: u32, fps: Rational) -> Result<RecordWriter> {
        let create = |name: &str| {
            let path = dir.join(name);
            salsify_codec::output::create(&path)
                .map(|f| BufWriter::with_capacity(1 << 20, f))
                .with_context(|| format!("cannot create '{}'", path.display()))
        };
        let mut captures = create("captures.csv")?;
        writeln!(captures, "capture_us,read_us,barcode,error")?;
        let mut shown = create("shown.csv")?;
        writeln!(
            shown,
            "picture,display_us,received_us,width,height,rtp,missed_before"
        )?;
        let pictures = Y4mWriter::new(create("shown.y4m")?, Y4mHeader::new(width, height, fps))?;
        Ok(RecordWriter {
            captures,
            shown,
            pictures,
            size: (width, height),
            captures_written: 0,
            shown_written: 0,
        })
    }

    /// Records one camera picture.
    pub fn capture(&mut self, r: &CaptureRecord) -> Result<()> {
        let (barcode, error) = match &r.barcode {
            Ok(id) => (id.to_string(), String::new()),
            Err(e) => (String::new(), e.replace([',', '\n'], ";")),
        };
        writeln!(
            self.captures,
            "{},{},{barcode},{error}",
            r.capture.as_micros(),
            r.read.as_micros()
        )?;
        self.captures_written += 1;
        Ok(())
    }

    /// Records one presented picture (I420, packed, at the size it arrived), scaled to the
    /// source size.
    pub fn shown(&mut self, r: &ShownRecord, i420: &[u8]) -> Result<()> {
        let mut image = Image::new(r.width, r.height)?;
        image.copy_from_packed(i420).context("presented picture")?;
        if (r.width, r.height) != self.size {
            image = salsify_codec::scale(&image, self.size.0, self.size.1)?;
        }
        self.pictures.write_frame(&image)?;
        let opt = |t: Option<Instant>| t.map_or(String::new(), |t| t.as_micros().to_string());
        writeln!(
            self.shown,
            "{},{},{},{},{},{},{}",
            self.shown_written,
            r.display.as_micros(),
            opt(r.received),
            r.width,
            r.height,
            r.rtp,
            r.missed_before
        )?;
        self.shown_written += 1;
        Ok(())
    }

    /// Flushes every file.
    pub fn finish(self) -> Result<()> {
        let RecordWriter {
            mut captures,
            mut shown,
            pictures,
            ..
        } = self;
        captures.flush()?;
        shown.flush()?;
        pictures.finish()?.flush()?;
        Ok(())
    }
}

fn lines(path: &Path) -> Result<Vec<Vec<String>>> {
    let file = File::open(path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate().skip(1) {
        let line = line.with_context(|| format!("reading '{}'", path.display()))?;
        if !line.is_empty() {
            out.push(line.split(',').map(str::to_string).collect());
        }
        if out.last().is_some_and(|f: &Vec<String>| f.len() < 3) {
            bail!("'{}' line {}: too few fields", path.display(), n + 1);
        }
    }
    Ok(out)
}

fn micros(path: &Path, field: &str) -> Result<Instant> {
    field
        .parse::<u64>()
        .map(Instant::from_micros)
        .with_context(|| format!("'{}': '{field}' is not a time in µs", path.display()))
}

/// Reads `captures.csv`.
pub fn read_captures(path: &Path) -> Result<Vec<CaptureRecord>> {
    lines(path)?
        .into_iter()
        .map(|f| {
            let barcode = if f[2].is_empty() {
                Err(f.get(3).cloned().unwrap_or_default())
            } else {
                Ok(f[2]
                    .parse()
                    .with_context(|| format!("'{}': bad barcode '{}'", path.display(), f[2]))?)
            };
            Ok(CaptureRecord {
                capture: micros(path, &f[0])?,
                read: micros(path, &f[1])?,
                barcode,
            })
        })
        .collect()
}

/// Reads `shown.csv`.
pub fn read_shown(path: &Path) -> Result<Vec<ShownRecord>> {
    lines(path)?
        .into_iter()
        .map(|f| {
            if f.len() < 7 {
                bail!("'{}': a line has {} fields, not 7", path.display(), f.len());
            }
            let num = |s: &str| {
                s.parse::<u32>()
                    .with_context(|| format!("'{}': '{s}' is not a number", path.display()))
            };
            Ok(ShownRecord {
                display: micros(path, &f[1])?,
                received: if f[2].is_empty() {
                    None
                } else {
                    Some(micros(path, &f[2])?)
                },
                width: num(&f[3])?,
                height: num(&f[4])?,
                rtp: num(&f[5])?,
                missed_before: num(&f[6])?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::SyntheticSource;

    #[test]
    fn records_round_trip_through_files() {
        let dir = std::env::temp_dir().join(format!("salsify-peer-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = RecordWriter::create(&dir, 320, 180, Rational::new(30, 1)).unwrap();
        let c = CaptureRecord {
            capture: Instant::from_micros(1000),
            read: Instant::from_micros(1500),
            barcode: Ok(7),
        };
        let bad = CaptureRecord {
            barcode: Err("cell 3, ambiguous".into()),
            ..c.clone()
        };
        w.capture(&c).unwrap();
        w.capture(&bad).unwrap();
        let s = ShownRecord {
            display: Instant::from_micros(90_000),
            received: None,
            width: 160,
            height: 90,
            rtp: 4_000_000_000,
            missed_before: 2,
        };
        let small = SyntheticSource::new(160, 90, 30, 1).unwrap().frame(0);
        let mut packed = Vec::new();
        small.write_packed(&mut packed);
        w.shown(&s, &packed).unwrap();
        assert!(w.shown(&s, &packed[1..]).is_err());
        w.finish().unwrap();
        let captures = read_captures(&dir.join("captures.csv")).unwrap();
        assert_eq!(captures[0], c);
        assert_eq!(captures[1].barcode, Err("cell 3; ambiguous".into()));
        assert_eq!(read_shown(&dir.join("shown.csv")).unwrap(), vec![s]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bands_are_read() {
        let mut image = SyntheticSource::new(640, 360, 30, 1).unwrap().frame(0);
        salsify_barcode::stamp(&mut image, 4242).unwrap();
        let y = image.plane(PlaneId::Y);
        let band: Vec<u8> = (0..BAND_ROWS).flat_map(|r| y.row(r).to_vec()).collect();
        assert_eq!(read_band(640, &band), Ok(4242));
        assert!(read_band(640, &band[1..]).is_err());
        assert!(read_band(640, &vec![128; band.len()]).is_err());
    }
}
