//! The receiver's audio in a live call: audio datagrams (opened by the session like the
//! video's) into the jitter buffer of [`AudioPlayer`], frames played on the wall clock into a
//! WAV file as they are played (concealment included), the pictures shown told to the player
//! for lip sync, and the figures of the call (mouth-to-ear delay, concealed share, A/V skew)
//! from what was actually played and shown. Sans-IO but for the speakers: time is passed in;
//! the receiver loop asks [`LiveAudio::next_at`] when to come back. With `--play` (the
//! `sound` feature) the same samples go to the default output device as they are played,
//! through [`crate::sound::Speaker`]'s bounded ring.
//!
//! On one machine (loopback, the demo) the sender's and the receiver's clocks are the same
//! monotonic clock, so capture times on the wire are comparable with playout times. The
//! receiver does not know when a picture was captured; it takes the send time of its first
//! datagram (where the scheme's wire carries it) as its capture time, which is later by the
//! encode time: lip sync aims at the window's middle, which leaves room for that.

use std::path::PathBuf;

use anyhow::{Context, Result};
use salsify_audio::{
    summarize_audio, write_played_csv, AudioPlayer, AudioSummary, PlayedFrame, PlayerConfig,
    WavSink,
};
use salsify_time::{Duration, Instant};

use crate::audio_playout::PlayoutCounts;
use crate::sound::Speaker;

/// Arrivals the per-second figures look back over to tell concealment from DTX's silence.
const RECENT_ARRIVALS: usize = 500;

/// The receiver's audio settings and outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AudioReceiveConfig {
    /// Jitter buffer and lip sync (default: lip sync to the video shown).
    pub player: PlayerConfig,
    /// Write what is played (concealed frames included) to this WAV file.
    pub wav: Option<PathBuf>,
    /// Write a per-frame CSV log of what is played here (`played_ms,frame,captured_ms,
    /// delay_ms,kind`, times in ms from the receiver's start).
    pub log: Option<PathBuf>,
    /// Also play it on the default output device (`--play`; needs the `sound` feature).
    pub play: bool,
}

/// The audio of the second just past, for a status line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AudioSecond {
    /// Mean mouth-to-ear delay of the frames played, ms.
    pub delay_mean_ms: f64,
    /// Share of them concealed.
    pub concealed_fraction: f64,
}

/// The audio half of a live receiver.
#[derive(Debug)]
pub struct LiveAudio {
    config: AudioReceiveConfig,
    player: AudioPlayer,
    frame: Duration,
    wav: Option<WavSink>,
    /// The output device, with `--play`.
    speaker: Option<Speaker>,
    /// Pictures shown once audio was heard: (capture time as far as known, shown at).
    shown: Vec<(Instant, Instant)>,
    /// Played frames already in a per-second figure.
    counted: usize,
}

impl LiveAudio {
    /// A receiver that has heard nothing yet (the WAV file is created at the first frame;
    /// with `play`, the output device is opened now: an error if there is none).
    pub fn new(config: AudioReceiveConfig) -> Result<Self> {
        let player = AudioPlayer::new(config.player).context("cannot start the Opus decoder")?;
        let speaker = match config.play {
            true => {
                let speaker = Speaker::open()?;
                eprintln!("salsify: playing on {}", speaker.description());
                Some(speaker)
            }
            false => None,
        };
        Ok(LiveAudio {
            frame: config.player.frame.duration(),
            config,
            player,
            wav: None,
            speaker,
            shown: Vec::new(),
            counted: 0,
        })
    }

    /// Whether any audio packet was taken.
    pub fn heard(&self) -> bool {
        !self.player.arrivals().is_empty()
    }

    /// An audio datagram (opened) arrived at `now`; false if it was refused (counted).
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> bool {
        self.player.handle_datagram(now, bytes).is_ok()
    }

    /// Audio datagrams refused as malformed.
    pub fn bad_datagrams(&self) -> u64 {
        self.player.bad_datagrams
    }

    /// A picture was shown at `at`; `captured`: its capture time as far as known (the send
    /// time of its first datagram). Pictures without one are not synced to or scored.
    pub fn handle_video_shown(&mut self, at: Instant, captured: Option<Instant>) {
        let Some(captured) = captured else { return };
        if !self.heard() {
            return;
        }
        self.player.handle_video_shown(at, captured);
        self.shown.push((captured, at));
    }

    /// When the next frame plays (`FAR_FUTURE` before the first packet).
    pub fn next_at(&self) -> Instant {
        self.player.next_at()
    }

    /// Plays every frame due at `now`, into the WAV file and to the speakers; what was
    /// played.
    pub fn play(&mut self, now: Instant) -> Result<Vec<PlayedFrame>> {
        let mut played = Vec::new();
        while let Some((samples, frame)) = self.player.poll_frame(now) {
            played.push(frame);
            if let Some(speaker) = &mut self.speaker {
                speaker.write(&samples);
            }
            let Some(path) = &self.config.wav else {
                continue;
            };
            let wav = match &mut self.wav {
                Some(w) => w,
                None => self.wav.insert(WavSink::create(path)?),
            };
            wav.write(&samples)?;
        }
        Ok(played)
    }

    /// The speakers' ring: underruns (silence given to the device) and overruns (samples
    /// dropped), with `--play`.
    pub fn speaker_counts(&self) -> Option<PlayoutCounts> {
        self.speaker.as_ref().map(Speaker::counts)
    }

    /// The figures of the frames played since the last call, if any were.
    pub fn second(&mut self) -> Option<AudioSecond> {
        let played = &self.player.played()[self.counted.min(self.player.played().len())..];
        self.counted = self.player.played().len();
        let arrivals = self.player.arrivals();
        let recent = &arrivals[arrivals.len().saturating_sub(RECENT_ARRIVALS)..];
        let s = summarize_audio(played, recent, &[], self.frame);
        (s.frames_played > 0).then_some(AudioSecond {
            delay_mean_ms: s.delay_mean_ms,
            concealed_fraction: s.concealed_fraction,
        })
    }

    /// Closes the WAV file, writes the log (times from `base`) and returns the call's
    /// figures: `None` if no audio was heard. The frames played after the newest packet's
    /// frame are the stream's end (the sender stopped), not concealment, and are not counted.
    pub fn finish(self, base: Instant) -> Result<Option<AudioSummary>> {
        let heard = self.heard();
        let LiveAudio {
            config,
            player,
            frame,
            wav,
            shown,
            ..
        } = self;
        if let Some(wav) = wav {
            wav.finish()?;
        }
        if !heard {
            return Ok(None);
        }
        let played = player.played();
        if let Some(path) = &config.log {
            let file = salsify_codec::output::create(path)
                .with_context(|| format!("cannot create '{}'", path.display()))?;
            let mut out = std::io::BufWriter::new(file);
            write_played_csv(played, base, &mut out)
                .and_then(|()| std::io::Write::flush(&mut out))
                .with_context(|| format!("writing '{}'", path.display()))?;
        }
        let arrivals = player.arrivals();
        let newest = arrivals.iter().map(|a| a.frame).max();
        let counted = until_stream_end(played, newest);
        Ok(Some(summarize_audio(counted, arrivals, &shown, frame)))
    }
}

/// The frames played up to the last one of a frame at most `newest` (the newest frame a
/// packet came for).
fn until_stream_end(played: &[PlayedFrame], newest: Option<u64>) -> &[PlayedFrame] {
    let Some(newest) = newest else {
        return &played[..0];
    };
    let end = played
        .iter()
        .rposition(|p| p.frame.is_some_and(|f| f <= newest))
        .map_or(0, |i| i + 1);
    &played[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_audio::{read_marks, read_wav, PlayedKind, SyncMode};

    use crate::audio_send::{AudioInput, AudioSendConfig, LiveAudioSender};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Sender to receiver on a steady 30 ms path, pictures shown 120 ms after capture: what
    /// is played goes to the WAV file in order (its marks read back in order), the delay
    /// follows the video's under lip sync, nothing is concealed, every picture is in the
    /// window; without sync the audio plays at its own least delay. Frames played after the
    /// sender stopped are not counted as concealed.
    #[test]
    fn a_steady_call_plays_in_order_in_sync_and_counts_nothing_concealed() {
        for mode in [SyncMode::Video, SyncMode::None] {
            let dir = std::env::temp_dir().join(format!(
                "salsify-live-audio-{}-{mode:?}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let wav = dir.join("played.wav");
            let log = dir.join("audio.csv");
            let t0 = Instant::from_millis(10_000);
            let mut sender =
                LiveAudioSender::new(&AudioSendConfig::new(AudioInput::Synthetic), t0).unwrap();
            let mut player = PlayerConfig::default();
            player.sync.mode = mode;
            let mut audio = LiveAudio::new(AudioReceiveConfig {
                player,
                wav: Some(wav.clone()),
                log: Some(log.clone()),
                play: false,
            })
            .unwrap();
            let mut in_flight: Vec<(Instant, Vec<u8>)> = vec![];
            let mut next_picture = t0;
            let mut now = t0;
            while now < t0 + ms(3_500) {
                now += ms(1);
                if now < t0 + ms(3_000) {
                    for d in sender.poll(now, true).unwrap() {
                        in_flight.push((now + ms(30), d));
                    }
                }
                in_flight.retain(|(at, d)| {
                    let due = *at <= now;
                    if due {
                        assert!(audio.handle_datagram(now, d));
                    }
                    !due
                });
                if now >= next_picture + ms(120) {
                    audio.handle_video_shown(now, Some(next_picture));
                    next_picture += ms(33);
                }
                audio.play(now).unwrap();
            }
            assert!(audio.second().is_some());
            assert!(!audio.handle_datagram(now, &[0xA7, 1, 2]));
            assert_eq!(audio.bad_datagrams(), 1);
            let s = audio.finish(t0).unwrap().unwrap();
            assert_eq!(s.concealed_fraction, 0.0, "{mode:?}: {s:?}");
            match mode {
                SyncMode::Video => {
                    assert!(
                        (150.0..=230.0).contains(&s.delay_p95_ms),
                        "held to the video's 120 ms plus the bias: {s:?}"
                    );
                    // Out of the window only while the delay grows to the video's at the start.
                    assert!(s.av_skew_in_window_fraction >= 0.9, "{s:?}");
                }
                SyncMode::None => {
                    assert!(s.delay_p95_ms <= 60.0, "its own least delay: {s:?}");
                }
            }
            let samples = read_wav(&wav).unwrap();
            let numbers: Vec<u32> = read_marks(&samples).iter().map(|m| m.number).collect();
            // Mark 0 may be cut by the frames inserted while the delay grows to the video's.
            assert!(
                numbers.ends_with(&[1, 2]) && numbers.windows(2).all(|w| w[0] < w[1]),
                "{mode:?}: {numbers:?}"
            );
            let lines = std::fs::read_to_string(&log).unwrap();
            assert!(lines.starts_with(salsify_audio::AUDIO_CSV_HEADER));
            assert!(lines.lines().count() > 150);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// No packet: no figures and no file.
    #[test]
    fn a_receiver_that_heard_nothing_has_no_figures() {
        let dir = std::env::temp_dir().join(format!("salsify-live-silent-{}", std::process::id()));
        let wav = dir.join("never.wav");
        let mut audio = LiveAudio::new(AudioReceiveConfig {
            wav: Some(wav.clone()),
            ..AudioReceiveConfig::default()
        })
        .unwrap();
        audio.handle_video_shown(Instant::from_millis(100), Some(Instant::from_millis(50)));
        assert!(audio.play(Instant::from_millis(1_000)).unwrap().is_empty());
        assert!(audio.second().is_none());
        assert_eq!(audio.finish(Instant::ZERO).unwrap(), None);
        assert!(!wav.exists());
    }

    #[test]
    fn the_stream_ends_with_the_newest_packets_frame() {
        let p = |frame: Option<u64>, kind| PlayedFrame {
            at: Instant::ZERO,
            frame,
            captured: Instant::ZERO,
            kind,
        };
        let played = [
            p(Some(0), PlayedKind::Packet),
            p(None, PlayedKind::Stretch),
            p(Some(1), PlayedKind::Packet),
            p(Some(2), PlayedKind::Missing),
            p(Some(3), PlayedKind::Missing),
        ];
        assert_eq!(until_stream_end(&played, Some(2)).len(), 4);
        assert_eq!(until_stream_end(&played, Some(9)).len(), 5);
        assert_eq!(until_stream_end(&played, None).len(), 0);
    }
}
