//! The one clock type of the project.
//!
//! Every sans-IO state machine (sender, receiver, link emulator) takes the current time as an
//! argument of this type and never reads a clock itself. The simulator starts it at
//! [`Instant::ZERO`] and advances it in virtual time; the real-time runtime maps the OS's
//! monotonic clock onto it. Durations are plain [`std::time::Duration`]s.
//!
//! Layer 0 of the workspace (README, "Layout"): it depends on no other Salsify crate, and every
//! crate that keeps time uses it.

#![forbid(unsafe_code)]

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
pub use std::time::Duration;

pub mod serde_units;
mod units;
pub use units::Bitrate;

/// A point in time: microseconds since an arbitrary epoch (the start of a run).
///
/// Microseconds are fine enough for packet timing (a 1500-byte packet at 1 Gb/s takes 12 µs)
/// and a `u64` of them lasts 584 000 years, so arithmetic saturates instead of wrapping.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The start of a run.
    pub const ZERO: Instant = Instant(0);
    /// Later than any time a run reaches; used as "never" for deadlines.
    pub const FAR_FUTURE: Instant = Instant(u64::MAX);

    /// The instant `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros)
    }

    /// The instant `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time since the epoch.
    pub const fn since_epoch(self) -> Duration {
        Duration::from_micros(self.0)
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// Time elapsed from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_micros)
    }

    /// `self - d`, or `None` before the epoch.
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        self.0.checked_sub(duration_micros(d)).map(Instant)
    }
}

/// A duration in whole microseconds, saturating at `u64::MAX`.
pub fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_micros(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the epoch.
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(duration_micros(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero, like [`Instant::saturating_duration_since`].
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}s", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = Instant::from_millis(5);
        assert_eq!(t + Duration::from_millis(2), Instant::from_micros(7000));
        assert_eq!(t - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t - Instant::ZERO, Duration::from_millis(5));
        assert_eq!(
            Instant::FAR_FUTURE + Duration::from_secs(1),
            Instant::FAR_FUTURE
        );
        assert_eq!(Instant::ZERO.checked_duration_since(t), None);
        assert_eq!(t.checked_sub(Duration::from_millis(6)), None);
    }

    #[test]
    fn debug_shows_seconds_with_microseconds() {
        assert_eq!(
            format!("{:?}", Instant::from_micros(1_234_567)),
            "1.234567s"
        );
    }
}
