//! The baselines' own counters, beyond the [`salsify_endpoint::SenderStats`] and
//! [`salsify_endpoint::ReceiverStats`] every scheme reports.

use salsify_codec::Quality;
use salsify_endpoint::{ReceiverStats, SenderStats};
use salsify_time::Bitrate;

/// Counters of a baseline sender.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SenderCounters {
    /// Pictures offered.
    pub pictures: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Keyframes sent.
    pub keyframes: u64,
    /// Pictures not sent.
    pub dropped: u64,
    /// Media packets sent (first transmissions).
    pub media_packets: u64,
    /// Retransmitted packets.
    pub retransmissions: u64,
    /// Padding packets.
    pub padding_packets: u64,
    /// Bytes of padding.
    pub padding_bytes: u64,
    /// Keyframe requests received.
    pub plis: u64,
    /// NACKed sequence numbers received.
    pub nacked: u64,
    /// Feedback datagrams used.
    pub feedback: u64,
    /// Datagrams that failed to parse or were of an unexpected kind.
    pub bad_datagrams: u64,
    /// Encoder pauses (Vidaptive).
    pub pauses: u64,
    /// Encoder resets (Vidaptive).
    pub resets: u64,
    /// The scheme's encoder target last computed (GCC's target, alpha x CC-Rate), before the
    /// 10 % deadband ([`crate::deadband_passes`]).
    pub target: Bitrate,
    /// Quantizer of the last frame sent.
    pub quality: Option<Quality>,
}

impl SenderCounters {
    /// The counters every scheme shares; `target` as the scheme reports it (`None`: not a
    /// rate-based scheme).
    pub fn common(&self, target: Option<Bitrate>) -> SenderStats {
        SenderStats {
            pictures: self.pictures,
            frames_sent: self.frames_sent,
            keyframes: self.keyframes,
            dropped: self.dropped,
            datagrams_sent: self.media_packets + self.retransmissions + self.padding_packets,
            feedback: self.feedback,
            bad_datagrams: self.bad_datagrams,
            recoveries: self.plis,
            target,
            quality: self.quality,
            ..SenderStats::default()
        }
    }
}

/// Counters of the baseline receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverCounters {
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams that failed to parse or were of an unexpected kind.
    pub bad_datagrams: u64,
    /// Complete frames handed to the decoder.
    pub frames: u64,
    /// Frames decoded and shown.
    pub frames_displayed: u64,
    /// Frames that failed to decode.
    pub decode_failures: u64,
    /// Frames given up on.
    pub frames_lost: u64,
    /// Sequence numbers NACKed (each retry counts).
    pub nacks: u64,
    /// Keyframe requests sent.
    pub plis: u64,
    /// Transport feedback datagrams sent.
    pub feedback: u64,
    /// Datagrams sent to the sender (feedback, NACK, PLI).
    pub datagrams_sent: u64,
    /// Retransmissions that filled a hole.
    pub recovered: u64,
    /// Datagrams dropped as outside the receiver's windows or reassembly limits (counted
    /// in `bad_datagrams` too).
    pub out_of_window: u64,
}

impl ReceiverCounters {
    /// The counters every receiver shares.
    pub fn common(&self) -> ReceiverStats {
        ReceiverStats {
            datagrams: self.datagrams,
            bad_datagrams: self.bad_datagrams,
            frames_displayed: self.frames_displayed,
            frames_lost: self.frames_lost,
            decode_failures: self.decode_failures,
            feedback_sent: self.datagrams_sent,
            ..ReceiverStats::default()
        }
    }
}
