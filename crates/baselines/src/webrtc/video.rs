//! libwebrtc's video-sender policies around the encoder (video/video_stream_encoder.cc and
//! its adaptation resources), reduced to what a single camera stream uses:
//!
//! - [`Resolution`]: the coded size. `VideoAdapter`'s scale steps (alternately x3/4 and
//!   x2/3: 1, 3/4, 1/2, 3/8, 1/4, ...; media/base/video_adapter.cc), stepped down by the
//!   initial frame drop (`DropDueToSize`) and up or down by a QP-based `QualityScaler`.
//! - [`CwndFrameDropper`]: congestion-window pushback as libwebrtc applies it by default
//!   (`VideoStreamEncoder::UpdateTargetBitrate`): drop every n-th picture and lower the
//!   encoder's target by 1/n.

use std::collections::VecDeque;

use salsify_time::{Bitrate, Duration, Instant};

/// `kMaxInitialFramedrop` (video/video_stream_encoder.cc).
pub const MAX_INITIAL_FRAMEDROP: u32 = 4;
/// The smallest picture the adapter scales to (`kDefaultMinPixelsPerFrame`, 320x180,
/// video/adaptation/video_stream_encoder_resource_manager.cc / libvpx VP8's min pixels).
pub const MIN_PIXELS: u64 = 320 * 180;
/// libvpx VP8's QP thresholds for the quality scaler (`kLowVp8QpThreshold`,
/// `kHighVp8QpThreshold`, modules/video_coding/codecs/vp8/libvpx_vp8_encoder.cc), on the
/// 0..=127 quantizer-index scale libvpx reports.
pub const VP8_QP_LOW: u32 = 29;
/// See [`VP8_QP_LOW`].
pub const VP8_QP_HIGH: u32 = 95;
/// The quality scaler's check period (`kMeasureMs`, quality_scaler.cc); the first check
/// comes after half of it (its fast ramp-up).
pub const QP_CHECK_PERIOD: Duration = Duration::from_millis(2000);
/// Frames observed before the scaler acts (`kMinFramesNeededToScale`, 2 x 30).
pub const MIN_FRAMES_TO_SCALE: usize = 60;
/// Frames in the QP average (`kAverageQpWindow`-style moving average of 5 x 30 frames).
pub const QP_WINDOW: usize = 150;
/// Dropped share of pictures over the window that forces a step down
/// (`kFramedropPercentThreshold`, 60 %).
pub const FRAMEDROP_PERCENT_DOWN: usize = 60;

/// The picture size for `step` steps down from `source` (x3/4, then x2/3 of that, ...),
/// rounded down to even sides.
pub fn scaled(source: (u32, u32), step: u32) -> (u32, u32) {
    let (mut num, mut den) = (1u64, 1u64);
    for i in 0..step {
        if i % 2 == 0 {
            num *= 3;
            den *= 4;
        } else {
            num *= 2;
            den *= 3;
        }
    }
    let side = |s: u32| ((u64::from(s) * num / den) as u32 & !1).max(2);
    (side(source.0), side(source.1))
}

fn pixels(size: (u32, u32)) -> u64 {
    u64::from(size.0) * u64::from(size.1)
}

/// `DropDueToSize`'s rule: at an encoder target below 300 kb/s pictures above 320x240 are
/// too large to start with, below 500 kb/s above 640x480.
pub fn too_large_to_start(size: (u32, u32), target: Bitrate) -> bool {
    let p = pixels(size);
    if target < Bitrate::kbps(300) {
        p > 320 * 240
    } else if target < Bitrate::kbps(500) {
        p > 640 * 480
    } else {
        false
    }
}

/// What the resolution policy says of a picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Encode it at this size.
    Encode((u32, u32)),
    /// Drop it (an initial frame drop; the size stepped down).
    DropInitial,
}

/// The coded resolution.
#[derive(Debug, Clone)]
pub struct Resolution {
    source: (u32, u32),
    step: u32,
    initial_frame_drop: bool,
    quality_scaler: bool,
    initial_drops: u32,
    /// Initial dropping has ended (a frame was encoded).
    started: bool,
    /// (QP, dropped) of the latest pictures since the last adaptation.
    samples: VecDeque<(Option<u32>, bool)>,
    next_check: Option<Instant>,
    adaptations: u64,
}

impl Resolution {
    /// The policy for a `source`-sized camera.
    pub fn new(source: (u32, u32), initial_frame_drop: bool, quality_scaler: bool) -> Self {
        Resolution {
            source,
            step: 0,
            initial_frame_drop,
            quality_scaler,
            initial_drops: 0,
            started: false,
            samples: VecDeque::new(),
            next_check: None,
            adaptations: 0,
        }
    }

    /// The current coded size.
    pub fn size(&self) -> (u32, u32) {
        scaled(self.source, self.step)
    }

    /// Resolution changes so far (initial drops included).
    pub fn adaptations(&self) -> u64 {
        self.adaptations
    }

    fn can_step_down(&self) -> bool {
        pixels(scaled(self.source, self.step + 1)) >= MIN_PIXELS
    }

    fn step_down(&mut self) -> bool {
        if !self.can_step_down() {
            return false;
        }
        self.step += 1;
        self.adaptations += 1;
        self.samples.clear();
        true
    }

    /// A picture arrives while the encoder's target is `target`.
    pub fn admit(&mut self, now: Instant, target: Bitrate) -> Admit {
        if self.next_check.is_none() {
            self.next_check = Some(now + QP_CHECK_PERIOD / 2);
        }
        if self.initial_frame_drop
            && !self.started
            && self.initial_drops < MAX_INITIAL_FRAMEDROP
            && too_large_to_start(self.size(), target)
        {
            self.initial_drops += 1;
            if self.step_down() {
                return Admit::DropInitial;
            }
        }
        Admit::Encode(self.size())
    }

    /// The encoder ran on a picture: `qp` of its frame, or `None` when its rate control
    /// dropped it. Returns true when the size changed.
    pub fn on_encoded(&mut self, now: Instant, qp: Option<u32>) -> bool {
        if qp.is_some() {
            self.started = true;
        }
        self.samples.push_back((qp, qp.is_none()));
        while self.samples.len() > QP_WINDOW {
            self.samples.pop_front();
        }
        self.check(now)
    }

    /// A picture was dropped before encoding (counts towards the drop share).
    pub fn on_dropped(&mut self, now: Instant) -> bool {
        self.samples.push_back((None, true));
        while self.samples.len() > QP_WINDOW {
            self.samples.pop_front();
        }
        self.check(now)
    }

    fn check(&mut self, now: Instant) -> bool {
        if !self.quality_scaler || self.next_check.is_none_or(|t| now < t) {
            return false;
        }
        self.next_check = Some(now + QP_CHECK_PERIOD);
        if self.samples.len() < MIN_FRAMES_TO_SCALE {
            return false;
        }
        let dropped = self.samples.iter().filter(|s| s.1).count();
        let qps: Vec<u32> = self.samples.iter().filter_map(|s| s.0).collect();
        if dropped * 100 >= FRAMEDROP_PERCENT_DOWN * self.samples.len() {
            return self.step_down();
        }
        if qps.is_empty() {
            return false;
        }
        let avg = qps.iter().map(|&q| u64::from(q)).sum::<u64>() / qps.len() as u64;
        if avg > u64::from(VP8_QP_HIGH) {
            return self.step_down();
        }
        if avg <= u64::from(VP8_QP_LOW) && self.step > 0 {
            self.step -= 1;
            self.adaptations += 1;
            self.samples.clear();
            return true;
        }
        false
    }
}

/// Congestion-window pushback applied by dropping pictures.
#[derive(Debug, Clone, Default)]
pub struct CwndFrameDropper {
    interval: Option<u64>,
    counter: u64,
}

impl CwndFrameDropper {
    /// The controller's `target` with its `cwnd_reduce_ratio`, and the stream's `min`:
    /// returns the encoder's target (`VideoStreamEncoder::UpdateTargetBitrate`: above a
    /// 1 % ratio, drop every n-th picture, n = max(2, target / reduction), and give the
    /// encoder target - target / n).
    pub fn update(&mut self, target: Bitrate, ratio: f64, min: Bitrate) -> Bitrate {
        if ratio > 0.01 && target > min {
            let reduce = (target.as_f64() * ratio).min((target.as_bps() - min.as_bps()) as f64);
            if reduce >= 1.0 {
                let n = ((target.as_f64() / reduce) as u64).max(2);
                self.interval = Some(n);
                return Bitrate::bps(target.as_bps() - target.as_bps() / n);
            }
        }
        self.interval = None;
        target
    }

    /// Whether this picture is dropped (`cwnd_frame_counter_++ % interval == 0`).
    pub fn drop_picture(&mut self) -> bool {
        let Some(n) = self.interval else {
            return false;
        };
        let drop = self.counter.is_multiple_of(n);
        self.counter += 1;
        drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_steps_are_the_video_adapters() {
        let s = (1280, 720);
        let sizes: Vec<_> = (0..5).map(|i| scaled(s, i)).collect();
        assert_eq!(
            sizes,
            vec![(1280, 720), (960, 540), (640, 360), (480, 270), (320, 180)]
        );
    }

    /// At libwebrtc's 300 kb/s start (less its packet overhead, under 300 kb/s for the
    /// encoder), a 720p camera starts at 320x180 after four dropped pictures, as Chromium
    /// was measured to; at 450 kb/s it starts at 640x360.
    #[test]
    fn initial_frame_drop_starts_720p_small() {
        let t = Instant::ZERO;
        let mut r = Resolution::new((1280, 720), true, true);
        let mut drops = 0;
        let size = loop {
            match r.admit(t, Bitrate::kbps(295)) {
                Admit::DropInitial => drops += 1,
                Admit::Encode(s) => break s,
            }
        };
        assert_eq!((drops, size), (4, (320, 180)));
        let mut r = Resolution::new((1280, 720), true, true);
        while r.admit(t, Bitrate::kbps(450)) == Admit::DropInitial {}
        assert_eq!(r.size(), (640, 360));
        let mut r = Resolution::new((1280, 720), false, true);
        assert_eq!(r.admit(t, Bitrate::kbps(100)), Admit::Encode((1280, 720)));
    }

    #[test]
    fn low_qp_scales_up_high_qp_scales_down() {
        let mut r = Resolution::new((1280, 720), true, true);
        while r.admit(Instant::ZERO, Bitrate::kbps(295)) == Admit::DropInitial {}
        assert_eq!(r.size(), (320, 180));
        let mut t = Instant::ZERO;
        let mut changed_at = None;
        for i in 0..200 {
            t = Instant::from_millis(i * 33);
            if r.on_encoded(t, Some(20)) {
                changed_at = Some(t);
                break;
            }
        }
        assert_eq!(r.size(), (480, 270), "{changed_at:?}");
        assert!(changed_at.unwrap() >= Instant::from_millis(1900));
        for i in 0..200 {
            t += Duration::from_millis(33 * (i % 2 + 1) / 2 + 16);
            if r.on_encoded(t, Some(110)) {
                break;
            }
        }
        assert_eq!(r.size(), (320, 180));
    }

    #[test]
    fn cwnd_pushback_drops_every_nth_picture() {
        let mut d = CwndFrameDropper::default();
        let t = d.update(Bitrate::kbps(1000), 0.25, Bitrate::kbps(30));
        assert_eq!(t, Bitrate::kbps(750));
        let drops: Vec<bool> = (0..8).map(|_| d.drop_picture()).collect();
        assert_eq!(drops.iter().filter(|&&x| x).count(), 2);
        assert_eq!(
            d.update(Bitrate::kbps(1000), 0.005, Bitrate::kbps(30)),
            Bitrate::kbps(1000)
        );
        assert!(!d.drop_picture());
        // At most every other picture.
        assert_eq!(
            d.update(Bitrate::kbps(1000), 0.9, Bitrate::kbps(30)),
            Bitrate::kbps(500)
        );
    }
}
