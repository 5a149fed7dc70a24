//! Synthetic traces: constant rate, Poisson deliveries, a ramp to zero and back, a
//! piecewise-linear rate curve ([`segments`]) and a stochastic cellular-like trace, all producing ordinary [`Trace`]s (so they can be written
//! as Mahimahi files and replayed by `mm-link` too).
//!
//! Every opportunity carries [`TRACE_PACKET_BYTES`] (1500 bytes = 12 000 bits), so a rate of
//! R bit/s means R / 12 000 opportunities per second. Timestamps are whole milliseconds, as in
//! Mahimahi. A trace's period is its last timestamp, so each generator makes sure its last
//! opportunity falls exactly at the end of the requested period (moving the final one there
//! if needed, which keeps the count, hence the mean rate, exact).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Poisson, StandardNormal};
use salsify_time::Duration;

use crate::trace::{Trace, TraceError, TRACE_PACKET_BYTES};

/// Bits one opportunity carries.
const BITS_PER_OPPORTUNITY: u64 = TRACE_PACKET_BYTES as u64 * 8;

/// Longest period the constant-rate generator uses when an exact one would be longer.
const MAX_EXACT_PERIOD_MS: u64 = 60_000;

/// Longest period a generator accepts (one day): the per-millisecond generators do work
/// proportional to it, and a longer trace is better made by repetition.
const MAX_GENERATED_PERIOD_MS: u64 = 86_400_000;

/// Most opportunities a generated trace may hold (160 MB of timestamps), a guard against a
/// rate or period typed in the wrong unit.
pub const MAX_GENERATED_OPPORTUNITIES: u64 = 20_000_000;

pub use salsify_time::Bitrate;

/// Why a trace could not be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GeneratorError {
    /// A rate of zero where a positive one is needed.
    #[error("rate must be positive")]
    ZeroRate,
    /// A period shorter than 1 ms.
    #[error("period must be at least 1 ms")]
    PeriodTooShort,
    /// The rate and period give no opportunity at all.
    #[error("rate and period give no delivery opportunity")]
    NoOpportunities,
    /// The trace would exceed [`MAX_GENERATED_OPPORTUNITIES`].
    #[error("trace would hold {0} opportunities, above the maximum")]
    TooManyOpportunities(u64),
    /// A parameter is out of range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// The result failed trace validation (a bug if it happens).
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// A constant rate, placed as evenly as whole milliseconds allow.
///
/// The period is the shortest whole number of milliseconds holding a whole number of
/// opportunities at exactly this rate (24 ms for 500 kb/s, 1 ms for 12 Mb/s), so the mean is
/// exact. If that would exceed 60 s, a 60 s period with the nearest count is used instead
/// (relative error at most 1 / (2 x count)).
pub fn constant(rate: Bitrate) -> Result<Trace, GeneratorError> {
    let r = rate.as_bps();
    if r == 0 {
        return Err(GeneratorError::ZeroRate);
    }
    // Opportunities per ms = r / (12 000 bits x 1000 ms/s).
    let per_ms_den = BITS_PER_OPPORTUNITY * 1000;
    let g = gcd(r, per_ms_den);
    let (period_ms, count) = if per_ms_den / g <= MAX_EXACT_PERIOD_MS {
        (per_ms_den / g, r / g)
    } else {
        let count = (r as f64 * MAX_EXACT_PERIOD_MS as f64 / per_ms_den as f64).round() as u64;
        (MAX_EXACT_PERIOD_MS, count)
    };
    check_count(count)?;
    // The i-th opportunity (1-based) at ceil(i x period / count): evenly spread, last at the
    // period's end.
    let millis = (1..=count)
        .map(|i| (u128::from(i) * u128::from(period_ms)).div_ceil(u128::from(count)) as u64)
        .collect();
    Ok(Trace::from_millis(millis)?)
}

/// Poisson deliveries at a mean rate: the paper's emulated Wi-Fi used ~570 kb/s.
///
/// The trace holds exactly `round(rate x period / 12 000 bits)` opportunities: the last at the
/// period's end and the others at independent uniform times within it, which is a Poisson
/// process conditioned on its count, so the mean rate is exact while the gaps are exponential.
pub fn poisson(mean: Bitrate, period: Duration, seed: u64) -> Result<Trace, GeneratorError> {
    let period_ms = period_ms(period)?;
    if mean.as_bps() == 0 {
        return Err(GeneratorError::ZeroRate);
    }
    let count =
        (mean.as_f64() * period_ms as f64 / 1000.0 / BITS_PER_OPPORTUNITY as f64).round() as u64;
    check_count(count)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut millis: Vec<u64> = (1..count).map(|_| rng.gen_range(0..period_ms)).collect();
    millis.sort_unstable();
    millis.push(period_ms);
    Ok(Trace::from_millis(millis)?)
}

/// The shape of a capacity ramp: high, down to zero, hold, and back up.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RampParams {
    /// Rate before the ramp and after it. Default 4 Mb/s.
    pub high: Bitrate,
    /// Time at the high rate at the start of each period. Default 5 s.
    pub hold_high: Duration,
    /// Time to fall linearly from high to zero. Default 6 s.
    pub ramp_down: Duration,
    /// Time at zero. Default 2 s.
    pub hold_zero: Duration,
    /// Time to climb linearly from zero back to high. Default 7 s.
    pub ramp_up: Duration,
}

impl Default for RampParams {
    /// A 20 s cycle, the window the paper's ramp figure shows. The paper gives no rates; these
    /// are our choice.
    fn default() -> Self {
        RampParams {
            high: Bitrate::mbps(4),
            hold_high: Duration::from_secs(5),
            ramp_down: Duration::from_secs(6),
            hold_zero: Duration::from_secs(2),
            ramp_up: Duration::from_secs(7),
        }
    }
}

/// Capacity falling gradually to zero and coming back (the paper's ramp experiment).
pub fn ramp(p: &RampParams) -> Result<Trace, GeneratorError> {
    if p.high.as_bps() == 0 {
        return Err(GeneratorError::ZeroRate);
    }
    let [hold, down, zero, up] =
        [p.hold_high, p.ramp_down, p.hold_zero, p.ramp_up].map(|d| d.as_secs_f64());
    let period = [p.ramp_down, p.hold_zero, p.ramp_up]
        .iter()
        .try_fold(p.hold_high, |sum, d| sum.checked_add(*d))
        .ok_or(GeneratorError::InvalidParameter("ramp too long"))?;
    let high = p.high.as_f64();
    from_rate_fn(period, |t| {
        let t = t.as_secs_f64();
        if t < hold {
            high
        } else if t < hold + down {
            high * (1.0 - (t - hold) / down)
        } else if t < hold + down + zero {
            0.0
        } else {
            high * ((t - hold - down - zero) / up).min(1.0)
        }
    })
}

/// Opportunities that follow a rate curve (bits per second as a function of time since the
/// period's start) as a fluid: an opportunity at the end of each millisecond in which the
/// integral of the rate crosses another 12 000 bits. Deterministic.
pub fn from_rate_fn(
    period: Duration,
    rate: impl Fn(Duration) -> f64,
) -> Result<Trace, GeneratorError> {
    let period_ms = period_ms(period)?;
    let mut millis = Vec::new();
    let mut owed = 0.0;
    for ms in 0..period_ms {
        let mid = Duration::from_micros(ms * 1000 + 500);
        let r = rate(mid);
        if !(r.is_finite() && r >= 0.0) {
            return Err(GeneratorError::InvalidParameter(
                "rate curve must be finite and >= 0",
            ));
        }
        owed += r / 1000.0 / BITS_PER_OPPORTUNITY as f64;
        let whole = owed.floor();
        owed -= whole;
        push_n(&mut millis, ms + 1, whole as u64)?;
    }
    close_period(millis, period_ms)
}

/// One piece of a piecewise-linear rate curve: the rate goes linearly from `from` to `to`
/// over `length` (equal rates hold it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSegment {
    /// How long the piece lasts.
    pub length: Duration,
    /// Rate at its start.
    pub from: Bitrate,
    /// Rate at its end.
    pub to: Bitrate,
}

impl RateSegment {
    /// `rate` held for `length`.
    pub fn hold(length: Duration, rate: Bitrate) -> RateSegment {
        RateSegment {
            length,
            from: rate,
            to: rate,
        }
    }

    /// A linear change from `from` to `to` over `length`.
    pub fn ramp(length: Duration, from: Bitrate, to: Bitrate) -> RateSegment {
        RateSegment { length, from, to }
    }
}

/// A piecewise-linear rate curve, the segments played in order (the period is the sum of
/// their lengths), delivered as a fluid by [`from_rate_fn`]. Steps (a cliff) are consecutive
/// holds; fades are ramps between holds. Deterministic.
pub fn segments(segments: &[RateSegment]) -> Result<Trace, GeneratorError> {
    let mut ends = Vec::with_capacity(segments.len());
    let mut total = Duration::ZERO;
    for s in segments {
        total = total
            .checked_add(s.length)
            .ok_or(GeneratorError::InvalidParameter("segments too long"))?;
        ends.push(total);
    }
    from_rate_fn(total, |t| {
        // The segment holding t: the first that ends after it (t < total always).
        let i = ends
            .partition_point(|&end| end <= t)
            .min(segments.len() - 1);
        let s = &segments[i];
        let start = ends[i].saturating_sub(s.length);
        let frac = if s.length.is_zero() {
            0.0
        } else {
            ((t - start).as_secs_f64() / s.length.as_secs_f64()).clamp(0.0, 1.0)
        };
        s.from.as_f64() + (s.to.as_f64() - s.from.as_f64()) * frac
    })
}

/// Parameters of the cellular-like trace.
///
/// Sprout (Winstein et al., NSDI 2013) models a cellular link as a Poisson process of packet
/// deliveries whose rate wanders in Brownian motion (volatility 200 packets/s per sqrt(s),
/// rate within 0..1000 packets/s). Pure Brownian motion has no mean, so this generator adds a
/// gentle pull back towards `mean` (an Ornstein-Uhlenbeck process) and reflects the rate at 0
/// and `max` (or at `min`, when set); the reflection at the floor raises the realised mean a
/// little above `mean`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CellularParams {
    /// Rate the walk is pulled towards. Default 5 Mb/s (about the Verizon LTE trace's mean).
    pub mean: Bitrate,
    /// Ceiling of the rate. Default 20 Mb/s.
    pub max: Bitrate,
    /// Floor of the rate (the walk reflects there). Default 0.
    pub min: Bitrate,
    /// Brownian volatility in bit/s per sqrt(second). Default 2.4 Mb/s (Sprout's 200 packets/s).
    pub volatility: Bitrate,
    /// Time constant of the pull towards the mean. Default 4 s.
    pub reversion: Duration,
    /// Length of the trace before it repeats. Default 120 s.
    pub period: Duration,
}

impl Default for CellularParams {
    fn default() -> Self {
        CellularParams {
            mean: Bitrate::mbps(5),
            max: Bitrate::mbps(20),
            min: Bitrate::ZERO,
            volatility: Bitrate::kbps(2400),
            reversion: Duration::from_secs(4),
            period: Duration::from_secs(120),
        }
    }
}

/// A stochastic cellular-like trace: each millisecond, Poisson-many deliveries at the current
/// rate, which then takes one step of its random walk. Same params and seed, same trace.
pub fn cellular(p: &CellularParams, seed: u64) -> Result<Trace, GeneratorError> {
    let period_ms = period_ms(p.period)?;
    if p.mean.as_bps() == 0 || p.max < p.mean || p.mean < p.min {
        return Err(GeneratorError::InvalidParameter(
            "need min <= mean <= max, mean > 0",
        ));
    }
    if p.reversion.is_zero() {
        return Err(GeneratorError::InvalidParameter("reversion must be > 0"));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mean, min, max) = (p.mean.as_f64(), p.min.as_f64(), p.max.as_f64());
    let dt = 0.001;
    let pull = dt / p.reversion.as_secs_f64();
    let kick = p.volatility.as_f64() * dt.sqrt();
    let mut rate = mean;
    let mut millis = Vec::new();
    for ms in 0..period_ms {
        let expected = rate * dt / BITS_PER_OPPORTUNITY as f64;
        if expected > 0.0 {
            let dist = Poisson::new(expected)
                .map_err(|_| GeneratorError::InvalidParameter("rate out of range"))?;
            let n: f64 = dist.sample(&mut rng);
            push_n(&mut millis, ms + 1, n as u64)?;
        }
        let z: f64 = rng.sample(StandardNormal);
        rate += (mean - rate) * pull + kick * z;
        rate = reflect(rate, min, max);
    }
    close_period(millis, period_ms)
}

/// `trace` with no opportunities in `[start, start + len)` of each period: capacity drops to
/// zero and queued packets wait (unlike a loss outage, which drops them).
pub fn with_gap(trace: &Trace, start: Duration, len: Duration) -> Result<Trace, GeneratorError> {
    let end = start
        .checked_add(len)
        .ok_or(GeneratorError::InvalidParameter(
            "gap must end within the period",
        ))?;
    let (a, b) = (start.as_millis(), end.as_millis());
    if b > u128::from(trace.period_ms()) {
        return Err(GeneratorError::InvalidParameter(
            "gap must end within the period",
        ));
    }
    let millis = trace
        .millis()
        .iter()
        .copied()
        .filter(|&ms| !(a..b).contains(&u128::from(ms)))
        .collect();
    Ok(Trace::from_millis(millis)?)
}

fn reflect(rate: f64, min: f64, max: f64) -> f64 {
    let r = if rate < min { 2.0 * min - rate } else { rate };
    let r = if r > max { 2.0 * max - r } else { r };
    r.clamp(min, max)
}

fn period_ms(period: Duration) -> Result<u64, GeneratorError> {
    let ms = period.as_millis();
    if ms == 0 {
        return Err(GeneratorError::PeriodTooShort);
    }
    u64::try_from(ms)
        .ok()
        .filter(|&ms| ms <= MAX_GENERATED_PERIOD_MS)
        .ok_or(GeneratorError::InvalidParameter("period longer than a day"))
}

fn check_count(count: u64) -> Result<(), GeneratorError> {
    match count {
        0 => Err(GeneratorError::NoOpportunities),
        n if n > MAX_GENERATED_OPPORTUNITIES => Err(GeneratorError::TooManyOpportunities(n)),
        _ => Ok(()),
    }
}

fn push_n(millis: &mut Vec<u64>, ms: u64, n: u64) -> Result<(), GeneratorError> {
    check_count(millis.len() as u64 + n + 1).or_else(|e| match e {
        GeneratorError::NoOpportunities => Ok(()),
        e => Err(e),
    })?;
    millis.resize(millis.len() + n as usize, ms);
    Ok(())
}

/// Makes the last opportunity fall at the period's end so the trace repeats with that period.
fn close_period(mut millis: Vec<u64>, period_ms: u64) -> Result<Trace, GeneratorError> {
    match millis.last_mut() {
        None => return Err(GeneratorError::NoOpportunities),
        Some(last) => *last = period_ms,
    }
    Ok(Trace::from_millis(millis)?)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
#[path = "generators_tests.rs"]
mod tests;
