//! What a run produces: one direction's results ([`SimOutput`]), a call's two
//! ([`TwoWayOutput`]).

use salsify_endpoint::{Bitrate, Diagnostic, ReceiverStats, SenderStats};
use salsify_metrics::{FrameRecord, Summary};
use salsify_netem::{LinkEvent, LinkStats};
use salsify_time::Instant;

use crate::{AudioOutput, FeedbackDelay};

/// What a run produced.
pub struct SimOutput {
    /// One record per camera picture.
    pub records: Vec<FrameRecord>,
    /// The paper's summary of the run.
    pub summary: Summary,
    /// The sender's counters at the end.
    pub sender: SenderStats,
    /// The receiver's counters at the end.
    pub receiver: ReceiverStats,
    /// The sender's own gauges at the end.
    pub diagnostics: Vec<Diagnostic>,
    /// Every change of a rate-based scheme's targets: (time, encoder, pacing).
    pub rates: Vec<(Instant, Bitrate, Bitrate)>,
    /// Pictures shown at each coded size: (width, height, frames), in order of appearance.
    pub shown_sizes: Vec<(u32, u32, u64)>,
    /// Its media link's counters at the end (of a call, the other side's feedback included).
    pub data_link: LinkStats,
    /// Every event of its media link (of a call, the other side's feedback on it too), if
    /// [`crate::SimConfig::record_packets`] was set.
    pub packet_events: Vec<LinkEvent>,
    /// The audio's log and figures, if the run carried audio.
    pub audio: Option<AudioOutput>,
    /// How long this direction's feedback took to reach its sender.
    pub feedback: FeedbackDelay,
}

/// The folder, in a two-way run's, of side B's video direction's files (side A's are where
/// a one-way run's are).
pub const B_TO_A_DIR: &str = "b-to-a";

/// What a two-way call produced: each direction's results, as a one-way run's.
pub struct TwoWayOutput {
    /// Side A's video to side B (over link 0, `PREFIX.down`).
    pub a_to_b: SimOutput,
    /// Side B's video to side A (over link 1, `PREFIX.up`).
    pub b_to_a: SimOutput,
}
