//! The call's audio in a simulated run: real Opus packets from a sender polled at its frame
//! times, into the data link's queue beside the video's (the scheme's controller told of each
//! one), out to a receiver's jitter buffer that plays them, lip-synced to the pictures shown.

use std::collections::VecDeque;
use std::io::{self, Write};

use salsify_audio::{
    Arrival, AudioPlayer, AudioSender, AudioSource, AudioTally, LoopedSamples, PlayedFrame,
    PlayerConfig, SyntheticSpeech, TallyConfig,
};
use salsify_metrics::AudioFigures;
use salsify_time::{Duration, Instant};

use crate::config::{SimAudio, SimAudioInput, SimError};

/// What the audio of a run did.
#[derive(Clone, Debug)]
pub struct AudioOutput {
    /// The figures (also in the run's summary).
    pub figures: AudioFigures,
    /// Every frame the receiver played.
    pub played: Vec<PlayedFrame>,
    /// The audio lead at each picture shown while audio played: (shown at, lead in ms;
    /// positive: heard before seen).
    pub skews: Vec<(Instant, f64)>,
    /// Every sample played, if [`SimAudio::keep_samples`].
    pub samples: Vec<i16>,
    /// Every audio packet the receiver got.
    pub arrivals: Vec<salsify_audio::Arrival>,
    /// Audio packets sent, and their bytes (before any session overhead).
    pub packets_sent: u64,
    /// Audio bytes sent.
    pub bytes_sent: u64,
}

/// Both ends of the audio while a run goes on.
pub(crate) struct AudioRun {
    sender: AudioSender,
    player: AudioPlayer,
    frame: Duration,
    /// Pictures shown (captured, shown at) not yet told to the player (shown later than now).
    pending_shown: VecDeque<(Instant, Instant)>,
    shown: Vec<(Instant, Instant)>,
    keep_samples: bool,
    samples: Vec<i16>,
    bytes_sent: u64,
    /// The run's figures, kept as it goes (the player keeps no log).
    tally: AudioTally,
    /// The run's logs, which a simulated run writes out whole (`audio.csv`).
    played: Vec<PlayedFrame>,
    arrivals: Vec<Arrival>,
}

impl AudioRun {
    pub fn new(spec: &SimAudio) -> Result<Self, SimError> {
        let source: Box<dyn AudioSource> = match &spec.input {
            SimAudioInput::Synthetic => Box::new(SyntheticSpeech::new(0)),
            SimAudioInput::Samples(s) => Box::new(LoopedSamples::new(s.to_vec())),
        };
        let audio_error = |e: salsify_audio::AudioError| SimError::Config(e.to_string());
        let player = PlayerConfig {
            frame: spec.opus.frame,
            ..spec.player
        };
        Ok(AudioRun {
            sender: AudioSender::new(&spec.opus, source, Instant::ZERO).map_err(audio_error)?,
            player: AudioPlayer::new(player).map_err(audio_error)?,
            frame: spec.opus.frame.duration(),
            pending_shown: VecDeque::new(),
            shown: Vec::new(),
            keep_samples: spec.keep_samples,
            samples: Vec::new(),
            bytes_sent: 0,
            tally: AudioTally::new(TallyConfig::default(), spec.opus.frame.duration()),
            played: Vec::new(),
            arrivals: Vec::new(),
        })
    }

    /// The earliest time either end has something to do.
    pub fn next_event(&self) -> Instant {
        let shown = self.pending_shown.front().map(|(_, at)| *at);
        [
            Some(self.sender.next_at()),
            Some(self.player.next_at()),
            shown,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(Instant::FAR_FUTURE)
    }

    /// The datagrams due at `now`, to send.
    pub fn poll_send(&mut self, now: Instant) -> Result<Vec<Vec<u8>>, SimError> {
        let mut out = Vec::new();
        while let Some(p) = self
            .sender
            .poll(now)
            .map_err(|e| SimError::Config(e.to_string()))?
        {
            let bytes = p.encode();
            self.bytes_sent += bytes.len() as u64;
            out.push(bytes);
        }
        Ok(out)
    }

    /// An audio datagram reached the receiver (a bad one is counted there).
    pub fn deliver(&mut self, now: Instant, datagram: &[u8]) {
        if let Ok(arrival) = self.player.handle_datagram(now, datagram) {
            self.tally.on_arrival(arrival);
            self.arrivals.push(arrival);
        }
    }

    /// A picture captured at `captured` is shown at `at` (now or, once decoded, later).
    pub fn on_shown(&mut self, captured: Instant, at: Instant) {
        self.pending_shown.push_back((captured, at));
    }

    /// Tells the player what has been shown by `now` and plays what is due.
    pub fn play(&mut self, now: Instant) {
        while let Some(&(captured, at)) = self.pending_shown.front().filter(|(_, at)| *at <= now) {
            self.pending_shown.pop_front();
            self.player.handle_video_shown(at, captured);
            self.tally.on_shown(captured, at);
            self.shown.push((captured, at));
        }
        while let Some((samples, played)) = self.player.poll_frame(now) {
            self.tally.on_played(played);
            self.played.push(played);
            if self.keep_samples {
                self.samples.extend(samples);
            }
        }
    }

    pub fn finish(self) -> AudioOutput {
        let s = self.tally.finish();
        let skews = salsify_audio::metrics::skews(&self.played, &self.shown, self.frame);
        AudioOutput {
            figures: audio_figures(&s),
            played: self.played,
            skews,
            samples: self.samples,
            arrivals: self.arrivals,
            packets_sent: self.sender.packets,
            bytes_sent: self.bytes_sent,
        }
    }
}

/// Columns of [`write_audio_csv`].
pub use salsify_audio::AUDIO_CSV_HEADER;

/// The per-frame audio log: one line per frame played (a stretch frame has no frame number),
/// times in ms of the run.
pub fn write_audio_csv(played: &[PlayedFrame], out: impl Write) -> io::Result<()> {
    salsify_audio::write_played_csv(played, Instant::ZERO, out)
}

/// A run's audio figures under `summary.json`'s names, simulated or live (the A/V skew is
/// `None` when no picture was shown while audio played).
pub fn audio_figures(s: &salsify_audio::AudioSummary) -> AudioFigures {
    AudioFigures {
        audio_delay_mean_ms: s.delay_mean_ms,
        audio_delay_p95_ms: s.delay_p95_ms,
        audio_concealed_fraction: s.concealed_fraction,
        av_skew_in_window_fraction: (s.pictures_scored > 0).then_some(s.av_skew_in_window_fraction),
        audio_fec_fraction: s.fec_fraction,
        audio_stretch_fraction: s.stretch_fraction,
        audio_skipped_fraction: s.skipped_fraction,
        audio_stalled_fraction: s.stalled_fraction,
        audio_accelerated_fraction: s.accelerated_fraction,
        audio_frames_played: s.frames_played,
    }
}
