//! A sender for a rate controller written outside this crate: the baselines' video sender
//! (CBR libvpx, fragmentation, pacing, NACK and PLI, transport feedback) with the target
//! rate left to a [`RateController`]. A scheme family plugs its controller in here and gets
//! a complete sender on the baselines' wire; [`crate::BaselineReceiver`] is its receiver.

use salsify_endpoint::{
    CbrSettings, DatagramError, DropReason, EncodeFailed, EncodeOutcome, InputError,
    SenderEndpoint, SenderEvent, SenderOutput, SenderStats,
};
use salsify_time::{Bitrate, Duration, Instant};

use crate::core::{Core, Incoming, Picture};
use crate::error::datagram_error;
use crate::history::PacketResult;
use crate::wire_id::WireId;

/// The least a controller's target leaves the video once the audio's rate is taken from it.
const MIN_VIDEO: Bitrate = Bitrate::kbps(30);

/// A congestion controller that sets the video's target rate from transport feedback.
pub trait RateController: Send + std::fmt::Debug {
    /// The scheme's name (as in experiment files).
    fn scheme(&self) -> &'static str;
    /// Its number on the wire ([`WireId::Plugin`]; 0-127, one per plugged-in family).
    fn wire_number(&self) -> u8;
    /// The rate before any feedback.
    fn start_rate(&self) -> Bitrate;
    /// The receiver reported these packets (in send order; `arrival` on its clock).
    fn on_feedback(&mut self, now: Instant, packets: &[PacketResult]);
    /// The target for the next frame.
    fn target(&mut self, now: Instant) -> Bitrate;
    /// How much faster than the target the pacer may send (default 2.5, libwebrtc's).
    fn pacing_factor(&self) -> f64 {
        2.5
    }
}

/// The baselines' video sender driven by a [`RateController`].
#[derive(Debug)]
pub struct RateSender<C: RateController> {
    controller: C,
    source: (u32, u32),
    core: Core,
    waiting: Option<Picture>,
}

impl<C: RateController> RateSender<C> {
    /// A sender for a `source` = (width, height) camera.
    pub fn new(controller: C, source: (u32, u32)) -> Self {
        let mut core = Core::new(WireId::Plugin(controller.wire_number()));
        let start = controller.start_rate();
        core.pacer
            .set_rate(start.mul_f64(controller.pacing_factor()));
        core.stats.target = start;
        RateSender {
            controller,
            source,
            core,
            waiting: None,
        }
    }

    /// The controller.
    pub fn controller(&self) -> &C {
        &self.controller
    }

    fn maybe_encode(&mut self, now: Instant) {
        if self.core.encoding.is_some() {
            return;
        }
        let Some(p) = self.waiting.take() else {
            return;
        };
        let wanted = self.controller.target(now);
        let target = self.core.less_audio(now, wanted, MIN_VIDEO);
        if target != self.core.stats.target {
            self.core.stats.target = target;
            let pacing = target.mul_f64(self.controller.pacing_factor());
            self.core.pacer.set_rate(pacing);
            self.core.event(SenderEvent::Target {
                at: now,
                encoder: target,
                pacing,
            });
        }
        let settings = CbrSettings {
            dropframe_thresh: 0,
            max_gap_frames: 0,
        };
        let job = self
            .core
            .cbr
            .job(target, self.core.keyframe_owed, self.source, settings);
        self.core.request_cbr(p, job);
    }
}

impl<C: RateController> SenderEndpoint for RateSender<C> {
    fn scheme(&self) -> &'static str {
        self.controller.scheme()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.core.stats.pictures += 1;
        if let Some(old) = self.waiting.replace(Picture { picture, captured }) {
            self.core.dropped(now, old, DropReason::EncoderBusy);
        }
        self.maybe_encode(now);
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let Some((p, frame)) = self.core.take_cbr_result(now, id, result)? else {
            return Ok(());
        };
        match frame {
            Some(f) => {
                self.core.queue_frame(now, p, &f);
            }
            None => self.core.dropped(now, p, DropReason::RateControl),
        }
        self.maybe_encode(now);
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        let incoming = self.core.handle_datagram(now, datagram);
        if let Incoming::Feedback(results) = &incoming {
            self.controller.on_feedback(now, results);
        }
        self.maybe_encode(now);
        match incoming {
            Incoming::Bad(e) => Err(datagram_error(e)),
            _ => Ok(()),
        }
    }

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.core.audio.on_sent(now, bytes);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.maybe_encode(now);
    }

    /// The baselines' video sender's: fragments of the size the path carries, and what waits
    /// over a lowered size dropped with a keyframe next.
    fn set_max_datagram(&mut self, _now: Instant, bytes: usize) {
        self.core.set_max_datagram(bytes);
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        loop {
            if let Some(o) = self.core.out.pop_front() {
                return o;
            }
            if !self.core.pacer.is_empty() && self.core.pacer.may_send(now) {
                if let Some(q) = self.core.pacer.pop(now) {
                    self.core.transmit(now, q);
                    continue;
                }
            }
            let next = match self.core.pacer.is_empty() {
                true => Instant::FAR_FUTURE,
                false => self
                    .core
                    .pacer
                    .next_send()
                    .max(now + Duration::from_micros(1)),
            };
            return SenderOutput::Timeout(next);
        }
    }

    fn stats(&self) -> SenderStats {
        self.core.stats.common(Some(self.core.stats.target))
    }
}
