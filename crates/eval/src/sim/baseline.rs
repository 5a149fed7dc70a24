//! The simulator loop for the comparison schemes (crate `salsify-baselines`): the same
//! camera, links, cost model and per-frame log as Salsify's loop, with the schemes' own
//! encoders (libvpx CBR for conventional and Vidaptive-style, the functional codec searched
//! for the largest frame that fits for the oracle) and a plain in-order VP8 decoder.

use salsify_baselines::vidaptive::ladder_size;
use salsify_baselines::{
    EncodeJob, EncodeRequest, EncodedFrame, GccSender, LinkForecast, OracleSender, Receiver,
    ReceiverConfig, ReceiverEvent, ReceiverOutput, Sender, SenderEvent, SenderOutput,
    VidaptiveSender,
};
use salsify_codec::{
    scale, CbrConfig, CbrEncoder, Encoder, EncoderConfig, Image, PlainDecoder, Quality, State,
};
use salsify_time::{duration_micros, Duration, Instant};

use super::harness::{drive, Harness, Run};
use super::{Scheme, SimConfig, SimError, VideoSource};

/// What a baseline run adds to [`super::SimOutput`].
#[derive(Debug, Clone, Default)]
pub struct BaselineOutput {
    /// The sender's counters.
    pub sender: salsify_baselines::SenderStats,
    /// The receiver's counters.
    pub receiver: salsify_baselines::ReceiverStats,
    /// Vidaptive's resolution-ladder changes.
    pub resolution_changes: u64,
    /// Frames decoded at each size: (width, height, frames), in order of first appearance.
    pub decoded_sizes: Vec<(u32, u32, u64)>,
    /// Every change of the encoder target and pacing rate: (time, encoder, pacing).
    pub rates: Vec<(
        Instant,
        salsify_baselines::Bitrate,
        salsify_baselines::Bitrate,
    )>,
}

/// Vidaptive's CBR encoder is told at most two frame intervals passed between pictures: the
/// first picture after an encoder pause is budgeted as an ordinary frame, not as the whole
/// pause's worth of bits (measured on Verizon-LTE-short with real capture times: frames after
/// a 40-100 ms pause were 6.4x the per-frame budget (median), after 100-300 ms 10x, refilling
/// the pacer and pausing again; delay mean/p95 81/306 ms -> 69/218 ms with this cap).
const VIDAPTIVE_MAX_GAP_FRAMES: u32 = 2;

/// The encoder a scheme asks for.
enum SimEncoder {
    /// The CBR encoder, the target last applied (kb/s), and its settings (to re-open it at
    /// another size).
    Cbr(Box<CbrEncoder>, Option<u32>, CbrConfig),
    /// The oracle's functional encoder, the state of the last frame sent and its quantizer.
    Search(Box<Encoder>, State, u8),
}

impl SimEncoder {
    /// Re-opens the CBR encoder at `width` x `height` if it has another size (its next frame
    /// is then a keyframe).
    fn resize(&mut self, width: u32, height: u32) -> Result<(), SimError> {
        if let SimEncoder::Cbr(enc, applied, config) = self {
            if enc.size() != (width, height) {
                **enc = CbrEncoder::new(width, height, *config)?;
                *applied = None;
            }
        }
        Ok(())
    }

    fn run(
        &mut self,
        req: &EncodeRequest,
        image: &Image,
    ) -> Result<Option<EncodedFrame>, SimError> {
        match (self, req.job) {
            (SimEncoder::Cbr(enc, applied, _), EncodeJob::Cbr { target, keyframe }) => {
                let kbps = u32::try_from(target.as_kbps()).unwrap_or(u32::MAX);
                // libvpx's CBR clamps its buffer to the new (smaller) size on every decrease
                // and does not give it back on an increase, so a target that swings frame by
                // frame ratchets the output below the mean target (measured: a target
                // alternating 2000/1000 kb/s every 3 frames yields 850 kb/s). Changes of
                // 10 % or less are therefore not passed on.
                let apply = applied.is_none_or(|a| kbps.abs_diff(a) * 10 > a);
                if apply {
                    enc.set_target_bitrate(kbps)?;
                    *applied = Some(kbps);
                }
                let at = req.captured.as_micros();
                Ok(enc.encode(image, at, keyframe)?.map(|f| EncodedFrame {
                    data: f.data,
                    keyframe: f.keyframe,
                    quality: f.quality,
                }))
            }
            (SimEncoder::Search(enc, state, last), EncodeJob::MaxSize { bytes }) => {
                let Some(f) = finest_that_fits(enc, state, image, bytes, *last)? else {
                    return Ok(None);
                };
                *state = f.target.clone();
                *last = f.quality.index();
                Ok(Some(EncodedFrame {
                    data: f.vp8().to_vec(),
                    keyframe: f.keyframe,
                    quality: f.quality.index(),
                }))
            }
            _ => Err(SimError::Config("encode job for another encoder".into())),
        }
    }
}

/// The finest quantizer whose frame (encoded from `state`) fits in `bytes`, found by
/// galloping from the previous frame's quantizer `start` and then bisecting, since sizes fall
/// as the index rises. Consecutive frames need similar quantizers, so this takes about half
/// the encodes of a bisection over the whole range; each trial is a real encode.
fn finest_that_fits(
    enc: &mut Encoder,
    state: &State,
    image: &Image,
    bytes: usize,
    start: u8,
) -> Result<Option<salsify_codec::EncodedFrame>, SimError> {
    let mut trial = |q: u8| -> Result<Option<salsify_codec::EncodedFrame>, SimError> {
        let f = enc.encode(state, image, Quality::new(q)?)?;
        Ok((f.vp8().len() <= bytes).then_some(f))
    };
    // Invariant once both are known: `good` fits (with its frame `best`), `bad` does not,
    // bad < good.
    let (mut bad, mut good, mut best): (Option<u8>, u8, _);
    if let Some(f) = trial(start)? {
        (good, best) = (start, f);
        bad = None;
        let mut step = 4u8;
        while good > 0 {
            let q = good.saturating_sub(step);
            match trial(q)? {
                Some(f) => (good, best, step) = (q, f, step.saturating_mul(2)),
                None => {
                    bad = Some(q);
                    break;
                }
            }
        }
    } else {
        let mut failed = start;
        let mut step = 4u8;
        loop {
            if failed == Quality::WORST.index() {
                return Ok(None);
            }
            let q = failed.saturating_add(step).min(Quality::WORST.index());
            if let Some(f) = trial(q)? {
                (good, best, bad) = (q, f, Some(failed));
                break;
            }
            (failed, step) = (q, step.saturating_mul(2));
        }
    }
    let Some(bad) = bad else {
        return Ok(Some(best));
    };
    let (mut lo, mut hi) = (bad + 1, good);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match trial(mid)? {
            Some(f) => (hi, best) = (mid, f),
            None => lo = mid + 1,
        }
    }
    Ok(Some(best))
}

/// The picture size in a VP8 keyframe's header (RFC 6386 9.1), if `data` is a keyframe.
fn vp8_keyframe_size(data: &[u8]) -> Option<(u32, u32)> {
    if data.len() < 10 || data[0] & 1 != 0 || data[3..6] != [0x9d, 0x01, 0x2a] {
        return None;
    }
    let side = |i: usize| u32::from(u16::from_le_bytes([data[i], data[i + 1]]) & 0x3fff);
    Some((side(6), side(8)))
}

struct BaselineSim<'a> {
    h: Harness<'a>,
    sender: Sender,
    receiver: Receiver,
    encoder: SimEncoder,
    decoder: PlainDecoder,
    /// The size the decoder was opened for (a keyframe of another size re-opens it).
    decoder_size: (u32, u32),
    decoded_sizes: Vec<(u32, u32, u64)>,
    /// An encode under way: when it is done, and its result.
    encoding: Option<(Instant, u64, Option<EncodedFrame>)>,
    rates: Vec<(
        Instant,
        salsify_baselines::Bitrate,
        salsify_baselines::Bitrate,
    )>,
    diag: Option<Diag>,
}

/// Per-frame diagnostics (env `SALSIFY_BASELINE_TRACE=path`): one CSV line per frame.
#[derive(Default)]
struct Diag {
    path: String,
    /// frame -> (captured, enqueued, bytes, quality, keyframe, snapshot, last tx, last rx, shown)
    frames: std::collections::BTreeMap<u32, DiagFrame>,
}

#[derive(Default, Clone)]
struct DiagFrame {
    captured: u64,
    enq: u64,
    bytes: usize,
    quality: u8,
    keyframe: bool,
    snap: String,
    tx: u64,
    rx: u64,
    shown: u64,
}

/// Runs a baseline scheme; the caller turns the pieces into a [`super::SimOutput`].
pub(super) fn run(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
) -> Result<super::SimOutput, SimError> {
    let mut sim = BaselineSim::new(config, video)?;
    let end = drive(&mut sim, config.duration, progress)?;
    sim.finish(end)
}

impl Run for BaselineSim<'_> {
    fn next_event(&self) -> Option<Instant> {
        self.h.next_event(self.encoding.as_ref().map(|e| e.0))
    }

    fn step(&mut self, now: Instant) -> Result<(), SimError> {
        if self.encoding.as_ref().is_some_and(|e| e.0 <= now) {
            let (_, id, frame) = self.encoding.take().expect("checked above");
            self.sender.handle_encoded(now, id, frame);
        }
        if let Some((index, at)) = self.h.capture(now) {
            self.sender.handle_frame(now, index, at);
        }
        while let Some(d) = self.h.data_link.poll_delivery(now) {
            if let Some(diag) = &mut self.diag {
                if let Ok(salsify_baselines::wire::Packet::Media { header, .. }) =
                    salsify_baselines::wire::Packet::parse(&d.payload)
                {
                    if let Some(f) = diag.frames.get_mut(&header.frame) {
                        f.rx = f.rx.max(now.as_micros());
                    }
                }
            }
            self.receiver.handle_datagram(now, &d.payload);
        }
        while let Some(d) = self.h.feedback_link.poll_delivery(now) {
            self.sender.handle_datagram(now, &d.payload);
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

impl<'a> BaselineSim<'a> {
    fn new(config: &'a SimConfig, video: &'a mut dyn VideoSource) -> Result<Self, SimError> {
        let bad = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
        let harness = Harness::new(config, video)?;
        let fps = harness.fps;
        let (w, h) = harness.size;
        // `dropframe_thresh`: WebRTC's 30; 0 for Vidaptive, whose encoder pause replaces
        // libvpx's frame dropper (with both, a low alpha x CC-Rate makes libvpx drop frames,
        // too few frames per second lower alpha further, and the stream starves).
        let cbr = |dropframe_thresh: u32, max_gap_frames: u32| -> Result<SimEncoder, SimError> {
            let c = CbrConfig {
                cpu_used: config.cpu_used,
                max_fps: fps.round().max(1.0) as u32,
                dropframe_thresh,
                max_gap_frames,
                ..CbrConfig::default()
            };
            Ok(SimEncoder::Cbr(
                Box::new(CbrEncoder::new(w, h, c)?),
                None,
                c,
            ))
        };
        let (sender, receiver, encoder) = match &config.scheme {
            Scheme::Salsify => return Err(SimError::Config("not a baseline scheme".into())),
            Scheme::Conventional(gcc) => (
                Sender::Conventional(GccSender::new(*gcc).map_err(|e| bad(&e))?),
                ReceiverConfig {
                    feedback_interval: Some(gcc.feedback_interval),
                    ..ReceiverConfig::default()
                },
                cbr(
                    CbrConfig::default().dropframe_thresh,
                    CbrConfig::default().max_gap_frames,
                )?,
            ),
            Scheme::Vidaptive(v) => (
                Sender::Vidaptive(VidaptiveSender::new(*v).map_err(|e| bad(&e))?),
                // Copa needs an ACK per packet.
                ReceiverConfig {
                    feedback_interval: None,
                    ..ReceiverConfig::default()
                },
                cbr(0, VIDAPTIVE_MAX_GAP_FRAMES)?,
            ),
            Scheme::Oracle(o) => {
                let trace = config.data_link.trace.clone();
                let millis: Vec<u64> = trace.millis().to_vec();
                let period_us = duration_micros(trace.period());
                let len = millis.len() as u64;
                let forecast = LinkForecast {
                    opportunity: Box::new(move |n| {
                        Instant::from_micros(
                            (n / len).saturating_mul(period_us) + millis[(n % len) as usize] * 1000,
                        )
                    }),
                    opportunity_bytes: config.data_link.opportunity_bytes,
                    propagation: config.data_link.propagation_delay,
                };
                let oracle = salsify_baselines::OracleConfig {
                    encode_time: config.cost.encode(w, h),
                    ..*o
                };
                let enc = Encoder::with_config(EncoderConfig {
                    cpu_used: config.cpu_used,
                    ..EncoderConfig::new(w, h)
                })?;
                (
                    Sender::Oracle(OracleSender::new(oracle, forecast).map_err(|e| bad(&e))?),
                    ReceiverConfig::default(),
                    SimEncoder::Search(Box::new(enc), State::initial(), 64),
                )
            }
        };
        Ok(BaselineSim {
            h: harness,
            sender,
            receiver: Receiver::new(receiver),
            encoder,
            decoder: PlainDecoder::new(w, h)?,
            decoder_size: (w, h),
            decoded_sizes: Vec::new(),
            encoding: None,
            rates: Vec::new(),
            diag: std::env::var("SALSIFY_BASELINE_TRACE")
                .ok()
                .map(|path| Diag {
                    path,
                    ..Diag::default()
                }),
        })
    }

    fn drain_sender(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.sender.poll_output(now) {
                SenderOutput::Encode(req) => {
                    let Some(source) = self.h.log.source(req.picture) else {
                        self.sender.handle_encode_failed(now, req.id);
                        continue;
                    };
                    // Vidaptive's resolution ladder: the picture at the requested rung.
                    let step = match &self.sender {
                        Sender::Vidaptive(v) => v.encode_step(),
                        _ => 0,
                    };
                    let (w, h) = ladder_size(self.h.size.0, self.h.size.1, step);
                    let image = if (w, h) == self.h.size {
                        source.clone()
                    } else {
                        std::sync::Arc::new(scale(source, w, h)?)
                    };
                    self.encoder.resize(w, h)?;
                    let frame = self.encoder.run(&req, &image)?;
                    let busy = self.h.config.cost.encode(w, h);
                    self.encoding = Some((now + busy, req.id, frame));
                }
                SenderOutput::Transmit(datagram) => {
                    if let Some(diag) = &mut self.diag {
                        if let Ok(salsify_baselines::wire::Packet::Media { header, .. }) =
                            salsify_baselines::wire::Packet::parse(&datagram)
                        {
                            if let Some(f) = diag.frames.get_mut(&header.frame) {
                                f.tx = f.tx.max(now.as_micros());
                            }
                        }
                    }
                    let len = datagram.len();
                    let _ = self.h.data_link.handle_packet(now, datagram, len);
                }
                SenderOutput::Event(SenderEvent::FrameSent {
                    frame,
                    picture,
                    bytes,
                    quality,
                    captured,
                    at,
                    keyframe,
                }) => {
                    if let Some(diag) = &mut self.diag {
                        let snap = match &self.sender {
                            Sender::Vidaptive(v) => format!(
                                "{:.1},{:.1},{},{:.3},{},{},{},{:?}",
                                v.copa().cwnd_packets(),
                                v.copa().srtt().map_or(0.0, |d| d.as_secs_f64() * 1e3),
                                v.cc_rate().as_kbps(),
                                v.alpha(),
                                v.stats().target.as_kbps(),
                                v.pacer_bytes(),
                                v.in_flight(),
                                v.copa().in_slow_start(),
                            ),
                            _ => String::new(),
                        };
                        diag.frames.insert(
                            frame,
                            DiagFrame {
                                captured: captured.as_micros(),
                                enq: at.as_micros(),
                                bytes,
                                quality,
                                keyframe,
                                snap,
                                ..DiagFrame::default()
                            },
                        );
                    }
                    self.h.log.on_sent_single(frame, picture, bytes, quality)
                }
                SenderOutput::Event(SenderEvent::PictureDropped { picture, .. }) => {
                    self.h.log.on_not_sent(picture)
                }
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

    fn drain_receiver(&mut self, now: Instant) -> Result<(), SimError> {
        loop {
            match self.receiver.poll_output() {
                ReceiverOutput::Transmit(datagram) => {
                    let len = datagram.len();
                    let _ = self.h.feedback_link.handle_packet(now, datagram, len);
                }
                ReceiverOutput::Event(ReceiverEvent::Frame {
                    frame,
                    at,
                    data,
                    keyframe,
                }) => match self.decode(&data, keyframe) {
                    Ok(picture) => {
                        let start = at.max(self.h.decoder_free);
                        let (w, h) = self.decoder_size;
                        let shown = start + self.h.config.cost.decode(w, h);
                        self.h.decoder_free = shown;
                        if let Some(f) = self.diag.as_mut().and_then(|d| d.frames.get_mut(&frame)) {
                            f.shown = shown.as_micros();
                        }
                        self.h.log.on_display(frame, shown, picture);
                    }
                    Err(_) => self.receiver.handle_decode_failed(now),
                },
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

    /// Decodes the next frame; a keyframe of another size re-opens the decoder. Pictures
    /// smaller than the source (Vidaptive's ladder) are scaled up to its size for scoring.
    fn decode(&mut self, data: &[u8], keyframe: bool) -> Result<Image, SimError> {
        if let Some(size) = keyframe.then(|| vp8_keyframe_size(data)).flatten() {
            if size != self.decoder_size {
                self.decoder = PlainDecoder::new(size.0, size.1)?;
                self.decoder_size = size;
            }
        }
        let picture = self.decoder.decode(data)?;
        let (w, h) = (picture.width(), picture.height());
        match self.decoded_sizes.last_mut() {
            Some(last) if (last.0, last.1) == (w, h) => last.2 += 1,
            _ => self.decoded_sizes.push((w, h, 1)),
        }
        if (picture.width(), picture.height()) == self.h.size {
            Ok(picture)
        } else {
            Ok(scale(&picture, self.h.size.0, self.h.size.1)?)
        }
    }

    fn finish(mut self, end: Instant) -> Result<super::SimOutput, SimError> {
        if let Some(diag) = &self.diag {
            use std::fmt::Write as _;
            let mut out = String::from(
                "frame,captured,enq,tx,rx,shown,bytes,quality,key,cwnd,srtt_ms,cc_kbps,alpha,target_kbps,pacer_bytes,in_flight,slow_start\n",
            );
            for (n, f) in &diag.frames {
                let _ = writeln!(
                    out,
                    "{n},{},{},{},{},{},{},{},{},{}",
                    f.captured,
                    f.enq,
                    f.tx,
                    f.rx,
                    f.shown,
                    f.bytes,
                    f.quality,
                    f.keyframe as u8,
                    f.snap
                );
            }
            let _ = std::fs::write(&diag.path, out);
        }
        self.h.close(end);
        let baseline = BaselineOutput {
            resolution_changes: match &self.sender {
                Sender::Vidaptive(v) => v.resolution_changes(),
                _ => 0,
            },
            decoded_sizes: self.decoded_sizes,
            sender: self.sender.stats(),
            receiver: self.receiver.stats(),
            rates: self.rates,
        };
        super::finish_output(
            self.h.config,
            &self.h.data_link,
            self.h.log,
            self.h.packet_events,
            None,
            Some(baseline),
        )
    }
}

#[cfg(test)]
mod tests {
    use salsify_baselines::GccConfig;
    use salsify_netem::{generators, Bitrate, LinkConfig};
    use salsify_time::{Duration, Instant};

    use crate::sim::{simulate, Scheme, SimConfig, SyntheticVideo};

    /// The gallop-and-bisect search returns a quantizer that fits while the next finer one
    /// does not, from any starting point, and nothing when even the coarsest is too big.
    #[test]
    fn oracle_search_finds_the_finest_quantizer_that_fits() {
        use salsify_codec::{Encoder, Quality, State, SyntheticSource};
        let mut enc = Encoder::new(128, 96).unwrap();
        let source = SyntheticSource::new(128, 96, 30, 3).unwrap();
        let key = enc
            .encode(
                &State::initial(),
                &source.frame(0),
                Quality::new(40).unwrap(),
            )
            .unwrap();
        let image = source.frame(1);
        // Size and quantizer actually coded (libvpx's 64 steps: some indices share one).
        let size_and_q = |enc: &mut Encoder, q: u8| {
            let f = enc
                .encode(&key.target, &image, Quality::new(q).unwrap())
                .unwrap();
            (f.vp8().len(), f.quality.index())
        };
        let size = |enc: &mut Encoder, q: u8| size_and_q(enc, q).0;
        let smallest = size(&mut enc, 127);
        assert!(
            super::finest_that_fits(&mut enc, &key.target, &image, smallest - 1, 64)
                .unwrap()
                .is_none()
        );
        for budget in [smallest, smallest + 50, 400, 1500, 100_000] {
            for start in [0, 20, 64, 127] {
                let f = super::finest_that_fits(&mut enc, &key.target, &image, budget, start)
                    .unwrap()
                    .unwrap();
                let q = f.quality.index();
                assert!(f.vp8().len() <= budget, "budget {budget} start {start}");
                if q > 0 {
                    let (finer, coded) = size_and_q(&mut enc, q - 1);
                    assert!(
                        finer > budget || coded == q,
                        "budget {budget} start {start}: q{q}"
                    );
                }
            }
        }
    }

    /// At 60 fps the CBR encoder once misread the frame rate (it was given the gap since the
    /// previous picture as each frame's duration) and starved the stream: half the pictures
    /// dropped by its rate control, 66 kb/s sent while GCC asked for 300.
    #[test]
    fn conventional_gcc_at_60_fps_sends_what_gcc_asks_for() {
        let secs = 6;
        let config = SimConfig {
            scheme: Scheme::Conventional(GccConfig::default()),
            data_link: LinkConfig::with_trace(generators::constant(Bitrate::kbps(2000)).unwrap()),
            feedback_link: LinkConfig::with_trace(
                generators::constant(Bitrate::kbps(2000)).unwrap(),
            ),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(160, 96, 60, 1).unwrap();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        let b = out.baseline.as_ref().unwrap();
        assert!(b.sender.dropped * 20 < b.sender.pictures, "{:?}", b.sender);
        let sent: u64 = out.records.iter().map(|r| r.size_bytes).sum();
        let kbps = sent * 8 / secs / 1000;
        // GCC starts at 300 kb/s and climbs 8 %/s.
        assert!(kbps >= 250, "{kbps} kb/s sent; {:?}", b.sender);
    }

    /// Vidaptive's resolution ladder end to end: a 4 s outage leaves < 5 frames/s sent, so
    /// the encoder steps down (re-opened at the smaller size, a keyframe); the receiver
    /// re-opens its decoder and the pictures, scaled back up, are scored against the source.
    #[test]
    fn vidaptive_steps_down_the_ladder_in_an_outage_and_pictures_are_scored_full_size() {
        use salsify_baselines::VidaptiveConfig;
        let secs = 14;
        let trace = generators::from_rate_fn(Duration::from_secs(secs), |t| {
            if (4.0..8.0).contains(&t.as_secs_f64()) {
                0.0
            } else {
                1_000_000.0
            }
        })
        .unwrap();
        let config = SimConfig {
            scheme: Scheme::Vidaptive(VidaptiveConfig::default()),
            data_link: LinkConfig::with_trace(trace),
            feedback_link: LinkConfig::with_trace(
                generators::constant(Bitrate::kbps(2000)).unwrap(),
            ),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(320, 180, 30, 1).unwrap();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        let b = out.baseline.as_ref().unwrap();
        assert!(b.resolution_changes >= 1, "{:?}", b.sender);
        assert!(
            b.decoded_sizes.iter().any(|&(w, _, n)| w < 320 && n > 0),
            "{:?}",
            b.decoded_sizes
        );
        // Frames are shown after the outage, every one scored at full size.
        let after: Vec<_> = out
            .records
            .iter()
            .filter(|r| r.capture >= Instant::from_millis(10_000))
            .filter_map(|r| r.ssim)
            .collect();
        assert!(after.len() > 60, "{} scored after the outage", after.len());
        let mean = after.iter().sum::<f64>() / after.len() as f64;
        assert!(mean > 0.8, "SSIM {mean}; {:?}", b.decoded_sizes);
    }

    /// Experiment, not a check: Vidaptive-style on Verizon-LTE-short (the `baselines table`
    /// setting) for `VIDAPTIVE_SECS` (140) seconds; prints the summary. With
    /// `SALSIFY_BASELINE_TRACE=path` also writes per-frame diagnostics.
    /// `cargo test --release -p salsify-eval --lib -- --ignored vidaptive_on_verizon --nocapture`
    #[test]
    #[ignore]
    fn vidaptive_on_verizon() {
        use crate::sim::LoopedClip;
        use salsify_baselines::VidaptiveConfig;
        use salsify_netem::Trace;
        let secs: u64 = std::env::var("VIDAPTIVE_SECS").map_or(140, |s| s.parse().unwrap());
        let traces = "/work/shared/traces";
        let clip = "/work/shared/video/FourPeople_320x180_60_120f.y4m";
        let down = Trace::from_path(format!("{traces}/Verizon-LTE-short.down")).unwrap();
        let up = Trace::from_path(format!("{traces}/Verizon-LTE-short.up")).unwrap();
        let file = std::fs::File::open(clip).unwrap();
        let mut reader = salsify_codec::Y4mReader::new(std::io::BufReader::new(file)).unwrap();
        let fps = reader.header().frame_rate.map_or(60.0, |r| r.to_f64());
        let mut frames = Vec::new();
        while let Some(f) = reader.next_frame().unwrap() {
            frames.push(f);
        }
        let mut clip = LoopedClip::new(frames, fps, clip.into()).unwrap();
        let mut config = SimConfig {
            scheme: Scheme::Vidaptive(VidaptiveConfig::default()),
            data_link: LinkConfig::with_trace(down),
            feedback_link: LinkConfig::with_trace(up),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        // `VIDAPTIVE_CONSTANT=kbps`: the `baselines constant` setting instead.
        let mut synthetic = SyntheticVideo::new(320, 180, 30, 1).unwrap();
        let video: &mut dyn crate::sim::VideoSource = match std::env::var("VIDAPTIVE_CONSTANT") {
            Ok(kbps) => {
                let kbps: u64 = kbps.parse().unwrap();
                config.data_link =
                    LinkConfig::with_trace(generators::constant(Bitrate::kbps(kbps)).unwrap());
                config.feedback_link = LinkConfig::with_trace(
                    generators::constant(Bitrate::kbps(kbps.max(1000))).unwrap(),
                );
                &mut synthetic
            }
            Err(_) => &mut clip,
        };
        let out = simulate(&config, video, &mut |_| {}).unwrap();
        let s = &out.summary;
        let sent: u64 = out.records.iter().map(|r| r.size_bytes).sum();
        println!(
            "ssim dB mean {:.2} p25 {:.2} | delay mean {:.0} median {:.0} p95 {:.0} ms | shown {} | video {:.0} kb/s | {:?}",
            s.ssim_db_mean.unwrap_or(f64::NAN),
            s.ssim_db_p25.unwrap_or(f64::NAN),
            s.delay_mean_ms.unwrap_or(f64::NAN),
            s.delay_median_ms.unwrap_or(f64::NAN),
            s.delay_p95_ms.unwrap_or(f64::NAN),
            s.frames_shown,
            sent as f64 * 8.0 / secs as f64 / 1000.0,
            out.baseline.as_ref().map(|b| b.sender),
        );
        if let Some(b) = &out.baseline {
            println!(
                "resolution changes {}; decoded sizes {:?}",
                b.resolution_changes, b.decoded_sizes
            );
        }
        if let Ok(path) = std::env::var("VIDAPTIVE_FRAMES_CSV") {
            let file = std::fs::File::create(path).unwrap();
            crate::sim::write_frames_csv(&out.records, std::io::BufWriter::new(file)).unwrap();
        }
    }
}
