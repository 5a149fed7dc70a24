//! The crate's errors: one `thiserror` enum per operation, each naming what was wrong.

/// A configuration value out of range; `field` is the name in experiment files (with its
/// table, e.g. `copa.delta`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The field's value cannot be used.
    #[error("{field}: {why}")]
    Invalid {
        /// The field, as experiment files name it.
        field: &'static str,
        /// What is wrong with its value.
        why: String,
    },
}

impl ConfigError {
    /// `field` is invalid because `why`.
    pub(crate) fn invalid(field: &'static str, why: impl std::fmt::Display) -> Self {
        ConfigError::Invalid {
            field,
            why: why.to_string(),
        }
    }

    /// The field named.
    pub fn field(&self) -> &'static str {
        match self {
            ConfigError::Invalid { field, .. } => field,
        }
    }
}

/// Why an endpoint refused a datagram (it is counted and dropped; the session goes on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// It does not parse.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A well-formed datagram of a kind this endpoint does not take (e.g. media at a sender).
    #[error("a {kind} datagram is not for this endpoint")]
    Unexpected {
        /// Its kind.
        kind: &'static str,
    },
    /// A fragment whose count disagrees with the other fragments of its frame.
    #[error("frame {frame}: fragment count {got}, earlier fragments said {expected}")]
    FragmentCount {
        /// The frame.
        frame: u32,
        /// The count of its first fragment.
        expected: u16,
        /// This fragment's count.
        got: u16,
    },
    /// A sequence or frame number outside the receiver's window
    /// ([`crate::ReceiverConfig::sequence_window`], `frame_window`), or a fragment the
    /// reassembly limits have no room for: dropped before anything was stored.
    #[error("{what} {value} is outside the receiver's window")]
    OutOfWindow {
        /// Which number: "transport sequence", "media sequence", "frame", "reassembly".
        what: &'static str,
        /// Its value.
        value: u32,
    },
}

/// Why a receiver could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiverBuildError {
    /// Its configuration is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The decoder could not be opened at the initial picture size.
    #[error("decoder for {width}x{height} pictures: {source}")]
    Decoder {
        /// Picture width.
        width: u32,
        /// Picture height.
        height: u32,
        /// What the codec said.
        source: salsify_codec::CodecError,
    },
}

/// The endpoint-level error for a datagram an endpoint refused: another protocol's datagram
/// (first byte not ours) is told apart from a malformed or unexpected baseline one.
pub(crate) fn datagram_error(e: PacketError) -> salsify_endpoint::DatagramError {
    match e {
        PacketError::Wire(WireError::Tag(first_byte)) => {
            salsify_endpoint::DatagramError::OtherProtocol { first_byte }
        }
        e => salsify_endpoint::DatagramError::rejected(e),
    }
}

/// Why a datagram could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Shorter than its kind needs.
    #[error("{kind} datagram of {len} bytes is too short (needs {need})")]
    Truncated {
        /// Which kind.
        kind: &'static str,
        /// Its length.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// The first byte is not [`TAG`](crate::wire::TAG): not a baseline datagram.
    #[error("not a baseline datagram (first byte {0:#04x})")]
    Tag(u8),
    /// An unknown kind.
    #[error("unknown datagram kind {0}")]
    Kind(u8),
    /// Fragment index not below the count, or a count out of range.
    #[error("fragment {index} of {count}")]
    Fragment {
        /// Index.
        index: u16,
        /// Count.
        count: u16,
    },
    /// Unknown flag bits.
    #[error("reserved flag bits set: {0:#04x}")]
    Reserved(u8),
    /// A media header's scheme byte names no scheme.
    #[error("unknown scheme {0} in a media header")]
    Scheme(u8),
    /// A list longer than the format allows.
    #[error("{0} entries is more than the format allows")]
    TooManyEntries(usize),
    /// Bytes after the last field.
    #[error("{0} trailing bytes")]
    Trailing(usize),
}
