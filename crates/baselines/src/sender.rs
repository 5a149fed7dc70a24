//! Any baseline sender behind one closed enum, so a runtime drives them all the same way.

use salsify_time::Instant;

use crate::endpoint::{EncodedFrame, SenderOutput, SenderStats};
use crate::{GccSender, OracleSender, VidaptiveSender};

/// One of the baseline senders.
#[derive(Debug)]
pub enum Sender {
    /// WebRTC-style GCC.
    Conventional(GccSender),
    /// Vidaptive-style Copa.
    Vidaptive(VidaptiveSender),
    /// The oracle (simulator only).
    Oracle(OracleSender),
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Sender::Conventional($s) => $e,
            Sender::Vidaptive($s) => $e,
            Sender::Oracle($s) => $e,
        }
    };
}

impl Sender {
    /// A camera picture `picture` captured at `captured`.
    pub fn handle_frame(&mut self, now: Instant, picture: u64, captured: Instant) {
        each!(self, s => s.handle_frame(now, picture, captured))
    }
    /// The result of encode request `id`.
    pub fn handle_encoded(&mut self, now: Instant, id: u64, frame: Option<EncodedFrame>) {
        each!(self, s => s.handle_encoded(now, id, frame))
    }
    /// Encode request `id` failed.
    pub fn handle_encode_failed(&mut self, now: Instant, id: u64) {
        each!(self, s => s.handle_encode_failed(now, id))
    }
    /// A datagram from the receiver.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        each!(self, s => s.handle_datagram(now, datagram))
    }
    /// Time passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        each!(self, s => s.handle_timeout(now))
    }
    /// The next output; ends with `Timeout`.
    pub fn poll_output(&mut self, now: Instant) -> SenderOutput {
        each!(self, s => s.poll_output(now))
    }
    /// Counters.
    pub fn stats(&self) -> SenderStats {
        each!(self, s => s.stats())
    }
}
