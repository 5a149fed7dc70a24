//! The sender's per-frame decision as pure functions, so it can be read (and tested) against
//! the paper's pseudo-code on its own, apart from the state machine that feeds it.
//!
//! Two layers, kept visibly apart:
//!
//! 1. **The paper** (its transport's budget and Algorithm 2): the budget for the next frame
//!    is `MTU x (d / tau - N)` ([`paper_budget`]); of the two options encoded from one state,
//!    send the larger one that fits it, else neither ([`choose_paper`]).
//! 2. **This project's additions** ([`frame_budget`], [`choose_frame`] and the predicates
//!    [`feedback_starved`], [`outage_suspected`], [`probe_due`]): no budget before the first
//!    estimate unless something is in flight; the worse option is forced out after
//!    `max_consecutive_skips` skips with nothing in flight (otherwise no ACK ever reopens the
//!    budget), and as a probe every `outage_probe_interval` while an outage is suspected.
//!
//! [`crate::Sender`] calls exactly these functions; nothing else decides what it sends.

use salsify_time::{duration_micros, Duration, Instant};

use crate::sender::Choice;

/// The paper's budget for the next frame, in bytes: `MTU x (d / tau - N)`, clamped at zero.
///
/// `mtu` is the fragment payload, `delay_target` is `d`, `mean_interarrival` is the receiver's
/// `tau` (taken as at least 1 µs) and `in_flight` is `N`, fragments sent beyond the newest
/// one the receiver reported. `d / tau` is counted in whole fragments (rounded down), as in
/// the original code.
pub fn paper_budget(
    mtu: usize,
    delay_target: Duration,
    mean_interarrival: Duration,
    in_flight: u64,
) -> usize {
    let tau = duration_micros(mean_interarrival).max(1);
    let allowed = duration_micros(delay_target) / tau;
    let fragments = allowed.saturating_sub(in_flight);
    let fragments = usize::try_from(fragments).unwrap_or(usize::MAX);
    fragments.saturating_mul(mtu)
}

/// The budget the sender uses: [`paper_budget`] once the receiver has reported `tau`.
///
/// Before that there is nothing to base a budget on: `None` (no limit) while nothing is in
/// flight, else zero — one frame at a time until the first estimate. (The original allowed
/// anything until then, which on a slow link queues seconds of ever-finer frames before the
/// first ACK returns.)
pub fn frame_budget(
    mtu: usize,
    delay_target: Duration,
    mean_interarrival: Option<Duration>,
    in_flight: u64,
) -> Option<usize> {
    match mean_interarrival {
        Some(tau) => Some(paper_budget(mtu, delay_target, tau, in_flight)),
        None => (in_flight > 0).then_some(0),
    }
}

/// What Algorithm 2 does with the two options of one picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaperDecision {
    /// Send the better (finer-quantizer) option.
    SendBetter,
    /// Send the worse (coarser-quantizer) option.
    SendWorse,
    /// Send neither; the next picture is encoded from the same state.
    Skip,
}

/// Algorithm 2: of the options that fit `budget` (`None`: no limit), send the larger; if
/// neither fits, skip. A tie goes to the better option (the finer quantizer).
///
/// Usually the better option is the larger, so this reads "the better one if it fits, else
/// the worse one if it fits, else skip"; "larger" matters only when the finer quantizer made
/// the smaller frame, and then the larger frame is the one that uses the budget.
pub fn choose_paper(budget: Option<usize>, better_len: usize, worse_len: usize) -> PaperDecision {
    let fits = |len: usize| budget.is_none_or(|b| len <= b);
    match (fits(better_len), fits(worse_len)) {
        (true, true) if worse_len > better_len => PaperDecision::SendWorse,
        (true, _) => PaperDecision::SendBetter,
        (false, true) => PaperDecision::SendWorse,
        (false, false) => PaperDecision::Skip,
    }
}

/// When this project sends although the paper would skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overrides {
    /// See [`feedback_starved`].
    pub feedback_starved: bool,
    /// See [`probe_due`].
    pub probe_due: bool,
}

/// The sender's decision: [`choose_paper`], except that a skip becomes a forced send of the
/// worse option when `overrides` says feedback must flow. `None`: skip.
pub fn choose_frame(
    budget: Option<usize>,
    better_len: usize,
    worse_len: usize,
    overrides: Overrides,
) -> Option<Choice> {
    match choose_paper(budget, better_len, worse_len) {
        PaperDecision::SendBetter => Some(Choice::Better),
        PaperDecision::SendWorse => Some(Choice::Worse),
        PaperDecision::Skip if overrides.probe_due || overrides.feedback_starved => {
            Some(Choice::ForcedWorse)
        }
        PaperDecision::Skip => None,
    }
}

/// Skipped `max_consecutive_skips` pictures in a row with nothing in flight: no ACK is coming
/// to reopen the budget (`d / tau` rounds to no fragment when `tau > d`), so a frame must go
/// anyway for feedback to flow. While fragments are in flight their ACKs will come; forcing
/// frames then only floods the queue (measured: 720p on a 36 kb/s stretch of the Verizon
/// EV-DO trace, a forced 8.6 KB frame every fifth picture offered 850 kb/s and built a 15 s
/// queue). A lost flight is covered by the outage probes.
pub fn feedback_starved(
    consecutive_skips: u32,
    max_consecutive_skips: u32,
    in_flight: u64,
) -> bool {
    consecutive_skips >= max_consecutive_skips && in_flight == 0
}

/// Fragments are in flight and the receiver has been silent since `silent_since` for the
/// outage timeout (`outage_timeout`, or four mean inter-arrival times if longer): what is in
/// flight is presumed lost (see [`crate::SenderConfig::outage_timeout`]).
pub fn outage_suspected(
    now: Instant,
    silent_since: Option<Instant>,
    mean_interarrival: Option<Duration>,
    outage_timeout: Duration,
    in_flight: u64,
) -> bool {
    let Some(since) = silent_since else {
        return false;
    };
    let tau = mean_interarrival.unwrap_or(Duration::ZERO);
    let timeout = outage_timeout.max(tau.saturating_mul(4));
    in_flight > 0 && now >= since + timeout
}

/// During a suspected outage, a probe frame is due once `probe_interval` has passed since the
/// last frame sent (see [`crate::SenderConfig::outage_probe_interval`]).
pub fn probe_due(
    now: Instant,
    outage_suspected: bool,
    last_sent_at: Option<Instant>,
    probe_interval: Duration,
) -> bool {
    outage_suspected && last_sent_at.is_none_or(|t| now >= t + probe_interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use PaperDecision::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;
    const US: fn(u64) -> Duration = Duration::from_micros;

    /// Algorithm 2 as the paper states it, transcribed line by line: the candidates are the
    /// options whose size is within the budget; send the largest candidate (the first listed
    /// on a tie), or skip when there is none.
    fn transcription(budget: Option<usize>, better: usize, worse: usize) -> PaperDecision {
        let mut chosen: Option<(PaperDecision, usize)> = None;
        for (option, size) in [(SendBetter, better), (SendWorse, worse)] {
            let within_budget = match budget {
                None => true,
                Some(target_size) => size <= target_size,
            };
            if within_budget && chosen.is_none_or(|(_, best)| size > best) {
                chosen = Some((option, size));
            }
        }
        match chosen {
            Some((option, _)) => option,
            None => Skip,
        }
    }

    #[test]
    fn paper_budget_is_mtu_times_d_over_tau_minus_n() {
        // d = 100 ms, tau = 1 ms: 100 fragments of 1400 bytes.
        assert_eq!(paper_budget(1400, MS(100), MS(1), 0), 140_000);
        // N = 30 in flight: 70 left.
        assert_eq!(paper_budget(1400, MS(100), MS(1), 30), 98_000);
        // d / tau rounds down to whole fragments: 100 / 3 = 33.
        assert_eq!(paper_budget(1000, MS(100), MS(3), 0), 33_000);
        // More in flight than allowed, or tau longer than d: nothing.
        assert_eq!(paper_budget(1400, MS(100), MS(1), 500), 0);
        assert_eq!(paper_budget(1400, MS(100), MS(150), 0), 0);
        // tau of zero counts as 1 µs; nothing overflows.
        assert_eq!(paper_budget(1400, MS(100), Duration::ZERO, 0), 140_000_000);
        assert_eq!(
            paper_budget(usize::MAX, Duration::MAX, Duration::ZERO, 0),
            usize::MAX
        );
    }

    #[test]
    fn frame_budget_before_the_first_estimate() {
        assert_eq!(frame_budget(1400, MS(100), None, 0), None);
        assert_eq!(frame_budget(1400, MS(100), None, 3), Some(0));
        assert_eq!(
            frame_budget(1400, MS(100), Some(US(2000)), 3),
            Some(47 * 1400)
        );
    }

    #[test]
    fn the_larger_option_that_fits_is_sent() {
        // Both fit: the better (larger).
        assert_eq!(choose_paper(Some(10_000), 8_000, 3_000), SendBetter);
        // Only the worse fits.
        assert_eq!(choose_paper(Some(5_000), 8_000, 3_000), SendWorse);
        // Neither.
        assert_eq!(choose_paper(Some(2_000), 8_000, 3_000), Skip);
        // Exactly the budget fits.
        assert_eq!(choose_paper(Some(8_000), 8_000, 3_000), SendBetter);
        // No budget yet: anything fits.
        assert_eq!(choose_paper(None, 8_000, 3_000), SendBetter);
        // The finer quantizer made the smaller frame: the larger is sent; a tie, the better.
        assert_eq!(choose_paper(Some(10_000), 3_000, 4_000), SendWorse);
        assert_eq!(choose_paper(Some(10_000), 4_000, 4_000), SendBetter);
        assert_eq!(choose_paper(Some(3_500), 3_000, 4_000), SendBetter);
    }

    #[test]
    fn overrides_only_turn_skips_into_forced_worse() {
        let none = Overrides::default();
        let starved = Overrides {
            feedback_starved: true,
            ..none
        };
        let probe = Overrides {
            probe_due: true,
            ..none
        };
        assert_eq!(choose_frame(Some(2_000), 8_000, 3_000, none), None);
        assert_eq!(
            choose_frame(Some(2_000), 8_000, 3_000, starved),
            Some(Choice::ForcedWorse)
        );
        assert_eq!(
            choose_frame(Some(2_000), 8_000, 3_000, probe),
            Some(Choice::ForcedWorse)
        );
        assert_eq!(
            choose_frame(Some(10_000), 8_000, 3_000, probe),
            Some(Choice::Better)
        );
        assert_eq!(
            choose_frame(Some(5_000), 8_000, 3_000, starved),
            Some(Choice::Worse)
        );
    }

    #[test]
    fn feedback_is_starved_only_with_nothing_in_flight() {
        assert!(!feedback_starved(3, 4, 0));
        assert!(feedback_starved(4, 4, 0));
        assert!(feedback_starved(9, 4, 0));
        assert!(!feedback_starved(9, 4, 1));
    }

    #[test]
    fn outages_are_suspected_after_the_longer_of_the_timeout_and_four_tau() {
        let t0 = Instant::from_millis(1_000);
        let at = |ms| t0 + MS(ms);
        // Not silent, or nothing in flight: no outage.
        assert!(!outage_suspected(at(900), None, None, MS(250), 5));
        assert!(!outage_suspected(at(900), Some(t0), None, MS(250), 0));
        assert!(!outage_suspected(at(249), Some(t0), None, MS(250), 5));
        assert!(outage_suspected(at(250), Some(t0), None, MS(250), 5));
        // tau = 100 ms: four of them.
        assert!(!outage_suspected(
            at(399),
            Some(t0),
            Some(MS(100)),
            MS(250),
            5
        ));
        assert!(outage_suspected(
            at(400),
            Some(t0),
            Some(MS(100)),
            MS(250),
            5
        ));
        // An absurd tau does not overflow.
        assert!(!outage_suspected(
            at(400),
            Some(t0),
            Some(Duration::MAX),
            MS(250),
            5
        ));
    }

    #[test]
    fn probes_are_spaced_by_the_probe_interval() {
        let t0 = Instant::from_millis(1_000);
        assert!(!probe_due(t0, false, None, MS(80)));
        assert!(probe_due(t0, true, None, MS(80)));
        assert!(!probe_due(t0 + MS(79), true, Some(t0), MS(80)));
        assert!(probe_due(t0 + MS(80), true, Some(t0), MS(80)));
    }

    proptest! {
        #[test]
        fn choose_paper_is_the_paper_pseudo_code(
            budget in proptest::option::of(0usize..20_000),
            better in 0usize..20_000,
            worse in 0usize..20_000,
        ) {
            prop_assert_eq!(choose_paper(budget, better, worse), transcription(budget, better, worse));
        }

        #[test]
        fn sizes_near_the_budget_follow_the_pseudo_code(
            budget in 0usize..64,
            better in 0usize..64,
            worse in 0usize..64,
        ) {
            let budget = Some(budget);
            prop_assert_eq!(choose_paper(budget, better, worse), transcription(budget, better, worse));
        }

        #[test]
        fn choose_frame_sends_what_the_paper_sends_and_forces_only_skips(
            budget in proptest::option::of(0usize..20_000),
            better in 0usize..20_000,
            worse in 0usize..20_000,
            feedback_starved: bool,
            probe_due: bool,
        ) {
            let overrides = Overrides { feedback_starved, probe_due };
            let expected = match transcription(budget, better, worse) {
                SendBetter => Some(Choice::Better),
                SendWorse => Some(Choice::Worse),
                Skip if feedback_starved || probe_due => Some(Choice::ForcedWorse),
                Skip => None,
            };
            prop_assert_eq!(choose_frame(budget, better, worse, overrides), expected);
        }

        #[test]
        fn paper_budget_matches_the_formula_in_real_numbers(
            mtu in 1usize..2000,
            d_us in 1u64..1_000_000,
            tau_us in 1u64..1_000_000,
            n in 0u64..2000,
        ) {
            let fragments = (d_us as f64 / tau_us as f64).floor() - n as f64;
            let expected = (fragments.max(0.0) as usize) * mtu;
            prop_assert_eq!(paper_budget(mtu, US(d_us), US(tau_us), n), expected);
        }
    }
}
