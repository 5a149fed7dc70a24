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
//! **In a call** ([`Window::preview_screen`], [`Window::call_keys`]) the window also shows a
//! small preview of this side's own pictures in its bottom-right corner, and its `m` and `v`
//! keys turn the microphone and the camera off and on ([`CallKeys`]; the title says what is
//! off).
//!
//! **Closing** the window (its close button, Escape or `q`) sets the session's stop flag, the
//! same flag Ctrl-C sets, so the session ends the same way and keeps everything written.
//! SDL's own SIGINT/SIGTERM handlers are turned off so Ctrl-C stays the command's.
//!
//! Colours: pictures are shown as BT.601 limited-range YUV, VP8's colour space (SDL would
//! otherwise switch to BT.709 above 576 lines).
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-codec` only; only the command
//! (`salsify`, crates/cli) opens it.

#![warn(missing_docs)]

mod call_keys;
mod config;
mod mailbox;
mod sdl;

pub use call_keys::CallKeys;
pub use config::{WindowConfig, WindowError, WindowOutcome};
pub use mailbox::{Screen, WindowStats};
pub use sdl::Window;
