//! A video input named on the command line (`synthetic`, a Y4M file or pipe, any file ffmpeg
//! reads) as the camera's [`PictureSource`], optionally looped, as a [`CameraConfig`] says.

use anyhow::{bail, Result};
use salsify_codec::Image;
use salsify_runtime::{CameraConfig, PictureSource};

use crate::input::{Size, VideoInput};

/// An open input.
pub struct CameraInput {
    config: CameraConfig,
    input: VideoInput,
}

impl CameraInput {
    /// Opens the input now, so a bad one is an error before anything starts.
    pub fn open(config: &CameraConfig) -> Result<Self> {
        if config.looped && config.input == "-" {
            bail!("--loop cannot replay standard input");
        }
        if config.looped && crate::live_input::LiveSource::parse(&config.input).is_some() {
            bail!("--loop cannot replay a live source ({})", config.input);
        }
        // Its errors name the input.
        let input = VideoInput::open(&config.input, size(config), config.fps)?;
        Ok(CameraInput {
            config: config.clone(),
            input,
        })
    }
}

impl PictureSource for CameraInput {
    fn size(&self) -> (u32, u32) {
        (self.input.size.width, self.input.size.height)
    }

    fn fps(&self) -> f64 {
        self.input.fps
    }

    fn is_live(&self) -> bool {
        self.input.live
    }

    fn next_picture(&mut self) -> Result<Option<Image>> {
        if let Some(image) = self.input.next_frame()? {
            return Ok(Some(image));
        }
        if !self.config.looped {
            return Ok(None);
        }
        let c = &self.config;
        self.input = VideoInput::open(&c.input, size(c), c.fps)?;
        self.input.next_frame()
    }
}

/// The camera's size as the inputs take it.
fn size(config: &CameraConfig) -> Size {
    let (width, height) = config.size;
    Size { width, height }
}
