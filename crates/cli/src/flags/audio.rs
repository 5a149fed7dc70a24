//! The call's audio on the command line (`--audio`, `--sync` of `send`, `recv` and `demo`),
//! converted into the runtime's audio settings, and the audio figures a live run reports
//! (the same names as a simulated run's `summary.json`).

use anyhow::Result;
use salsify_audio::{AudioSummary, PlayedFrame, SyncMode};
use salsify_runtime::{sound, AudioSendConfig, LiveAudioInput};
use salsify_time::{Duration, Instant};

use crate::usage::usage;

/// `--audio none|synthetic|mic|FILE.wav`: the sender's audio (`None`: video only). A value
/// that is none of these is bad usage, and so is `mic` in a build without sound support; a
/// file that cannot be read is an error (a missing microphone is one when the call starts).
pub fn audio_source(flag: &str, value: &str) -> Result<Option<AudioSendConfig>> {
    let known = matches!(value, "none" | "synthetic" | "mic")
        || value.to_ascii_lowercase().ends_with(".wav");
    if !known {
        return Err(usage(format!(
            "{flag} '{value}': none, synthetic, mic or a .wav file (48 kHz; \
             ffmpeg -i IN -ac 1 -ar 48000 OUT.wav converts any other)"
        )));
    }
    if value == "mic" {
        if !sound::SUPPORTED {
            return Err(usage(format!("{flag} mic: {}", sound::NOT_BUILT)));
        }
        sound::probe_microphone()?;
    }
    Ok(LiveAudioInput::parse(flag, value)?.map(AudioSendConfig::new))
}

/// `--play`: whether to open the speakers; bad usage in a build without sound support, an
/// error on a machine without speakers.
pub fn play(flag: bool) -> Result<bool> {
    if flag {
        if !sound::SUPPORTED {
            return Err(usage(format!("--play: {}", sound::NOT_BUILT)));
        }
        sound::probe_speakers()?;
    }
    Ok(flag)
}

/// `--sync video|none`.
pub fn parse_sync(value: &str) -> Result<SyncMode, String> {
    value.parse()
}

/// A live run's audio figures under the names of a simulated run's `summary.json`.
pub use salsify_eval::sim::audio_figures as figures;

/// The A/V skew of `shown` pictures ((captured, shown at), on the clock of `played`) against
/// the audio `played`: the share of those shown while audio played whose audio was inside
/// BT.1359's window, and how many that is over; `None` if none was shown while audio played.
pub fn skew_in_window(
    played: &[PlayedFrame],
    shown: &[(Instant, Instant)],
    frame: Duration,
) -> Option<(f64, u64)> {
    let skews = salsify_audio::metrics::skews(played, shown, frame);
    if skews.is_empty() {
        return None;
    }
    let ahead = salsify_audio::sync::MAX_AHEAD.as_secs_f64() * 1e3;
    let behind = salsify_audio::sync::MAX_BEHIND.as_secs_f64() * 1e3;
    let inside = skews
        .iter()
        .filter(|(_, lead)| (-behind..=ahead).contains(lead))
        .count();
    Some((inside as f64 / skews.len() as f64, skews.len() as u64))
}

/// `summary` with its A/V skew measured again from `shown` pictures (see
/// [`skew_in_window`]), where any was shown while audio played: the receiver knows a
/// picture's capture only as the send time of its first datagram; the call's watcher and
/// its barcodes know the true one.
pub fn with_skew(
    mut summary: AudioSummary,
    played: &[PlayedFrame],
    shown: &[(Instant, Instant)],
    frame: Duration,
) -> AudioSummary {
    if let Some((fraction, pictures)) = skew_in_window(played, shown, frame) {
        summary.av_skew_in_window_fraction = fraction;
        summary.pictures_scored = pictures;
    }
    summary
}

/// The figures on one line, for a command's closing summary.
pub fn line(s: &AudioSummary) -> String {
    let skew = match s.pictures_scored {
        0 => "no picture shown while audio played".to_string(),
        n => format!(
            "{:.1}% of {n} pictures",
            s.av_skew_in_window_fraction * 100.0
        ),
    };
    format!(
        "audio: {} frames played, mouth-to-ear delay mean {:.1} ms, p95 {:.1} ms | concealed {:.2}% (FEC-recovered {:.2}%), skipped {:.2}%, stalled {:.2}%, played faster {:.2}% | A/V skew in BT.1359 window: {skew}",
        s.frames_played,
        s.delay_mean_ms,
        s.delay_p95_ms,
        s.concealed_fraction * 100.0,
        s.fec_fraction * 100.0,
        s.skipped_fraction * 100.0,
        s.stalled_fraction * 100.0,
        s.accelerated_fraction * 100.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audio_values_and_their_errors() {
        assert!(audio_source("--audio", "none").unwrap().is_none());
        assert_eq!(
            audio_source("--audio", "synthetic").unwrap().unwrap().input,
            LiveAudioInput::Synthetic
        );
        let bad = audio_source("--audio", "microphone").unwrap_err();
        assert_eq!(crate::usage::exit_code(&bad), 2);
        // Without the feature: bad usage saying how to build. With it: a microphone, or an
        // error (exit 1) naming the missing device.
        match (audio_source("--audio", "mic"), sound::SUPPORTED) {
            (Ok(config), true) => assert_eq!(config.unwrap().input, LiveAudioInput::Mic),
            (Err(e), true) => {
                assert_eq!(crate::usage::exit_code(&e), 1);
                assert!(format!("{e:#}").contains("microphone"), "{e:#}");
            }
            (Err(e), false) => {
                assert_eq!(crate::usage::exit_code(&e), 2);
                assert!(e.to_string().contains("--features sound"), "{e}");
            }
            (Ok(_), false) => panic!("--audio mic accepted without sound support"),
        }
        assert!(!play(false).unwrap());
        match (play(true), sound::SUPPORTED) {
            (Ok(_), true) => {}
            (Err(e), true) => assert!(format!("{e:#}").contains("speakers"), "{e:#}"),
            (Err(e), false) => assert_eq!(crate::usage::exit_code(&e), 2),
            (Ok(_), false) => panic!("--play accepted without sound support"),
        }
        let missing = audio_source("--audio", "/nonexistent/a.wav").unwrap_err();
        assert_eq!(crate::usage::exit_code(&missing), 1);
        assert_eq!(parse_sync("none"), Ok(SyncMode::None));
        assert!(parse_sync("audio").is_err());
    }

    /// The summary's names are the simulator's, and a run that showed no picture while
    /// audio played has no skew figure rather than a zero.
    #[test]
    fn figures_carry_the_summary_names() {
        let s = AudioSummary {
            frames_played: 100,
            delay_mean_ms: 80.0,
            delay_p95_ms: 120.0,
            concealed_fraction: 0.01,
            av_skew_in_window_fraction: 0.0,
            pictures_scored: 0,
            ..AudioSummary::default()
        };
        let json = serde_json::to_value(figures(&s)).unwrap();
        for name in [
            "audio_delay_mean_ms",
            "audio_delay_p95_ms",
            "audio_concealed_fraction",
            "av_skew_in_window_fraction",
        ] {
            assert!(json.get(name).is_some(), "{name} in {json}");
        }
        assert!(json["av_skew_in_window_fraction"].is_null());
        assert!(line(&s).contains("no picture shown"));
    }
}
