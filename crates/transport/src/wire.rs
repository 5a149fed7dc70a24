//! The wire format: data fragments (sender -> receiver) and ACKs (receiver -> sender).
//!
//! This table is the one place that defines byte order and sizes. Every integer is
//! **big-endian** (network order). Every datagram starts with a version byte and a type byte.
//!
//! ## Data fragment (type `0x01`), 42-byte header + payload
//! ```text
//! offset size field
//!      0    1 version              = VERSION (1)
//!      1    1 type                 = 0x01
//!      2    2 connection id        u16
//!      4    4 frame number         u32, counts frames sent (skipped frames get no number)
//!      8    2 fragment index       u16, < fragment count
//!     10    2 fragment count       u16, 1..=MAX_FRAGMENTS
//!     12    8 source state hash    u64 (0 = initial state: a keyframe, decodable from any state)
//!     20    8 target state hash    u64 (the state decoding the whole frame reaches)
//!     28    4 grace period         u32 µs the sender sat idle before this fragment (0 = none)
//!     32    8 send timestamp       u64 µs on the sender's clock
//!     40    2 payload length       u16, 1..=MAX_PAYLOAD, must equal the bytes that follow
//!     42    n payload              the fragment's slice of the encoded frame
//! ```
//!
//! ## ACK (type `0x02`), 37 bytes + 8 per held state
//! ```text
//! offset size field
//!      0    1 version              = VERSION (1)
//!      1    1 type                 = 0x02
//!      2    2 connection id        u16
//!      4    4 ack number           u32, counts the receiver's ACKs: newer ACKs have larger numbers
//!      8    4 acked frame          u32, the fragment this ACK answers ...
//!     12    2 acked fragment       u16  ... (frame number, fragment index)
//!     14    4 highest frame        u32, the newest fragment received so far ...
//!     18    2 highest fragment     u16  ... (largest (frame, index) pair), robust to lost ACKs
//!     20    4 mean inter-arrival   u32 µs, EWMA with grace subtracted; u32::MAX = no estimate yet
//!     24    8 current state hash   u64, the state of the last displayed frame (0 = initial)
//!     32    4 frames lost          u32, frames the receiver gave up on so far (cumulative)
//!     36    1 held state count     u8, 0..=MAX_HELD_STATES
//!     37   8n held state hashes    u64 each, oldest first (the newest is last)
//! ```
//!
//! An ACK may end with a **delivery forecast** (the receiver's stochastic forecast of the
//! link, see [`AckForecast`]); an ACK without one ends after its held states, so ACKs of
//! receivers that do not forecast parse as before:
//! ```text
//! offset       size field
//! 37+8n           1 forecast ticks     u8 m, 1..=MAX_FORECAST_TICKS
//! 38+8n           4 tick length        u32 µs, MIN_FORECAST_TICK..=MAX_FORECAST_TICK
//! 42+8n          2m cumulative counts  u16 each, non-decreasing: packet units delivered
//!                                      within 1, 2, ..., m ticks of the forecast's tick
//! ```
//!
//! Parsing checks everything: length, version, type, index < count, count and length bounds,
//! exact datagram length. A parsed value is therefore always safe to use.

use salsify_codec::StateHash;
use salsify_time::{Duration, Instant};

/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;
/// Type byte of a data fragment.
pub const TYPE_DATA: u8 = 0x01;
/// Type byte of an ACK.
pub const TYPE_ACK: u8 = 0x02;
/// Bytes before a data fragment's payload.
pub const DATA_HEADER_LEN: usize = 42;
/// Largest fragment payload: keeps a data datagram within 1500 bytes.
pub const MAX_PAYLOAD: usize = 1500 - DATA_HEADER_LEN;
/// Most fragments in one frame (4096 x 1458 B is about 6 MB, far above any real frame).
pub const MAX_FRAGMENTS: u16 = 4096;
/// Bytes of an ACK before its list of held states.
pub const ACK_FIXED_LEN: usize = 37;
/// Most held states one ACK may list.
pub const MAX_HELD_STATES: usize = 32;
/// Wire bytes in one packet unit of a forecast's counts (one delivery opportunity).
pub const FORECAST_UNIT_BYTES: u32 = 1500;
/// Most ticks one ACK's forecast may carry.
pub const MAX_FORECAST_TICKS: usize = 16;
/// Bytes of a forecast trailer before its counts (tick count and tick length).
pub const FORECAST_FIXED_LEN: usize = 5;
/// Shortest forecast tick on the wire.
pub const MIN_FORECAST_TICK: Duration = Duration::from_millis(1);
/// Longest forecast tick on the wire.
pub const MAX_FORECAST_TICK: Duration = Duration::from_secs(1);

/// Why a datagram was rejected. Every malformed input maps to one variant; nothing panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Fewer bytes than the fixed part of the message needs.
    #[error("datagram of {got} bytes is shorter than the {needed} bytes required")]
    Truncated {
        /// Bytes required.
        needed: usize,
        /// Bytes present.
        got: usize,
    },
    /// A version this crate does not speak.
    #[error("unsupported protocol version {0}")]
    UnsupportedVersion(u8),
    /// A type byte that is neither data nor ACK.
    #[error("unknown message type {0:#04x}")]
    UnknownType(u8),
    /// A fragment count of zero or above `MAX_FRAGMENTS`.
    #[error("fragment count {0} is outside 1..={MAX_FRAGMENTS}")]
    BadFragmentCount(u16),
    /// A fragment index at or beyond the fragment count.
    #[error("fragment index {index} is not below the fragment count {count}")]
    IndexOutOfRange {
        /// The index on the wire.
        index: u16,
        /// The count on the wire.
        count: u16,
    },
    /// A payload length of zero or above `MAX_PAYLOAD`.
    #[error("payload length {0} is outside 1..={MAX_PAYLOAD}")]
    BadPayloadLength(usize),
    /// The datagram's length differs from what its header declares.
    #[error("datagram should be {expected} bytes by its header but is {got}")]
    LengthMismatch {
        /// Length the header implies.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// An ACK listing more than `MAX_HELD_STATES` states.
    #[error("{0} held states is above the limit of {MAX_HELD_STATES}")]
    TooManyStates(usize),
    /// A forecast trailer that is malformed: a tick count outside 1..=`MAX_FORECAST_TICKS`,
    /// a tick length outside its bounds, or counts that decrease.
    #[error("malformed delivery forecast: {0}")]
    BadForecast(&'static str),
}

/// One fragment of an encoded frame, borrowing its payload from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFragment<'a> {
    /// Which session this belongs to.
    pub connection_id: u16,
    /// The frame's number.
    pub frame: u32,
    /// This fragment's position in the frame.
    pub index: u16,
    /// How many fragments the frame has.
    pub count: u16,
    /// The state the frame decodes from ([`StateHash::INITIAL`] for keyframes).
    pub source: StateHash,
    /// The state decoding the frame reaches.
    pub target: StateHash,
    /// How long the sender sat idle before sending this fragment (whole µs on the wire).
    pub grace: Duration,
    /// When the sender sent it, on the sender's clock.
    pub sent_at: Instant,
    /// The fragment's bytes.
    pub payload: &'a [u8],
}

/// An acknowledgement of one fragment, with everything the sender's control loop needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// Which session this belongs to.
    pub connection_id: u16,
    /// The receiver's ACK counter; lets the sender ignore ACKs overtaken by newer ones.
    pub ack_number: u32,
    /// The fragment this ACK answers.
    pub acked: FragmentId,
    /// The newest fragment received so far (largest `(frame, index)`).
    pub highest: FragmentId,
    /// Mean inter-arrival time with grace periods subtracted; `None` before two arrivals.
    pub mean_interarrival: Option<Duration>,
    /// The state of the receiver's last displayed frame.
    pub current_state: StateHash,
    /// How many frames the receiver has given up on (cumulative).
    pub frames_lost: u32,
    /// States the receiver holds and can decode from, oldest first; at most `MAX_HELD_STATES`.
    pub held_states: Vec<StateHash>,
    /// The receiver's delivery forecast, when it made a new one since its last ACK.
    pub forecast: Option<AckForecast>,
}

/// The receiver's forecast of the link (Sprout's, fed with grace-corrected arrivals): at
/// least `counts[i]` packet units (`FORECAST_UNIT_BYTES` wire bytes each) will be delivered within `i + 1`
/// ticks, with the receiver's configured confidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckForecast {
    /// Length of one tick.
    pub tick: Duration,
    /// Cumulative counts, non-decreasing; 1..=`MAX_FORECAST_TICKS` of them.
    pub counts: Vec<u16>,
}

impl AckForecast {
    /// Bytes the trailer takes on the wire.
    pub fn encoded_len(&self) -> usize {
        FORECAST_FIXED_LEN + 2 * self.counts.len()
    }

    /// Why this forecast cannot go on the wire, if it cannot.
    fn check(&self) -> Result<(), WireError> {
        if self.counts.is_empty() || self.counts.len() > MAX_FORECAST_TICKS {
            return Err(WireError::BadForecast("tick count outside 1..=16"));
        }
        if self.tick < MIN_FORECAST_TICK || self.tick > MAX_FORECAST_TICK {
            return Err(WireError::BadForecast("tick length outside 1 ms..=1 s"));
        }
        if self.counts.windows(2).any(|w| w[1] < w[0]) {
            return Err(WireError::BadForecast("counts decrease"));
        }
        Ok(())
    }

    /// Parses a trailer that is exactly `bytes`.
    fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let ticks = usize::from(bytes[0]);
        let expected = FORECAST_FIXED_LEN + 2 * ticks;
        if bytes.len() < FORECAST_FIXED_LEN || bytes.len() != expected {
            return Err(WireError::LengthMismatch {
                expected,
                got: bytes.len(),
            });
        }
        let forecast = AckForecast {
            tick: Duration::from_micros(u64::from(read_u32(bytes, 1))),
            counts: (0..ticks)
                .map(|i| read_u16(bytes, FORECAST_FIXED_LEN + 2 * i))
                .collect(),
        };
        forecast.check()?;
        Ok(forecast)
    }

    fn emit(&self, out: &mut Vec<u8>) {
        // Cannot truncate: check() bounds both, and emit calls it first.
        out.push(self.counts.len() as u8);
        out.extend_from_slice(&micros_u32(self.tick).to_be_bytes());
        for count in &self.counts {
            out.extend_from_slice(&count.to_be_bytes());
        }
    }
}

/// A fragment's name: frame number and index within the frame. Orders as a send sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FragmentId {
    /// Frame number.
    pub frame: u32,
    /// Fragment index within the frame.
    pub index: u16,
}

/// Any datagram of this protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram<'a> {
    /// A data fragment.
    Data(DataFragment<'a>),
    /// An ACK.
    Ack(Ack),
}

impl<'a> Datagram<'a> {
    /// Parses either message by its type byte.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, WireError> {
        let (_, kind) = check_preamble(bytes)?;
        match kind {
            TYPE_DATA => DataFragment::parse(bytes).map(Datagram::Data),
            TYPE_ACK => Ack::parse(bytes).map(Datagram::Ack),
            other => Err(WireError::UnknownType(other)),
        }
    }
}

/// Field offsets, one const per field, as in the tables above.
mod field {
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const CONNECTION: usize = 2;
    pub mod data {
        pub const FRAME: usize = 4;
        pub const INDEX: usize = 8;
        pub const COUNT: usize = 10;
        pub const SOURCE: usize = 12;
        pub const TARGET: usize = 20;
        pub const GRACE: usize = 28;
        pub const SENT_AT: usize = 32;
        pub const PAYLOAD_LEN: usize = 40;
    }
    pub mod ack {
        pub const ACK_NUMBER: usize = 4;
        pub const ACKED_FRAME: usize = 8;
        pub const ACKED_INDEX: usize = 12;
        pub const HIGHEST_FRAME: usize = 14;
        pub const HIGHEST_INDEX: usize = 18;
        pub const INTERARRIVAL: usize = 20;
        pub const CURRENT_STATE: usize = 24;
        pub const FRAMES_LOST: usize = 32;
        pub const HELD_COUNT: usize = 36;
    }
}

/// Checks the two leading bytes every message shares; returns (version, type).
fn check_preamble(bytes: &[u8]) -> Result<(u8, u8), WireError> {
    if bytes.len() < 2 {
        return Err(WireError::Truncated {
            needed: 2,
            got: bytes.len(),
        });
    }
    let version = bytes[field::VERSION];
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    Ok((version, bytes[field::TYPE]))
}

/// Checks preamble, type and minimum length of one message kind.
fn check_header(bytes: &[u8], kind: u8, fixed_len: usize) -> Result<(), WireError> {
    let (_, found) = check_preamble(bytes)?;
    if found != kind {
        return Err(WireError::UnknownType(found));
    }
    if bytes.len() < fixed_len {
        return Err(WireError::Truncated {
            needed: fixed_len,
            got: bytes.len(),
        });
    }
    Ok(())
}

// Readers for fixed-size big-endian fields; callers have checked the length first.
fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(word)
}

/// Microseconds of a duration for a u32 field, saturating.
fn micros_u32(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

impl<'a> DataFragment<'a> {
    /// Parses and checks a data fragment.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, WireError> {
        use field::data::*;
        check_header(bytes, TYPE_DATA, DATA_HEADER_LEN)?;
        let index = read_u16(bytes, INDEX);
        let count = read_u16(bytes, COUNT);
        if count == 0 || count > MAX_FRAGMENTS {
            return Err(WireError::BadFragmentCount(count));
        }
        if index >= count {
            return Err(WireError::IndexOutOfRange { index, count });
        }
        let payload_len = usize::from(read_u16(bytes, PAYLOAD_LEN));
        if payload_len == 0 || payload_len > MAX_PAYLOAD {
            return Err(WireError::BadPayloadLength(payload_len));
        }
        if bytes.len() != DATA_HEADER_LEN + payload_len {
            return Err(WireError::LengthMismatch {
                expected: DATA_HEADER_LEN + payload_len,
                got: bytes.len(),
            });
        }
        Ok(DataFragment {
            connection_id: read_u16(bytes, field::CONNECTION),
            frame: read_u32(bytes, FRAME),
            index,
            count,
            source: StateHash(read_u64(bytes, SOURCE)),
            target: StateHash(read_u64(bytes, TARGET)),
            grace: Duration::from_micros(u64::from(read_u32(bytes, GRACE))),
            sent_at: Instant::from_micros(read_u64(bytes, SENT_AT)),
            payload: &bytes[DATA_HEADER_LEN..],
        })
    }

    /// This fragment's name.
    pub fn id(&self) -> FragmentId {
        FragmentId {
            frame: self.frame,
            index: self.index,
        }
    }

    /// Bytes [`emit`](Self::emit) appends.
    pub fn encoded_len(&self) -> usize {
        DATA_HEADER_LEN + self.payload.len()
    }

    /// Appends the datagram to `out`. Refuses values `parse` would reject, so what is sent
    /// always parses. The grace period saturates at u32::MAX µs (71 minutes).
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.count == 0 || self.count > MAX_FRAGMENTS {
            return Err(WireError::BadFragmentCount(self.count));
        }
        if self.index >= self.count {
            return Err(WireError::IndexOutOfRange {
                index: self.index,
                count: self.count,
            });
        }
        let len = self.payload.len();
        if len == 0 || len > MAX_PAYLOAD {
            return Err(WireError::BadPayloadLength(len));
        }
        out.reserve(self.encoded_len());
        out.extend_from_slice(&[VERSION, TYPE_DATA]);
        out.extend_from_slice(&self.connection_id.to_be_bytes());
        out.extend_from_slice(&self.frame.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(&self.source.0.to_be_bytes());
        out.extend_from_slice(&self.target.0.to_be_bytes());
        out.extend_from_slice(&micros_u32(self.grace).to_be_bytes());
        out.extend_from_slice(&self.sent_at.as_micros().to_be_bytes());
        // Cannot truncate: len <= MAX_PAYLOAD < u16::MAX, checked above.
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(self.payload);
        Ok(())
    }
}

impl Ack {
    /// Parses and checks an ACK.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        use field::ack::*;
        check_header(bytes, TYPE_ACK, ACK_FIXED_LEN)?;
        let held_count = usize::from(bytes[HELD_COUNT]);
        if held_count > MAX_HELD_STATES {
            return Err(WireError::TooManyStates(held_count));
        }
        let expected = ACK_FIXED_LEN + 8 * held_count;
        if bytes.len() < expected {
            return Err(WireError::LengthMismatch {
                expected,
                got: bytes.len(),
            });
        }
        let forecast = match &bytes[expected..] {
            [] => None,
            trailer => Some(AckForecast::parse(trailer).map_err(|e| match e {
                WireError::LengthMismatch { expected: e, got } => WireError::LengthMismatch {
                    expected: expected + e,
                    got: expected + got,
                },
                other => other,
            })?),
        };
        let held_states = (0..held_count)
            .map(|i| StateHash(read_u64(bytes, ACK_FIXED_LEN + 8 * i)))
            .collect();
        let interarrival = read_u32(bytes, INTERARRIVAL);
        Ok(Ack {
            connection_id: read_u16(bytes, field::CONNECTION),
            ack_number: read_u32(bytes, ACK_NUMBER),
            acked: FragmentId {
                frame: read_u32(bytes, ACKED_FRAME),
                index: read_u16(bytes, ACKED_INDEX),
            },
            highest: FragmentId {
                frame: read_u32(bytes, HIGHEST_FRAME),
                index: read_u16(bytes, HIGHEST_INDEX),
            },
            mean_interarrival: (interarrival != u32::MAX)
                .then(|| Duration::from_micros(u64::from(interarrival))),
            current_state: StateHash(read_u64(bytes, CURRENT_STATE)),
            frames_lost: read_u32(bytes, FRAMES_LOST),
            held_states,
            forecast,
        })
    }

    /// Bytes [`emit`](Self::emit) appends.
    pub fn encoded_len(&self) -> usize {
        ACK_FIXED_LEN
            + 8 * self.held_states.len()
            + self.forecast.as_ref().map_or(0, AckForecast::encoded_len)
    }

    /// Appends the datagram to `out`. The inter-arrival time saturates just below the
    /// "no estimate" marker.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.held_states.len() > MAX_HELD_STATES {
            return Err(WireError::TooManyStates(self.held_states.len()));
        }
        if let Some(forecast) = &self.forecast {
            forecast.check()?;
        }
        let interarrival = self
            .mean_interarrival
            .map_or(u32::MAX, |d| micros_u32(d).min(u32::MAX - 1));
        out.reserve(self.encoded_len());
        out.extend_from_slice(&[VERSION, TYPE_ACK]);
        out.extend_from_slice(&self.connection_id.to_be_bytes());
        out.extend_from_slice(&self.ack_number.to_be_bytes());
        out.extend_from_slice(&self.acked.frame.to_be_bytes());
        out.extend_from_slice(&self.acked.index.to_be_bytes());
        out.extend_from_slice(&self.highest.frame.to_be_bytes());
        out.extend_from_slice(&self.highest.index.to_be_bytes());
        out.extend_from_slice(&interarrival.to_be_bytes());
        out.extend_from_slice(&self.current_state.0.to_be_bytes());
        out.extend_from_slice(&self.frames_lost.to_be_bytes());
        // Cannot truncate: at most MAX_HELD_STATES (32), checked above.
        out.push(self.held_states.len() as u8);
        for state in &self.held_states {
            out.extend_from_slice(&state.0.to_be_bytes());
        }
        if let Some(forecast) = &self.forecast {
            forecast.emit(out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fragment(payload: &[u8]) -> DataFragment<'_> {
        DataFragment {
            connection_id: 0xbeef,
            frame: 7,
            index: 2,
            count: 5,
            source: StateHash(0x0102_0304_0506_0708),
            target: StateHash(u64::MAX),
            grace: Duration::from_micros(1234),
            sent_at: Instant::from_micros(99),
            payload,
        }
    }

    fn ack(held: usize) -> Ack {
        Ack {
            connection_id: 1,
            ack_number: 3,
            acked: FragmentId { frame: 9, index: 1 },
            highest: FragmentId {
                frame: 10,
                index: 0,
            },
            mean_interarrival: Some(Duration::from_micros(800)),
            current_state: StateHash(42),
            frames_lost: 2,
            held_states: (0..held as u64).map(StateHash).collect(),
            forecast: None,
        }
    }

    fn forecast(counts: &[u16]) -> AckForecast {
        AckForecast {
            tick: Duration::from_millis(20),
            counts: counts.to_vec(),
        }
    }

    #[test]
    fn a_forecast_trailer_follows_the_held_states() {
        let mut a = ack(1);
        a.forecast = Some(forecast(&[3, 7, 7, 12]));
        let mut out = Vec::new();
        a.emit(&mut out).unwrap();
        assert_eq!(out.len(), ACK_FIXED_LEN + 8 + FORECAST_FIXED_LEN + 8);
        assert_eq!(out[45], 4);
        assert_eq!(&out[46..50], &20_000u32.to_be_bytes());
        assert_eq!(&out[50..52], &3u16.to_be_bytes());
        assert_eq!(Ack::parse(&out).unwrap(), a);
    }

    #[test]
    fn malformed_forecasts_are_refused_both_ways() {
        let mut out = Vec::new();
        for bad in [
            forecast(&[]),
            forecast(&[5, 4]),
            forecast(&[1; MAX_FORECAST_TICKS + 1]),
            AckForecast {
                tick: Duration::from_micros(10),
                counts: vec![1],
            },
            AckForecast {
                tick: Duration::from_secs(2),
                counts: vec![1],
            },
        ] {
            let mut a = ack(0);
            a.forecast = Some(bad);
            assert!(matches!(a.emit(&mut out), Err(WireError::BadForecast(_))));
        }
        assert!(out.is_empty());
        let mut a = ack(0);
        a.forecast = Some(forecast(&[1, 2]));
        a.emit(&mut out).unwrap();
        let mut decreasing = out.clone();
        decreasing[ACK_FIXED_LEN + 5..ACK_FIXED_LEN + 7].copy_from_slice(&9u16.to_be_bytes());
        assert!(matches!(
            Ack::parse(&decreasing),
            Err(WireError::BadForecast(_))
        ));
        assert!(matches!(
            Ack::parse(&out[..out.len() - 1]),
            Err(WireError::LengthMismatch { .. })
        ));
        assert!(matches!(
            Ack::parse(&out[..ACK_FIXED_LEN + 2]),
            Err(WireError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn data_layout_matches_the_table() {
        let mut out = Vec::new();
        fragment(b"xyz").emit(&mut out).unwrap();
        assert_eq!(out.len(), DATA_HEADER_LEN + 3);
        assert_eq!(&out[..4], &[1, 1, 0xbe, 0xef]);
        assert_eq!(&out[4..8], &7u32.to_be_bytes());
        assert_eq!(&out[10..12], &5u16.to_be_bytes());
        assert_eq!(&out[12..20], &0x0102_0304_0506_0708u64.to_be_bytes());
        assert_eq!(&out[28..32], &1234u32.to_be_bytes());
        assert_eq!(&out[40..42], &3u16.to_be_bytes());
        assert_eq!(&out[42..], b"xyz");
    }

    #[test]
    fn ack_layout_matches_the_table() {
        let mut out = Vec::new();
        ack(2).emit(&mut out).unwrap();
        assert_eq!(out.len(), ACK_FIXED_LEN + 16);
        assert_eq!(&out[..2], &[1, 2]);
        assert_eq!(&out[20..24], &800u32.to_be_bytes());
        assert_eq!(out[36], 2);
        assert_eq!(&out[45..53], &1u64.to_be_bytes());
    }

    #[test]
    fn every_malformed_input_has_its_error() {
        let mut good = Vec::new();
        fragment(b"abcd").emit(&mut good).unwrap();
        let with = |at: usize, bytes: &[u8]| {
            let mut v = good.clone();
            v[at..at + bytes.len()].copy_from_slice(bytes);
            v
        };
        let parse = |b: &[u8]| DataFragment::parse(b).unwrap_err();
        assert!(matches!(parse(&good[..1]), WireError::Truncated { .. }));
        assert!(matches!(parse(&good[..20]), WireError::Truncated { .. }));
        assert_eq!(parse(&with(0, &[2])), WireError::UnsupportedVersion(2));
        assert_eq!(parse(&with(1, &[9])), WireError::UnknownType(9));
        assert_eq!(
            Datagram::parse(&with(1, &[9])).unwrap_err(),
            WireError::UnknownType(9)
        );
        assert_eq!(parse(&with(10, &[0, 0])), WireError::BadFragmentCount(0));
        assert_eq!(
            parse(&with(10, &[0xff, 0xff])),
            WireError::BadFragmentCount(u16::MAX)
        );
        assert_eq!(
            parse(&with(8, &[0, 5])),
            WireError::IndexOutOfRange { index: 5, count: 5 }
        );
        assert_eq!(parse(&with(40, &[0, 0])), WireError::BadPayloadLength(0));
        assert_eq!(
            parse(&with(40, &[0xff, 0xff])),
            WireError::BadPayloadLength(0xffff)
        );
        assert!(matches!(
            parse(&good[..good.len() - 1]),
            WireError::LengthMismatch { .. }
        ));
        let mut a = Vec::new();
        ack(1).emit(&mut a).unwrap();
        assert!(matches!(
            Ack::parse(&a[..a.len() - 1]),
            Err(WireError::LengthMismatch { .. })
        ));
        a[36] = 200;
        assert_eq!(Ack::parse(&a), Err(WireError::TooManyStates(200)));
        assert!(matches!(Ack::parse(&good), Err(WireError::UnknownType(1))));
    }

    #[test]
    fn emit_refuses_what_parse_would_reject() {
        let mut out = Vec::new();
        let big = vec![0; MAX_PAYLOAD + 1];
        assert!(fragment(&big).emit(&mut out).is_err());
        assert!(fragment(b"").emit(&mut out).is_err());
        let mut f = fragment(b"x");
        f.index = 5;
        assert!(f.emit(&mut out).is_err());
        assert!(ack(MAX_HELD_STATES + 1).emit(&mut out).is_err());
        assert!(out.is_empty());
    }

    fn arb_duration_u32() -> impl Strategy<Value = Duration> {
        (0..u32::MAX).prop_map(|us| Duration::from_micros(u64::from(us)))
    }

    proptest! {
        #[test]
        fn data_round_trips(
            conn: u16, frame: u32, count in 1..=MAX_FRAGMENTS, index_seed: u16,
            source: u64, target: u64, grace in arb_duration_u32(), sent: u64,
            payload in proptest::collection::vec(any::<u8>(), 1..=MAX_PAYLOAD),
        ) {
            let f = DataFragment {
                connection_id: conn, frame, index: index_seed % count, count,
                source: StateHash(source), target: StateHash(target), grace,
                sent_at: Instant::from_micros(sent), payload: &payload,
            };
            let mut out = Vec::new();
            f.emit(&mut out).unwrap();
            prop_assert_eq!(out.len(), f.encoded_len());
            prop_assert_eq!(DataFragment::parse(&out).unwrap(), f);
            prop_assert_eq!(Datagram::parse(&out).unwrap(), Datagram::Data(f));
        }

        #[test]
        fn ack_round_trips(
            conn: u16, number: u32, af: u32, ai: u16, hf: u32, hi: u16,
            tau in proptest::option::of(0..u32::MAX - 1), current: u64, lost: u32,
            held in proptest::collection::vec(any::<u64>(), 0..=MAX_HELD_STATES),
            steps in proptest::option::of(proptest::collection::vec(0u16..300, 1..=MAX_FORECAST_TICKS)),
            tick_us in 1_000u64..=1_000_000,
        ) {
            let counts = steps.map(|s| s.iter().scan(0u16, |sum, d| {
                *sum = sum.saturating_add(*d);
                Some(*sum)
            }).collect::<Vec<u16>>());
            let a = Ack {
                connection_id: conn, ack_number: number,
                acked: FragmentId { frame: af, index: ai },
                highest: FragmentId { frame: hf, index: hi },
                mean_interarrival: tau.map(|us| Duration::from_micros(u64::from(us))),
                current_state: StateHash(current), frames_lost: lost,
                held_states: held.into_iter().map(StateHash).collect(),
                forecast: counts.map(|counts| AckForecast {
                    tick: Duration::from_micros(tick_us),
                    counts,
                }),
            };
            let mut out = Vec::new();
            a.emit(&mut out).unwrap();
            prop_assert_eq!(out.len(), a.encoded_len());
            prop_assert_eq!(Ack::parse(&out).unwrap(), a.clone());
            prop_assert_eq!(Datagram::parse(&out).unwrap(), Datagram::Ack(a));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1600)) {
            let _ = Datagram::parse(&bytes);
            let _ = DataFragment::parse(&bytes);
            let _ = Ack::parse(&bytes);
        }

        #[test]
        fn mutated_valid_datagrams_parse_or_fail_cleanly(
            pos: usize, byte: u8, cut: usize,
            held in proptest::collection::vec(any::<u64>(), 0..4),
        ) {
            let mut a = ack(0);
            a.held_states = held.into_iter().map(StateHash).collect();
            for mut bytes in [{ let mut v = Vec::new(); a.emit(&mut v).unwrap(); v },
                              { let mut v = Vec::new(); fragment(b"payload").emit(&mut v).unwrap(); v }] {
                let at = pos % bytes.len();
                bytes[at] = byte;
                bytes.truncate(bytes.len() - cut % 3);
                if let Ok(Datagram::Data(f)) = Datagram::parse(&bytes) {
                    prop_assert!(f.index < f.count);
                    prop_assert_eq!(f.encoded_len(), bytes.len());
                }
            }
        }
    }
}
