//! The camera: a thread that plays a video input at its frame rate, like a webcam.
//!
//! It never waits for the consumer: each picture is handed over as soon as it is due (the
//! control loop keeps only the newest, as the sender asks). A source that cannot keep up
//! (a slow pipe) is played as fast as it delivers, without bursts to catch up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::Image;
use salsify_time::{Duration, Instant};

use super::clock;
use crate::input::{Size, VideoInput};

/// A picture as the camera captured it.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Picture number, from 0.
    pub id: u64,
    /// When it was captured (handed over).
    pub at: Instant,
    /// The picture.
    pub image: Arc<Image>,
}

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

/// Opens the input now (so a bad input is an error before anything starts) and plays it on a
/// new thread until `stop` is set, the input ends, or `deliver` returns false; `deliver(None)`
/// says the camera stopped. Returns the picture size and frame rate.
pub fn start(
    config: CameraConfig,
    stop: Arc<AtomicBool>,
    deliver: impl FnMut(Option<Captured>) -> bool + Send + 'static,
) -> Result<(Size, f64, std::thread::JoinHandle<()>)> {
    let input = VideoInput::open(&config.input, config.size, config.fps)
        .with_context(|| format!("cannot open video input '{}'", config.input))?;
    let (size, fps) = (input.size, input.fps);
    let handle = std::thread::Builder::new()
        .name("camera".into())
        .spawn(move || {
            let mut deliver = deliver;
            if let Err(e) = play(input, &config, &stop, &mut deliver) {
                eprintln!("salsify: camera stopped: {e:#}");
            }
            deliver(None);
        })
        .context("cannot start the camera thread")?;
    Ok((size, fps, handle))
}

fn play(
    mut input: VideoInput,
    config: &CameraConfig,
    stop: &AtomicBool,
    deliver: &mut impl FnMut(Option<Captured>) -> bool,
) -> Result<()> {
    let interval = Duration::from_secs_f64(1.0 / input.fps.max(0.1));
    let mut due = clock::now();
    let mut id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let image = match input.next_frame()? {
            Some(image) => image,
            None if config.looped && config.input != "-" => {
                input = VideoInput::open(&config.input, config.size, config.fps)?;
                continue;
            }
            None => return Ok(()),
        };
        sleep_until(due, stop);
        let at = clock::now();
        if !deliver(Some(Captured {
            id,
            at,
            image: Arc::new(image),
        })) {
            return Ok(());
        }
        id += 1;
        // Late by more than a frame: restart the schedule rather than burst.
        due = if at > due + interval {
            at + interval
        } else {
            due + interval
        };
    }
    Ok(())
}

/// Sleeps until `deadline`, waking at least every 50 ms to look at `stop`.
fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    loop {
        let left = clock::until(deadline);
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
