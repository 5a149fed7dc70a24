//! The data channel: short messages both ways in a call's session, beside its media.
//!
//! Two kinds of delivery, chosen per message:
//! - **latest** (a joystick's position, a cursor): sent at once, never retransmitted; a
//!   newer message of the same stream replaces one still queued, and the receiver drops
//!   one older than the newest of its stream it delivered;
//! - **ordered** (a command, a chat line): every message delivered once and in order,
//!   retransmitted until acknowledged (cumulative ACKs, timeout after RFC 6298's estimate).
//!
//! ```text
//! message (kind 1), 19-byte header + payload
//! offset size field
//!      0    1 tag         = DATA_TAG (0xDA)
//!      1    1 kind        = 1
//!      2    1 flags       bit 0: ordered (else latest); other bits 0
//!      3    2 stream      u16 (latest: what a newer message replaces; ordered: 0)
//!      5    4 sequence    u32 (ordered: 0, 1, 2, ... per channel; latest: increasing)
//!      9    8 sent at     u64 µs on the sender's clock, when first sent
//!     17    2 length      u16, 1..=MAX_MESSAGE, the bytes that follow
//!     19    n payload
//! ACK (kind 2), 10 bytes
//!      0    1 tag         = DATA_TAG
//!      1    1 kind        = 2
//!      2    4 next        u32: every ordered message below it was delivered
//!      6    4 answering   u32: the ordered message that prompted this ACK
//! ```
//! Integers are big-endian. A datagram is parsed whole and checked (length, kind, flags,
//! payload length) before anything uses it.
//!
//! The state machine has the endpoints' shape: mutate ([`DataChannel::send`],
//! [`DataChannel::handle_message`], [`DataChannel::handle_timeout`]), then drain
//! [`DataChannel::poll_output`] until it names its next deadline.

use std::collections::{BTreeMap, HashMap, VecDeque};

use salsify_time::{Duration, Instant};

use crate::wire::DATA_TAG;

/// Largest message payload in bytes.
pub const MAX_MESSAGE: usize = 1024;
/// Bytes of a message datagram before its payload.
pub const MESSAGE_HEADER_LEN: usize = 19;
/// Bytes of an ACK datagram.
pub const ACK_LEN: usize = 10;
const KIND_MESSAGE: u8 = 1;
const KIND_ACK: u8 = 2;
const FLAG_ORDERED: u8 = 1;

/// How a message is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Only the newest of its stream matters: sent once, superseded by a newer one.
    Latest,
    /// Every message, in order, retransmitted until acknowledged.
    Ordered,
}

/// The channel's timing and bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct DataConfig {
    /// Retransmission timeout before a round trip was measured. Default 250 ms: above a
    /// cellular round trip's usual 50-150 ms, so a first message is not sent twice for
    /// nothing, and a quarter of RFC 6298's 1 s, which is for bulk transfer, not control.
    pub initial_timeout: Duration,
    /// Shortest retransmission timeout. Default 20 ms (a loopback round trip is far less;
    /// this keeps a measured near-zero estimate from resending on every tick).
    pub min_timeout: Duration,
    /// Longest retransmission timeout, after doubling on repeated losses. Default 2 s.
    pub max_timeout: Duration,
    /// Ordered messages sent and not yet acknowledged before [`DataChannel::send`]
    /// refuses more. Default 1024 (1 MB of payload at most).
    pub max_unacked: usize,
    /// How far ahead of the next expected ordered message an early one is kept for
    /// delivery in order. Default 1024 (the sender never has more in flight).
    pub reorder_window: u32,
}

impl Default for DataConfig {
    fn default() -> Self {
        DataConfig {
            initial_timeout: Duration::from_millis(250),
            min_timeout: Duration::from_millis(20),
            max_timeout: Duration::from_secs(2),
            max_unacked: 1024,
            reorder_window: 1024,
        }
    }
}

/// A message as delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// How it was sent.
    pub delivery: Delivery,
    /// Its stream (0 for ordered messages).
    pub stream: u16,
    /// Its sequence number.
    pub seq: u32,
    /// When the sender first sent it, on the sender's clock.
    pub sent_at: Instant,
    /// When it was delivered here (the arrival time of the datagram that completed it).
    pub delivered_at: Instant,
    /// What it says.
    pub payload: Vec<u8>,
}

/// What the channel asks of its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataOutput {
    /// Send this datagram to the peer (within the session, sealed like any other).
    Transmit(Vec<u8>),
    /// A message from the peer, delivered.
    Event(Message),
    /// Nothing more until this time (or the next input).
    Timeout(Instant),
}

/// Why a message cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataSendError {
    /// Empty, or over [`MAX_MESSAGE`] bytes.
    #[error("a message of {0} bytes (1 to {MAX_MESSAGE} allowed)")]
    Size(usize),
    /// Too many ordered messages unacknowledged: the peer is not taking them.
    #[error("{0} ordered messages are waiting for the peer's acknowledgement")]
    Backlog(usize),
}

/// Why a datagram is not a data-channel message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataWireError {
    /// Not tagged as data.
    #[error("not a data-channel datagram")]
    NotData,
    /// Its length does not fit its kind.
    #[error("data-channel datagram of {0} bytes has the wrong length for its kind")]
    Length(usize),
    /// An unknown kind byte.
    #[error("unknown data-channel kind {0}")]
    Kind(u8),
    /// Flag bits that mean nothing, or an ordered message on a stream other than 0.
    #[error("bad data-channel flags {0:#04x}")]
    Flags(u8),
    /// An empty payload or one over [`MAX_MESSAGE`].
    #[error("data-channel payload of {0} bytes (1 to {MAX_MESSAGE} expected)")]
    PayloadSize(usize),
}

/// Counters of one side's channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataStats {
    /// Messages given to [`DataChannel::send`] and taken.
    pub submitted: u64,
    /// Message datagrams sent, first copies and retransmissions.
    pub transmitted: u64,
    /// Of those, retransmissions of ordered messages.
    pub retransmitted: u64,
    /// Latest messages replaced by a newer one of their stream before they were sent.
    pub superseded: u64,
    /// Messages delivered from the peer.
    pub delivered: u64,
    /// Messages from the peer not delivered: copies already delivered, latest messages
    /// older than their stream's newest, ordered ones beyond the reorder window.
    pub dropped: u64,
    /// Datagrams refused as malformed.
    pub bad: u64,
}

/// A parsed data-channel datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataDatagram {
    /// A message.
    Message {
        /// Its delivery.
        delivery: Delivery,
        /// Its stream.
        stream: u16,
        /// Its sequence number.
        seq: u32,
        /// When first sent, on the sender's clock.
        sent_at: Instant,
        /// Its payload.
        payload: Vec<u8>,
    },
    /// An acknowledgement of ordered messages.
    Ack {
        /// Every ordered message below this was delivered.
        next: u32,
        /// The message that prompted it.
        answering: u32,
    },
}

impl DataDatagram {
    /// Parses and checks a whole datagram.
    pub fn parse(bytes: &[u8]) -> Result<Self, DataWireError> {
        if bytes.first() != Some(&DATA_TAG) {
            return Err(DataWireError::NotData);
        }
        let len = bytes.len();
        match bytes.get(1) {
            None => Err(DataWireError::Length(len)),
            Some(&KIND_ACK) if len == ACK_LEN => Ok(DataDatagram::Ack {
                next: be_u32(&bytes[2..6]),
                answering: be_u32(&bytes[6..10]),
            }),
            Some(&KIND_ACK) => Err(DataWireError::Length(len)),
            Some(&KIND_MESSAGE) => parse_message(bytes),
            Some(&kind) => Err(DataWireError::Kind(kind)),
        }
    }

    /// The datagram's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            DataDatagram::Ack { next, answering } => {
                let mut out = vec![DATA_TAG, KIND_ACK];
                out.extend_from_slice(&next.to_be_bytes());
                out.extend_from_slice(&answering.to_be_bytes());
                out
            }
            DataDatagram::Message {
                delivery,
                stream,
                seq,
                sent_at,
                payload,
            } => {
                let mut out = Vec::with_capacity(MESSAGE_HEADER_LEN + payload.len());
                let flags = match delivery {
                    Delivery::Ordered => FLAG_ORDERED,
                    Delivery::Latest => 0,
                };
                out.extend_from_slice(&[DATA_TAG, KIND_MESSAGE, flags]);
                out.extend_from_slice(&stream.to_be_bytes());
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(&sent_at.as_micros().to_be_bytes());
                out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
                out.extend_from_slice(payload);
                out
            }
        }
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_message(bytes: &[u8]) -> Result<DataDatagram, DataWireError> {
    if bytes.len() < MESSAGE_HEADER_LEN {
        return Err(DataWireError::Length(bytes.len()));
    }
    let flags = bytes[2];
    let stream = u16::from_be_bytes([bytes[3], bytes[4]]);
    let delivery = match flags {
        FLAG_ORDERED if stream == 0 => Delivery::Ordered,
        0 => Delivery::Latest,
        _ => return Err(DataWireError::Flags(flags)),
    };
    let mut sent = [0u8; 8];
    sent.copy_from_slice(&bytes[9..17]);
    let payload_len = usize::from(u16::from_be_bytes([bytes[17], bytes[18]]));
    if payload_len == 0 || payload_len > MAX_MESSAGE {
        return Err(DataWireError::PayloadSize(payload_len));
    }
    if bytes.len() != MESSAGE_HEADER_LEN + payload_len {
        return Err(DataWireError::Length(bytes.len()));
    }
    Ok(DataDatagram::Message {
        delivery,
        stream,
        seq: be_u32(&bytes[5..9]),
        sent_at: Instant::from_micros(u64::from_be_bytes(sent)),
        payload: bytes[MESSAGE_HEADER_LEN..].to_vec(),
    })
}

/// An ordered message sent and not yet acknowledged.
#[derive(Debug)]
struct Unacked {
    datagram: Vec<u8>,
    /// When the last copy went out.
    last_sent: Instant,
    /// Copies sent.
    copies: u32,
}

/// Round-trip estimate after RFC 6298 (smoothed time and variation).
#[derive(Debug, Clone, Copy)]
struct RoundTrip {
    smoothed: Duration,
    variation: Duration,
}

/// One side's data channel: what it sends and what it receives.
#[derive(Debug)]
pub struct DataChannel {
    config: DataConfig,
    /// Datagrams ready to go, in order (ACKs and latest messages first when queued).
    queue: VecDeque<(Option<u16>, Vec<u8>)>,
    /// Ordered messages in flight, by sequence number.
    unacked: BTreeMap<u32, Unacked>,
    next_ordered: u32,
    next_latest: u32,
    round_trip: Option<RoundTrip>,
    /// The timeout now, doubled on each expiry without progress.
    timeout: Duration,
    /// The next ordered sequence number to deliver, and early ones held.
    expect: u32,
    early: BTreeMap<u32, Message>,
    /// Newest latest message delivered per stream.
    newest: HashMap<u16, u32>,
    ack_due: Option<u32>,
    delivered: VecDeque<Message>,
    stats: DataStats,
}

impl DataChannel {
    /// A channel with `config`.
    pub fn new(config: DataConfig) -> Self {
        let timeout = config.initial_timeout;
        DataChannel {
            config,
            queue: VecDeque::new(),
            unacked: BTreeMap::new(),
            next_ordered: 0,
            next_latest: 0,
            round_trip: None,
            timeout,
            expect: 0,
            early: BTreeMap::new(),
            newest: HashMap::new(),
            ack_due: None,
            delivered: VecDeque::new(),
            stats: DataStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> DataStats {
        self.stats
    }

    /// Ordered messages sent and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.unacked.len()
    }

    /// Queues `payload` for the peer; returns its sequence number. A *latest* message
    /// replaces one of the same stream still queued.
    pub fn send(
        &mut self,
        now: Instant,
        delivery: Delivery,
        stream: u16,
        payload: &[u8],
    ) -> Result<u32, DataSendError> {
        if payload.is_empty() || payload.len() > MAX_MESSAGE {
            return Err(DataSendError::Size(payload.len()));
        }
        let seq = match delivery {
            Delivery::Ordered if self.unacked.len() >= self.config.max_unacked => {
                return Err(DataSendError::Backlog(self.unacked.len()));
            }
            Delivery::Ordered => self.next_ordered,
            Delivery::Latest => self.next_latest,
        };
        let stream = if delivery == Delivery::Ordered {
            0
        } else {
            stream
        };
        let datagram = DataDatagram::Message {
            delivery,
            stream,
            seq,
            sent_at: now,
            payload: payload.to_vec(),
        }
        .encode();
        match delivery {
            Delivery::Ordered => {
                self.next_ordered = self.next_ordered.wrapping_add(1);
                self.unacked.insert(
                    seq,
                    Unacked {
                        datagram: datagram.clone(),
                        last_sent: now,
                        copies: 1,
                    },
                );
                self.queue.push_back((None, datagram));
            }
            Delivery::Latest => {
                self.next_latest = self.next_latest.wrapping_add(1);
                let before = self.queue.len();
                self.queue.retain(|(s, _)| *s != Some(stream));
                self.stats.superseded += (before - self.queue.len()) as u64;
                self.queue.push_back((Some(stream), datagram));
            }
        }
        self.stats.submitted += 1;
        Ok(seq)
    }

    /// Takes a data-channel datagram from the peer, arrived at `now`. A malformed one is
    /// counted and refused; nothing else changes.
    pub fn handle_message(&mut self, now: Instant, bytes: &[u8]) -> Result<(), DataWireError> {
        let datagram = DataDatagram::parse(bytes).inspect_err(|_| self.stats.bad += 1)?;
        match datagram {
            DataDatagram::Ack { next, answering } => self.on_ack(now, next, answering),
            DataDatagram::Message {
                delivery,
                stream,
                seq,
                sent_at,
                payload,
            } => {
                let message = Message {
                    delivery,
                    stream,
                    seq,
                    sent_at,
                    delivered_at: now,
                    payload,
                };
                match delivery {
                    Delivery::Latest => self.on_latest(message),
                    Delivery::Ordered => self.on_ordered(message),
                }
            }
        }
        Ok(())
    }

    fn on_latest(&mut self, message: Message) {
        let newer = self
            .newest
            .get(&message.stream)
            .is_none_or(|&n| message.seq > n);
        if !newer {
            self.stats.dropped += 1;
            return;
        }
        self.newest.insert(message.stream, message.seq);
        self.deliver(message);
    }

    fn on_ordered(&mut self, message: Message) {
        let seq = message.seq;
        let ahead = seq.wrapping_sub(self.expect);
        if ahead == 0 {
            self.expect = self.expect.wrapping_add(1);
            self.deliver(message);
            while let Some(m) = self.early.remove(&self.expect) {
                self.expect = self.expect.wrapping_add(1);
                self.deliver(m);
            }
        } else if ahead < self.config.reorder_window && !self.early.contains_key(&seq) {
            self.early.insert(seq, message);
        } else {
            self.stats.dropped += 1; // a copy already delivered or held, or far ahead
        }
        self.ack_due = Some(seq);
    }

    fn deliver(&mut self, message: Message) {
        self.stats.delivered += 1;
        self.delivered.push_back(message);
    }

    fn on_ack(&mut self, now: Instant, next: u32, answering: u32) {
        // Karn: only a message sent once gives a round trip.
        if let Some(u) = self.unacked.get(&answering).filter(|u| u.copies == 1) {
            self.measure(now.saturating_duration_since(u.last_sent));
        }
        let before = self.unacked.len();
        // Everything below `next` (in wrapping order, within what is in flight) is done.
        let window = 1..=self.config.max_unacked as u32;
        self.unacked
            .retain(|&seq, _| !window.contains(&next.wrapping_sub(seq)));
        if self.unacked.len() < before {
            self.timeout = self.current_timeout();
        }
    }

    fn measure(&mut self, sample: Duration) {
        self.round_trip = Some(match self.round_trip {
            None => RoundTrip {
                smoothed: sample,
                variation: sample / 2,
            },
            Some(rt) => {
                let diff = sample.abs_diff(rt.smoothed);
                RoundTrip {
                    variation: (rt.variation * 3 + diff) / 4,
                    smoothed: (rt.smoothed * 7 + sample) / 8,
                }
            }
        });
        self.timeout = self.current_timeout();
    }

    /// RFC 6298's timeout (smoothed + 4 x variation) within the configured bounds, in
    /// whole microseconds (the unit of [`Instant`], so a deadline is exactly when it fires).
    fn current_timeout(&self) -> Duration {
        let t = self.round_trip.map_or(self.config.initial_timeout, |rt| {
            rt.smoothed + rt.variation * 4
        });
        let t = t.clamp(self.config.min_timeout, self.config.max_timeout);
        Duration::from_micros(t.as_micros().min(u128::from(u64::MAX)) as u64)
    }

    /// Retransmits the ordered messages whose timeout passed (oldest first), doubling the
    /// timeout (RFC 6298's back-off) when it fired.
    pub fn handle_timeout(&mut self, now: Instant) {
        let timeout = self.timeout;
        let mut fired = false;
        for u in self.unacked.values_mut() {
            if now.saturating_duration_since(u.last_sent) >= timeout {
                u.last_sent = now;
                u.copies += 1;
                self.stats.retransmitted += 1;
                self.queue.push_back((None, u.datagram.clone()));
                fired = true;
            }
        }
        if fired {
            self.timeout = (self.timeout * 2).min(self.config.max_timeout);
        }
    }

    /// The next thing to do: an ACK first, then queued datagrams, then delivered messages,
    /// then the next deadline.
    pub fn poll_output(&mut self, now: Instant) -> DataOutput {
        if let Some(answering) = self.ack_due.take() {
            return DataOutput::Transmit(
                DataDatagram::Ack {
                    next: self.expect,
                    answering,
                }
                .encode(),
            );
        }
        if let Some((_, datagram)) = self.queue.pop_front() {
            self.stats.transmitted += 1;
            return DataOutput::Transmit(datagram);
        }
        if let Some(m) = self.delivered.pop_front() {
            return DataOutput::Event(m);
        }
        let next = self
            .unacked
            .values()
            .map(|u| u.last_sent + self.timeout)
            .min()
            .unwrap_or(Instant::FAR_FUTURE);
        DataOutput::Timeout(next.max(now))
    }
}

#[cfg(test)]
mod tests;
