//! Why a scheme could not be configured or built, and the picture source a sender encodes.

/// The picture source a sender encodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourceInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: f64,
}

/// Why a scheme could not be configured or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemeError {
    /// No scheme has this name (the second field lists the names there are).
    #[error("unknown scheme '{0}'; one of {1}")]
    Unknown(String, String),
    /// No family reads a table of this name.
    #[error("unknown parameter table [{0}]")]
    UnknownTable(String),
    /// A parameter is out of range (the message names the field).
    #[error("invalid {scheme} parameter: {why}")]
    Invalid {
        /// The parameter table.
        scheme: &'static str,
        /// What is wrong, naming the field.
        why: String,
    },
    /// The scheme cannot run over a real network.
    #[error("the {0} reads the link's future and runs only in the simulator (salsify sim / eval)")]
    SimulationOnly(&'static str),
    /// The scheme runs only in a browser peer, never in our endpoints.
    #[error(
        "{0} runs in a browser through salsify peer (an eval live cell), not in our endpoints"
    )]
    PeerOnly(&'static str),
}

/// An [`SchemeError::Invalid`] for table `scheme`.
pub fn invalid(scheme: &'static str) -> impl Fn(&dyn std::fmt::Display) -> SchemeError {
    move |e| SchemeError::Invalid {
        scheme,
        why: e.to_string(),
    }
}
