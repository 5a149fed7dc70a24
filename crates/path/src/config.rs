//! The path's parameters, with their defaults.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use salsify_time::Duration;

/// Parameters of a [`crate::Path`]. Sizes are UDP payload bytes (what a socket sends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathConfig {
    /// The size every path is assumed to carry: 1200 bytes, which fits the IPv6 minimum MTU
    /// of 1280 with its 40-byte IP and 8-byte UDP headers (RFC 8899's BASE_PLPMTU for QUIC).
    pub base_datagram: usize,
    /// The largest size searched for: 1472 (a 1500-byte Ethernet MTU less IPv4 and UDP
    /// headers); an IPv6 path uses 20 bytes less (see [`PathConfig::for_ipv6`]).
    pub max_datagram: usize,
    /// A search ends when the sizes known to pass and to fail are this close.
    pub search_step: usize,
    /// Probes of one size sent before the size is taken to fail (RFC 8899's MAX_PROBES, 3).
    pub max_probes: u32,
    /// Time to wait for a probe's acknowledgement before the first round trip is measured
    /// (then twice the smoothed round trip plus [`PathConfig::report_every`], within
    /// [`PathConfig::min_probe_wait`] and this). Default 500 ms.
    pub probe_wait: Duration,
    /// Shortest probe wait. Default 100 ms.
    pub min_probe_wait: Duration,
    /// After a search ends, when to search above the size found again (a path can grow).
    /// Default 60 s.
    pub raise_after: Duration,
    /// Datagrams above the base sent (and due) since the peer last reported one arriving,
    /// while smaller ones still arrive, that make a black hole. Default 4.
    pub black_hole_losses: usize,
    /// How often a side that is receiving reports what arrived (the sender's black-hole
    /// detector reads it). Default 100 ms.
    pub report_every: Duration,
    /// Send a keep-alive after this long without sending anything to the peer, well inside
    /// the 30 s many NATs keep a quiet UDP mapping. Default 10 s.
    pub keepalive_after: Duration,
    /// Until a new address answers a challenge, it gets at most this many times the bytes
    /// received from it (QUIC's anti-amplification factor, 3).
    pub amplification: u64,
    /// A challenge is sent again after this long without an answer. Default 200 ms.
    pub challenge_every: Duration,
    /// Challenges sent before a new address is given up on. Default 5.
    pub challenge_tries: u32,
    /// An address given up on (its challenges unanswered, or the peer's own newer datagram
    /// came from where it was) is not challenged again for this long, twice as long each
    /// time after, up to [`PathConfig::max_rechallenge_after`]: a stranger who copies the
    /// peer's datagrams and wins the race with some draws a few challenges, not one for
    /// each. Default 1 s (a validation's 5 tries).
    pub rechallenge_after: Duration,
    /// The longest wait of [`PathConfig::rechallenge_after`]. Default 16 s.
    pub max_rechallenge_after: Duration,
    /// Plaintext listener: how long the peer must have been silent before another address
    /// may take its place (the receiver's takeover rule). Default 500 ms.
    pub takeover_after: Duration,
    /// Bytes a secure layer adds to each datagram (probes are padded so the sealed datagram
    /// has the probed size). 0 for plaintext.
    pub seal_overhead: usize,
    /// Seeds what the path draws at random (challenge tokens, probe ids). Default 0; the
    /// runtime draws one from the OS for each call, and the same seed and inputs replay a
    /// path's datagrams exactly (tests, replays).
    pub seed: u64,
}

impl Default for PathConfig {
    fn default() -> Self {
        PathConfig {
            base_datagram: 1200,
            max_datagram: 1472,
            search_step: 8,
            max_probes: 3,
            probe_wait: Duration::from_millis(500),
            min_probe_wait: Duration::from_millis(100),
            raise_after: Duration::from_secs(60),
            black_hole_losses: 4,
            report_every: Duration::from_millis(100),
            keepalive_after: Duration::from_secs(10),
            amplification: 3,
            challenge_every: Duration::from_millis(200),
            challenge_tries: 5,
            rechallenge_after: Duration::from_secs(1),
            max_rechallenge_after: Duration::from_secs(16),
            takeover_after: Duration::from_millis(500),
            seal_overhead: 0,
            seed: 0,
        }
    }
}

impl PathConfig {
    /// The random stream of one part of the path (the peer tracker's tokens, the prober's
    /// ids), from [`PathConfig::seed`]: each part draws its own.
    pub(crate) fn rng(&self, stream: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(stream);
        rng
    }

    /// The defaults for an IPv6 path: the largest size 20 bytes less (a 40-byte IP header).
    pub fn for_ipv6(mut self) -> Self {
        self.max_datagram = 1452;
        self
    }
}
