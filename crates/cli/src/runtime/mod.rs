//! The real-time runtime is the `salsify-runtime` library (re-exported here, so `link`,
//! `send`, `recv` and `demo` name its modules as `runtime::...`); this module adds what only
//! a command line needs: Ctrl-C, `--duration`-style seconds, and the video inputs named on
//! the command line as a camera's picture source.

mod video_source;

pub use salsify_runtime::*;
pub use video_source::{CameraConfig, VideoSource};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_time::Duration;

/// A stop flag set by Ctrl-C (SIGINT or SIGTERM). A second Ctrl-C exits at once.
pub fn stop_on_ctrl_c() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("salsify: stopping (Ctrl-C again to quit at once)");
    })
    .context("cannot install the Ctrl-C handler")?;
    Ok(stop)
}

/// Parses a number of seconds for `--duration` and friends.
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(v.is_finite() && v > 0.0 && v <= 1e6) {
        return Err(format!("{s} s is not a positive duration"));
    }
    Ok(Duration::from_secs_f64(v))
}
