//! What a scheme family is: the trait a family implements ([`Family`]), the configured scheme
//! it builds ([`Scheme`]) and the facts drivers ask of a scheme by name ([`SchemeInfo`]).
//!
//! A driver (the simulator, the runtime, the evaluation, the command) never matches on a
//! scheme's name: it asks [`crate::registry`] for the family that owns the name, and the
//! family answers.

use std::fmt::Debug;
use std::sync::Arc;

use salsify_baselines::WireId;
use salsify_codec::FunctionalCodec;
use salsify_endpoint::{EncodeKind, ReceiverEndpoint, SenderEndpoint};
use salsify_time::Duration;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{SchemeError, SourceInfo};
use crate::params::SchemeParams;
use crate::sweep::Sweep;
use crate::LinkForecast;

/// A family of schemes: its names and parameter tables, and how a name becomes a configured
/// [`Scheme`]. A built-in family is one line in `crates/schemes/src/families/mod.rs`; a crate
/// of its own adds one to a [`crate::Registry`] with [`crate::Registry::with`].
pub trait Family: Sync {
    /// The family's id (used in messages and docs).
    fn id(&self) -> &'static str;
    /// Its schemes, in the order lists and legends show them.
    fn schemes(&self) -> &'static [SchemeInfo];
    /// Its parameter tables (`[salsify]` in an experiment file is the table `salsify`).
    fn tables(&self) -> &'static [TableInfo] {
        &[]
    }
    /// The scheme called `name` (one of [`Family::schemes`]), with `params` (already
    /// checked against every table's type and range).
    fn configure(&self, name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError>;
    /// The ids its schemes claim on the baselines' shared wire (byte 19 of a media header,
    /// [`WireId`]): a registry refuses a family claiming one another family holds. A family
    /// with a wire of its own claims none (the default).
    fn wire_ids(&self) -> Vec<WireId> {
        Vec::new()
    }
    /// The scheme (of this family) that sent `datagram`, if its wire says so: a receiver
    /// learns the scheme it serves from the first datagram.
    fn scheme_of_datagram(&self, datagram: &[u8]) -> Option<&'static str> {
        let _ = datagram;
        None
    }
    /// Whether `datagram` is one a sender of this family sends (media, not feedback): the
    /// link relay learns its sender from such a datagram.
    fn is_sender_datagram(&self, datagram: &[u8]) -> bool {
        let _ = datagram;
        false
    }
    /// The scheme whose receiver serves a sender of scheme `name` (default: itself).
    fn receiver_scheme(&self, name: &str) -> &'static str {
        self.schemes()
            .iter()
            .find(|s| s.name == name)
            .map_or("", |s| s.name)
    }
    /// The variants a frontier sweep runs of scheme `name`: `base` once per combination of
    /// the [`Sweep`] knobs the family varies (default: `base` alone).
    fn sweep(&self, name: &str, sweep: &Sweep, base: &SchemeParams) -> Vec<SchemeParams> {
        let _ = (name, sweep);
        vec![base.clone()]
    }
    /// A changed field of one of its tables in the family's own words, for a run's setting
    /// ([`crate::setting()`]): e.g. Salsify's `delay_target_ms` 50 as `d 50 ms`. `field` is
    /// the dotted path within `table` (`forecast.confidence`). Default (`None`): the field's
    /// name and value (`threshold_ms 25`).
    fn describe(
        &self,
        name: &str,
        table: &str,
        field: &str,
        value: &toml::Value,
    ) -> Option<String> {
        let _ = (name, table, field, value);
        None
    }
    /// The line a run is drawn on in a frontier chart (default: the scheme's name).
    fn series(&self, name: &str, params: &SchemeParams) -> String {
        let _ = params;
        name.to_string()
    }
}

/// A scheme, fully configured: builds its endpoints.
pub trait Scheme: Debug + Send + Sync {
    /// The scheme's name.
    fn name(&self) -> &'static str;
    /// The kinds of encode job its sender asks for: the driver opens only the encoders they
    /// need, and a job of another kind fails as an encode (the picture is dropped).
    fn encode_jobs(&self) -> &'static [EncodeKind];
    /// False for a scheme that runs only in the simulator.
    fn runs_live(&self) -> bool {
        true
    }
    /// The functional codec its functional encode jobs run on (default VP8; Salsify's
    /// `[salsify] codec`). CBR jobs are VP8's whatever this says.
    fn codec(&self) -> FunctionalCodec {
        FunctionalCodec::Vp8
    }
    /// The sender, for a session numbered `connection_id`.
    fn build_sender(
        &self,
        source: &SourceInfo,
        connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError>;
    /// The sender the simulator runs, which may read what only a simulator knows (default:
    /// [`Scheme::build_sender`], session 0).
    fn build_simulated_sender(
        &self,
        source: &SourceInfo,
        sim: &Simulated<'_>,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let _ = sim;
        self.build_sender(source, 0)
    }
    /// The receiver.
    fn build_receiver(&self, source: &SourceInfo)
        -> Result<Box<dyn ReceiverEndpoint>, SchemeError>;
    /// Whether this scheme's receiver serves a sender of scheme `name` (default: the same
    /// scheme only).
    fn serves(&self, name: &str) -> bool {
        self.name() == name
    }
}

/// What only the simulator knows, for a scheme that reads it (the oracle).
pub struct Simulated<'a> {
    /// The video link's future.
    pub link_forecast: &'a dyn Fn() -> LinkForecast,
    /// Modelled encode time of a picture at the source size.
    pub encode_time: Duration,
    /// Modelled encode time at half the source's width and height.
    pub halved_encode_time: Duration,
}

/// Where a scheme runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    /// In the simulator and live (`salsify send/recv`).
    Anywhere,
    /// Only in the simulator (it reads the link's future).
    SimulatorOnly,
    /// Only live, in a browser driven by `salsify-peer` (never simulated).
    Peer(PeerCodec),
}

/// The video codec of a browser peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerCodec {
    /// VP8.
    Vp8,
    /// VP9 with [`VP9_SVC_MODE`].
    Vp9Svc,
    /// AV1.
    Av1,
    /// H.264 (Debian's Chromium offers it for WebRTC).
    H264,
}

/// The VP9 scalability mode of the VP9-SVC peer: three spatial and three temporal layers,
/// spatial layers predicting from each other only on keyframes ("k-SVC"). It is the mode
/// Chrome's own conferencing uses for VP9 SVC, so it stands for the paper's "WebRTC
/// (VP9-SVC)"; L1T3 would be temporal layers only, which VP8 can do too, and full L3T3
/// (inter-layer prediction on every frame) costs the receiver of all layers more bits for
/// no gain in a two-party call, where no server drops layers.
pub const VP9_SVC_MODE: &str = "L3T3_KEY";

impl PeerCodec {
    /// The codec's MIME type in `RTCRtpSender.getCapabilities`.
    pub fn mime_type(self) -> &'static str {
        match self {
            PeerCodec::Vp8 => "video/VP8",
            PeerCodec::Vp9Svc => "video/VP9",
            PeerCodec::Av1 => "video/AV1",
            PeerCodec::H264 => "video/H264",
        }
    }

    /// The encoding's `scalabilityMode`, if one is set.
    pub fn scalability_mode(self) -> Option<&'static str> {
        match self {
            PeerCodec::Vp9Svc => Some(VP9_SVC_MODE),
            _ => None,
        }
    }
}

/// A marker shape in figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Marker {
    Circle,
    Square,
    TriangleUp,
    TriangleDown,
    Diamond,
    Star,
    Plus,
    Cross,
    Hexagon,
}

/// A part a scheme plays in the built-in evaluation. Group roles carry a rank (lists are
/// sorted by it); the single roles ([`SchemeRole::Default`], [`SchemeRole::Salsify`], [`SchemeRole::Webrtc`],
/// [`SchemeRole::Bound`]) belong to one scheme each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemeRole {
    /// The scheme `--scheme` and experiment files default to.
    Default,
    /// The Salsify the report measures everything else against.
    Salsify,
    /// The WebRTC baseline the report compares Salsify with.
    Webrtc,
    /// The bound that reads the link's future (the report's reference for quality).
    Bound,
    /// The paper's main comparison (figures 6-8).
    Main,
    /// The slow-link group (the main schemes and the paper's own sender rules).
    Slow,
    /// Salsify and its ablations (experiment 4).
    Ablation,
    /// The built-in frontier group.
    Frontier,
    /// Experiment 7 (queue size).
    Queue,
    /// The live groups' systems.
    Live,
}

/// What drivers ask of a scheme by name.
#[derive(Clone, Copy, Debug)]
pub struct SchemeInfo {
    /// The name experiment files and `--scheme` take.
    pub name: &'static str,
    /// One line on what it is (for listings and docs).
    pub about: &'static str,
    /// Where it runs.
    pub runs: Runs,
    /// False for a scheme that sends filler instead of video (a live cell, scored by the
    /// pictures it shows, cannot run it).
    pub sends_video: bool,
    /// Its colour in every figure (a CSS colour).
    pub color: &'static str,
    /// Its marker shape in every figure.
    pub marker: Marker,
    /// The parts it plays in the built-in evaluation, with its rank in each group.
    pub roles: &'static [(SchemeRole, u8)],
}

impl SchemeInfo {
    /// Its rank in `role`, if it plays it.
    pub fn rank(&self, role: SchemeRole) -> Option<u8> {
        self.roles.iter().find(|(r, _)| *r == role).map(|(_, n)| *n)
    }
}

/// A parameter table a family reads: its name, and its type's checks.
pub struct TableInfo {
    /// The table's name (`[NAME]` in an experiment file).
    pub name: &'static str,
    /// What it configures.
    pub about: &'static str,
    normalise: fn(toml::Value) -> Result<toml::Value, String>,
    validate: fn(&toml::Value) -> Result<(), String>,
    default: fn() -> toml::Value,
}

/// A parameter table's type: serde with defaults, and a range check.
pub trait TableType: Serialize + DeserializeOwned + Default {
    /// Checks the values (the message names the field).
    fn check(&self) -> Result<(), String>;
}

fn normalise<T: TableType>(value: toml::Value) -> Result<toml::Value, String> {
    let typed: T = value.try_into().map_err(|e| e.to_string())?;
    toml::Value::try_from(typed).map_err(|e| e.to_string())
}

fn validate<T: TableType>(value: &toml::Value) -> Result<(), String> {
    let typed: T = value.clone().try_into().map_err(|e| e.to_string())?;
    typed.check()
}

fn default_value<T: TableType>() -> toml::Value {
    toml::Value::try_from(T::default()).expect("a table's default serialises")
}

impl TableInfo {
    /// The table `name`, of type `T`.
    pub const fn of<T: TableType>(name: &'static str, about: &'static str) -> TableInfo {
        TableInfo {
            name,
            about,
            normalise: normalise::<T>,
            validate: validate::<T>,
            default: default_value::<T>,
        }
    }

    /// `value` read as the table's type and written back: every field, in the type's order
    /// (an error names a field of the wrong type or unknown).
    pub fn normalise(&self, value: toml::Value) -> Result<toml::Value, String> {
        (self.normalise)(value)
    }

    /// Checks the values' ranges.
    pub fn validate(&self, value: &toml::Value) -> Result<(), String> {
        (self.validate)(value)
    }

    /// The table with every default.
    pub fn default_value(&self) -> toml::Value {
        (self.default)()
    }

    /// The defaults to compare `given` with: [`TableInfo::default_value`], plus the defaults of
    /// each optional sub-table `given` names that the defaults leave out (Salsify's receiver
    /// has a forecast only when given one).
    pub fn defaults_for(&self, given: &toml::Value) -> toml::Value {
        let mut defaults = self.default_value();
        let (toml::Value::Table(d), Some(g)) = (&mut defaults, given.as_table()) else {
            return defaults;
        };
        for (key, value) in g {
            if d.contains_key(key) || !value.is_table() {
                continue;
            }
            let mut only = toml::Table::new();
            only.insert(key.clone(), toml::Value::Table(toml::Table::new()));
            if let Ok(toml::Value::Table(filled)) = self.normalise(toml::Value::Table(only)) {
                if let Some(sub) = filled.get(key) {
                    d.insert(key.clone(), sub.clone());
                }
            }
        }
        defaults
    }
}

/// A scheme, fully configured (see [`SchemeConfig::named`]).
#[derive(Clone)]
pub struct SchemeConfig(Arc<dyn Scheme>);

impl SchemeConfig {
    /// A handle on `scheme` (a family's [`crate::Family::configure`] returns one).
    pub fn new(scheme: impl Scheme + 'static) -> SchemeConfig {
        SchemeConfig(Arc::new(scheme))
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

    /// The functional codec its encode jobs run on ([`Scheme::codec`]).
    pub fn codec(&self) -> FunctionalCodec {
        self.0.codec()
    }

    /// The kinds of encode job its sender asks for ([`Scheme::encode_jobs`]).
    pub fn encode_jobs(&self) -> &'static [EncodeKind] {
        self.0.encode_jobs()
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
