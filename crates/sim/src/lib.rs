//! The virtual-time simulator: camera -> sender -> link -> receiver -> ACK link -> sender,
//! for any scheme.
//!
//! Every part is a sans-IO state machine driven with the same calls the real-time runtime
//! makes; here time jumps from one event to the next (the earliest of all deadlines), so a
//! run takes as long as its computation, not as long as the video. The endpoints are built by
//! `salsify-schemes` and driven only through the `salsify-endpoint` traits: this loop knows no
//! scheme. The codec is real (libvpx encodes and decodes every frame), but its time is charged
//! from a [`CostModel`], and every source of randomness is seeded, so the same configuration
//! gives the same per-frame log.
//!
//! Layer 4 of the workspace (README, "Layout"): on `salsify-schemes`, `salsify-netem` and
//! `salsify-metrics`, the virtual-time twin of `salsify-runtime`; the evaluation (`salsify-eval`)
//! and the black-box peers run it.

mod audio;
mod audio_log;
pub mod bounds;
mod config;
mod cost;
pub mod experiment;
mod harness;
mod log;
mod video;

pub use audio::{audio_figures, write_audio_csv, AudioOutput, AUDIO_CSV_HEADER};
pub use audio_log::{read_run_audio, read_shown_pictures, RunAudio};
pub use config::{AudioInput, SimAudio, SimConfig, SimError};
pub use cost::{
    CostError, CostModel, AV1_DECODE_US_PER_MEGAPIXEL, AV1_ENCODE_US_PER_MEGAPIXEL, LATE_ONE_IN,
};
pub use log::{write_frames_csv, FrameLog};
pub use video::{ClipError, LoopedClip, SyntheticVideo, VideoSource};

use std::collections::VecDeque;

use salsify_codec::{halved_size, scale, Image};
use salsify_endpoint::{
    Bitrate, Diagnostic, Displayed, EncodeFailed, EncodeRequest, ReceiverEndpoint, ReceiverEvent,
    ReceiverOutput, ReceiverStats, SenderEndpoint, SenderEvent, SenderOutput, SenderStats,
};
use salsify_netem::{LinkEvent, LinkStats};
use salsify_schemes::{BackgroundExecutor, Executor, Simulated, SourceInfo};
use salsify_time::{Duration, Instant};

use audio::AudioRun;
use harness::Harness;

pub use salsify_metrics::FrameRecord;
use salsify_metrics::{summarize, LinkUsage, RunInfo, Summary};

/// What a run produced.
pub struct SimOutput {
    /// One record per camera picture.
    pub records: Vec<FrameRecord>,
    /// The paper's summary of the run.
    pub summary: Summary,
    /// The sender's counters at the end.
    pub sender: SenderStats,
    /// The receiver's counters at the end.
    pub receiver: ReceiverStats,
    /// The sender's own gauges at the end.
    pub diagnostics: Vec<Diagnostic>,
    /// Every change of a rate-based scheme's targets: (time, encoder, pacing).
    pub rates: Vec<(Instant, Bitrate, Bitrate)>,
    /// Pictures shown at each coded size: (width, height, frames), in order of appearance.
    pub shown_sizes: Vec<(u32, u32, u64)>,
    /// The data link's counters at the end.
    pub data_link: LinkStats,
    /// Every event of the data link, if [`SimConfig::record_packets`] was set.
    pub packet_events: Vec<LinkEvent>,
    /// The audio's log and figures, if the run carried audio.
    pub audio: Option<AudioOutput>,
}

/// Runs one simulation; `progress` is called now and then with the virtual time reached.
pub fn simulate(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
) -> Result<SimOutput, SimError> {
    simulate_until(config, video, progress, &|| false)
}

/// [`simulate`], stopped with [`SimError::Stopped`] as soon as `stop` says so (it is asked
/// before every event, so a Ctrl-C ends even a slow run within one event).
pub fn simulate_until(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
    stop: &dyn Fn() -> bool,
) -> Result<SimOutput, SimError> {
    let mut sim = Sim::new(config, video)?;
    let end = Instant::ZERO + config.duration;
    let mut last_report = Instant::ZERO;
    while let Some(now) = sim.next_event().filter(|&t| t < end) {
        if stop() {
            return Err(SimError::Stopped);
        }
        sim.step(now)?;
        if now - last_report >= Duration::from_millis(500) {
            progress(now.since_epoch());
            last_report = now;
        }
    }
    progress(config.duration);
    sim.finish(end)
}

/// The moving parts of one run.
struct Sim<'a> {
    h: Harness<'a>,
    sender: Box<dyn SenderEndpoint>,
    receiver: Box<dyn ReceiverEndpoint>,
    encoder: BackgroundExecutor,
    /// The cost model for the scheme's codec ([`CostModel::for_codec`]).
    cost: CostModel,
    /// An encode under way. Its result comes from [`BackgroundExecutor::wait`].
    encoding: Option<Encoding>,
    rates: Vec<(Instant, Bitrate, Bitrate)>,
    shown_sizes: Vec<(u32, u32, u64)>,
    /// Datagrams the link delivered that reach the receiver late (`receive_lateness_us`),
    /// in order, with when they do.
    late: VecDeque<(Instant, Vec<u8>)>,
    /// Datagrams the link delivered so far (each one's draw of lateness).
    delivered: u64,
    /// The call's audio, if the run carries it.
    audio: Option<AudioRun>,
}

/// An encode under way in virtual time.
#[derive(Debug, Clone, Copy)]
struct Encoding {
    /// When it finishes, as far as is known: the per-area cost is known when it starts, the
    /// cost of the bytes it coded once its result is in.
    done: Instant,
    /// The request id.
    id: u64,
    /// `done` includes the cost of the bytes coded.
    bytes_charged: bool,
}

impl<'a> Sim<'a> {
    fn new(config: &'a SimConfig, video: &'a mut dyn VideoSource) -> Result<Self, SimError> {
        let h = Harness::new(config, video)?;
        let (width, height) = h.size;
        let source = SourceInfo {
            width,
            height,
            fps: h.fps,
        };
        let (w, h2) = halved_size(width, height, 1);
        let codec = config.scheme.codec();
        let cost = config.cost.for_codec(codec);
        let forecast = || h.data_link_forecast();
        let sim = Simulated {
            link_forecast: &forecast,
            encode_time: cost.encode(width, height),
            halved_encode_time: cost.encode(w, h2),
        };
        let sender = config.scheme.build_simulated_sender(&source, &sim)?;
        let receiver = config.scheme.build_receiver(&source)?;
        let jobs = config.scheme.encode_jobs();
        let audio = config.audio.as_ref().map(AudioRun::new).transpose()?;
        let executor = Executor::for_codec(codec, width, height, h.fps, config.cpu_used, jobs)?;
        Ok(Sim {
            sender,
            receiver,
            encoder: BackgroundExecutor::new(executor),
            cost,
            encoding: None,
            rates: Vec::new(),
            shown_sizes: Vec::new(),
            late: VecDeque::new(),
            delivered: 0,
            audio,
            h,
        })
    }

    fn next_event(&self) -> Option<Instant> {
        let late = self.late.front().map(|(at, _)| *at);
        let audio = self.audio.as_ref().map(AudioRun::next_event);
        let next = self.h.next_event(self.encoding.map(|e| e.done));
        next.into_iter().chain(late).chain(audio).min()
    }

    /// Handles everything due at `now`, then drains both endpoints.
    fn step(&mut self, now: Instant) -> Result<(), SimError> {
        if let Some(e) = self.encoding.take_if(|e| e.done <= now) {
            let result = self.encoder.wait()?;
            let coding = self.h.config.cost.coding_time(result.serial_bytes());
            if !e.bytes_charged && !coding.is_zero() {
                // Now the bytes are known: the encode ends later by their cost.
                self.encoder.keep(result);
                self.encoding = Some(Encoding {
                    done: e.done + coding,
                    bytes_charged: true,
                    ..e
                });
            } else {
                // An error here means the frames did not fit the request; the sender drops
                // the picture and goes on.
                let _ = self.sender.handle_encoded(now, e.id, Ok(result.outcome));
            }
        }
        if let Some((index, at)) = self.h.capture(now) {
            self.sender.handle_picture(now, index, at);
        }
        self.send_audio(now)?;
        while let Some(d) = self.h.data_link.poll_delivery(now) {
            self.h.packets.push(salsify_metrics::PacketTiming {
                sent: d.enqueued_at,
                arrived: d.delivered_at,
                bytes: d.size_bytes as u64,
            });
            let lateness = self.h.config.cost.receive_lateness(self.delivered);
            self.delivered += 1;
            if lateness.is_zero() && self.late.is_empty() {
                self.receive(now, &d.payload);
            } else {
                let behind = self.late.back().map_or(Instant::ZERO, |(at, _)| *at);
                self.late
                    .push_back(((now + lateness).max(behind), d.payload));
            }
        }
        while self.late.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, payload)) = self.late.pop_front() {
                self.receive(now, &payload);
            }
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
        if let Some(audio) = &mut self.audio {
            audio.play(now);
        }
        self.h.record_events();
        Ok(())
    }

    /// A datagram reaches the receiving side: audio to the audio player, the rest to the
    /// scheme's receiver (bad datagrams are counted there; the run goes on).
    fn receive(&mut self, now: Instant, payload: &[u8]) {
        match &mut self.audio {
            Some(audio) if salsify_audio::AudioPacket::is_audio(payload) => {
                audio.deliver(now, payload)
            }
            _ => {
                let _ = self.receiver.handle_datagram(now, payload);
            }
        }
    }

    /// The audio frames due: onto the data link beside the video, and the scheme told of
    /// each before it sizes another frame. Audio is never held back for the video.
    fn send_audio(&mut self, now: Instant) -> Result<(), SimError> {
        let Some(audio) = &mut self.audio else {
            return Ok(());
        };
        for datagram in audio.poll_send(now)? {
            self.sender.handle_audio_sent(now, datagram.len());
            let len = datagram.len() + self.h.config.datagram_overhead;
            // Refused (too large for the link) is lost like a dropped packet.
            let _ = self.h.data_link.handle_packet(now, datagram, len);
        }
        Ok(())
    }

    fn drain_sender(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(request) => self.start_encode(now, request)?,
                SenderOutput::Transmit(datagram) => {
                    let len = datagram.len() + self.h.config.datagram_overhead;
                    // A refused datagram (too large for the link) is lost like a dropped one.
                    let _ = self.h.data_link.handle_packet(now, datagram, len);
                }
                SenderOutput::Event(SenderEvent::FrameSent(sent)) => self.h.log.on_sent(&sent),
                SenderOutput::Event(
                    SenderEvent::PictureSkipped { picture, .. }
                    | SenderEvent::PictureDropped { picture, .. },
                ) => self.h.log.on_not_sent(picture),
                SenderOutput::Event(SenderEvent::Target {
                    at,
                    encoder,
                    pacing,
                }) => self.rates.push((at, encoder, pacing)),
                SenderOutput::Event(_) => {}
                SenderOutput::Timeout(t) => {
                    self.h.sender_deadline = t;
                    return Ok(());
                }
            }
        }
    }

    /// Starts an encode: in the background when its modelled time is known up front, else
    /// now, to know how much work it took.
    fn start_encode(&mut self, now: Instant, request: EncodeRequest) -> Result<(), SimError> {
        let Some(image) = self.h.log.source(request.picture).cloned() else {
            let failed = EncodeFailed(format!("picture {} is gone", request.picture));
            let _ = self.sender.handle_encoded(now, request.id, Err(failed));
            return Ok(());
        };
        let id = request.id;
        let jitter = self.h.config.cost.encode_jitter(request.picture);
        let (w, h) = self.h.size;
        let cost = &self.cost;
        let (busy, bytes_charged) = match salsify_schemes::Executor::work_for(&request.job, w, h) {
            Some(work) => {
                self.encoder.submit(request, image);
                (cost.encode_time(&work), false)
            }
            None => {
                self.encoder.submit(request, image);
                let result = self.encoder.wait()?;
                let busy = cost.encode_time(&result.work) + cost.coding_time(result.serial_bytes());
                self.encoder.keep(result);
                (busy, true)
            }
        };
        self.encoding = Some(Encoding {
            done: now + busy + jitter,
            id,
            bytes_charged,
        });
        Ok(())
    }

    fn drain_receiver(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.receiver.poll_output(now) {
                ReceiverOutput::Transmit(datagram) => {
                    let len = datagram.len() + self.h.config.datagram_overhead;
                    let _ = self.h.feedback_link.handle_packet(now, datagram, len);
                }
                ReceiverOutput::Event(ReceiverEvent::Display(shown)) => self.display(shown)?,
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

    /// Shows a decoded frame once the (modelled) decoder has finished with it. A picture
    /// coded smaller than the source (a resolution ladder) is scaled up for scoring.
    fn display(&mut self, shown: Displayed) -> Result<(), SimError> {
        let (w, h) = (shown.picture.width(), shown.picture.height());
        match self.shown_sizes.last_mut() {
            Some(last) if (last.0, last.1) == (w, h) => last.2 += 1,
            _ => self.shown_sizes.push((w, h, 1)),
        }
        let start = shown.at.max(self.h.decoder_free);
        let at = start + self.cost.decode(w, h);
        self.h.decoder_free = at;
        let frame = shown.frame;
        let picture: Image = if (w, h) == self.h.size {
            shown.picture
        } else {
            scale(&shown.picture, self.h.size.0, self.h.size.1)?
        };
        let index = self.h.log.on_display(frame, at, picture);
        if let (Some(audio), Some(index)) = (&mut self.audio, index) {
            audio.on_shown(self.h.capture_time(index), at);
        }
        Ok(())
    }

    fn finish(mut self, end: Instant) -> Result<SimOutput, SimError> {
        self.h.close(end);
        let config = self.h.config;
        let link = self.h.data_link.stats();
        let capacity_bytes = self
            .h
            .data_link
            .trace()
            .opportunities_until(config.duration)
            * u64::from(self.h.data_link.opportunity_bytes());
        let network = self.h.network_measure(end);
        let records = self.h.log.into_records()?;
        let run = RunInfo {
            duration: config.duration,
            link: Some(LinkUsage {
                delivered_bytes: link.bytes_delivered,
                capacity_bytes,
            }),
        };
        let mut summary = summarize(&records, &run)?;
        summary.network = Some(network);
        let audio = self.audio.map(AudioRun::finish);
        summary.audio = audio.as_ref().map(|a| a.figures);
        Ok(SimOutput {
            records,
            summary,
            sender: self.sender.stats(),
            receiver: self.receiver.stats(),
            diagnostics: self.sender.diagnostics(),
            rates: self.rates,
            shown_sizes: self.shown_sizes,
            data_link: link,
            packet_events: self.h.packet_events,
            audio,
        })
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;
    use salsify_codec::CodecError;

    /// A codec or metrics error is said once in an error chain (it was said twice: once in
    /// the message, once as the source).
    #[test]
    fn wrapped_errors_are_said_once() {
        let e = SimError::from(CodecError::InvalidInput("plane too small".into()));
        assert!(e.to_string().contains("plane too small"));
        assert!(std::error::Error::source(&e).is_none());
    }
}
