//! The keys a call's window answers besides closing: `m` turns the microphone off and on,
//! `v` the camera. The window sets them; the call's audio and picture sources read them on
//! their own threads (a relaxed atomic each: a key takes effect within a frame).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What the window's keys switched (shared with the call's sources).
#[derive(Debug, Default)]
pub struct CallKeys {
    muted: Arc<AtomicBool>,
    camera_off: Arc<AtomicBool>,
}

impl CallKeys {
    /// The flag `m` sets: for the audio source.
    pub fn mute_flag(&self) -> Arc<AtomicBool> {
        self.muted.clone()
    }

    /// The flag `v` sets: for the picture source.
    pub fn camera_flag(&self) -> Arc<AtomicBool> {
        self.camera_off.clone()
    }

    /// The microphone is off: the call sends silence.
    pub fn muted(&self) -> bool {
        self.muted.load(Ordering::Relaxed)
    }

    /// The camera is off: the call sends a black picture.
    pub fn camera_off(&self) -> bool {
        self.camera_off.load(Ordering::Relaxed)
    }

    /// Turns the microphone off or back on; whether it is off now.
    pub fn toggle_mute(&self) -> bool {
        !self.muted.fetch_xor(true, Ordering::Relaxed)
    }

    /// Turns the camera off or back on; whether it is off now.
    pub fn toggle_camera(&self) -> bool {
        !self.camera_off.fetch_xor(true, Ordering::Relaxed)
    }

    /// The window's title with what is off: `TITLE (microphone off, camera off)`.
    pub fn title(&self, base: &str) -> String {
        let off: Vec<&str> = [
            (self.muted(), "microphone off"),
            (self.camera_off(), "camera off"),
        ]
        .into_iter()
        .filter_map(|(off, what)| off.then_some(what))
        .collect();
        match off.is_empty() {
            true => base.to_string(),
            false => format!("{base} ({})", off.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_toggle_and_the_title_says_what_is_off() {
        let keys = CallKeys::default();
        assert_eq!(keys.title("call"), "call");
        assert!(keys.toggle_mute());
        assert!(keys.muted());
        assert_eq!(keys.title("call"), "call (microphone off)");
        assert!(keys.toggle_camera());
        assert_eq!(keys.title("call"), "call (microphone off, camera off)");
        assert!(!keys.toggle_mute());
        assert!(!keys.muted());
        assert_eq!(keys.title("call"), "call (camera off)");
    }
}
