//! The Salsify sender's own counters. What it asks for and reports is the endpoint's one
//! vocabulary ([`salsify_endpoint::EncodeRequest`], [`salsify_endpoint::SenderEvent`], ...);
//! these counters say more than the [`salsify_endpoint::SenderStats`] every scheme keeps.

use salsify_codec::Quality;
use salsify_time::Duration;

/// A snapshot of the Salsify sender's counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SalsifySenderStats {
    /// Camera pictures offered.
    pub pictures: u64,
    /// Keyframes sent (frames encoded from the initial state).
    pub keyframes: u64,
    /// Encode requests issued.
    pub encode_requests: u64,
    /// Frames sent, by choice.
    pub sent_better: u64,
    /// Frames sent as the worse option because only it fit.
    pub sent_worse: u64,
    /// Frames sent as the worse option after too many skips.
    pub sent_forced: u64,
    /// Frames sent in one-encode modes.
    pub sent_only: u64,
    /// Pictures skipped for lack of budget.
    pub skipped: u64,
    /// Pictures dropped (encoder busy, failed encode, or a frame with too many fragments).
    pub dropped: u64,
    /// Fragments handed to the wire.
    pub fragments_sent: u64,
    /// Valid ACKs received.
    pub acks: u64,
    /// ACKs older than one already used (counted, used only for the in-flight count).
    pub stale_acks: u64,
    /// Datagrams dropped as malformed, foreign or unexpected.
    pub rejected_datagrams: u64,
    /// Times loss-recovery mode was entered.
    pub recoveries: u64,
    /// Pictures encoded from an acknowledged state because the ACKs had gone silent (an outage).
    pub outage_frames: u64,
    /// States held now.
    pub states_held: usize,
    /// Most states held at once.
    pub max_states_held: usize,
    /// The receiver's latest mean inter-arrival time.
    pub mean_interarrival: Option<Duration>,
    /// Fragments sent but beyond the receiver's newest ACKed one (N).
    pub fragments_in_flight: u64,
    /// Quality of the last frame sent.
    pub quality: Quality,
    /// The finest quantizer the encode-time rule allows now (`None`: no limit).
    pub quality_floor: Option<Quality>,
    /// Halvings of the source size the next picture is coded at (the resolution step).
    pub halvings: u8,
    /// Resolution steps taken (down and up).
    pub resolution_changes: u64,
}

impl SalsifySenderStats {
    /// All frames sent.
    pub fn frames_sent(&self) -> u64 {
        self.sent_better + self.sent_worse + self.sent_forced + self.sent_only
    }
}
