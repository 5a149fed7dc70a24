//! What the receiver played, frame by frame: the log the metrics read.

use salsify_time::Instant;

/// How a played frame was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlayedKind {
    /// From its own packet, in time.
    Packet,
    /// From the next packet's in-band FEC (its own was lost or late).
    Fec,
    /// No packet in time: concealed, or the silence DTX left (told apart afterwards from
    /// the packets' sequence numbers, see [`crate::metrics`]).
    Missing,
    /// A frame inserted to lengthen the playout delay (the stream pauses for it).
    Stretch,
}

/// One frame the receiver played.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayedFrame {
    /// When it started playing (receiver's clock).
    pub at: Instant,
    /// The stream frame it plays (`None` for a stretch frame).
    pub frame: Option<u64>,
    /// When what it plays was captured (a stretch frame: the capture time the stream
    /// resumes at).
    pub captured: Instant,
    /// How it was made.
    pub kind: PlayedKind,
}

/// A packet the receiver got: which frame, which sequence number, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The frame it carries.
    pub frame: u64,
    /// Its sequence number.
    pub seq: u32,
    /// When it arrived.
    pub at: Instant,
}
