//! The real-time runtime: the sans-IO sender, receiver and link emulator driven by UDP
//! sockets, threads and the OS clock. One concern per module:
//!
//! - [`clock`]: the OS monotonic clock as a [`salsify_time::Instant`] (the only clock read);
//! - [`udp`]: sockets with kernel receive timestamps, and reader threads;
//! - [`camera`]: a video input played at its frame rate on its own thread;
//! - [`encoder`]: the encoder thread (Salsify-1c or -2c);
//! - [`sender_loop`], [`receiver_loop`], [`relay`]: the three control loops;
//! - [`display`], [`csv_log`], [`status`], [`observe`]: outputs, logs, status lines and the
//!   observation channel the demo and tests watch.

pub mod camera;
pub mod clock;
pub mod csv_log;
pub mod display;
pub mod encoder;
pub mod observe;
pub mod receiver_loop;
pub mod relay;
pub mod sender_loop;
pub mod status;
pub mod udp;

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

/// Sets `stop` after `duration` (if any) on a timer thread.
pub fn stop_after(stop: &Arc<AtomicBool>, duration: Option<Duration>) {
    let Some(duration) = duration else { return };
    let flag = stop.clone();
    std::thread::spawn(move || {
        let end = clock::now() + duration;
        while !flag.load(Ordering::Relaxed) {
            let left = clock::until(end);
            if left.is_zero() {
                flag.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    });
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
