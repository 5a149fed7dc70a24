//! The real-time runtime is the `salsify-runtime` library (re-exported here, so `link`,
//! `send`, `recv` and `demo` name its modules as `runtime::...`); this module adds what only
//! a command line needs: Ctrl-C, `--duration`-style seconds, and the video inputs named on
//! the command line as a camera's picture source.

mod camera_input;

pub use camera_input::CameraInput;
pub use salsify_runtime::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result};
use salsify_time::Duration;

/// A stop flag set by Ctrl-C (SIGINT or SIGTERM). A second Ctrl-C exits at once.
///
/// The handler is installed once per process; each call gets a fresh flag, which the
/// handler then sets, so one process can run several sessions in turn (`salsify eval`'s
/// live cells).
pub fn stop_on_ctrl_c() -> Result<Arc<AtomicBool>> {
    static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let stop = Arc::new(AtomicBool::new(false));
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop.clone());
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                let first = !INTERRUPTED.swap(true, Ordering::SeqCst);
                let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone();
                if let Some(flag) = current {
                    flag.store(true, Ordering::SeqCst);
                }
                if !first {
                    std::process::exit(130);
                }
                eprintln!("salsify: stopping (Ctrl-C again to quit at once)");
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(anyhow::Error::msg)
        .context("cannot install the Ctrl-C handler")?;
    Ok(stop)
}

/// The flag the Ctrl-C handler sets (the latest [`stop_on_ctrl_c`] made).
static CURRENT: Mutex<Option<Arc<AtomicBool>>> = Mutex::new(None);

/// Whether Ctrl-C was pressed since the process started.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C was pressed since the process started (a session it stopped early is
/// incomplete).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
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
