//! The input/output vocabulary every baseline endpoint shares (the shape of Salsify's own
//! `salsify_transport::{SenderOutput, ReceiverOutput}`): mutate with `handle_*`, then drain
//! `poll_output` until it returns `Timeout`.

use salsify_time::Instant;

use crate::rate::Bitrate;

/// What to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeJob {
    /// One frame from the conventional (CBR, hidden-state) encoder at this target rate;
    /// `keyframe` forces an intra frame.
    Cbr {
        /// The rate control's target.
        target: Bitrate,
        /// Force a keyframe.
        keyframe: bool,
    },
    /// Oracle: the finest quality whose frame is at most `bytes` long, from the state of the
    /// last frame sent (the runtime tries qualities with the functional codec). Hand back
    /// `None` if even the coarsest does not fit.
    MaxSize {
        /// The size bound.
        bytes: usize,
    },
}

/// A request to encode one camera picture; answer with the sender's `handle_encoded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeRequest {
    /// Pass back with the result.
    pub id: u64,
    /// The picture id given to `handle_frame`.
    pub picture: u64,
    /// Its capture time.
    pub captured: Instant,
    /// What to do.
    pub job: EncodeJob,
}

/// What the encoder made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedFrame {
    /// The VP8 frame.
    pub data: Vec<u8>,
    /// It is a keyframe.
    pub keyframe: bool,
    /// Its VP8 quantizer index (0..=127).
    pub quality: u8,
}

/// Why a picture was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// A newer picture arrived while the encoder was busy.
    EncoderBusy,
    /// GCC: the pacer queue was too long.
    PacerQueue,
    /// The encoder's own rate control dropped it.
    RateControl,
    /// Vidaptive: encoder paused and the picture got too old.
    Paused,
    /// Vidaptive: dropped by an encoder reset.
    Reset,
    /// Oracle: no quality fits before the deadline.
    WouldBeLate,
    /// The runtime reported the encode as failed, or the frame was too large.
    Failed,
}

/// Things a sender did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SenderEvent {
    /// A frame was committed to the pacer / wire.
    FrameSent {
        /// Frame number on the wire.
        frame: u32,
        /// Camera picture.
        picture: u64,
        /// Capture time.
        captured: Instant,
        /// When.
        at: Instant,
        /// Bytes of the encoded frame.
        bytes: usize,
        /// Its quantizer index.
        quality: u8,
        /// Keyframe.
        keyframe: bool,
    },
    /// A picture will never be sent.
    PictureDropped {
        /// Camera picture.
        picture: u64,
        /// When.
        at: Instant,
        /// Why.
        reason: DropReason,
    },
    /// The congestion controller's target changed.
    Target {
        /// When.
        at: Instant,
        /// The rate given to the encoder (GCC target, or alpha x CC-Rate).
        encoder: Bitrate,
        /// The rate the pacer runs at.
        pacing: Bitrate,
    },
}

/// What the runtime must do next for a sender.
#[derive(Debug)]
pub enum SenderOutput {
    /// Encode a picture and call `handle_encoded`.
    Encode(EncodeRequest),
    /// Send this datagram.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(SenderEvent),
    /// Nothing more until then (or the next input); `Instant::FAR_FUTURE` when idle.
    Timeout(Instant),
}

/// Counters of a baseline sender.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SenderStats {
    /// Pictures offered.
    pub pictures: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Keyframes sent.
    pub keyframes: u64,
    /// Pictures not sent.
    pub dropped: u64,
    /// Media packets sent (first transmissions).
    pub media_packets: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Padding packets.
    pub padding_packets: u64,
    /// Bytes of padding.
    pub padding_bytes: u64,
    /// Keyframe requests received.
    pub plis: u64,
    /// NACKed sequence numbers received.
    pub nacked: u64,
    /// Feedback datagrams used.
    pub feedback: u64,
    /// Datagrams that failed to parse or were of an unexpected kind.
    pub bad_datagrams: u64,
    /// Encoder pauses (Vidaptive).
    pub pauses: u64,
    /// Encoder resets (Vidaptive).
    pub resets: u64,
    /// The rate last given to the encoder.
    pub target: Bitrate,
}

/// Things a receiver did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReceiverEvent {
    /// Decode and show this frame now (frames come in order; a keyframe may jump ahead).
    /// If decoding fails, call `handle_decode_failed`.
    Frame {
        /// Frame number.
        frame: u32,
        /// When it became decodable.
        at: Instant,
        /// The VP8 frame.
        data: Vec<u8>,
        /// Keyframe.
        keyframe: bool,
    },
    /// Frames up to and including `through` will never be shown.
    FramesLost {
        /// Newest frame given up on.
        through: u32,
        /// How many.
        count: u32,
        /// When.
        at: Instant,
    },
}

/// What the runtime must do next for a receiver.
#[derive(Debug)]
pub enum ReceiverOutput {
    /// Send this datagram (feedback, NACK, PLI) to the sender.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(ReceiverEvent),
    /// Nothing more until then (or the next datagram).
    Timeout(Instant),
}

/// Counters of a baseline receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that failed to parse or were of an unexpected kind.
    pub bad_datagrams: u64,
    /// Frames handed out for decoding.
    pub frames: u64,
    /// Frames given up on.
    pub frames_lost: u64,
    /// Sequence numbers NACKed (each retry counts).
    pub nacks: u64,
    /// Keyframe requests sent.
    pub plis: u64,
    /// Feedback datagrams sent.
    pub feedback: u64,
    /// Retransmissions that filled a hole.
    pub recovered: u64,
}
