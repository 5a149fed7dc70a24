//! The one place the real-time runtime reads the OS clock.
//!
//! [`salsify_time::Instant`] is mapped onto `CLOCK_MONOTONIC` in microseconds. Because that
//! clock is shared by every process on a machine, a sender and a receiver started separately
//! on one host agree on time, so the receiver can log delays against the send timestamps the
//! sender puts in each fragment (valid only when both run on the same machine).

use salsify_time::{Duration, Instant};

/// Now, on the machine-wide monotonic clock.
pub fn now() -> Instant {
    Instant::from_micros(read(libc::CLOCK_MONOTONIC))
}

/// Converts a kernel receive timestamp taken on the wall clock (`SO_TIMESTAMPNS` gives
/// `CLOCK_REALTIME`) to the monotonic clock: now minus the packet's age. A timestamp from
/// the future (a wall-clock step) or more than a second old is not trusted; `None` then, and
/// the caller uses the user-space time.
pub fn from_realtime(stamp: std::time::Duration) -> Option<Instant> {
    let mono = now();
    let real = Duration::from_micros(read(libc::CLOCK_REALTIME));
    if stamp > real + Duration::from_millis(1) {
        return None;
    }
    // Sub-microsecond stamps may be a little after `real`, which is truncated to µs.
    let age = real.saturating_sub(stamp);
    if age > Duration::from_secs(1) {
        return None;
    }
    mono.checked_sub(age)
}

/// The time left until `deadline`, zero if it has passed.
pub fn until(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(now())
}

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids are constants Linux supports.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    // Panic = bug: clock_gettime cannot fail for these clocks with a valid pointer.
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_realtime_conversion() {
        let a = now();
        let b = now();
        assert!(b >= a);
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let converted = from_realtime(real).expect("a fresh timestamp converts");
        assert!(converted <= now());
        assert!(now().saturating_duration_since(converted) < Duration::from_millis(100));
        assert!(from_realtime(real + Duration::from_secs(10)).is_none());
    }
}
