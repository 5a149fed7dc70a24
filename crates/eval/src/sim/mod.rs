//! The virtual-time simulator: camera -> sender -> link -> receiver -> ACK link -> sender.
//!
//! Every part is a sans-IO state machine driven with the same calls the real-time runtime
//! makes; here time jumps from one event to the next (the earliest of all deadlines), so a
//! run takes as long as its computation, not as long as the video. The codec is real (libvpx
//! encodes and decodes every frame), but its time is charged from a [`CostModel`], and every
//! source of randomness is seeded, so the same configuration gives the same per-frame log.

mod baseline;
mod cost;
mod encode;
mod harness;
mod log;
mod scheme;
mod video;

pub use baseline::BaselineOutput;
pub use cost::CostModel;
pub use encode::{BackgroundEncoder, EncodeWorker, Parallelism};
pub use log::{write_frames_csv, FrameLog};
pub use scheme::Scheme;
pub use video::{LoopedClip, SyntheticVideo, VideoSource};

use salsify_codec::{CodecError, Image, State};
use salsify_netem::{Link, LinkConfig, LinkEvent, LinkStats};

use harness::{config_error, Harness, Run};
use salsify_time::{Duration, Instant};
use salsify_transport::{
    EncodeJob, ReceiverConfig, ReceiverEvent, ReceiverOutput, ReceiverStats, Sender, SenderConfig,
    SenderEvent, SenderOutput, SenderStats, Vp8Decoder,
};

use crate::metrics::{summarize, FrameRecord, LinkUsage, MetricsError, RunInfo, Summary};

/// Everything a run depends on besides the video.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Which system runs. Default [`Scheme::Salsify`], configured by `sender` and
    /// `parallelism`; the baselines carry their own configuration.
    pub scheme: Scheme,
    /// The sender's parameters (Salsify or one of its ablations).
    pub sender: SenderConfig,
    /// The receiver's parameters.
    pub receiver: ReceiverConfig,
    /// Salsify-1c or -2c.
    pub parallelism: Parallelism,
    /// The link carrying video from sender to receiver.
    pub data_link: LinkConfig,
    /// The link carrying ACKs back.
    pub feedback_link: LinkConfig,
    /// Virtual time simulated.
    pub duration: Duration,
    /// Time charged for encoding and decoding.
    pub cost: CostModel,
    /// libvpx speed (negative cpu-used).
    pub cpu_used: i32,
    /// Record every packet event of the data link (for a Mahimahi log).
    pub record_packets: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scheme: Scheme::Salsify,
            sender: SenderConfig::default(),
            receiver: ReceiverConfig::default(),
            parallelism: Parallelism::Parallel,
            data_link: LinkConfig::default(),
            feedback_link: LinkConfig::default(),
            duration: Duration::from_secs(10),
            cost: CostModel::default(),
            cpu_used: -8,
            record_packets: false,
        }
    }
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The codec failed (on the simulator's own pictures: a bug or a libvpx problem).
    #[error("codec: {0}")]
    Codec(#[from] CodecError),
    /// Scoring failed.
    #[error("metrics: {0}")]
    Metrics(#[from] MetricsError),
}

/// What a run produced.
pub struct SimOutput {
    /// One record per camera picture.
    pub records: Vec<FrameRecord>,
    /// The paper's summary of the run.
    pub summary: Summary,
    /// The Salsify sender's counters at the end (all zero for a baseline scheme).
    pub sender: SenderStats,
    /// The Salsify receiver's counters at the end (all zero for a baseline scheme).
    pub receiver: ReceiverStats,
    /// A baseline scheme's counters and rate log (`None` for Salsify).
    pub baseline: Option<BaselineOutput>,
    /// The data link's counters at the end.
    pub data_link: LinkStats,
    /// Every event of the data link, if [`SimConfig::record_packets`] was set.
    pub packet_events: Vec<LinkEvent>,
}

/// The moving parts of one Salsify run.
struct Sim<'a> {
    h: Harness<'a>,
    sender: Sender<salsify_codec::EncodedFrame>,
    receiver: salsify_transport::Receiver<Vp8Decoder>,
    encoder: BackgroundEncoder,
    /// An encode under way: when it finishes (virtual time) and its request id. The
    /// frames come from [`BackgroundEncoder::wait`].
    encoding: Option<(Instant, u64)>,
}

/// Runs one simulation; `progress` is called now and then with the virtual time reached.
pub fn simulate(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
) -> Result<SimOutput, SimError> {
    if config.scheme != Scheme::Salsify {
        return baseline::run(config, video, progress);
    }
    let mut sim = Sim::new(config, video)?;
    let end = harness::drive(&mut sim, config.duration, progress)?;
    sim.finish(end)
}

impl Run for Sim<'_> {
    fn next_event(&self) -> Option<Instant> {
        self.h.next_event(self.encoding.map(|e| e.0))
    }

    /// Handles everything due at `now`, then drains both endpoints.
    fn step(&mut self, now: Instant) -> Result<(), SimError> {
        if self.encoding.is_some_and(|e| e.0 <= now) {
            let (_, id) = self.encoding.take().expect("checked above");
            let frames = self.encoder.wait()?.frames;
            // An error here means the frames were inconsistent; the sender drops the picture.
            let _ = self.sender.handle_encoded(now, id, frames);
        }
        if let Some((index, at)) = self.h.capture(now) {
            self.sender.handle_frame(now, index, at);
        }
        while let Some(d) = self.h.data_link.poll_delivery(now) {
            // Bad datagrams are counted by the receiver; the run goes on.
            let _ = self.receiver.handle_datagram(now, &d.payload);
        }
        while let Some(d) = self.h.feedback_link.poll_delivery(now) {
            let _ = self.sender.handle_datagram(now, &d.payload);
        }
        if self.h.sender_deadline <= now {
            self.sender.handle_timeout(now);
        }
        if self.h.receiver_deadline <= now {
            self.receiver.handle_timeout(now);
        }
        self.drain_sender(now)?;
        self.drain_receiver(now)?;
        self.h.record_events();
        Ok(())
    }
}

impl<'a> Sim<'a> {
    fn new(config: &'a SimConfig, video: &'a mut dyn VideoSource) -> Result<Self, SimError> {
        let h = Harness::new(config, video)?;
        let (w, h_px) = h.size;
        Ok(Sim {
            sender: Sender::new(config.sender.clone(), State::initial()).map_err(config_error)?,
            receiver: salsify_transport::Receiver::new(config.receiver.clone(), Vp8Decoder::new()?)
                .map_err(config_error)?,
            encoder: BackgroundEncoder::new(EncodeWorker::new(w, h_px, config.cpu_used)?),
            encoding: None,
            h,
        })
    }

    fn drain_sender(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(request) => {
                    let Some(image) = self.h.log.source(request.picture).cloned() else {
                        let _ = self.sender.handle_encode_failed(now, request.id);
                        continue;
                    };
                    let id = request.id;
                    let (w, h) = self.h.size;
                    let cost = &self.h.config.cost;
                    let busy = match &request.job {
                        // The time is known up front: encode in the background meanwhile.
                        EncodeJob::Qualities(q) => {
                            let busy =
                                self.h
                                    .config
                                    .parallelism
                                    .encode_time(cost, w, h, q.len() as u32);
                            self.encoder.submit(request, image);
                            busy
                        }
                        // Prediction work varies: encode now to know how long it took.
                        EncodeJob::SizeTarget { .. } => {
                            self.encoder.submit(request, image);
                            let result = self.encoder.wait()?;
                            let busy = cost.encode(w, h).mul_f64(result.encode_equivalents);
                            self.encoder.submit_ready(result);
                            busy
                        }
                    };
                    self.encoding = Some((now + busy, id));
                }
                SenderOutput::Transmit(datagram) => {
                    let len = datagram.len();
                    // A refused datagram (too large for the link) is lost like a dropped one.
                    let _ = self.h.data_link.handle_packet(now, datagram, len);
                }
                SenderOutput::Event(SenderEvent::FrameSent(sent)) => self.h.log.on_sent(&sent),
                SenderOutput::Event(SenderEvent::PictureSkipped { picture, .. })
                | SenderOutput::Event(SenderEvent::PictureDropped { picture, .. }) => {
                    self.h.log.on_not_sent(picture)
                }
                SenderOutput::Event(_) => {}
                SenderOutput::Timeout(t) => {
                    self.h.sender_deadline = t;
                    return Ok(());
                }
            }
        }
    }

    fn drain_receiver(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.receiver.poll_output() {
                ReceiverOutput::Transmit(ack) => {
                    let len = ack.len();
                    let _ = self.h.feedback_link.handle_packet(now, ack, len);
                }
                ReceiverOutput::Event(ReceiverEvent::Display {
                    frame, at, picture, ..
                }) => self.display(frame, at, picture)?,
                ReceiverOutput::Event(ReceiverEvent::FramesLost { through, .. }) => {
                    self.h.log.on_lost_through(through)
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => {
                    self.h.receiver_deadline = t;
                    return Ok(());
                }
            }
        }
    }

    /// Shows a decoded frame once the (modelled) decoder has finished with it.
    fn display(&mut self, frame: u32, at: Instant, picture: Image) -> Result<(), SimError> {
        let start = at.max(self.h.decoder_free);
        let shown = start + self.h.config.cost.decode(self.h.size.0, self.h.size.1);
        self.h.decoder_free = shown;
        self.h.log.on_display(frame, shown, picture);
        Ok(())
    }

    fn finish(mut self, end: Instant) -> Result<SimOutput, SimError> {
        self.h.close(end);
        let salsify = (self.sender.stats(), self.receiver.stats());
        finish_output(
            self.h.config,
            &self.h.data_link,
            self.h.log,
            self.h.packet_events,
            Some(salsify),
            None,
        )
    }
}

/// Scores a finished run. `salsify` holds Salsify's endpoint counters; a baseline run passes
/// `None` (zero counters are reported) and its own output.
fn finish_output(
    config: &SimConfig,
    data_link: &Link<Vec<u8>>,
    log: FrameLog,
    packet_events: Vec<LinkEvent>,
    salsify: Option<(SenderStats, ReceiverStats)>,
    baseline: Option<BaselineOutput>,
) -> Result<SimOutput, SimError> {
    let link = data_link.stats();
    let capacity_bytes = data_link.trace().opportunities_until(config.duration)
        * u64::from(data_link.opportunity_bytes());
    let records = log.into_records()?;
    let run = RunInfo {
        duration: config.duration,
        link: Some(LinkUsage {
            delivered_bytes: link.bytes_delivered,
            capacity_bytes,
        }),
    };
    let summary = summarize(&records, &run)?;
    let (sender, receiver) = match salsify {
        Some(stats) => stats,
        None => {
            // Counters of endpoints that never ran: the struct's zero values.
            let bad = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
            let s: Sender<salsify_codec::EncodedFrame> =
                Sender::new(config.sender.clone(), State::initial()).map_err(|e| bad(&e))?;
            let r = salsify_transport::Receiver::new(config.receiver.clone(), Vp8Decoder::new()?)
                .map_err(|e| bad(&e))?;
            (s.stats(), r.stats())
        }
    };
    Ok(SimOutput {
        records,
        summary,
        sender,
        receiver,
        baseline,
        data_link: link,
        packet_events,
    })
}
