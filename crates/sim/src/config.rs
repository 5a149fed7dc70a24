//! What a run depends on besides the video ([`SimConfig`]) and why it could not be done
//! ([`SimError`]).

use salsify_codec::CodecError;
use salsify_metrics::MetricsError;
use salsify_netem::LinkConfig;
use salsify_schemes::{SchemeConfig, SchemeError};
use std::sync::Arc;

use salsify_audio::{OpusConfig, PlayerConfig};
use salsify_time::Duration;

use crate::cost::CostModel;

/// Everything a run depends on besides the video.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Which system runs, with its parameters. Default Salsify-2c.
    pub scheme: SchemeConfig,
    /// The link carrying video from sender to receiver.
    pub data_link: LinkConfig,
    /// The link carrying feedback back.
    pub feedback_link: LinkConfig,
    /// Virtual time simulated.
    pub duration: Duration,
    /// Time charged for encoding and decoding.
    pub cost: CostModel,
    /// libvpx speed (negative cpu-used).
    pub cpu_used: i32,
    /// Record every packet event of the data link (for a Mahimahi log).
    pub record_packets: bool,
    /// Bytes added to every datagram on both links, to model a wrapper the scheme does not
    /// see: 29 for encrypted sessions (`salsify_secure::OVERHEAD`: header and AEAD tag).
    /// Default 0.
    pub datagram_overhead: usize,
    /// Sprout's measurement of the video link ([`salsify_metrics::SproutMeasure`]) scores
    /// the run after this much time (Sprout's own experiment skips the first minute).
    /// Default 0.
    pub network_skip: Duration,
    /// Score pictures below the barcode band only, as a live run's black-box scorer does
    /// (`salsify_barcode::ssim_outside_band`): for a barcoded clip, whose flat band would
    /// otherwise lift every score. Default false: the whole picture.
    pub score_below_band: bool,
    /// The call's audio beside the video: real Opus packets on the data link, played by a
    /// jitter buffer lip-synced to the pictures shown. Default `None`: video only.
    pub audio: Option<SimAudio>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scheme: SchemeConfig::named(
                salsify_schemes::registry::default_scheme(),
                &Default::default(),
            )
            .expect("the default scheme is valid"),
            data_link: LinkConfig::default(),
            feedback_link: LinkConfig::default(),
            duration: Duration::from_secs(10),
            cost: CostModel::default(),
            cpu_used: -8,
            record_packets: false,
            datagram_overhead: 0,
            network_skip: Duration::ZERO,
            score_below_band: false,
            audio: None,
        }
    }
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The scheme could not be built.
    #[error(transparent)]
    Scheme(#[from] SchemeError),
    /// The codec failed (on the simulator's own pictures: a bug or a libvpx problem).
    #[error("codec: {0}")]
    Codec(CodecError),
    /// Scoring failed.
    #[error("metrics: {0}")]
    Metrics(MetricsError),
    /// The caller's stop condition ended the run before its end ([`crate::simulate_until`]).
    #[error("stopped before the end")]
    Stopped,
}

// By hand rather than `#[from]`, which would also make it the error's source: the message
// already says it, and an error chain would print it twice.
impl From<CodecError> for SimError {
    fn from(e: CodecError) -> Self {
        SimError::Codec(e)
    }
}

// By hand rather than `#[from]`, which would also make it the error's source: the message
// already says it, and an error chain would print it twice.
impl From<MetricsError> for SimError {
    fn from(e: MetricsError) -> Self {
        SimError::Metrics(e)
    }
}

/// Where a run's audio comes from.
#[derive(Clone, Debug)]
pub enum SimAudioInput {
    /// The synthetic voice with a timing mark each second.
    Synthetic,
    /// Samples (48 kHz mono) played in a loop.
    Samples(Arc<Vec<i16>>),
}

/// A run's audio: its source and the settings of both ends.
#[derive(Clone, Debug)]
pub struct SimAudio {
    /// The source.
    pub input: SimAudioInput,
    /// The encoder.
    pub opus: OpusConfig,
    /// The receiver: jitter buffer and lip sync.
    pub player: PlayerConfig,
    /// Keep every sample played (for a WAV file of what the receiver heard).
    pub keep_samples: bool,
}

impl SimAudio {
    /// `input` with the default encoder and receiver.
    pub fn new(input: SimAudioInput) -> Self {
        SimAudio {
            input,
            opus: OpusConfig::default(),
            player: PlayerConfig::default(),
            keep_samples: false,
        }
    }
}
