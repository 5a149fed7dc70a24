//! Stamping a frame-id barcode into every picture of a video (`salsify barcode`, the
//! Chromium peer's source, `salsify eval`'s live cells and their simulated twins): one
//! function makes a barcoded file and the pictures a simulation plays, so both hold the
//! same pictures.

use std::io::BufWriter;
use std::path::Path;

use anyhow::{bail, Context, Result};
use salsify_barcode::{BandLayout, MAX_FRAME_ID};
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::Image;

use crate::input::{Size, VideoInput};

/// Stamps `frames` pictures of `input` (default: all; 300 of the synthetic source), scaled
/// to `size` if given, with ids from `first_id`, into the Y4M file `out`; returns how many.
pub fn stamp_video(
    input: &str,
    size: Option<Size>,
    fps: u32,
    frames: Option<u64>,
    first_id: u64,
    out: &Path,
    quiet: bool,
) -> Result<u64> {
    if frames == Some(0) {
        return Err(crate::usage::usage(
            "--frames 0: nothing to write (give at least 1)",
        ));
    }
    crate::paths::check_output("--out", out)?;
    let existed = out.exists();
    let mut writer = None;
    let stamped = (|| -> Result<Stamped> {
        let stamped = stamp_frames(input, size, fps, frames, first_id, |header, picture| {
            let w = match &mut writer {
                Some(w) => w,
                // Created at the first picture: a bad input leaves an existing file as it was.
                None => {
                    let file = salsify_codec::output::create(out)
                        .with_context(|| format!("cannot create '{}'", out.display()))?;
                    writer.insert(Y4mWriter::new(
                        BufWriter::with_capacity(1 << 20, file),
                        header.clone(),
                    )?)
                }
            };
            Ok(w.write_frame(&picture)?)
        })?;
        if let Some(w) = writer.take() {
            w.finish()
                .with_context(|| format!("writing '{}'", out.display()))?;
        }
        Ok(stamped)
    })();
    let Stamped {
        name,
        size,
        rate,
        layout,
        written,
    } = match stamped {
        Ok(s) => s,
        Err(e) => {
            // A half-written file is no source for anything: remove what this run created.
            if !existed && out.is_file() {
                let _ = std::fs::remove_file(out);
            }
            return Err(e);
        }
    };
    if !quiet {
        eprintln!(
            "salsify barcode: {written} frames of {} ({size}, {} fps), ids {}..={}, to {}; the band is the top {} rows ({:.1} % of the picture)",
            name,
            rate.to_f64(),
            first_id,
            first_id + written - 1,
            out.display(),
            salsify_barcode::BAND_ROWS,
            layout.area_share() * 100.0
        );
    }
    Ok(written)
}

/// What [`stamp_frames`] stamped.
pub struct Stamped {
    /// The input, as opened.
    pub name: String,
    /// The pictures' size.
    pub size: Size,
    /// Their frame rate.
    pub rate: Rational,
    /// The barcode band's layout at that size.
    pub layout: BandLayout,
    /// Pictures stamped.
    pub written: u64,
}

/// Stamps `frames` pictures of `input` (default: all; 300 of the synthetic source), scaled
/// to `size` if given, with ids from `first_id`, handing each to `each` with the stream's
/// header. A barcoded source file and a simulation that plays one are made by this one
/// function, so they hold the same pictures.
pub fn stamp_frames(
    input: &str,
    size: Option<Size>,
    fps: u32,
    frames: Option<u64>,
    first_id: u64,
    mut each: impl FnMut(&Y4mHeader, Image) -> Result<()>,
) -> Result<Stamped> {
    if frames == Some(0) {
        return Err(crate::usage::usage(
            "--frames 0: nothing to write (give at least 1)",
        ));
    }
    let default_size = Size {
        width: 640,
        height: 360,
    };
    let mut input_video = VideoInput::open(input, size.unwrap_or(default_size), f64::from(fps))?;
    let size = size.unwrap_or(input_video.size);
    let layout = BandLayout::for_size(size.width, size.height)?;
    let frames = match (frames, input == "synthetic") {
        (Some(n), _) => n,
        (None, true) => 300,
        (None, false) => u64::MAX,
    };
    // A whole file of unknown length fails at the first id too large instead.
    if frames != u64::MAX && first_id.saturating_add(frames.saturating_sub(1)) > MAX_FRAME_ID {
        bail!("{frames} frame ids from {first_id} pass the barcode's largest id {MAX_FRAME_ID}");
    }
    let rate = frame_rate(input_video.fps);
    let header = Y4mHeader::new(size.width, size.height, rate);
    let mut written = 0u64;
    while written < frames {
        let Some(picture) = input_video.next_frame()? else {
            break;
        };
        let mut picture = fit(picture, size)?;
        salsify_barcode::stamp(&mut picture, first_id + written)
            .with_context(|| format!("frame {written} of '{}'", input_video.name))?;
        each(&header, picture)?;
        written += 1;
    }
    if written == 0 {
        bail!("'{}' has no frames", input_video.name);
    }
    Ok(Stamped {
        name: input_video.name,
        size,
        rate,
        layout,
        written,
    })
}

/// The input picture at `size` (scaled if it differs).
fn fit(picture: Image, size: Size) -> Result<Image> {
    if (picture.width(), picture.height()) == (size.width, size.height) {
        return Ok(picture);
    }
    salsify_codec::scale(&picture, size.width, size.height).context("scaling the input")
}

/// A Y4M frame rate for `fps` (whole, or in thousandths).
fn frame_rate(fps: f64) -> Rational {
    if fps.fract() == 0.0 {
        Rational::new(fps as u32, 1)
    } else {
        Rational::new((fps * 1000.0).round() as u32, 1000)
    }
}
