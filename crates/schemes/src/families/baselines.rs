//! The baselines over one RTP-like wire (`salsify-baselines`): the WebRTC scheme (libwebrtc's
//! GoogCC + its video sender + libvpx CBR + NACK/PLI), the Vidaptive-style scheme and the
//! oracle. A media datagram names its scheme (byte 19), so the receiver learns it.

use salsify_baselines::{
    BaselineReceiver, BaselineSender, ConventionalConfig, OracleConfig, WireId,
    VidaptiveConfig,
};
use salsify_endpoint::{EncodeKind, ReceiverEndpoint, SenderEndpoint, WireFamily};
use salsify_time::Duration;

use crate::error::invalid;
use crate::error::{SchemeError, SourceInfo};
use crate::family::{
    Family, Marker, SchemeRole, Runs, Scheme, SchemeConfig, SchemeInfo, Simulated, TableInfo, TableType,
};
use crate::params::{plain, SchemeParams};
use crate::sweep::{each, Sweep};

impl TableType for ConventionalConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

impl TableType for VidaptiveConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

impl TableType for OracleConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

/// One baseline family: one scheme, one table, one wire id.
pub struct Baseline {
    kind: Kind,
    wire: WireId,
    scheme: &'static [SchemeInfo],
    table: &'static [TableInfo],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Webrtc,
    Vidaptive,
    Oracle,
}

/// The WebRTC scheme.
pub(crate) static WEBRTC: Baseline = Baseline {
    kind: Kind::Webrtc,
    wire: WireId::Conventional,
    scheme: &[SchemeInfo {
        name: "conventional",
        about: "WebRTC: libwebrtc's GoogCC, pacer and video sender over libvpx CBR",
        runs: Runs::Anywhere,
        sends_video: true,
        color: "#D55E00",
        marker: Marker::TriangleUp,
        roles: &[
            (SchemeRole::Webrtc, 0),
            (SchemeRole::Main, 2),
            (SchemeRole::Slow, 3),
            (SchemeRole::Frontier, 1),
            (SchemeRole::Queue, 1),
            (SchemeRole::Live, 3),
        ],
    }],
    table: &[TableInfo::of::<ConventionalConfig>(
        "conventional",
        "the WebRTC scheme (libwebrtc's GoogCC, pacer, video sender)",
    )],
};

/// The Vidaptive-style scheme.
pub(crate) static VIDAPTIVE: Baseline = Baseline {
    kind: Kind::Vidaptive,
    wire: WireId::Vidaptive,
    scheme: &[SchemeInfo {
        name: "vidaptive",
        about: "Vidaptive-style: Copa, padding, pause/reset and alpha over libvpx CBR",
        runs: Runs::Anywhere,
        sends_video: true,
        color: "#009E73",
        marker: Marker::Diamond,
        roles: &[(SchemeRole::Main, 3), (SchemeRole::Slow, 4), (SchemeRole::Queue, 2)],
    }],
    table: &[TableInfo::of::<VidaptiveConfig>(
        "vidaptive",
        "the Vidaptive-style scheme",
    )],
};

/// The oracle.
pub(crate) static ORACLE: Baseline = Baseline {
    kind: Kind::Oracle,
    wire: WireId::Oracle,
    scheme: &[SchemeInfo {
        name: "oracle",
        about: "the oracle: knows the link's future (simulation only)",
        runs: Runs::SimulatorOnly,
        sends_video: true,
        color: "#000000",
        marker: Marker::Star,
        roles: &[
            (SchemeRole::Bound, 0),
            (SchemeRole::Main, 4),
            (SchemeRole::Slow, 5),
            (SchemeRole::Frontier, 3),
        ],
    }],
    table: &[TableInfo::of::<OracleConfig>("oracle", "the oracle")],
};

/// Whether `datagram` is media or padding on the baselines' wire (any scheme's, a plug-in's
/// included).
pub fn is_baseline_media(datagram: &[u8]) -> bool {
    use salsify_baselines::wire::Packet;
    WireFamily::of(datagram) == Some(WireFamily::Baseline)
        && matches!(
            Packet::parse(datagram),
            Ok(Packet::Media { .. } | Packet::Padding { .. })
        )
}

/// A baseline configured.
#[derive(Debug)]
pub struct BaselineScheme {
    name: &'static str,
    table: &'static str,
    wire: WireId,
    config: BaselineConfig,
}

#[derive(Debug)]
enum BaselineConfig {
    Webrtc(ConventionalConfig),
    Vidaptive(VidaptiveConfig),
    Oracle(OracleConfig),
}

impl Family for Baseline {
    fn id(&self) -> &'static str {
        self.scheme[0].name
    }

    fn schemes(&self) -> &'static [SchemeInfo] {
        self.scheme
    }

    fn tables(&self) -> &'static [TableInfo] {
        self.table
    }

    fn configure(&self, name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        let table = self.tables()[0].name;
        let config = match self.kind {
            Kind::Webrtc => BaselineConfig::Webrtc(params.get_or_default(table)?),
            Kind::Vidaptive => BaselineConfig::Vidaptive(params.get_or_default(table)?),
            Kind::Oracle => BaselineConfig::Oracle(params.get_or_default(table)?),
        };
        let checked = match &config {
            BaselineConfig::Webrtc(c) => c.validate(),
            BaselineConfig::Vidaptive(c) => c.validate(),
            BaselineConfig::Oracle(c) => c.validate(),
        };
        checked.map_err(|e| invalid(table)(&e))?;
        debug_assert_eq!(name, self.scheme[0].name);
        Ok(SchemeConfig::new(BaselineScheme {
            name: self.schemes()[0].name,
            table,
            wire: self.wire,
            config,
        }))
    }

    fn wire_ids(&self) -> Vec<WireId> {
        vec![self.wire]
    }

    fn scheme_of_datagram(&self, datagram: &[u8]) -> Option<&'static str> {
        (salsify_baselines::scheme_of(datagram)? == self.wire).then(|| self.schemes()[0].name)
    }

    fn is_sender_datagram(&self, datagram: &[u8]) -> bool {
        is_baseline_media(datagram)
    }

    fn sweep(&self, _name: &str, sweep: &Sweep, base: &SchemeParams) -> Vec<SchemeParams> {
        match self.kind {
            Kind::Oracle => {
                let table = self.tables()[0].name;
                each(&sweep.oracle_slack_frames, base, |p, &slack| {
                    p.update(table, |o: &mut OracleConfig| o.quality_slack_frames = slack);
                })
            }
            _ => vec![base.clone()],
        }
    }

    fn describe(
        &self,
        _name: &str,
        _table: &str,
        field: &str,
        value: &toml::Value,
    ) -> Option<String> {
        (self.kind == Kind::Oracle && field == "quality_slack_frames")
            .then(|| format!("slack {}", plain(value)))
    }
}

impl Scheme for BaselineScheme {
    fn name(&self) -> &'static str {
        self.name
    }

    fn encode_jobs(&self) -> &'static [EncodeKind] {
        match self.config {
            // The quantizer search for the finest frame that fits.
            BaselineConfig::Oracle(_) => &[EncodeKind::FinestFitting],
            // libvpx's own rate control, as WebRTC uses it.
            BaselineConfig::Webrtc(_) | BaselineConfig::Vidaptive(_) => &[EncodeKind::Cbr],
        }
    }

    fn runs_live(&self) -> bool {
        !matches!(self.config, BaselineConfig::Oracle(_))
    }

    fn build_sender(
        &self,
        source: &SourceInfo,
        _connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let size = (source.width, source.height);
        let sender = match &self.config {
            BaselineConfig::Webrtc(c) => BaselineSender::conventional(*c, size),
            BaselineConfig::Vidaptive(c) => BaselineSender::vidaptive(*c, size),
            BaselineConfig::Oracle(_) => return Err(SchemeError::SimulationOnly(self.name)),
        };
        Ok(Box::new(sender.map_err(|e| invalid(self.table)(&e))?))
    }

    fn build_simulated_sender(
        &self,
        source: &SourceInfo,
        sim: &Simulated<'_>,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let BaselineConfig::Oracle(c) = &self.config else {
            return self.build_sender(source, 0);
        };
        let config = OracleConfig {
            encode_time: sim.encode_time,
            halved_encode_time: sim.halved_encode_time,
            ..*c
        };
        Ok(Box::new(
            BaselineSender::oracle(config, (sim.link_forecast)())
                .map_err(|e| invalid(self.table)(&e))?,
        ))
    }

    fn build_receiver(
        &self,
        source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        let feedback_interval: Option<Duration> = match self.config {
            // libwebrtc's period for a receiver that only receives (its own send-side
            // target stays at the start rate): 50 ms.
            BaselineConfig::Webrtc(_) => self.wire.feedback_interval(),
            // Copa needs an ACK per packet.
            BaselineConfig::Vidaptive(_) => None,
            BaselineConfig::Oracle(_) => {
                salsify_baselines::ReceiverConfig::default().feedback_interval
            }
        };
        let config = salsify_baselines::ReceiverConfig {
            feedback_interval,
            ..salsify_baselines::ReceiverConfig::default()
        };
        Ok(Box::new(
            BaselineReceiver::new(config, (source.width, source.height))
                .map_err(|e| invalid("receiver")(&e))?,
        ))
    }
}
