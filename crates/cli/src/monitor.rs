//! The demo's monitor: joins what the camera, sender, link and receiver report into live
//! per-second lines and the paper's per-frame metrics (capture-to-display delay, SSIM).
//!
//! Shown frames are matched to camera pictures through the sender's record of which picture
//! each frame number of its current session encodes (a new sender session numbers its frames
//! afresh, and the receiver follows it). Pictures are kept only until a newer one is shown
//! (or for two seconds), so memory stays bounded. A picture coded smaller than the source (a
//! resolution ladder) is scaled up before it is scored.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::Image;
use salsify_eval::metrics::{display_delays, mean, percentile, ssim_luma, ssim_to_db};
use salsify_netem::LinkConfig;
use salsify_time::{Duration, Instant};

use crate::runtime::observe::Observation;
use crate::runtime::AudioSecond;

/// How long a captured picture is kept for scoring.
const KEEP_PICTURES: Duration = Duration::from_secs(2);

/// What the monitor knows about the setup.
#[derive(Debug, Clone, Default)]
pub struct MonitorConfig {
    /// Score shown pictures against the source (costs CPU).
    pub ssim: bool,
    /// The video direction's link, for the capacity column.
    pub link: Option<LinkConfig>,
    /// Start of a one-second outage, after the link starts (the dropout link).
    pub outage_at: Option<Duration>,
    /// The audio's frame length, in a call with audio (to score A/V skew).
    pub audio_frame: Option<Duration>,
}

/// A shown frame the summary counts: when, its capture-to-display delay, its SSIM.
pub type Scored = (Instant, Option<Duration>, Option<f64>);

/// One shown frame.
#[derive(Debug, Clone, Copy)]
struct ShownRecord {
    picture: u64,
    at: Instant,
    ssim: Option<f64>,
}

/// The counts of the current second.
#[derive(Debug, Default)]
struct Window {
    sent_bytes: u64,
    shown: u32,
    delays_ms: Vec<f64>,
    ssims: Vec<f64>,
    /// The receiver's audio of the latest second, in a call with audio.
    audio: Option<AudioSecond>,
}

/// The final figures.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    /// Seconds measured.
    pub seconds: f64,
    /// Pictures the camera supplied.
    pub pictures: u64,
    /// Frames shown.
    pub shown: u64,
    /// Paper's delay (capture to display of it or a newer frame): mean and p95, ms.
    pub delay_ms: Option<(f64, f64)>,
    /// Mean SSIM (linear, then dB) of shown frames.
    pub ssim_db: Option<f64>,
    /// Bytes of frames sent.
    pub sent_bytes: u64,
    /// From the end of the outage to the first frame shown after it, ms.
    pub outage_recovery_ms: Option<f64>,
    /// The receiver's audio figures, in a call with audio.
    pub audio: Option<salsify_audio::AudioSummary>,
}

/// Watches observations.
pub struct Monitor {
    config: MonitorConfig,
    start: Instant,
    captures: Vec<Instant>,
    images: BTreeMap<u64, Arc<Image>>,
    /// Frame number -> picture, for the sender's current session.
    sent: HashMap<u32, u64>,
    shown: Vec<ShownRecord>,
    link_start: Option<Instant>,
    sent_bytes: u64,
    window: Window,
    next_line: Instant,
    audio: Option<salsify_audio::AudioSummary>,
    /// Every audio frame the receiver played.
    played: Vec<salsify_audio::PlayedFrame>,
}

impl Monitor {
    /// A monitor whose clock starts at `start`.
    pub fn new(config: MonitorConfig, start: Instant) -> Monitor {
        Monitor {
            config,
            start,
            captures: Vec::new(),
            images: BTreeMap::new(),
            sent: HashMap::new(),
            shown: Vec::new(),
            link_start: None,
            sent_bytes: 0,
            window: Window::default(),
            next_line: start + Duration::from_secs(1),
            audio: None,
            played: Vec::new(),
        }
    }

    /// Takes one observation in; a shown frame of this run (one the summary counts) comes
    /// back scored: when it was shown, its capture-to-display delay (when its capture is
    /// known) and its SSIM (when scored).
    pub fn observe(&mut self, o: Observation) -> Option<Scored> {
        match o {
            Observation::Captured { picture, at, image } => {
                if picture as usize == self.captures.len() {
                    self.captures.push(at);
                }
                if self.config.ssim {
                    self.images.insert(picture, image);
                    let old = at.checked_sub(KEEP_PICTURES).unwrap_or(Instant::ZERO);
                    while let Some((&p, _)) = self.images.first_key_value() {
                        match self.captures.get(p as usize) {
                            Some(&t) if t < old => drop(self.images.pop_first()),
                            _ => break,
                        }
                    }
                }
            }
            Observation::SenderSession { .. } => self.sent.clear(),
            Observation::Shown {
                frame, at, image, ..
            } => return self.on_shown(frame, at, &image),
            Observation::Sent(f) => {
                self.sent.insert(f.frame, f.picture);
                self.sent_bytes += f.bytes as u64;
                self.window.sent_bytes += f.bytes as u64;
            }
            Observation::LinkStarted { at } => self.link_start = Some(at),
            Observation::AudioSecond { audio, .. } => self.window.audio = Some(audio),
            Observation::AudioSummary(s) => self.audio = Some(s),
            Observation::AudioPlayed(frame) => self.played.push(frame),
            Observation::SenderState { .. }
            | Observation::ReceiverState { .. }
            | Observation::LinkState { .. } => {}
        }
        None
    }

    fn on_shown(&mut self, frame: u32, at: Instant, image: &Image) -> Option<Scored> {
        // A frame of a session this run did not send is not scored.
        let picture = self.sent.remove(&frame)?;
        let ssim = self.images.get(&picture).and_then(|src| score(src, image));
        self.images = self.images.split_off(&(picture + 1));
        let delay = self
            .captures
            .get(picture as usize)
            .map(|&captured| at.saturating_duration_since(captured));
        if let Some(d) = delay {
            self.window.delays_ms.push(d.as_secs_f64() * 1e3);
        }
        self.window.shown += 1;
        self.window.ssims.extend(ssim);
        self.shown.push(ShownRecord { picture, at, ssim });
        Some((at, delay, ssim))
    }

    /// The live line, once a second.
    pub fn tick(&mut self, now: Instant) -> Option<String> {
        if now < self.next_line {
            return None;
        }
        self.next_line += Duration::from_secs(1);
        let w = std::mem::take(&mut self.window);
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        let capacity = self
            .capacity_mbps(now)
            .map_or("   -  ".into(), |c| format!("{c:6.2}"));
        let delay = match (mean(&w.delays_ms), percentile(&w.delays_ms, 95.0)) {
            (Some(m), Some(p)) => format!("{m:5.0} ms (p95 {p:4.0})"),
            _ => "    - ms          ".into(),
        };
        let ssim = mean(&w.ssims).map_or("   -   ".into(), |s| format!("{:5.2} dB", ssim_to_db(s)));
        let audio = w.audio.map_or(String::new(), |a| {
            format!(
                " | audio {:4.0} ms, concealed {:4.1}%",
                a.delay_mean_ms,
                a.concealed_fraction * 100.0
            )
        });
        Some(format!(
            "{t:5.0} s | capacity {capacity} Mb/s | sent {:6.2} Mb/s | shown {:3} fps | delay {delay} | SSIM {ssim}{audio}",
            w.sent_bytes as f64 * 8.0 / 1e6,
            w.shown,
        ))
    }

    /// The video link's capacity over the last second, from its trace.
    fn capacity_mbps(&self, now: Instant) -> Option<f64> {
        let link = self.config.link.as_ref()?;
        let since = now.saturating_duration_since(self.link_start?);
        let before = since.saturating_sub(Duration::from_secs(1));
        let n = link.trace.opportunities_until(since) - link.trace.opportunities_until(before);
        let secs = (since - before).as_secs_f64().max(1e-3);
        Some(n as f64 * f64::from(link.opportunity_bytes) * 8.0 / 1e6 / secs)
    }

    /// The final figures, up to `end`.
    pub fn summary(&self, end: Instant) -> Result<DemoSummary> {
        let shown: Vec<(usize, Instant)> = self
            .shown
            .iter()
            .map(|s| (s.picture as usize, s.at))
            .collect();
        let delays = display_delays(&self.captures, &shown).context("delay metric")?;
        let ms: Vec<f64> = delays
            .iter()
            .flatten()
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        let ssims: Vec<f64> = self.shown.iter().filter_map(|s| s.ssim).collect();
        Ok(DemoSummary {
            seconds: end.saturating_duration_since(self.start).as_secs_f64(),
            pictures: self.captures.len() as u64,
            shown: self.shown.len() as u64,
            delay_ms: mean(&ms).zip(percentile(&ms, 95.0)),
            ssim_db: mean(&ssims).map(ssim_to_db),
            sent_bytes: self.sent_bytes,
            outage_recovery_ms: self.outage_recovery(),
            audio: self.audio.map(|a| match self.config.audio_frame {
                Some(frame) => {
                    crate::flags::audio::with_skew(a, &self.played, &self.shown_pictures(), frame)
                }
                None => a,
            }),
        })
    }

    /// Every picture shown, as (captured, shown at): its true capture time, which the
    /// receiver knows only as the send time of its first datagram.
    fn shown_pictures(&self) -> Vec<(Instant, Instant)> {
        self.shown
            .iter()
            .filter_map(|s| Some((*self.captures.get(s.picture as usize)?, s.at)))
            .collect()
    }

    /// Every audio frame the receiver played.
    pub fn played(&self) -> &[salsify_audio::PlayedFrame] {
        &self.played
    }

    /// Writes `audio.csv` (what the receiver played) on this monitor's clock, as
    /// `frames.csv` is: times from its start.
    pub fn write_audio_csv(&self, path: &Path) -> Result<()> {
        let file = salsify_codec::output::create(path)
            .with_context(|| format!("cannot create '{}'", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        salsify_audio::write_played_csv(&self.played, self.start, &mut out)
            .and_then(|()| out.flush())
            .with_context(|| format!("writing '{}'", path.display()))
    }

    fn outage_recovery(&self) -> Option<f64> {
        let end = self.link_start? + self.config.outage_at? + Duration::from_secs(1);
        let first = self.shown.iter().find(|s| s.at >= end)?;
        Some(first.at.saturating_duration_since(end).as_secs_f64() * 1e3)
    }

    /// Writes one line per camera picture: capture, display (its own), delay (the paper's),
    /// SSIM.
    pub fn write_frames_csv(&self, path: &Path) -> Result<()> {
        let shown: Vec<(usize, Instant)> = self
            .shown
            .iter()
            .map(|s| (s.picture as usize, s.at))
            .collect();
        let delays = display_delays(&self.captures, &shown).context("delay metric")?;
        let mut by_picture: HashMap<u64, ShownRecord> = HashMap::new();
        for s in &self.shown {
            by_picture.entry(s.picture).or_insert(*s);
        }
        let file = salsify_codec::output::create(path)
            .with_context(|| format!("cannot create '{}'", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        let base = self.start;
        let rel = |t: Instant| t.saturating_duration_since(base).as_micros();
        writeln!(out, "picture,capture_us,display_us,delay_us,ssim")?;
        for (i, &captured) in self.captures.iter().enumerate() {
            let s = by_picture.get(&(i as u64));
            writeln!(
                out,
                "{i},{},{},{},{}",
                rel(captured),
                s.map_or(String::new(), |s| rel(s.at).to_string()),
                delays[i].map_or(String::new(), |d| d.as_micros().to_string()),
                s.and_then(|s| s.ssim)
                    .map_or(String::new(), |v| format!("{v:.5}")),
            )?;
        }
        out.flush()
            .with_context(|| format!("writing '{}'", path.display()))
    }
}

/// SSIM of `shown` against `source`, scaling `shown` up first if it was coded smaller.
fn score(source: &Image, shown: &Image) -> Option<f64> {
    let size = (source.width(), source.height());
    if size == (shown.width(), shown.height()) {
        return ssim_luma(source, shown).ok();
    }
    let scaled = salsify_codec::scale(shown, size.0, size.1).ok()?;
    ssim_luma(source, &scaled).ok()
}
