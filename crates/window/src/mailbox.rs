//! The hand-over between the receiver and the window: a slot for the newest picture.
//!
//! The receiver puts each shown picture in the slot and never waits: a picture the window
//! has not taken yet is replaced, and counted as dropped. The window takes the newest picture
//! when it is ready for one. So a slow window costs skipped pictures, never delay.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use salsify_codec::Image;

/// What went through the slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Pictures handed to the window.
    pub offered: u64,
    /// Pictures the window took and showed.
    pub shown: u64,
    /// Pictures replaced by a newer one before the window took them (it fell behind).
    pub dropped: u64,
    /// Time from hand-over to the end of presenting, summed over the pictures shown: what the
    /// window adds after the receiver's display time.
    pub present_delay_total: Duration,
    /// The longest such time.
    pub present_delay_max: Duration,
}

impl WindowStats {
    /// Mean time from hand-over to presented; `None` before the first picture.
    pub fn present_delay_mean(&self) -> Option<Duration> {
        let shown = u32::try_from(self.shown).ok().filter(|&n| n > 0)?;
        Some(self.present_delay_total / shown)
    }
}

#[derive(Default)]
struct Slot {
    /// The newest picture and when it was handed over.
    picture: Option<(Arc<Image>, Instant)>,
    stats: WindowStats,
}

/// The shared slot.
#[derive(Default)]
pub(crate) struct Mailbox {
    slot: Mutex<Slot>,
    ready: Condvar,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A panic while holding the lock leaves a slot that is still consistent.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts `picture` in the slot, replacing (dropping) one not yet taken.
    pub(crate) fn put(&self, picture: Arc<Image>) {
        let mut slot = self.lock();
        slot.stats.offered += 1;
        if slot.picture.replace((picture, Instant::now())).is_some() {
            slot.stats.dropped += 1;
        }
        drop(slot);
        self.ready.notify_one();
    }

    /// Takes the newest picture and when it was handed over, waiting at most `wait` for one.
    pub(crate) fn take(&self, wait: Duration) -> Option<(Arc<Image>, Instant)> {
        let slot = self.lock();
        let (mut slot, _) = self
            .ready
            .wait_timeout_while(slot, wait, |s| s.picture.is_none())
            .unwrap_or_else(|e| e.into_inner());
        let picture = slot.picture.take();
        if picture.is_some() {
            slot.stats.shown += 1;
        }
        picture
    }

    /// Counts a picture handed over at `since` as presented now.
    pub(crate) fn presented(&self, since: Instant) {
        let delay = since.elapsed();
        let mut slot = self.lock();
        slot.stats.present_delay_total += delay;
        slot.stats.present_delay_max = slot.stats.present_delay_max.max(delay);
    }

    /// Counts so far; a picture still in the slot is neither shown nor dropped.
    pub(crate) fn stats(&self) -> WindowStats {
        self.lock().stats
    }
}

/// The sending side of a window: cheap to clone, usable from any thread, never blocks for
/// longer than a pointer swap under a lock.
#[derive(Clone)]
pub struct Screen(pub(crate) Arc<Mailbox>);

impl Screen {
    /// Hands `picture` to the window; an older one it has not shown yet is dropped.
    pub fn show(&self, picture: Arc<Image>) {
        self.0.put(picture);
    }

    /// What went through so far.
    pub fn stats(&self) -> WindowStats {
        self.0.stats()
    }
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Screen").field(&self.stats()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(luma: u8) -> Arc<Image> {
        let mut image = Image::new(32, 16).unwrap();
        image
            .plane_mut(salsify_codec::PlaneId::Y)
            .data_mut()
            .fill(luma);
        Arc::new(image)
    }

    /// The window gets the newest picture; the ones it missed are counted as dropped.
    #[test]
    fn newest_picture_wins_and_missed_ones_are_counted() {
        let mailbox = Arc::new(Mailbox::default());
        let screen = Screen(mailbox.clone());
        for v in [10, 20, 30] {
            screen.show(picture(v));
        }
        let (got, since) = mailbox.take(Duration::ZERO).unwrap();
        assert_eq!(got.y().row(0)[0], 30);
        mailbox.presented(since);
        assert!(mailbox.take(Duration::from_millis(1)).is_none());
        screen.show(picture(40));
        assert_eq!(mailbox.take(Duration::ZERO).unwrap().0.y().row(0)[0], 40);
        let stats = screen.stats();
        assert_eq!(
            (stats.offered, stats.shown, stats.dropped),
            (4, 2, 2),
            "{stats:?}"
        );
        assert!(stats.present_delay_max <= stats.present_delay_total);
    }

    /// A waiting window wakes as soon as a picture comes from another thread.
    #[test]
    fn a_waiting_window_wakes_for_a_picture_from_another_thread() {
        let mailbox = Arc::new(Mailbox::default());
        let screen = Screen(mailbox.clone());
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            screen.show(picture(7));
        });
        let start = std::time::Instant::now();
        let got = mailbox.take(Duration::from_secs(10));
        assert!(got.is_some());
        assert!(start.elapsed() < Duration::from_secs(5));
        sender.join().unwrap();
    }
}
