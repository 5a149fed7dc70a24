//! What a TURN client and a STUN binding are told: the server, the credentials, and how patiently
//! to repeat a request that gets no answer.

use std::net::SocketAddr;

use salsify_time::Duration;

/// How a request that gets no answer is sent again (RFC 8489 section 6.2.1): the first wait is
/// `initial`, each next one doubles (at most `max`), `sends` in all, then `last_wait` for a late
/// answer before giving up. UDP loses requests; this is what tells "lost" from "no server".
///
/// Values are clamped where the protocol crates would overflow: `sends` to 1..=10, `initial` to
/// 1 ms..=10 s, `max` and `last_wait` to at most an hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retransmits {
    /// The first wait (RFC 8489's RTO: 500 ms when the round trip is unknown).
    pub initial: Duration,
    /// The longest wait between two sends (RFC 8489 sets none).
    pub max: Duration,
    /// Sends of one request in all (Rc: 7).
    pub sends: u32,
    /// The wait after the last send (Rm × RTO: 16 × 500 ms = 8 s).
    pub last_wait: Duration,
}

impl Default for Retransmits {
    /// RFC 8489's: sends at 0, 0.5, 1.5, 3.5, 7.5, 15.5 and 31.5 s, gives up at 39.5 s.
    fn default() -> Self {
        Retransmits {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(3600),
            sends: 7,
            last_wait: Duration::from_secs(8),
        }
    }
}

impl Retransmits {
    /// Gives up within `bound` (about): RFC 8489's doubling from 500 ms, with as many sends as
    /// fit and the last wait cut to fit. For a call that would rather fall back than wait 39.5 s.
    pub fn within(bound: Duration) -> Self {
        let mut r = Retransmits {
            sends: 1,
            ..Retransmits::default()
        };
        // Send k (from 0) goes at initial × (2^k − 1); one more fits if an RTO is left after it.
        while r.sends < 7 && r.initial * ((1u32 << r.sends) - 1) + r.initial <= bound {
            r.sends += 1;
        }
        let last_send = r.initial * ((1u32 << (r.sends - 1)) - 1);
        r.last_wait = bound
            .saturating_sub(last_send)
            .min(Retransmits::default().last_wait);
        r
    }

    /// The values the protocol crates accept without overflow.
    pub(crate) fn clamped(self) -> Self {
        let hour = Duration::from_secs(3600);
        let initial = self
            .initial
            .clamp(Duration::from_millis(1), Duration::from_secs(10));
        Retransmits {
            initial,
            max: self.max.clamp(initial, hour),
            sends: self.sends.clamp(1, 10),
            last_wait: self.last_wait.min(hour),
        }
    }
}

/// A TURN server and the long-term credentials the client allocates with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnConfig {
    /// The server's UDP address (coturn listens on 3478).
    pub server: SocketAddr,
    /// The user name (ASCII: it is not SASLprep'd).
    pub username: String,
    /// The password (ASCII: it is not SASLprep'd); the key is MD5(user:realm:password).
    pub password: String,
    /// How requests (Allocate, Refresh, CreatePermission, ChannelBind) are repeated.
    pub retransmits: Retransmits,
}

impl TurnConfig {
    /// A server and credentials, with RFC 8489's retransmits.
    pub fn new(
        server: SocketAddr,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        TurnConfig {
            server,
            username: username.into(),
            password: password.into(),
            retransmits: Retransmits::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The times of a request's sends and when it gives up.
    fn schedule(r: Retransmits) -> (Vec<Duration>, Duration) {
        let mut at = Duration::ZERO;
        let mut sends = vec![];
        for i in 0..r.sends {
            sends.push(at);
            if i + 1 < r.sends {
                at += (r.initial * (1u32 << i)).min(r.max);
            }
        }
        (sends, at + r.last_wait)
    }

    #[test]
    fn default_is_rfc8489() {
        let (sends, give_up) = schedule(Retransmits::default());
        let ms: Vec<u128> = sends.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, [0, 500, 1500, 3500, 7500, 15500, 31500]);
        assert_eq!(give_up, Duration::from_millis(39_500));
    }

    #[test]
    fn within_gives_up_by_the_bound() {
        for secs in [1, 2, 3, 5, 10, 20, 39, 60] {
            let bound = Duration::from_secs(secs);
            let r = Retransmits::within(bound);
            let (sends, give_up) = schedule(r);
            assert!(give_up <= bound, "{secs}s: {r:?} gives up at {give_up:?}");
            assert!(give_up + Duration::from_secs(4) >= bound.min(Duration::from_millis(39_500)));
            assert!(sends.len() >= 2, "{secs}s: {r:?}");
            assert_eq!(r, r.clamped());
        }
        assert_eq!(
            Retransmits::within(Duration::from_secs(60)),
            Retransmits::default()
        );
        assert_eq!(Retransmits::within(Duration::from_millis(100)).sends, 1);
    }

    #[test]
    fn clamps_what_would_overflow() {
        let wild = Retransmits {
            initial: Duration::MAX,
            max: Duration::ZERO,
            sends: u32::MAX,
            last_wait: Duration::MAX,
        }
        .clamped();
        assert_eq!(wild.sends, 10);
        assert_eq!(wild.initial, Duration::from_secs(10));
        assert!(wild.max >= wild.initial);
        assert_eq!(wild.last_wait, Duration::from_secs(3600));
    }
}
