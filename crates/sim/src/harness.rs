//! What a simulated run holds besides its endpoints: the camera's clock, both emulated links,
//! the endpoints' deadlines, the frame log and the recorded link events.

use salsify_netem::{FailureForecast, Link, LinkEvent, LossPlacement};
use salsify_time::Instant;

use super::{FrameLog, SimConfig, SimError, VideoSource};

/// The scheme-independent parts of a run.
pub(super) struct Harness<'a> {
    pub config: &'a SimConfig,
    pub video: &'a mut dyn VideoSource,
    /// The source's picture size.
    pub size: (u32, u32),
    pub fps: f64,
    pub data_link: Link<Vec<u8>>,
    pub feedback_link: Link<Vec<u8>>,
    pub log: FrameLog,
    /// The next picture the camera supplies, and when.
    pub next_capture: (u64, Instant),
    pub sender_deadline: Instant,
    pub receiver_deadline: Instant,
    /// The receiver's decoder is busy until then (decodes run one at a time).
    pub decoder_free: Instant,
    pub packet_events: Vec<LinkEvent>,
    /// Every datagram the video link delivered (for Sprout's measurement).
    pub packets: Vec<salsify_metrics::PacketTiming>,
}

impl<'a> Harness<'a> {
    /// Checks the configuration and builds both links.
    pub fn new(config: &'a SimConfig, video: &'a mut dyn VideoSource) -> Result<Self, SimError> {
        config.cost.validate().map_err(config_error)?;
        let fps = video.fps();
        if !(fps.is_finite() && fps > 0.0) {
            return Err(SimError::Config(format!("frame rate {fps}")));
        }
        let mut data = config.data_link.clone();
        data.record_events = config.record_packets;
        Ok(Harness {
            config,
            size: video.size(),
            video,
            fps,
            data_link: Link::new(data, Instant::ZERO).map_err(config_error)?,
            feedback_link: Link::new(config.feedback_link.clone(), Instant::ZERO)
                .map_err(config_error)?,
            log: FrameLog::new(config.score_below_band),
            next_capture: (0, Instant::ZERO),
            sender_deadline: Instant::FAR_FUTURE,
            receiver_deadline: Instant::FAR_FUTURE,
            decoder_free: Instant::ZERO,
            packet_events: Vec::new(),
            packets: Vec::new(),
        })
    }

    /// When the camera supplies picture `index` (computed from the index, so no rounding
    /// error accumulates over a long run).
    pub fn capture_time(&self, index: u64) -> Instant {
        Instant::from_micros((index as f64 * 1e6 / self.fps).round() as u64)
    }

    /// The earliest time anything happens, given when the encode under way (if any) ends.
    pub fn next_event(&self, encode_done: Option<Instant>) -> Option<Instant> {
        [
            Some(self.next_capture.1),
            encode_done,
            self.data_link.poll_timeout(),
            self.feedback_link.poll_timeout(),
            Some(self.sender_deadline),
            Some(self.receiver_deadline),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The picture the camera supplies at `now`, if one is due: logged, and returned as
    /// (index, capture time) for the sender.
    pub fn capture(&mut self, now: Instant) -> Option<(u64, Instant)> {
        if self.next_capture.1 > now {
            return None;
        }
        let (index, at) = self.next_capture;
        self.log.on_capture(index, at, self.video.picture(index));
        self.next_capture = (index + 1, self.capture_time(index + 1));
        Some((index, at))
    }

    /// Keeps the video link's events, if the run records them.
    pub fn record_events(&mut self) {
        if self.config.record_packets {
            while let Some(e) = self.data_link.poll_event() {
                self.packet_events.push(e);
            }
        }
    }

    /// The video link's future, for a scheme that reads it (the oracle): its delivery
    /// opportunities from netem's own trace arithmetic and its failure windows from netem's
    /// own seeded streams (the link starts at time zero). Failures are forecast where the
    /// link decides loss as packets enter (the default); i.i.d. loss is not forecast.
    pub fn data_link_forecast(&self) -> salsify_schemes::LinkForecast {
        let link = &self.config.data_link;
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

    /// Sprout's measurement of the video link over the run, after the configured skip.
    pub fn network_measure(&self, end: Instant) -> salsify_metrics::SproutMeasure {
        let link = &self.config.data_link;
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

    /// Brings the video link to the end of the run (its capacity counts to the end).
    pub fn close(&mut self, end: Instant) {
        self.data_link.handle_timeout(end);
        self.record_events();
    }
}

/// A configuration the run cannot use.
pub(super) fn config_error(e: impl std::fmt::Display) -> SimError {
    SimError::Config(e.to_string())
}
