//! Live cells of the matrix: what a group marked `live = true` may run and what each live
//! run records beyond a simulated run's. Running them (sockets, threads, the browser) is the
//! command's business; this module only names and checks.
//!
//! A live group's systems are our schemes that run over UDP (every scheme but the oracle,
//! which reads the link's future) and Chromium's own WebRTC with one codec each:
//!
//! - `chromium-vp8`: VP8, Chrome's defaults;
//! - `chromium-vp9-svc`: VP9 with `scalabilityMode` [`VP9_SVC_MODE`] (why that mode: see
//!   the constant);
//! - `chromium-av1`: AV1, only where this Chromium offers it for WebRTC (the call refuses
//!   with the codecs it does offer otherwise).

use serde::{Deserialize, Serialize};

use crate::experiment::SCHEMES;

/// The Chromium systems a live group can name.
pub const CHROMIUM_SYSTEMS: &[&str] = &["chromium-vp8", "chromium-vp9-svc", "chromium-av1"];

/// The VP9 scalability mode of `chromium-vp9-svc`: three spatial and three temporal layers,
/// spatial layers predicting from each other only on keyframes ("k-SVC"). It is the mode
/// Chrome's own conferencing uses for VP9 SVC, so it stands for the paper's "WebRTC
/// (VP9-SVC)"; L1T3 would be temporal layers only, which VP8 can do too, and full L3T3
/// (inter-layer prediction on every frame) costs the receiver of all layers more bits for
/// no gain in a two-party call, where no server drops layers.
pub const VP9_SVC_MODE: &str = "L3T3_KEY";

/// Schemes that exist only in the simulator.
const SIMULATOR_ONLY: &[&str] = &["oracle"];

/// How a live cell runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveSystem {
    /// Headless Chromium's WebRTC with this codec.
    Chromium(ChromiumCodec),
    /// One of our schemes over UDP through the link relay.
    Scheme(String),
}

/// Chromium's video codec in a live cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChromiumCodec {
    /// VP8.
    Vp8,
    /// VP9 with [`VP9_SVC_MODE`].
    Vp9Svc,
    /// AV1.
    Av1,
}

impl ChromiumCodec {
    /// The codec's MIME type in `RTCRtpSender.getCapabilities`.
    pub fn mime_type(self) -> &'static str {
        match self {
            ChromiumCodec::Vp8 => "video/VP8",
            ChromiumCodec::Vp9Svc => "video/VP9",
            ChromiumCodec::Av1 => "video/AV1",
        }
    }

    /// The encoding's `scalabilityMode`, if one is set.
    pub fn scalability_mode(self) -> Option<&'static str> {
        match self {
            ChromiumCodec::Vp9Svc => Some(VP9_SVC_MODE),
            _ => None,
        }
    }
}

impl LiveSystem {
    /// The live system a group's scheme name stands for, or why it cannot run live.
    pub fn parse(name: &str) -> Result<LiveSystem, String> {
        match name {
            "chromium-vp8" => Ok(LiveSystem::Chromium(ChromiumCodec::Vp8)),
            "chromium-vp9-svc" => Ok(LiveSystem::Chromium(ChromiumCodec::Vp9Svc)),
            "chromium-av1" => Ok(LiveSystem::Chromium(ChromiumCodec::Av1)),
            s if SIMULATOR_ONLY.contains(&s) => Err(format!(
                "'{s}' runs only in the simulator (it reads the link's future), not live"
            )),
            s if SCHEMES.contains(&s) => Ok(LiveSystem::Scheme(s.to_string())),
            s => Err(format!(
                "unknown live system '{s}'; one of {}, or a scheme: {}",
                CHROMIUM_SYSTEMS.join(", "),
                SCHEMES
                    .iter()
                    .filter(|s| !SIMULATOR_ONLY.contains(s))
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// What a live cell records in its `run.json` beyond a simulated run's facts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveFacts {
    /// The 1-minute load average just before the cell started: live figures depend on how
    /// busy the machine was, so each run says.
    pub load_before: f64,
    /// ... and just after it ended.
    pub load_after: f64,
    /// Presented pictures whose barcode matched their source picture, of all presented.
    pub pictures_matched: (u64, u64),
    /// What ran: Chromium's version line, or our scheme's name.
    pub system: String,
}

/// The 1-minute load average from `/proc/loadavg`'s text.
pub fn parse_load_average(text: &str) -> Result<f64, String> {
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("'{}' is not a load average line", text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_systems_parse_and_the_oracle_is_refused() {
        assert_eq!(
            LiveSystem::parse("chromium-vp9-svc"),
            Ok(LiveSystem::Chromium(ChromiumCodec::Vp9Svc))
        );
        assert_eq!(
            LiveSystem::parse("salsify-2c"),
            Ok(LiveSystem::Scheme("salsify-2c".into()))
        );
        let e = LiveSystem::parse("oracle").unwrap_err();
        assert!(e.contains("only in the simulator"), "{e}");
        let e = LiveSystem::parse("skype").unwrap_err();
        assert!(
            e.contains("chromium-vp8") && e.contains("conventional"),
            "{e}"
        );
        assert!(!e.contains("oracle"), "{e}");
        assert_eq!(ChromiumCodec::Vp9Svc.scalability_mode(), Some("L3T3_KEY"));
        assert_eq!(ChromiumCodec::Av1.mime_type(), "video/AV1");
    }

    #[test]
    fn load_averages_parse() {
        assert_eq!(parse_load_average("0.29 1.35 2.19 1/81 6056\n"), Ok(0.29));
        assert!(parse_load_average("").is_err());
        assert!(parse_load_average("x 1 2").is_err());
    }
}
