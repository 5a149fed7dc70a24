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

use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use salsify_audio::{
    summarize_audio, write_played_row, Arrival, AudioPlayer, AudioSummary, AudioTally, PlayedFrame,
    PlayerConfig, TallyConfig, WavSink, AUDIO_CSV_HEADER,
};
use salsify_time::{Duration, Instant};

use crate::audio_playout::PlayoutCounts;
use crate::sound::Speaker;

/// Arrivals the per-second figures look back over to tell concealment from DTX's silence.
const RECENT_ARRIVALS: usize = 500;

/// Frames kept waiting to be told the stream's end from an outage (a minute of 20 ms
/// frames); older ones are counted as played.
const TAIL_FRAMES: usize = 3_000;

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

/// The audio half of a live receiver. It holds no log: the figures are kept as the call
/// goes ([`AudioTally`]) and the log's rows are written as frames play, so an hour-long call
/// holds no more than a minute-long one.
#[derive(Debug)]
pub struct LiveAudio {
    config: AudioReceiveConfig,
    player: AudioPlayer,
    frame: Duration,
    wav: Option<WavSink>,
    /// The output device, with `--play`.
    speaker: Option<Speaker>,
    /// The log (`--audio-log`), its header written, times from `base`.
    log: Option<BufWriter<std::fs::File>>,
    base: Instant,
    /// The call's figures, of the frames up to the stream's end as far as known.
    tally: AudioTally,
    /// Frames played after the newest packet's frame: the stream's end, unless a packet
    /// moves past them (then they are counted).
    tail: VecDeque<PlayedFrame>,
    newest: Option<u64>,
    /// The second's frames and the latest arrivals, for the per-second figures.
    second: Vec<PlayedFrame>,
    recent: VecDeque<Arrival>,
}

impl LiveAudio {
    /// A receiver that has heard nothing yet, its log's times counted from `base` (the WAV
    /// file is created at the first frame; with `play`, the output device is opened now: an
    /// error if there is none).
    pub fn new(config: AudioReceiveConfig, base: Instant) -> Result<Self> {
        let player = AudioPlayer::new(config.player).context("cannot start the Opus decoder")?;
        let speaker = match config.play {
            true => {
                let speaker = Speaker::open()?;
                eprintln!("salsify: playing on {}", speaker.description());
                Some(speaker)
            }
            false => None,
        };
        let frame = config.player.frame.duration();
        Ok(LiveAudio {
            frame,
            config,
            player,
            wav: None,
            speaker,
            log: None,
            base,
            tally: AudioTally::new(TallyConfig::default(), frame),
            tail: VecDeque::new(),
            newest: None,
            second: Vec::new(),
            recent: VecDeque::new(),
        })
    }

    /// [`LiveAudio::new`] for a call with audio (`config`), none without.
    pub fn of(config: Option<AudioReceiveConfig>, base: Instant) -> Result<Option<Self>> {
        config.map(|c| LiveAudio::new(c, base)).transpose()
    }

    /// Whether any audio packet arrived.
    pub fn heard(&self) -> bool {
        self.newest.is_some()
    }

    /// An audio datagram (opened) arrived at `now`; false if it was refused (counted).
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> bool {
        let Ok(arrival) = self.player.handle_datagram(now, bytes) else {
            return false;
        };
        self.tally.on_arrival(arrival);
        if self.recent.len() == RECENT_ARRIVALS {
            self.recent.pop_front();
        }
        self.recent.push_back(arrival);
        self.newest = self.newest.max(Some(arrival.frame));
        self.count_tail();
        true
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
        self.tally.on_shown(captured, at);
    }

    /// When the next frame plays (`FAR_FUTURE` before the first packet).
    pub fn next_at(&self) -> Instant {
        self.player.next_at()
    }

    /// Plays every frame due at `now`, into the WAV file, the log and to the speakers; what
    /// was played.
    pub fn play(&mut self, now: Instant) -> Result<Vec<PlayedFrame>> {
        let mut played = Vec::new();
        while let Some((samples, frame)) = self.player.poll_frame(now) {
            played.push(frame);
            self.second.push(frame);
            self.tail.push_back(frame);
            self.log_row(&frame)?;
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
        self.count_tail();
        Ok(played)
    }

    /// Writes `frame`'s row of the log (creating it, header first, at the first frame).
    fn log_row(&mut self, frame: &PlayedFrame) -> Result<()> {
        let Some(path) = &self.config.log else {
            return Ok(());
        };
        let writing = |e| anyhow::Error::new(e).context(format!("writing '{}'", path.display()));
        let out = match &mut self.log {
            Some(out) => out,
            None => {
                let file = salsify_codec::output::create(path)
                    .with_context(|| format!("cannot create '{}'", path.display()))?;
                let mut out = BufWriter::new(file);
                writeln!(out, "{AUDIO_CSV_HEADER}").map_err(writing)?;
                self.log.insert(out)
            }
        };
        write_played_row(frame, self.base, out).map_err(writing)
    }

    /// Counts the frames of the tail up to the last one of a frame a packet came for (the
    /// stream went on past them), and the oldest beyond [`TAIL_FRAMES`].
    fn count_tail(&mut self) {
        let newest = self.newest;
        let upto = self
            .tail
            .iter()
            .rposition(|p| p.frame.is_some_and(|f| Some(f) <= newest))
            .map_or(0, |i| i + 1)
            .max(self.tail.len().saturating_sub(TAIL_FRAMES));
        for p in self.tail.drain(..upto) {
            self.tally.on_played(p);
        }
    }

    /// The speakers' ring: underruns (silence given to the device) and overruns (samples
    /// dropped), with `--play`.
    pub fn speaker_counts(&self) -> Option<PlayoutCounts> {
        self.speaker.as_ref().map(Speaker::counts)
    }

    /// The figures of the frames played since the last call, if any were.
    pub fn second(&mut self) -> Option<AudioSecond> {
        let played = std::mem::take(&mut self.second);
        let s = summarize_audio(&played, self.recent.make_contiguous(), &[], self.frame);
        (s.frames_played > 0).then_some(AudioSecond {
            delay_mean_ms: s.delay_mean_ms,
            concealed_fraction: s.concealed_fraction,
        })
    }

    /// Closes the WAV file and the log and returns the call's figures: `None` if no audio
    /// was heard. The frames played after the newest packet's frame are the stream's end
    /// (the sender stopped), not concealment, and are not counted.
    pub fn finish(mut self) -> Result<Option<AudioSummary>> {
        if let Some(wav) = self.wav.take() {
            wav.finish()?;
        }
        if let Some(mut log) = self.log.take() {
            let path = self.config.log.clone().unwrap_or_default();
            log.flush()
                .with_context(|| format!("writing '{}'", path.display()))?;
        }
        if !self.heard() {
            return Ok(None);
        }
        self.count_tail();
        Ok(Some(self.tally.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_audio::{read_marks, read_wav, SyncMode};

    use crate::audio_send::{AudioSendConfig, LiveAudioInput, LiveAudioSender};

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
                LiveAudioSender::new(&AudioSendConfig::new(LiveAudioInput::Synthetic), t0).unwrap();
            let mut player = PlayerConfig::default();
            player.sync.mode = mode;
            let mut audio = LiveAudio::new(
                AudioReceiveConfig {
                    player,
                    wav: Some(wav.clone()),
                    log: Some(log.clone()),
                    play: false,
                },
                t0,
            )
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
            let s = audio.finish().unwrap().unwrap();
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
        let mut audio = LiveAudio::new(
            AudioReceiveConfig {
                wav: Some(wav.clone()),
                ..AudioReceiveConfig::default()
            },
            Instant::ZERO,
        )
        .unwrap();
        audio.handle_video_shown(Instant::from_millis(100), Some(Instant::from_millis(50)));
        assert!(audio.play(Instant::from_millis(1_000)).unwrap().is_empty());
        assert!(audio.second().is_none());
        assert_eq!(audio.finish().unwrap(), None);
        assert!(!wav.exists());
    }
}
