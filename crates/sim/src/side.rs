//! One direction of a run: a sender at one end and its receiver at the other, with the
//! encoder, the decoder's clock, the audio and the logs between them. A one-way run has one
//! side; a two-way call has two, whose datagrams share the run's links ([`Links`]).

use std::collections::VecDeque;

use salsify_codec::{halved_size, scale, Image};
use salsify_endpoint::{
    Bitrate, Displayed, EncodeFailed, EncodeRequest, ReceiverEndpoint, ReceiverEvent,
    ReceiverOutput, SenderEndpoint, SenderEvent, SenderOutput,
};
use salsify_netem::{Delivered, LinkConfig};
use salsify_schemes::{BackgroundExecutor, Executor, Simulated, SourceInfo};
use salsify_time::{Duration, Instant};

use crate::audio::AudioRun;
use crate::harness::Harness;
use crate::links::{feedback_link, media_link, Datagram, For, Links};
use crate::{CostModel, FeedbackDelay, SimConfig, SimError, SimOutput, VideoSource};
use salsify_metrics::{summarize, LinkUsage, RunInfo};

/// The moving parts of one direction.
pub(crate) struct Side<'a> {
    /// Which side: its media travel on link `index`, its feedback on the other.
    index: usize,
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
    /// Every feedback datagram the sender received: (queue delay, one-way delay).
    feedback: Vec<(Duration, Duration)>,
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

impl<'a> Side<'a> {
    /// Side `index`, its media over `media`, its camera playing `video`.
    pub fn new(
        index: usize,
        config: &'a SimConfig,
        media: &'a LinkConfig,
        video: &dyn VideoSource,
    ) -> Result<Self, SimError> {
        let h = Harness::new(config, media, video);
        let (width, height) = h.size;
        let source = SourceInfo {
            width,
            height,
            fps: h.fps,
        };
        let (w, h2) = halved_size(width, height, 1);
        let codec = config.scheme.codec();
        let cost = config.cost.for_codec(codec);
        let forecast = || h.media_link_forecast();
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
        Ok(Side {
            index,
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
            feedback: Vec::new(),
            h,
        })
    }

    /// When anything of this side but the links happens next.
    pub fn next_event(&self) -> Option<Instant> {
        let late = self.late.front().map(|(at, _)| *at);
        let audio = self.audio.as_ref().map(AudioRun::next_event);
        let next = self.h.next_event(self.encoding.map(|e| e.done));
        next.into_iter().chain(late).chain(audio).min()
    }

    /// The start of a step: a finished encode to the sender, the camera's picture, the
    /// audio due onto the media link.
    pub fn begin(
        &mut self,
        now: Instant,
        video: &mut dyn VideoSource,
        links: &mut Links,
    ) -> Result<(), SimError> {
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
        if let Some((index, at)) = self.h.capture(now, video) {
            self.sender.handle_picture(now, index, at);
        }
        self.send_audio(now, links)
    }

    /// A media datagram the link delivered: to the receiving end, now or (modelled
    /// lateness) later, in order.
    pub fn on_media(&mut self, now: Instant, d: Delivered<Datagram>) {
        self.h.packets.push(salsify_metrics::PacketTiming {
            sent: d.enqueued_at,
            arrived: d.delivered_at,
            bytes: d.size_bytes as u64,
        });
        let lateness = self.h.config.cost.receive_lateness(self.delivered);
        self.delivered += 1;
        if lateness.is_zero() && self.late.is_empty() {
            self.receive(now, &d.payload.bytes);
        } else {
            let behind = self.late.back().map_or(Instant::ZERO, |(at, _)| *at);
            self.late
                .push_back(((now + lateness).max(behind), d.payload.bytes));
        }
    }

    /// A feedback datagram the link delivered: timed, and to the sender.
    pub fn on_feedback(&mut self, now: Instant, d: Delivered<Datagram>) {
        self.feedback.push((d.queue_delay(), d.total_delay()));
        let _ = self.sender.handle_datagram(now, &d.payload.bytes);
    }

    /// The end of a step: the late datagrams due, both endpoints' timers, then everything
    /// both endpoints have to say, and the audio played.
    pub fn finish_step(&mut self, now: Instant, links: &mut Links) -> Result<(), SimError> {
        while self.late.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, payload)) = self.late.pop_front() {
                self.receive(now, &payload);
            }
        }
        if self.h.sender_deadline <= now {
            self.sender.handle_timeout(now);
        }
        if self.h.receiver_deadline <= now {
            self.receiver.handle_timeout(now);
        }
        self.drain_sender(now, links)?;
        self.drain_receiver(now, links)?;
        if let Some(audio) = &mut self.audio {
            audio.play(now);
        }
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

    /// Sends `bytes` from this side's sender (`media`) or receiver over its link.
    fn send(&self, links: &mut Links, now: Instant, media: bool, bytes: Vec<u8>) {
        let len = bytes.len() + self.h.config.datagram_overhead;
        let (link, to) = match media {
            true => (media_link(self.index), For::Media(self.index)),
            false => (feedback_link(self.index), For::Feedback(self.index)),
        };
        links.send(now, link, to, bytes, len);
    }

    /// The audio frames due: onto the media link beside the video, and the scheme told of
    /// each before it sizes another frame. Audio is never held back for the video.
    fn send_audio(&mut self, now: Instant, links: &mut Links) -> Result<(), SimError> {
        let Some(audio) = &mut self.audio else {
            return Ok(());
        };
        for datagram in audio.poll_send(now)? {
            self.sender.handle_audio_sent(now, datagram.len());
            self.send(links, now, true, datagram);
        }
        Ok(())
    }

    fn drain_sender(&mut self, now: Instant, links: &mut Links) -> Result<(), SimError> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(request) => self.start_encode(now, request)?,
                SenderOutput::Transmit(datagram) => self.send(links, now, true, datagram),
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

    fn drain_receiver(&mut self, now: Instant, links: &mut Links) -> Result<(), SimError> {
        loop {
            match self.receiver.poll_output(now) {
                ReceiverOutput::Transmit(datagram) => self.send(links, now, false, datagram),
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

    /// This direction's results, its media link brought to `end` already. Its
    /// utilisation counts its own media only, not the other side's feedback on its link.
    pub fn finish(self, end: Instant, links: &mut Links) -> Result<SimOutput, SimError> {
        let config = self.h.config;
        let media = media_link(self.index);
        let link = links.stats(media);
        let capacity_bytes = links.trace(media).opportunities_until(config.duration)
            * u64::from(links.opportunity_bytes(media));
        let network = self.h.network_measure(end);
        let records = self.h.log.into_records()?;
        let run = RunInfo {
            duration: config.duration,
            link: Some(LinkUsage {
                delivered_bytes: link.bytes_delivered - links.feedback_bytes(media),
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
            packet_events: links.take_events(media),
            audio,
            feedback: FeedbackDelay::of(&self.feedback),
        })
    }
}
