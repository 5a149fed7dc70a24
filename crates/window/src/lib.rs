//! A window that shows decoded pictures as they arrive: `salsify recv --display` and
//! `salsify demo --display`.
//!
//! The interface is narrow: [`Window::open`] opens it (or says clearly why it cannot),
//! [`Window::screen`] gives the [`Screen`] handle a receiver on any thread hands each shown
//! I420 picture to, and [`Window::run`] drives the window on the calling thread while the
//! session's work runs on another, until the work ends or the window is closed.
//!
//! **No delay added.** There is no jitter buffer and no queue: the receiver drops each picture
//! in a one-picture slot and goes on; the window shows the newest picture as soon as it is
//! there, and a picture replaced before the window took it is counted as dropped
//! ([`WindowStats`]). A slow window costs skipped pictures, never delay, and never blocks the
//! receiver.
//!
//! **Threads.** SDL's video and event calls must all come from one thread (the `sdl2` crate
//! enforces it: the thread that initialised SDL), and on macOS that thread must be the
//! process's main thread. So [`Window`] is not `Send`: the command opens it on its main thread
//! and [`Window::run`] moves the session's work (receiver loop, demo monitor) to a scoped
//! thread. On Linux (X11, Wayland) any one thread would do; the main thread works everywhere.
//!
//! **Closing** the window (its close button, Escape or `q`) sets the session's stop flag, the
//! same flag Ctrl-C sets, so the session ends the same way and keeps everything written.
//! SDL's own SIGINT/SIGTERM handlers are turned off so Ctrl-C stays the command's.
//!
//! Colours: pictures are shown as BT.601 limited-range YUV, VP8's colour space (SDL would
//! otherwise switch to BT.709 above 576 lines).

#![warn(missing_docs)]

mod mailbox;
mod sdl;

pub use mailbox::{Screen, WindowStats};
pub use sdl::Window;

/// How to open the window.
#[derive(Debug, Clone)]
pub struct WindowConfig {
    /// Title bar text.
    pub title: String,
    /// Initial size of the picture area (the source's size when known).
    pub size: (u32, u32),
    /// Resize the window to the first picture's size (when the source's size was a guess).
    pub fit_first_picture: bool,
}

/// Why the window cannot be opened or shown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WindowError {
    /// Neither `DISPLAY` nor `WAYLAND_DISPLAY` is set.
    #[error(
        "no display to open a window on: neither DISPLAY nor WAYLAND_DISPLAY is set. Run it in \
         a desktop session, over `ssh -X`, or under a virtual X server (`xvfb-run -a salsify \
         ...`); or leave out --display and watch a pipe (`salsify recv ... -o - | ffplay -`)"
    )]
    NoDisplay,
    /// SDL could not start video or open the window.
    #[error(
        "cannot open a window on {display}: {reason}. Is the display server running, and does it \
         let this user in (XAUTHORITY, xhost)? SDL_VIDEODRIVER picks another video driver; or \
         leave out --display and watch a pipe (`salsify recv ... -o - | ffplay -`)"
    )]
    Open {
        /// The display asked for (`DISPLAY=:0`, `WAYLAND_DISPLAY=wayland-0`, ...).
        display: String,
        /// SDL's message.
        reason: String,
    },
    /// Showing a picture failed after the window opened.
    #[error("the window failed: {0}")]
    Render(String),
}

/// How a [`Window::run`] ended.
#[derive(Debug, Default)]
pub struct WindowOutcome {
    /// What went through the window.
    pub stats: WindowStats,
    /// The user closed the window (which stopped the session).
    pub closed: bool,
    /// Showing pictures failed (which stopped the session).
    pub error: Option<WindowError>,
}

/// The display the environment names, for messages; `None`: none is named.
fn named_display() -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(driver) = var("SDL_VIDEODRIVER") {
        return Some(format!("SDL_VIDEODRIVER={driver}"));
    }
    match (var("WAYLAND_DISPLAY"), var("DISPLAY")) {
        (_, Some(x)) => Some(format!("DISPLAY={x}")),
        (Some(w), None) => Some(format!("WAYLAND_DISPLAY={w}")),
        (None, None) => None,
    }
}
