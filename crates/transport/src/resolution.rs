//! The slow-link rules' resolution step: when to code the picture at a smaller size.
//!
//! Salsify's quality knob is the quantizer, and the coarsest quantizer sets a floor under the
//! size of a frame at a given picture size. Where the link is so slow that even that frame
//! takes longer than the delay target to cross (720p on 20 kb/s), every frame sent adds
//! delay, and the quality the link allows is that coarsest frame anyway. A smaller picture
//! lowers the floor. The rule is made of what the sender knows, not of constants fitted to a
//! link: the estimated time per full fragment (tau), the size of the coarsest frame at the
//! current size, and the delay target `d`.
//!
//! - A frame of `L` bytes crosses in `L x tau / MTU`. The coarsest frame "does not fit" when
//!   that is over `d`.
//! - One halving up makes a frame about four times larger (the area; a coarse frame's bytes
//!   are mostly per-macroblock modes and vectors). The larger size "fits with margin" when
//!   four times the coarsest frame now would cross in `d / margin`.
//! - Either must hold on every observation for a sustained time
//!   ([`ResolutionStepConfig::step_down_after`], [`ResolutionStepConfig::step_up_after`]);
//!   the gap between the two thresholds (a factor `4 x margin` in estimated rate) is the
//!   hysteresis.
//!
//! Observations are inter frames only: a keyframe's size says nothing about the floor.

use salsify_time::{Duration, Instant};

use crate::config::ResolutionStepConfig;

/// Area ratio between two sizes one halving apart.
pub const AREA_RATIO: usize = 4;

/// What one observation says about the picture size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The coarsest frame at this size takes longer than the delay target to cross.
    TooLarge,
    /// The coarsest frame fits, the larger size would not fit with margin.
    Fits,
    /// A frame at the next larger size would cross within `d / margin`.
    RoomForLarger,
    /// Nothing can be said (no estimate, or only an upper bound that does not fit).
    Unknown,
}

/// How one picture's options measure the current size. `coarsest` is the coarsest
/// quantizer's frame if it was made; `smallest` the smallest option (an upper bound on the
/// coarsest frame). `tau` is the time per full fragment of `mtu` bytes.
pub fn classify(
    coarsest: Option<usize>,
    smallest: usize,
    mtu: usize,
    delay_target: Duration,
    tau: Option<Duration>,
    margin: f64,
) -> Fit {
    let Some(tau) = tau.filter(|t| !t.is_zero()) else {
        return Fit::Unknown;
    };
    let crossing = |bytes: usize| tau.as_secs_f64() * bytes as f64 / mtu.max(1) as f64;
    let d = delay_target.as_secs_f64();
    let bound = coarsest.unwrap_or(smallest);
    if crossing(bound.saturating_mul(AREA_RATIO)) * margin <= d {
        Fit::RoomForLarger
    } else if crossing(bound) <= d {
        Fit::Fits
    } else if coarsest.is_some() {
        Fit::TooLarge
    } else {
        Fit::Unknown
    }
}

/// Which way a step is pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Down(Instant),
    Up(Instant),
}

/// The current size (halvings of the source's width and height) and the step pending.
#[derive(Debug, Clone, Default)]
pub struct ResolutionStep {
    halvings: u8,
    pending: Option<Pending>,
    changes: u64,
}

impl ResolutionStep {
    /// At the source size.
    pub fn new() -> Self {
        Self::default()
    }

    /// Halvings of the source size in force.
    pub fn halvings(&self) -> u8 {
        self.halvings
    }

    /// Steps taken so far (down and up).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// One observation of the size `at_halvings` at `now`; true if the size changed. An
    /// observation of another size than the current one (an encode started before a step)
    /// is ignored.
    pub fn observe(
        &mut self,
        now: Instant,
        config: &ResolutionStepConfig,
        at_halvings: u8,
        fit: Fit,
    ) -> bool {
        if !config.enabled || at_halvings != self.halvings {
            return false;
        }
        let (next, hold) = match fit {
            Fit::TooLarge if self.halvings < config.max_halvings => {
                (Pending::Down(now), config.step_down_after)
            }
            Fit::RoomForLarger if self.halvings > 0 => (Pending::Up(now), config.step_up_after),
            Fit::Unknown => return false,
            _ => {
                self.pending = None;
                return false;
            }
        };
        let since = match (self.pending, next) {
            (Some(Pending::Down(t)), Pending::Down(_)) | (Some(Pending::Up(t)), Pending::Up(_)) => {
                t
            }
            _ => {
                self.pending = Some(next);
                now
            }
        };
        if now.saturating_duration_since(since) < hold {
            return false;
        }
        self.halvings = match next {
            Pending::Down(_) => self.halvings + 1,
            Pending::Up(_) => self.halvings - 1,
        };
        self.pending = None;
        self.changes += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + MS(ms)
    }

    #[test]
    fn classification_follows_crossing_time_against_the_delay_target() {
        // tau 10 ms per 1400 bytes: 100 ms carries 14,000 bytes.
        let c = |coarsest, smallest| classify(coarsest, smallest, 1400, MS(100), Some(MS(10)), 2.0);
        assert_eq!(c(Some(14_001), 20_000), Fit::TooLarge);
        assert_eq!(c(Some(14_000), 20_000), Fit::Fits);
        // 4 x 1750 x 2 = 14,000: the larger size fits with margin 2.
        assert_eq!(c(Some(1_750), 3_000), Fit::RoomForLarger);
        assert_eq!(c(Some(1_751), 3_000), Fit::Fits);
        // Without the coarsest frame the smallest option bounds it from above.
        assert_eq!(c(None, 1_000), Fit::RoomForLarger);
        assert_eq!(c(None, 10_000), Fit::Fits);
        assert_eq!(c(None, 20_000), Fit::Unknown);
        assert_eq!(classify(Some(1), 1, 1400, MS(100), None, 2.0), Fit::Unknown);
    }

    #[test]
    fn steps_down_only_after_a_sustained_misfit_and_up_after_sustained_room() {
        let config = ResolutionStepConfig::default();
        let mut s = ResolutionStep::new();
        assert!(!s.observe(at(0), &config, 0, Fit::TooLarge));
        assert!(!s.observe(at(600), &config, 0, Fit::TooLarge));
        // One fitting observation restarts the clock.
        assert!(!s.observe(at(700), &config, 0, Fit::Fits));
        assert!(!s.observe(at(800), &config, 0, Fit::TooLarge));
        assert!(!s.observe(at(1_500), &config, 0, Fit::Unknown));
        assert!(!s.observe(at(1_700), &config, 0, Fit::TooLarge));
        assert!(s.observe(at(1_800), &config, 0, Fit::TooLarge));
        assert_eq!(s.halvings(), 1);
        // At the smallest size allowed: no further step, and stale observations are ignored.
        assert!(!s.observe(at(5_000), &config, 1, Fit::TooLarge));
        assert!(!s.observe(at(9_000), &config, 1, Fit::TooLarge));
        assert!(!s.observe(at(9_000), &config, 0, Fit::RoomForLarger));
        assert!(!s.observe(at(10_000), &config, 1, Fit::RoomForLarger));
        assert!(!s.observe(at(10_900), &config, 1, Fit::RoomForLarger));
        assert!(s.observe(at(11_000), &config, 1, Fit::RoomForLarger));
        assert_eq!((s.halvings(), s.changes()), (0, 2));
        // At the source size there is nothing larger.
        assert!(!s.observe(at(20_000), &config, 0, Fit::RoomForLarger));
        assert!(!s.observe(at(30_000), &config, 0, Fit::RoomForLarger));
    }

    #[test]
    fn disabled_never_steps() {
        let config = ResolutionStepConfig {
            enabled: false,
            ..ResolutionStepConfig::default()
        };
        let mut s = ResolutionStep::new();
        for t in 0..100 {
            assert!(!s.observe(at(t * 100), &config, 0, Fit::TooLarge));
        }
        assert_eq!(s.halvings(), 0);
    }
}
