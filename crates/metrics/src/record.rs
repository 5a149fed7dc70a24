//! The per-frame record a run produces, one per source (camera) frame.
//!
//! Kept scheme-neutral: Salsify fills [`FrameOutcome::Better`] / [`FrameOutcome::Worse`] /
//! [`FrameOutcome::Skipped`], a conventional encoder [`FrameOutcome::Single`] or [`FrameOutcome::Skipped`],
//! and a black-box peer scored by barcode only the times and quality.

use salsify_time::Instant;
use serde::{Deserialize, Serialize};

/// What the sender did with one source frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FrameOutcome {
    /// Salsify sent the higher-quality of its two encodings.
    Better,
    /// Salsify sent the lower-quality encoding (including when forced after too many skips).
    Worse,
    /// A scheme with a single encoding per frame (conventional encoders) sent it.
    Single,
    /// Nothing was sent for this frame (Salsify skip, encoder pause, frame drop).
    Skipped,
    /// The sender's choice is not known (a black-box peer scored from the receiver side).
    Unknown,
}

/// One source frame's fate, filled by the simulator (or a barcode reader).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    /// Source frame number. Records of a run are in strictly increasing id order; gaps are
    /// allowed (e.g. frames not captured at all).
    pub frame_id: u64,
    /// When the camera supplied the frame.
    pub capture: Instant,
    /// When the receiver displayed this frame, if it ever did.
    pub display: Option<Instant>,
    /// Luma SSIM (linear) of the displayed picture against its source, for shown frames.
    pub ssim: Option<f64>,
    /// Luma PSNR in dB of the displayed picture against its source, for shown frames.
    pub psnr_db: Option<f64>,
    /// Bytes of the encoded frame the sender sent for this source frame (0 if none).
    pub size_bytes: u64,
    /// The scheme's quality setting for the frame sent (e.g. VP8 quantizer index), if any.
    pub quality: Option<u32>,
    /// What the sender did.
    pub choice: FrameOutcome,
}

impl FrameRecord {
    /// A frame captured at `capture` and, so far, neither sent nor shown.
    pub fn captured(frame_id: u64, capture: Instant) -> Self {
        FrameRecord {
            frame_id,
            capture,
            display: None,
            ssim: None,
            psnr_db: None,
            size_bytes: 0,
            quality: None,
            choice: FrameOutcome::Skipped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_serialises_in_snake_case() {
        assert_eq!(
            serde_json::to_string(&FrameOutcome::Better).unwrap(),
            "\"better\""
        );
        let c: FrameOutcome = serde_json::from_str("\"skipped\"").unwrap();
        assert_eq!(c, FrameOutcome::Skipped);
    }

    #[test]
    fn a_fresh_record_is_a_skip_with_nothing_shown() {
        let r = FrameRecord::captured(7, Instant::from_millis(3));
        assert_eq!(
            (r.frame_id, r.size_bytes, r.choice),
            (7, 0, FrameOutcome::Skipped)
        );
        assert!(r.display.is_none() && r.ssim.is_none());
    }
}
