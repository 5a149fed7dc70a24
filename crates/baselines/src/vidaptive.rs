//! The Vidaptive-style sender: Copa's window and CC-Rate = cwnd / sRTT drive a pacer; when
//! the window and the pacer allow sending but no video waits, dummy padding keeps the flow
//! looking backlogged; the encoder gets alpha x CC-Rate ([`crate::alpha`]), pauses while the
//! pacer's oldest packet is older than tau, and resets (drain, keyframe) past one second.
//!
//! Simplifications: no resolution ladder (the encoder keeps one size; the simulator scores
//! frames against full-size sources), NACK/PLI loss repair as the conventional sender.

use salsify_time::{Duration, Instant};

use crate::alpha::{AlphaConfig, AlphaController, FrameDelay};
use crate::copa::{Copa, CopaConfig};
use crate::core::{Core, Incoming, Picture};
use crate::endpoint::{
    DropReason, EncodeJob, EncodedFrame, SenderEvent, SenderOutput, SenderStats,
};
use crate::rate::Bitrate;

/// Vidaptive's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VidaptiveConfig {
    /// Copa's settings (delta 0.9).
    pub copa: CopaConfig,
    /// Alpha optimisation (tau 33 ms, T 1 s, lambda 0.5).
    pub alpha: AlphaConfig,
    /// Pause encoding while the pacer's oldest packet is older than this. Default 33 ms.
    pub pause_after: Duration,
    /// A paused picture is still encoded when the queue drains if it is at most this old.
    /// Default 17 ms (half a frame at 30 fps).
    pub paused_picture_max_age: Duration,
    /// Reset (drain the pacer, force a keyframe) past this pacer delay. Default 1 s.
    pub reset_after: Duration,
    /// Dummy padding packet size (bytes, <= 200). Default 200.
    pub padding_bytes: usize,
    /// No padding within this time before the next expected capture. Default 5 ms.
    pub padding_guard: Duration,
    /// Cap on the pacing (and padding) rate: the maximum video rate. Default 12 Mb/s.
    pub max_rate: Bitrate,
    /// Floor of the encoder target. Default 50 kb/s.
    pub min_target: Bitrate,
    /// Pacing rate before the first RTT sample. Default 300 kb/s.
    pub start_rate: Bitrate,
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
        }
    }
}

impl VidaptiveConfig {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.copa.delta > 0.0 && self.copa.delta.is_finite()) {
            return Err(format!("delta {}", self.copa.delta));
        }
        if !(crate::wire::PADDING_HEADER_LEN..=200).contains(&self.padding_bytes) {
            return Err(format!("padding {} bytes", self.padding_bytes));
        }
        if !(0.0..1.0).contains(&self.alpha.lambda) || self.alpha.window.is_zero() {
            return Err("alpha settings".into());
        }
        if self.min_target > self.max_rate || self.start_rate.as_bps() == 0 {
            return Err("rates".into());
        }
        Ok(())
    }
}

/// The Vidaptive-style sender.
#[derive(Debug)]
pub struct VidaptiveSender {
    config: VidaptiveConfig,
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
}

/// Packets sent and not yet reported on, as the congestion window counts them.
///
/// Feedback comes per packet and in order, so a report on sequence number `n` settles every
/// packet before `n` as well: one whose own report was lost (the ACK queue overflowed)
/// must not hold the window shut. Packets with no report for [`Flight::timeout`] are given
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
    /// A sender; the configuration is checked.
    pub fn new(config: VidaptiveConfig) -> Result<Self, String> {
        config.validate()?;
        let mut core = Core::new();
        core.pacer.set_rate(config.start_rate);
        core.stats.target = config.start_rate;
        Ok(VidaptiveSender {
            copa: Copa::new(config.copa),
            alpha: AlphaController::new(config.alpha),
            config,
            core,
            waiting: None,
            paused: false,
            last_capture: None,
            frame_interval: Duration::from_micros(33_333),
            in_pacer: Default::default(),
            flight: Flight::default(),
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

    /// A camera picture.
    pub fn handle_frame(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.core.stats.pictures += 1;
        if let Some(last) = self.last_capture {
            if captured > last {
                self.frame_interval = captured - last;
            }
        }
        self.last_capture = Some(captured);
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
        let target = self
            .cc_rate()
            .mul_f64(alpha)
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
        self.core.request(p, EncodeJob::Cbr { target, keyframe });
    }

    /// The encoder's result for request `id` (`None`: its rate control dropped the frame).
    pub fn handle_encoded(&mut self, now: Instant, id: u64, frame: Option<EncodedFrame>) {
        let Some(p) = self.core.finish_encode(id) else {
            return;
        };
        match frame {
            Some(f) => {
                if let Some(n) = self.core.queue_frame(now, p, &f) {
                    self.in_pacer.push_back((n, self.alpha.alpha(), now));
                }
            }
            None => self.core.dropped(now, p, DropReason::RateControl),
        }
        self.maybe_encode(now);
    }

    /// The runtime could not encode request `id`.
    pub fn handle_encode_failed(&mut self, now: Instant, id: u64) {
        if let Some(p) = self.core.finish_encode(id) {
            self.core.dropped(now, p, DropReason::Failed);
        }
    }

    /// A datagram from the receiver.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if let Incoming::Feedback(results) = self.core.handle_datagram(now, datagram) {
            if let Some(last) = results.last() {
                self.flight.reported(last.seq);
            }
            for r in &results {
                match r.arrival {
                    Some(_) => self.copa.on_ack(now, now - r.sent, r.size),
                    None => self.copa.on_loss(now),
                }
            }
            self.core.pacer.set_rate(self.cc_rate());
        }
        self.maybe_encode(now);
    }

    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.maybe_encode(now);
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

    /// The next output; ends with `Timeout`.
    pub fn poll_output(&mut self, now: Instant) -> SenderOutput {
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
                && self.window_open(self.config.padding_bytes)
                && self.padding_allowed(now)
            {
                self.flight.sent(now, self.config.padding_bytes);
                self.core.transmit_padding(now, self.config.padding_bytes);
                self.core.pacer.charge(now, self.config.padding_bytes);
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
            if self.window_open(self.config.padding_bytes)
                && self.core.encoding.is_none()
                && slot > now
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

impl VidaptiveSender {
    /// Counters.
    pub fn stats(&self) -> SenderStats {
        self.core.stats
    }
}
