//! Where a sender's pictures come from (`salsify send`, `salsify demo`), converted into the
//! runtime's [`CameraConfig`].

use clap::Args;
use salsify_runtime::CameraConfig;

use crate::input::Size;

/// Where pictures come from.
#[derive(Args, Debug, Clone)]
pub struct SourceArgs {
    /// `synthetic` (built in), a `.y4m` file (played at its own rate, like a webcam), `-` for
    /// Y4M on standard input (`ffmpeg -i any.mp4 -f yuv4mpegpipe - | salsify send --input -`),
    /// a live screen `x11grab:DISPLAY[+X,Y]` (e.g. `x11grab::0.0`; `x11grab:` is $DISPLAY) or
    /// camera `v4l2:DEVICE` (`v4l2:` is /dev/video0), grabbed by ffmpeg at --size and --fps
    /// and sent as grabbed, or any other file, decoded through ffmpeg.
    #[arg(long, default_value = "synthetic")]
    pub input: String,
    /// Picture size of the synthetic source, or the area a live screen or camera is asked for.
    #[arg(long, default_value = "640x360")]
    pub size: Size,
    /// Frame rate of the synthetic source, or what a live screen or camera is asked for
    /// (files play at their own rate).
    #[arg(long, default_value_t = 30.0, value_parser = crate::input::parse_fps)]
    pub fps: f64,
    /// Play a file again from the start when it ends (not for `-`).
    #[arg(long = "loop")]
    pub looped: bool,
}

impl From<&SourceArgs> for CameraConfig {
    fn from(s: &SourceArgs) -> CameraConfig {
        CameraConfig {
            input: s.input.clone(),
            size: (s.size.width, s.size.height),
            fps: s.fps,
            looped: s.looped,
        }
    }
}
