//! What an ACK tells the sender: the receiver's newest fragment (the N of the budget), its
//! inter-arrival estimate, the frames it lost, the states it holds and its forecast.

use salsify_endpoint::SenderEvent;
use salsify_time::Instant;

use super::Sender;
use crate::codec::SendableFrame;
use crate::delivery::HeldForecast;
use crate::wire::{Ack, FragmentId, DATA_HEADER_LEN, FORECAST_UNIT_BYTES};

impl<F: SendableFrame> Sender<F> {
    /// Maps the receiver's newest received fragment to a sequence number (for N).
    pub(super) fn note_received(&mut self, highest: FragmentId) {
        let Some(&(_, first, count)) = self
            .frame_records
            .iter()
            .find(|(frame, _, _)| *frame == highest.frame)
        else {
            return;
        };
        if highest.index >= count {
            return;
        }
        let seq = first + u64::from(highest.index);
        if self.view.highest_seq.is_none_or(|s| seq > s) {
            self.view.highest_seq = Some(seq);
            if let Some(pos) = self.emitted.iter().position(|(id, _)| *id == highest) {
                self.acked_emitted_at = Some(self.emitted[pos].1);
                self.emitted.drain(..=pos);
            }
            while self
                .frame_records
                .front()
                .is_some_and(|(frame, _, _)| *frame != highest.frame)
            {
                self.frame_records.pop_front();
            }
        }
    }

    /// Takes in a fresh ACK: estimate, loss report, held states, state eviction, pacing.
    pub(super) fn apply_ack(&mut self, now: Instant, ack: Ack) {
        self.view.ack_number = Some(ack.ack_number);
        self.view.mean_interarrival = ack.mean_interarrival.or(self.view.mean_interarrival);
        if ack.frames_lost > self.view.frames_lost {
            let until = now + self.config.recovery_duration;
            self.recovery_until = Some(until);
            self.stats.recoveries += 1;
            self.events
                .push_back(SenderEvent::RecoveryStarted { at: now, until });
        }
        self.view.frames_lost = self.view.frames_lost.max(ack.frames_lost);
        // The receiver keeps only states from its newest one the sender can use onward,
        // and the sender never encodes from anything older, so older states are dead.
        if let Some(newest) = ack
            .held_states
            .iter()
            .rev()
            .find(|h| self.states.contains(**h))
        {
            self.states.evict_older_than(*newest);
        }
        self.view.held_states = ack.held_states;
        if let Some(forecast) = ack.forecast {
            let wire = self.payload + DATA_HEADER_LEN;
            self.view.forecast = Some(HeldForecast::new(now, &forecast, FORECAST_UNIT_BYTES, wire));
            self.view.forecast_units = Some(forecast);
        }
        if let Some(tau) = self.view.mean_interarrival {
            let p = &self.config.pacing;
            let gap = (tau / p.speedup).clamp(p.min_gap, p.max_gap);
            self.pacer.set_gap(gap);
        }
    }
}
