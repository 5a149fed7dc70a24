//! The sender side: inputs, outputs, events and counters every scheme shares.

use salsify_codec::{Quality, StateHash};
use salsify_time::{Bitrate, Instant};

use crate::encode::{EncodeFailed, EncodeOutcome, EncodeRequest};
use crate::receiver::DatagramError;

/// A sender of any scheme, driven by the simulator or the real-time runtime.
///
/// Inputs are the `handle_*` calls, each given the current time; then drain
/// [`SenderEndpoint::poll_output`] until it returns [`SenderOutput::Timeout`] and call again
/// at that time or on the next input. No call may panic on any input.
pub trait SenderEndpoint: Send + std::fmt::Debug {
    /// The scheme's name (as in experiment files).
    fn scheme(&self) -> &'static str;
    /// The camera supplied picture `picture` (the driver keeps the image under that id),
    /// captured at `captured`.
    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant);
    /// The result of encode request `id`, at the time the encode finished.
    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError>;
    /// A datagram from the receiver. Bad ones are counted and dropped (the error says why).
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError>;
    /// Time has passed (a deadline returned by `poll_output` was reached).
    fn handle_timeout(&mut self, now: Instant);
    /// The path carries datagrams of at most `bytes` (what this endpoint transmits, before
    /// any sealing the driver adds): every datagram transmitted from now on must fit, and a
    /// scheme that sizes frames in fragments counts fragments of the size it now uses.
    /// Drivers call it when path MTU discovery raises or lowers the size; a call that leaves
    /// the size in use as it is changes nothing, and a sender never called keeps its
    /// configured size.
    ///
    /// The fragment payload is [`fragment_payload`]`(configured, bytes, header)`: the
    /// configured payload stays the ceiling (a larger path does not make fragments larger),
    /// and below a header and one byte of media the scheme sends its smallest datagrams,
    /// which cannot fit. Datagrams already cut for a larger size and still waiting cannot be
    /// cut again (a frame's fragment count is in every fragment): the built-in schemes drop
    /// every waiting fragment of a frame that has one over the new size, so nothing larger
    /// goes out, and recover from that frame as from a loss (Salsify encodes from an
    /// acknowledged state, the baselines send a keyframe).
    fn set_max_datagram(&mut self, now: Instant, bytes: usize);
    /// The driver sent `bytes` of the call's audio at `now` (as the scheme's own datagrams
    /// are counted: before any sealing) on the same path as this sender's datagrams. The
    /// audio is never held back for the video: a scheme's controller makes room for it, as
    /// one session with one budget. Salsify counts what audio may still be in flight before
    /// sizing a frame; the rate-based baselines subtract the audio's rate from their target,
    /// as libwebrtc allocates the estimate to audio first. [`crate::AudioMeter`] keeps the
    /// count. A run without audio never calls it.
    fn handle_audio_sent(&mut self, now: Instant, bytes: usize);
    /// The next thing to do; ends with [`SenderOutput::Timeout`].
    fn poll_output(&mut self, now: Instant) -> SenderOutput;
    /// A snapshot of the counters.
    fn stats(&self) -> SenderStats;
    /// The scheme's own gauges (a congestion window, a rate, alpha ...), for logs.
    fn diagnostics(&self) -> Vec<Diagnostic> {
        Vec::new()
    }
}

/// The fragment payload a scheme cuts frames into when the path carries datagrams of at most
/// `max_datagram` bytes and its datagrams carry `header` bytes before the payload:
/// `min(configured, max_datagram - header)`, at least one byte.
///
/// The configured payload stays the ceiling (a path that carries more does not make fragments
/// larger than configured). The floor is the smallest datagram that carries media at all:
/// below `header + 1` no datagram of the scheme fits, and its smallest (`header + 1` bytes)
/// goes anyway, so a driver with a limit that small sees datagrams over it rather than a
/// scheme that sends nothing.
pub fn fragment_payload(configured: usize, max_datagram: usize, header: usize) -> usize {
    max_datagram
        .saturating_sub(header)
        .clamp(1, configured.max(1))
}

/// What the driver must do next for a sender (`S`: the codec state of encode requests, as
/// in [`EncodeRequest`]).
#[derive(Debug)]
pub enum SenderOutput<S = salsify_codec::State> {
    /// Encode a picture, then call `handle_encoded`.
    Encode(EncodeRequest<S>),
    /// Send this datagram to the receiver.
    Transmit(Vec<u8>),
    /// Something happened.
    Event(SenderEvent),
    /// Nothing more until this time (or the next input); `Instant::FAR_FUTURE` when idle.
    Timeout(Instant),
}

/// Which option a sent frame was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Salsify: the better (finer) of two options fit the budget.
    Better,
    /// Salsify: only the worse option fit.
    Worse,
    /// Salsify: neither fit, but feedback had to flow: the worse one was sent anyway.
    ForcedWorse,
    /// A scheme with one encode per picture: its only frame.
    Only,
}

/// A frame a sender committed to the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentFrame {
    /// Frame number on the wire.
    pub frame: u32,
    /// The camera picture it encodes.
    pub picture: u64,
    /// When that picture was captured.
    pub captured: Instant,
    /// When the sender committed to it.
    pub at: Instant,
    /// Its size in bytes.
    pub bytes: usize,
    /// Datagrams it was split into.
    pub fragments: u16,
    /// Its VP8 quantizer.
    pub quality: Quality,
    /// An intra frame.
    pub keyframe: bool,
    /// Which option it was.
    pub choice: Choice,
    /// Salsify: the budget it was chosen against (`None`: no limit or not a Salsify frame).
    pub budget: Option<usize>,
    /// Salsify: encoded from an acknowledged state to recover from loss.
    pub recovery: bool,
    /// Functional codec: (source, target) state hashes.
    pub states: Option<(StateHash, StateHash)>,
}

/// Why a picture was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// A newer picture arrived while the encoder was busy.
    EncoderBusy,
    /// The pacer's queue was too long to encode (conventional).
    PacerQueue,
    /// The encoder's own rate control dropped it.
    RateControl,
    /// The encoder was paused and the picture got too old (Vidaptive).
    Paused,
    /// Dropped by an encoder reset (Vidaptive).
    Reset,
    /// No quality arrives before the deadline (oracle).
    WouldBeLate,
    /// The driver reported the encode as failed, or the frame was unusable or too large.
    Failed,
}

/// Things a sender did, for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SenderEvent {
    /// A frame was committed to the wire.
    FrameSent(SentFrame),
    /// A picture was encoded, but no option fit the budget (Salsify).
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
    /// A picture will never be sent.
    PictureDropped {
        /// Picture id.
        picture: u64,
        /// When.
        at: Instant,
        /// Why.
        reason: DropReason,
    },
    /// Loss was reported; the sender encodes from acknowledged states until `until`.
    RecoveryStarted {
        /// When.
        at: Instant,
        /// End of recovery unless more loss is reported.
        until: Instant,
    },
    /// A rate-based scheme's targets changed.
    Target {
        /// When.
        at: Instant,
        /// The rate given to the encoder.
        encoder: Bitrate,
        /// The rate the pacer runs at.
        pacing: Bitrate,
    },
}

/// Counters every sender keeps (a scheme leaves at zero what it has no notion of).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SenderStats {
    /// Camera pictures offered.
    pub pictures: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Keyframes among them.
    pub keyframes: u64,
    /// Salsify: frames sent as the better option.
    pub sent_better: u64,
    /// Salsify: frames sent as the worse option (forced ones included).
    pub sent_worse: u64,
    /// Pictures encoded but skipped for lack of budget.
    pub skipped: u64,
    /// Pictures dropped (encoder busy, rate control, pacer, failures).
    pub dropped: u64,
    /// Datagrams sent (media, retransmissions, padding).
    pub datagrams_sent: u64,
    /// Feedback datagrams used.
    pub feedback: u64,
    /// Feedback datagrams accepted but older than feedback already used (reordered, or from a
    /// receiver that restarted and counts from zero again): not used for control. A driver
    /// watching whether its receiver is still there counts these as unanswered.
    pub stale_feedback: u64,
    /// Datagrams rejected as malformed, foreign or unexpected.
    pub bad_datagrams: u64,
    /// Times loss recovery started (Salsify recovery mode, conventional keyframe requests).
    pub recoveries: u64,
    /// Codec states held now (functional codec).
    pub states_held: usize,
    /// Most states held at once.
    pub max_states_held: usize,
    /// The rate last given to the encoder (rate-based schemes).
    pub target: Option<Bitrate>,
    /// Quantizer of the last frame sent.
    pub quality: Option<Quality>,
}

/// One named gauge of a scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diagnostic {
    /// What it measures, with its unit (`cwnd_packets`, `srtt_ms`, ...).
    pub name: &'static str,
    /// Its value now.
    pub value: f64,
}

/// An input the sender cannot use (a driver bug, or a result for a request it gave up on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// No encode with this id is under way.
    #[error("no encode request {0} is under way")]
    UnknownRequest(u64),
    /// The result is not what the job asked for (wrong codec, count or source state).
    #[error("encode result does not match request {id}: {why}")]
    WrongResult {
        /// The request.
        id: u64,
        /// What was wrong.
        why: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_follows_the_path_below_the_configured_ceiling_and_above_one_byte() {
        // Salsify: 1400 configured, a 42-byte header.
        assert_eq!(fragment_payload(1400, 1200, 42), 1158);
        assert_eq!(fragment_payload(1400, 1442, 42), 1400);
        // A path that carries more keeps the configured size.
        assert_eq!(fragment_payload(1400, 9000, 42), 1400);
        assert_eq!(fragment_payload(1400, usize::MAX, 42), 1400);
        // The floor: one byte of media behind the header, even when that does not fit.
        assert_eq!(fragment_payload(1400, 43, 42), 1);
        assert_eq!(fragment_payload(1400, 42, 42), 1);
        assert_eq!(fragment_payload(1400, 0, 42), 1);
        assert_eq!(fragment_payload(0, 1200, 42), 1);
    }
}
