//! The per-frame log a run builds: one [`FrameRecord`] per camera picture.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;
use std::sync::Arc;

use salsify_codec::Image;
use salsify_endpoint::{Choice, SentFrame};
use salsify_time::Instant;

use salsify_metrics::{
    psnr_luma, ssim_luma, ssim_to_db, Fixed, FrameOutcome, FrameRecord, MetricsError,
};

/// A shown picture's (SSIM, PSNR dB) against its source, by picture index.
type Score = (u64, Result<(f64, f64), MetricsError>);

/// Scores shown pictures against their sources on another thread, so scoring overlaps the
/// simulation's decoding and encoding (the scores do not depend on when they are computed).
struct Scorer {
    jobs: Option<std::sync::mpsc::Sender<(u64, Arc<Image>, Image)>>,
    results: std::sync::mpsc::Receiver<Score>,
}

impl Scorer {
    /// Scores whole pictures, or (`below_band`) the luma below a barcode band only.
    fn new(below_band: bool) -> Scorer {
        let (jobs, job_rx) = std::sync::mpsc::channel::<(u64, Arc<Image>, Image)>();
        let (result_tx, results) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (index, source, shown) in job_rx {
                let score = match below_band {
                    true => salsify_barcode::ssim_outside_band(&source, &shown)
                        .map(|s| (s.ssim, s.psnr_db))
                        .map_err(|e| MetricsError::BadPlane(e.to_string())),
                    false => ssim_luma(&source, &shown)
                        .and_then(|ssim| Ok((ssim, psnr_luma(&source, &shown)?))),
                };
                if result_tx.send((index, score)).is_err() {
                    break;
                }
            }
        });
        Scorer {
            jobs: Some(jobs),
            results,
        }
    }

    fn submit(&self, index: u64, source: Arc<Image>, shown: Image) {
        if let Some(jobs) = &self.jobs {
            // The thread only stops if this side is gone; nothing to do if it did.
            let _ = jobs.send((index, source, shown));
        }
    }

    /// Every score submitted, once the thread has finished them.
    fn finish(mut self) -> Vec<Score> {
        self.jobs = None; // closing the channel ends the thread's loop
        self.results.iter().collect()
    }
}

impl Default for Scorer {
    fn default() -> Self {
        Scorer::new(false)
    }
}

/// Records by picture, plus what is needed to fill them in as the run goes.
#[derive(Default)]
pub struct FrameLog {
    scorer: Scorer,
    records: Vec<FrameRecord>,
    /// Wire frame number -> picture, for frames sent.
    picture_of_frame: HashMap<u32, u64>,
    /// Source pictures that may still be encoded or shown, by picture index.
    sources: BTreeMap<u64, Arc<Image>>,
}

impl FrameLog {
    /// A log scoring whole pictures, or (`below_band`) the luma below a barcode band only.
    pub fn new(below_band: bool) -> FrameLog {
        FrameLog {
            scorer: Scorer::new(below_band),
            ..FrameLog::default()
        }
    }

    /// A camera picture captured at `at`.
    pub fn on_capture(&mut self, picture: u64, at: Instant, image: Arc<Image>) {
        debug_assert_eq!(picture, self.records.len() as u64);
        self.records.push(FrameRecord::captured(picture, at));
        self.sources.insert(picture, image);
    }

    /// The source picture `picture`, while it may still be needed.
    pub fn source(&self, picture: u64) -> Option<&Arc<Image>> {
        self.sources.get(&picture)
    }

    /// The sender committed to a frame.
    pub fn on_sent(&mut self, sent: &SentFrame) {
        self.picture_of_frame.insert(sent.frame, sent.picture);
        if let Some(r) = self.records.get_mut(sent.picture as usize) {
            r.size_bytes = sent.bytes as u64;
            r.quality = Some(u32::from(sent.quality.index()));
            r.choice = match sent.choice {
                Choice::Better => FrameOutcome::Better,
                Choice::Worse | Choice::ForcedWorse => FrameOutcome::Worse,
                Choice::Only => FrameOutcome::Single,
            };
        }
    }

    /// The receiver showed wire frame `frame` at `at`; it is scored against its source in
    /// the background (see [`FrameLog::into_records`]).
    ///
    /// Returns the picture index shown, or `None` for a frame the sender never reported.
    pub fn on_display(&mut self, frame: u32, at: Instant, picture: Image) -> Option<u64> {
        let &index = self.picture_of_frame.get(&frame)?;
        let source = self.sources.get(&index)?.clone();
        if let Some(r) = self.records.get_mut(index as usize) {
            r.display = Some(at);
        }
        self.scorer.submit(index, source, picture);
        // Nothing older will be shown now: the receiver only moves forwards.
        self.sources = self.sources.split_off(&(index + 1));
        self.picture_of_frame.retain(|_, p| *p > index);
        Some(index)
    }

    /// The sender will never send `picture` (skipped or dropped): its source is not needed.
    pub fn on_not_sent(&mut self, picture: u64) {
        self.sources.remove(&picture);
    }

    /// The receiver gave up on wire frames up to `through`: their sources are not needed.
    pub fn on_lost_through(&mut self, through: u32) {
        let sources = &mut self.sources;
        self.picture_of_frame.retain(|&frame, picture| {
            let lost = frame <= through;
            if lost {
                sources.remove(picture);
            }
            !lost
        });
    }

    /// How many source pictures are held.
    pub fn sources_held(&self) -> usize {
        self.sources.len()
    }

    /// The records, consumed, with every shown frame's scores filled in.
    pub fn into_records(self) -> Result<Vec<FrameRecord>, MetricsError> {
        let mut records = self.records;
        for (index, score) in self.scorer.finish() {
            let (ssim, psnr) = score?;
            if let Some(r) = records.get_mut(index as usize) {
                r.ssim = Some(ssim);
                r.psnr_db = Some(psnr);
            }
        }
        Ok(records)
    }
}

/// The columns of a run's `frames.csv`, in order.
pub const FRAMES_CSV_COLUMNS: [&str; 10] = [
    "frame",
    "capture_ms",
    "display_ms",
    "delay_ms",
    "ssim",
    "ssim_db",
    "psnr_db",
    "bytes",
    "quality",
    "choice",
];

/// One line of `frames.csv` (fields in [`FRAMES_CSV_COLUMNS`] order).
#[derive(Serialize)]
struct FrameRow {
    frame: u64,
    capture_ms: Fixed<3>,
    display_ms: Option<Fixed<3>>,
    delay_ms: Option<Fixed<3>>,
    ssim: Option<Fixed<6>>,
    ssim_db: Option<Fixed<3>>,
    psnr_db: Option<Fixed<3>>,
    bytes: u64,
    quality: Option<u32>,
    choice: String,
}

/// Writes records as CSV: one line per camera picture, times in milliseconds from the start.
pub fn write_frames_csv(records: &[FrameRecord], out: impl Write) -> io::Result<()> {
    let delays = salsify_metrics::record_delays(records)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let ms = |t: Instant| Fixed(t.as_micros() as f64 / 1000.0);
    // The header is written here rather than from the row type, so a run of no frames has one.
    let mut csv = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out);
    csv.write_record(FRAMES_CSV_COLUMNS)?;
    for (r, delay) in records.iter().zip(delays) {
        csv.serialize(FrameRow {
            frame: r.frame_id,
            capture_ms: ms(r.capture),
            display_ms: r.display.map(ms),
            delay_ms: delay.map(|d| Fixed(d.as_secs_f64() * 1000.0)),
            ssim: r.ssim.map(Fixed),
            ssim_db: r.ssim.map(|s| Fixed(ssim_to_db(s))),
            psnr_db: r.psnr_db.map(Fixed),
            bytes: r.size_bytes,
            quality: r.quality,
            choice: format!("{:?}", r.choice),
        })?;
    }
    csv.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::{PlaneId, SyntheticSource};

    /// A twin's scorer leaves the barcode band out, as the live scorer does; the default
    /// scores the whole picture.
    #[test]
    fn a_barcoded_clip_is_scored_below_its_band() {
        let source = Arc::new(SyntheticSource::new(640, 360, 30, 1).unwrap().frame(0));
        let mut shown = (*source).clone();
        for row in 0..salsify_barcode::BAND_ROWS as usize {
            shown.plane_mut(PlaneId::Y).row_mut(row).fill(0);
        }
        let score = |below_band: bool| {
            let scorer = Scorer::new(below_band);
            scorer.submit(0, source.clone(), shown.clone());
            let scores = scorer.finish();
            scores[0].1.clone().unwrap().0
        };
        assert!((score(true) - 1.0).abs() < 1e-12);
        assert!(score(false) < 0.99);
    }

    #[test]
    fn frames_csv_keeps_its_columns_and_decimals() {
        let mut shown = FrameRecord::captured(0, Instant::from_micros(1500));
        shown.display = Some(Instant::from_micros(41_250));
        shown.ssim = Some(0.9);
        shown.psnr_db = Some(36.25);
        shown.size_bytes = 1200;
        shown.quality = Some(40);
        shown.choice = FrameOutcome::Better;
        let skipped = FrameRecord::captured(1, Instant::from_micros(34_833));
        let mut text = Vec::new();
        write_frames_csv(&[shown, skipped], &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(FRAMES_CSV_COLUMNS.join(",").as_str()));
        assert_eq!(
            lines.next(),
            Some("0,1.500,41.250,39.750,0.900000,10.000,36.250,1200,40,Better")
        );
        assert_eq!(lines.next(), Some("1,34.833,,,,,,0,,Skipped"));
        assert_eq!(lines.next(), None);
        // No frames: the header alone.
        let mut empty = Vec::new();
        write_frames_csv(&[], &mut empty).unwrap();
        assert_eq!(
            empty,
            format!("{}\n", FRAMES_CSV_COLUMNS.join(",")).into_bytes()
        );
    }
}
