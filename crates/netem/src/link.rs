//! The link: one direction of a trace-driven bottleneck with a DropTail queue, loss and a
//! fixed propagation delay. Sans-IO: time is an argument, output is drained by polling.
//!
//! # How a packet crosses the link
//! 1. [`Link::handle_packet`] first plays out every delivery opportunity at or before `now`
//!    (so a packet arriving exactly at an opportunity's time cannot use it, as in Mahimahi,
//!    whose `read_packet` calls `rationalize(now)` before enqueueing), then applies entry loss
//!    and the DropTail limit.
//! 2. Each opportunity may carry `opportunity_bytes` (1500). It serialises bytes of the
//!    packet at the head of the line; a packet that does not fit is split, its remaining
//!    bytes sent by the next opportunity(ies); one opportunity can finish several small
//!    packets. Bytes of an opportunity with nothing left to send are wasted: capacity is
//!    never banked. A packet departs at the time of the opportunity that sends its last byte.
//!    The packet being serialised has left the queue and does not count against its limit.
//! 3. After departure (and exit loss, if configured) it arrives `propagation_delay` later.
//!
//! # Checked against Mahimahi
//! The rules above were read from Mahimahi's source (github.com/ravinet/mahimahi at commit
//! ae477d4, fetched 2026-11): `src/frontend/link_queue.cc` (`rationalize`,
//! `use_a_delivery_opportunity`, `read_packet`: the `packet_in_transit_bytes_left_` counter
//! carries a partly sent packet across opportunities, the inner loop takes further packets
//! while `bytes_left_in_this_delivery > 0`, and `break`s when the queue is empty, discarding
//! the rest of the opportunity), `src/frontend/link_queue.hh` (`PACKET_SIZE = 1504`, the
//! 1500-byte MTU plus the TUN header, see [`crate::LinkConfig::opportunity_bytes`]),
//! `src/packet/drop_tail_packet_queue.hh` and `dropping_packet_queue.cc` (limit tested with
//! the arriving packet included) and `src/frontend/delay_queue.cc` (`mm-delay` holds each
//! packet a fixed time). The tests in `link_tests.rs` pin each rule with hand-computed cases.
//! Differences: Mahimahi aborts on a packet larger than an opportunity; here it is an error
//! returned to the caller. Mahimahi timestamps are whole milliseconds; here microseconds.
//!
//! # Driving it
//! Mutate (`handle_packet`, `handle_timeout`), then drain `poll_delivery(now)` until it
//! returns `None`, then ask `poll_timeout()` when to come back; repeat.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::config::{ConfigError, LinkConfig};
use crate::loss::{LossPlacement, LossState};
use crate::queue::{DropTailQueue, QueueLimit};
use crate::schedule::Schedule;
use crate::trace::Trace;

/// A packet that crossed the link, with its timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered<P> {
    /// What the caller handed in.
    pub payload: P,
    /// Arrival order at the link, from 0; gaps are packets that were dropped.
    pub seq: u64,
    /// Size the caller gave.
    pub size_bytes: usize,
    /// When it entered the link (the `now` of `handle_packet`).
    pub enqueued_at: Instant,
    /// When its last byte left the bottleneck.
    pub departed_at: Instant,
    /// When it reaches the far end: departure plus propagation delay.
    pub delivered_at: Instant,
}

impl<P> Delivered<P> {
    /// Time spent queued and serialised at the bottleneck (what Mahimahi logs as delay).
    pub fn queue_delay(&self) -> Duration {
        self.departed_at - self.enqueued_at
    }

    /// One-way delay through the whole link.
    pub fn total_delay(&self) -> Duration {
        self.delivered_at - self.enqueued_at
    }
}

/// What happened to a packet handed to [`Link::handle_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Admission {
    /// It is queued (it may still be lost on exit if loss is placed there).
    Queued,
    /// It was dropped on entry.
    Dropped(LinkDrop),
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkDrop {
    /// The DropTail queue was full.
    QueueFull,
    /// A loss model dropped it.
    Lost,
}

/// A packet the link refuses outright (it is not counted as a drop).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// A packet of zero bytes would never finish crossing; it has no meaning on a link.
    #[error("packet of 0 bytes")]
    Empty,
    /// Larger than one delivery opportunity (Mahimahi aborts on these).
    #[error("packet of {size} bytes exceeds the {max}-byte delivery opportunity")]
    TooLarge {
        /// The packet's size.
        size: usize,
        /// The configured opportunity size.
        max: u32,
    },
}

/// Something that happened at the bottleneck, for logs (enable with
/// [`LinkConfig::record_events`]). Events come out in time order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// When it happened.
    pub time: Instant,
    /// What happened.
    pub kind: LinkEventKind,
}

/// The kinds of [`LinkEvent`], matching the line types of an `mm-link` log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkEventKind {
    /// A packet arrived at the link (logged `+`), whatever happens to it next.
    Arrival {
        /// Its sequence number.
        seq: u64,
        /// Its size.
        size_bytes: usize,
    },
    /// A delivery opportunity occurred, used or not (logged `#`).
    Opportunity {
        /// Bytes it could carry.
        bytes: u32,
    },
    /// A packet's last byte left the bottleneck (logged `-` with its queue delay).
    Departure {
        /// Its sequence number.
        seq: u64,
        /// Its size.
        size_bytes: usize,
        /// When it arrived at the link.
        enqueued_at: Instant,
    },
    /// A packet was dropped (logged `d`).
    Drop {
        /// Its sequence number.
        seq: u64,
        /// Its size.
        size_bytes: usize,
        /// Why.
        reason: LinkDrop,
    },
}

/// Why the link asked to be woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutReason {
    /// A packet reaches the far end.
    Delivery,
    /// A delivery opportunity while packets wait.
    Opportunity,
}

/// Counters since the link started; a cheap `Copy` snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkStats {
    /// Packets handed in and accepted as valid (dropped or not).
    pub packets_in: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Packets refused with a [`PacketError`].
    pub packets_rejected: u64,
    /// Packets dropped because the queue was full.
    pub dropped_queue_full: u64,
    /// Packets dropped by a loss model (on entry or exit).
    pub dropped_lost: u64,
    /// Packets whose last byte left the bottleneck (including any lost on exit).
    pub packets_departed: u64,
    /// Their bytes.
    pub bytes_departed: u64,
    /// Packets returned by [`Link::poll_delivery`].
    pub packets_delivered: u64,
    /// Their bytes.
    pub bytes_delivered: u64,
    /// Delivery opportunities that have passed.
    pub opportunities: u64,
    /// Bytes of those opportunities that carried nothing.
    pub unused_opportunity_bytes: u64,
    /// Most packets ever waiting in the queue.
    pub max_queued_packets: u64,
    /// Most bytes ever waiting in the queue.
    pub max_queued_bytes: u64,
}

struct Queued<P> {
    seq: u64,
    payload: P,
    size_bytes: usize,
    enqueued_at: Instant,
}

struct InTransit<P> {
    packet: Queued<P>,
    bytes_left: u64,
}

/// One direction of an emulated link, generic over the payload it carries.
pub struct Link<P> {
    schedule: Schedule,
    queue: DropTailQueue<Queued<P>>,
    in_transit: Option<InTransit<P>>,
    propagating: VecDeque<Delivered<P>>,
    loss: LossState,
    loss_placement: LossPlacement,
    opportunity_bytes: u32,
    propagation_delay: Duration,
    queue_limit: QueueLimit,
    trace: Trace,
    events: Option<VecDeque<LinkEvent>>,
    stats: LinkStats,
    start: Instant,
    now: Instant,
    next_seq: u64,
}

impl<P> Link<P> {
    /// A link whose trace starts at `now` (like Mahimahi's base timestamp, taken when
    /// `mm-link` starts). Fails if the config is invalid.
    pub fn new(config: LinkConfig, now: Instant) -> Result<Link<P>, ConfigError> {
        config.validate()?;
        Ok(Link {
            schedule: Schedule::new(config.trace.clone(), now),
            queue: DropTailQueue::new(config.queue),
            in_transit: None,
            propagating: VecDeque::new(),
            loss: LossState::new(&config.loss, config.seed, now),
            loss_placement: config.loss_placement,
            opportunity_bytes: config.opportunity_bytes,
            propagation_delay: config.propagation_delay,
            queue_limit: config.queue,
            trace: config.trace,
            events: config.record_events.then(VecDeque::new),
            stats: LinkStats::default(),
            start: now,
            now,
            next_seq: 0,
        })
    }

    /// Offers a packet of `size_bytes` to the link at `now`.
    ///
    /// Time never runs backwards: a `now` earlier than one already seen is taken as the
    /// latest time seen. Returns whether the packet was queued or dropped on entry; a packet
    /// of 0 bytes or larger than an opportunity is refused with an error.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        payload: P,
        size_bytes: usize,
    ) -> Result<Admission, PacketError> {
        if size_bytes == 0 || size_bytes > self.opportunity_bytes as usize {
            self.stats.packets_rejected += 1;
            return Err(if size_bytes == 0 {
                PacketError::Empty
            } else {
                PacketError::TooLarge {
                    size: size_bytes,
                    max: self.opportunity_bytes,
                }
            });
        }
        self.advance(now);
        let now = self.now;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.stats.packets_in += 1;
        self.stats.bytes_in += size_bytes as u64;
        self.record(now, LinkEventKind::Arrival { seq, size_bytes });
        if self.loss_placement == LossPlacement::Entry && self.loss.drops(now) {
            self.drop_packet(now, seq, size_bytes, LinkDrop::Lost);
            return Ok(Admission::Dropped(LinkDrop::Lost));
        }
        let packet = Queued {
            seq,
            payload,
            size_bytes,
            enqueued_at: now,
        };
        if self.queue.push(packet, size_bytes as u64).is_err() {
            self.drop_packet(now, seq, size_bytes, LinkDrop::QueueFull);
            return Ok(Admission::Dropped(LinkDrop::QueueFull));
        }
        let stats = &mut self.stats;
        stats.max_queued_packets = stats.max_queued_packets.max(self.queue.len() as u64);
        stats.max_queued_bytes = stats.max_queued_bytes.max(self.queue.bytes());
        Ok(Admission::Queued)
    }

    /// Plays the link out to `now` without offering a packet (e.g. so a log records the
    /// opportunities of an idle stretch up to the end of a run).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next packet that has reached the far end by `now`, in order of departure.
    pub fn poll_delivery(&mut self, now: Instant) -> Option<Delivered<P>> {
        self.advance(now);
        if self.propagating.front()?.delivered_at > self.now {
            return None;
        }
        let d = self.propagating.pop_front()?;
        self.stats.packets_delivered += 1;
        self.stats.bytes_delivered += d.size_bytes as u64;
        Some(d)
    }

    /// When something can next change: a packet reaching the far end, or the next
    /// opportunity while packets wait. `None` when the link is empty.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timeout().map(|(t, _)| t)
    }

    /// What [`Link::poll_timeout`] is waiting for (a delivery wins a tie).
    pub fn timeout_reason(&self) -> Option<TimeoutReason> {
        self.next_timeout().map(|(_, r)| r)
    }

    fn next_timeout(&self) -> Option<(Instant, TimeoutReason)> {
        let delivery = self
            .propagating
            .front()
            .map(|d| (d.delivered_at, TimeoutReason::Delivery));
        let opportunity =
            (!self.is_idle()).then(|| (self.schedule.next_time(), TimeoutReason::Opportunity));
        match (delivery, opportunity) {
            (Some(d), Some(o)) => Some(if o.0 < d.0 { o } else { d }),
            (d, o) => d.or(o),
        }
    }

    /// The next recorded event, oldest first (always `None` unless
    /// [`LinkConfig::record_events`] is set).
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.as_mut()?.pop_front()
    }

    /// Counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// Packets waiting in the queue (not counting one partly sent).
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// Bytes waiting in the queue (not counting one partly sent).
    pub fn queued_bytes(&self) -> u64 {
        self.queue.bytes()
    }

    /// Packets past the bottleneck that have not reached the far end yet.
    pub fn propagating_packets(&self) -> usize {
        self.propagating.len()
    }

    /// When the link (and its trace) started.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The queue limit in force.
    pub fn queue_limit(&self) -> QueueLimit {
        self.queue_limit
    }

    /// Bytes each opportunity carries.
    pub fn opportunity_bytes(&self) -> u32 {
        self.opportunity_bytes
    }

    /// The trace being replayed.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_transit.is_none()
    }

    /// Plays out every opportunity at or before `now`.
    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
        loop {
            if self.is_idle() && self.events.is_none() {
                // Nothing to send and nothing to log: jump over the idle stretch.
                let skipped = self.schedule.skip_through(self.now);
                self.stats.opportunities += skipped;
                self.stats.unused_opportunity_bytes += skipped * u64::from(self.opportunity_bytes);
                return;
            }
            let t = self.schedule.next_time();
            if t > self.now {
                return;
            }
            self.schedule.advance();
            self.use_opportunity(t);
        }
    }

    /// Serialises up to one opportunity's worth of bytes at time `t`.
    fn use_opportunity(&mut self, t: Instant) {
        self.stats.opportunities += 1;
        self.record(
            t,
            LinkEventKind::Opportunity {
                bytes: self.opportunity_bytes,
            },
        );
        let mut left = u64::from(self.opportunity_bytes);
        while left > 0 {
            let mut sending = match self.in_transit.take() {
                Some(s) => s,
                None => match self.queue.pop() {
                    Some((packet, size)) => InTransit {
                        packet,
                        bytes_left: size,
                    },
                    None => break,
                },
            };
            let n = left.min(sending.bytes_left);
            sending.bytes_left -= n;
            left -= n;
            if sending.bytes_left == 0 {
                self.depart(t, sending.packet);
            } else {
                self.in_transit = Some(sending);
            }
        }
        self.stats.unused_opportunity_bytes += left;
    }

    fn depart(&mut self, t: Instant, p: Queued<P>) {
        self.stats.packets_departed += 1;
        self.stats.bytes_departed += p.size_bytes as u64;
        self.record(
            t,
            LinkEventKind::Departure {
                seq: p.seq,
                size_bytes: p.size_bytes,
                enqueued_at: p.enqueued_at,
            },
        );
        if self.loss_placement == LossPlacement::Exit && self.loss.drops(t) {
            self.drop_packet(t, p.seq, p.size_bytes, LinkDrop::Lost);
            return;
        }
        self.propagating.push_back(Delivered {
            payload: p.payload,
            seq: p.seq,
            size_bytes: p.size_bytes,
            enqueued_at: p.enqueued_at,
            departed_at: t,
            delivered_at: t + self.propagation_delay,
        });
    }

    fn drop_packet(&mut self, t: Instant, seq: u64, size_bytes: usize, reason: LinkDrop) {
        match reason {
            LinkDrop::QueueFull => self.stats.dropped_queue_full += 1,
            LinkDrop::Lost => self.stats.dropped_lost += 1,
        }
        self.record(
            t,
            LinkEventKind::Drop {
                seq,
                size_bytes,
                reason,
            },
        );
    }

    fn record(&mut self, time: Instant, kind: LinkEventKind) {
        if let Some(events) = &mut self.events {
            events.push_back(LinkEvent { time, kind });
        }
    }
}

impl<P> std::fmt::Debug for Link<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("start", &self.start)
            .field("now", &self.now)
            .field("queued_packets", &self.queue.len())
            .field("propagating", &self.propagating.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
