//! The receiving side: packets into an adaptive jitter buffer, frames out at the playout
//! delay the buffer and the lip-sync rule agree on, decoded (or recovered, or concealed).
//!
//! As NetEQ does, a late packet is waited for while the link has stalled (nothing sent
//! after it has arrived, audio or video), and the delay that wait added is shed afterwards
//! by playing frames faster ([`crate::timescale`]) rather than by dropping any: the audio a
//! stall held up is heard late, not lost. A packet the link has clearly overtaken (a newer
//! one arrived) is lost: it is rebuilt from the next packet's FEC or concealed.

use std::collections::BTreeMap;

use salsify_time::{Duration, Instant};

use crate::codec::{Decoded, OpusDecoder};
use crate::config::{AudioError, FrameLength, SAMPLE_RATE};
use crate::jitter::{DelayWindow, JitterConfig};
use crate::record::{Arrival, PlayedFrame, PlayedKind};
use crate::sync::{SyncConfig, VideoDelay};
use crate::timescale::accelerate;
use crate::wire::{AudioPacket, AudioWireError};

/// The receiver's settings.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PlayerConfig {
    /// Audio per packet (as the sender's). Default 20 ms.
    pub frame: FrameLength,
    /// The jitter buffer.
    pub jitter: JitterConfig,
    /// Lip sync.
    pub sync: SyncConfig,
}

/// Packets more than this far ahead of playout are refused (the buffer stays bounded).
const MAX_AHEAD_FRAMES: u64 = 500;

/// An audio receiver, sans-IO: packets in with [`AudioPlayer::handle_datagram`], shown
/// pictures in with [`AudioPlayer::handle_video_shown`], and frames out of
/// [`AudioPlayer::poll_frame`] at [`AudioPlayer::next_at`].
#[derive(Debug)]
pub struct AudioPlayer {
    config: PlayerConfig,
    decoder: OpusDecoder,
    /// Packets waiting, by frame.
    waiting: BTreeMap<u64, Vec<u8>>,
    delays: DelayWindow,
    video: VideoDelay,
    /// Capture time of frame 0 (learnt from the first packet).
    epoch: Option<Instant>,
    /// The next stream frame to play, and when.
    next: Option<(u64, Instant)>,
    /// The delay of the last frame played at its target (not stalled, not catching up).
    settled: Option<Duration>,
    /// When the player started waiting for the frame now due (a stall), if it is waiting.
    stalled_since: Option<Instant>,
    /// A stall outlasted its limit: no more waiting until a packet arrives.
    stall_abandoned: bool,
    /// The newest frame any packet carried.
    newest_frame: Option<u64>,
    /// The capture time of the newest picture shown (the video's news of the link).
    newest_shown: Option<Instant>,
    /// The newest sequence number received, and when a gap in them was last seen.
    newest_seq: Option<u32>,
    last_loss: Option<Instant>,
    /// Datagrams refused.
    pub bad_datagrams: u64,
}

impl AudioPlayer {
    /// A receiver that has heard nothing yet.
    pub fn new(config: PlayerConfig) -> Result<Self, AudioError> {
        Ok(AudioPlayer {
            decoder: OpusDecoder::new(config.frame)?,
            waiting: BTreeMap::new(),
            delays: DelayWindow::new(config.jitter),
            video: VideoDelay::new(config.sync),
            epoch: None,
            next: None,
            settled: None,
            stalled_since: None,
            stall_abandoned: false,
            newest_frame: None,
            newest_shown: None,
            newest_seq: None,
            last_loss: None,
            bad_datagrams: 0,
            config,
        })
    }

    fn frame_len(&self) -> Duration {
        self.config.frame.duration()
    }

    fn captured(&self, epoch: Instant, frame: u64) -> Instant {
        epoch + self.frame_len() * frame as u32
    }

    /// An audio datagram arrived at `now`: the packet it carried (for the driver's figures,
    /// [`crate::AudioTally`]; the player keeps no log). A bad one is counted and dropped.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        bytes: &[u8],
    ) -> Result<Arrival, AudioWireError> {
        let packet = AudioPacket::decode(bytes).inspect_err(|_| self.bad_datagrams += 1)?;
        let frame = u64::from(packet.frame);
        let epoch = *self.epoch.get_or_insert_with(|| {
            packet
                .captured
                .checked_sub(self.config.frame.duration() * packet.frame)
                .unwrap_or(Instant::ZERO)
        });
        if self
            .newest_seq
            .is_some_and(|s| packet.seq.wrapping_sub(s) > 1 && packet.seq.wrapping_sub(s) < 1 << 31)
        {
            self.last_loss = Some(now);
        }
        if self
            .newest_seq
            .is_none_or(|s| packet.seq.wrapping_sub(s) < 1 << 31)
        {
            self.newest_seq = Some(packet.seq);
        }
        self.newest_frame = self.newest_frame.max(Some(frame));
        self.stall_abandoned = false;
        let arrival = Arrival {
            frame,
            seq: packet.seq,
            at: now,
        };
        // A packet held up by a stall teaches the buffer at most a frame more than the delay
        // it last played at steadily: the stall is waited out, and provisioning for it
        // afterwards would hold every later frame back as long.
        let delay = now.saturating_duration_since(self.captured(epoch, frame));
        let ceiling = self.settled.map(|d| d + self.frame_len());
        self.delays.push(ceiling.map_or(delay, |c| delay.min(c)));
        if self.next.is_none() {
            let delay = self.target_delay(now);
            self.next = Some((frame, self.captured(epoch, frame) + delay));
        }
        let next_frame = self.next.map_or(0, |(f, _)| f);
        if frame >= next_frame && frame < next_frame + MAX_AHEAD_FRAMES {
            self.waiting.insert(frame, packet.payload);
        }
        Ok(arrival)
    }

    /// A picture captured at `captured` was shown at `now` (for lip sync).
    pub fn handle_video_shown(&mut self, now: Instant, captured: Instant) {
        self.video.on_shown(now, captured);
        self.newest_shown = self.newest_shown.max(Some(captured));
    }

    /// The playout delay wanted at `now`: the jitter buffer's least delay (a frame more
    /// for a while after a loss, for FEC), held back to the video's under lip sync.
    pub fn target_delay(&self, now: Instant) -> Duration {
        let mut own = self.delays.playout_delay().unwrap_or(Duration::ZERO);
        let hold = self.config.jitter.fec_hold;
        if self
            .last_loss
            .is_some_and(|at| now.saturating_duration_since(at) < hold)
        {
            own += self.frame_len();
        }
        self.video.target(own)
    }

    /// When the next frame plays (`FAR_FUTURE` before the first packet).
    pub fn next_at(&self) -> Instant {
        self.next.map_or(Instant::FAR_FUTURE, |(_, at)| at)
    }

    /// Whether to wait for `frame` (captured at `captured`, due at `at`), whose packet is not
    /// here: only while nothing sent after it has arrived (no newer audio packet, no picture
    /// captured after the frame was whole, so sent after its packet), for at most `max_stall` (`max_stall_audio_only` in a
    /// call without pictures, where DTX's silence looks the same); after a stall outlasted
    /// that, not again until a packet arrives.
    fn link_stalled(&self, at: Instant, frame: u64, captured: Instant) -> bool {
        if self.stall_abandoned || self.newest_frame.is_some_and(|f| f > frame) {
            return false;
        }
        let limit = match self.newest_shown {
            Some(seen) if seen > captured + self.frame_len() => return false,
            Some(_) => self.config.jitter.max_stall,
            None => self.config.jitter.max_stall_audio_only,
        };
        let since = self.stalled_since.unwrap_or(at);
        at.saturating_duration_since(since) < limit
    }

    /// Plays a frame of concealment at `at` while the stream stays at `frame`.
    fn insert(
        &mut self,
        at: Instant,
        frame: u64,
        captured: Instant,
        kind: PlayedKind,
    ) -> (Vec<i16>, PlayedFrame) {
        self.next = Some((frame, at + self.frame_len()));
        let (samples, _) = self.decoder.frame(None, None);
        let played = PlayedFrame {
            at,
            frame: None,
            captured,
            kind,
        };
        (samples, played)
    }

    /// The frame due at `now`, if one is: its samples and what was played. A frame played
    /// faster has fewer samples; the next one starts when these end.
    pub fn poll_frame(&mut self, now: Instant) -> Option<(Vec<i16>, PlayedFrame)> {
        let (frame, at) = self.next.filter(|(_, at)| *at <= now)?;
        let epoch = self.epoch?;
        let step = self.frame_len();
        let captured = self.captured(epoch, frame);
        if !self.waiting.contains_key(&frame) {
            if self.link_stalled(at, frame, captured) {
                self.stalled_since.get_or_insert(at);
                return Some(self.insert(at, frame, captured, PlayedKind::Stall));
            }
            self.stall_abandoned |= self.stalled_since.is_some();
        }
        self.stalled_since = None;
        let current = at.saturating_duration_since(captured);
        let target = self.target_delay(now);
        if target > current + step / 2 {
            // Grow: play a concealment frame and let the stream wait one frame.
            return Some(self.insert(at, frame, captured, PlayedKind::Stretch));
        }
        let packet = self.waiting.remove(&frame);
        let (samples, how) = {
            let next = self.waiting.get(&(frame + 1)).map(Vec::as_slice);
            self.decoder.frame(packet.as_deref(), next)
        };
        let behind = current > target + step;
        if !behind {
            self.settled = Some(current);
        }
        let (samples, kind) = match how {
            Decoded::Packet if behind => {
                let mut out = accelerate(&samples);
                if current > target + step * 3 {
                    out = accelerate(&out);
                }
                (out, PlayedKind::Accelerated)
            }
            Decoded::Packet => (samples, PlayedKind::Packet),
            Decoded::Fec => (samples, PlayedKind::Fec),
            Decoded::Concealed => (samples, PlayedKind::Missing),
        };
        let played = PlayedFrame {
            at,
            frame: Some(frame),
            captured,
            kind,
        };
        let length =
            Duration::from_micros(samples.len() as u64 * 1_000_000 / u64::from(SAMPLE_RATE));
        self.next = Some((frame + 1, at + length));
        // Packets for frames already played are of no use any more.
        self.waiting = self.waiting.split_off(&(frame + 1));
        Some((samples, played))
    }

    /// Elements held in its collections: the packets waiting (at most
    /// `MAX_AHEAD_FRAMES`) and the delay windows', whatever the call's length.
    pub fn held(&self) -> usize {
        self.waiting.len() + self.delays.held() + self.video.held()
    }
}
