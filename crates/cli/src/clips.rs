//! An experiment's video as the simulator plays it (`salsify sim`, `salsify eval`): the
//! synthetic source, a clip read into memory, or the barcoded excerpt a live cell plays.

use anyhow::{Context, Result};
use salsify_eval::experiment::{Experiment, LIVE_EXCERPT_FRAMES};
use salsify_eval::sim::{LoopedClip, SyntheticVideo, VideoSource};

use crate::input::{Size, VideoInput};

/// The barcoded excerpt a live cell of `e` plays, made by the code that makes the live
/// cell's source file ([`crate::stamp::stamp_frames`]), looped the way its camera
/// loops it.
pub fn live_excerpt(e: &Experiment) -> Result<LoopedClip> {
    let size = live_excerpt_size(e)?;
    let mut frames = Vec::new();
    let stamped = crate::stamp::stamp_frames(
        &e.video,
        size,
        e.fps,
        Some(LIVE_EXCERPT_FRAMES),
        0,
        |_, picture| {
            frames.push(picture);
            Ok(())
        },
    )?;
    let name = format!(
        "{}, its first {} pictures barcoded",
        stamped.name, stamped.written
    );
    LoopedClip::wrapping(frames, stamped.rate.to_f64(), name).map_err(anyhow::Error::from)
}

/// The size a live cell's source is stamped at: the experiment's for the synthetic source;
/// a file keeps its own, as in the simulator.
pub fn live_excerpt_size(e: &Experiment) -> Result<Option<Size>> {
    match e.video == "synthetic" {
        true => Ok(Some(
            e.size.parse().map_err(anyhow::Error::msg).context("size")?,
        )),
        false => Ok(None),
    }
}

/// The built-in source at the experiment's size, rate and seed.
pub fn synthetic_video(e: &Experiment) -> Result<Box<dyn VideoSource>> {
    let size: Size = e.size.parse().map_err(anyhow::Error::msg).context("size")?;
    Ok(Box::new(SyntheticVideo::new(
        size.width,
        size.height,
        e.fps,
        e.seed,
    )?))
}

/// Distinct pictures a run of `e` can show (at 60 fps; a clip's own rate may need fewer).
pub fn frames_needed(e: &Experiment) -> usize {
    (e.duration_s * 60.0).ceil() as usize + 1
}

/// Up to `needed` frames of a clip (at most 3600: a longer clip is cut, a shorter one
/// looped forwards and backwards).
pub fn read_clip(spec: &str, needed: usize) -> Result<LoopedClip> {
    let mut input = VideoInput::open(
        spec,
        Size {
            width: 2,
            height: 2,
        },
        30.0,
    )?;
    let frames = input.read_frames(needed.min(3600))?;
    eprintln!("read {} frames of {}", frames.len(), input.name);
    LoopedClip::new(frames, input.fps, input.name.clone()).map_err(anyhow::Error::from)
}
