//! Bit rates: the workspace's one unit type, from `salsify-time`.

pub use salsify_time::Bitrate;
