//! `--display`: the window of `salsify recv` and `salsify demo` (the `salsify-window` crate,
//! SDL2), behind the cargo feature `display` (on by default). Built without it, `--display`
//! is an error that says how to get it.
//!
//! The window is opened on the main thread before the session starts (so a missing display
//! is an error before anything runs), and the session's work then runs on another thread
//! while the main thread shows pictures: see `salsify_window` for why.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::runtime::display::LiveView;

/// What a call's window hands its sources.
pub struct CallControls {
    /// This side's own pictures, as sent.
    pub preview: LiveView,
    /// On while the microphone is off (`m`).
    pub mute: crate::runtime::switch::Switch,
    /// On while the camera is off (`v`).
    pub camera_off: crate::runtime::switch::Switch,
}

/// An open window, or none.
pub struct SessionWindow {
    #[cfg(feature = "display")]
    window: salsify_window::Window,
}

/// Opens the window when `wanted`: `size` is the source's picture size; `fit_first`: it is a
/// guess, so the window takes the first picture's size.
pub fn open(
    wanted: bool,
    title: &str,
    size: (u32, u32),
    fit_first: bool,
) -> Result<Option<SessionWindow>> {
    if !wanted {
        return Ok(None);
    }
    open_window(title, size, fit_first).map(Some)
}

#[cfg(feature = "display")]
fn open_window(title: &str, size: (u32, u32), fit_first: bool) -> Result<SessionWindow> {
    let window = salsify_window::Window::open(salsify_window::WindowConfig {
        title: title.to_string(),
        size,
        fit_first_picture: fit_first,
    })
    .map_err(|e| anyhow::anyhow!("--display: {e}"))?;
    Ok(SessionWindow { window })
}

#[cfg(not(feature = "display"))]
fn open_window(_: &str, _: (u32, u32), _: bool) -> Result<SessionWindow> {
    anyhow::bail!(
        "--display: this salsify was built without the window (cargo feature `display`, on by \
         default; it needs libsdl2-dev, which scripts/setup installs). Rebuild with default \
         features, or watch a pipe instead (`salsify recv ... -o - | ffplay -`)"
    )
}

impl SessionWindow {
    /// The receiver's side of the window.
    pub fn view(&self) -> LiveView {
        #[cfg(feature = "display")]
        {
            let screen = self.window.screen();
            LiveView::new(move |picture| screen.show(picture))
        }
        #[cfg(not(feature = "display"))]
        unreachable!("no window is ever opened without the display feature")
    }

    /// A call's side of the window: where this side's own pictures go (shown small in a
    /// corner), and the flags its `m` (microphone off) and `v` (camera off) keys set.
    pub fn call_controls(&mut self) -> CallControls {
        #[cfg(feature = "display")]
        {
            let screen = self.window.preview_screen();
            let keys = self.window.call_keys();
            CallControls {
                preview: LiveView::new(move |picture| screen.show(picture)),
                mute: crate::runtime::switch::Switch::new(keys.mute_flag()),
                camera_off: crate::runtime::switch::Switch::new(keys.camera_flag()),
            }
        }
        #[cfg(not(feature = "display"))]
        unreachable!("no window is ever opened without the display feature")
    }

    /// Runs `work` on another thread while this one shows pictures; closing the window sets
    /// `stop`. Prints what the window showed and dropped, as `who`.
    pub fn run<R: Send>(
        self,
        who: &str,
        stop: &AtomicBool,
        work: impl FnOnce() -> Result<R> + Send,
    ) -> Result<R> {
        #[cfg(feature = "display")]
        {
            let (result, outcome) = self.window.run(stop, work);
            let s = outcome.stats;
            let delay = match s.present_delay_mean() {
                Some(mean) => format!(
                    "; hand-over to presented: mean {:.1} ms, max {:.1} ms",
                    mean.as_secs_f64() * 1e3,
                    s.present_delay_max.as_secs_f64() * 1e3
                ),
                None => String::new(),
            };
            eprintln!(
                "{who}: window: {} pictures shown, {} dropped (the window fell behind; it always shows the newest){delay}{}",
                s.shown,
                s.dropped,
                if outcome.closed { "; closed by the user" } else { "" }
            );
            let value = result?;
            match outcome.error {
                Some(e) => Err(e.into()),
                None => Ok(value),
            }
        }
        #[cfg(not(feature = "display"))]
        {
            let _ = (who, stop, work);
            unreachable!("no window is ever opened without the display feature")
        }
    }
}

/// Runs `work` in `window` if there is one, else right here.
pub fn run_in<R: Send>(
    window: Option<SessionWindow>,
    who: &str,
    stop: &AtomicBool,
    work: impl FnOnce() -> Result<R> + Send,
) -> Result<R> {
    match window {
        Some(w) => w.run(who, stop, work),
        None => work(),
    }
}
