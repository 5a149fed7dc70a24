//! The audio path's settings, with their defaults, and its errors.

use salsify_time::Duration;

/// Opus runs at 48 kHz here, in and out (no resampling inside the call).
pub const SAMPLE_RATE: u32 = 48_000;

/// How much audio one Opus packet carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameLength {
    /// 10 ms: less delay, more packets (and headers) per second.
    Ms10,
    /// 20 ms (default): what voice calls use.
    #[default]
    Ms20,
}

impl FrameLength {
    /// Samples per frame at [`SAMPLE_RATE`].
    pub fn samples(self) -> usize {
        match self {
            FrameLength::Ms10 => 480,
            FrameLength::Ms20 => 960,
        }
    }

    /// The frame's duration.
    pub fn duration(self) -> Duration {
        match self {
            FrameLength::Ms10 => Duration::from_millis(10),
            FrameLength::Ms20 => Duration::from_millis(20),
        }
    }
}

/// The encoder's settings (mono, [`SAMPLE_RATE`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpusConfig {
    /// Audio per packet. Default 20 ms.
    pub frame: FrameLength,
    /// Target bitrate in bits per second. Default 32 000 (voice with room for in-band FEC).
    pub bitrate_bps: i32,
    /// In-band forward error correction: each packet carries a coarse copy of the one
    /// before, so a single loss is recovered from the next packet. Default on.
    pub fec: bool,
    /// The loss the encoder provisions FEC for, in percent. Default 10.
    pub expected_loss_percent: i32,
    /// Discontinuous transmission: silence is sent as an occasional comfort-noise packet.
    /// Default on.
    pub dtx: bool,
}

impl Default for OpusConfig {
    fn default() -> Self {
        OpusConfig {
            frame: FrameLength::Ms20,
            bitrate_bps: 32_000,
            fec: true,
            expected_loss_percent: 10,
            dtx: true,
        }
    }
}

/// Why audio could not be coded, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AudioError {
    /// libopus refused a setting or a packet.
    #[error("opus: {0}")]
    Opus(String),
    /// A frame of the wrong length was given to the encoder.
    #[error("a frame of {got} samples where {expected} were expected")]
    FrameSize {
        /// What the frame length needs.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// A WAV file could not be read or written.
    #[error("WAV file {path}: {why}")]
    Wav {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
}

impl From<opus::Error> for AudioError {
    fn from(e: opus::Error) -> Self {
        AudioError::Opus(e.to_string())
    }
}
