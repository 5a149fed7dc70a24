//! Scheme names, their parameters and the endpoints they build.

use salsify_baselines::{
    BaselineReceiver, BaselineSender, ConventionalConfig, LinkForecast, OracleConfig, SproutConfig,
    SproutMode, SproutReceiver, SproutSender, VidaptiveConfig,
};
use salsify_endpoint::{ReceiverEndpoint, SenderEndpoint, WireFamily};
use salsify_sprout::ForecasterKind;
use salsify_time::Duration;
use salsify_transport::{
    BudgetSource, EncodeTimeConfig, PacingConfig, SalsifyReceiver, SalsifySender, SenderConfig,
    SenderMode, SenderRules,
};
use serde::{Deserialize, Serialize};

/// Every scheme name, as experiment files and `--scheme` take them.
pub const SCHEMES: &[&str] = &[
    "salsify-2c",
    "salsify-1c",
    "salsify-no-grace",
    "salsify-conventional-codec",
    "salsify-conventional-transport",
    "conventional",
    "vidaptive",
    "oracle",
    "salsify-paper",
    "sprout",
    "sprout-ewma",
    "sprout-bulk",
    "sprout-ewma-bulk",
];

/// Per-family parameters, each defaulting to the papers' values (see each type's docs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchemeParams {
    /// The Salsify sender (every salsify-* scheme; the name's variant is applied on top).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub salsify: Option<SenderConfig>,
    /// The Salsify receiver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub salsify_receiver: Option<salsify_transport::ReceiverConfig>,
    /// The conventional sender (libwebrtc's GoogCC and video sender).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conventional: Option<ConventionalConfig>,
    /// The Vidaptive-style sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vidaptive: Option<VidaptiveConfig>,
    /// The oracle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleConfig>,
    /// Sprout and Sprout-EWMA, video or bulk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sprout: Option<SproutConfig>,
}

/// A scheme, fully configured.
// Built once per session and never stored in bulk: the Salsify variant's size (two configs
// with the receiver's forecast parameters) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SchemeConfig {
    /// Salsify or one of its ablations.
    Salsify {
        /// The scheme's name (which variant).
        name: &'static str,
        /// The sender.
        sender: SenderConfig,
        /// The receiver.
        receiver: salsify_transport::ReceiverConfig,
        /// The two options are encoded at once on two cores (2c) or in series (1c).
        parallel: bool,
    },
    /// WebRTC: libwebrtc's GoogCC + its video sender + libvpx CBR + NACK/PLI.
    Conventional(ConventionalConfig),
    /// Vidaptive-style: Copa + padding + pause/reset + alpha, libvpx CBR.
    Vidaptive(VidaptiveConfig),
    /// The oracle: knows the link's future (simulation only).
    Oracle(OracleConfig),
    /// Sprout (or Sprout-EWMA) carrying video as Alfalfa did, or bulk filler.
    Sprout {
        /// The forecaster the receiver runs.
        kind: ForecasterKind,
        /// The parameters (the mode included).
        config: SproutConfig,
    },
}

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
    #[error("unknown scheme '{0}'; one of {list}", list = SCHEMES.join(", "))]
    Unknown(String),
    /// A parameter is out of range (the message names the field).
    #[error("invalid {scheme} parameter: {why}")]
    Invalid {
        /// The parameter table.
        scheme: &'static str,
        /// What is wrong, naming the field.
        why: String,
    },
    /// The scheme cannot run over a real network.
    #[error(
        "the oracle reads the link's future and runs only in the simulator (salsify sim / eval)"
    )]
    SimulationOnly,
}

fn invalid(scheme: &'static str) -> impl Fn(&dyn std::fmt::Display) -> SchemeError {
    move |e| SchemeError::Invalid {
        scheme,
        why: e.to_string(),
    }
}

impl SchemeParams {
    /// Checks every table given.
    pub fn validate(&self) -> Result<(), SchemeError> {
        if let Some(c) = &self.salsify {
            c.validate().map_err(|e| invalid("salsify")(&e))?;
        }
        if let Some(c) = &self.salsify_receiver {
            c.validate().map_err(|e| invalid("salsify_receiver")(&e))?;
        }
        if let Some(c) = &self.conventional {
            c.validate().map_err(|e| invalid("conventional")(&e))?;
        }
        if let Some(c) = &self.vidaptive {
            c.validate().map_err(|e| invalid("vidaptive")(&e))?;
        }
        if let Some(c) = &self.oracle {
            c.validate().map_err(|e| invalid("oracle")(&e))?;
        }
        if let Some(c) = &self.sprout {
            c.validate().map_err(|e| invalid("sprout")(&e))?;
        }
        Ok(())
    }
}

impl SchemeConfig {
    /// The scheme called `name`, with `params` for its family.
    pub fn named(name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        params.validate()?;
        let scheme = match name {
            "conventional" => SchemeConfig::Conventional(params.conventional.unwrap_or_default()),
            "vidaptive" => SchemeConfig::Vidaptive(params.vidaptive.unwrap_or_default()),
            "oracle" => SchemeConfig::Oracle(params.oracle.unwrap_or_default()),
            "sprout" | "sprout-ewma" | "sprout-bulk" | "sprout-ewma-bulk" => {
                let mut config = params.sprout.unwrap_or_default();
                if name.ends_with("-bulk") {
                    config.mode = SproutMode::Bulk;
                }
                let kind = match name.starts_with("sprout-ewma") {
                    true => ForecasterKind::Ewma,
                    false => ForecasterKind::Sprout,
                };
                SchemeConfig::Sprout { kind, config }
            }
            _ => Self::salsify(name, params)?,
        };
        scheme.validate()?;
        Ok(scheme)
    }

    fn salsify(name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        let base = params.salsify.clone().unwrap_or_default();
        let receiver = params.salsify_receiver.clone().unwrap_or_default();
        let (name, sender, parallel) = match name {
            "salsify-2c" => ("salsify-2c", base, true),
            "salsify-1c" => ("salsify-1c", base, false),
            "salsify-no-grace" => (
                "salsify-no-grace",
                SenderConfig {
                    grace_period: false,
                    ..base
                },
                true,
            ),
            "salsify-conventional-codec" => (
                "salsify-conventional-codec",
                SenderConfig {
                    mode: SenderMode::ConventionalCodec,
                    ..base
                },
                true,
            ),
            "salsify-conventional-transport" => (
                "salsify-conventional-transport",
                SenderConfig {
                    mode: SenderMode::ConventionalTransport {
                        update_interval: Duration::from_secs(1),
                    },
                    ..base
                },
                true,
            ),
            // The paper's rules: no outage handling, forced sends after max_consecutive_skips
            // (default 4, the paper's) skips whether or not something is in flight; Salsify-2c.
            "salsify-paper" => (
                "salsify-paper",
                SenderConfig {
                    rules: SenderRules::Paper,
                    budget: BudgetSource::Ewma,
                    ..base
                },
                true,
            ),
            other => return Err(SchemeError::Unknown(other.to_string())),
        };
        // The receiver and the pacing go with the sender's rules: the paper's sender runs as it
        // was measured (unless the table sets its own pacing).
        let (receiver, sender) = match sender.rules {
            SenderRules::SlowLink => (receiver, sender),
            _ => {
                let pacing = match sender.pacing == PacingConfig::default() {
                    true => PacingConfig::original(),
                    false => sender.pacing,
                };
                let encode_time = match sender.encode_time == EncodeTimeConfig::default() {
                    true => EncodeTimeConfig {
                        enabled: false,
                        ..sender.encode_time
                    },
                    false => sender.encode_time,
                };
                let sender = SenderConfig {
                    pacing,
                    encode_time,
                    ..sender
                };
                (receiver.first_round(), sender)
            }
        };
        // The receiver forecasts the link for a sender that budgets with the forecast.
        let receiver = salsify_transport::ReceiverConfig {
            link_forecast: receiver.link_forecast || sender.budget == BudgetSource::Forecast,
            ..receiver
        };
        Ok(SchemeConfig::Salsify {
            name,
            sender,
            receiver,
            parallel,
        })
    }

    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        match self {
            SchemeConfig::Salsify { name, .. } => name,
            SchemeConfig::Conventional(_) => "conventional",
            SchemeConfig::Vidaptive(_) => "vidaptive",
            SchemeConfig::Oracle(_) => "oracle",
            SchemeConfig::Sprout { kind, config } => {
                salsify_baselines::sprout::scheme_name(*kind, config.mode)
            }
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SchemeError> {
        match self {
            SchemeConfig::Salsify {
                sender, receiver, ..
            } => {
                sender.validate().map_err(|e| invalid("salsify")(&e))?;
                receiver
                    .validate()
                    .map_err(|e| invalid("salsify_receiver")(&e))
            }
            SchemeConfig::Conventional(c) => c.validate().map_err(|e| invalid("conventional")(&e)),
            SchemeConfig::Vidaptive(c) => c.validate().map_err(|e| invalid("vidaptive")(&e)),
            SchemeConfig::Oracle(c) => c.validate().map_err(|e| invalid("oracle")(&e)),
            SchemeConfig::Sprout { config, .. } => {
                config.validate().map_err(|e| invalid("sprout")(&e))
            }
        }
    }

    /// False for the oracle, which reads the link's future.
    pub fn runs_live(&self) -> bool {
        !matches!(self, SchemeConfig::Oracle(_))
    }

    /// The wire protocol its datagrams use.
    pub fn wire_family(&self) -> WireFamily {
        match self {
            SchemeConfig::Salsify { .. } => WireFamily::Salsify,
            SchemeConfig::Sprout { .. } => WireFamily::Sprout,
            _ => WireFamily::Baseline,
        }
    }

    /// The sender, for a session numbered `connection_id` (Salsify tells sessions apart by it).
    pub fn build_sender(
        &self,
        source: &SourceInfo,
        connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let size = (source.width, source.height);
        Ok(match self {
            SchemeConfig::Salsify {
                sender, parallel, ..
            } => {
                let config = SenderConfig {
                    connection_id,
                    ..sender.clone()
                };
                Box::new(SalsifySender::new(config, *parallel).map_err(|e| invalid("salsify")(&e))?)
            }
            SchemeConfig::Conventional(c) => Box::new(
                BaselineSender::conventional(*c, size).map_err(|e| invalid("conventional")(&e))?,
            ),
            SchemeConfig::Vidaptive(c) => {
                Box::new(BaselineSender::vidaptive(*c, size).map_err(|e| invalid("vidaptive")(&e))?)
            }
            SchemeConfig::Oracle(_) => return Err(SchemeError::SimulationOnly),
            SchemeConfig::Sprout { kind, config } => {
                let interval = match source.fps.is_finite() && source.fps > 0.0 {
                    true => Duration::from_secs_f64(1.0 / source.fps.min(1000.0)),
                    false => Duration::from_millis(33),
                };
                Box::new(
                    SproutSender::new(*config, *kind, connection_id, interval)
                        .map_err(|e| invalid("sprout")(&e))?,
                )
            }
        })
    }

    /// The oracle's sender, given the link's future and the modelled encode times (at the
    /// source size, and at half its width and height).
    pub fn build_oracle_sender(
        &self,
        forecast: LinkForecast,
        encode_time: Duration,
        halved_encode_time: Duration,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let SchemeConfig::Oracle(c) = self else {
            return Err(SchemeError::Invalid {
                scheme: "oracle",
                why: format!("{} is not the oracle", self.name()),
            });
        };
        let config = OracleConfig {
            encode_time,
            halved_encode_time,
            ..*c
        };
        Ok(Box::new(
            BaselineSender::oracle(config, forecast).map_err(|e| invalid("oracle")(&e))?,
        ))
    }

    /// The receiver.
    pub fn build_receiver(
        &self,
        source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        let size = (source.width, source.height);
        let baseline = |feedback_interval| {
            let config = salsify_baselines::ReceiverConfig {
                feedback_interval,
                ..salsify_baselines::ReceiverConfig::default()
            };
            BaselineReceiver::new(config, size).map_err(|e| invalid("receiver")(&e))
        };
        Ok(match self {
            SchemeConfig::Salsify { receiver, .. } => Box::new(
                SalsifyReceiver::new(receiver.clone())
                    .map_err(|e| invalid("salsify_receiver")(&e))?,
            ),
            // libwebrtc's period for a receiver that only receives (its own send-side
            // target stays at the start rate): 50 ms.
            SchemeConfig::Conventional(_) => Box::new(baseline(
                salsify_baselines::Scheme::Conventional.feedback_interval(),
            )?),
            // Copa needs an ACK per packet.
            SchemeConfig::Vidaptive(_) => Box::new(baseline(None)?),
            SchemeConfig::Oracle(_) => Box::new(baseline(
                salsify_baselines::ReceiverConfig::default().feedback_interval,
            )?),
            SchemeConfig::Sprout { config, .. } => {
                Box::new(SproutReceiver::new(*config).map_err(|e| invalid("sprout")(&e))?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_reports_itself() {
        for &name in SCHEMES {
            let s = SchemeConfig::named(name, &SchemeParams::default()).unwrap();
            assert_eq!(s.name(), name);
            assert_eq!(s.runs_live(), name != "oracle");
        }
        assert!(matches!(
            SchemeConfig::named("webrtc", &SchemeParams::default()),
            Err(SchemeError::Unknown(_))
        ));
    }

    #[test]
    fn the_new_salsify_names_pick_their_rules_and_keep_the_rest() {
        let rules = |name| match SchemeConfig::named(name, &SchemeParams::default()).unwrap() {
            SchemeConfig::Salsify {
                sender, parallel, ..
            } => (sender.rules, parallel),
            other => panic!("{other:?}"),
        };
        assert_eq!(rules("salsify-2c"), (SenderRules::SlowLink, true));
        assert_eq!(rules("salsify-1c"), (SenderRules::SlowLink, false));
        assert_eq!(rules("salsify-paper"), (SenderRules::Paper, true));
        // The receiver goes with the rules: the paper's plain one.
        let receiver = |name| match SchemeConfig::named(name, &SchemeParams::default()).unwrap() {
            SchemeConfig::Salsify { receiver, .. } => receiver,
            other => panic!("{other:?}"),
        };
        let default = salsify_transport::ReceiverConfig::default();
        // Salsify-2c budgets with the forecast (issue 35), so its receiver forecasts; the
        // paper's sender keeps the EWMA and a receiver that does not.
        assert_eq!(
            receiver("salsify-2c"),
            salsify_transport::ReceiverConfig {
                link_forecast: true,
                ..default.clone()
            }
        );
        let budget = |name| match SchemeConfig::named(name, &SchemeParams::default()).unwrap() {
            SchemeConfig::Salsify { sender, .. } => sender.budget,
            other => panic!("{other:?}"),
        };
        assert_eq!(budget("salsify-2c"), BudgetSource::Forecast);
        assert_eq!(budget("salsify-paper"), BudgetSource::Ewma);
        assert_eq!(receiver("salsify-paper"), default.clone().first_round());
        assert_ne!(default.clone().first_round(), default);
        // The [salsify] table's other fields carry over; its rules are the name's.
        let params = SchemeParams {
            salsify: Some(SenderConfig {
                max_consecutive_skips: 3,
                ..SenderConfig::default()
            }),
            ..SchemeParams::default()
        };
        match SchemeConfig::named("salsify-paper", &params).unwrap() {
            SchemeConfig::Salsify { sender, .. } => {
                assert_eq!(sender.max_consecutive_skips, 3);
                assert_eq!(sender.rules, SenderRules::Paper);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_oracle_refuses_to_run_live() {
        let s = SchemeConfig::named("oracle", &SchemeParams::default()).unwrap();
        let source = SourceInfo {
            width: 64,
            height: 48,
            fps: 30.0,
        };
        let err = s.build_sender(&source, 1).unwrap_err();
        assert!(err.to_string().contains("simulator"), "{err}");
    }
}
