//! The oracle: a sender that reads the link's future (simulator only), the bound the other
//! schemes are measured against.
//!
//! It is the only traffic on the link and knows every future delivery opportunity and every
//! window in which the link is failed (a packet offered then is lost; it sends nothing then:
//! a frame ready in a failure leaves when the link is back), so it can
//! model the bottleneck exactly (same rules as `salsify-netem`: an opportunity carries
//! `opportunity_bytes` of the head packets, splitting a packet that does not fit; a packet
//! cannot use an opportunity at the instant it arrives; bytes of an opportunity with nothing
//! queued are lost). From that model, `arrival(t, n)` is when the last of `n` payload bytes
//! (as datagrams, headers included) sent at `t` reaches the receiver behind everything it
//! already queued, and `budget(t, d)` the most payload bytes sent at `t` that arrive by `d`.
//!
//! # The rule
//!
//! It minimises the paper's delay metric first (a picture never shown counts until the next
//! one shown), quality second within a slack of a fraction of a frame interval. For each camera picture `p` (captured `c`), when the encoder
//! is free at `now`, with the encode taking `e`, sent at `s = now + e` (or when the link is
//! next up, if it is failed then), and `m` its estimate
//! of the picture's coarsest (smallest) frame:
//!
//! 1. Earliest display: `E = arrival(s, m)`.
//! 2. Send or skip: the next picture (captured one frame interval later, its encode starting
//!    then or now if later) could be shown at `E' = arrival(s', m)`; it sends only if
//!    `E < E'`, i.e. some frame of `p` is shown before any later picture could be, and skips
//!    `p` otherwise (the link is busy with what it queued, or in an outage, until after the
//!    next picture could be sent: that picture is shown no later and is newer). So it never
//!    refuses every picture: the picture whose frame can first use the link after a busy
//!    period or an outage is always sent.
//! 3. Quality: deadline `D = E + slack` with the slack [`OracleConfig::quality_slack_frames`]
//!    frame intervals (half by default), and the encode job is [`EncodeJob::FinestFitting`]
//!    with `bytes = max(budget(s, D), m)` — the finest quality arriving by the earliest
//!    achievable display plus the slack; if even the coarsest frame needs more, the bound is
//!    what it needs (`m`). A frame found is sent at once and arrives by `D` (by
//!    `arrival(s, size)` if the bound was `m`); every frame is sent at the earliest instant
//!    its picture can be (capture plus encode), so the same frames sent in the same order
//!    cannot arrive earlier under any other schedule (the link is FIFO and departures are
//!    monotone in the send time). With a slack under one interval a frame's last byte
//!    leaves before the next picture's first can, so quality bought in the slack delays no
//!    later picture.
//!
//! # Picture size
//!
//! With [`OracleConfig::max_halvings`] 1 (the default) it may also code a picture at half
//! the source's width and height (the receiver decodes it and the simulator scales it up
//! for display and scoring, as for Salsify's resolution step); a frame of the other size
//! is a keyframe. Before step 1 it picks the size, then steps 1-3 run at that size with
//! that size's estimate `m` and encode time. The candidates are the frame at the size in
//! force (an inter frame, or a keyframe after a keyframe request) and a keyframe at the
//! other size. For each, it forecasts the paper delays of the pictures captured in the
//! next [`OracleConfig::size_lookahead`] (1 s) if steps 1-2 run on coarsest frames: the
//! first frame sent is that one, every later one the coarsest inter frame at its size,
//! each picture sent as soon as it is encoded unless the next could be shown as soon; it
//! takes the largest size whose mean forecast delay is within the slack of the least
//! (delay first, quality second, as in step 3). With a look-ahead of one picture
//! this is the greedy rule "E = the earliest display over the sizes, then the largest
//! size arriving by `E + slack`" — which a switch's keyframe defeats: a halved keyframe is
//! usually larger than a source-size inter frame, so greedy would rarely step down on a
//! link too slow for the source size, or back up once it is fast. The look-ahead charges
//! the keyframe once against what the smaller (or larger) frames save over the next second
//! (tested on a fade where the halved keyframe is larger than a source-size inter frame).
//! The first picture, before the frame interval is known, gets a one-picture look-ahead. What it guarantees: each picture's size is, by the link's known future and
//! its estimates, the one whose coarsest frames reach the receiver soonest on average over
//! the look-ahead (within the slack, the larger); where the two sizes' forecasts differ by
//! less than the slack (a link fast enough for either) it never steps down, so its frames
//! are those of `max_halvings = 0` (tested). The encode time is part of the delay: where a
//! halved encode saves about the slack (720p60 under the default cost model: 10.5 ms
//! against 2.6 ms, slack 8.3 ms) it may code halved even on a fast link, for a few ms of
//! delay at a large cost in quality (quality is second). What it does not: an optimum over the whole
//! run (the look-ahead is a second, and models coarsest frames while the frames sent fill
//! the slack for quality, so it may step down for a gain smaller than the slack), nor
//! exact sizes (they are estimates, per size and kind: a halved keyframe never seen is
//! guessed as the source size's over the area, a halved inter frame never seen as a
//! quarter of its keyframe). So it is not a proven
//! bound: that no scheme beats it is checked by the evaluation, not assumed. Under
//! [`OracleRule::Target`] it codes at the source size only.
//!
//! Under the first rounds' rule ([`OracleRule::Target`]) step 2 applies only when
//! `E > c + delay_target`, and step 3's deadline is `max(c + delay_target, E + SLACK)`: the
//! link is filled up to the delay target, so on a fast link its mean delay sits at the
//! target and a scheme with smaller frames can beat it — it was not a bound on delay.
//!
//! The coarsest size is not known before encoding (the job returns the finest frame that
//! fits or none), so `m` is learnt, erring low (a guess too low costs at most the picture
//! whose search finds nothing; one too high could skip a picture that should be sent): a
//! frame found at the coarsest quality gives it exactly; a search that found nothing proves
//! it exceeds the bound (then bound x 5/4); a finer frame found bounds it above (then 7/8 of
//! the smaller of that frame and `m`, to keep probing down); after a keyframe the
//! inter-frame guess is a quarter of its size. It keeps one estimate per size and frame
//! kind (keyframe, inter frame), and learns the kind it asked for. The first keyframe is guessed
//! [`FIRST_KEYFRAME_GUESS`] bytes. With `m` right, skipping never makes a picture later than
//! sending every picture would (tested).
//!
//! The searches run from the state of the last frame it sent and start from that frame's
//! quantizer (it keeps both). Packets go out at once (no pacing needed: the model already
//! knows when each one will depart), and it ignores feedback.

use std::collections::VecDeque;

use salsify_codec::{EncodedFrame, Quality, State, StateHash};
use salsify_endpoint::{
    Choice, DatagramError, DropReason, EncodeFailed, EncodeJob, EncodeOutcome, EncodeRequest,
    InputError, SenderEndpoint, SenderEvent, SenderOutput, SenderStats, SentFrame,
};
use salsify_time::{Duration, Instant};

use crate::core::{outcome_kind, Picture, FRAGMENT_PAYLOAD};
use crate::error::{datagram_error, ConfigError};
use crate::stats::SenderCounters;
use crate::wire::{MediaHeader, Packet, MAX_FRAGMENTS, MEDIA_HEADER_LEN};
use crate::wire_id::WireId;

/// The quantizer the first search starts from (the middle of the scale).
pub const FIRST_SEARCH_START: u8 = 64;

/// Time past the earliest achievable display a frame may take for quality when the delay
/// target cannot be met.
pub const SLACK: Duration = Duration::from_millis(10);

/// How long after a keyframe's forecast arrival a keyframe request may still be one sent
/// before it arrived (the feedback's trip back).
const KEYFRAME_ANSWERED: Duration = Duration::from_millis(150);

/// The first guess of the coarsest keyframe's size (VP8 bytes), before any was seen.
pub const FIRST_KEYFRAME_GUESS: usize = 2000;

/// The most halvings of the picture size the oracle considers ([`OracleConfig::max_halvings`]).
pub const MAX_HALVINGS: u8 = 1;

/// The most pictures a size comparison looks ahead.
const MAX_LOOKAHEAD_PICTURES: u64 = 600;

/// What the oracle's frames aim at (the `rule` of `[oracle]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OracleRule {
    /// Delay first: each frame may arrive at most [`OracleConfig::quality_slack_frames`]
    /// frame intervals after the earliest display its picture can have, and a picture is
    /// skipped whenever a later one could be shown as soon. Quality only within that slack.
    #[default]
    DelayFirst,
    /// The first rounds' rule: frames fill the link up to the delay target after capture
    /// (delay is spent on quality up to the target), skipping only when the target cannot
    /// be met. Not a bound on mean delay: a scheme that sends smaller frames can be faster.
    Target,
}

/// The oracle's parameters, the `[oracle]` table of an experiment file (durations in ms;
/// unknown fields refused).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OracleConfig {
    /// What the frames aim at. Default `"delay-first"`.
    pub rule: OracleRule,
    /// Under `delay-first`: the time past the earliest achievable display a frame may take
    /// for quality, in frame intervals. Default 0.5: a frame leaves the link free before the
    /// next picture can use it (so it delays no later picture), and the picture shown is at
    /// most half an interval older than the fastest possible one. Before the interval is
    /// known, [`SLACK`].
    pub quality_slack_frames: f64,
    /// Under `target`: every frame must arrive within this time of its capture. Default
    /// 100 ms (Salsify's delay target).
    #[serde(rename = "delay_target_ms", with = "salsify_time::serde_units::millis")]
    pub delay_target: Duration,
    /// Under `delay-first`: how many times it may halve the picture's width and height
    /// (0 or 1). Default 1: it codes at the source size or at half of it, whichever shows
    /// pictures sooner (see the module doc). 0: the source size only (the rule before the
    /// field existed, then not written out, so experiments and their run ids stay as they
    /// were).
    #[serde(skip_serializing_if = "is_zero")]
    pub max_halvings: u8,
    /// Under `delay-first`, with `max_halvings` 1: how far ahead it compares the sizes
    /// (their coarsest frames' mean delay over the pictures captured in this time). Default
    /// 1000 ms (then not written out).
    #[serde(
        rename = "size_lookahead_ms",
        with = "salsify_time::serde_units::millis",
        skip_serializing_if = "is_default_lookahead"
    )]
    pub size_lookahead: Duration,
    /// Time an encode takes, charged before sending. Set by the simulator from its cost
    /// model, so not read from experiment files. Default 0.
    #[serde(skip)]
    pub encode_time: Duration,
    /// Time an encode at half the source's width and height takes; set by the simulator as
    /// `encode_time`. Default 0.
    #[serde(skip)]
    pub halved_encode_time: Duration,
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// The default [`OracleConfig::size_lookahead`].
const SIZE_LOOKAHEAD: Duration = Duration::from_millis(1000);

fn is_default_lookahead(d: &Duration) -> bool {
    *d == SIZE_LOOKAHEAD
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig {
            rule: OracleRule::DelayFirst,
            quality_slack_frames: 0.5,
            delay_target: Duration::from_millis(100),
            max_halvings: 1,
            size_lookahead: SIZE_LOOKAHEAD,
            encode_time: Duration::ZERO,
            halved_encode_time: Duration::ZERO,
        }
    }
}

impl OracleConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.delay_target.is_zero() {
            return Err(ConfigError::invalid("delay_target_ms", "must be above 0"));
        }
        if !(self.quality_slack_frames.is_finite()
            && (0.0..=10.0).contains(&self.quality_slack_frames))
        {
            return Err(ConfigError::invalid(
                "quality_slack_frames",
                "must be 0..=10",
            ));
        }
        if self.max_halvings > MAX_HALVINGS {
            return Err(ConfigError::invalid(
                "max_halvings",
                "must be 0 (the source size only) or 1 (also half its width and height)",
            ));
        }
        if self.size_lookahead > Duration::from_secs(10) {
            return Err(ConfigError::invalid(
                "size_lookahead_ms",
                "must be 0..=10000",
            ));
        }
        Ok(())
    }
}

/// The link's future, as the simulator knows it.
pub struct LinkForecast {
    /// Time of delivery opportunity `n` (0-based, non-decreasing).
    pub opportunity: Box<dyn Fn(u64) -> Instant + Send>,
    /// Bytes per opportunity.
    pub opportunity_bytes: u32,
    /// Propagation delay after the bottleneck.
    pub propagation: Duration,
    /// The first instant at or after the one given when the link takes packets (a packet
    /// offered while the link is failed is lost): the link's failure windows, as far as they
    /// depend on time alone. The identity for a link that never fails.
    pub up_at: Box<dyn FnMut(Instant) -> Instant + Send>,
}

impl LinkForecast {
    /// A link that never fails, with opportunity `n` at `opportunity(n)`.
    pub fn without_failures(
        opportunity: Box<dyn Fn(u64) -> Instant + Send>,
        opportunity_bytes: u32,
        propagation: Duration,
    ) -> LinkForecast {
        LinkForecast {
            opportunity,
            opportunity_bytes,
            propagation,
            up_at: Box::new(|t| t),
        }
    }
}

impl std::fmt::Debug for LinkForecast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkForecast")
            .field("opportunity_bytes", &self.opportunity_bytes)
            .field("propagation", &self.propagation)
            .finish()
    }
}

/// The bottleneck as the oracle models it: the next opportunity with bytes left.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    next: u64,
    used: u32,
}

/// A frame the oracle may ask for: its size (halvings of the source's width and height),
/// whether it is a keyframe (from the initial state or a state of the other size), and the
/// estimate of its coarsest frame's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ask {
    halvings: u8,
    keyframe: bool,
    coarsest: usize,
}

/// Estimates of the coarsest frame's size (VP8 bytes) at one picture size, learnt as the
/// module doc says; `None` before any was learnt.
#[derive(Debug, Clone, Copy, Default)]
struct Coarsest {
    keyframe: Option<usize>,
    inter: Option<usize>,
}

/// The oracle sender.
#[derive(Debug)]
pub struct OracleSender {
    config: OracleConfig,
    link: LinkForecast,
    cursor: Cursor,
    next_frame: u32,
    next_seq: u32,
    next_request: u64,
    /// A search under way: request id, picture, the frame asked for and its bound.
    encoding: Option<(u64, Picture, Ask, usize)>,
    waiting: Option<Picture>,
    /// Capture time of the last picture offered and the interval before it.
    last_captured: Option<Instant>,
    interval: Option<Duration>,
    /// Estimates of the coarsest frames, per size (index: halvings).
    coarsest: [Coarsest; MAX_HALVINGS as usize + 1],
    /// The size (halvings) of the last frame sent: `state`'s.
    halvings: u8,
    /// The functional codec state of the last frame sent (the receiver's), and its quantizer:
    /// the next search starts from both.
    state: State,
    last_quality: Quality,
    /// When the last keyframe sent arrives (forecast): keyframe requests until a little after
    /// it were sent before it arrived and are already answered.
    keyframe_arrives: Option<Instant>,
    out: VecDeque<SenderOutput>,
    /// Each frame's datagrams and its `FrameSent` event, to hand out at its send time (held
    /// while the link is failed), in order.
    held: VecDeque<(Instant, SenderOutput)>,
    stats: SenderCounters,
    /// Payload bytes per fragment now: [`FRAGMENT_PAYLOAD`] until the path is said to carry
    /// less ([`SenderEndpoint::set_max_datagram`]).
    payload: usize,
}

impl OracleSender {
    /// An oracle for `link`; the configuration is checked.
    pub fn new(config: OracleConfig, link: LinkForecast) -> Result<Self, ConfigError> {
        config.validate()?;
        if link.opportunity_bytes as usize <= MEDIA_HEADER_LEN {
            return Err(ConfigError::invalid(
                "opportunity_bytes",
                format!(
                    "{}-byte opportunities cannot carry a {MEDIA_HEADER_LEN}-byte header",
                    link.opportunity_bytes
                ),
            ));
        }
        let mut coarsest = [Coarsest::default(); MAX_HALVINGS as usize + 1];
        coarsest[0].keyframe = Some(FIRST_KEYFRAME_GUESS);
        Ok(OracleSender {
            config,
            link,
            cursor: Cursor { next: 0, used: 0 },
            next_frame: 0,
            next_seq: 0,
            next_request: 0,
            encoding: None,
            waiting: None,
            last_captured: None,
            interval: None,
            coarsest,
            halvings: 0,
            state: State::initial(),
            last_quality: Quality::new(FIRST_SEARCH_START).unwrap_or(Quality::WORST),
            keyframe_arrives: None,
            out: VecDeque::new(),
            held: VecDeque::new(),
            stats: SenderCounters::default(),
            payload: FRAGMENT_PAYLOAD,
        })
    }

    /// The scheme's own counters.
    pub fn counters(&self) -> SenderCounters {
        self.stats
    }

    /// The cursor moved past every opportunity at or before `t` (they pass unused).
    fn cursor_at(&self, t: Instant) -> Cursor {
        self.advance(self.cursor, t)
    }

    /// Cursor `c` moved past every opportunity at or before `t`.
    fn advance(&self, mut c: Cursor, t: Instant) -> Cursor {
        while (self.link.opportunity)(c.next) <= t {
            c = Cursor {
                next: c.next + 1,
                used: 0,
            };
        }
        c
    }

    /// Sends `size` bytes from cursor `c`; returns the new cursor and when the last byte
    /// departs.
    fn serve(&self, mut c: Cursor, size: usize) -> (Cursor, Instant) {
        let cap = self.link.opportunity_bytes;
        let mut left = size as u64;
        let mut departs = (self.link.opportunity)(c.next);
        while left > 0 {
            let take = u64::from(cap - c.used).min(left);
            left -= take;
            c.used += take as u32;
            departs = (self.link.opportunity)(c.next);
            if c.used == cap {
                c = Cursor {
                    next: c.next + 1,
                    used: 0,
                };
            }
        }
        (c, departs)
    }

    /// Payload bytes that arrive by `deadline` if sent at `at`.
    fn budget(&self, at: Instant, deadline: Instant) -> usize {
        let Some(last_departure) = deadline.checked_sub(self.link.propagation) else {
            return 0;
        };
        let mut c = self.cursor_at(at);
        let mut bytes = 0u64;
        while (self.link.opportunity)(c.next) <= last_departure && bytes < 64 << 20 {
            bytes += u64::from(self.link.opportunity_bytes - c.used);
            c = Cursor {
                next: c.next + 1,
                used: 0,
            };
        }
        // Each datagram carries at most a fragment's payload behind a header.
        let packets = bytes.div_ceil((self.payload + MEDIA_HEADER_LEN) as u64);
        bytes.saturating_sub(packets * MEDIA_HEADER_LEN as u64) as usize
    }

    /// Bytes on the wire for a frame of `payload` bytes (split as [`Self::send_vp8`] does).
    fn wire_bytes(&self, payload: usize) -> usize {
        let count = payload.div_ceil(self.payload).max(1);
        payload + count * MEDIA_HEADER_LEN
    }

    /// When the last of `payload` bytes sent at `at` reaches the receiver, behind everything
    /// already queued.
    fn arrival(&self, at: Instant, payload: usize) -> Instant {
        let (_, departs) = self.serve(self.cursor_at(at), self.wire_bytes(payload));
        departs + self.link.propagation
    }

    /// The rule of the module doc: the frame to ask for picture `p` if the encode starts at
    /// `now` and its bound, or `None` to skip it (a later picture would be shown as soon).
    fn plan(&mut self, now: Instant, p: Picture) -> Option<(Ask, usize)> {
        let ask = self.choose_size(now, p);
        let m = ask.coarsest;
        let encode_time = self.encode_time(ask.halvings);
        let send_at = (self.link.up_at)(now + encode_time);
        let earliest = self.arrival(send_at, m);
        let target = p.captured + self.config.delay_target;
        let delay_first = self.config.rule == OracleRule::DelayFirst;
        if delay_first || earliest > target {
            if let Some(interval) = self.interval {
                let next_send = (p.captured + interval).max(now) + encode_time;
                let next_send = (self.link.up_at)(next_send);
                if self.arrival(next_send, m) <= earliest {
                    return None;
                }
            }
        }
        let deadline = if delay_first {
            earliest + self.quality_slack()
        } else {
            target.max(earliest + SLACK)
        };
        Some((ask, self.budget(send_at, deadline).max(m)))
    }

    /// The time an encode at `halvings` takes.
    fn encode_time(&self, halvings: u8) -> Duration {
        match halvings {
            0 => self.config.encode_time,
            _ => self.config.halved_encode_time,
        }
    }

    /// The coarsest keyframe's estimated size at `halvings`: learnt, or (never seen) the
    /// source size's scaled by the area.
    fn keyframe_estimate(&self, halvings: u8) -> usize {
        let area = 1usize << (2 * u32::from(halvings));
        self.coarsest[usize::from(halvings)]
            .keyframe
            .unwrap_or_else(|| self.coarsest[0].keyframe.unwrap_or(FIRST_KEYFRAME_GUESS) / area)
            .max(1)
    }

    /// The coarsest inter frame's estimated size at `halvings`: learnt, or a quarter of the
    /// keyframe's.
    fn inter_estimate(&self, halvings: u8) -> usize {
        self.coarsest[usize::from(halvings)]
            .inter
            .unwrap_or_else(|| self.keyframe_estimate(halvings) / 4)
            .max(1)
    }

    /// The frame at the size in force: an inter frame from the last frame's state, or a
    /// keyframe if there is none (the start, or a keyframe request).
    fn at_size_in_force(&self) -> Ask {
        let keyframe = self.state.is_initial();
        Ask {
            halvings: self.halvings,
            keyframe,
            coarsest: match keyframe {
                true => self.keyframe_estimate(self.halvings),
                false => self.inter_estimate(self.halvings),
            },
        }
    }

    /// The size for picture `p` (module doc, "Picture size"): of the frame at the size in
    /// force and a keyframe at each other size, the largest whose coarsest frames over the
    /// look-ahead have a mean delay within the slack of the least.
    fn choose_size(&mut self, now: Instant, p: Picture) -> Ask {
        let current = self.at_size_in_force();
        if self.config.rule != OracleRule::DelayFirst || self.config.max_halvings == 0 {
            return current;
        }
        let pictures = self.interval.map_or(1, |i| {
            let n = self.config.size_lookahead.as_nanos() / i.as_nanos().max(1);
            (n as u64).clamp(1, MAX_LOOKAHEAD_PICTURES)
        });
        let asks: Vec<Ask> = (0..=self.config.max_halvings)
            .map(|halvings| match halvings == current.halvings {
                true => current,
                false => Ask {
                    halvings,
                    keyframe: true,
                    coarsest: self.keyframe_estimate(halvings),
                },
            })
            .collect();
        let mut options: Vec<(Ask, Duration)> = asks
            .into_iter()
            .map(|ask| (ask, self.lookahead(now, p, ask, pictures)))
            .collect();
        let least = options.iter().map(|o| o.1).min().unwrap_or(Duration::ZERO);
        let within = least + self.quality_slack();
        options.sort_by_key(|o| o.0.halvings);
        options
            .into_iter()
            .find(|o| o.1 <= within)
            .map_or(current, |o| o.0)
    }

    /// The mean paper delay of `pictures` pictures from `p` on if the rule (step 2) runs on
    /// coarsest frames: the first frame sent is `first`, every later one the coarsest inter
    /// frame at its size; a picture is skipped when the next could be shown as soon, and
    /// counts until the next shown; the last is sent.
    fn lookahead(&mut self, now: Instant, p: Picture, first: Ask, pictures: u64) -> Duration {
        let encode_time = self.encode_time(first.halvings);
        let interval = self.interval.unwrap_or(Duration::ZERO);
        let captured = |k: u64| p.captured + interval * k as u32;
        let sends: Vec<Instant> = (0..pictures)
            .map(|k| (self.link.up_at)(captured(k).max(now) + encode_time))
            .collect();
        let inter = self.wire_bytes(self.inter_estimate(first.halvings));
        let mut frame = self.wire_bytes(first.coarsest);
        let mut c = self.cursor;
        let mut at = self.advance(c, sends[0]);
        let mut total = Duration::ZERO;
        let mut waiting_since = 0;
        for k in 0..pictures as usize {
            let (after, departs) = self.serve(at, frame);
            if let Some(&next_send) = sends.get(k + 1) {
                let next = self.advance(c, next_send);
                if self.serve(next, frame).1 <= departs {
                    at = next;
                    continue;
                }
            }
            let shown = departs + self.link.propagation;
            for j in waiting_since..=k {
                total += shown.saturating_duration_since(captured(j as u64));
            }
            waiting_since = k + 1;
            (c, frame) = (after, inter);
            if let Some(&next_send) = sends.get(k + 1) {
                at = self.advance(c, next_send);
            }
        }
        total / pictures.max(1) as u32
    }

    /// The delay-first rule's slack: `quality_slack_frames` intervals ([`SLACK`] before the
    /// interval is known).
    fn quality_slack(&self) -> Duration {
        self.interval
            .map_or(SLACK, |i| i.mul_f64(self.config.quality_slack_frames))
    }

    fn start(&mut self, now: Instant, p: Picture) {
        let Some((ask, bytes)) = self.plan(now, p) else {
            self.drop_picture(now, p, DropReason::WouldBeLate);
            return;
        };
        let id = self.next_request;
        self.next_request += 1;
        self.encoding = Some((id, p, ask, bytes));
        self.out.push_back(SenderOutput::Encode(EncodeRequest {
            id,
            picture: p.picture,
            captured: p.captured,
            job: EncodeJob::FinestFitting {
                source: self.state.clone(),
                bytes,
                start: self.last_quality,
                halvings: ask.halvings,
            },
        }));
    }

    /// Learns the coarsest size of the frame kind asked for from a search's answer (see the
    /// module doc).
    fn learn(&mut self, ask: Ask, bound: usize, found: Option<&EncodedFrame>) {
        let guess = ask.coarsest;
        let learnt = match found {
            None => guess.max(bound + bound / 4 + 1),
            Some(f) if f.quality == Quality::WORST => f.vp8().len(),
            Some(f) => {
                let m = guess.min(f.vp8().len());
                m - m / 8
            }
        }
        .max(1);
        let at = &mut self.coarsest[usize::from(ask.halvings)];
        match found {
            Some(f) if f.keyframe => {
                at.keyframe = Some(learnt);
                at.inter = Some((f.vp8().len() / 4).max(1));
            }
            _ if ask.keyframe => at.keyframe = Some(learnt),
            _ => at.inter = Some(learnt),
        }
    }

    fn drop_picture(&mut self, now: Instant, p: Picture, reason: DropReason) {
        self.stats.dropped += 1;
        self.out
            .push_back(SenderOutput::Event(SenderEvent::PictureDropped {
                picture: p.picture,
                at: now,
                reason,
            }));
    }

    /// The frame the search found (at most one, encoded from the state asked for).
    fn found(&self, id: u64, outcome: EncodeOutcome) -> Result<Option<EncodedFrame>, InputError> {
        let wrong = |why: String| InputError::WrongResult { id, why };
        let mut frames = match outcome {
            EncodeOutcome::Functional(frames) => frames,
            other => {
                return Err(wrong(format!(
                    "a finest-fitting search answered with {}",
                    outcome_kind(&other)
                )))
            }
        };
        if frames.len() > 1 {
            return Err(wrong(format!("{} frames for one search", frames.len())));
        }
        let frame = frames.pop();
        if let Some(f) = &frame {
            if !f.keyframe && f.source != self.state.hash() {
                return Err(wrong(format!(
                    "a frame from state {:?}, not {:?}",
                    f.source,
                    self.state.hash()
                )));
            }
        }
        Ok(frame)
    }

    /// Sends frame `f` as soon as the link takes packets (at once unless it is failed now).
    fn send(&mut self, now: Instant, p: Picture, f: &EncodedFrame) {
        let at = (self.link.up_at)(now);
        if f.keyframe {
            self.keyframe_arrives = Some(self.arrival(at, f.vp8().len()));
        }
        let states = Some((f.source, f.target.hash()));
        self.send_vp8(at, p, f.vp8(), f.keyframe, f.quality, states);
    }

    /// Sends VP8 frame `data` at `now` (handed out then), booking the link's opportunities
    /// it will use.
    fn send_vp8(
        &mut self,
        now: Instant,
        p: Picture,
        data: &[u8],
        keyframe: bool,
        quality: Quality,
        states: Option<(StateHash, StateHash)>,
    ) {
        let count = data.len().div_ceil(self.payload).max(1);
        let per = data.len().div_ceil(count).max(1);
        let frame = self.next_frame;
        self.next_frame += 1;
        let mut c = self.cursor_at(now);
        for (i, chunk) in data.chunks(per).enumerate() {
            let packet = Packet::Media {
                header: MediaHeader {
                    transport_seq: self.next_seq,
                    media_seq: self.next_seq,
                    frame,
                    fragment: i as u16,
                    count: count as u16,
                    keyframe,
                    retransmission: false,
                    scheme: WireId::Oracle,
                },
                payload: chunk.to_vec(),
            };
            self.next_seq += 1;
            if let Ok(bytes) = packet.emit() {
                c = self.serve(c, bytes.len()).0;
                self.stats.media_packets += 1;
                self.held.push_back((now, SenderOutput::Transmit(bytes)));
            }
        }
        self.cursor = c;
        self.stats.frames_sent += 1;
        self.stats.keyframes += u64::from(keyframe);
        self.stats.quality = Some(quality);
        let sent = SenderOutput::Event(SenderEvent::FrameSent(SentFrame {
            frame,
            picture: p.picture,
            captured: p.captured,
            at: now,
            bytes: data.len(),
            fragments: count as u16,
            quality,
            keyframe,
            choice: Choice::Only,
            budget: None,
            recovery: false,
            states,
        }));
        self.held.push_back((now, sent));
    }
}

impl SenderEndpoint for OracleSender {
    fn scheme(&self) -> &'static str {
        WireId::Oracle.name()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.stats.pictures += 1;
        let p = Picture { picture, captured };
        if let Some(last) = self.last_captured {
            if let Some(gap) = captured
                .checked_duration_since(last)
                .filter(|g| !g.is_zero())
            {
                self.interval = Some(gap);
            }
        }
        self.last_captured = Some(captured);
        if self.encoding.is_some() {
            if let Some(old) = self.waiting.replace(p) {
                self.drop_picture(now, old, DropReason::EncoderBusy);
            }
            return;
        }
        self.start(now, p);
    }

    /// A frame found becomes the codec state the next search starts from (with its
    /// quantizer), even if it is then too large to send. A failed encode (or a wrong result)
    /// drops its picture; a picture waiting meanwhile is encoded after the next picture
    /// arrives and its encode finishes.
    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let (p, ask, bound) = match self.encoding {
            Some((i, p, ask, bound)) if i == id => (p, ask, bound),
            _ => return Err(InputError::UnknownRequest(id)),
        };
        self.encoding = None;
        let frame = match result.map(|o| self.found(id, o)) {
            Ok(Ok(frame)) => frame,
            Ok(Err(e)) => {
                self.drop_picture(now, p, DropReason::Failed);
                return Err(e);
            }
            Err(_) => {
                self.drop_picture(now, p, DropReason::Failed);
                return Ok(());
            }
        };
        self.learn(ask, bound, frame.as_ref());
        match frame {
            Some(f) => {
                self.state = f.target.clone();
                self.halvings = ask.halvings;
                self.last_quality = f.quality;
                if f.vp8().len().div_ceil(self.payload) <= usize::from(MAX_FRAGMENTS) {
                    self.send(now, p, &f)
                } else {
                    self.drop_picture(now, p, DropReason::Failed)
                }
            }
            None => self.drop_picture(now, p, DropReason::WouldBeLate),
        }
        if let Some(next) = self.waiting.take() {
            self.start(now, next);
        }
        Ok(())
    }

    /// The oracle knows every delivery opportunity and when the link is failed (it sends
    /// nothing then), but not i.i.d. random losses: a lost frame breaks the chain of inter
    /// frames, and the receiver asks for a keyframe (PLI). The next search then starts
    /// from the initial state, so its frame is a keyframe. Requests until `KEYFRAME_ANSWERED`
    /// after the last keyframe's forecast arrival were sent before it arrived. Everything
    /// else in the feedback is ignored; another protocol's datagram is refused.
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        match Packet::parse(datagram) {
            Ok(Packet::Pli) => {
                let answered = self
                    .keyframe_arrives
                    .is_some_and(|at| now <= at + KEYFRAME_ANSWERED);
                if !answered {
                    self.state = State::initial();
                    self.stats.plis += 1;
                }
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(datagram_error(e.into())),
        }
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    /// The audio takes the link's opportunities as it goes: booked in the oracle's model
    /// as its own datagrams are, so frames are sized for what is left.
    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        let at = self.cursor_at(now);
        self.cursor = self.serve(at, bytes).0;
    }

    /// Fragments of at most the size the path carries from now on (its model of the link
    /// counts them). After a decrease, a frame with a datagram held for its send time that no
    /// longer fits loses all its held datagrams, never sent, and the next search starts from
    /// the initial state (a keyframe), as after a keyframe request. The simulator, whose link
    /// the oracle reads, never changes the size; this keeps the oracle within the one
    /// endpoint contract.
    fn set_max_datagram(&mut self, _now: Instant, bytes: usize) {
        let payload = salsify_endpoint::fragment_payload(FRAGMENT_PAYLOAD, bytes, MEDIA_HEADER_LEN);
        if payload == self.payload {
            return;
        }
        self.payload = payload;
        let max = MEDIA_HEADER_LEN + payload;
        let frame_of = |o: &SenderOutput| match o {
            SenderOutput::Transmit(d) => match Packet::parse(d) {
                Ok(Packet::Media { header, .. }) => Some((header.frame, d.len())),
                _ => None,
            },
            _ => None,
        };
        let lost: Vec<u32> = self
            .held
            .iter()
            .filter_map(|(_, o)| frame_of(o))
            .filter(|&(_, len)| len > max)
            .map(|(frame, _)| frame)
            .collect();
        if lost.is_empty() {
            return;
        }
        self.held
            .retain(|(_, o)| frame_of(o).is_none_or(|(frame, _)| !lost.contains(&frame)));
        self.state = State::initial();
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        if let Some(out) = self.out.pop_front() {
            return out;
        }
        match self.held.front() {
            Some(&(at, _)) if at <= now => match self.held.pop_front() {
                Some((_, out)) => out,
                None => SenderOutput::Timeout(Instant::FAR_FUTURE),
            },
            Some(&(at, _)) => SenderOutput::Timeout(at),
            None => SenderOutput::Timeout(Instant::FAR_FUTURE),
        }
    }

    fn stats(&self) -> SenderStats {
        SenderStats {
            states_held: 1,
            max_states_held: 1,
            ..self.stats.common(None)
        }
    }
}

#[cfg(test)]
#[path = "oracle_tests.rs"]
mod tests;
