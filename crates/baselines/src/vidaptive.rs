//! The Vidaptive-style sender: Copa's window and CC-Rate = cwnd / sRTT drive a pacer that
//! sends video at CC-Rate while the window has room (bytes in flight, padding included,
//! below cwnd); when the window and the pacer allow sending but no video waits, dummy padding
//! keeps the flow looking backlogged; the encoder gets alpha x CC-Rate ([`crate::alpha`]),
//! pauses while the pacer's oldest packet is older than tau, and resets (drain, keyframe)
//! past one second.
//!
//! Resolution ladder ([`crate::ladder`]): fewer than 5 frames/s sent steps the picture size
//! down a rung, an under-used target with alpha near 1 steps it up. A change forces a
//! keyframe; every encode is a [`CbrJob`] at the rung's size ([`ladder_size`] of the
//! source), and the driver re-opens its encoder at a new size.
//!
//! The CBR encoder runs without libvpx's frame dropper (the encoder pause replaces it) and is
//! told at most [`VidaptiveConfig::max_gap_frames`] frame intervals passed between pictures;
//! its target is alpha x CC-Rate through the 10 % deadband ([`crate::deadband_passes`]).
//!
//! Simplification: NACK/PLI loss repair as the conventional sender.
//!
//! [`CbrJob`]: salsify_endpoint::CbrJob

use salsify_endpoint::{
    CbrSettings, DatagramError, Diagnostic, DropReason, EncodeFailed, EncodeOutcome, InputError,
    SenderEndpoint, SenderEvent, SenderOutput, SenderStats,
};
use salsify_time::{Duration, Instant};

use crate::alpha::{AlphaConfig, AlphaController, FrameDelay};
use crate::copa::{Copa, CopaConfig};
use crate::core::{Core, Incoming, Picture};
use crate::error::{datagram_error, ConfigError};
pub use crate::ladder::{ladder_size, Ladder, LadderConfig, LADDER};
use crate::rate::Bitrate;
use crate::stats::SenderCounters;
use crate::wire_id::WireId;

/// Vidaptive's CBR encoder is told at most two frame intervals passed between pictures: the
/// first picture after an encoder pause is budgeted as an ordinary frame, not as the whole
/// pause's worth of bits (measured on Verizon-LTE-short with real capture times: frames after
/// a 40-100 ms pause were 6.4x the per-frame budget (median), after 100-300 ms 10x, refilling
/// the pacer and pausing again; delay mean/p95 81/306 ms -> 69/218 ms with this cap).
pub const VIDAPTIVE_MAX_GAP_FRAMES: u32 = 2;

/// Vidaptive's parameters, as the `[vidaptive]` table of an experiment file names them
/// (durations in ms, rates in kb/s; `[vidaptive.copa]`, `[vidaptive.alpha]` and
/// `[vidaptive.ladder]` sub-tables; every field optional, unknown fields refused).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VidaptiveConfig {
    /// Copa's settings (delta 0.9).
    pub copa: CopaConfig,
    /// Alpha optimisation (tau 33 ms, T 1 s, lambda 0.5).
    pub alpha: AlphaConfig,
    /// Pause encoding while the pacer's oldest packet is older than this. Default 33 ms.
    #[serde(rename = "pause_after_ms", with = "salsify_time::serde_units::millis")]
    pub pause_after: Duration,
    /// A paused picture is still encoded when the queue drains if it is at most this old.
    /// Default 17 ms (half a frame at 30 fps).
    #[serde(
        rename = "paused_picture_max_age_ms",
        with = "salsify_time::serde_units::millis"
    )]
    pub paused_picture_max_age: Duration,
    /// Reset (drain the pacer, force a keyframe) past this pacer delay. Default 1 s.
    #[serde(rename = "reset_after_ms", with = "salsify_time::serde_units::millis")]
    pub reset_after: Duration,
    /// Dummy padding packet size (bytes, <= 200). Default 200.
    pub padding_bytes: usize,
    /// No padding within this time before the next expected capture. Default 5 ms.
    #[serde(
        rename = "padding_guard_ms",
        with = "salsify_time::serde_units::millis"
    )]
    pub padding_guard: Duration,
    /// Cap on the pacing (and padding) rate: the maximum video rate. Default 12 Mb/s.
    #[serde(rename = "max_rate_kbps", with = "salsify_time::serde_units::kbps")]
    pub max_rate: Bitrate,
    /// Floor of the encoder target. Default 50 kb/s.
    #[serde(rename = "min_target_kbps", with = "salsify_time::serde_units::kbps")]
    pub min_target: Bitrate,
    /// Pacing rate before the first RTT sample. Default 300 kb/s.
    #[serde(rename = "start_rate_kbps", with = "salsify_time::serde_units::kbps")]
    pub start_rate: Bitrate,
    /// The resolution ladder ([`LadderConfig::enabled`] false keeps the source size).
    pub ladder: LadderConfig,
    /// libvpx's frame dropper threshold. Default 0 (never drop): the encoder pause replaces
    /// the frame dropper (with both, a low alpha x CC-Rate makes libvpx drop frames, too few
    /// frames per second lower alpha further, and the stream starves).
    pub dropframe_thresh: u32,
    /// Most frame intervals libvpx is told passed between two pictures. Default 2
    /// ([`VIDAPTIVE_MAX_GAP_FRAMES`]: the first picture after a pause gets an ordinary
    /// frame's budget).
    pub max_gap_frames: u32,
}

impl Default for VidaptiveConfig {
    fn default() -> Self {
        VidaptiveConfig {
            copa: CopaConfig::default(),
            alpha: AlphaConfig::default(),
            pause_after: Duration::from_millis(33),
            paused_picture_max_age: Duration::from_millis(17),
            reset_after: Duration::from_secs(1),
            padding_bytes: 200,
            padding_guard: Duration::from_millis(5),
            max_rate: Bitrate::kbps(12_000),
            min_target: Bitrate::kbps(50),
            start_rate: Bitrate::kbps(300),
            ladder: LadderConfig::default(),
            dropframe_thresh: 0,
            max_gap_frames: VIDAPTIVE_MAX_GAP_FRAMES,
        }
    }
}

impl VidaptiveConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |field, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(ConfigError::invalid(
                    field,
                    format!("{v} is not a finite number above 0"),
                ))
            }
        };
        positive("copa.delta", self.copa.delta)?;
        positive("copa.initial_cwnd", self.copa.initial_cwnd)?;
        if !(crate::wire::PADDING_HEADER_LEN..=200).contains(&self.padding_bytes) {
            return Err(ConfigError::invalid(
                "padding_bytes",
                format!(
                    "{} is not in {}..=200",
                    self.padding_bytes,
                    crate::wire::PADDING_HEADER_LEN
                ),
            ));
        }
        if !(0.0..1.0).contains(&self.alpha.lambda) {
            return Err(ConfigError::invalid(
                "alpha.lambda",
                format!("{} is not in [0, 1)", self.alpha.lambda),
            ));
        }
        if self.alpha.window.is_zero() {
            return Err(ConfigError::invalid("alpha.window_ms", "must be above 0"));
        }
        if self.min_target > self.max_rate {
            return Err(ConfigError::invalid(
                "min_target_kbps",
                format!(
                    "{} is above max_rate_kbps {}",
                    self.min_target, self.max_rate
                ),
            ));
        }
        if self.start_rate.as_bps() == 0 {
            return Err(ConfigError::invalid("start_rate_kbps", "must be above 0"));
        }
        if self.dropframe_thresh > 100 {
            return Err(ConfigError::invalid(
                "dropframe_thresh",
                format!("{} is not a percentage (0..=100)", self.dropframe_thresh),
            ));
        }
        Ok(())
    }

    /// The CBR encoder's settings.
    pub fn cbr_settings(&self) -> CbrSettings {
        CbrSettings {
            dropframe_thresh: self.dropframe_thresh,
            max_gap_frames: self.max_gap_frames,
        }
    }
}

/// The Vidaptive-style sender.
#[derive(Debug)]
pub struct VidaptiveSender {
    config: VidaptiveConfig,
    /// The source's picture size (the ladder's full size).
    source: (u32, u32),
    core: Core,
    copa: Copa,
    alpha: AlphaController,
    /// Picture kept while the encoder is paused (or busy).
    waiting: Option<Picture>,
    paused: bool,
    last_capture: Option<Instant>,
    frame_interval: Duration,
    /// Per frame in the pacer: (frame, alpha, enqueue time), to measure pacer delays.
    in_pacer: std::collections::VecDeque<(u32, f64, Instant)>,
    /// The window's view of the packets in flight.
    flight: Flight,
    ladder: Option<Box<Ladder>>,
    /// The ladder rung of the last encode requested.
    encode_step: usize,
}

/// Packets sent and not yet reported on, as the congestion window counts them.
///
/// Feedback comes per packet and in order, so a report on sequence number `n` settles every
/// packet before `n` as well: one whose own report was lost (the ACK queue overflowed)
/// must not hold the window shut. Packets with no report for [`VidaptiveSender::flight_timeout`] are given
/// up (an ACK-path outage would otherwise close the window for good).
#[derive(Debug, Default)]
struct Flight {
    /// (transport sequence number, send time, bytes), oldest first.
    packets: std::collections::VecDeque<(u32, Instant, usize)>,
    bytes: usize,
    /// The transport sequence number of the next packet sent (mirrors the core's counter).
    next_seq: u32,
}

impl Flight {
    fn sent(&mut self, now: Instant, bytes: usize) {
        self.packets.push_back((self.next_seq, now, bytes));
        self.next_seq = self.next_seq.wrapping_add(1);
        self.bytes += bytes;
    }

    /// Settles every packet up to and including `seq`.
    fn reported(&mut self, seq: u32) {
        while let Some(&(s, _, b)) = self.packets.front() {
            // Wrapping "s <= seq".
            if seq.wrapping_sub(s) > u32::MAX / 2 {
                break;
            }
            self.packets.pop_front();
            self.bytes -= b;
        }
    }

    /// Gives up on packets sent before `before`; returns whether there were any.
    fn expire(&mut self, before: Instant) -> bool {
        let mut any = false;
        while let Some(&(_, t, b)) = self.packets.front() {
            if t >= before {
                break;
            }
            self.packets.pop_front();
            self.bytes -= b;
            any = true;
        }
        any
    }

    fn oldest(&self) -> Option<Instant> {
        self.packets.front().map(|&(_, t, _)| t)
    }
}

impl VidaptiveSender {
    /// A sender for a `source` = (width, height) camera; the configuration is checked.
    pub fn new(config: VidaptiveConfig, source: (u32, u32)) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut core = Core::new(WireId::Vidaptive);
        core.pacer.set_rate(config.start_rate);
        core.stats.target = config.start_rate;
        Ok(VidaptiveSender {
            copa: Copa::new(config.copa),
            alpha: AlphaController::new(config.alpha),
            config,
            source,
            core,
            waiting: None,
            paused: false,
            last_capture: None,
            frame_interval: Duration::from_micros(33_333),
            in_pacer: Default::default(),
            flight: Flight::default(),
            ladder: config
                .ladder
                .enabled
                .then(|| Box::new(Ladder::new(config.ladder))),
            encode_step: 0,
        })
    }

    /// Copa's state (for logs and tests).
    pub fn copa(&self) -> &Copa {
        &self.copa
    }

    /// The current alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha.alpha()
    }

    /// The ladder rung ([`LADDER`]) the last encode request is for (its job names the
    /// rung's [`ladder_size`]; a new rung comes with a keyframe).
    pub fn encode_step(&self) -> usize {
        self.encode_step
    }

    /// Resolution changes so far.
    pub fn resolution_changes(&self) -> u64 {
        self.ladder.as_ref().map_or(0, |l| l.changes())
    }

    /// Bytes waiting in the pacer.
    pub fn pacer_bytes(&self) -> usize {
        self.core.pacer.queued_bytes()
    }

    /// Bytes in flight as the window counts them.
    pub fn in_flight(&self) -> usize {
        self.flight.bytes
    }

    /// How long a packet may go without a report before the window gives up on it:
    /// 3 sRTT, at least 300 ms (1 s before the first RTT sample).
    fn flight_timeout(&self) -> Duration {
        self.copa.srtt().map_or(Duration::from_secs(1), |s| {
            (s * 3).max(Duration::from_millis(300))
        })
    }

    /// CC-Rate capped at the maximum video rate.
    pub fn cc_rate(&self) -> Bitrate {
        self.copa
            .rate()
            .unwrap_or(self.config.start_rate)
            .min(self.config.max_rate)
    }

    fn pacer_delay(&self, now: Instant) -> Duration {
        self.core.pacer.oldest().map_or(Duration::ZERO, |t| now - t)
    }

    /// The scheme's own counters.
    pub fn counters(&self) -> SenderCounters {
        self.core.stats
    }

    /// The target last given to the encoder (after the deadband), once an encode ran.
    pub fn applied_target(&self) -> Option<Bitrate> {
        self.core.cbr.applied()
    }

    fn on_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.core.stats.pictures += 1;
        if let Some(last) = self.last_capture {
            if captured > last {
                self.frame_interval = captured - last;
            }
        }
        self.last_capture = Some(captured);
        let fps = self.alpha.sent_fps(now);
        if let Some(ladder) = &mut self.ladder {
            if ladder.on_picture(now, fps) {
                self.core.keyframe_owed = true;
            }
        }
        if let Some(old) = self.waiting.replace(Picture { picture, captured }) {
            let reason = if self.paused {
                DropReason::Paused
            } else {
                DropReason::EncoderBusy
            };
            self.core.dropped(now, old, reason);
        }
        self.maybe_encode(now);
    }

    fn maybe_encode(&mut self, now: Instant) {
        if self.core.encoding.is_some() {
            return;
        }
        let delay = self.pacer_delay(now);
        if delay > self.config.reset_after {
            self.core.stats.resets += 1;
            self.core.pacer.drain();
            self.in_pacer.clear();
            self.core.keyframe_owed = true;
        } else if delay > self.config.pause_after {
            if !self.paused {
                self.core.stats.pauses += 1;
            }
            self.paused = true;
            return;
        }
        let Some(p) = self.waiting.take() else {
            return;
        };
        if self.paused {
            self.paused = false;
            // Resumed: encode the kept picture only if it is still fresh.
            if now - p.captured > self.config.paused_picture_max_age {
                self.core.dropped(now, p, DropReason::Paused);
                return;
            }
        }
        let alpha = self.alpha.update(now);
        let rate = self.cc_rate().mul_f64(alpha);
        let target = self
            .core
            .less_audio(now, rate, self.config.min_target)
            .clamp_to(self.config.min_target, self.config.max_rate);
        if target != self.core.stats.target {
            self.core.stats.target = target;
            let pacing = self.core.pacer.rate();
            self.core.event(SenderEvent::Target {
                at: now,
                encoder: target,
                pacing,
            });
        }
        let keyframe = self.core.keyframe_owed;
        self.encode_step = self.ladder.as_ref().map_or(0, |l| l.step());
        let size = ladder_size(self.source.0, self.source.1, self.encode_step);
        let job = self
            .core
            .cbr
            .job(target, keyframe, size, self.config.cbr_settings());
        self.core.request_cbr(p, job);
    }

    fn on_encoded(
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
                let (target, alpha) = (self.core.stats.target, self.alpha.alpha());
                if let Some(ladder) = &mut self.ladder {
                    if ladder.on_encoded(now, f.data.len(), target, alpha) {
                        self.core.keyframe_owed = true;
                    }
                }
                if let Some(n) = self.core.queue_frame(now, p, &f) {
                    self.in_pacer.push_back((n, self.alpha.alpha(), now));
                }
            }
            None => self.core.dropped(now, p, DropReason::RateControl),
        }
        self.maybe_encode(now);
        Ok(())
    }

    fn on_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        let incoming = self.core.handle_datagram(now, datagram);
        if let Incoming::Feedback(results) = &incoming {
            if let Some(last) = results.last() {
                self.flight.reported(last.seq);
            }
            for r in results {
                match r.arrival {
                    Some(_) => self.copa.on_ack(now, now - r.sent, r.size),
                    None => self.copa.on_loss(now),
                }
            }
            self.core.pacer.set_rate(self.cc_rate());
        }
        self.maybe_encode(now);
        match incoming {
            Incoming::Bad(e) => Err(datagram_error(e)),
            _ => Ok(()),
        }
    }

    fn window_open(&self, bytes: usize) -> bool {
        (self.flight.bytes + bytes) as f64 <= self.copa.cwnd_bytes()
    }

    /// Gives up on packets in flight past the timeout (Copa sees it as a loss).
    fn expire_flight(&mut self, now: Instant) {
        let timeout = self.flight_timeout();
        if now.since_epoch() > timeout && self.flight.expire(now - timeout) {
            self.copa.on_loss(now);
        }
    }

    fn next_output(&mut self, now: Instant) -> SenderOutput {
        loop {
            if let Some(o) = self.core.out.pop_front() {
                return o;
            }
            self.expire_flight(now);
            let pacer_ok = self.core.pacer.may_send(now);
            if !self.core.pacer.is_empty() {
                // Video waits: the pacer sends it at CC-Rate while the window has room
                // (as WebRTC's pacer with a congestion window: outstanding bytes at or
                // above the window stop media). One packet may overshoot the window, so a
                // window smaller than a packet still sends.
                if pacer_ok && (self.flight.bytes as f64) < self.copa.cwnd_bytes() {
                    if let Some(q) = self.core.pacer.pop(now) {
                        let frame = q.header.frame;
                        let last = q.header.fragment + 1 == q.header.count;
                        self.flight.sent(now, q.size());
                        self.core.transmit(now, q);
                        if last && !q_retrans_only(&self.in_pacer, frame) {
                            self.frame_left_pacer(now, frame);
                        }
                        // The queue may have drained below the pause threshold.
                        self.maybe_encode(now);
                        continue;
                    }
                }
            } else if pacer_ok
                && self.window_open(self.padding_bytes())
                && self.padding_allowed(now)
            {
                let size = self.padding_bytes();
                self.flight.sent(now, size);
                self.core.transmit_padding(now, size);
                self.core.pacer.charge(now, size);
                continue;
            }
            return SenderOutput::Timeout(self.next_timeout(now));
        }
    }

    fn frame_left_pacer(&mut self, now: Instant, frame: u32) {
        while let Some(&(f, alpha, at)) = self.in_pacer.front() {
            if f > frame {
                break;
            }
            self.in_pacer.pop_front();
            if f == frame {
                self.alpha.on_frame_sent(
                    now,
                    FrameDelay {
                        alpha,
                        delay: now - at,
                    },
                );
            }
        }
    }

    /// The size of a padding datagram: the configured one, cut to what the path carries.
    fn padding_bytes(&self) -> usize {
        self.core.padding_len(self.config.padding_bytes)
    }

    fn padding_allowed(&self, now: Instant) -> bool {
        let Some(last) = self.last_capture else {
            return false; // nothing to keep warm before the first picture
        };
        // Not within the guard before the next expected capture, nor while a frame encodes.
        let mut next = last + self.frame_interval;
        while next <= now {
            next += self.frame_interval.max(Duration::from_millis(1));
        }
        self.core.encoding.is_none() && next - now > self.config.padding_guard
    }

    fn next_timeout(&self, now: Instant) -> Instant {
        let mut t = Instant::FAR_FUTURE;
        let slot = self.core.pacer.next_send();
        if let Some(oldest) = self.flight.oldest() {
            // The window may reopen when the oldest packet times out.
            t = t.min(oldest + self.flight_timeout() + Duration::from_micros(1));
        }
        if !self.core.pacer.is_empty() {
            // Window shut: the feedback that opens it is an input of its own.
            if slot > now && (self.flight.bytes as f64) < self.copa.cwnd_bytes() {
                t = t.min(slot);
            }
        } else if let Some(last) = self.last_capture {
            let next_capture = last + self.frame_interval;
            if next_capture > now {
                t = t.min(next_capture);
            }
            if self.window_open(self.padding_bytes()) && self.core.encoding.is_none() && slot > now
            {
                t = t.min(slot);
            }
        }
        if self.paused && self.core.encoding.is_none() {
            // Re-check the pause when the oldest packet could have left.
            t = t.min(now + Duration::from_millis(1));
        }
        t
    }
}

/// Whether every packet of `frame` already left (a retransmission of an old frame).
fn q_retrans_only(in_pacer: &std::collections::VecDeque<(u32, f64, Instant)>, frame: u32) -> bool {
    !in_pacer.iter().any(|&(f, _, _)| f == frame)
}

impl SenderEndpoint for VidaptiveSender {
    fn scheme(&self) -> &'static str {
        WireId::Vidaptive.name()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.on_picture(now, picture, captured);
    }

    /// A failed encode drops its picture (the encoder is not asked again until the next
    /// picture or timeout).
    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        self.on_encoded(now, id, result)
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.on_datagram(now, datagram)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.maybe_encode(now);
    }

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.core.audio.on_sent(now, bytes);
    }

    /// The shared core's: fragments and padding of at most the size the path carries, and
    /// what waits over a lowered size dropped with a keyframe next.
    fn set_max_datagram(&mut self, _now: Instant, bytes: usize) {
        self.core.set_max_datagram(bytes);
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        self.next_output(now)
    }

    fn stats(&self) -> SenderStats {
        self.core.stats.common(Some(self.core.stats.target))
    }

    /// Padding, retransmissions, pauses and resets (counters), then the gauges the
    /// simulator's per-frame trace had: Copa's window (packets) and sRTT, CC-Rate, alpha,
    /// the encoder target (before and after the deadband), the pacer's bytes, the window's
    /// bytes in flight, slow start (0/1); then the ladder's rung and changes.
    fn diagnostics(&self) -> Vec<Diagnostic> {
        let s = &self.core.stats;
        let d = |name, value: f64| Diagnostic { name, value };
        let kbps = |b: Bitrate| b.as_f64() / 1000.0;
        vec![
            d("padding_packets", s.padding_packets as f64),
            d("padding_bytes", s.padding_bytes as f64),
            d("retransmissions", s.retransmissions as f64),
            d("nacked", s.nacked as f64),
            d("pauses", s.pauses as f64),
            d("resets", s.resets as f64),
            d("cwnd_packets", self.copa.cwnd_packets()),
            d(
                "srtt_ms",
                self.copa.srtt().map_or(0.0, |t| t.as_secs_f64() * 1e3),
            ),
            d("cc_rate_kbps", kbps(self.cc_rate())),
            d("alpha", self.alpha()),
            d("target_kbps", kbps(s.target)),
            d(
                "applied_target_kbps",
                self.core.cbr.applied().map_or(0.0, kbps),
            ),
            d("pacer_bytes", self.pacer_bytes() as f64),
            d("in_flight_bytes", self.in_flight() as f64),
            d("slow_start", f64::from(u8::from(self.copa.in_slow_start()))),
            d("ladder_step", self.encode_step as f64),
            d("resolution_changes", self.resolution_changes() as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_endpoint::EncodeJob;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn a_low_frame_rate_sends_the_sender_down_the_ladder() {
        let mut s = VidaptiveSender::new(VidaptiveConfig::default(), (320, 180)).unwrap();
        // Pictures at 30 fps whose encodes the rate control always drops: nothing is sent.
        let mut steps = vec![];
        for i in 0..120u64 {
            let now = at(i * 33);
            s.handle_picture(now, i, now);
            loop {
                match s.poll_output(now) {
                    SenderOutput::Encode(req) => {
                        steps.push(s.encode_step());
                        // The job names the rung's size, the scheme's encoder settings,
                        // and a keyframe when the rung changed.
                        let EncodeJob::Cbr(job) = req.job else {
                            panic!("{:?}", req.job)
                        };
                        let size = ladder_size(320, 180, s.encode_step());
                        assert_eq!((job.width, job.height), size);
                        assert_eq!(job.settings.dropframe_thresh, 0);
                        assert_eq!(job.settings.max_gap_frames, VIDAPTIVE_MAX_GAP_FRAMES);
                        if steps.len() > 1 && steps[steps.len() - 2] != s.encode_step() {
                            assert!(job.keyframe);
                        }
                        s.handle_encoded(now, req.id, Ok(EncodeOutcome::Cbr(None)))
                            .unwrap();
                    }
                    SenderOutput::Timeout(_) => break,
                    _ => {}
                }
            }
        }
        // Down one rung per T once a full window shows < 5 fps for 15 pictures.
        assert_eq!(steps[0], 0);
        assert_eq!(s.encode_step(), 3, "{steps:?}");
        assert_eq!(s.resolution_changes(), 3);
    }

    #[test]
    fn a_disabled_ladder_keeps_the_source_size() {
        let config = VidaptiveConfig {
            ladder: LadderConfig {
                enabled: false,
                ..LadderConfig::default()
            },
            ..VidaptiveConfig::default()
        };
        let mut s = VidaptiveSender::new(config, (320, 180)).unwrap();
        let mut encodes = 0;
        for i in 0..120u64 {
            let now = at(i * 33);
            s.handle_picture(now, i, now);
            loop {
                match s.poll_output(now) {
                    SenderOutput::Encode(req) => {
                        let EncodeJob::Cbr(job) = req.job else {
                            panic!("{:?}", req.job)
                        };
                        assert_eq!((job.width, job.height), (320, 180));
                        encodes += 1;
                        s.handle_encoded(now, req.id, Ok(EncodeOutcome::Cbr(None)))
                            .unwrap();
                    }
                    SenderOutput::Timeout(_) => break,
                    _ => {}
                }
            }
        }
        assert_eq!(encodes, 120);
        assert_eq!(s.resolution_changes(), 0);
    }

    /// Drives `s` for `ms` milliseconds from `from` (1 ms steps; 30 fps pictures, each
    /// encoded at once into `frame_bytes`); returns the datagrams sent with their times.
    fn drive(
        s: &mut VidaptiveSender,
        from: u64,
        ms: u64,
        frame_bytes: usize,
    ) -> Vec<(Instant, Vec<u8>)> {
        let mut sent = vec![];
        for t in from..from + ms {
            let now = at(t);
            if t % 33 == 0 {
                s.handle_picture(now, t / 33, now);
            }
            s.handle_timeout(now);
            loop {
                match s.poll_output(now) {
                    SenderOutput::Encode(req) => s
                        .handle_encoded(
                            now,
                            req.id,
                            Ok(EncodeOutcome::Cbr(Some(salsify_codec::CbrFrame {
                                data: vec![0; frame_bytes],
                                keyframe: true,
                                quality: 10,
                            }))),
                        )
                        .unwrap(),
                    SenderOutput::Transmit(d) => sent.push((now, d)),
                    SenderOutput::Timeout(_) => break,
                    SenderOutput::Event(_) => {}
                }
            }
        }
        sent
    }

    #[test]
    fn without_feedback_video_stops_at_the_window_then_feedback_reopens_it() {
        let mut s = VidaptiveSender::new(VidaptiveConfig::default(), (320, 180)).unwrap();
        // 900 ms at the 300 kb/s start rate would pace 33 KB; the 10-packet window holds 12 KB.
        let sent = drive(&mut s, 0, 900, 5000);
        let bytes: usize = sent.iter().map(|(_, d)| d.len()).sum();
        let window = s.copa().cwnd_bytes() as usize;
        assert!(
            bytes <= window + 1500,
            "{bytes} bytes sent for a {window}-byte window"
        );
        assert!(
            bytes >= window - 1500,
            "{bytes} bytes sent for a {window}-byte window"
        );
        assert!(s.in_flight() >= window - 1500);
        // Feedback on the last packet settles all of them (earlier reports were lost).
        let last = sent
            .iter()
            .filter_map(|(_, d)| match crate::wire::Packet::parse(d) {
                Ok(crate::wire::Packet::Media { header, .. }) => Some(header.transport_seq),
                Ok(crate::wire::Packet::Padding { transport_seq, .. }) => Some(transport_seq),
                _ => None,
            })
            .max()
            .unwrap();
        let fb = crate::wire::Packet::Feedback(crate::wire::Feedback {
            base_seq: last,
            arrivals: vec![Some(at(880))],
        })
        .emit()
        .unwrap();
        s.handle_datagram(at(900), &fb).unwrap();
        assert_eq!(s.in_flight(), 0);
        let more = drive(&mut s, 900, 50, 5000);
        assert!(!more.is_empty(), "the window reopened");
    }

    #[test]
    fn packets_without_any_report_are_given_up_after_the_timeout() {
        let mut s = VidaptiveSender::new(VidaptiveConfig::default(), (320, 180)).unwrap();
        let sent = drive(&mut s, 0, 900, 5000);
        let stalled_at = sent.last().unwrap().0;
        // No sRTT yet: packets are given up 1 s after they were sent, and sending resumes.
        let more = drive(&mut s, 900, 400, 5000);
        let resumed = more.first().expect("sending resumes").0;
        assert!(resumed >= stalled_at, "{resumed:?}");
        assert!(resumed - sent[0].0 >= Duration::from_secs(1), "{resumed:?}");
    }
}
