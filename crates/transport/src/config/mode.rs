//! Which sender runs: Salsify or one of the paper's ablations (`[salsify] mode`).

use salsify_time::Duration;
use serde::{Deserialize, Serialize};

use crate::serde_units::millis;

/// Which sender the paper's experiment 4 runs.
///
/// In TOML a lowercase name: `mode = "salsify"`, `mode = "conventional-codec"` or
/// `mode = "conventional-transport"` (quality updated every second, as in the paper); for
/// another update interval, the name as a table key:
/// `mode = { conventional-transport = { update_interval_ms = 500.0 } }`. Written back, the
/// conventional-transport mode always takes the table form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SenderMode {
    /// Salsify: two encodes per frame, the larger that fits is sent, else skip.
    #[default]
    Salsify,
    /// Ablation "conventional codec": the transport's budget becomes a size target before
    /// encoding ([`salsify_endpoint::EncodeJob::SizeTarget`]); one encode, always sent.
    ConventionalCodec,
    /// Ablation "conventional transport + codec": quality updated once per `update_interval`
    /// from the averaged rate, one encode per frame, every frame sent (like WebRTC).
    ConventionalTransport {
        /// How often the quality is updated (the paper: one second).
        #[serde(rename = "update_interval_ms", with = "millis")]
        update_interval: Duration,
    },
}

/// The paper's update interval of the conventional-transport ablation.
const CONVENTIONAL_UPDATE_INTERVAL: Duration = Duration::from_secs(1);

/// The mode names, as experiment files spell them.
const MODE_NAMES: &[&str] = &["salsify", "conventional-codec", "conventional-transport"];

/// The parameters of `{ conventional-transport = { ... } }`.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConventionalTransportParams {
    #[serde(rename = "update_interval_ms", with = "millis")]
    update_interval: Duration,
}

impl Default for ConventionalTransportParams {
    fn default() -> Self {
        ConventionalTransportParams {
            update_interval: CONVENTIONAL_UPDATE_INTERVAL,
        }
    }
}

/// Reads a name, or a one-key table naming the mode with its parameters (see [`SenderMode`]).
impl<'de> Deserialize<'de> for SenderMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ModeVisitor;

        impl<'de> serde::de::Visitor<'de> for ModeVisitor {
            type Value = SenderMode;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a sender mode: \"salsify\", \"conventional-codec\", \"conventional-transport\" \
                     or { conventional-transport = { update_interval_ms = ... } }",
                )
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<SenderMode, E> {
                match name {
                    "salsify" => Ok(SenderMode::Salsify),
                    "conventional-codec" => Ok(SenderMode::ConventionalCodec),
                    "conventional-transport" => Ok(SenderMode::ConventionalTransport {
                        update_interval: CONVENTIONAL_UPDATE_INTERVAL,
                    }),
                    other => Err(E::unknown_variant(other, MODE_NAMES)),
                }
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SenderMode, A::Error> {
                use serde::de::Error;
                let Some(name) = map.next_key::<String>()? else {
                    return Err(A::Error::invalid_length(0, &self));
                };
                let mode = match name.as_str() {
                    "conventional-transport" => {
                        let p: ConventionalTransportParams = map.next_value()?;
                        SenderMode::ConventionalTransport {
                            update_interval: p.update_interval,
                        }
                    }
                    "salsify" | "conventional-codec" => {
                        return Err(A::Error::custom(format!(
                            "mode {name:?} takes no parameters: write mode = {name:?}"
                        )))
                    }
                    other => return Err(A::Error::unknown_variant(other, MODE_NAMES)),
                };
                if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom("a table naming one mode"));
                }
                Ok(mode)
            }
        }

        d.deserialize_any(ModeVisitor)
    }
}
