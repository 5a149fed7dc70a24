//! What the window is asked for ([`WindowConfig`]), why it cannot be opened
//! ([`WindowError`]) and how a session with it ended ([`WindowOutcome`]).

use crate::mailbox::WindowStats;

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

/// How a [`Window::run`](crate::Window::run) ended.
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
pub(crate) fn named_display() -> Option<String> {
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
