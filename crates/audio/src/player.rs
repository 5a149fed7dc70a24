//! The receiving side: packets into an adaptive jitter buffer, frames out at the playout
//! delay the buffer and the lip-sync rule agree on, decoded (or recovered, or concealed).

use std::collections::BTreeMap;

use salsify_time::{Duration, Instant};

use crate::codec::{Decoded, OpusDecoder};
use crate::config::{AudioError, FrameLength};
use crate::jitter::{DelayWindow, JitterConfig};
use crate::record::{Arrival, PlayedFrame, PlayedKind};
use crate::sync::{SyncConfig, VideoDelay};
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
    last_change: Instant,
    /// The newest sequence number received, and when a gap in them was last seen.
    newest_seq: Option<u32>,
    last_loss: Option<Instant>,
    arrivals: Vec<Arrival>,
    played: Vec<PlayedFrame>,
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
            last_change: Instant::ZERO,
            newest_seq: None,
            last_loss: None,
            arrivals: Vec::new(),
            played: Vec::new(),
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

    /// An audio datagram arrived at `now`. A bad one is counted and dropped.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), AudioWireError> {
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
        self.arrivals.push(Arrival {
            frame,
            seq: packet.seq,
            at: now,
        });
        self.delays
            .push(now.saturating_duration_since(self.captured(epoch, frame)));
        if self.next.is_none() {
            let delay = self.target_delay(now);
            self.next = Some((frame, self.captured(epoch, frame) + delay));
            self.last_change = now;
        }
        let next_frame = self.next.map_or(0, |(f, _)| f);
        if frame >= next_frame && frame < next_frame + MAX_AHEAD_FRAMES {
            self.waiting.insert(frame, packet.payload);
        }
        Ok(())
    }

    /// A picture captured at `captured` was shown at `now` (for lip sync).
    pub fn handle_video_shown(&mut self, now: Instant, captured: Instant) {
        self.video.on_shown(now, captured);
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

    /// The frame due at `now`, if one is: its samples and what was played.
    pub fn poll_frame(&mut self, now: Instant) -> Option<(Vec<i16>, PlayedFrame)> {
        let (frame, at) = self.next.filter(|(_, at)| *at <= now)?;
        let epoch = self.epoch?;
        let step = self.frame_len();
        let current = at.saturating_duration_since(self.captured(epoch, frame));
        let target = self.target_delay(now);
        let settled =
            now.saturating_duration_since(self.last_change) >= self.config.jitter.shrink_every;
        if target > current + step / 2 {
            // Grow: play a concealment frame and let the stream wait one frame.
            self.last_change = now;
            self.next = Some((frame, at + step));
            let (samples, _) = self.decoder.frame(None, None);
            let played = PlayedFrame {
                at,
                frame: None,
                captured: self.captured(epoch, frame),
                kind: PlayedKind::Stretch,
            };
            self.played.push(played);
            return Some((samples, played));
        }
        let mut frame = frame;
        if settled && target + step < current && self.waiting.contains_key(&frame) {
            // Shrink: skip this frame (decoded, so the decoder's state stays continuous).
            let packet = self.waiting.remove(&frame);
            let _ = self.decoder.frame(packet.as_deref(), None);
            self.last_change = now;
            frame += 1;
        }
        let packet = self.waiting.remove(&frame);
        let (samples, how) = {
            let next = self.waiting.get(&(frame + 1)).map(Vec::as_slice);
            self.decoder.frame(packet.as_deref(), next)
        };
        let kind = match how {
            Decoded::Packet => PlayedKind::Packet,
            Decoded::Fec => PlayedKind::Fec,
            Decoded::Concealed => PlayedKind::Missing,
        };
        let played = PlayedFrame {
            at,
            frame: Some(frame),
            captured: self.captured(epoch, frame),
            kind,
        };
        self.played.push(played);
        self.next = Some((frame + 1, at + step));
        // Packets for frames already played are of no use any more.
        self.waiting = self.waiting.split_off(&(frame + 1));
        Some((samples, played))
    }

    /// Every frame played so far.
    pub fn played(&self) -> &[PlayedFrame] {
        &self.played
    }

    /// Every packet received so far.
    pub fn arrivals(&self) -> &[Arrival] {
        &self.arrivals
    }
}
