//! What the rules are told of the link.

use salsify_time::{Duration, Instant};

use crate::delivery::HeldForecast;

/// What the sender knows of the link when a rule asks.
#[derive(Debug, Clone, Copy)]
pub struct LinkView<'a> {
    /// The receiver's mean inter-arrival time (tau), once reported.
    pub tau: Option<Duration>,
    /// The receiver's newest forecast, if any.
    pub forecast: Option<&'a HeldForecast>,
    /// When the last ACK arrived.
    pub acked_at: Option<Instant>,
    /// Fragments sent beyond the newest one the receiver reported (N).
    pub in_flight: u64,
    /// Payload bytes of a full fragment now (the budget's MTU): the configured
    /// `fragment_payload`, or less when the path carries only smaller datagrams (see
    /// [`crate::Sender::set_max_datagram`]).
    pub mtu: usize,
}
