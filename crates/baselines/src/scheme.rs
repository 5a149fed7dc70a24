//! Which baseline scheme a sender runs, as named in experiment files and on the wire.

use salsify_time::Duration;

use crate::gcc::GccConfig;
use crate::receiver::ReceiverConfig;

/// The conventional scheme's transport-feedback period: 50 ms. libwebrtc's receiver adapts
/// it to 5 % of its own send-side target, `68 bytes / (0.05 x target)` clamped to
/// 50..=250 ms (`RemoteEstimatorProxy::OnBitrateChanged`, modules/remote_bitrate_estimator/
/// remote_estimator_proxy.cc; `TransportSequenceNumberFeedbackGenenerator` in newer
/// revisions), which is 50 ms at any target above 218 kb/s. A one-way receiver has no
/// send-side target of its own, so the testbed's receiver uses that floor.
pub const CONVENTIONAL_FEEDBACK_INTERVAL: Duration = Duration::from_millis(50);

/// A baseline scheme. Every media datagram carries it (byte 19, see [`crate::wire`]), so a
/// receiver learns from the first one which scheme it serves ([`crate::wire::scheme_of`])
/// and so which feedback that scheme needs ([`Scheme::feedback_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// WebRTC: libwebrtc's GoogCC (the `goog_cc` port) and video sender, libvpx CBR
    /// ([`crate::WebrtcSender`]).
    Conventional,
    /// The earlier hand-written GCC + libvpx CBR ([`crate::GccSender`]), kept for comparison.
    ConventionalLegacy,
    /// Vidaptive-style: Copa + padding + pause/reset + alpha ([`crate::VidaptiveSender`]).
    Vidaptive,
    /// The oracle ([`crate::OracleSender`]).
    Oracle,
}

impl Scheme {
    /// Every scheme.
    pub const ALL: [Scheme; 4] = [
        Scheme::Conventional,
        Scheme::ConventionalLegacy,
        Scheme::Vidaptive,
        Scheme::Oracle,
    ];

    /// Its name in experiment files (and `SenderEndpoint::scheme`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Conventional => "conventional",
            Scheme::ConventionalLegacy => "conventional-legacy",
            Scheme::Vidaptive => "vidaptive",
            Scheme::Oracle => "oracle",
        }
    }

    /// The scheme called `name`.
    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Its code in a media header's byte 19.
    pub fn wire_id(self) -> u8 {
        match self {
            Scheme::Conventional => 1,
            Scheme::ConventionalLegacy => 4,
            Scheme::Vidaptive => 2,
            Scheme::Oracle => 3,
        }
    }

    /// The scheme with wire code `id`.
    pub fn from_wire_id(id: u8) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.wire_id() == id)
    }

    /// The receiver feedback period the scheme's sender needs with default parameters:
    /// [`CONVENTIONAL_FEEDBACK_INTERVAL`] for the conventional scheme; the legacy GCC's
    /// [`GccConfig::feedback_interval`]; `None` (a report after every packet) for
    /// Vidaptive, whose Copa needs an ACK per packet; the default for the oracle (which
    /// ignores feedback).
    pub fn feedback_interval(self) -> Option<Duration> {
        match self {
            Scheme::Conventional => Some(CONVENTIONAL_FEEDBACK_INTERVAL),
            Scheme::ConventionalLegacy => Some(GccConfig::default().feedback_interval),
            Scheme::Vidaptive => None,
            Scheme::Oracle => ReceiverConfig::default().feedback_interval,
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_wire_ids_round_trip() {
        for s in Scheme::ALL {
            assert_eq!(Scheme::from_name(s.name()), Some(s));
            assert_eq!(Scheme::from_wire_id(s.wire_id()), Some(s));
        }
        assert_eq!(Scheme::from_wire_id(0), None);
        assert_eq!(Scheme::from_name("webrtc"), None);
        assert_eq!(
            Scheme::Conventional.feedback_interval(),
            Some(Duration::from_millis(50))
        );
        assert_eq!(
            Scheme::ConventionalLegacy.feedback_interval(),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            Scheme::from_name("conventional-legacy"),
            Some(Scheme::ConventionalLegacy)
        );
        assert_eq!(Scheme::Vidaptive.feedback_interval(), None);
    }
}
