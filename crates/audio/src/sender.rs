//! The sending side: takes the source's frames at their capture times, encodes them, and
//! hands out the packets to send (DTX's empty frames are not sent).

use salsify_time::{Duration, Instant};

use crate::codec::{OpusEncoder, DTX_PACKET_MAX};
use crate::config::{AudioError, OpusConfig};
use crate::source::AudioSource;
use crate::wire::AudioPacket;

/// An audio sender, sans-IO: call [`AudioSender::poll`] at or after [`AudioSender::next_at`].
#[derive(Debug)]
pub struct AudioSender {
    encoder: OpusEncoder,
    source: Box<dyn AudioSource>,
    /// When frame 0's first sample was captured.
    start: Instant,
    next_frame: u64,
    next_seq: u32,
    pcm: Vec<i16>,
    /// Frames encoded, and packets sent.
    pub frames: u64,
    /// Packets sent.
    pub packets: u64,
}

impl AudioSender {
    /// A sender whose first frame starts being captured at `start`.
    pub fn new(
        config: &OpusConfig,
        source: Box<dyn AudioSource>,
        start: Instant,
    ) -> Result<Self, AudioError> {
        Ok(AudioSender {
            encoder: OpusEncoder::new(config)?,
            source,
            start,
            next_frame: 0,
            next_seq: 0,
            pcm: vec![0; config.frame.samples()],
            frames: 0,
            packets: 0,
        })
    }

    fn frame_len(&self) -> Duration {
        self.encoder.frame().duration()
    }

    /// When frame `k` started being captured.
    pub fn captured(&self, frame: u64) -> Instant {
        self.start + self.frame_len() * frame as u32
    }

    /// When the next frame is whole (its last sample captured) and can be sent.
    pub fn next_at(&self) -> Instant {
        self.captured(self.next_frame + 1)
    }

    /// The next packet to send, if a frame is due at `now`. A frame DTX leaves empty is
    /// skipped (and the next due one tried).
    pub fn poll(&mut self, now: Instant) -> Result<Option<AudioPacket>, AudioError> {
        while self.next_at() <= now {
            let frame = self.next_frame;
            let samples = self.encoder.frame().samples() as u64;
            self.source.fill(frame * samples, &mut self.pcm);
            let payload = self.encoder.encode(&self.pcm)?;
            self.next_frame += 1;
            self.frames += 1;
            if payload.len() <= DTX_PACKET_MAX {
                continue;
            }
            let packet = AudioPacket {
                seq: self.next_seq,
                frame: frame as u32,
                captured: self.captured(frame),
                payload,
            };
            self.next_seq = self.next_seq.wrapping_add(1);
            self.packets += 1;
            return Ok(Some(packet));
        }
        Ok(None)
    }
}
