//! Opus through libopus (the `opus` binding): mono at 48 kHz, FEC and DTX as configured, and a
//! decoder that fills a missing frame from the next packet's FEC or, failing that, conceals it.

use crate::config::{AudioError, FrameLength, OpusConfig, SAMPLE_RATE};

/// The largest packet the encoder may produce (libopus's own recommendation for one frame).
const MAX_PACKET: usize = 1275;

/// Packets this short carry no audio: DTX says "still silent" and they need not be sent.
pub const DTX_PACKET_MAX: usize = 2;

/// An Opus encoder for one stream.
pub struct OpusEncoder {
    inner: opus::Encoder,
    frame: FrameLength,
}

impl std::fmt::Debug for OpusEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusEncoder")
            .field("frame", &self.frame)
            .finish()
    }
}

impl OpusEncoder {
    /// An encoder for voice (`VOIP`) with `config`'s settings.
    pub fn new(config: &OpusConfig) -> Result<Self, AudioError> {
        let mut inner =
            opus::Encoder::new(SAMPLE_RATE, opus::Channels::Mono, opus::Application::Voip)?;
        inner.set_bitrate(opus::Bitrate::Bits(config.bitrate_bps))?;
        inner.set_inband_fec(config.fec)?;
        inner.set_packet_loss_perc(config.expected_loss_percent.clamp(0, 100))?;
        inner.set_dtx(config.dtx)?;
        Ok(OpusEncoder {
            inner,
            frame: config.frame,
        })
    }

    /// Encodes one frame (exactly [`FrameLength::samples`] samples). A packet of at most
    /// [`DTX_PACKET_MAX`] bytes is DTX's "nothing to send".
    pub fn encode(&mut self, pcm: &[i16]) -> Result<Vec<u8>, AudioError> {
        if pcm.len() != self.frame.samples() {
            return Err(AudioError::FrameSize {
                expected: self.frame.samples(),
                got: pcm.len(),
            });
        }
        Ok(self.inner.encode_vec(pcm, MAX_PACKET)?)
    }

    /// The frame length in use.
    pub fn frame(&self) -> FrameLength {
        self.frame
    }
}

/// How a frame handed to the player was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// From its own packet.
    Packet,
    /// Rebuilt from the next packet's in-band FEC.
    Fec,
    /// Made up by packet-loss concealment (no packet, no FEC).
    Concealed,
}

/// An Opus decoder for one stream.
pub struct OpusDecoder {
    inner: opus::Decoder,
    frame: FrameLength,
}

impl std::fmt::Debug for OpusDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpusDecoder")
            .field("frame", &self.frame)
            .finish()
    }
}

impl OpusDecoder {
    /// A decoder for frames of `frame`.
    pub fn new(frame: FrameLength) -> Result<Self, AudioError> {
        Ok(OpusDecoder {
            inner: opus::Decoder::new(SAMPLE_RATE, opus::Channels::Mono)?,
            frame,
        })
    }

    /// One frame of audio for a slot: from `packet` if it is here, else from `next`'s FEC
    /// if that is here, else concealed. Never fails: a packet libopus refuses is concealed.
    pub fn frame(&mut self, packet: Option<&[u8]>, next: Option<&[u8]>) -> (Vec<i16>, Decoded) {
        let mut out = vec![0i16; self.frame.samples()];
        if let Some(p) = packet {
            if self.decode_into(p, &mut out, false) {
                return (out, Decoded::Packet);
            }
        }
        if let Some(n) = next.filter(|n| n.len() > DTX_PACKET_MAX) {
            if self.decode_into(n, &mut out, true) {
                return (out, Decoded::Fec);
            }
        }
        if !self.decode_into(&[], &mut out, false) {
            out.fill(0);
        }
        (out, Decoded::Concealed)
    }

    /// Decodes into `out` (a whole frame); false when libopus refused.
    fn decode_into(&mut self, packet: &[u8], out: &mut [i16], fec: bool) -> bool {
        matches!(self.inner.decode(packet, out, fec), Ok(n) if n == out.len())
    }
}
