//! The run's two emulated links and what each datagram on them is for.
//!
//! Side `s` of a run sends its media (video and audio) over link `s` and its receiver's
//! feedback over the other link. A one-way run has one side: link 0 carries the video, link
//! 1 only its ACKs. A two-way call has two: link 0 carries A's media and B's feedback, link 1
//! B's media and A's feedback, each in the link's one FIFO queue, so a side's feedback waits
//! behind the other side's media as it would on a real path.

use salsify_netem::{Delivered, Link, LinkConfig, LinkEvent, LinkStats, Trace};
use salsify_time::Instant;

use crate::harness::config_error;
use crate::SimError;

/// Whose endpoint a datagram on a link is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum For {
    /// Side `s`'s receiver: media from side `s`'s sender.
    Media(usize),
    /// Side `s`'s sender: feedback from side `s`'s receiver.
    Feedback(usize),
}

/// A datagram in flight, with where it goes.
pub(crate) struct Datagram {
    pub to: For,
    pub bytes: Vec<u8>,
}

/// The link side `side`'s media travel on.
pub(crate) fn media_link(side: usize) -> usize {
    side
}

/// The link side `side`'s feedback travels on.
pub(crate) fn feedback_link(side: usize) -> usize {
    1 - side
}

/// Both links, with the events recorded on those that carry media and the feedback bytes
/// each delivered (so a direction's utilisation counts its media only).
pub(crate) struct Links {
    links: [Link<Datagram>; 2],
    recorded: [Vec<LinkEvent>; 2],
    feedback_bytes: [u64; 2],
}

impl Links {
    /// Link 0 from `first`, link 1 from `second`; `record` says on which links every event
    /// is kept (for a Mahimahi log).
    pub fn new(
        first: &LinkConfig,
        second: &LinkConfig,
        record: [bool; 2],
    ) -> Result<Links, SimError> {
        let build = |config: &LinkConfig, record: bool| {
            let mut config = config.clone();
            config.record_events = record;
            Link::new(config, Instant::ZERO).map_err(config_error)
        };
        Ok(Links {
            links: [build(first, record[0])?, build(second, record[1])?],
            recorded: [Vec::new(), Vec::new()],
            feedback_bytes: [0, 0],
        })
    }

    /// Offers a datagram of `len` bytes (overhead included) to link `link`. A refused one
    /// (too large for the link) is lost like a dropped one.
    pub fn send(&mut self, now: Instant, link: usize, to: For, bytes: Vec<u8>, len: usize) {
        let _ = self.links[link].handle_packet(now, Datagram { to, bytes }, len);
    }

    /// The next datagram link `link` has delivered by `now`.
    pub fn poll(&mut self, link: usize, now: Instant) -> Option<Delivered<Datagram>> {
        let d = self.links[link].poll_delivery(now)?;
        if let For::Feedback(_) = d.payload.to {
            self.feedback_bytes[link] += d.size_bytes as u64;
        }
        Some(d)
    }

    /// When either link next changes.
    pub fn next_event(&self) -> Option<Instant> {
        self.links.iter().filter_map(Link::poll_timeout).min()
    }

    /// Keeps the events of the links that record them.
    pub fn record_events(&mut self) {
        for (link, recorded) in self.links.iter_mut().zip(&mut self.recorded) {
            while let Some(e) = link.poll_event() {
                recorded.push(e);
            }
        }
    }

    /// Brings link `link` to the end of the run (its capacity counts to the end).
    pub fn close(&mut self, link: usize, end: Instant) {
        self.links[link].handle_timeout(end);
        self.record_events();
    }

    /// Link `link`'s counters.
    pub fn stats(&self, link: usize) -> LinkStats {
        self.links[link].stats()
    }

    /// Link `link`'s trace.
    pub fn trace(&self, link: usize) -> &Trace {
        self.links[link].trace()
    }

    /// Bytes one delivery opportunity of link `link` carries.
    pub fn opportunity_bytes(&self, link: usize) -> u32 {
        self.links[link].opportunity_bytes()
    }

    /// Feedback bytes link `link` delivered.
    pub fn feedback_bytes(&self, link: usize) -> u64 {
        self.feedback_bytes[link]
    }

    /// The events recorded on link `link`, taken out.
    pub fn take_events(&mut self, link: usize) -> Vec<LinkEvent> {
        std::mem::take(&mut self.recorded[link])
    }
}
