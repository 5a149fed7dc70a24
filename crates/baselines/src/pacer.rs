//! A leaky-bucket pacer: packets leave no faster than the pacing rate, retransmissions
//! first (as libwebrtc's `PacingController` prioritises them over new media).
//!
//! It also sends probe clusters, as libwebrtc's `BitrateProber`: a cluster waits until a
//! media packet is queued after it was added (at most [`PROBE_CLUSTER_TIMEOUT`]), then its
//! packets leave at the probe rate, `started + bytes sent / rate`, queued media first and
//! padding ([`Pacer::probe_padding_size`]) when none is waiting, until it has sent its
//! minimum packets and bytes. Probe packets are charged to the pacing bucket too (libwebrtc
//! counts them as media debt), so media after a probe waits for the pacing rate to catch up.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

use crate::rate::Bitrate;
use crate::wire::MediaHeader;

/// One probe cluster to send: libwebrtc's `ProbeClusterConfig` as the congestion controller
/// asks for it (`NetworkControlUpdate::probe_cluster_configs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCluster {
    /// Its id (carried with each packet's feedback).
    pub id: u32,
    /// The rate to send it at.
    pub rate: Bitrate,
    /// At least this many packets ...
    pub min_packets: u32,
    /// ... and this many bytes.
    pub min_bytes: usize,
}

/// A probe cluster not started within this time is dropped (libwebrtc `BitrateProber`'s
/// `kProbeClusterTimeout`, 5 s).
pub const PROBE_CLUSTER_TIMEOUT: Duration = Duration::from_secs(5);
/// Padding sent for a probe is the probe rate x this (libwebrtc `min_probe_delta`, 2 ms,
/// `RecommendedMinProbeSize`) ...
pub const PROBE_PADDING_DELTA: Duration = Duration::from_millis(2);
/// ... within this range of datagram sizes (libwebrtc's padding packets are at most 224
/// bytes, its RTX "payload padding" up to a full media packet; 200..1200 here).
pub const PROBE_PADDING_RANGE: (usize, usize) = (200, 1200);

/// Credit the pacer may bank while idle (libwebrtc's media budget keeps at most one
/// 5 ms interval: `kDefaultMaxDebtInTime`-style burst limits are of that order).
pub const MAX_BURST: Duration = Duration::from_millis(5);

/// A packet waiting in the pacer.
#[derive(Debug, Clone)]
pub struct Queued {
    /// Its header (transport sequence number filled in when it leaves).
    pub header: MediaHeader,
    /// Payload.
    pub payload: Vec<u8>,
    /// When it was queued.
    pub enqueued: Instant,
    /// When its frame was queued (for the frame's pacer delay).
    pub frame_enqueued: Instant,
}

impl Queued {
    /// Datagram size.
    pub fn size(&self) -> usize {
        crate::wire::MEDIA_HEADER_LEN + self.payload.len()
    }
}

/// What the pacer lets out.
#[derive(Debug, Clone)]
pub enum Paced {
    /// A queued packet.
    Packet(Queued),
    /// A padding datagram of this many bytes (a probe with no media waiting).
    Padding(usize),
}

#[derive(Debug, Clone, Copy)]
struct ActiveProbe {
    cluster: ProbeCluster,
    created: Instant,
    started: Option<Instant>,
    packets: u32,
    bytes: usize,
}

/// The pacer.
#[derive(Debug, Default)]
pub struct Pacer {
    rtx: VecDeque<Queued>,
    media: VecDeque<Queued>,
    bytes: usize,
    rate: Bitrate,
    next_send: Instant,
    probes: VecDeque<ActiveProbe>,
    /// A media packet was queued since the first waiting cluster was added.
    probe_armed: bool,
    /// The largest datagram the sender may send now, when the path limits it: probe padding
    /// is cut to it (see [`Pacer::limit_datagrams`]).
    max_datagram: Option<usize>,
}

impl Pacer {
    /// Sets the pacing rate.
    pub fn set_rate(&mut self, rate: Bitrate) {
        self.rate = rate;
    }
    /// The pacing rate.
    pub fn rate(&self) -> Bitrate {
        self.rate
    }
    /// Queues new media.
    pub fn push(&mut self, q: Queued) {
        self.bytes += q.size();
        self.media.push_back(q);
        if !self.probes.is_empty() {
            self.probe_armed = true;
        }
    }
    /// Adds a probe cluster, sent after the ones already waiting.
    pub fn add_probe(&mut self, now: Instant, cluster: ProbeCluster) {
        if self.probes.is_empty() {
            self.probe_armed = false;
        }
        self.probes.push_back(ActiveProbe {
            cluster,
            created: now,
            started: None,
            packets: 0,
            bytes: 0,
        });
    }
    /// Whether a probe cluster is being sent or waits to be.
    pub fn probing(&self) -> bool {
        !self.probes.is_empty()
    }
    /// The padding datagram size for a probe at `rate`.
    pub fn probe_padding_size(rate: Bitrate) -> usize {
        let bytes = (rate.as_f64() * PROBE_PADDING_DELTA.as_secs_f64() / 8.0) as usize;
        bytes.clamp(PROBE_PADDING_RANGE.0, PROBE_PADDING_RANGE.1)
    }
    /// Drops clusters that never started in time; returns the cluster to send now, if any.
    fn active_probe(&mut self, now: Instant) -> Option<ActiveProbe> {
        while let Some(p) = self.probes.front() {
            if p.started.is_none()
                && now.saturating_duration_since(p.created) > PROBE_CLUSTER_TIMEOUT
            {
                self.probes.pop_front();
            } else {
                break;
            }
        }
        let p = self.probes.front()?;
        (p.started.is_some() || self.probe_armed).then_some(*p)
    }
    fn probe_time(p: &ActiveProbe, now: Instant) -> Instant {
        p.started
            .map_or(now, |s| s + p.cluster.rate.time_for(p.bytes as u64))
    }
    /// When the pacer next has something to send (a packet or a probe's padding), if at all.
    pub fn next_wake(&mut self, now: Instant) -> Option<Instant> {
        if let Some(p) = self.active_probe(now) {
            return Some(Self::probe_time(&p, now));
        }
        (!self.is_empty()).then_some(self.next_send)
    }
    /// The next packet or probe padding allowed at `now`, with the probe cluster it belongs
    /// to.
    pub fn pop_paced(&mut self, now: Instant) -> Option<(Paced, Option<ProbeCluster>)> {
        let Some(p) = self.active_probe(now) else {
            return self.pop(now).map(|q| (Paced::Packet(q), None));
        };
        if now < Self::probe_time(&p, now) {
            return None;
        }
        let out = match self.rtx.pop_front().or_else(|| self.media.pop_front()) {
            Some(q) => {
                self.bytes -= q.size();
                Paced::Packet(q)
            }
            None => {
                let size = Self::probe_padding_size(p.cluster.rate);
                Paced::Padding(self.max_datagram.map_or(size, |max| size.min(max)))
            }
        };
        let size = match &out {
            Paced::Packet(q) => q.size(),
            Paced::Padding(n) => *n,
        };
        self.charge(now, size);
        let front = self.probes.front_mut().expect("active above");
        front.started.get_or_insert(now);
        front.packets += 1;
        front.bytes += size;
        if front.packets >= front.cluster.min_packets && front.bytes >= front.cluster.min_bytes {
            self.probes.pop_front();
            self.probe_armed = !self.is_empty();
        }
        Some((out, Some(p.cluster)))
    }
    /// Queues a retransmission (ahead of new media).
    pub fn push_retransmission(&mut self, q: Queued) {
        self.bytes += q.size();
        self.rtx.push_back(q);
    }
    /// Bytes waiting.
    pub fn queued_bytes(&self) -> usize {
        self.bytes
    }
    /// Nothing waiting.
    pub fn is_empty(&self) -> bool {
        self.rtx.is_empty() && self.media.is_empty()
    }
    /// Enqueue time of the oldest packet waiting.
    pub fn oldest(&self) -> Option<Instant> {
        self.rtx
            .iter()
            .chain(self.media.iter())
            .map(|q| q.enqueued)
            .min()
    }
    /// Mean time the packets waiting have waited (libwebrtc `PrioritizedPacketQueue::
    /// AverageQueueTime`), zero when empty.
    pub fn average_queue_time(&self, now: Instant) -> Duration {
        let n = self.rtx.len() + self.media.len();
        if n == 0 {
            return Duration::ZERO;
        }
        let total: Duration = self
            .rtx
            .iter()
            .chain(self.media.iter())
            .map(|q| now.saturating_duration_since(q.enqueued))
            .sum();
        total / n as u32
    }
    /// Time to send everything queued at `rate`.
    pub fn queue_time(&self, rate: Bitrate) -> Duration {
        rate.time_for(self.bytes as u64)
    }
    /// Whether the bucket allows sending at `now`.
    pub fn may_send(&self, now: Instant) -> bool {
        now >= self.next_send
    }
    /// When the bucket next allows sending.
    pub fn next_send(&self) -> Instant {
        self.next_send
    }
    /// Charges `size` bytes sent at `now` to the bucket.
    pub fn charge(&mut self, now: Instant, size: usize) {
        let base = self.next_send.max(now - MAX_BURST);
        self.next_send = base + self.rate.time_for(size as u64);
    }
    /// The next packet, if the bucket allows it at `now`.
    pub fn pop(&mut self, now: Instant) -> Option<Queued> {
        if !self.may_send(now) {
            return None;
        }
        let q = self.rtx.pop_front().or_else(|| self.media.pop_front())?;
        self.bytes -= q.size();
        self.charge(now, q.size());
        Some(q)
    }
    /// The sender may send datagrams of at most `max` bytes from now on: probe padding is cut
    /// to it, and a frame with a waiting packet over `max` loses all its waiting packets,
    /// retransmissions included (it cannot arrive whole: its packets were cut for a larger
    /// path and cannot be cut again). Returns those frames, oldest first.
    pub fn limit_datagrams(&mut self, max: usize) -> Vec<u32> {
        self.max_datagram = Some(max);
        let mut frames: Vec<u32> = self
            .media
            .iter()
            .chain(self.rtx.iter())
            .filter(|q| q.size() > max)
            .map(|q| q.header.frame)
            .collect();
        frames.sort_unstable();
        frames.dedup();
        let before = self.rtx.len() + self.media.len();
        self.media.retain(|q| !frames.contains(&q.header.frame));
        self.rtx.retain(|q| !frames.contains(&q.header.frame));
        if self.rtx.len() + self.media.len() != before {
            self.bytes = self
                .rtx
                .iter()
                .chain(self.media.iter())
                .map(Queued::size)
                .sum();
        }
        frames
    }

    /// Discards everything queued; returns the frames whose packets were dropped.
    pub fn drain(&mut self) -> Vec<u32> {
        let mut frames: Vec<u32> = self.media.iter().map(|q| q.header.frame).collect();
        frames.dedup();
        self.rtx.clear();
        self.media.clear();
        self.bytes = 0;
        self.probe_armed = false;
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(frame: u32, len: usize) -> Queued {
        Queued {
            header: MediaHeader {
                transport_seq: 0,
                media_seq: 0,
                frame,
                fragment: 0,
                count: 1,
                keyframe: false,
                retransmission: false,
                scheme: crate::WireId::Conventional,
            },
            payload: vec![0; len - crate::wire::MEDIA_HEADER_LEN],
            enqueued: Instant::ZERO,
            frame_enqueued: Instant::ZERO,
        }
    }

    #[test]
    fn paces_at_the_rate_retransmissions_first() {
        let mut p = Pacer::default();
        p.set_rate(Bitrate::kbps(800)); // 1000 bytes per 10 ms
        p.push(q(1, 1000));
        p.push(q(2, 1000));
        p.push_retransmission(q(0, 1000));
        let t = Instant::from_millis(100);
        assert_eq!(p.pop(t).unwrap().header.frame, 0);
        assert!(p.pop(t).is_none());
        // An idle pacer banks MAX_BURST of credit: the next slot is 10 ms after 95 ms.
        assert_eq!(p.next_send(), Instant::from_millis(105));
        assert_eq!(p.pop(Instant::from_millis(105)).unwrap().header.frame, 1);
        assert_eq!(p.queue_time(Bitrate::kbps(800)), Duration::from_millis(10));
        assert_eq!(p.drain(), vec![2]);
        assert!(p.is_empty());
    }

    #[test]
    fn probe_waits_for_media_then_sends_at_its_rate_padding_when_empty() {
        let mut p = Pacer::default();
        p.set_rate(Bitrate::kbps(400));
        let t = Instant::from_millis;
        let cluster = ProbeCluster {
            id: 3,
            rate: Bitrate::kbps(1600), // 1000 bytes per 5 ms
            min_packets: 5,
            min_bytes: 3000,
        };
        p.add_probe(t(0), cluster);
        assert!(
            p.pop_paced(t(0)).is_none(),
            "no media queued since: not started"
        );
        assert_eq!(p.next_wake(t(0)), None);
        p.push(q(1, 1000));
        p.push(q(2, 1000));
        let mut sent = Vec::new();
        let mut now = t(10);
        while p.probing() {
            let wake = p.next_wake(now).unwrap();
            now = now.max(wake);
            let (out, probe) = p.pop_paced(now).unwrap();
            assert_eq!(probe.map(|c| c.id), Some(3));
            sent.push((now, out));
        }
        assert_eq!(sent.len(), 5, "min packets");
        let times: Vec<u64> = sent.iter().map(|(t, _)| t.as_micros() / 1000).collect();
        // 1000, 1000, then padding of 1.6 Mb/s x 2 ms = 400 bytes.
        assert_eq!(times, vec![10, 15, 20, 22, 24]);
        assert!(matches!(sent[0].1, Paced::Packet(_)));
        assert!(matches!(sent[4].1, Paced::Padding(400)));
        // After the probe the pacing rate resumes, behind the probe's debt.
        p.push(q(4, 1000));
        assert!(p.pop_paced(t(25)).is_none());
        assert!(p.next_wake(t(25)).unwrap() > t(60));
        // On a path of 300-byte datagrams, probe padding is cut to fit (and frame 4, still
        // waiting in 1000-byte packets, cannot be sent).
        p.add_probe(t(100), cluster);
        p.push(q(5, 300));
        assert_eq!(p.limit_datagrams(300), vec![4]);
        let mut padding = Vec::new();
        let mut now = t(100);
        while p.probing() {
            now = now.max(p.next_wake(now).unwrap());
            if let (Paced::Padding(n), _) = p.pop_paced(now).unwrap() {
                padding.push(n);
            }
        }
        assert!(!padding.is_empty() && padding.iter().all(|&n| n == 300));
    }

    #[test]
    fn a_smaller_path_drops_the_frames_that_cannot_arrive_whole() {
        let mut p = Pacer::default();
        let frag = |frame, len, fragment, count| {
            let mut x = q(frame, len);
            x.header.fragment = fragment;
            x.header.count = count;
            x
        };
        // Frame 1: two full packets and a short one; frame 2: one short packet.
        p.push(frag(1, 1420, 0, 3));
        p.push(frag(1, 1420, 1, 3));
        p.push(frag(1, 400, 2, 3));
        p.push(frag(2, 900, 0, 1));
        p.push_retransmission(frag(0, 1420, 0, 1));
        p.push_retransmission(frag(0, 500, 0, 1));
        assert_eq!(p.queued_bytes(), 3 * 1420 + 400 + 900 + 500);
        assert_eq!(p.limit_datagrams(1200), vec![0, 1]);
        assert_eq!(p.queued_bytes(), 900);
        p.set_rate(Bitrate::kbps(100_000));
        let t = Instant::from_millis(10);
        let left: Vec<(u32, usize)> = std::iter::from_fn(|| p.pop(t))
            .map(|x| (x.header.frame, x.size()))
            .collect();
        assert_eq!(left, vec![(2, 900)]);
        // Nothing left over the limit: nothing more to drop.
        assert!(p.limit_datagrams(1200).is_empty());
    }

    proptest::proptest! {
        /// Any packets, any limits: what stays queued fits the latest limit, a frame keeps
        /// all its waiting packets or none, and the byte count follows.
        #[test]
        fn what_waits_after_a_limit_fits_it(
            packets in proptest::collection::vec((0u32..6, 21usize..1421, proptest::bool::ANY), 0..40),
            limits in proptest::collection::vec(0usize..1500, 1..4),
        ) {
            let mut p = Pacer::default();
            for &(frame, len, rtx) in &packets {
                match rtx {
                    true => p.push_retransmission(q(frame, len)),
                    false => p.push(q(frame, len)),
                }
            }
            for &max in &limits {
                let dropped = p.limit_datagrams(max);
                let left: Vec<&Queued> = p.rtx.iter().chain(p.media.iter()).collect();
                proptest::prop_assert!(left.iter().all(|q| q.size() <= max));
                proptest::prop_assert!(left.iter().all(|q| !dropped.contains(&q.header.frame)));
                proptest::prop_assert_eq!(p.queued_bytes(), left.iter().map(|q| q.size()).sum::<usize>());
            }
            let kept = |f: u32| packets.iter().filter(|x| x.0 == f).all(|x| x.1 <= *limits.iter().min().unwrap());
            let left = p.rtx.len() + p.media.len();
            let expected = packets.iter().filter(|x| kept(x.0)).count();
            proptest::prop_assert_eq!(left, expected);
        }
    }

    #[test]
    fn unstarted_probe_times_out() {
        let mut p = Pacer::default();
        p.set_rate(Bitrate::kbps(400));
        p.add_probe(
            Instant::ZERO,
            ProbeCluster {
                id: 1,
                rate: Bitrate::kbps(1000),
                min_packets: 5,
                min_bytes: 100,
            },
        );
        p.push(q(1, 1000));
        let late = Instant::ZERO + PROBE_CLUSTER_TIMEOUT + Duration::from_millis(1);
        // Armed by the push, so it started... only if polled in time; here it was armed
        // but the first poll is late: it never started and is dropped.
        let (out, probe) = p.pop_paced(late).unwrap();
        assert!(matches!(out, Paced::Packet(_)));
        assert!(probe.is_none());
        assert!(!p.probing());
    }
}
