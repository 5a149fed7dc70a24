//! Which address the link relay serves as the sender: the only one it forwards video from
//! and the only one it sends the receiver's datagrams to.
//!
//! The relay learns the sender from the first datagram, not from the receiver, that a
//! sender of some scheme could have sent (a Salsify fragment, a baseline's media or padding,
//! a Sprout data datagram, the call's audio, or a secure handshake or sealed datagram), and keeps it until it
//! has been silent for [`SenderRule::silence`]; or it is told the address
//! ([`SenderRule::fixed`]) and never changes. Anyone else's datagrams are counted and
//! dropped: they reach neither the link (whose capacity they would take from the call) nor
//! the receiver, and nobody else is ever sent the receiver's feedback. A stranger therefore
//! gets nothing from the relay unless the real sender falls silent for the whole silence
//! time while the stranger keeps sending.

use std::net::SocketAddr;

use salsify_time::{Duration, Instant};

/// The default of [`SenderRule::silence`]: above the sender's 2 s `--reset-after` and
/// Salsify's 2 s longest probe interval, so a live sender is never silent that long, and
/// short enough that a sender restarted on a new port is served again within it.
pub const DEFAULT_SENDER_SILENCE: Duration = Duration::from_secs(3);

/// How the relay chooses its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderRule {
    /// Serve this address only (`salsify link --sender`). Default: learned.
    pub fixed: Option<SocketAddr>,
    /// How long a learned sender must have been silent before another address may take its
    /// place. Default [`DEFAULT_SENDER_SILENCE`].
    pub silence: Duration,
    /// Learn only from a datagram of a protocol this project speaks. Default true; off for
    /// a relay in front of a black-box peer (WebRTC's STUN, DTLS and SRTP are not ours).
    pub known_protocols_only: bool,
}

impl Default for SenderRule {
    fn default() -> Self {
        SenderRule {
            fixed: None,
            silence: DEFAULT_SENDER_SILENCE,
            known_protocols_only: true,
        }
    }
}

/// The relay's sender, by [`SenderRule`]. Sans-IO: time is passed in.
#[derive(Debug, Clone)]
pub struct SenderLock {
    rule: SenderRule,
    /// The sender and when it was last heard.
    current: Option<(SocketAddr, Instant)>,
    /// Datagrams dropped as from another address.
    pub strangers: u64,
    /// Times a new address became the sender (the first included).
    pub learned: u64,
}

impl SenderLock {
    /// A lock following `rule`.
    pub fn new(rule: SenderRule) -> Self {
        SenderLock {
            current: rule.fixed.map(|a| (a, Instant::ZERO)),
            rule,
            strangers: 0,
            learned: 0,
        }
    }

    /// The sender, once known.
    pub fn sender(&self) -> Option<SocketAddr> {
        self.current.map(|(a, _)| a)
    }

    /// A datagram from `from` (not the receiver) at `now`: true if it is the sender's and
    /// is to be forwarded; false if it is a stranger's (counted).
    pub fn admit(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        if let Some((addr, last)) = &mut self.current {
            if *addr == from {
                *last = now.max(*last);
                return true;
            }
        }
        let vacant = self.rule.fixed.is_none()
            && self
                .current
                .is_none_or(|(_, last)| now.saturating_duration_since(last) >= self.rule.silence);
        if vacant && (!self.rule.known_protocols_only || from_a_sender(bytes)) {
            self.current = Some((from, now));
            self.learned += 1;
            return true;
        }
        self.strangers += 1;
        false
    }
}

/// Whether `bytes` is a datagram a sender of some scheme sends (see the module docs).
pub fn from_a_sender(bytes: &[u8]) -> bool {
    if let Ok(p) = salsify_secure::wire::parse(bytes) {
        return matches!(
            p,
            salsify_secure::wire::Packet::Init { .. } | salsify_secure::wire::Packet::Data { .. }
        );
    }
    salsify_schemes::registry::from_a_sender(bytes) || salsify_audio::AudioPacket::is_audio(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn padding() -> Vec<u8> {
        salsify_baselines::wire::Packet::Padding {
            transport_seq: 1,
            len: 40,
        }
        .emit()
        .unwrap()
    }

    /// The probe's flood: once a sender is learned, another address gets nothing through
    /// while the sender keeps talking, however much it sends; after the sender's silence
    /// it may take over.
    #[test]
    fn the_first_valid_sender_is_kept_until_it_falls_silent() {
        let mut lock = SenderLock::new(SenderRule::default());
        assert!(
            !lock.admit(at(0), addr(9), b"garbage"),
            "not a sender's datagram"
        );
        assert_eq!(lock.sender(), None);
        assert!(lock.admit(at(1), addr(1), &padding()));
        for t in (2..10_000).step_by(5) {
            assert!(!lock.admit(at(t), addr(2), &padding()));
            if t % 1000 == 2 {
                assert!(lock.admit(at(t), addr(1), b"anything from the sender"));
            }
        }
        assert_eq!(lock.sender(), Some(addr(1)));
        let last = 9002;
        assert!(!lock.admit(at(last + 2999), addr(2), &padding()));
        assert!(lock.admit(at(last + 3000), addr(2), &padding()));
        assert_eq!((lock.sender(), lock.learned), (Some(addr(2)), 2));
        assert!(!lock.admit(at(last + 3001), addr(1), &padding()));
    }

    #[test]
    fn a_fixed_sender_never_changes_and_any_protocol_may_be_learned_when_asked() {
        let mut lock = SenderLock::new(SenderRule {
            fixed: Some(addr(1)),
            ..SenderRule::default()
        });
        assert_eq!(lock.sender(), Some(addr(1)));
        assert!(!lock.admit(at(100_000), addr(2), &padding()));
        assert!(lock.admit(at(100_001), addr(1), b"x"));
        let mut lock = SenderLock::new(SenderRule {
            known_protocols_only: false,
            ..SenderRule::default()
        });
        assert!(lock.admit(at(0), addr(5), b"stun"));
        assert_eq!(lock.strangers, 0);
    }

    #[test]
    fn sender_datagrams_of_every_family_are_told_from_feedback() {
        assert!(from_a_sender(&padding()));
        let pli = salsify_baselines::wire::Packet::Pli.emit().unwrap();
        assert!(!from_a_sender(&pli));
        assert!(!from_a_sender(&[]));
        assert!(!from_a_sender(&[1, 2, 0, 0]));
        // The call's audio is the sender's too (a plaintext call may start with it).
        let audio = salsify_audio::AudioPacket {
            seq: 0,
            frame: 0,
            captured: at(20),
            payload: vec![0x48; 60],
        };
        assert!(from_a_sender(&audio.encode()));
    }
}
