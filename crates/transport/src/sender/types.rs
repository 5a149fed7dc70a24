//! The sender's vocabulary: what it asks the runtime for, what it reports, its counters.

use salsify_codec::{Quality, StateHash};
use salsify_time::{Duration, Instant};

/// What to encode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeJob {
    /// One encode per quality, all from the same source; return the frames in this order.
    /// Salsify asks for `[better, worse]`; the conventional-transport ablation for one.
    Qualities(Vec<Quality>),
    /// Conventional-codec ablation: one encode at the quality the runtime predicts will make a
    /// frame of at most `bytes` (`hint` is the last quality sent, a starting point). The frame
    /// is sent whatever its size. `bytes` is 0 when the skip limit forces a send: encode as
    /// small as possible.
    SizeTarget {
        /// The transport's budget when the picture arrived.
        bytes: usize,
        /// The quality of the last frame sent.
        hint: Quality,
    },
}

impl EncodeJob {
    /// How many frames the runtime must hand back.
    pub fn frames_expected(&self) -> usize {
        match self {
            EncodeJob::Qualities(q) => q.len(),
            EncodeJob::SizeTarget { .. } => 1,
        }
    }
}

/// A request to encode one camera picture.
///
/// How long it takes is the runtime's business: Salsify-1c runs the job's encodes one after
/// the other (hand the frames back after the sum of their times), Salsify-2c in parallel
/// (after the longest). The sender does not look at its clock between request and answer.
#[derive(Debug, Clone)]
pub struct EncodeRequest<S> {
    /// Pass back to [`crate::Sender::handle_encoded`].
    pub id: u64,
    /// The picture id given to [`crate::Sender::handle_frame`].
    pub picture: u64,
    /// Its capture time.
    pub captured: Instant,
    /// The state to encode from (the initial state means: make a keyframe).
    pub source: S,
    /// What to encode.
    pub job: EncodeJob,
    /// Code the picture at its size halved this many times in each dimension (the slow-link
    /// rules' resolution step, [`crate::resolution`]); 0: the source size. When it differs
    /// from the size `source` was made at, `source` is the initial state (a keyframe).
    pub halvings: u8,
}

/// Which option a sent frame was: the one vocabulary of every scheme (Salsify's `Better`,
/// `Worse`, `ForcedWorse`; `Only` for the one-encode ablations).
pub use salsify_endpoint::Choice;

/// A frame the sender committed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentFrame {
    /// Frame number on the wire.
    pub frame: u32,
    /// The camera picture it encodes.
    pub picture: u64,
    /// When that picture was captured.
    pub captured: Instant,
    /// When the sender committed to it (fragments leave through the pacer from then on).
    pub at: Instant,
    /// Its quantizer.
    pub quality: Quality,
    /// Its size in bytes.
    pub bytes: usize,
    /// Fragments it was split into.
    pub fragments: u16,
    /// Source state ([`StateHash::INITIAL`] for keyframes).
    pub source: StateHash,
    /// Target state.
    pub target: StateHash,
    /// Which option it was.
    pub choice: Choice,
    /// The budget it was chosen against, `None` before the first estimate (no limit).
    pub budget: Option<usize>,
    /// Encoded from an acknowledged state in loss-recovery mode.
    pub recovery: bool,
}

/// Things the sender did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SenderEvent {
    /// A frame was committed to the wire.
    FrameSent(SentFrame),
    /// A picture was encoded but neither option fit the budget (or, in the
    /// conventional-codec ablation, the budget was zero before encoding).
    PictureSkipped {
        /// Picture id.
        picture: u64,
        /// Capture time.
        captured: Instant,
        /// When.
        at: Instant,
        /// The budget that was too small.
        budget: Option<usize>,
    },
    /// A picture never got encoded: a newer one arrived while the encoder was busy, or the
    /// runtime reported the encode as failed.
    PictureDropped {
        /// Picture id.
        picture: u64,
        /// When.
        at: Instant,
    },
    /// An ACK reported loss; the sender encodes from acknowledged states until `until`.
    RecoveryStarted {
        /// When.
        at: Instant,
        /// End of recovery mode unless more loss is reported.
        until: Instant,
    },
}

/// What the runtime must do next.
#[derive(Debug)]
pub enum SenderOutput<S> {
    /// Encode a picture and call [`crate::Sender::handle_encoded`] with the frames.
    Encode(EncodeRequest<S>),
    /// Send this datagram to the receiver.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(SenderEvent),
    /// Nothing more until this time (or the next input). [`Instant::FAR_FUTURE`] if idle.
    Timeout(Instant),
}

/// A snapshot of the sender's counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderStats {
    /// Camera pictures offered.
    pub pictures: u64,
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

impl SenderStats {
    /// All frames sent.
    pub fn frames_sent(&self) -> u64 {
        self.sent_better + self.sent_worse + self.sent_forced + self.sent_only
    }
}
