//! Bit rates with their unit in the type, one type for every crate (links, congestion
//! controllers, encoders), so "5" cannot be read as kb/s in one place and Mb/s in another.

use std::fmt;

use crate::Duration;

/// A bit rate in bits per second.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bitrate(u64);

impl Bitrate {
    /// Zero.
    pub const ZERO: Bitrate = Bitrate(0);

    /// `bps` bits per second.
    pub const fn bps(bps: u64) -> Self {
        Bitrate(bps)
    }

    /// `kbps` kilobits per second.
    pub const fn kbps(kbps: u64) -> Self {
        Bitrate(kbps.saturating_mul(1000))
    }

    /// `mbps` million bits per second.
    pub const fn mbps(mbps: u64) -> Self {
        Bitrate(mbps.saturating_mul(1_000_000))
    }

    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }

    /// Kilobits per second, rounded down.
    pub const fn as_kbps(self) -> u64 {
        self.0 / 1000
    }

    /// Bits per second as a float.
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    /// The rate from a float (negative and NaN become zero).
    pub fn from_f64(bps: f64) -> Self {
        if bps.is_finite() && bps > 0.0 {
            Bitrate(bps.round() as u64)
        } else {
            Bitrate(0)
        }
    }

    /// The rate that carries `bytes` in `d` (zero for a zero duration).
    pub fn from_bytes_per(bytes: u64, d: Duration) -> Self {
        let s = d.as_secs_f64();
        if s > 0.0 {
            Bitrate::from_f64(bytes as f64 * 8.0 / s)
        } else {
            Bitrate(0)
        }
    }

    /// Time to send `bytes` at this rate (`Duration::MAX` at zero).
    pub fn time_for(self, bytes: u64) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        Duration::from_micros(bytes.saturating_mul(8_000_000) / self.0)
    }

    /// Bytes sent in `d` at this rate.
    pub fn bytes_in(self, d: Duration) -> u64 {
        (self.0 as f64 * d.as_secs_f64() / 8.0) as u64
    }

    /// The rate scaled by `f`.
    pub fn mul_f64(self, f: f64) -> Self {
        Bitrate::from_f64(self.0 as f64 * f)
    }

    /// Clamped into `lo..=hi`.
    pub fn clamp_to(self, lo: Bitrate, hi: Bitrate) -> Self {
        Bitrate(self.0.max(lo.0).min(hi.0.max(lo.0)))
    }
}

impl fmt::Debug for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} kb/s", self.0 as f64 / 1000.0)
    }
}

impl fmt::Display for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl std::ops::Add for Bitrate {
    type Output = Bitrate;
    fn add(self, o: Bitrate) -> Bitrate {
        Bitrate::bps(self.as_bps().saturating_add(o.as_bps()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert() {
        let r = Bitrate::kbps(800);
        assert_eq!(r.time_for(1000), Duration::from_millis(10));
        assert_eq!(r.bytes_in(Duration::from_secs(1)), 100_000);
        assert_eq!(Bitrate::from_bytes_per(100_000, Duration::from_secs(1)), r);
        assert_eq!(Bitrate::ZERO.time_for(1), Duration::MAX);
        assert_eq!(Bitrate::from_f64(f64::NAN), Bitrate::ZERO);
    }
}
