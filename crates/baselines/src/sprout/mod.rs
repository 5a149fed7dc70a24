//! Sprout (Winstein et al., NSDI 2013) carrying video as Alfalfa did, and in its bulk mode.
//!
//! The receiver ([`SproutReceiver`]) runs Sprout's tick loop over what arrives
//! (`salsify_sprout_model::ArrivalObserver`) and sends a feedback datagram every tick (20 ms,
//! the `sendonly` variant's heartbeat) carrying its forecast, the bytes received or written
//! off, the newest frame it decoded and the newest it gave up on. The sender
//! ([`SproutSender`]) keeps Sprout's queue estimate and window (`salsify_sprout_model::SenderWindow`)
//! and:
//! - video: at each camera picture asks the functional codec for a frame of at most the
//!   window (the size-target job, from the state the receiver is assumed to hold), or skips
//!   the picture when the window is under [`SproutConfig::min_frame_bytes`] (Alfalfa's
//!   1000 bytes). The last fragment of a frame announces the frame interval as its
//!   time-to-next, so the receiver does not read the gap between frames as an outage. After a
//!   reported loss it encodes from the newest state the receiver acknowledged;
//! - bulk: sends filler in full datagrams while the window allows (the paper's `sproutbt2`),
//!   so Sprout can be compared with the paper's own per-link table.
//!
//! Both send a heartbeat after [`SproutConfig::heartbeat_interval`] without data (the
//! original's 50 ms fallback). The forecaster (Sprout or Sprout-EWMA) is named in every data
//! datagram, so a receiver learns it with the session.

mod config;
mod receiver;
mod sender;
pub mod wire;

pub use config::{scheme_name, SproutConfig, SproutMode};
pub use receiver::SproutReceiver;
pub use sender::SproutSender;

/// The scheme a Sprout data datagram belongs to (`None` for feedback or a datagram that
/// does not parse).
pub fn scheme_of(datagram: &[u8]) -> Option<&'static str> {
    match wire::parse(datagram).ok()? {
        wire::Datagram::Data(h, _) => {
            let mode = match h.payload {
                wire::Payload::Filler => SproutMode::Bulk,
                _ => SproutMode::Video,
            };
            Some(scheme_name(h.forecaster, mode))
        }
        wire::Datagram::Feedback(_) => None,
    }
}
