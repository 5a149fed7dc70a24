//! Headless Chromium's WebRTC, driven by `salsify-peer` in the evaluation's live cells: a
//! scheme in matrices and figures, but never run by our endpoints or the simulator.

use crate::error::SchemeError;
use crate::family::{Family, Marker, PeerCodec, SchemeRole, Runs, SchemeConfig, SchemeInfo};
use crate::params::SchemeParams;

/// The family.
pub(crate) static FAMILY: Chromium = Chromium;

/// Chromium's family.
pub struct Chromium;

static SCHEMES: [SchemeInfo; 4] = [
    SchemeInfo {
        name: "chromium-vp8",
        about: "headless Chromium's WebRTC with VP8 (live cells only)",
        runs: Runs::Peer(PeerCodec::Vp8),
        sends_video: true,
        color: "#CC79A7",
        marker: Marker::TriangleDown,
        roles: &[(SchemeRole::Live, 0)],
    },
    SchemeInfo {
        name: "chromium-vp9-svc",
        about: "headless Chromium's WebRTC with VP9 SVC (live cells only)",
        runs: Runs::Peer(PeerCodec::Vp9Svc),
        sends_video: true,
        color: "#E69F00",
        marker: Marker::Plus,
        roles: &[(SchemeRole::Live, 1)],
    },
    SchemeInfo {
        name: "chromium-av1",
        about: "headless Chromium's WebRTC with AV1 (live cells only)",
        runs: Runs::Peer(PeerCodec::Av1),
        sends_video: true,
        color: "#8C564B",
        marker: Marker::Cross,
        roles: &[],
    },
    SchemeInfo {
        name: "chromium-h264",
        about: "headless Chromium's WebRTC with H.264 (live cells only)",
        runs: Runs::Peer(PeerCodec::H264),
        sends_video: true,
        color: "#17BECF",
        marker: Marker::Hexagon,
        roles: &[],
    },
];

impl Family for Chromium {
    fn id(&self) -> &'static str {
        "chromium"
    }

    fn schemes(&self) -> &'static [SchemeInfo] {
        &SCHEMES
    }

    fn configure(&self, name: &str, _params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        let info = SCHEMES.iter().find(|s| s.name == name);
        Err(info.map_or_else(
            || SchemeError::Unknown(name.into(), "a browser peer".into()),
            |s| SchemeError::PeerOnly(s.name),
        ))
    }
}
