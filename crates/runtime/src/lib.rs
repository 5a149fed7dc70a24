//! The real-time runtime: any scheme's sans-IO endpoints driven by UDP sockets, threads and
//! the OS clock, and the link relay between them.
//!
//! It is the live twin of the simulator (`salsify-sim`): both build endpoints with
//! `salsify-schemes` and then know no scheme, driving `Box<dyn SenderEndpoint>` and
//! `Box<dyn ReceiverEndpoint>` through the `salsify-endpoint` traits ("mutate, then drain
//! `poll_output` until `Timeout`") and carrying out encode requests with the schemes'
//! `Executor`. What the simulator models, this crate does for real: encodes take the time
//! they take on an encoder thread, datagrams cross real sockets (through `salsify link`'s
//! relay or any network), and time is the machine's monotonic clock.
//!
//! One concern per module:
//!
//! - [`clock`]: the OS monotonic clock as a [`salsify_time::Instant`] (the only clock read);
//! - [`udp`]: sockets with kernel receive timestamps, and reader threads;
//! - [`camera`]: a picture source played at its frame rate on its own thread;
//! - [`encoder`]: the encoder thread (serial or parallel encodes, as the job says);
//! - [`sender_loop`] with [`feedback_watch`] (when a sender starts over), [`receiver_loop`]
//!   with [`receiver_sessions`] (which endpoint a datagram goes to), and [`relay`]: the three
//!   control loops; [`realtime`] and [`lateness`]: the relay's scheduling and how late it was;
//! - [`live_call`]: a call as typed configuration (scheme by name and parameters, sender,
//!   camera, emulated path, receiver's outputs), and sender, relay and receiver of one call
//!   started together on loopback;
//! - [`peer_link`]: one peer over one socket for both loops: the secure channel (when
//!   keyed) and the path (`salsify-path`: either side dials, roaming, path MTU, keep-alives);
//!   [`secure_io`]: the wall clock for handshakes and a rate-limited log of dropped
//!   datagrams;
//! - [`audio_send`] and [`audio_receive`]: the call's audio (Opus on the wall clock, in the
//!   same session on the same socket as the video, counted in the scheme's budget; the
//!   receiver's jitter buffer, lip sync, WAV file and figures); [`sound`] (the `sound`
//!   feature): the microphone and speakers, fitted by [`audio_capture`] (device buffers to
//!   20 ms frames with capture times, a bounded queue from the callback) and
//!   [`audio_playout`] (a bounded ring to the output callback, underruns counted);
//! - [`display`], [`csv_log`], [`status`], [`observe`]: outputs, logs, status lines and the
//!   observation channel the demo and tests watch.
//!
//! Errors are `anyhow` chains: everything that fails here is setup or I/O reported to a
//! person, where the context ("cannot listen on UDP ...") matters more than a type to match.
//!
//! Layer 4 of the workspace (README, "Layout"): on `salsify-schemes`, `salsify-netem`,
//! `salsify-secure`, `salsify-path` and `salsify-audio`, the real-time twin of `salsify-sim`; the command (`salsify`) and the black-box
//! peers (`salsify-peer`) use it.

#![warn(missing_docs)]

pub mod audio_capture;
pub mod audio_playout;
pub mod audio_receive;
pub mod audio_send;
pub mod busy;
pub mod call_loop;
pub mod call_start;
pub mod camera;
pub mod clock;
pub mod csv_log;
pub mod data_io;
pub mod display;
mod dont_fragment;
pub mod encoder;
pub mod feedback_watch;
pub mod hang_up;
pub mod lateness;
pub mod live_call;
pub mod loop_link;
pub mod meet_phase;
pub mod observe;
pub mod peer_link;
pub mod realtime;
pub mod receiver_loop;
pub mod receiver_sessions;
pub mod relay;
pub mod relay_sender;
pub mod remeet;
pub mod secure_io;
pub mod sender_loop;
pub mod sound;
pub mod status;
pub mod switch;
pub mod udp;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use salsify_time::Duration;

pub use audio_receive::{AudioReceiveConfig, AudioSecond};
pub use audio_send::{AudioSendConfig, LiveAudioInput};
pub use call_start::CallStart;
pub use camera::{PictureSource, SyntheticCamera};
pub use display::{DisplayConfig, LiveView};
pub use live_call::{
    CallAudio, CameraConfig, LinkPath, LiveCall, PathStart, PreparedCall, ReceiverSide,
    RunningCall, SchemeChoice, SenderSide,
};
pub use observe::{Observation, Observer};
pub use receiver_loop::{ReceiverLoopConfig, ReceiverTotals};
pub use relay::{DirectionConfig, LinkStart, RelayConfig, RelayTotals};
pub use sender_loop::{SenderLoopConfig, SenderTotals};

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
