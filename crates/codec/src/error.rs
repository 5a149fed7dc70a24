//! Errors of the codec crate: one enum, each variant saying what was wrong.

/// Everything that can go wrong encoding, decoding, or reading and writing video files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A caller-supplied value (size, quality, buffer) is out of range.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The frame names a source state other than the one given to the decoder.
    #[error("frame needs source state {expected} but the decoder was given {given}")]
    WrongSourceState {
        /// The state the frame was encoded from.
        expected: crate::StateHash,
        /// The state passed to `decode`.
        given: crate::StateHash,
    },
    /// Decoding gave a state whose hash differs from the one the encoder reached.
    #[error("decoded state {decoded} differs from the encoder's {expected}: not bit-exact")]
    TargetMismatch {
        /// The target state the encoder recorded in the frame.
        expected: crate::StateHash,
        /// The state the decoder reached.
        decoded: crate::StateHash,
    },
    /// The compressed frame is malformed (too short, bad header, garbage).
    #[error("corrupt frame: {0}")]
    CorruptFrame(String),
    /// libvpx reported an error.
    #[error("libvpx {call}: {message}")]
    Vpx {
        /// The libvpx function that failed.
        call: &'static str,
        /// libvpx's own error text.
        message: String,
    },
    /// libaom reported an error.
    #[error("libaom {call}: {message}")]
    Aom {
        /// The libaom function or control that failed.
        call: &'static str,
        /// libaom's own error text.
        message: String,
    },
    /// A Y4M or IVF file is malformed; the message names the field or position.
    #[error("{format}: {message}")]
    Format {
        /// "Y4M" or "IVF".
        format: &'static str,
        /// What is wrong, naming the field.
        message: String,
    },
    /// Reading or writing a file or stream failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
