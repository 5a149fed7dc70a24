//! A scheme by name, configured: the [`Scheme`] its family built, behind one handle drivers
//! pass around.

use std::sync::Arc;

use salsify_endpoint::{ReceiverEndpoint, SenderEndpoint, WireFamily};

use crate::family::{Scheme, Simulated};
use crate::{registry, SchemeParams};

/// A scheme, fully configured (see [`SchemeConfig::named`]).
#[derive(Clone)]
pub struct SchemeConfig(Arc<dyn Scheme>);

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
    /// No scheme has this name.
    #[error("unknown scheme '{0}'; one of {list}", list = registry::scheme_names().join(", "))]
    Unknown(String),
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
    #[error("{0} reads the link's future and runs only in the simulator (salsify sim / eval)")]
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

impl SchemeConfig {
    /// A handle on `scheme` (a family's [`crate::Family::configure`] returns one).
    pub fn new(scheme: impl Scheme + 'static) -> SchemeConfig {
        SchemeConfig(Arc::new(scheme))
    }

    /// The scheme called `name`, with `params` for its family.
    pub fn named(name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        params.validate()?;
        let family = registry::family_of(name).ok_or_else(|| SchemeError::Unknown(name.into()))?;
        family.configure(name, params)
    }

    /// The configured scheme.
    pub fn scheme(&self) -> &dyn Scheme {
        &*self.0
    }

    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// False for a scheme that runs only in the simulator.
    pub fn runs_live(&self) -> bool {
        self.0.runs_live()
    }

    /// The wire protocol its datagrams use.
    pub fn wire_family(&self) -> WireFamily {
        self.0.wire_family()
    }

    /// The sender, for a session numbered `connection_id` (Salsify tells sessions apart by it).
    pub fn build_sender(
        &self,
        source: &SourceInfo,
        connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        self.0.build_sender(source, connection_id)
    }

    /// The sender the simulator runs.
    pub fn build_simulated_sender(
        &self,
        source: &SourceInfo,
        sim: &Simulated<'_>,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        self.0.build_simulated_sender(source, sim)
    }

    /// The receiver.
    pub fn build_receiver(
        &self,
        source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        self.0.build_receiver(source)
    }

    /// Whether this scheme's receiver serves a sender of scheme `name`.
    pub fn serves(&self, name: &str) -> bool {
        self.0.serves(name)
    }
}

impl std::fmt::Debug for SchemeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Two configurations are equal when they print the same (every scheme derives `Debug`
/// over all of its parameters).
impl PartialEq for SchemeConfig {
    fn eq(&self, other: &SchemeConfig) -> bool {
        format!("{:?}", self.0) == format!("{:?}", other.0)
    }
}
