//! A build without the `sound` feature: no device opens, and the error says how to build
//! one that does.

use anyhow::{bail, Result};
use salsify_time::Instant;

use super::opened::OpenedOutput;
use super::support::NOT_BUILT;
use crate::audio_capture::CaptureSink;

/// No stream is ever made here.
pub(super) enum Stream {}

pub(super) fn open_input(_origin: Instant, _sink: CaptureSink) -> Result<(Stream, String)> {
    bail!("--audio mic: {NOT_BUILT}")
}

pub(super) fn open_output() -> Result<OpenedOutput<Stream>> {
    bail!("--play: {NOT_BUILT}")
}

pub(super) fn probe_input() -> Result<String> {
    bail!("--audio mic: {NOT_BUILT}")
}

pub(super) fn probe_output() -> Result<String> {
    bail!("--play: {NOT_BUILT}")
}
