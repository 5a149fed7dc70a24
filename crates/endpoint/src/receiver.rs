//! The receiver side: outputs, events and counters every scheme shares.

use std::sync::Arc;

use salsify_codec::{Image, StateHash};
use salsify_time::Instant;

/// A receiver of any scheme.
///
/// Unlike encoding, decoding is not a request: a receiver is built with its decoder and
/// decodes inside `handle_datagram`/`handle_timeout`, because what it decodes decides at once
/// what its feedback for that very datagram says (Salsify's ACK carries the state reached),
/// and decoding costs a fraction of encoding. Drivers charge decode time by delaying what
/// they do on [`ReceiverEvent::Display`] (the simulator) or simply take it (live).
pub trait ReceiverEndpoint: Send + std::fmt::Debug {
    /// The scheme's name.
    fn scheme(&self) -> &'static str;
    /// A datagram from the sender. Bad ones are counted and dropped (the error says why);
    /// no datagram can make the receiver panic or show a picture decoded from a wrong state.
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError>;
    /// Time has passed.
    fn handle_timeout(&mut self, now: Instant);
    /// The next thing to do; ends with [`ReceiverOutput::Timeout`].
    fn poll_output(&mut self, now: Instant) -> ReceiverOutput;
    /// A snapshot of the counters.
    fn stats(&self) -> ReceiverStats;
}

/// What the driver must do next for a receiver.
// A displayed picture is moved once per frame: boxing it would cost an allocation per frame
// to save a few hundred bytes of stack while polling.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum ReceiverOutput<P = Image> {
    /// Send this datagram (feedback) to the sender.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(ReceiverEvent<P>),
    /// Nothing more until then (or the next datagram).
    Timeout(Instant),
}

/// A decoded frame to show now. `P` is what decoding shows: an [`Image`] for every scheme a
/// driver runs; a state machine tested on a fake codec shows its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Displayed<P = Image> {
    /// Frame number on the wire.
    pub frame: u32,
    /// When it became showable.
    pub at: Instant,
    /// The picture, at the size it was coded (a resolution ladder may make it smaller than
    /// the source; scorers scale it up).
    pub picture: P,
    /// Encoded bytes (the frame as the scheme sent it: for Salsify, with its state header).
    pub bytes: usize,
    /// The coded frame as a plain VP8 decoder takes it (for Salsify, without its state
    /// header), shared so handing it on costs no copy. It is here so a driver can write the
    /// received stream to an IVF file that plays in ffplay or vpxdec: the frames shown, in
    /// the order shown. A resolution ladder codes keyframes at other sizes mid-stream, which
    /// VP8 decoders follow.
    pub coded: Arc<[u8]>,
    /// An intra frame.
    pub keyframe: bool,
    /// When its first datagram left the sender (sender's clock), where the wire says.
    pub first_sent_at: Option<Instant>,
    /// Functional codec: (source, target) state hashes.
    pub states: Option<(StateHash, StateHash)>,
}

/// Things a receiver did.
#[allow(clippy::large_enum_variant)] // see ReceiverOutput
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReceiverEvent<P = Image> {
    /// Show this frame.
    Display(Displayed<P>),
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

/// Counters every receiver keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams rejected (malformed, foreign, stale, duplicate, unexpected).
    pub bad_datagrams: u64,
    /// Frames shown.
    pub frames_displayed: u64,
    /// Frames given up on.
    pub frames_lost: u64,
    /// Frames that failed to decode.
    pub decode_failures: u64,
    /// Feedback datagrams sent.
    pub feedback_sent: u64,
    /// Codec states held now (functional codec).
    pub states_held: usize,
    /// Most states held at once.
    pub max_states_held: usize,
}

/// Why a datagram was dropped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatagramError {
    /// It belongs to another scheme's wire protocol.
    #[error("a datagram of another scheme's protocol (first byte {first_byte:#04x})")]
    OtherProtocol {
        /// Its first byte.
        first_byte: u8,
    },
    /// The scheme's own parser or state machine refused it.
    #[error(transparent)]
    Rejected(Box<dyn std::error::Error + Send + Sync>),
}

impl DatagramError {
    /// Wraps a scheme's own error.
    pub fn rejected(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        DatagramError::Rejected(Box::new(e))
    }
}
