//! The virtual-time simulator: camera -> sender -> link -> receiver -> ACK link -> sender,
//! for any scheme.
//!
//! Every part is a sans-IO state machine driven with the same calls the real-time runtime
//! makes; here time jumps from one event to the next (the earliest of all deadlines), so a
//! run takes as long as its computation, not as long as the video. The endpoints are built by
//! `salsify-schemes` and driven only through the `salsify-endpoint` traits: this loop knows no
//! scheme. The codec is real (libvpx encodes and decodes every frame), but its time is charged
//! from a [`CostModel`], and every source of randomness is seeded, so the same configuration
//! gives the same per-frame log.
//!
//! [`simulate`] runs one direction (the video over the data link, its feedback over the
//! feedback link); [`simulate_two_way`] runs a call, both directions in one virtual-time
//! loop, each link carrying one side's media and the other side's feedback in one queue
//! (`links`), so each direction's feedback waits behind the other direction's media.
//!
//! Layer 4 of the workspace (README, "Layout"): on `salsify-schemes`, `salsify-netem` and
//! `salsify-metrics`, the virtual-time twin of `salsify-runtime`; the evaluation (`salsify-eval`)
//! and the black-box peers run it.

mod audio;
mod audio_log;
pub mod bounds;
mod config;
mod cost;
pub mod experiment;
mod feedback;
mod harness;
mod links;
mod log;
mod output;
mod side;
mod video;

pub use audio::{audio_figures, write_audio_csv, AudioOutput, AUDIO_CSV_HEADER};
pub use audio_log::{read_run_audio, read_shown_pictures, RunAudio};
pub use config::{SimAudio, SimAudioInput, SimConfig, SimError};
pub use cost::{
    CostError, CostModel, AV1_DECODE_US_PER_MEGAPIXEL, AV1_ENCODE_US_PER_MEGAPIXEL, LATE_ONE_IN,
};
pub use feedback::FeedbackDelay;
pub use log::{write_frames_csv, FrameLog};
pub use output::{SimOutput, TwoWayOutput, B_TO_A_DIR};
pub use video::{ClipError, LoopedClip, SyntheticVideo, VideoSource};

use salsify_time::{Duration, Instant};

use links::{For, Links};
use side::Side;

pub use salsify_metrics::FrameRecord;

/// Runs one simulation; `progress` is called now and then with the virtual time reached.
pub fn simulate(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
) -> Result<SimOutput, SimError> {
    simulate_until(config, video, progress, &|| false)
}

/// [`simulate`], stopped with [`SimError::Stopped`] as soon as `stop` says so (it is asked
/// before every event, so a Ctrl-C ends even a slow run within one event).
pub fn simulate_until(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
    stop: &dyn Fn() -> bool,
) -> Result<SimOutput, SimError> {
    let output = run(config, video, 1, progress, stop)?.pop();
    Ok(output.expect("a one-way run has one side"))
}

/// Runs a two-way call: side A's camera to side B over link 0 (the experiment's video
/// direction, `PREFIX.down`) and side B's to side A over link 1 (`PREFIX.up`), each side's
/// feedback over the other side's media link, in its queue behind that side's media. Both
/// cameras play `video`; both sides run the configured scheme and audio. `progress` is
/// called now and then with the virtual time reached.
pub fn simulate_two_way(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
) -> Result<TwoWayOutput, SimError> {
    simulate_two_way_until(config, video, progress, &|| false)
}

/// [`simulate_two_way`], stopped as [`simulate_until`] is.
pub fn simulate_two_way_until(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    progress: &mut dyn FnMut(Duration),
    stop: &dyn Fn() -> bool,
) -> Result<TwoWayOutput, SimError> {
    let mut outputs = run(config, video, 2, progress, stop)?.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(a_to_b), Some(b_to_a)) => Ok(TwoWayOutput { a_to_b, b_to_a }),
        _ => unreachable!("a two-way run has two sides"),
    }
}

/// Runs `sides` directions (1: one-way, 2: a call) to the end of the configured duration,
/// or until `stop` says so.
fn run(
    config: &SimConfig,
    video: &mut dyn VideoSource,
    sides: usize,
    progress: &mut dyn FnMut(Duration),
    stop: &dyn Fn() -> bool,
) -> Result<Vec<SimOutput>, SimError> {
    let mut sim = Sim::new(config, video, sides)?;
    let end = Instant::ZERO + config.duration;
    let mut last_report = Instant::ZERO;
    while let Some(now) = sim.next_event().filter(|&t| t < end) {
        if stop() {
            return Err(SimError::Stopped);
        }
        sim.step(now)?;
        if now - last_report >= Duration::from_millis(500) {
            progress(now.since_epoch());
            last_report = now;
        }
    }
    progress(config.duration);
    sim.finish(end)
}

/// The moving parts of one run: its directions and the two links they share.
struct Sim<'a> {
    sides: Vec<Side<'a>>,
    links: Links,
    /// Every side's camera (the same pictures for each).
    video: &'a mut dyn VideoSource,
}

impl<'a> Sim<'a> {
    fn new(
        config: &'a SimConfig,
        video: &'a mut dyn VideoSource,
        sides: usize,
    ) -> Result<Self, SimError> {
        config.cost.validate().map_err(harness::config_error)?;
        let fps = video.fps();
        if !(fps.is_finite() && fps > 0.0) {
            return Err(SimError::Config(format!("frame rate {fps}")));
        }
        let media = [&config.data_link, &config.feedback_link];
        let record = [config.record_packets, config.record_packets && sides > 1];
        let links = Links::new(media[0], media[1], record)?;
        let sides = (0..sides)
            .map(|i| Side::new(i, config, media[i], &*video))
            .collect::<Result<_, _>>()?;
        Ok(Sim {
            sides,
            links,
            video,
        })
    }

    fn next_event(&self) -> Option<Instant> {
        let sides = self.sides.iter().filter_map(Side::next_event);
        sides.chain(self.links.next_event()).min()
    }

    /// Handles everything due at `now`: each side's encoder and camera, every datagram the
    /// links delivered to the endpoint it is for, then each side's timers and outputs.
    fn step(&mut self, now: Instant) -> Result<(), SimError> {
        for side in &mut self.sides {
            side.begin(now, self.video, &mut self.links)?;
        }
        for link in 0..2 {
            while let Some(d) = self.links.poll(link, now) {
                match d.payload.to {
                    For::Media(s) => self.sides[s].on_media(now, d),
                    For::Feedback(s) => self.sides[s].on_feedback(now, d),
                }
            }
        }
        for side in &mut self.sides {
            side.finish_step(now, &mut self.links)?;
        }
        self.links.record_events();
        Ok(())
    }

    fn finish(mut self, end: Instant) -> Result<Vec<SimOutput>, SimError> {
        for link in 0..self.sides.len() {
            self.links.close(links::media_link(link), end);
        }
        let mut links = self.links;
        self.sides
            .into_iter()
            .map(|side| side.finish(end, &mut links))
            .collect()
    }
}

#[cfg(test)]
mod error_tests {
    use super::*;
    use salsify_codec::CodecError;

    /// A codec or metrics error is said once in an error chain (it was said twice: once in
    /// the message, once as the source).
    #[test]
    fn wrapped_errors_are_said_once() {
        let e = SimError::from(CodecError::InvalidInput("plane too small".into()));
        assert!(e.to_string().contains("plane too small"));
        assert!(std::error::Error::source(&e).is_none());
    }
}
