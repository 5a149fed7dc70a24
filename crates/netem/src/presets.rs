//! Ready-made links for the paper's experiments (Salsify, NSDI 2018, section 4), and a
//! suite of slow and fading links ([`fade`], [`three_g`], [`ack_stall`], [`cliff`]).
//!
//! All use the paper's testbed defaults unless the experiment says otherwise: a 256-packet
//! DropTail queue and 20 ms of propagation delay each way (40 ms round trip). Change fields
//! of the returned config to sweep them.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use salsify_time::Duration;

use crate::config::LinkConfig;
use crate::generators::{self, Bitrate, CellularParams, GeneratorError, RampParams, RateSegment};
use crate::loss::{LossModel, Outage};
use crate::trace::{Trace, TraceError};

/// A recorded cellular trace (AT&T LTE, T-Mobile UMTS, Verizon LTE in the paper) with the
/// testbed's queue and delay.
pub fn cellular_trace(trace: Trace) -> LinkConfig {
    LinkConfig::with_trace(trace)
}

/// [`cellular_trace`] from a Mahimahi trace file.
pub fn cellular_trace_file(path: impl AsRef<std::path::Path>) -> Result<LinkConfig, TraceError> {
    Ok(cellular_trace(Trace::from_path(path)?))
}

/// The paper's intermittent link: 12 Mb/s, failing after exponential gaps of mean 5 s for
/// exponential times of mean 0.2 s, every packet dropped while failed. `seed` picks the
/// failure schedule.
pub fn intermittent(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let mut c = LinkConfig::with_trace(generators::constant(Bitrate::mbps(12))?);
    c.loss = vec![LossModel::paper_intermittent()];
    c.seed = seed;
    Ok(c)
}

/// The paper's emulated Wi-Fi: Poisson deliveries averaging 570 kb/s (a 10-minute period,
/// the length of the paper's runs). `seed` picks the delivery times.
pub fn wifi_poisson(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let trace = generators::poisson(Bitrate::kbps(570), Duration::from_secs(600), seed)?;
    let mut c = LinkConfig::with_trace(trace);
    c.seed = seed;
    Ok(c)
}

/// Capacity falling to zero and back ([`RampParams::default`]: 4 Mb/s, 20 s cycle).
pub fn ramp() -> Result<LinkConfig, GeneratorError> {
    Ok(LinkConfig::with_trace(generators::ramp(
        &RampParams::default(),
    )?))
}

/// The paper's one-second dropout on a constant 500 kb/s link, starting `at` after the link
/// starts; every packet offered during that second is lost.
pub fn dropout_500k(at: Duration) -> Result<LinkConfig, GeneratorError> {
    let mut c = LinkConfig::with_trace(generators::constant(Bitrate::kbps(500))?);
    c.loss = vec![LossModel::outage(at, Duration::from_secs(1))];
    Ok(c)
}

/// A synthetic cellular-like link (Sprout's model) for runs that need no data file.
pub fn synthetic_cellular(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let trace = generators::cellular(&CellularParams::default(), seed)?;
    let mut c = LinkConfig::with_trace(trace);
    c.seed = seed;
    Ok(c)
}

/// [`fade`]'s healthy rate.
pub const FADE_HEALTHY: Bitrate = Bitrate::mbps(5);
/// [`fade`]'s period: four 45 s slots, one fade in each.
pub const FADE_PERIOD: Duration = Duration::from_secs(180);
const FADE_SLOT: Duration = Duration::from_secs(45);
const FADE_EDGE: Duration = Duration::from_secs(1);
const FADE_LEAD: Duration = Duration::from_secs(8);
const FADE_TAIL: Duration = Duration::from_secs(5);

/// One deep fade of [`fade`]: the rate starts falling at `start`, reaches `rate` 1 s later,
/// holds it for `hold` and climbs back to the healthy rate over 1 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fade {
    /// When the fall starts, from the period's start.
    pub start: Duration,
    /// How long the bottom lasts (5-30 s).
    pub hold: Duration,
    /// The rate at the bottom (10-50 kb/s).
    pub rate: Bitrate,
}

/// The fades of one period of [`fade`] with this seed, in order.
///
/// The 180 s period is four 45 s slots with one fade each: a hold of uniform 5-30 s (whole
/// ms) at a uniform 10-50 kb/s (whole kb/s), its 1 s fall starting a uniform 8..(38 - hold) s
/// into the slot, so each slot starts with at least 8 s and ends with at least 5 s at the
/// healthy rate.
pub fn fade_schedule(seed: u64) -> Vec<Fade> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let slots = FADE_PERIOD.as_millis() / FADE_SLOT.as_millis();
    (0..slots as u64)
        .map(|i| {
            let hold = Duration::from_millis(rng.gen_range(5_000..=30_000));
            let rate = Bitrate::kbps(rng.gen_range(10..=50));
            let spare = FADE_SLOT - FADE_LEAD - FADE_TAIL - FADE_EDGE - FADE_EDGE - hold;
            let lead =
                FADE_LEAD + Duration::from_millis(rng.gen_range(0..=spare.as_millis() as u64));
            Fade {
                start: FADE_SLOT * i as u32 + lead,
                hold,
                rate,
            }
        })
        .collect()
}

/// Deep fades: 5 Mb/s ([`FADE_HEALTHY`]) that falls (linearly, over 1 s) to 10-50 kb/s,
/// holds there 5-30 s and climbs back over 1 s, four times in each 180 s period
/// ([`fade_schedule`] gives the depths, lengths and times; `seed` picks them). Delivered as
/// a fluid ([`generators::segments`]), so the rates are exact: 5 Mb/s outside the fades and
/// the fade's rate at their bottom; the period's mean is 1.4-4.3 Mb/s depending on the seed.
pub fn fade(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let high = FADE_HEALTHY;
    let mut pieces = Vec::new();
    let mut at = Duration::ZERO;
    for f in fade_schedule(seed) {
        pieces.extend([
            RateSegment::hold(f.start - at, high),
            RateSegment::ramp(FADE_EDGE, high, f.rate),
            RateSegment::hold(f.hold, f.rate),
            RateSegment::ramp(FADE_EDGE, f.rate, high),
        ]);
        at = f.start + FADE_EDGE + f.hold + FADE_EDGE;
    }
    pieces.push(RateSegment::hold(FADE_PERIOD - at, high));
    let mut c = LinkConfig::with_trace(generators::segments(&pieces)?);
    c.seed = seed;
    Ok(c)
}

/// The random walk of [`three_g`]: [`generators::cellular`] (Poisson deliveries at a rate in
/// Brownian motion with a pull to its mean), rate reflected within 20-800 kb/s, pulled
/// towards 250 kb/s with a 30 s time constant, volatility 80 kb/s per sqrt(s) (so the rate
/// moves by about 250 kb/s in 10 s and crosses its whole band in a minute or two), a 300 s
/// period.
pub fn three_g_params() -> CellularParams {
    CellularParams {
        mean: Bitrate::kbps(250),
        min: Bitrate::kbps(20),
        max: Bitrate::kbps(800),
        volatility: Bitrate::kbps(80),
        reversion: Duration::from_secs(30),
        period: Duration::from_secs(300),
    }
}

/// A slow 3G-like link: the rate wanders between 20 and 800 kb/s ([`three_g_params`]); the
/// realised mean is about 250-500 kb/s depending on `seed` (the floor's reflection lifts
/// it), 10 s windows reach below 150 kb/s and above 500 kb/s within a period; `seed` picks
/// the walk and the delivery times.
pub fn three_g(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let trace = generators::cellular(&three_g_params(), seed)?;
    let mut c = LinkConfig::with_trace(trace);
    c.seed = seed;
    Ok(c)
}

/// [`ack_stall`]'s rate, both directions.
pub const ACK_STALL_RATE: Bitrate = Bitrate::mbps(2);
/// How far [`ack_stall_outages`] schedules stalls: after the first hour the ACK path stays up.
pub const ACK_STALL_HORIZON: Duration = Duration::from_secs(3600);

/// The ACK-path stalls of [`ack_stall`]: alternately a healthy stretch of uniform 10-20 s and
/// a stall of uniform 2-5 s (whole ms, picked by `seed`), from the link's start until
/// [`ACK_STALL_HORIZON`].
pub fn ack_stall_outages(seed: u64) -> Vec<Outage> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut at = Duration::ZERO;
    loop {
        let start = at + Duration::from_millis(rng.gen_range(10_000..=20_000));
        let duration = Duration::from_millis(rng.gen_range(2_000..=5_000));
        if start + duration > ACK_STALL_HORIZON {
            return out;
        }
        out.push(Outage { start, duration });
        at = start + duration;
    }
}

/// A healthy video path with a dying feedback path, as `(video, ack)`: both directions a
/// constant 2 Mb/s ([`ACK_STALL_RATE`]), the video direction lossless, the ACK direction
/// dropping every packet during [`ack_stall_outages`] (2-5 s stalls every 10-20 s, picked
/// by `seed`).
pub fn ack_stall(seed: u64) -> Result<(LinkConfig, LinkConfig), GeneratorError> {
    let mut video = LinkConfig::with_trace(generators::constant(ACK_STALL_RATE)?);
    video.seed = seed;
    let mut ack = video.clone();
    ack.loss = vec![LossModel::Outages(ack_stall_outages(seed))];
    Ok((video, ack))
}

/// [`cliff`]'s high rate, held for [`CLIFF_HIGH_TIME`].
pub const CLIFF_HIGH: Bitrate = Bitrate::mbps(10);
/// [`cliff`]'s low rate, held for [`CLIFF_LOW_TIME`].
pub const CLIFF_LOW: Bitrate = Bitrate::kbps(100);
/// How long [`cliff`] stays high in each period.
pub const CLIFF_HIGH_TIME: Duration = Duration::from_secs(20);
/// How long [`cliff`] stays low in each period.
pub const CLIFF_LOW_TIME: Duration = Duration::from_secs(10);

/// A cliff: 10 Mb/s for 20 s, then at once 100 kb/s for 10 s, and back at once; a 30 s
/// period, repeating. Deterministic.
pub fn cliff() -> Result<LinkConfig, GeneratorError> {
    Ok(LinkConfig::with_trace(generators::segments(&[
        RateSegment::hold(CLIFF_HIGH_TIME, CLIFF_HIGH),
        RateSegment::hold(CLIFF_LOW_TIME, CLIFF_LOW),
    ])?))
}

/// [`vidaptive_fig1`]'s high rate.
pub const FIG1_HIGH: Bitrate = Bitrate::mbps(2);
/// [`vidaptive_fig1`]'s low rate.
pub const FIG1_LOW: Bitrate = Bitrate::kbps(500);
/// How long [`vidaptive_fig1`] holds each rate.
pub const FIG1_HOLD: Duration = Duration::from_secs(40);

/// Vidaptive's Figure 1 link (Vidaptive, arXiv 2309.16869, section 2): 2 Mb/s and 500 kb/s
/// alternating every 40 s, starting high; an 80 s period, repeating. Deterministic. The
/// figure's 50 ms RTT and no drops are the experiment's `delay_ms = 25` and a deep queue.
pub fn vidaptive_fig1() -> Result<LinkConfig, GeneratorError> {
    Ok(LinkConfig::with_trace(generators::segments(&[
        RateSegment::hold(FIG1_HOLD, FIG1_HIGH),
        RateSegment::hold(FIG1_HOLD, FIG1_LOW),
    ])?))
}

/// The first thing a preset link is built to show (an outage, a fade, a fall in capacity):
/// what it is and when it starts and ends, from the link's start. A shortened run must
/// reach past `end` to show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// In words ("the dropout").
    pub what: &'static str,
    /// When it starts.
    pub start: Duration,
    /// When it is over (the link back to what it was, or the step made).
    pub end: Duration,
}

/// The first event of preset `preset` with this seed (and the dropout's start `dropout_at`),
/// or `None` for a link that has none to keep (a steady or randomly varying link, a trace).
pub fn first_event(preset: &str, seed: u64, dropout_at: Duration) -> Option<LinkEvent> {
    (find(preset)?.first_event)(seed, dropout_at)
}

/// How a preset's links are built.
#[derive(Clone, Copy)]
pub enum Build {
    /// The video direction from the seed; the ACK direction replays it without its losses
    /// (ACKs are what recovery needs, and the paper's emulators impaired the forward path).
    Video(fn(u64) -> Result<LinkConfig, GeneratorError>),
    /// Both directions from the seed: (video, ACK).
    BothWays(fn(u64) -> Result<(LinkConfig, LinkConfig), GeneratorError>),
    /// Built by the driver from a parameter of its own: `constant:KBPS`'s rate, `dropout`'s
    /// start ([`dropout_500k`]), or `none`, no emulation at all.
    Driver,
}

/// One built-in link preset: the name `--link` and an experiment's `preset` take, one line
/// on what it is (every command's `--help` lists these), whether the evaluation runs it in
/// its long slow-and-fading group, how it is built, and its first event.
#[derive(Clone, Copy)]
pub struct Preset {
    /// Its name (`constant:KBPS` stands for every `constant:` rate).
    pub name: &'static str,
    /// What it is, in a few words.
    pub about: &'static str,
    /// In the evaluation's slow-and-fading group (long runs: their events are minutes apart).
    pub slow: bool,
    /// How its links are built.
    pub build: Build,
    /// Its first event with a seed and the dropout's start ([`first_event`]).
    pub first_event: fn(u64, Duration) -> Option<LinkEvent>,
}

impl std::fmt::Debug for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preset")
            .field("name", &self.name)
            .field("slow", &self.slow)
            .finish_non_exhaustive()
    }
}

fn no_event(_: u64, _: Duration) -> Option<LinkEvent> {
    None
}

fn event(what: &'static str, start: Duration, end: Duration) -> Option<LinkEvent> {
    Some(LinkEvent { what, start, end })
}

/// The built-in presets, in the order `--help` lists them: the paper's links, then the slow
/// and fading suite, then `none`. The one list: the simulator, `salsify link`, the
/// evaluation and every `--help` read it.
pub const BUILTIN: &[Preset] = &[
    Preset {
        name: "cellular",
        about: "Sprout-style, about 5 Mb/s",
        slow: false,
        build: Build::Video(synthetic_cellular),
        first_event: no_event,
    },
    Preset {
        name: "intermittent",
        about: "12 Mb/s with short failures",
        slow: false,
        build: Build::Video(intermittent),
        first_event: no_event,
    },
    Preset {
        name: "wifi",
        about: "570 kb/s, Poisson",
        slow: false,
        build: Build::Video(wifi_poisson),
        first_event: no_event,
    },
    Preset {
        name: "ramp",
        about: "4 Mb/s to 0 and back, 20 s",
        slow: false,
        build: Build::Video(|_| ramp()),
        first_event: |_, _| {
            let r = RampParams::default();
            event(
                "the ramp to zero and back",
                r.hold_high,
                r.hold_high + r.ramp_down + r.hold_zero + r.ramp_up,
            )
        },
    },
    Preset {
        name: "dropout",
        about: "500 kb/s with a one-second outage at --dropout-at",
        slow: false,
        build: Build::Driver,
        first_event: |_, at| event("the dropout", at, at + Duration::from_secs(1)),
    },
    Preset {
        name: "constant:KBPS",
        about: "a constant rate",
        slow: false,
        build: Build::Driver,
        first_event: no_event,
    },
    Preset {
        name: "fade",
        about: "5 Mb/s with deep fades to 10-50 kb/s",
        slow: true,
        build: Build::Video(fade),
        first_event: |seed, _| {
            let f = *fade_schedule(seed).first()?;
            event(
                "the first fade",
                f.start,
                f.start + FADE_EDGE + f.hold + FADE_EDGE,
            )
        },
    },
    Preset {
        name: "3g",
        about: "a random walk within 20-800 kb/s",
        slow: true,
        build: Build::Video(three_g),
        first_event: no_event,
    },
    Preset {
        name: "ack-stall",
        about: "2 Mb/s, the ACK path dead for 2-5 s every 10-20 s",
        slow: true,
        build: Build::BothWays(ack_stall),
        first_event: |seed, _| {
            let o = ack_stall_outages(seed).into_iter().next()?;
            event("the first ACK stall", o.start, o.start + o.duration)
        },
    },
    Preset {
        name: "cliff",
        about: "10 Mb/s for 20 s, 100 kb/s for 10 s",
        slow: true,
        build: Build::Video(|_| cliff()),
        first_event: |_, _| {
            event(
                "the cliff",
                CLIFF_HIGH_TIME,
                CLIFF_HIGH_TIME + CLIFF_LOW_TIME,
            )
        },
    },
    Preset {
        name: "vidaptive-fig1",
        about: "2 Mb/s and 500 kb/s alternating every 40 s",
        slow: false,
        build: Build::Video(|_| vidaptive_fig1()),
        first_event: |_, _| event("the step down to 500 kb/s", FIG1_HOLD, FIG1_HOLD),
    },
    Preset {
        name: "none",
        about: "no emulation",
        slow: false,
        build: Build::Driver,
        first_event: no_event,
    },
];

/// The built-in preset `name` (any `constant:` rate is `constant:KBPS`).
pub fn find(name: &str) -> Option<&'static Preset> {
    let name = if name.starts_with("constant:") {
        "constant:KBPS"
    } else {
        name
    };
    BUILTIN.iter().find(|p| p.name == name)
}

#[cfg(test)]
#[path = "presets_tests.rs"]
mod tests;
