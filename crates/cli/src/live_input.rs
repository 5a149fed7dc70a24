//! Live video inputs through ffmpeg: a screen (`x11grab:DISPLAY`, for cloud-gaming-style
//! use) and a camera (`v4l2:DEVICE`). Each becomes an ffmpeg child process writing Y4M to a
//! pipe, set up for low delay: every frame is flushed to the pipe as soon as it is grabbed
//! (`-flush_packets 1`) and passed on as grabbed, never duplicated or dropped to hold a
//! constant rate (`-fps_mode passthrough`). The camera thread then hands each picture on as
//! soon as it is read ([`crate::runtime::PictureSource::is_live`]).
//!
//! Sizes and rates: `--size` and `--fps` are what ffmpeg asks the screen grabber or camera
//! for; the Y4M header ffmpeg writes says what it got, and that is what is sent.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::size::Size;

/// A live source named by `--input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveSource {
    /// An X11 screen: `:0.0`, optionally with the grabbed area's top-left corner
    /// (`:0.0+100,200`).
    Screen {
        /// ffmpeg's x11grab input: display and offset.
        display: String,
    },
    /// A Video4Linux2 camera.
    Camera {
        /// The device, e.g. `/dev/video0`.
        device: PathBuf,
    },
}

/// The camera used when `v4l2:` names none.
const DEFAULT_CAMERA: &str = "/dev/video0";

impl LiveSource {
    /// The live source `spec` names, if it names one: `x11grab:[DISPLAY[+X,Y]]` (default: the
    /// `DISPLAY` variable) or `v4l2:[DEVICE]` (default /dev/video0). Errors say what is wrong
    /// with a spec of either form.
    pub fn parse(spec: &str) -> Option<Result<LiveSource>> {
        if let Some(display) = spec.strip_prefix("x11grab:") {
            return Some(screen(display, std::env::var("DISPLAY").ok()));
        }
        let device = spec.strip_prefix("v4l2:")?;
        let device = match device {
            "" => DEFAULT_CAMERA,
            d => d,
        };
        Some(Ok(LiveSource::Camera {
            device: PathBuf::from(device),
        }))
    }

    /// Checks what can be checked before starting ffmpeg (the camera device is there and
    /// readable), with errors that say what to do.
    pub fn check(&self) -> Result<()> {
        match self {
            LiveSource::Screen { .. } => Ok(()),
            LiveSource::Camera { device } => check_camera(device),
        }
    }

    /// ffmpeg's arguments: this source at `size` and `fps`, to Y4M on standard output.
    pub fn ffmpeg_args(&self, size: Size, fps: f64) -> Vec<String> {
        let mut args: Vec<String> = ["-v", "error", "-nostdin"].map(String::from).to_vec();
        let (format, input) = match self {
            LiveSource::Screen { display } => ("x11grab", display.clone()),
            LiveSource::Camera { device } => ("v4l2", device.display().to_string()),
        };
        args.extend([
            "-f".into(),
            format.into(),
            "-framerate".into(),
            format!("{fps}"),
            "-video_size".into(),
            size.to_string(),
            "-i".into(),
            input,
        ]);
        args.extend(
            [
                "-pix_fmt",
                "yuv420p",
                "-fps_mode",
                "passthrough",
                "-flush_packets",
                "1",
                "-f",
                "yuv4mpegpipe",
                "-",
            ]
            .map(String::from),
        );
        args
    }

    /// What to say when ffmpeg gave no video.
    pub fn hint(&self) -> String {
        match self {
            LiveSource::Screen { display } => format!(
                "ffmpeg gave no video from screen {display} (its message is above; is the X \
                 server there, and does --size fit in its screen? xdpyinfo | grep dimensions)"
            ),
            LiveSource::Camera { device } => format!(
                "ffmpeg gave no video from camera {} (its message is above; is it busy in \
                 another program, and does it offer --size and --fps? v4l2-ctl \
                 --list-formats-ext, or ffmpeg -f v4l2 -list_formats all -i {})",
                device.display(),
                device.display()
            ),
        }
    }
}

/// `x11grab:` followed by `display`; an empty one is the `DISPLAY` variable's.
fn screen(display: &str, from_env: Option<String>) -> Result<LiveSource> {
    let display = match display {
        "" => match from_env.filter(|d| !d.is_empty()) {
            Some(d) => d,
            None => bail!(
                "--input x11grab: names no display and DISPLAY is not set: give one, e.g. \
                 --input x11grab::0.0 (or x11grab::0.0+100,200 for the area from x=100, y=200)"
            ),
        },
        d => d.to_string(),
    };
    if !display.contains(':') {
        bail!(
            "--input x11grab:{display}: an X display looks like :0.0 or host:0.0 (so the input \
             is x11grab::0.0), optionally with +X,Y for the grabbed area's top-left corner"
        );
    }
    Ok(LiveSource::Screen { display })
}

fn check_camera(device: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let shown = device.display();
    let meta = match std::fs::metadata(device) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "no camera at {shown}: nothing is there. `ls /dev/video*` lists the cameras this \
             machine has (none: plug one in, or pass it through to the VM or container); name \
             one with --input v4l2:/dev/videoN"
        ),
        Err(e) => bail!("cannot look at camera {shown}: {e}"),
    };
    if !meta.file_type().is_char_device() {
        bail!("{shown} is not a camera (not a character device): name one with --input v4l2:/dev/videoN");
    }
    if let Err(e) = std::fs::File::open(device) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            bail!(
                "cannot open camera {shown}: permission denied. Add this user to the group that \
                 owns it (usually `video`: sudo usermod -aG video $USER, then log in again)"
            );
        }
        bail!("cannot open camera {shown}: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(w: u32, h: u32) -> Size {
        Size {
            width: w,
            height: h,
        }
    }

    #[test]
    fn screen_specs_name_a_display_and_an_optional_offset() {
        assert_eq!(
            screen(":0.0+100,200", None).unwrap(),
            LiveSource::Screen {
                display: ":0.0+100,200".into()
            }
        );
        assert_eq!(
            screen("", Some(":7".into())).unwrap(),
            LiveSource::Screen {
                display: ":7".into()
            }
        );
        let err = screen("", None).unwrap_err().to_string();
        assert!(err.contains("DISPLAY is not set"), "{err}");
        let err = screen("0.0", None).unwrap_err().to_string();
        assert!(err.contains("x11grab::0.0"), "{err}");
        assert!(LiveSource::parse("clip.y4m").is_none());
        assert!(LiveSource::parse("synthetic").is_none());
    }

    /// The screen grabber is asked for --size at --fps and writes every grabbed frame to the
    /// pipe at once.
    #[test]
    fn screen_ffmpeg_arguments() {
        let source = screen(":99+8,16", None).unwrap();
        let args = source.ffmpeg_args(size(1280, 720), 60.0).join(" ");
        assert_eq!(
            args,
            "-v error -nostdin -f x11grab -framerate 60 -video_size 1280x720 -i :99+8,16 \
             -pix_fmt yuv420p -fps_mode passthrough -flush_packets 1 -f yuv4mpegpipe -"
        );
    }

    #[test]
    fn camera_specs_default_to_video0_and_build_v4l2_arguments() {
        let source = LiveSource::parse("v4l2:").unwrap().unwrap();
        assert_eq!(
            source,
            LiveSource::Camera {
                device: "/dev/video0".into()
            }
        );
        let source = LiveSource::parse("v4l2:/dev/video2").unwrap().unwrap();
        let args = source.ffmpeg_args(size(640, 480), 29.97).join(" ");
        assert_eq!(
            args,
            "-v error -nostdin -f v4l2 -framerate 29.97 -video_size 640x480 -i /dev/video2 \
             -pix_fmt yuv420p -fps_mode passthrough -flush_packets 1 -f yuv4mpegpipe -"
        );
    }

    /// A missing camera, or something that is not one, is an error that says what to do,
    /// before any ffmpeg runs.
    #[test]
    fn missing_or_wrong_camera_devices_are_clear_errors() {
        let missing = LiveSource::Camera {
            device: "/dev/video-salsify-missing".into(),
        };
        let err = missing.check().unwrap_err().to_string();
        assert!(
            err.contains("no camera at /dev/video-salsify-missing"),
            "{err}"
        );
        assert!(err.contains("ls /dev/video*"), "{err}");
        let not_a_device = LiveSource::Camera {
            device: std::env::temp_dir(),
        };
        let err = not_a_device.check().unwrap_err().to_string();
        assert!(err.contains("not a camera"), "{err}");
    }
}
