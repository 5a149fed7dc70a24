//! What one direction of a run holds besides its endpoints: the camera's clock, the
//! endpoints' deadlines, the frame log and the media link's deliveries.

use salsify_netem::{FailureForecast, LinkConfig, LossPlacement};
use salsify_time::Instant;

use super::{FrameLog, SimConfig, SimError, VideoSource};

/// The scheme-independent parts of one direction.
pub(super) struct Harness<'a> {
    pub config: &'a SimConfig,
    /// The link this direction's media travel on (its configuration).
    pub media_link: &'a LinkConfig,
    /// The source's picture size.
    pub size: (u32, u32),
    pub fps: f64,
    pub log: FrameLog,
    /// The next picture the camera supplies, and when.
    pub next_capture: (u64, Instant),
    pub sender_deadline: Instant,
    pub receiver_deadline: Instant,
    /// The receiver's decoder is busy until then (decodes run one at a time).
    pub decoder_free: Instant,
    /// Every media datagram the link delivered (for Sprout's measurement).
    pub packets: Vec<salsify_metrics::PacketTiming>,
}

impl<'a> Harness<'a> {
    /// One direction whose camera has `video`'s size and rate and whose media travel on
    /// `media_link`.
    pub fn new(
        config: &'a SimConfig,
        media_link: &'a LinkConfig,
        video: &dyn VideoSource,
    ) -> Harness<'a> {
        Harness {
            config,
            media_link,
            size: video.size(),
            fps: video.fps(),
            log: FrameLog::new(config.score_below_band),
            next_capture: (0, Instant::ZERO),
            sender_deadline: Instant::FAR_FUTURE,
            receiver_deadline: Instant::FAR_FUTURE,
            decoder_free: Instant::ZERO,
            packets: Vec::new(),
        }
    }

    /// When the camera supplies picture `index` (computed from the index, so no rounding
    /// error accumulates over a long run).
    pub fn capture_time(&self, index: u64) -> Instant {
        Instant::from_micros((index as f64 * 1e6 / self.fps).round() as u64)
    }

    /// The earliest time anything of this direction but its links happens, given when the
    /// encode under way (if any) ends.
    pub fn next_event(&self, encode_done: Option<Instant>) -> Option<Instant> {
        [
            Some(self.next_capture.1),
            encode_done,
            Some(self.sender_deadline),
            Some(self.receiver_deadline),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The picture the camera supplies at `now`, if one is due: logged, and returned as
    /// (index, capture time) for the sender.
    pub fn capture(&mut self, now: Instant, video: &mut dyn VideoSource) -> Option<(u64, Instant)> {
        if self.next_capture.1 > now {
            return None;
        }
        let (index, at) = self.next_capture;
        self.log.on_capture(index, at, video.picture(index));
        self.next_capture = (index + 1, self.capture_time(index + 1));
        Some((index, at))
    }

    /// The media link's future, for a scheme that reads it (the oracle): its delivery
    /// opportunities from netem's own trace arithmetic and its failure windows from netem's
    /// own seeded streams (the link starts at time zero). Failures are forecast where the
    /// link decides loss as packets enter (the default); i.i.d. loss is not forecast. In a
    /// two-way call the other side's feedback on the same link is not in it.
    pub fn media_link_forecast(&self) -> salsify_schemes::LinkForecast {
        let link = self.media_link;
        let trace = link.trace.clone();
        let mut failures = match link.loss_placement {
            LossPlacement::Entry => FailureForecast::new(&link.loss, link.seed, Instant::ZERO),
            _ => FailureForecast::never(),
        };
        salsify_schemes::LinkForecast {
            opportunity: Box::new(move |n| Instant::ZERO + trace.opportunity_time(n)),
            opportunity_bytes: link.opportunity_bytes,
            propagation: link.propagation_delay,
            up_at: Box::new(move |t| failures.up_at(t)),
        }
    }

    /// Sprout's measurement of the media link over the run, after the configured skip.
    pub fn network_measure(&self, end: Instant) -> salsify_metrics::SproutMeasure {
        let link = self.media_link;
        let until = end.since_epoch();
        let n = link.trace.opportunities_until(until);
        let opportunities: Vec<Instant> = (0..n)
            .map(|i| Instant::ZERO + link.trace.opportunity_time(i))
            .collect();
        let capacity = salsify_metrics::LinkCapacity {
            opportunities: &opportunities,
            opportunity_bytes: u64::from(link.opportunity_bytes),
            propagation: link.propagation_delay,
        };
        let from = (Instant::ZERO + self.config.network_skip).min(end);
        salsify_metrics::SproutMeasure::compute(&self.packets, &capacity, from, end)
    }
}

/// A configuration the run cannot use.
pub(super) fn config_error(e: impl std::fmt::Display) -> SimError {
    SimError::Config(e.to_string())
}
