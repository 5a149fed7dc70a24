//! The size of the fragments the sender cuts, as the path's datagram size allows: the
//! configured `fragment_payload` until path MTU discovery says the path carries less
//! ([`Sender::set_max_datagram`]).

use salsify_endpoint::SenderEvent;
use salsify_time::Instant;

use super::Sender;
use crate::codec::SendableFrame;
use crate::delivery::HeldForecast;
use crate::wire::{DATA_HEADER_LEN, FORECAST_UNIT_BYTES};

impl<F: SendableFrame> Sender<F> {
    /// The path carries datagrams of at most `bytes` (path MTU discovery raised or lowered
    /// it). From now on frames are cut into fragments of
    /// [`salsify_endpoint::fragment_payload`]`(fragment_payload, bytes, DATA_HEADER_LEN)`
    /// payload bytes — the configured size at most, one byte at least — and everything that
    /// counts in fragments counts in fragments of that size: the budget `MTU x (d / tau - N)`
    /// and the forecast's, the slow-link rules' one-fragment probes, the resolution step, the
    /// conventional-transport ablation's rate. A size that leaves the fragment size as it is
    /// changes nothing; a sender never told keeps the configured size.
    ///
    /// Fragments already in the pacer were cut for the old size and cannot be cut again (a
    /// frame's fragment count is on the wire in each of them). A frame with a waiting
    /// fragment larger than the new size cannot arrive whole, so all its waiting fragments
    /// are dropped, never sent; the sender treats it as a loss it knows of at once and enters
    /// loss recovery (the next frames are encoded from a state the receiver acknowledged), as
    /// the receiver's loss report would make it a round trip later. Frames whose waiting
    /// fragments all fit are sent as they are.
    ///
    /// The receiver's `tau` is not the sender's to change: a size-aware estimate (the
    /// receiver's default) is per the largest datagram it has seen, so after a decrease the
    /// EWMA budget counts the smaller fragments at the larger ones' pace — fewer than the
    /// link delivers by at most the ratio of the two sizes, never more. The forecast counts
    /// bytes: the budget read from it (the default, once an ACK has carried one) is exact.
    pub fn set_max_datagram(&mut self, now: Instant, bytes: usize) {
        let payload = salsify_endpoint::fragment_payload(
            self.config.fragment_payload,
            bytes,
            DATA_HEADER_LEN,
        );
        if payload == self.payload {
            return;
        }
        let shrank = payload < self.payload;
        self.payload = payload;
        if let (Some(held), Some(units)) = (&self.view.forecast, &self.view.forecast_units) {
            let wire = payload + DATA_HEADER_LEN;
            let received = held.received_at;
            self.view.forecast = Some(HeldForecast::new(
                received,
                units,
                FORECAST_UNIT_BYTES,
                wire,
            ));
        }
        if shrank {
            self.drop_oversized(now);
        }
    }

    /// Drops every waiting fragment of the frames with a waiting fragment over the size in
    /// use, and starts loss recovery if there were any (see [`Self::set_max_datagram`]).
    fn drop_oversized(&mut self, now: Instant) {
        let limit = self.payload;
        let mut frames: Vec<u32> = Vec::new();
        for f in self.pacer.iter().filter(|f| f.payload.len() > limit) {
            if frames.last() != Some(&f.frame) {
                frames.push(f.frame);
            }
        }
        if frames.is_empty() {
            return;
        }
        self.pacer.retain(|f| !frames.contains(&f.frame));
        let until = now + self.config.recovery_duration;
        self.recovery_until = Some(until);
        self.stats.recoveries += 1;
        self.events
            .push_back(SenderEvent::RecoveryStarted { at: now, until });
    }
}
