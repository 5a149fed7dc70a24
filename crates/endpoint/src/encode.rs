//! Encoding as a request: what a sender asks the driver to encode, and what comes back.

use salsify_codec::{CbrFrame, EncodedFrame, Quality, State};
use salsify_time::{Bitrate, Instant};

/// A request to encode one camera picture; answer with [`crate::SenderEndpoint::handle_encoded`].
///
/// `S` is the codec state a functional job encodes from: libvpx's [`State`] for every
/// scheme a driver runs; a state machine tested on a fake codec asks with its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeRequest<S = State> {
    /// Pass back with the result.
    pub id: u64,
    /// The picture id given to `handle_picture`.
    pub picture: u64,
    /// Its capture time.
    pub captured: Instant,
    /// What to do.
    pub job: EncodeJob<S>,
}

/// What to encode, and with which codec. Functional jobs use the explicit-state codec
/// (`salsify_codec::Encoder`): the source state travels with the job. The CBR job uses
/// libvpx's own rate control, whose state is hidden in the driver's encoder instance.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeJob<S = State> {
    /// One frame per quality, all from `source`; hand them back in this order. `parallel`:
    /// the encodes may run at once on separate cores (Salsify-2c) rather than one after the
    /// other (Salsify-1c); the simulator charges time accordingly.
    Qualities {
        /// The state to encode from (the initial state: a keyframe).
        source: S,
        /// The quantizers, one frame each.
        qualities: Vec<Quality>,
        /// The encodes run in parallel.
        parallel: bool,
        /// The picture is coded at its size halved this many times in each dimension
        /// (`salsify_codec::halved_size`); 0: the source size. A source state of another
        /// size makes the frames keyframes.
        halvings: u8,
    },
    /// One frame at the quality predicted, before encoding, to make a frame of at most
    /// `bytes` (the paper's conventional-codec ablation: binary search on a 1/16-area copy).
    /// `bytes` 0: as small as possible. The prediction's work is charged as encode time.
    SizeTarget {
        /// The state to encode from.
        source: S,
        /// The size to aim for.
        bytes: usize,
        /// Where the search starts (the last quality sent).
        hint: Quality,
    },
    /// The finest quality whose frame is at most `bytes`, from `source`, searched from
    /// `start`; no frame if even the coarsest is larger. For the oracle, which knows the
    /// future: the search itself is charged as one encode.
    FinestFitting {
        /// The state to encode from.
        source: S,
        /// The bound.
        bytes: usize,
        /// Where the search starts.
        start: Quality,
        /// The picture is coded at its size halved this many times in each dimension, as
        /// in [`EncodeJob::Qualities`]; a source state of another size makes a keyframe.
        halvings: u8,
    },
    /// One frame from the hidden-state CBR encoder (libvpx's rate control, as WebRTC uses it).
    Cbr(CbrJob),
}

/// The kinds of [`EncodeJob`]: what a scheme declares it asks for
/// (`salsify_schemes::Scheme::encode_jobs`), so a driver opens only the encoders those need
/// and refuses a job of a kind the scheme did not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EncodeKind {
    /// [`EncodeJob::Qualities`].
    Qualities,
    /// [`EncodeJob::SizeTarget`].
    SizeTarget,
    /// [`EncodeJob::FinestFitting`].
    FinestFitting,
    /// [`EncodeJob::Cbr`].
    Cbr,
}

impl EncodeKind {
    /// Jobs of this kind encode with the functional (explicit-state) codec.
    pub fn is_functional(self) -> bool {
        !matches!(self, EncodeKind::Cbr)
    }
}

impl<S> EncodeJob<S> {
    /// Its kind.
    pub fn kind(&self) -> EncodeKind {
        match self {
            EncodeJob::Qualities { .. } => EncodeKind::Qualities,
            EncodeJob::SizeTarget { .. } => EncodeKind::SizeTarget,
            EncodeJob::FinestFitting { .. } => EncodeKind::FinestFitting,
            EncodeJob::Cbr(_) => EncodeKind::Cbr,
        }
    }

    /// The state a functional job encodes from (`None` for the CBR encoder's hidden state).
    pub fn source(&self) -> Option<&S> {
        match self {
            EncodeJob::Qualities { source, .. }
            | EncodeJob::SizeTarget { source, .. }
            | EncodeJob::FinestFitting { source, .. } => Some(source),
            EncodeJob::Cbr(_) => None,
        }
    }

    /// The halvings of the source size the picture is coded at (0: the source size; the
    /// jobs that take no size code it at the source size).
    pub fn halvings(&self) -> u8 {
        match self {
            EncodeJob::Qualities { halvings, .. } | EncodeJob::FinestFitting { halvings, .. } => {
                *halvings
            }
            EncodeJob::SizeTarget { .. } | EncodeJob::Cbr(_) => 0,
        }
    }
}

/// A CBR encode: the picture scaled to `width` x `height` (the driver re-opens its encoder
/// when the size changes, so that frame is a keyframe) at `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbrJob {
    /// The rate control's target; the driver passes every change on to libvpx.
    pub target: Bitrate,
    /// Force a keyframe.
    pub keyframe: bool,
    /// Encoded picture width (the source's, or a rung of a resolution ladder).
    pub width: u32,
    /// Encoded picture height.
    pub height: u32,
    /// The encoder's settings for this stream.
    pub settings: CbrSettings,
}

/// The per-scheme settings of the CBR encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbrSettings {
    /// libvpx's frame dropper threshold (0: never drop).
    pub dropframe_thresh: u32,
    /// Most frame intervals libvpx is told passed between two pictures (0: the real gap).
    pub max_gap_frames: u32,
}

/// What an encode produced.
#[derive(Debug)]
#[non_exhaustive]
pub enum EncodeOutcome {
    /// Functional frames in the job's order (`FinestFitting`: none or one).
    Functional(Vec<EncodedFrame>),
    /// The CBR encoder's frame; `None` when its rate control dropped the picture.
    Cbr(Option<CbrFrame>),
}

/// The driver could not carry out an encode (the picture is dropped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("encode failed: {0}")]
pub struct EncodeFailed(pub String);
