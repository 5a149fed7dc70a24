//! Which baseline scheme a sender runs, as named in experiment files and on the wire.

use salsify_time::{Bitrate, Duration};

use crate::receiver_config::ReceiverConfig;

/// The shortest transport-feedback period (`kMinInterval`, remote_estimator_proxy.cc).
pub const TWCC_MIN_INTERVAL: Duration = Duration::from_millis(50);
/// The longest transport-feedback period (`kMaxInterval`).
pub const TWCC_MAX_INTERVAL: Duration = Duration::from_millis(250);
/// The period before the receiver has been told any bitrate (`kDefaultInterval`).
pub const TWCC_DEFAULT_INTERVAL: Duration = Duration::from_millis(100);
/// The feedback size the period is computed for: IPv4 20 + UDP 8 + SRTP 10 + an average
/// report of 30 bytes (`kTwccReportSize`).
pub const TWCC_REPORT_BYTES: u64 = 20 + 8 + 10 + 30;

/// The send-side target of a receiver that only receives: its controller starts at
/// libwebrtc's default start rate (300 kb/s, `kDefaultStartBitrateBps`, the conventional
/// sender's [`crate::ConventionalConfig::start`] default) and, sending nothing with
/// transport sequence numbers, never gets feedback that would move it.
pub const RECEIVE_ONLY_SEND_TARGET: Bitrate = Bitrate::kbps(300);

/// libwebrtc's transport-feedback period for a receiver whose own send-side target is
/// `own_target` (`RemoteEstimatorProxy::OnBitrateChanged`, modules/remote_bitrate_estimator/
/// remote_estimator_proxy.cc; `Call::OnTargetTransferRate` passes it the call's own
/// send-side target): the period in which a 68-byte report uses 5 % of that rate, at least
/// 50 ms, 250 ms when 5 % of the rate is at most 68 bytes per 250 ms (which also covers a zero
/// rate); 100 ms before any rate is known (`None`).
///
/// libwebrtc never uses the remote sender's rate here: the period follows what the
/// receiver itself sends. A receiver that only receives keeps its controller's start rate
/// ([`RECEIVE_ONLY_SEND_TARGET`]), so it reports every 50 ms.
pub fn twcc_feedback_interval(own_target: Option<Bitrate>) -> Duration {
    let Some(rate) = own_target else {
        return TWCC_DEFAULT_INTERVAL;
    };
    let report_bits = TWCC_REPORT_BYTES * 8;
    // 5 % of the rate against the smallest rate that needs no more than kMaxInterval,
    // compared in integers: 0.05 x bps <= bits / 0.25 s  <=>  bps <= 80 x bits.
    if rate.as_bps() <= 80 * report_bits {
        return TWCC_MAX_INTERVAL;
    }
    // bits / (0.05 x bps) seconds = 20 x bits x 1e6 / bps microseconds.
    let micros = 20 * report_bits * 1_000_000 / rate.as_bps();
    Duration::from_micros(micros).max(TWCC_MIN_INTERVAL)
}

/// A baseline scheme. Every media datagram carries it (byte 19, see [`crate::wire`]), so a
/// receiver learns from the first one which scheme it serves ([`crate::wire::scheme_of`])
/// and so which feedback that scheme needs ([`WireId::feedback_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireId {
    /// WebRTC: libwebrtc's GoogCC (the `goog_cc` port) and video sender, libvpx CBR
    /// ([`crate::WebrtcSender`]).
    Conventional,
    /// Vidaptive-style: Copa + padding + pause/reset + alpha ([`crate::VidaptiveSender`]).
    Vidaptive,
    /// The oracle ([`crate::OracleSender`]).
    Oracle,
    /// A rate controller plugged into [`crate::RateSender`] (a scheme family outside the
    /// built-in ones), numbered by its family (0-127; wire code 128 + the number).
    Plugin(u8),
}

impl WireId {
    /// Every scheme.
    pub const ALL: [WireId; 3] = [WireId::Conventional, WireId::Vidaptive, WireId::Oracle];

    /// Its name in experiment files (and `SenderEndpoint::scheme`).
    pub fn name(self) -> &'static str {
        match self {
            WireId::Conventional => "conventional",
            WireId::Vidaptive => "vidaptive",
            WireId::Oracle => "oracle",
            WireId::Plugin(_) => "plugin",
        }
    }

    /// The scheme called `name`.
    pub fn from_name(name: &str) -> Option<WireId> {
        WireId::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Its code in a media header's byte 19. Code 4 belonged to a retired scheme (the
    /// hand-written GCC that libwebrtc's controller replaced) and is now unknown, like 0.
    pub fn wire_id(self) -> u8 {
        match self {
            WireId::Conventional => 1,
            WireId::Vidaptive => 2,
            WireId::Oracle => 3,
            WireId::Plugin(n) => 128 | (n & 127),
        }
    }

    /// The scheme with wire code `id`.
    pub fn from_wire_id(id: u8) -> Option<WireId> {
        match id {
            128.. => Some(WireId::Plugin(id & 127)),
            _ => WireId::ALL.into_iter().find(|s| s.wire_id() == id),
        }
    }

    /// The receiver feedback period the scheme's sender needs with default parameters:
    /// libwebrtc's period for a receiver that only receives for the conventional scheme
    /// ([`twcc_feedback_interval`] of [`RECEIVE_ONLY_SEND_TARGET`], 50 ms); `None` (a report after every packet) for
    /// Vidaptive, whose Copa needs an ACK per packet; the default for the oracle (which
    /// ignores feedback).
    pub fn feedback_interval(self) -> Option<Duration> {
        match self {
            WireId::Conventional => Some(twcc_feedback_interval(Some(RECEIVE_ONLY_SEND_TARGET))),
            WireId::Vidaptive => None,
            WireId::Oracle | WireId::Plugin(_) => ReceiverConfig::default().feedback_interval,
        }
    }
}

impl ReceiverConfig {
    /// The defaults with the feedback `scheme` needs ([`WireId::feedback_interval`]).
    pub fn for_scheme(scheme: WireId) -> Self {
        ReceiverConfig {
            feedback_interval: scheme.feedback_interval(),
            ..ReceiverConfig::default()
        }
    }
}

impl std::fmt::Display for WireId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_wire_ids_round_trip() {
        for s in WireId::ALL {
            assert_eq!(WireId::from_name(s.name()), Some(s));
            assert_eq!(WireId::from_wire_id(s.wire_id()), Some(s));
        }
        assert_eq!(WireId::from_wire_id(0), None);
        assert_eq!(WireId::from_wire_id(130), Some(WireId::Plugin(2)));
        assert_eq!(WireId::Plugin(2).wire_id(), 130);
        assert_eq!(WireId::from_name("webrtc"), None);
        assert_eq!(
            WireId::Conventional.feedback_interval(),
            Some(Duration::from_millis(50))
        );
        // The retired hand-written GCC's code is no scheme's any more.
        assert_eq!(WireId::from_wire_id(4), None);
        assert_eq!(WireId::Vidaptive.feedback_interval(), None);
    }

    #[test]
    fn twcc_feedback_interval_follows_remote_estimator_proxy() {
        let at = |kbps: u64| twcc_feedback_interval(Some(Bitrate::kbps(kbps)));
        // No rate yet: kDefaultInterval.
        assert_eq!(twcc_feedback_interval(None), Duration::from_millis(100));
        // 544 bits / (5 % of the rate), within 50..=250 ms.
        assert_eq!(at(100), Duration::from_micros(108_800));
        assert_eq!(at(50), Duration::from_micros(217_600));
        assert_eq!(at(217), Duration::from_micros(50_138));
        assert_eq!(at(218), Duration::from_millis(50));
        assert_eq!(at(300), Duration::from_millis(50));
        assert_eq!(at(20_000), Duration::from_millis(50));
        // At or below 43.52 kb/s (and at zero) the report would exceed 5 %: kMaxInterval.
        assert_eq!(
            twcc_feedback_interval(Some(Bitrate::bps(43_520))),
            Duration::from_millis(250)
        );
        assert_eq!(
            twcc_feedback_interval(Some(Bitrate::bps(43_521))),
            Duration::from_micros(249_994)
        );
        assert_eq!(at(0), Duration::from_millis(250));
        // Monotone: a higher own rate never reports less often.
        let mut last = Duration::MAX;
        for kbps in 0..400 {
            assert!(at(kbps) <= last, "{kbps}");
            last = at(kbps);
        }
        // A receive-only endpoint keeps its start rate and the sender's default matches it.
        assert_eq!(
            RECEIVE_ONLY_SEND_TARGET,
            crate::ConventionalConfig::default().start
        );
        assert_eq!(
            WireId::Conventional.feedback_interval(),
            Some(twcc_feedback_interval(Some(RECEIVE_ONLY_SEND_TARGET)))
        );
    }
}
