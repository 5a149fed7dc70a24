//! The camera: a thread that plays a picture source at its frame rate, like a webcam.
//!
//! It never waits for the consumer: each picture is handed over as soon as it is due (the
//! sender loop keeps only the newest few, as senders ask for recent pictures). A source that
//! cannot keep up (a slow pipe) is played as fast as it delivers, without bursts to catch up.
//! A live source (a screen or camera grabber, [`PictureSource::is_live`]) keeps its own time:
//! its pictures are handed over as soon as they are read.
//!
//! Where pictures come from is the caller's business ([`PictureSource`]): the runtime knows
//! files and pipes no more than it knows schemes. [`SyntheticCamera`] is the built-in one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::{Image, PlaneId, SyntheticSource};
use salsify_time::{Duration, Instant};

use crate::clock;
use crate::display::LiveView;
use crate::switch::Switch;

/// Pictures to play, all of one size.
pub trait PictureSource: Send {
    /// Picture width and height.
    fn size(&self) -> (u32, u32);
    /// Frames per second to play them at.
    fn fps(&self) -> f64;
    /// The next picture; `None` at the end.
    fn next_picture(&mut self) -> Result<Option<Image>>;
    /// A live source (a screen or camera grabber) delivers pictures when they are taken:
    /// each is handed over as soon as it is read, without waiting for its slot at `fps`
    /// (which would add delay, and let pictures pile up if the source runs slightly fast).
    fn is_live(&self) -> bool {
        false
    }
}

/// The codec crate's synthetic moving test pattern, endless.
pub struct SyntheticCamera {
    source: SyntheticSource,
    fps: u32,
}

impl SyntheticCamera {
    /// `width` x `height` at `fps` frames per second; `seed` picks the pattern.
    pub fn new(width: u32, height: u32, fps: u32, seed: u64) -> Result<Self> {
        let source = SyntheticSource::new(width, height, fps, seed).context("synthetic source")?;
        Ok(SyntheticCamera { source, fps })
    }
}

impl PictureSource for SyntheticCamera {
    fn size(&self) -> (u32, u32) {
        (self.source.width(), self.source.height())
    }

    fn fps(&self) -> f64 {
        f64::from(self.fps)
    }

    fn next_picture(&mut self) -> Result<Option<Image>> {
        Ok(Some(self.source.next_frame().image))
    }
}

/// No pictures at all, of another source's size and rate: a side of a call that sends
/// none (`--input none`) still has encoders of some size; it never uses them.
pub struct NoPictures {
    size: (u32, u32),
    fps: f64,
}

impl NoPictures {
    /// Ends at once; says it has `like`'s size and rate.
    pub fn like(like: &dyn PictureSource) -> Self {
        NoPictures {
            size: like.size(),
            fps: like.fps(),
        }
    }
}

impl PictureSource for NoPictures {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn fps(&self) -> f64 {
        self.fps
    }

    fn next_picture(&mut self) -> Result<Option<Image>> {
        Ok(None)
    }
}

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

/// A call's camera as its window's keys leave it: a black picture in place of each one
/// while the camera is off (the peer sees it went dark, and a still picture costs almost
/// nothing to send), and each picture that goes out shown small in the window (`preview`).
pub struct SwitchedCamera {
    inner: Box<dyn PictureSource>,
    off: Switch,
    preview: Option<LiveView>,
    black: Option<Image>,
}

impl SwitchedCamera {
    /// `inner`, off while `off` is on, its pictures also handed to `preview`.
    pub fn new(inner: Box<dyn PictureSource>, off: Switch, preview: Option<LiveView>) -> Self {
        SwitchedCamera {
            inner,
            off,
            preview,
            black: None,
        }
    }

    /// A black picture of `size` (limited-range I420: luma 16, chroma 128).
    fn black(&mut self, size: (u32, u32)) -> Result<Image> {
        if let Some(b) = self
            .black
            .as_ref()
            .filter(|b| (b.width(), b.height()) == size)
        {
            return Ok(b.clone());
        }
        let mut image = Image::new(size.0, size.1).context("a black picture")?;
        for (id, value) in [(PlaneId::Y, 16), (PlaneId::U, 128), (PlaneId::V, 128)] {
            image.plane_mut(id).data_mut().fill(value);
        }
        self.black = Some(image.clone());
        Ok(image)
    }
}

impl PictureSource for SwitchedCamera {
    fn size(&self) -> (u32, u32) {
        self.inner.size()
    }

    fn fps(&self) -> f64 {
        self.inner.fps()
    }

    fn next_picture(&mut self) -> Result<Option<Image>> {
        let Some(picture) = self.inner.next_picture()? else {
            return Ok(None);
        };
        let picture = match self.off.is_on() {
            true => self.black((picture.width(), picture.height()))?,
            false => picture,
        };
        if let Some(view) = &self.preview {
            view.show(Arc::new(picture.clone()));
        }
        Ok(Some(picture))
    }

    fn is_live(&self) -> bool {
        self.inner.is_live()
    }
}

/// Plays `source` on a new thread until `stop` is set, the source ends, or `deliver` returns
/// false; `deliver(None)` says the camera stopped. The thread's result is why the source
/// failed, if it did (a file cut short, a grabber that died), so a caller can say so.
pub fn start(
    source: Box<dyn PictureSource>,
    stop: Arc<AtomicBool>,
    deliver: impl FnMut(Option<Captured>) -> bool + Send + 'static,
) -> Result<std::thread::JoinHandle<Option<String>>> {
    std::thread::Builder::new()
        .name("camera".into())
        .spawn(move || {
            let mut deliver = deliver;
            let failed = play(source, &stop, &mut deliver)
                .err()
                .map(|e| format!("{e:#}"));
            if let Some(why) = &failed {
                eprintln!("salsify: camera stopped: {why}");
            }
            deliver(None);
            failed
        })
        .context("cannot start the camera thread")
}

fn play(
    mut source: Box<dyn PictureSource>,
    stop: &AtomicBool,
    deliver: &mut impl FnMut(Option<Captured>) -> bool,
) -> Result<()> {
    let interval = Duration::from_secs_f64(1.0 / source.fps().max(0.1));
    let live = source.is_live();
    let mut due = clock::now();
    let mut id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(image) = source.next_picture()? else {
            return Ok(());
        };
        if !live {
            sleep_until(due, stop);
        }
        let at = capture_time(live, due, interval, clock::now());
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
/// When a picture handed over at `now` was captured. A live source's pictures are stamped
/// when read. A played one is a camera with a perfect clock: its picture is captured when
/// due, and the thread's lateness in waking (up to a few ms on a busy machine) is delay the
/// picture then carries, as a real camera's hardware stamp would show it; only a picture more
/// than an interval late (the source could not keep up) is stamped when it came. Stamping
/// the wake-up instead gave libvpx gaps between pictures 13% short or long in 2% of frames
/// at 720p60, and its rate control resizes each frame from the latest gap.
fn capture_time(live: bool, due: Instant, interval: Duration, now: Instant) -> Instant {
    if live || now > due + interval {
        now
    } else {
        due
    }
}

fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    loop {
        let left = clock::until(deadline);
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_played_picture_is_stamped_when_due_unless_a_whole_interval_late() {
        let due = Instant::from_millis(1000);
        let interval = Duration::from_micros(16_667);
        let woke = Instant::from_micros(1_003_000);
        assert_eq!(capture_time(false, due, interval, woke), due);
        let very_late = Instant::from_micros(1_020_000);
        assert_eq!(capture_time(false, due, interval, very_late), very_late);
        // A live source's picture is stamped when it was read.
        assert_eq!(capture_time(true, due, interval, woke), woke);
    }
}
