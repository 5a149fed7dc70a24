//! Errors the sender and receiver report to their caller. None of them stops a session.

use salsify_codec::StateHash;

use crate::wire::WireError;

/// Why a datagram was dropped. The endpoint counts it in its stats and carries on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatagramRejected {
    /// It did not parse.
    #[error("malformed datagram: {0}")]
    Malformed(WireError),
    /// It belongs to another session.
    #[error("datagram for connection {0}")]
    ForeignConnection(u16),
    /// A well-formed message this end does not take (an ACK at the receiver, data at the sender).
    #[error("message type not handled by this endpoint")]
    UnexpectedMessage,
    /// A fragment of a frame already displayed or given up on.
    #[error("fragment of frame {0}, which is already done")]
    Stale(u32),
    /// A fragment already received.
    #[error("duplicate fragment {index} of frame {frame}")]
    Duplicate {
        /// Frame number.
        frame: u32,
        /// Fragment index.
        index: u16,
    },
    /// A fragment whose count or state hashes disagree with earlier fragments of its frame.
    #[error("fragment disagrees with earlier fragments of frame {0}")]
    Inconsistent(u32),
    /// A fragment of a frame older than every frame being reassembled while the
    /// reassembly buffer is full.
    #[error("reassembly buffer full; fragment of old frame {0} dropped")]
    BufferFull(u32),
}

// By hand rather than `#[from]`, which would also make it the error's source: the message
// already says it, and an error chain would print it twice.
impl From<WireError> for DatagramRejected {
    fn from(e: WireError) -> Self {
        DatagramRejected::Malformed(e)
    }
}

/// A misuse of the sender's encode interface by the runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SenderError {
    /// No encode with this id is outstanding.
    #[error("no outstanding encode request {0}")]
    UnknownRequest(u64),
    /// The number of frames returned differs from the number of encodes asked for.
    #[error("asked for {expected} encodes, got {got}")]
    WrongFrameCount {
        /// Encodes requested.
        expected: usize,
        /// Frames returned.
        got: usize,
    },
    /// A returned frame decodes from another state than the one requested.
    #[error("frame decodes from {got}, requested source was {expected}")]
    WrongSource {
        /// The requested source.
        expected: StateHash,
        /// The frame's source.
        got: StateHash,
    },
}

/// A configuration value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `field` is invalid for the stated reason.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The offending field, named as in experiment files (`delay_target_ms`,
        /// `pacing.min_gap_ms`), so the message points at the line to fix.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// `Err(ConfigError::Invalid)` naming `field` (as written in experiment files) and why.
pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        field,
        reason: reason.into(),
    })
}
