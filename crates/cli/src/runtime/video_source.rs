//! A video input named on the command line (`synthetic`, a Y4M file or pipe, any file ffmpeg
//! reads) as the camera's [`PictureSource`], optionally looped.

use anyhow::{bail, Result};
use salsify_codec::Image;
use salsify_runtime::PictureSource;

use crate::input::{Size, VideoInput};

/// Where the camera's pictures come from.
#[derive(Debug, Clone)]
pub struct CameraConfig {
    /// `synthetic`, a `.y4m` file, `-` (Y4M on standard input) or any file ffmpeg reads.
    pub input: String,
    /// Size of the synthetic source.
    pub size: Size,
    /// Frame rate of the synthetic source (files play at their own rate).
    pub fps: f64,
    /// Start again at the end of a file (not for `-`).
    pub looped: bool,
}

/// An open input.
pub struct VideoSource {
    config: CameraConfig,
    input: VideoInput,
}

impl VideoSource {
    /// Opens the input now, so a bad one is an error before anything starts.
    pub fn open(config: &CameraConfig) -> Result<Self> {
        if config.looped && config.input == "-" {
            bail!("--loop cannot replay standard input");
        }
        if config.looped && crate::live_input::LiveSource::parse(&config.input).is_some() {
            bail!("--loop cannot replay a live source ({})", config.input);
        }
        // Its errors name the input.
        let input = VideoInput::open(&config.input, config.size, config.fps)?;
        Ok(VideoSource {
            config: config.clone(),
            input,
        })
    }
}

impl PictureSource for VideoSource {
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
        self.input = VideoInput::open(&c.input, c.size, c.fps)?;
        self.input.next_frame()
    }
}
