//! Sprout and Sprout-EWMA (`salsify-baselines`' `sprout` module), carrying video as Alfalfa
//! did or bulk filler. One receiver serves every variant: the sender names its forecaster.

use salsify_baselines::{SproutConfig, SproutMode, SproutReceiver, SproutSender};
use salsify_endpoint::{EncodeKind, ReceiverEndpoint, SenderEndpoint};
use salsify_sprout_model::ForecasterKind;
use salsify_time::Duration;

use crate::error::invalid;
use crate::error::{SchemeError, SourceInfo};
use crate::family::{
    Family, Marker, SchemeRole, Runs, Scheme, SchemeConfig, SchemeInfo, TableInfo, TableType,
};
use crate::params::{plain, SchemeParams};
use crate::sweep::{each, Sweep};

/// The family.
pub(crate) static FAMILY: Sprout = Sprout;

/// Sprout's family.
pub struct Sprout;

const TABLE: &str = "sprout";

impl TableType for SproutConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

const fn info(
    name: &'static str,
    about: &'static str,
    sends_video: bool,
    color: &'static str,
    marker: Marker,
    roles: &'static [(SchemeRole, u8)],
) -> SchemeInfo {
    SchemeInfo {
        name,
        about,
        runs: Runs::Anywhere,
        sends_video,
        color,
        marker,
        roles,
    }
}

static SCHEMES: [SchemeInfo; 4] = [
    info(
        "sprout",
        "Sprout's stochastic forecast carrying video",
        true,
        "#882255",
        Marker::Circle,
        &[(SchemeRole::Frontier, 2)],
    ),
    info(
        "sprout-ewma",
        "Sprout-EWMA carrying video",
        true,
        "#DDCC77",
        Marker::Square,
        &[],
    ),
    info(
        "sprout-bulk",
        "Sprout with bulk filler (its own experiment)",
        false,
        "#117733",
        Marker::Star,
        &[],
    ),
    info(
        "sprout-ewma-bulk",
        "Sprout-EWMA with bulk filler",
        false,
        "#999933",
        Marker::Diamond,
        &[],
    ),
];

static TABLES: [TableInfo; 1] = [TableInfo::of::<SproutConfig>(
    TABLE,
    "Sprout (`[sprout.forecast]` for the forecaster)",
)];

/// Sprout configured.
#[derive(Debug)]
pub struct SproutScheme {
    kind: ForecasterKind,
    config: SproutConfig,
}

fn kind(name: &str) -> ForecasterKind {
    match name.starts_with("sprout-ewma") {
        true => ForecasterKind::Ewma,
        false => ForecasterKind::Sprout,
    }
}

impl Family for Sprout {
    fn id(&self) -> &'static str {
        "sprout"
    }

    fn schemes(&self) -> &'static [SchemeInfo] {
        &SCHEMES
    }

    fn tables(&self) -> &'static [TableInfo] {
        &TABLES
    }

    fn configure(&self, name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        let mut config: SproutConfig = params.get_or_default(TABLE)?;
        if name.ends_with("-bulk") {
            config.mode = SproutMode::Bulk;
        }
        config.validate().map_err(|e| invalid(TABLE)(&e))?;
        Ok(SchemeConfig::new(SproutScheme {
            kind: kind(name),
            config,
        }))
    }

    fn scheme_of_datagram(&self, datagram: &[u8]) -> Option<&'static str> {
        salsify_baselines::sprout::scheme_of(datagram)
    }

    fn is_sender_datagram(&self, datagram: &[u8]) -> bool {
        matches!(
            salsify_baselines::sprout::wire::parse(datagram),
            Ok(salsify_baselines::sprout::wire::Datagram::Data(..))
        )
    }

    fn receiver_scheme(&self, _name: &str) -> &'static str {
        SCHEMES[0].name
    }

    fn sweep(&self, name: &str, sweep: &Sweep, base: &SchemeParams) -> Vec<SchemeParams> {
        if !SCHEMES.iter().any(|s| s.name == name && s.sends_video) {
            return vec![base.clone()];
        }
        each(&sweep.confidence, base, |p, &c| {
            p.update(TABLE, |s: &mut SproutConfig| s.forecast.confidence = c);
        })
    }

    fn describe(
        &self,
        _name: &str,
        _table: &str,
        field: &str,
        value: &toml::Value,
    ) -> Option<String> {
        (field == "forecast.confidence").then(|| format!("confidence {}", plain(value)))
    }
}

impl Scheme for SproutScheme {
    fn name(&self) -> &'static str {
        salsify_baselines::sprout::scheme_name(self.kind, self.config.mode)
    }

    fn encode_jobs(&self) -> &'static [EncodeKind] {
        // A frame of the size the forecast allows.
        &[EncodeKind::SizeTarget]
    }

    fn build_sender(
        &self,
        source: &SourceInfo,
        connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let interval = match source.fps.is_finite() && source.fps > 0.0 {
            true => Duration::from_secs_f64(1.0 / source.fps.min(1000.0)),
            false => Duration::from_millis(33),
        };
        Ok(Box::new(
            SproutSender::new(self.config, self.kind, connection_id, interval)
                .map_err(|e| invalid(TABLE)(&e))?,
        ))
    }

    fn build_receiver(
        &self,
        _source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        Ok(Box::new(
            SproutReceiver::new(self.config).map_err(|e| invalid(TABLE)(&e))?,
        ))
    }

    fn serves(&self, name: &str) -> bool {
        SCHEMES.iter().any(|s| s.name == name)
    }
}
