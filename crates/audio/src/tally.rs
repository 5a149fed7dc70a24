//! The audio's figures kept as the call goes ([`AudioTally`]): what
//! [`crate::summarize_audio`] computes from a whole call's log, from running counts and
//! bounded windows instead, so an hour-long call holds no more than a minute-long one.
//!
//! Within its bounds ([`TallyConfig`]) the tally's figures are exactly the log's: the delays
//! are counted per distinct value (the mean is summed in the same order, smallest first, so it
//! is the same number to the last bit); a concealed frame is judged once the packets have
//! moved [`TallyConfig::horizon_frames`] past it; a picture is scored once the frame after
//! the one it was heard with has started. Past them: delays are counted to a coarser step,
//! a packet later than the horizon no longer changes a frame already judged, and a picture
//! reported more than [`TallyConfig::recent_frames`] late is not scored.

use std::collections::{BTreeMap, VecDeque};

use salsify_time::{Duration, Instant};

use crate::metrics::{heard_at, AudioSummary};
use crate::record::{Arrival, PlayedFrame, PlayedKind};

/// The tally's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TallyConfig {
    /// Distinct delays counted exactly; past this many the step they are counted to grows
    /// tenfold (1 µs, then 10 µs, ...). Default 4096.
    pub delay_bins: usize,
    /// Frames the newest packet must be past a concealed frame before that frame is judged
    /// (its packet may still come, late), and past which arrivals are forgotten. Default
    /// 500 (10 s of 20 ms frames, as far ahead as the player keeps packets).
    pub horizon_frames: u64,
    /// Frames played kept for scoring the pictures shown meanwhile. Default 100 (2 s).
    pub recent_frames: usize,
    /// Pictures awaiting the frame after the one they were heard with; past this many the
    /// oldest is scored with what is known. Default 256.
    pub pending_pictures: usize,
}

impl Default for TallyConfig {
    fn default() -> Self {
        TallyConfig {
            delay_bins: 4096,
            horizon_frames: 500,
            recent_frames: 100,
            pending_pictures: 256,
        }
    }
}

/// The audio figures of a call so far, fed frame by frame (see the module docs).
#[derive(Debug, Clone)]
pub struct AudioTally {
    config: TallyConfig,
    frame: Duration,
    stream: StreamCounts,
    concealment: Concealment,
    skew: SkewCount,
}

impl AudioTally {
    /// An empty tally of `frame`-long frames.
    pub fn new(config: TallyConfig, frame: Duration) -> Self {
        AudioTally {
            config,
            frame,
            stream: StreamCounts::new(),
            concealment: Concealment::default(),
            skew: SkewCount::default(),
        }
    }

    /// A packet arrived.
    pub fn on_arrival(&mut self, arrival: Arrival) {
        self.concealment
            .on_arrival(arrival, self.config.horizon_frames);
    }

    /// A frame was played (frames in the order they play).
    pub fn on_played(&mut self, played: PlayedFrame) {
        self.stream.on_played(&played, self.config.delay_bins);
        if played.kind == PlayedKind::Missing {
            if let Some(frame) = played.frame {
                self.concealment
                    .on_missing(frame, self.config.horizon_frames);
            }
        }
        self.skew.on_played(played, &self.config, self.frame);
    }

    /// A picture captured at `captured` was shown at `at`.
    pub fn on_shown(&mut self, captured: Instant, at: Instant) {
        self.skew.on_shown(captured, at, &self.config, self.frame);
    }

    /// The figures so far.
    pub fn summary(&self) -> AudioSummary {
        self.clone().finish()
    }

    /// The figures of the whole call (every frame judged with what is known now).
    pub fn finish(mut self) -> AudioSummary {
        let n = self.stream.frames;
        if n == 0 {
            return AudioSummary::default();
        }
        let concealed = self.concealment.finish();
        let (scored, inside) = self.skew.finish(self.frame);
        let s = &self.stream;
        let share = |count: u64| count as f64 / n as f64;
        let (mean, p95) = s.delays.mean_and_p95(n);
        AudioSummary {
            frames_played: n,
            delay_mean_ms: mean,
            delay_p95_ms: p95,
            concealed_fraction: share(concealed),
            fec_fraction: share(s.fec),
            stretch_fraction: share(s.stretch),
            stalled_fraction: share(s.stalled),
            accelerated_fraction: share(s.accelerated),
            skipped_fraction: share(s.skipped()),
            av_skew_in_window_fraction: if scored == 0 {
                0.0
            } else {
                inside as f64 / scored as f64
            },
            pictures_scored: scored,
        }
    }

    /// Elements held in all its collections (bounded by its [`TallyConfig`], whatever the
    /// call's length).
    pub fn held(&self) -> usize {
        self.stream.delays.counts.len()
            + self.concealment.arrived.len()
            + self.concealment.missing.len()
            + self.concealment.gaps.len()
            + self.skew.recent.len()
            + self.skew.pictures.len()
    }
}

/// Counts over the stream's frames.
#[derive(Debug, Clone)]
struct StreamCounts {
    frames: u64,
    delays: DelayCounts,
    fec: u64,
    accelerated: u64,
    /// Stretch and stall frames before the latest stream frame (those after it are the
    /// stream's end until another stream frame plays), and those after it.
    stretch: u64,
    stalled: u64,
    trailing_stretch: u64,
    trailing_stalled: u64,
    first: Option<u64>,
    last: Option<u64>,
    distinct: u64,
}

impl StreamCounts {
    fn new() -> Self {
        StreamCounts {
            frames: 0,
            delays: DelayCounts::new(),
            fec: 0,
            accelerated: 0,
            stretch: 0,
            stalled: 0,
            trailing_stretch: 0,
            trailing_stalled: 0,
            first: None,
            last: None,
            distinct: 0,
        }
    }

    fn on_played(&mut self, p: &PlayedFrame, bins: usize) {
        match p.kind {
            PlayedKind::Fec => self.fec += 1,
            PlayedKind::Accelerated => self.accelerated += 1,
            PlayedKind::Stretch => self.trailing_stretch += 1,
            PlayedKind::Stall => self.trailing_stalled += 1,
            PlayedKind::Packet | PlayedKind::Missing => {}
        }
        let Some(frame) = p.frame else { return };
        self.frames += 1;
        self.delays
            .add(p.at.saturating_duration_since(p.captured), bins);
        self.stretch += std::mem::take(&mut self.trailing_stretch);
        self.stalled += std::mem::take(&mut self.trailing_stalled);
        // The player plays stream frames in increasing order; one played again is not new.
        if self.last.is_none_or(|last| frame > last) {
            self.distinct += 1;
            self.last = Some(frame);
        }
        self.first = Some(self.first.map_or(frame, |f| f.min(frame)));
    }

    /// Frames the player jumped over between the first and the last.
    fn skipped(&self) -> u64 {
        match (self.first, self.last) {
            (Some(first), Some(last)) => (last - first + 1).saturating_sub(self.distinct),
            _ => 0,
        }
    }
}

/// How many stream frames played at each delay (µs, to the current step).
#[derive(Debug, Clone)]
struct DelayCounts {
    counts: BTreeMap<u64, u64>,
    step: u64,
}

impl DelayCounts {
    fn new() -> Self {
        DelayCounts {
            counts: BTreeMap::new(),
            step: 1,
        }
    }

    fn add(&mut self, delay: Duration, bins: usize) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        *self
            .counts
            .entry(micros / self.step * self.step)
            .or_default() += 1;
        while self.counts.len() > bins.max(1) && self.step < u64::MAX / 10 {
            self.step *= 10;
            let step = self.step;
            let mut coarser = BTreeMap::new();
            for (k, c) in std::mem::take(&mut self.counts) {
                *coarser.entry(k / step * step).or_default() += c;
            }
            self.counts = coarser;
        }
    }

    /// The mean (summed smallest first, as the log's sorted delays are) and the 95th
    /// percentile (the same rank as the log's) of `n` delays, in ms.
    fn mean_and_p95(&self, n: u64) -> (f64, f64) {
        let ms = |micros: u64| Duration::from_micros(micros).as_secs_f64() * 1000.0;
        let rank = ((0.95 * n as f64).ceil() as u64).clamp(1, n);
        let (mut sum, mut seen, mut p95) = (0.0, 0u64, 0.0);
        for (&micros, &count) in &self.counts {
            let value = ms(micros);
            for _ in 0..count {
                sum += value;
            }
            if seen < rank && seen + count >= rank {
                p95 = value;
            }
            seen += count;
        }
        (sum / n as f64, p95)
    }
}

/// The concealed frames' count, judged as [`crate::metrics::concealed_frames`] judges them:
/// a missing frame whose packet came (late) was concealed; a run of missing frames between
/// two packets counts at most the packets lost between them (the rest was DTX's silence).
#[derive(Debug, Clone, Default)]
struct Concealment {
    /// The packets' sequence numbers by frame, from the latest judged gap's start on.
    arrived: BTreeMap<u64, u32>,
    newest: Option<u64>,
    /// Missing frames not judged yet, in the order played.
    missing: VecDeque<u64>,
    /// Open gaps by the packet before them: (missing frames, packets lost).
    gaps: BTreeMap<Option<u64>, (u64, u64)>,
    /// Frames judged concealed, gaps closed included.
    concealed: u64,
}

impl Concealment {
    fn on_arrival(&mut self, a: Arrival, horizon: u64) {
        self.arrived.insert(a.frame, a.seq);
        self.newest = self.newest.max(Some(a.frame));
        self.judge_due(horizon);
        self.forget(horizon);
    }

    fn on_missing(&mut self, frame: u64, horizon: u64) {
        self.missing.push_back(frame);
        self.judge_due(horizon);
    }

    /// Judges the missing frames the packets have moved `horizon` frames past.
    fn judge_due(&mut self, horizon: u64) {
        let Some(newest) = self.newest else { return };
        while let Some(&f) = self.missing.front().filter(|&&f| f + horizon <= newest) {
            self.missing.pop_front();
            self.judge(f);
        }
    }

    fn judge(&mut self, f: u64) {
        if self.arrived.contains_key(&f) {
            self.concealed += 1;
            return;
        }
        let before = self.arrived.range(..f).next_back().map(|(&k, &s)| (k, s));
        let after = self.arrived.range(f + 1..).next().map(|(_, &s)| s);
        let lost = match (before, after) {
            (Some((_, a)), Some(b)) => u64::from(b.wrapping_sub(a).saturating_sub(1)),
            (None, Some(b)) => u64::from(b),
            (_, None) => u64::MAX,
        };
        let key = before.map(|(k, _)| k);
        // Later missing frames come after this one, so no gap before this one's grows again.
        let open = self.gaps.split_off(&key);
        self.concealed += closed(&self.gaps);
        self.gaps = open;
        self.gaps.entry(key).or_insert((0, lost)).0 += 1;
        if let Some(k) = key {
            self.arrived = self.arrived.split_off(&k);
        }
    }

    /// Forgets arrivals more than `horizon` frames behind the newest but the latest of them
    /// (which may still be the packet before a gap) while no missing frame needs them.
    fn forget(&mut self, horizon: u64) {
        let Some(newest) = self.newest else { return };
        let cutoff = newest.saturating_sub(horizon);
        if self.arrived.len() as u64 <= 2 * horizon
            || self.missing.front().is_some_and(|&f| f < cutoff)
        {
            return;
        }
        let keep = self.arrived.range(..cutoff).next_back().map(|(&k, _)| k);
        if let Some(k) = keep {
            self.arrived = self.arrived.split_off(&k);
        }
    }

    fn finish(&mut self) -> u64 {
        while let Some(f) = self.missing.pop_front() {
            self.judge(f);
        }
        self.concealed + closed(&self.gaps)
    }
}

/// What closed gaps count: each at most the packets lost in it.
fn closed(gaps: &BTreeMap<Option<u64>, (u64, u64)>) -> u64 {
    gaps.values()
        .map(|&(missing, lost)| missing.min(lost))
        .sum()
}

/// The pictures scored for A/V skew and those inside the window.
#[derive(Debug, Clone, Default)]
struct SkewCount {
    recent: VecDeque<PlayedFrame>,
    /// (captured, shown at), oldest first.
    pictures: VecDeque<(Instant, Instant)>,
    scored: u64,
    inside: u64,
}

impl SkewCount {
    fn on_played(&mut self, p: PlayedFrame, config: &TallyConfig, frame: Duration) {
        self.recent.push_back(p);
        while self.recent.len() > config.recent_frames.max(2) {
            self.recent.pop_front();
        }
        // Pictures shown before this frame began are heard with a frame whose end is known.
        while let Some(&(seen, at)) = self.pictures.front().filter(|(_, at)| *at < p.at) {
            self.pictures.pop_front();
            self.score(seen, at, frame);
        }
    }

    fn on_shown(&mut self, captured: Instant, at: Instant, config: &TallyConfig, frame: Duration) {
        if self.recent.back().is_some_and(|p| p.at > at) {
            return self.score(captured, at, frame);
        }
        self.pictures.push_back((captured, at));
        while self.pictures.len() > config.pending_pictures.max(1) {
            if let Some((seen, at)) = self.pictures.pop_front() {
                self.score(seen, at, frame);
            }
        }
    }

    fn score(&mut self, seen: Instant, at: Instant, frame: Duration) {
        let Some(heard) = heard_at(self.recent.make_contiguous(), at, frame) else {
            return;
        };
        let lead = (heard.as_micros() as f64 - seen.as_micros() as f64) / 1000.0;
        let ahead = crate::sync::MAX_AHEAD.as_secs_f64() * 1000.0;
        let behind = crate::sync::MAX_BEHIND.as_secs_f64() * 1000.0;
        self.scored += 1;
        self.inside += u64::from((-behind..=ahead).contains(&lead));
    }

    fn finish(&mut self, frame: Duration) -> (u64, u64) {
        while let Some((seen, at)) = self.pictures.pop_front() {
            self.score(seen, at, frame);
        }
        (self.scored, self.inside)
    }
}

#[cfg(test)]
mod tests;
