//! Salsify and its ablations (`salsify-transport`): one sender and one receiver type, the
//! name picking the sender's variant (`salsify-1c` is `[salsify]` encoded on one core).

use salsify_endpoint::{EncodeKind, ReceiverEndpoint, SenderEndpoint, WireFamily};
use salsify_time::Duration;
use salsify_transport::{
    BudgetSource, EncodeTimeConfig, PacingConfig, ReceiverConfig, SalsifyReceiver, SalsifySender,
    SenderConfig, SenderMode, SenderRules,
};

use crate::error::invalid;
use crate::error::{SchemeError, SourceInfo};
use crate::family::{
    Family, Marker, SchemeRole, Runs, Scheme, SchemeConfig, SchemeInfo, TableInfo, TableType,
};
use crate::params::{plain, SchemeParams};
use crate::sweep::{each, Sweep};

/// The family.
pub static FAMILY: Salsify = Salsify;

/// Salsify's family.
pub struct Salsify;

const SENDER: &str = "salsify";

/// The sender's parameter table (`[salsify]`).
pub const SENDER_TABLE: &str = SENDER;
const RECEIVER: &str = "salsify_receiver";

impl TableType for SenderConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

impl TableType for ReceiverConfig {
    fn check(&self) -> Result<(), String> {
        self.validate().map_err(|e| e.to_string())
    }
}

const fn info(
    name: &'static str,
    about: &'static str,
    color: &'static str,
    marker: Marker,
    roles: &'static [(SchemeRole, u8)],
) -> SchemeInfo {
    SchemeInfo {
        name,
        about,
        runs: Runs::Anywhere,
        sends_video: true,
        color,
        marker,
        roles,
    }
}

static SCHEMES: [SchemeInfo; 6] = [
    info(
        "salsify-2c",
        "Salsify, both options encoded at once on two cores",
        "#0072B2",
        Marker::Circle,
        &[
            (SchemeRole::Default, 0),
            (SchemeRole::Salsify, 0),
            (SchemeRole::Main, 0),
            (SchemeRole::Slow, 0),
            (SchemeRole::Ablation, 0),
            (SchemeRole::Frontier, 0),
            (SchemeRole::Queue, 0),
            (SchemeRole::Live, 2),
        ],
    ),
    info(
        "salsify-1c",
        "Salsify, the two options encoded in series on one core",
        "#56B4E9",
        Marker::Square,
        &[(SchemeRole::Main, 1), (SchemeRole::Slow, 1)],
    ),
    info(
        "salsify-no-grace",
        "Salsify-2c without the grace period",
        "#88CCEE",
        Marker::TriangleDown,
        &[(SchemeRole::Ablation, 1)],
    ),
    info(
        "salsify-conventional-codec",
        "Salsify's transport over a conventional codec",
        "#44AA99",
        Marker::Cross,
        &[(SchemeRole::Ablation, 2)],
    ),
    info(
        "salsify-conventional-transport",
        "Salsify's codec under a conventional transport (rate updated each second)",
        "#AA4499",
        Marker::Plus,
        &[(SchemeRole::Ablation, 3)],
    ),
    info(
        "salsify-paper",
        "Salsify with the paper's sender rules and EWMA budget",
        "#332288",
        Marker::Diamond,
        &[(SchemeRole::Slow, 2)],
    ),
];

static TABLES: [TableInfo; 2] = [
    TableInfo::of::<SenderConfig>(SENDER, "Salsify's sender (every salsify-* scheme)"),
    TableInfo::of::<ReceiverConfig>(RECEIVER, "Salsify's receiver"),
];

/// `salsify send`'s shorthand flags for the Salsify variants.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shorthands {
    /// `--mode s1`: the options encoded in series.
    pub serial: bool,
    /// `--no-grace-period`.
    pub no_grace_period: bool,
    /// `--conventional-codec`.
    pub conventional_codec: bool,
    /// `--conventional-transport`.
    pub conventional_transport: bool,
}

/// Salsify configured: the sender's and receiver's parameters and the encode mode.
#[derive(Debug)]
pub struct SalsifyScheme {
    name: &'static str,
    sender: SenderConfig,
    receiver: ReceiverConfig,
    parallel: bool,
}

impl SalsifyScheme {
    /// The scheme's sender parameters.
    pub fn sender(&self) -> &SenderConfig {
        &self.sender
    }

    /// The scheme's receiver parameters.
    pub fn receiver(&self) -> &ReceiverConfig {
        &self.receiver
    }

    /// The two options are encoded at once (2c) or in series (1c).
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// The name its sender reports: the scheme's, or its sibling's when `salsify send
    /// --mode` overrode the encode mode (Salsify-2c sent serially is Salsify-1c).
    fn sender_name(&self) -> &'static str {
        match (self.name, self.parallel) {
            ("salsify-2c", false) => "salsify-1c",
            ("salsify-1c", true) => "salsify-2c",
            (name, _) => name,
        }
    }
}

impl Salsify {
    /// The scheme `name` configured, as [`SalsifyScheme`].
    pub fn scheme(&self, name: &str, params: &SchemeParams) -> Result<SalsifyScheme, SchemeError> {
        let base: SenderConfig = params.get_or_default(SENDER)?;
        let receiver: ReceiverConfig = params.get_or_default(RECEIVER)?;
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
            other => {
                let known: Vec<&str> = SCHEMES.iter().map(|s| s.name).collect();
                return Err(SchemeError::Unknown(other.to_string(), known.join(", ")));
            }
        };
        // The receiver and the pacing go with the sender's rules: the paper's sender runs as
        // it was measured (unless the table sets its own pacing).
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
        let receiver = ReceiverConfig {
            link_forecast: receiver.link_forecast || sender.budget == BudgetSource::Forecast,
            ..receiver
        };
        let scheme = SalsifyScheme {
            name,
            sender,
            receiver,
            parallel,
        };
        scheme.sender.validate().map_err(|e| invalid(SENDER)(&e))?;
        scheme
            .receiver
            .validate()
            .map_err(|e| invalid(RECEIVER)(&e))?;
        Ok(scheme)
    }

    /// Whether `name` is one of this family's schemes.
    pub fn owns(&self, name: &str) -> bool {
        SCHEMES.iter().any(|s| s.name == name)
    }

    /// The scheme `salsify send`'s Salsify shorthands name when `--scheme` is not given.
    pub fn shorthand(&self, flags: Shorthands) -> &'static str {
        let index = match flags {
            Shorthands {
                conventional_codec: true,
                ..
            } => 3,
            Shorthands {
                conventional_transport: true,
                ..
            } => 4,
            Shorthands {
                no_grace_period: true,
                ..
            } => 2,
            Shorthands { serial: true, .. } => 1,
            _ => 0,
        };
        SCHEMES[index].name
    }

    /// The scheme `name` configured as [`SchemeConfig::named`] does, with its encode mode
    /// overridden where `parallel` is given (`salsify send --mode`).
    pub fn configure_with(
        &self,
        name: &str,
        params: &SchemeParams,
        parallel: Option<bool>,
    ) -> Result<SchemeConfig, SchemeError> {
        // Each table this family reads is checked as it is read; the command's parameter file
        // was checked against the registry when it was parsed.
        let scheme = self.scheme(name, params)?;
        Ok(SchemeConfig::new(SalsifyScheme {
            parallel: parallel.unwrap_or(scheme.parallel),
            ..scheme
        }))
    }
}

impl Family for Salsify {
    fn id(&self) -> &'static str {
        "salsify"
    }

    fn schemes(&self) -> &'static [SchemeInfo] {
        &SCHEMES
    }

    fn tables(&self) -> &'static [TableInfo] {
        &TABLES
    }

    fn configure(&self, name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        Ok(SchemeConfig::new(self.scheme(name, params)?))
    }

    fn scheme_of_datagram(&self, datagram: &[u8]) -> Option<&'static str> {
        // Every variant has the same receiver and the same wire.
        (WireFamily::of(datagram)? == WireFamily::Salsify).then_some(SCHEMES[0].name)
    }

    fn is_sender_datagram(&self, datagram: &[u8]) -> bool {
        WireFamily::of(datagram) == Some(WireFamily::Salsify)
            && salsify_transport::DataFragment::parse(datagram).is_ok()
    }

    fn receiver_scheme(&self, _name: &str) -> &'static str {
        SCHEMES[0].name
    }

    fn sweep(&self, name: &str, sweep: &Sweep, base: &SchemeParams) -> Vec<SchemeParams> {
        // The paper's rules keep the paper's settings.
        if name == "salsify-paper" {
            return vec![base.clone()];
        }
        let mut out = Vec::new();
        for with_budget in each(&sweep.budget, base, |p, &b| {
            p.update(SENDER, |s: &mut SenderConfig| s.budget = b);
        }) {
            let forecast = with_budget
                .get::<SenderConfig>(SENDER)
                .ok()
                .flatten()
                .is_some_and(|s| s.budget == BudgetSource::Forecast);
            let confidences: &[f64] = if forecast { &sweep.confidence } else { &[] };
            for with_confidence in each(confidences, &with_budget, |p, &c| {
                p.update(RECEIVER, |r: &mut ReceiverConfig| r.forecast.confidence = c);
            }) {
                out.extend(each(&sweep.delay_target_ms, &with_confidence, |p, &d| {
                    p.update(SENDER, |s: &mut SenderConfig| {
                        s.delay_target = Duration::from_secs_f64(d / 1000.0)
                    });
                }));
            }
        }
        out
    }

    fn describe(
        &self,
        _name: &str,
        table: &str,
        field: &str,
        value: &toml::Value,
    ) -> Option<String> {
        match (table, field) {
            (SENDER, "delay_target_ms") => Some(format!("d {} ms", plain(value))),
            (SENDER, "budget") => Some(plain(value)),
            (RECEIVER, "forecast.confidence") => Some(format!("confidence {}", plain(value))),
            _ => None,
        }
    }

    fn series(&self, name: &str, params: &SchemeParams) -> String {
        match params.get::<SenderConfig>(SENDER).ok().flatten() {
            Some(s) if s.budget == BudgetSource::Forecast => format!("{name} forecast"),
            _ => format!("{name} ewma"),
        }
    }
}

impl Scheme for SalsifyScheme {
    fn name(&self) -> &'static str {
        self.name
    }

    fn codec(&self) -> salsify_codec::FunctionalCodec {
        self.sender.codec
    }

    fn encode_jobs(&self) -> &'static [EncodeKind] {
        match self.sender.mode {
            // Before the first estimate it asks for the last quality, then for a size.
            SenderMode::ConventionalCodec => &[EncodeKind::Qualities, EncodeKind::SizeTarget],
            // Salsify's options, the conventional-transport ablation's one quality.
            _ => &[EncodeKind::Qualities],
        }
    }

    fn build_sender(
        &self,
        _source: &SourceInfo,
        connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let config = SenderConfig {
            connection_id,
            ..self.sender.clone()
        };
        let sender =
            SalsifySender::from_config(config, self.parallel).map_err(|e| invalid(SENDER)(&e))?;
        Ok(Box::new(sender.with_name(self.sender_name())))
    }

    fn build_receiver(
        &self,
        _source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        Ok(Box::new(
            SalsifyReceiver::from_config(self.receiver.clone())
                .map_err(|e| invalid(RECEIVER)(&e))?,
        ))
    }

    fn serves(&self, name: &str) -> bool {
        SCHEMES.iter().any(|s| s.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheme(name: &str) -> SalsifyScheme {
        FAMILY.scheme(name, &SchemeParams::default()).unwrap()
    }

    #[test]
    fn the_names_pick_their_rules_and_keep_the_rest() {
        let rules = |name| {
            let s = scheme(name);
            (s.sender.rules, s.parallel)
        };
        assert_eq!(rules("salsify-2c"), (SenderRules::SlowLink, true));
        assert_eq!(rules("salsify-1c"), (SenderRules::SlowLink, false));
        assert_eq!(rules("salsify-paper"), (SenderRules::Paper, true));
        let default = ReceiverConfig::default();
        // Salsify-2c budgets with the forecast (issue 35), so its receiver forecasts; the
        // paper's sender keeps the EWMA and a receiver that does not.
        assert_eq!(
            scheme("salsify-2c").receiver,
            ReceiverConfig {
                link_forecast: true,
                ..default.clone()
            }
        );
        assert_eq!(scheme("salsify-2c").sender.budget, BudgetSource::Forecast);
        assert_eq!(scheme("salsify-paper").sender.budget, BudgetSource::Ewma);
        assert_eq!(
            scheme("salsify-paper").receiver,
            default.clone().first_round()
        );
        assert_ne!(default.clone().first_round(), default);
        // The [salsify] table's other fields carry over; its rules are the name's.
        let mut params = SchemeParams::default();
        params.update(SENDER, |s: &mut SenderConfig| s.max_consecutive_skips = 3);
        let s = FAMILY.scheme("salsify-paper", &params).unwrap();
        assert_eq!(s.sender.max_consecutive_skips, 3);
        assert_eq!(s.sender.rules, SenderRules::Paper);
    }
}
