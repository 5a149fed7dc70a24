//! A live dashboard in the browser: a call's control loop (link, sender, scheme, receiver and
//! the last shown picture) as charts of four points a second that the page redraws twice a
//! second, and any recorded run on the same page with a time cursor.
//!
//! One concern per module:
//!
//! - [`board`]: sans-IO; values reported at any time become one sample per 250 ms bin,
//!   the same way for a live call and a replayed run;
//! - [`live`]: the call's side: a bounded channel the call offers to and never waits on,
//!   and the dashboard's thread that fills the board and makes pictures;
//! - [`picture`]: the last shown picture as a JPEG, off the call's thread;
//! - [`priority`]: the dashboard's threads yield the CPU to the call's;
//! - [`server`]: HTTP (`tiny_http`) on a thread of its own: the page, embedded in the
//!   binary, with the samples as server-sent events. It binds loopback unless told
//!   otherwise, and then asks for a random token.
//!
//! The page (`src/page/`) draws its charts on canvases with its own few lines of JavaScript,
//! redrawing a chart only when what it shows changed; it fetches nothing from elsewhere. The
//! driver (the `salsify` command) decides what each observation of a call means on the page
//! ([`live::Translate`]) and reads run folders.
//!
//! Layer 1 of the workspace (README, "Layout"): on `salsify-codec` (pictures) and
//! `salsify-time` only; the command uses it.

#![warn(missing_docs)]

pub mod board;
pub mod live;
pub mod picture;
pub mod priority;
pub mod server;

use std::sync::Arc;

use anyhow::Result;
use serde_json::Value;

pub use board::{Agg, Board, Sample};
pub use live::{Feed, Live, Sink, Translate};
pub use server::{HttpServer, Listen, Picture, Shared};

/// Serves a finished run's samples (a replay: the page gets them all at once, then `end`).
pub fn serve_recorded(
    listen: &Listen,
    meta: Value,
    samples: &[Sample],
) -> Result<(HttpServer, Arc<Shared>)> {
    let shared = Shared::new(meta);
    shared.update(|s| {
        s.samples = samples.iter().map(|x| x.to_json().to_string()).collect();
        s.ended = true;
    });
    let server = HttpServer::start(listen, shared.clone())?;
    Ok((server, shared))
}
