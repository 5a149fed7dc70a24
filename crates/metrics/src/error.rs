//! The one error of the metrics: why a measure could not be computed.

/// Why a metric could not be computed. Inputs come from files and simulator logs, so a bad
/// one is an error with a reason, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// A plane's slice is too short for its size and stride, or the stride is below the width.
    #[error("bad plane layout: {0}")]
    BadPlane(String),
    /// The two pictures compared differ in size.
    #[error("size mismatch: {a_width}x{a_height} vs {b_width}x{b_height}")]
    SizeMismatch {
        /// Width of the first plane.
        a_width: usize,
        /// Height of the first plane.
        a_height: usize,
        /// Width of the second plane.
        b_width: usize,
        /// Height of the second plane.
        b_height: usize,
    },
    /// SSIM needs at least one 8x8 window, i.e. a plane of 8x8 samples or more.
    #[error("plane of {width}x{height} is too small for SSIM (needs at least 8x8)")]
    TooSmall {
        /// Plane width.
        width: usize,
        /// Plane height.
        height: usize,
    },
    /// A shown frame names a frame id that the capture list does not have.
    #[error("shown frame {frame} is not among the {frames} captured frames")]
    UnknownFrame {
        /// The offending frame index.
        frame: usize,
        /// How many frames were captured.
        frames: usize,
    },
    /// A frame would be displayed before it was captured: the log is inconsistent.
    #[error("frame {frame} gets a display time before its capture time")]
    DisplayBeforeCapture {
        /// The offending frame index.
        frame: usize,
    },
    /// Per-frame records must be in strictly increasing frame-id order.
    #[error("frame records out of order at frame id {frame_id}")]
    RecordsOutOfOrder {
        /// The first id not greater than its predecessor.
        frame_id: u64,
    },
    /// A run description that cannot be summarised (e.g. zero duration).
    #[error("invalid run: {0}")]
    InvalidRun(String),
}
