//! A live call of ours recorded as a black-box peer's is (`salsify demo --barcoded`, the
//! evaluation's live cells): barcodes of captured pictures, shown pictures with their display
//! times, scored afterwards by `salsify_peer::analyse` as a Chromium call is.

use std::path::PathBuf;

use anyhow::Result;
use salsify_runtime::Observation;
use salsify_time::Instant;

/// The demo's run recorded as a black-box peer's is: barcodes of captured pictures, shown
/// pictures with their display times, scored afterwards by `salsify_peer::analyse`.
pub struct BlackBoxRecorder {
    dir: PathBuf,
    writer: salsify_peer::records::RecordWriter,
}

impl BlackBoxRecorder {
    pub fn new(dir: &std::path::Path, width: u32, height: u32, fps: f64) -> Result<Self> {
        let rate = salsify_codec::y4m::Rational::new((fps * 1000.0).round() as u32, 1000);
        Ok(BlackBoxRecorder {
            dir: dir.to_path_buf(),
            writer: salsify_peer::records::RecordWriter::create(dir, width, height, rate)?,
        })
    }

    pub fn observe(&mut self, o: &Observation) -> Result<()> {
        match o {
            Observation::Captured { at, image, .. } => {
                self.writer.capture(&salsify_peer::records::CaptureRecord {
                    capture: *at,
                    read: *at,
                    barcode: salsify_barcode::read(image).map_err(|e| e.to_string()),
                })
            }
            Observation::Shown { at, image, .. } => {
                let mut packed = Vec::with_capacity(image.visible_len());
                image.write_packed(&mut packed);
                let record = salsify_peer::records::ShownRecord {
                    display: *at,
                    received: None,
                    width: image.width(),
                    height: image.height(),
                    rtp: 0,
                    missed_before: 0,
                };
                self.writer.shown(&record, &packed)
            }
            _ => Ok(()),
        }
    }

    pub fn score(
        self,
        reference: &str,
        from: Instant,
        until: Instant,
    ) -> Result<salsify_peer::Analysis> {
        self.writer.finish()?;
        let analysis = salsify_peer::analyse(&salsify_peer::AnalysisInput {
            dir: &self.dir,
            reference: std::path::Path::new(reference),
            from: Some(from),
            until: Some(until),
        })?;
        salsify_peer::write_outputs(&self.dir, &analysis)?;
        let (s, c) = (&analysis.summary, &analysis.counts);
        println!(
            "black-box (barcodes): {} of {} shown pictures matched; SSIM {} dB, delay mean {} ms p95 {} ms, {:.1} fps shown; in {}",
            c.shown_matched,
            c.shown,
            s.ssim_db_mean.map_or("-".into(), |v| format!("{v:.2}")),
            s.delay_mean_ms.map_or("-".into(), |v| format!("{v:.1}")),
            s.delay_p95_ms.map_or("-".into(), |v| format!("{v:.1}")),
            s.displayed_fps,
            self.dir.display()
        );
        Ok(analysis)
    }
}
