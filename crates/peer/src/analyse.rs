//! Scores a black-box call from its records: barcodes read from every presented picture,
//! matched to the camera pictures that carried them, each scored against its source picture
//! outside the band, then the same per-frame records, `frames.csv` and `summary.json` as a
//! simulated run (the paper's delay rule, SSIM dB, frame rate).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use salsify_codec::y4m::Y4mReader;
use salsify_codec::Image;
use salsify_metrics::blackbox::{self, Captured, JoinConfig, Shown};
use salsify_metrics::{summarize, FrameRecord, RunInfo, Summary};
use salsify_time::{Duration, Instant};
use serde::Serialize;

use crate::records::{read_captures, read_shown};

/// Below this share of readable barcodes (on either side) the run is an error: the source
/// was not barcoded, or the pictures are too damaged to score.
pub const MIN_READABLE_SHARE: f64 = 0.5;

/// A presented picture must resemble its barcode's reference picture at least as much as
/// the reference pictures this many frames before and after.
pub const CONTENT_SHIFT: u32 = 3;

/// What to score.
#[derive(Debug, Clone)]
pub struct AnalysisInput<'a> {
    /// Folder with `captures.csv`, `shown.csv` and `shown.y4m`.
    pub dir: &'a Path,
    /// The barcoded source the pictures are scored against.
    pub reference: &'a Path,
    /// Camera pictures captured before this are left out (e.g. before the call connected).
    pub from: Option<Instant>,
    /// ... and after this (the end of the measured window).
    pub until: Option<Instant>,
}

/// Counts that say how well the measurement itself went.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MatchCounts {
    /// Camera pictures in the window.
    pub captures: u64,
    /// ... whose barcode was read.
    pub captures_read: u64,
    /// Presented pictures recorded.
    pub shown: u64,
    /// ... whose barcode was read.
    pub shown_read: u64,
    /// ... read and matched to a camera picture.
    pub shown_matched: u64,
    /// ... read, but of a barcode the reference does not have.
    pub shown_unknown_barcode: u64,
    /// ... read, but no camera picture of that barcode at or shortly before.
    pub shown_no_capture: u64,
    /// ... read, but the picture resembles the reference pictures [`CONTENT_SHIFT`] frames
    /// before or after its barcode's more than its own (barcode and content disagree).
    pub shown_content_mismatch: u64,
    /// Presentations the page did not record (no callback for them, the element had moved on
    /// to a newer picture, or no upload slot): counted as not shown.
    pub presentations_missed: u64,
    /// Matched / recorded presented pictures.
    pub match_share: f64,
    /// Mean SSIM (linear, outside the band) of the matched pictures.
    pub matched_ssim_mean: Option<f64>,
}

/// The scored call.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// One record per camera picture in the window.
    pub records: Vec<FrameRecord>,
    /// The summary, as for a simulated run.
    pub summary: Summary,
    /// How the measurement went.
    pub counts: MatchCounts,
    /// The host time the records' times count from (the first camera picture in the
    /// window), to put the run's other logs (the link's) on the records' time axis.
    pub origin: Instant,
}

/// The reference: pictures by barcode, picture size, frame rate.
struct Reference {
    pictures: HashMap<u32, Image>,
    size: (u32, u32),
    fps: f64,
}

/// Reads the reference pictures, each by its barcode.
fn load_reference(path: &Path) -> Result<Reference> {
    let file = File::open(path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let mut reader = Y4mReader::new(BufReader::with_capacity(1 << 20, file))
        .with_context(|| format!("reading '{}'", path.display()))?;
    let header = reader.header().clone();
    let fps = header.frame_rate.map_or(30.0, |r| r.to_f64());
    let mut pictures = HashMap::new();
    let mut index = 0u64;
    while let Some(picture) = reader.next_frame()? {
        let id = salsify_barcode::read(&picture).with_context(|| {
            format!(
                "reference '{}' frame {index} has no readable barcode (stamp it with `salsify barcode`)",
                path.display()
            )
        })?;
        pictures.insert(id, picture);
        index += 1;
    }
    if pictures.is_empty() {
        bail!("reference '{}' has no frames", path.display());
    }
    Ok(Reference {
        pictures,
        size: (header.width, header.height),
        fps,
    })
}

/// Scores the call in `input.dir`.
///
/// Every record is read and joined first; the window then keeps the camera pictures
/// captured in it and the presented pictures that matched one of them (or, unmatched, were
/// displayed in it), so a picture captured just before the window opens is not counted as
/// a failed match.
pub fn analyse(input: &AnalysisInput<'_>) -> Result<Analysis> {
    let Reference {
        pictures: reference,
        size,
        fps,
    } = load_reference(input.reference)?;
    let in_window = |t: Instant| {
        input.from.is_none_or(|from| t >= from) && input.until.is_none_or(|until| t <= until)
    };
    let mut counts = MatchCounts::default();

    // Sender side: camera pictures with a readable barcode.
    let mut captured = Vec::new();
    let mut capture_errors = Vec::new();
    // The page posts concurrently, so records may arrive (and be written) out of order.
    let mut capture_records = read_captures(&input.dir.join("captures.csv"))?;
    capture_records.sort_by_key(|c| c.capture);
    for (i, c) in capture_records.into_iter().enumerate() {
        match c.barcode {
            Ok(barcode) => captured.push(Captured {
                barcode,
                at: c.capture,
            }),
            Err(e) if in_window(c.capture) => {
                capture_errors.push(format!("camera picture {i}: {e}"))
            }
            Err(_) => {}
        }
    }

    // Receiver side: every presented picture's barcode and score.
    let shown_records = read_shown(&input.dir.join("shown.csv"))?;
    let path = input.dir.join("shown.y4m");
    let file = File::open(&path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let mut pictures = Y4mReader::new(BufReader::with_capacity(1 << 20, file))?;
    if (pictures.header().width, pictures.header().height) != size {
        bail!(
            "shown.y4m is {}x{} but the reference is {}x{}",
            pictures.header().width,
            pictures.header().height,
            size.0,
            size.1
        );
    }
    // (index into shown_records, its Shown) for pictures with a known barcode.
    let mut shown: Vec<(usize, Shown)> = Vec::new();
    let mut unreadable: Vec<(usize, String)> = Vec::new();
    let mut unknown: Vec<usize> = Vec::new();
    let mut mismatched: Vec<usize> = Vec::new();
    for (i, record) in shown_records.iter().enumerate() {
        let picture = pictures
            .next_frame()?
            .with_context(|| format!("shown.y4m ends before picture {i} of shown.csv"))?;
        if in_window(record.display) {
            counts.presentations_missed += u64::from(record.missed_before);
        }
        match salsify_barcode::read(&picture) {
            Err(e) => unreadable.push((i, e.to_string())),
            Ok(barcode) => match reference.get(&barcode) {
                None => unknown.push(i),
                Some(source) => {
                    let score = salsify_barcode::ssim_outside_band(source, &picture)?;
                    if !content_agrees(&reference, barcode, score.ssim, &picture)? {
                        mismatched.push(i);
                        continue;
                    }
                    shown.push((
                        i,
                        Shown {
                            barcode,
                            at: record.display,
                            ssim: Some(score.ssim),
                            psnr_db: Some(score.psnr_db),
                        },
                    ));
                }
            },
        }
    }

    let joined = blackbox::join(
        &captured,
        &shown.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        JoinConfig::default(),
    )?;

    // The window.
    let capture_in_window: Vec<bool> = captured.iter().map(|c| in_window(c.at)).collect();
    counts.captures =
        capture_in_window.iter().filter(|&&w| w).count() as u64 + capture_errors.len() as u64;
    counts.captures_read = capture_in_window.iter().filter(|&&w| w).count() as u64;
    check_readable(
        "camera pictures (sender side)",
        counts.captures,
        &capture_errors,
    )?;
    let display_in_window = |i: usize| in_window(shown_records[i].display);
    let mut matched_ssims = Vec::new();
    for (k, (i, s)) in shown.iter().enumerate() {
        match joined.matched_to[k] {
            Some(c) if capture_in_window[c] => {
                counts.shown_matched += 1;
                matched_ssims.extend(s.ssim);
            }
            Some(_) => continue,
            None if display_in_window(*i) => counts.shown_no_capture += 1,
            None => continue,
        }
        counts.shown_read += 1;
    }
    counts.shown_unknown_barcode = unknown.iter().filter(|&&i| display_in_window(i)).count() as u64;
    let unreadable: Vec<String> = unreadable
        .into_iter()
        .filter(|(i, _)| display_in_window(*i))
        .map(|(i, e)| format!("presented picture {i}: {e}"))
        .collect();
    counts.shown_content_mismatch =
        mismatched.iter().filter(|&&i| display_in_window(i)).count() as u64;
    counts.shown_read += counts.shown_unknown_barcode + counts.shown_content_mismatch;
    counts.shown = counts.shown_read + unreadable.len() as u64;
    check_readable(
        "presented pictures (receiver side)",
        counts.shown,
        &unreadable,
    )?;
    counts.match_share = counts.shown_matched as f64 / counts.shown as f64;
    counts.matched_ssim_mean = salsify_metrics::mean(&matched_ssims);

    let mut records: Vec<FrameRecord> = joined
        .records
        .into_iter()
        .zip(&capture_in_window)
        .filter_map(|(r, &w)| w.then_some(r))
        .collect();
    // Times from the first picture in the window, as a simulated run's are from its start.
    let origin = records.first().map_or(Instant::ZERO, |r| r.capture);
    if let Some(base) = records.first().map(|r| r.capture) {
        let rebase = |t: Instant| Instant::ZERO + (t - base);
        for r in &mut records {
            r.capture = rebase(r.capture);
            r.display = r.display.map(rebase);
        }
    }
    let duration = match (records.first(), records.last()) {
        (Some(a), Some(b)) => b.capture - a.capture + Duration::from_secs_f64(1.0 / fps),
        _ => bail!("no camera picture with a readable barcode in the measured window"),
    };
    let summary = summarize(
        &records,
        &RunInfo {
            duration,
            link: None,
        },
    )?;
    Ok(Analysis {
        records,
        summary,
        counts,
        origin,
    })
}

/// Whether `picture` (barcode `barcode`, SSIM `own` against its reference picture) is at
/// least as close to its own reference picture as to those [`CONTENT_SHIFT`] frames away.
fn content_agrees(
    reference: &HashMap<u32, Image>,
    barcode: u32,
    own: f64,
    picture: &Image,
) -> Result<bool> {
    let rivals = [
        barcode.checked_sub(CONTENT_SHIFT),
        barcode.checked_add(CONTENT_SHIFT),
    ];
    for rival in rivals.into_iter().flatten() {
        if let Some(other) = reference.get(&rival) {
            if salsify_barcode::ssim_outside_band(other, picture)?.ssim > own {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// An error if fewer than [`MIN_READABLE_SHARE`] of `total` pictures had a readable barcode.
/// `unreadable` says which and why.
fn check_readable(side: &str, total: u64, unreadable: &[String]) -> Result<()> {
    if total == 0 {
        bail!("no {side} were recorded in the measured window");
    }
    let read = total - unreadable.len() as u64;
    if (read as f64) < MIN_READABLE_SHARE * total as f64 {
        let first: Vec<&str> = unreadable.iter().take(5).map(String::as_str).collect();
        bail!(
            "the barcode is unreadable in most {side}: {read} of {total} read; e.g. {}",
            first.join("; ")
        );
    }
    Ok(())
}

/// Writes `frames.csv`, `summary.json` and `match.json` into `dir`.
pub fn write_outputs(dir: &Path, analysis: &Analysis) -> Result<()> {
    let create = |name: &str| {
        let path = dir.join(name);
        salsify_codec::output::create(&path)
            .map(BufWriter::new)
            .with_context(|| format!("cannot create '{}'", path.display()))
    };
    let mut frames = create("frames.csv")?;
    salsify_sim::write_frames_csv(&analysis.records, &mut frames)?;
    frames.flush()?;
    let mut summary = create("summary.json")?;
    serde_json::to_writer_pretty(&mut summary, &analysis.summary)?;
    writeln!(summary)?;
    let mut counts = create("match.json")?;
    serde_json::to_writer_pretty(&mut counts, &analysis.counts)?;
    writeln!(counts)?;
    Ok(())
}
