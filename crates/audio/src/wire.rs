//! An audio packet on the wire: a tag byte no video scheme's datagrams start with, the
//! packet's sequence number (one per packet sent, so a gap is a loss), the frame it carries
//! (its index in the stream: frames DTX did not send leave gaps here but not in the
//! sequence), its capture time on the sender's clock, and the Opus payload.

use salsify_time::Instant;

/// First byte of every audio datagram (video schemes use 0x01, 0xB1 and 0x53).
pub const AUDIO_WIRE_TAG: u8 = 0xA7;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 1 + 4 + 4 + 8;
/// The largest Opus payload accepted (libopus's bound for one frame).
pub const MAX_PAYLOAD: usize = 1275;

/// One audio packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioPacket {
    /// Counts packets sent.
    pub seq: u32,
    /// Counts frames of the stream.
    pub frame: u32,
    /// When the frame's first sample was captured, on the sender's clock.
    pub captured: Instant,
    /// The Opus packet.
    pub payload: Vec<u8>,
}

/// Why bytes are not an audio packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioWireError {
    /// Not tagged as audio.
    #[error("not an audio datagram")]
    NotAudio,
    /// Shorter than a header.
    #[error("audio datagram of {0} bytes is shorter than its header")]
    Truncated(usize),
    /// No payload, or one longer than an Opus frame can be.
    #[error("audio payload of {0} bytes (1 to 1275 expected)")]
    PayloadSize(usize),
}

impl AudioPacket {
    /// The datagram.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.payload.len());
        out.push(AUDIO_WIRE_TAG);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.frame.to_be_bytes());
        out.extend_from_slice(&self.captured.as_micros().to_be_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    /// Reads a datagram; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, AudioWireError> {
        if bytes.first() != Some(&AUDIO_WIRE_TAG) {
            return Err(AudioWireError::NotAudio);
        }
        if bytes.len() < HEADER_LEN {
            return Err(AudioWireError::Truncated(bytes.len()));
        }
        let payload = &bytes[HEADER_LEN..];
        if payload.is_empty() || payload.len() > MAX_PAYLOAD {
            return Err(AudioWireError::PayloadSize(payload.len()));
        }
        let word = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let mut micros = [0u8; 8];
        micros.copy_from_slice(&bytes[9..17]);
        Ok(AudioPacket {
            seq: word(1),
            frame: word(5),
            captured: Instant::from_micros(u64::from_be_bytes(micros)),
            payload: payload.to_vec(),
        })
    }

    /// True when `bytes` is tagged as audio (the first byte only).
    pub fn is_audio(bytes: &[u8]) -> bool {
        bytes.first() == Some(&AUDIO_WIRE_TAG)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_packet_round_trips() {
        let p = AudioPacket {
            seq: 7,
            frame: 9,
            captured: Instant::from_micros(180_000),
            payload: vec![1, 2, 3],
        };
        assert_eq!(AudioPacket::decode(&p.encode()), Ok(p));
        assert_eq!(AudioPacket::decode(&[1, 2]), Err(AudioWireError::NotAudio));
        assert_eq!(
            AudioPacket::decode(&[AUDIO_WIRE_TAG]),
            Err(AudioWireError::Truncated(1))
        );
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_fail_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..1400)) {
            if let Ok(p) = AudioPacket::decode(&bytes) {
                prop_assert_eq!(p.encode(), bytes);
            }
        }
    }
}
