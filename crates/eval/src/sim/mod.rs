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

/// The moving parts of one run.
struct Sim<'a> {
    config: &'a SimConfig,
    video: &'a mut dyn VideoSource,
    size: (u32, u32),
    sender: Sender<salsify_codec::EncodedFrame>,
    receiver: salsify_transport::Receiver<Vp8Decoder>,
    data_link: Link<Vec<u8>>,
    feedback_link: Link<Vec<u8>>,
    encoder: BackgroundEncoder,
    log: FrameLog,
    /// An encode under way: when it finishes (virtual time) and its request id. The
    /// frames come from [`BackgroundEncoder::wait`].
    encoding: Option<(Instant, u64)>,
    next_capture: (u64, Instant),
    fps: f64,
    sender_deadline: Instant,
    receiver_deadline: Instant,
    /// The receiver's decoder is busy until then (decodes run one at a time).
    decoder_free: Instant,
    packet_events: Vec<LinkEvent>,
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
    let end = Instant::ZERO + config.duration;
    let mut last_report = Instant::ZERO;
    while let Some(now) = sim.next_event().filter(|&t| t < end) {
        sim.step(now)?;
        if now - last_report >= Duration::from_millis(500) {
            progress(now.since_epoch());
            last_report = now;
        }
    }
    progress(config.duration);
    sim.finish(end)
}

impl<'a> Sim<'a> {
    fn new(config: &'a SimConfig, video: &'a mut dyn VideoSource) -> Result<Self, SimError> {
        let bad = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
        config.cost.validate().map_err(|e| bad(&e))?;
        let fps = video.fps();
        if !(fps.is_finite() && fps > 0.0) {
            return Err(SimError::Config(format!("frame rate {fps}")));
        }
        let size = video.size();
        let mut data = config.data_link.clone();
        data.record_events = config.record_packets;
        Ok(Sim {
            config,
            size,
            sender: Sender::new(config.sender.clone(), State::initial()).map_err(|e| bad(&e))?,
            receiver: salsify_transport::Receiver::new(config.receiver.clone(), Vp8Decoder::new()?)
                .map_err(|e| bad(&e))?,
            data_link: Link::new(data, Instant::ZERO).map_err(|e| bad(&e))?,
            feedback_link: Link::new(config.feedback_link.clone(), Instant::ZERO)
                .map_err(|e| bad(&e))?,
            encoder: BackgroundEncoder::new(EncodeWorker::new(size.0, size.1, config.cpu_used)?),
            video,
            log: FrameLog::default(),
            encoding: None,
            next_capture: (0, Instant::ZERO),
            fps,
            sender_deadline: Instant::FAR_FUTURE,
            receiver_deadline: Instant::FAR_FUTURE,
            decoder_free: Instant::ZERO,
            packet_events: Vec::new(),
        })
    }

    /// When the camera supplies picture `index` (computed from the index, so no rounding
    /// error accumulates over a long run).
    fn capture_time(&self, index: u64) -> Instant {
        Instant::from_micros((index as f64 * 1e6 / self.fps).round() as u64)
    }

    /// The earliest time anything happens.
    fn next_event(&self) -> Option<Instant> {
        [
            Some(self.next_capture.1),
            self.encoding.as_ref().map(|e| e.0),
            self.data_link.poll_timeout(),
            self.feedback_link.poll_timeout(),
            Some(self.sender_deadline),
            Some(self.receiver_deadline),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Handles everything due at `now`, then drains both endpoints.
    fn step(&mut self, now: Instant) -> Result<(), SimError> {
        if self.encoding.is_some_and(|e| e.0 <= now) {
            let (_, id) = self.encoding.take().expect("checked above");
            let frames = self.encoder.wait()?.frames;
            // An error here means the frames were inconsistent; the sender drops the picture.
            let _ = self.sender.handle_encoded(now, id, frames);
        }
        if self.next_capture.1 <= now {
            let (index, at) = self.next_capture;
            self.log.on_capture(index, at, self.video.picture(index));
            self.sender.handle_frame(now, index, at);
            self.next_capture = (index + 1, self.capture_time(index + 1));
        }
        while let Some(d) = self.data_link.poll_delivery(now) {
            // Bad datagrams are counted by the receiver; the run goes on.
            let _ = self.receiver.handle_datagram(now, &d.payload);
        }
        while let Some(d) = self.feedback_link.poll_delivery(now) {
            let _ = self.sender.handle_datagram(now, &d.payload);
        }
        if self.sender_deadline <= now {
            self.sender.handle_timeout(now);
        }
        if self.receiver_deadline <= now {
            self.receiver.handle_timeout(now);
        }
        self.drain_sender(now)?;
        self.drain_receiver(now)?;
        if self.config.record_packets {
            while let Some(e) = self.data_link.poll_event() {
                self.packet_events.push(e);
            }
        }
        Ok(())
    }

    fn drain_sender(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(request) => {
                    let Some(image) = self.log.source(request.picture).cloned() else {
                        let _ = self.sender.handle_encode_failed(now, request.id);
                        continue;
                    };
                    let id = request.id;
                    let (w, h) = self.size;
                    let cost = &self.config.cost;
                    let busy = match &request.job {
                        // The time is known up front: encode in the background meanwhile.
                        EncodeJob::Qualities(q) => {
                            let busy =
                                self.config
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
                    let _ = self.data_link.handle_packet(now, datagram, len);
                }
                SenderOutput::Event(SenderEvent::FrameSent(sent)) => self.log.on_sent(&sent),
                SenderOutput::Event(SenderEvent::PictureSkipped { picture, .. })
                | SenderOutput::Event(SenderEvent::PictureDropped { picture, .. }) => {
                    self.log.on_not_sent(picture)
                }
                SenderOutput::Event(_) => {}
                SenderOutput::Timeout(t) => {
                    self.sender_deadline = t;
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
                    let _ = self.feedback_link.handle_packet(now, ack, len);
                }
                ReceiverOutput::Event(ReceiverEvent::Display {
                    frame, at, picture, ..
                }) => self.display(frame, at, picture)?,
                ReceiverOutput::Event(ReceiverEvent::FramesLost { through, .. }) => {
                    self.log.on_lost_through(through)
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(t) => {
                    self.receiver_deadline = t;
                    return Ok(());
                }
            }
        }
    }

    /// Shows a decoded frame once the (modelled) decoder has finished with it.
    fn display(&mut self, frame: u32, at: Instant, picture: Image) -> Result<(), SimError> {
        let start = at.max(self.decoder_free);
        let shown = start + self.config.cost.decode(self.size.0, self.size.1);
        self.decoder_free = shown;
        self.log.on_display(frame, shown, picture);
        Ok(())
    }

    fn finish(mut self, end: Instant) -> Result<SimOutput, SimError> {
        self.data_link.handle_timeout(end);
        if self.config.record_packets {
            while let Some(e) = self.data_link.poll_event() {
                self.packet_events.push(e);
            }
        }
        let salsify = (self.sender.stats(), self.receiver.stats());
        finish_output(
            self.config,
            &self.data_link,
            self.log,
            self.packet_events,
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
