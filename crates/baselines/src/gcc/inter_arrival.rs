//! Packet groups and their deltas (draft-ietf-rmcat-gcc section 5.2; libwebrtc's
//! `InterArrivalDelta`).
//!
//! Packets sent within [`SEND_GROUP_SPAN`] of a group's first packet form one group (a frame
//! or a pacer burst). When a group is complete, the estimator gets its deltas against the
//! previous group: `send_delta` between the groups' last send times, `arrival_delta` between
//! their last arrivals. A packet that arrives within [`BURST_DELTA`] of the previous one and
//! whose one-way delay went down joins the current group even if sent later (a burst the
//! network delivered back to back, up to [`MAX_BURST`] long): it says nothing about queueing.

use salsify_time::{Duration, Instant};

/// Group length in send time: the draft's "burst_time" 5 ms, libwebrtc's
/// `kSendTimeGroupLength`.
pub const SEND_GROUP_SPAN: Duration = Duration::from_millis(5);
/// Arrivals closer than this with falling delay are one burst (libwebrtc's
/// `kBurstDeltaThreshold`, 5 ms).
pub const BURST_DELTA: Duration = Duration::from_millis(5);
/// Longest burst merged so (libwebrtc's `kMaxBurstDuration`, 100 ms).
pub const MAX_BURST: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
struct Group {
    first_send: Instant,
    last_send: Instant,
    first_arrival: Instant,
    last_arrival: Instant,
    size: usize,
}

/// The deltas between two complete groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupDelta {
    /// Send time difference in ms.
    pub send_delta_ms: f64,
    /// Arrival time difference in ms.
    pub arrival_delta_ms: f64,
    /// Arrival time of the newer group's last packet.
    pub arrival: Instant,
    /// Bytes in the newer group.
    pub size: usize,
}

/// Turns per-packet (send, arrival) times into group deltas.
#[derive(Debug, Default)]
pub struct InterArrival {
    current: Option<Group>,
    previous: Option<Group>,
}

impl InterArrival {
    /// A packet sent at `send` arrived at `arrival`. Returns a delta when it completes a group.
    pub fn on_packet(
        &mut self,
        send: Instant,
        arrival: Instant,
        size: usize,
    ) -> Option<GroupDelta> {
        let Some(cur) = self.current.as_mut() else {
            self.current = Some(Group {
                first_send: send,
                last_send: send,
                first_arrival: arrival,
                last_arrival: arrival,
                size,
            });
            return None;
        };
        if send < cur.first_send {
            return None; // reordered from an older group: ignored, as libwebrtc does
        }
        let in_group = send - cur.first_send <= SEND_GROUP_SPAN;
        let burst = {
            let arrival_gap = arrival.checked_duration_since(cur.last_arrival);
            let send_gap = send.saturating_duration_since(cur.last_send);
            match arrival_gap {
                Some(gap) => {
                    gap < BURST_DELTA && gap < send_gap && arrival - cur.first_arrival < MAX_BURST
                }
                None => false,
            }
        };
        if in_group || burst {
            cur.last_send = cur.last_send.max(send);
            cur.last_arrival = cur.last_arrival.max(arrival);
            cur.size += size;
            return None;
        }
        let done = *cur;
        let delta = self.previous.map(|prev| GroupDelta {
            send_delta_ms: ms(done.last_send, prev.last_send),
            arrival_delta_ms: ms(done.last_arrival, prev.last_arrival),
            arrival: done.last_arrival,
            size: done.size,
        });
        self.previous = Some(done);
        self.current = Some(Group {
            first_send: send,
            last_send: send,
            first_arrival: arrival,
            last_arrival: arrival,
            size,
        });
        delta
    }
}

fn ms(a: Instant, b: Instant) -> f64 {
    (a.as_micros() as f64 - b.as_micros() as f64) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_send_time_and_reports_deltas() {
        let mut ia = InterArrival::default();
        let t = Instant::from_millis;
        // Group 1: sent 0..4 ms; group 2: sent 20..22 ms, arriving 5 ms later than sent + 50.
        assert!(ia.on_packet(t(0), t(50), 1000).is_none());
        assert!(ia.on_packet(t(4), t(54), 1000).is_none());
        assert!(ia.on_packet(t(20), t(75), 1000).is_none());
        assert!(ia.on_packet(t(22), t(77), 1000).is_none());
        let d = ia.on_packet(t(40), t(95), 1000).unwrap();
        assert_eq!((d.send_delta_ms, d.arrival_delta_ms), (18.0, 23.0));
        assert_eq!(d.size, 2000);
    }
}
