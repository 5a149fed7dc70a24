//! Lip sync: the audio follows the video. Its playout is held back to the delay of what is
//! shown (never the other way round), aiming inside ITU-R BT.1359's window.

use std::collections::VecDeque;

use salsify_time::{Duration, Instant};

/// The most the audio may lead its picture (heard before it is seen), per ITU-R BT.1359.
pub const MAX_AHEAD: Duration = Duration::from_millis(45);
/// The most the audio may trail its picture.
pub const MAX_BEHIND: Duration = Duration::from_millis(125);

/// Whether the audio waits for the video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Audio plays at the video's delay when that is longer than its own (default).
    #[default]
    Video,
    /// Audio plays at its own least delay (`--sync none`).
    None,
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "video" => Ok(SyncMode::Video),
            "none" => Ok(SyncMode::None),
            other => Err(format!(
                "sync '{other}': use 'video' (the default) or 'none'"
            )),
        }
    }
}

/// Settings of the sync rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncConfig {
    /// Video or none. Default video.
    pub mode: SyncMode,
    /// How much later than the video's delay the audio aims: the middle of the window
    /// (`(MAX_BEHIND - MAX_AHEAD) / 2`, 40 ms) leaves the most room either way. Default 40 ms.
    pub bias: Duration,
    /// Shown pictures whose delay the estimate looks at. Default 500 ms of them.
    pub span: Duration,
    /// The most the audio's delay may exceed the video's under sync, even when its own
    /// least delay is longer (packets later than that are concealed): inside BT.1359's
    /// 125 ms with room for the video's jitter. Default 100 ms.
    pub max_lag: Duration,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            mode: SyncMode::Video,
            bias: (MAX_BEHIND - MAX_AHEAD) / 2,
            span: Duration::from_millis(500),
            max_lag: Duration::from_millis(100),
        }
    }
}

/// The most pictures the span keeps, however fast they are shown (far more than a 500 ms
/// span holds at any real frame rate).
const MAX_RECENT_PICTURES: usize = 4096;

/// The video's recent display delays (display minus capture) and the audio delay they ask for.
#[derive(Debug, Clone)]
pub struct VideoDelay {
    config: SyncConfig,
    /// (shown at, delay), oldest first.
    recent: VecDeque<(Instant, Duration)>,
}

impl VideoDelay {
    /// No picture shown yet.
    pub fn new(config: SyncConfig) -> Self {
        VideoDelay {
            config,
            recent: VecDeque::new(),
        }
    }

    /// A picture captured at `captured` was shown at `shown`.
    pub fn on_shown(&mut self, shown: Instant, captured: Instant) {
        self.recent
            .push_back((shown, shown.saturating_duration_since(captured)));
        while self.recent.front().is_some_and(|(at, _)| {
            shown.saturating_duration_since(*at) > self.config.span
                || self.recent.len() > MAX_RECENT_PICTURES
        }) {
            self.recent.pop_front();
        }
    }

    /// Pictures held (those of the last [`SyncConfig::span`], at most
    /// `MAX_RECENT_PICTURES`).
    pub fn held(&self) -> usize {
        self.recent.len()
    }

    /// The audio playout delay to aim for, given the audio's own least delay `own`: `own`
    /// without sync or before any picture; else `own` held between the median recent video
    /// delay plus the bias and the shortest recent video delay plus `max_lag` (so even the
    /// fastest picture of the span would have had its audio inside the window).
    pub fn target(&self, own: Duration) -> Duration {
        if self.config.mode == SyncMode::None || self.recent.is_empty() {
            return own;
        }
        let mut delays: Vec<Duration> = self.recent.iter().map(|(_, d)| *d).collect();
        delays.sort_unstable();
        let lower = delays[delays.len() / 2] + self.config.bias;
        let upper = delays[0] + self.config.max_lag;
        own.clamp(lower, upper.max(lower))
    }
}

/// True when audio captured at `heard` playing while a picture captured at `seen` is shown is
/// within BT.1359's window.
pub fn in_window(heard: Instant, seen: Instant) -> bool {
    if heard >= seen {
        heard - seen <= MAX_AHEAD
    } else {
        seen - heard <= MAX_BEHIND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audio_waits_for_the_video_but_never_plays_earlier_than_it_can() {
        let ms = Duration::from_millis;
        let at = Instant::from_millis;
        let mut video = VideoDelay::new(SyncConfig::default());
        assert_eq!(video.target(ms(30)), ms(30));
        for i in 0..10 {
            video.on_shown(at(1000 + i * 33), at(1000 + i * 33 - 150));
        }
        assert_eq!(video.target(ms(30)), ms(190));
        // Longer than the video's plus 100 ms: held to that (inside the window).
        assert_eq!(video.target(ms(300)), ms(250));
        let none = VideoDelay::new(SyncConfig {
            mode: SyncMode::None,
            ..SyncConfig::default()
        });
        assert_eq!(none.target(ms(30)), ms(30));
    }

    #[test]
    fn the_window_is_45_ms_ahead_and_125_ms_behind() {
        let at = Instant::from_millis;
        assert!(in_window(at(1045), at(1000)));
        assert!(!in_window(at(1046), at(1000)));
        assert!(in_window(at(875), at(1000)));
        assert!(!in_window(at(874), at(1000)));
    }
}
