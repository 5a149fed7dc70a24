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
    /// Send silence in place of the source's samples (the microphone turned off).
    muted: bool,
    silence: Vec<i16>,
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
            muted: false,
            silence: Vec::new(),
            frames: 0,
            packets: 0,
        })
    }

    /// Sends silence from now on in place of the source's samples (`true`), or the samples
    /// again: the frame numbers and times go on either way, so the receiver plays silence,
    /// not a gap to conceal.
    pub fn set_muted(&mut self, muted: bool) {
        self.muted = muted;
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
            let mut pcm = std::mem::take(&mut self.pcm);
            self.source.fill(frame * samples, &mut pcm);
            let packet = self.encode(frame, &pcm);
            self.pcm = pcm;
            if let Some(packet) = packet? {
                return Ok(Some(packet));
            }
        }
        Ok(None)
    }

    /// Encodes a frame captured elsewhere (a device's, pushed instead of pulled from the
    /// source): `frame` is its number on this sender's clock (captured at
    /// [`AudioSender::captured`]), `pcm` its samples. Frames not after the last one encoded
    /// are refused (`None`), as are DTX's empty ones; a gap in the numbers is left for the
    /// receiver to conceal.
    pub fn encode_frame(
        &mut self,
        frame: u64,
        pcm: &[i16],
    ) -> Result<Option<AudioPacket>, AudioError> {
        if frame < self.next_frame {
            return Ok(None);
        }
        self.encode(frame, pcm)
    }

    fn encode(&mut self, frame: u64, pcm: &[i16]) -> Result<Option<AudioPacket>, AudioError> {
        let payload = if self.muted {
            self.silence.resize(pcm.len(), 0);
            self.encoder.encode(&self.silence)?
        } else {
            self.encoder.encode(pcm)?
        };
        self.next_frame = frame + 1;
        self.frames += 1;
        if payload.len() <= DTX_PACKET_MAX {
            return Ok(None);
        }
        let packet = AudioPacket {
            seq: self.next_seq,
            frame: frame as u32,
            captured: self.captured(frame),
            payload,
        };
        self.next_seq = self.next_seq.wrapping_add(1);
        self.packets += 1;
        Ok(Some(packet))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{LoopedSamples, SyntheticSpeech};

    /// Frames pushed with their numbers come out with those numbers and their grid times,
    /// one sequence number each; an old number is refused, a gap is kept.
    #[test]
    fn pushed_frames_keep_their_numbers() {
        let t0 = Instant::from_millis(1_000);
        let config = OpusConfig::default();
        let mut sender =
            AudioSender::new(&config, Box::new(LoopedSamples::new(vec![])), t0).unwrap();
        let mut voice = SyntheticSpeech::new(1);
        let n = config.frame.samples();
        let mut pcm = vec![0; n];
        let mut sent = vec![];
        for frame in [3u64, 4, 4, 2, 9, 10] {
            // Inside the first second's speech, away from its mark and pauses.
            voice.fill(4_000 + frame * n as u64, &mut pcm);
            if let Some(p) = sender.encode_frame(frame, &pcm).unwrap() {
                sent.push(p);
            }
        }
        let frames: Vec<u32> = sent.iter().map(|p| p.frame).collect();
        assert_eq!(frames, [3, 4, 9, 10]);
        assert!(sent.iter().enumerate().all(|(i, p)| p.seq == i as u32));
        for p in &sent {
            assert_eq!(p.captured, t0 + Duration::from_millis(20) * p.frame);
        }
        assert_eq!(sender.next_at(), sender.captured(12));
        assert!(sender.encode_frame(11, &pcm[1..]).is_err(), "a short frame");
    }
}
