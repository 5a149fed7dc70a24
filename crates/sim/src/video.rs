//! Where the simulated camera's pictures come from.

use std::sync::Arc;

use salsify_codec::{Image, SyntheticSource};

/// A camera for the simulator: random access by picture index, endless.
pub trait VideoSource {
    /// Visible picture size.
    fn size(&self) -> (u32, u32);
    /// Frames per second.
    fn fps(&self) -> f64;
    /// Picture `index` (0-based). The same index always gives the same picture.
    fn picture(&mut self, index: u64) -> Arc<Image>;
    /// A short description for logs and reports.
    fn name(&self) -> String;
}

/// The built-in synthetic source.
pub struct SyntheticVideo {
    source: SyntheticSource,
    size: (u32, u32),
    fps: u32,
}

impl SyntheticVideo {
    /// Synthetic pictures of `width` x `height` at `fps`, content chosen by `seed`.
    pub fn new(
        width: u32,
        height: u32,
        fps: u32,
        seed: u64,
    ) -> Result<Self, salsify_codec::CodecError> {
        Ok(SyntheticVideo {
            source: SyntheticSource::new(width, height, fps, seed)?,
            size: (width, height),
            fps,
        })
    }
}

impl VideoSource for SyntheticVideo {
    fn size(&self) -> (u32, u32) {
        self.size
    }
    fn fps(&self) -> f64 {
        f64::from(self.fps)
    }
    fn picture(&mut self, index: u64) -> Arc<Image> {
        Arc::new(self.source.frame(index))
    }
    fn name(&self) -> String {
        format!("synthetic {}x{}@{}", self.size.0, self.size.1, self.fps)
    }
}

/// A clip held in memory, played forwards then backwards and so on, so the loop has no cut
/// (a cut would cost a large frame the source never had); or, as a live camera loops a
/// file, from the start again after its last picture ([`LoopedClip::wrapping`]).
#[derive(Clone)]
pub struct LoopedClip {
    frames: Vec<Arc<Image>>,
    fps: f64,
    name: String,
    wrap: bool,
}

/// Why a clip cannot be played.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClipError {
    /// No picture at all.
    #[error("the clip has no frames")]
    Empty,
    /// Pictures of more than one size.
    #[error("the clip's pictures differ in size")]
    MixedSizes,
    /// The frame rate is zero, negative or not a number.
    #[error("frame rate {0} is not positive")]
    FrameRate(f64),
}

impl LoopedClip {
    /// A clip of at least one picture, all of one size.
    pub fn new(frames: Vec<Image>, fps: f64, name: String) -> Result<Self, ClipError> {
        let first = frames.first().ok_or(ClipError::Empty)?;
        let size = (first.width(), first.height());
        if frames.iter().any(|f| (f.width(), f.height()) != size) {
            return Err(ClipError::MixedSizes);
        }
        if !(fps.is_finite() && fps > 0.0) {
            return Err(ClipError::FrameRate(fps));
        }
        Ok(LoopedClip {
            frames: frames.into_iter().map(Arc::new).collect(),
            fps,
            name,
            wrap: false,
        })
    }

    /// The clip played from its start again after its last picture, as a live camera
    /// looping a file plays it (the cut costs the encoder what it costs live).
    pub fn wrapping(frames: Vec<Image>, fps: f64, name: String) -> Result<Self, ClipError> {
        Ok(LoopedClip {
            wrap: true,
            ..LoopedClip::new(frames, fps, name)?
        })
    }
}

impl VideoSource for LoopedClip {
    fn size(&self) -> (u32, u32) {
        (self.frames[0].width(), self.frames[0].height())
    }
    fn fps(&self) -> f64 {
        self.fps
    }
    fn picture(&mut self, index: u64) -> Arc<Image> {
        let n = self.frames.len() as u64;
        if n == 1 {
            return self.frames[0].clone();
        }
        if self.wrap {
            return self.frames[(index % n) as usize].clone();
        }
        // Period 2n - 2: 0 1 .. n-1 n-2 .. 1 0 1 ..
        let period = 2 * n - 2;
        let i = index % period;
        let i = if i < n { i } else { period - i };
        self.frames[i as usize].clone()
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_loops_forwards_and_backwards() {
        let frames: Vec<Image> = (0..3)
            .map(|i| {
                let mut img = Image::new(2, 2).unwrap();
                img.plane_mut(salsify_codec::PlaneId::Y).row_mut(0)[0] = i;
                img
            })
            .collect();
        let mut clip = LoopedClip::new(frames, 30.0, "t".into()).unwrap();
        let order: Vec<u8> = (0..8).map(|i| clip.picture(i).y().row(0)[0]).collect();
        assert_eq!(order, [0, 1, 2, 1, 0, 1, 2, 1]);
        let frames: Vec<Image> = (0..3).map(|i| (*clip.picture(i)).clone()).collect();
        let mut wrapped = LoopedClip::wrapping(frames, 30.0, "t".into()).unwrap();
        let order: Vec<u8> = (0..8).map(|i| wrapped.picture(i).y().row(0)[0]).collect();
        assert_eq!(
            order,
            [0, 1, 2, 0, 1, 2, 0, 1],
            "wrapped as a live camera loops"
        );
        assert_eq!(
            LoopedClip::new(vec![], 30.0, "t".into()).err(),
            Some(ClipError::Empty)
        );
    }
}
