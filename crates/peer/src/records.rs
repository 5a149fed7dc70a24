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
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{Image, PlaneId};
use salsify_time::Instant;
use serde::{Deserialize, Serialize};

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

/// One line of `captures.csv`.
#[derive(Serialize, Deserialize)]
struct CaptureRow {
    capture_us: u64,
    read_us: u64,
    barcode: Option<u32>,
    #[serde(default)]
    error: String,
}

/// One line of `shown.csv`.
#[derive(Serialize, Deserialize)]
struct ShownRow {
    picture: u64,
    display_us: u64,
    received_us: Option<u64>,
    width: u32,
    height: u32,
    rtp: u32,
    missed_before: u32,
}

/// Writes the records of a running call.
pub struct RecordWriter {
    captures: csv::Writer<BufWriter<File>>,
    shown: csv::Writer<BufWriter<File>>,
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
        // Headers now, from the row types' names, so that a call with no pictures has them.
        let mut captures = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(create("captures.csv")?);
        captures.write_record(["capture_us", "read_us", "barcode", "error"])?;
        let mut shown = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(create("shown.csv")?);
        shown.write_record([
            "picture",
            "display_us",
            "received_us",
            "width",
            "height",
            "rtp",
            "missed_before",
        ])?;
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
            Ok(id) => (Some(*id), String::new()),
            Err(e) => (None, e.clone()),
        };
        self.captures.serialize(CaptureRow {
            capture_us: r.capture.as_micros(),
            read_us: r.read.as_micros(),
            barcode,
            error,
        })?;
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
        self.shown.serialize(ShownRow {
            picture: self.shown_written,
            display_us: r.display.as_micros(),
            received_us: r.received.map(Instant::as_micros),
            width: r.width,
            height: r.height,
            rtp: r.rtp,
            missed_before: r.missed_before,
        })?;
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

/// The rows of a record file, each read by its column names; errors name the file and line.
fn rows<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut reader = csv::Reader::from_path(path)
        .with_context(|| format!("cannot open '{}'", path.display()))?;
    reader
        .deserialize()
        .map(|row| row.with_context(|| format!("reading '{}'", path.display())))
        .collect()
}

/// Reads `captures.csv`.
pub fn read_captures(path: &Path) -> Result<Vec<CaptureRecord>> {
    Ok(rows::<CaptureRow>(path)?
        .into_iter()
        .map(|r| CaptureRecord {
            capture: Instant::from_micros(r.capture_us),
            read: Instant::from_micros(r.read_us),
            barcode: r.barcode.ok_or(r.error),
        })
        .collect())
}

/// Reads `shown.csv`.
pub fn read_shown(path: &Path) -> Result<Vec<ShownRecord>> {
    Ok(rows::<ShownRow>(path)?
        .into_iter()
        .map(|r| ShownRecord {
            display: Instant::from_micros(r.display_us),
            received: r.received_us.map(Instant::from_micros),
            width: r.width,
            height: r.height,
            rtp: r.rtp,
            missed_before: r.missed_before,
        })
        .collect())
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
        assert_eq!(captures[1].barcode, Err("cell 3, ambiguous".into()));
        assert_eq!(read_shown(&dir.join("shown.csv")).unwrap(), vec![s]);
        // Written as before, a comma in an error now quoted rather than replaced.
        assert_eq!(
            std::fs::read_to_string(dir.join("captures.csv")).unwrap(),
            "capture_us,read_us,barcode,error\n1000,1500,7,\n1000,1500,,\"cell 3, ambiguous\"\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("shown.csv")).unwrap(),
            "picture,display_us,received_us,width,height,rtp,missed_before\n0,90000,,160,90,4000000000,2\n"
        );
        std::fs::write(dir.join("shown.csv"), "picture,display_us\n0,x\n").unwrap();
        let err = format!("{:#}", read_shown(&dir.join("shown.csv")).unwrap_err());
        assert!(
            err.contains("shown.csv") && err.contains("line: 2"),
            "{err}"
        );
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
