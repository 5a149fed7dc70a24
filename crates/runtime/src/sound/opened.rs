//! An output device as a backend opens it.

use crate::audio_playout::RingWriter;

/// An output device opened, with the ring its callback reads; `S`: the backend's stream.
pub(super) struct OpenedOutput<S> {
    pub(super) stream: S,
    pub(super) ring: RingWriter,
    pub(super) rate: u32,
    pub(super) description: String,
}
