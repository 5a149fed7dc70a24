//! The per-frame log a run builds: one [`FrameRecord`] per camera picture.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::sync::Arc;

use salsify_codec::Image;
use salsify_time::Instant;
use salsify_transport::{Choice as SentChoice, SentFrame};

use crate::metrics::{psnr_luma, ssim_luma, ssim_to_db, Choice, FrameRecord, MetricsError};

/// Records by picture, plus what is needed to fill them in as the run goes.
#[derive(Default)]
pub struct FrameLog {
    records: Vec<FrameRecord>,
    /// Wire frame number -> picture, for frames sent.
    picture_of_frame: HashMap<u32, u64>,
    /// Source pictures that may still be encoded or shown, by picture index.
    sources: BTreeMap<u64, Arc<Image>>,
}

impl FrameLog {
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
                SentChoice::Better => Choice::Better,
                SentChoice::Worse | SentChoice::ForcedWorse => Choice::Worse,
                _ => Choice::Single,
            };
        }
    }

    /// The receiver showed wire frame `frame` at `at`; scores it against its source.
    ///
    /// Returns the picture index shown, or `None` for a frame the sender never reported.
    pub fn on_display(
        &mut self,
        frame: u32,
        at: Instant,
        picture: &Image,
    ) -> Result<Option<u64>, MetricsError> {
        let Some(&index) = self.picture_of_frame.get(&frame) else {
            return Ok(None);
        };
        let Some(source) = self.sources.get(&index) else {
            return Ok(None);
        };
        let ssim = ssim_luma(source, picture)?;
        let psnr = psnr_luma(source, picture)?;
        if let Some(r) = self.records.get_mut(index as usize) {
            r.display = Some(at);
            r.ssim = Some(ssim);
            r.psnr_db = Some(psnr);
        }
        // Nothing older will be shown now: the receiver only moves forwards.
        self.sources = self.sources.split_off(&(index + 1));
        self.picture_of_frame.retain(|_, p| *p > index);
        Ok(Some(index))
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

    /// The records so far.
    pub fn records(&self) -> &[FrameRecord] {
        &self.records
    }

    /// The records, consumed.
    pub fn into_records(self) -> Vec<FrameRecord> {
        self.records
    }
}

/// Writes records as CSV: one line per camera picture, times in milliseconds from the start.
pub fn write_frames_csv(records: &[FrameRecord], mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "frame,capture_ms,display_ms,delay_ms,ssim,ssim_db,psnr_db,bytes,quality,choice"
    )?;
    let delays = crate::metrics::record_delays(records)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let ms = |t: Instant| t.as_micros() as f64 / 1000.0;
    let opt = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
    for (r, delay) in records.iter().zip(delays) {
        writeln!(
            out,
            "{},{:.3},{},{},{},{},{},{},{},{:?}",
            r.frame_id,
            ms(r.capture),
            opt(r.display.map(ms), 3),
            opt(delay.map(|d| d.as_secs_f64() * 1000.0), 3),
            opt(r.ssim, 6),
            opt(r.ssim.map(ssim_to_db), 3),
            opt(r.psnr_db, 3),
            r.size_bytes,
            r.quality.map_or(String::new(), |q| q.to_string()),
            r.choice,
        )?;
    }
    Ok(())
}
