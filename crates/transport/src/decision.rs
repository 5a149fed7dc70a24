//! The sender's per-frame decision as pure functions, so it can be read (and tested) against
//! the paper's pseudo-code on its own, apart from the state machine that feeds it.
//!
//! Three layers, kept visibly apart:
//!
//! 1. **The paper** (its transport's budget and Algorithm 2): the budget for the next frame
//!    is `MTU x (d / tau - N)` ([`paper_budget`]); of the two options encoded from one state,
//!    send the larger one that fits it, else neither ([`choose_paper`]).
//! 2. **The first round's additions** ([`frame_budget`], [`choose_frame`] and the predicates
//!    [`feedback_starved`], [`probe_due`]): no budget before the first estimate unless
//!    something is in flight; the worse option is forced out after a number of skips with
//!    nothing in flight (otherwise no ACK ever reopens the budget), and as a probe every
//!    probe interval while an outage is suspected.
//! 3. **The slow-link rules** ([`crate::SenderRules::SlowLink`], the default; built on the
//!    second layer's budget and predicates):
//!    [`paced_outage_suspected`] waits for an ACK as long as the link's own pace and the
//!    fragments in flight say, [`probe_interval`] backs probes off exponentially, and
//!    [`choose_slow_link`] caps what is sent against the budget's advice — a probe at one
//!    fragment, a forced send at `max(one fragment, budget)` ([`override_limit`]) — asking
//!    for one more encode at the coarsest quality when even the worse option is too large
//!    (a probe then sends that coarsest frame whatever its size: nothing smaller exists).
//!
//! Under [`crate::SenderRules::Paper`] the sender uses [`paper_budget`] as soon as it has an
//! estimate (no limit before), [`paper_forced`] and no outage handling.
//!
//! The rules of [`crate::rules`] call exactly these functions; nothing else decides what
//! [`crate::Sender`] sends.

use salsify_time::{duration_micros, Duration, Instant};

use salsify_endpoint::Choice;

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

/// The paper's forced send: after `max_consecutive_skips` skips in a row the worse option goes
/// anyway, whether or not fragments are in flight.
pub fn paper_forced(consecutive_skips: u32, max_consecutive_skips: u32) -> bool {
    consecutive_skips >= max_consecutive_skips
}

/// The link's pace as the sender sees it: the longer of the receiver's mean inter-arrival time
/// `tau` and `ack_gap`, the sender's last observed time per fragment between two ACKs while
/// fragments were in flight. The EWMA behind `tau` moves a tenth of the way per fragment, so
/// on a fading link it lags; the last ACK interval shows the slower pace at once.
pub fn link_pace(tau: Option<Duration>, ack_gap: Option<Duration>) -> Option<Duration> {
    match (tau, ack_gap) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// How long the receiver may stay silent, with `in_flight` fragments out, before an outage is
/// suspected under the slow-link rules: `max(floor, factor x pace x max(1, in_flight))` —
/// long enough for the whole flight to drain `factor` times over at the link's own pace, and
/// never less than `floor` (the configured `outage_timeout`). Without a pace, the floor.
pub fn paced_ack_timeout(
    floor: Duration,
    factor: u32,
    pace: Option<Duration>,
    in_flight: u64,
) -> Duration {
    let fragments = u32::try_from(in_flight.max(1)).unwrap_or(u32::MAX);
    let drain = pace
        .unwrap_or(Duration::ZERO)
        .saturating_mul(factor)
        .saturating_mul(fragments);
    floor.max(drain)
}

/// An outage under the slow-link rules: fragments in flight and silence since
/// `silent_since` for [`paced_ack_timeout`].
pub fn paced_outage_suspected(
    now: Instant,
    silent_since: Option<Instant>,
    timeout: Duration,
    in_flight: u64,
) -> bool {
    let Some(since) = silent_since else {
        return false;
    };
    in_flight > 0 && now.saturating_duration_since(since) >= timeout
}

/// The probe interval after `probes` probes in the current silence: `base x 2^probes`, at
/// most `cap` (and never below `base`).
pub fn probe_interval(base: Duration, cap: Duration, probes: u32) -> Duration {
    let factor = 1u32 << probes.min(31);
    base.saturating_mul(factor).min(cap).max(base)
}

/// The longest probe interval under the slow-link rules: `factor x pace` (a one-fragment probe
/// then takes at most `1 / factor` of the link as the estimate says), at least `base` and at
/// most `max`. On a fast link this is `base` — a probe costs the link next to nothing, so it
/// need not back off — and on a slow one it grows with the time a fragment takes. Without a
/// pace (no ACK yet) nothing says the link is fast: `max`, the full backoff.
pub fn probe_interval_cap(
    base: Duration,
    max: Duration,
    factor: u32,
    pace: Option<Duration>,
) -> Duration {
    let max = max.max(base);
    match pace {
        Some(pace) => pace.saturating_mul(factor).max(base).min(max),
        None => max,
    }
}

/// The most bytes a frame sent against the budget's advice may have under the slow-link
/// rules: with nothing in flight (feedback starved), what the estimate says drains within the
/// delay target but at least one fragment, `max(mtu, budget)`; a probe during a suspected
/// outage, one fragment; otherwise nothing (no override: the budget alone decides).
pub fn override_limit(mtu: usize, budget: Option<usize>, overrides: Overrides) -> usize {
    if overrides.feedback_starved {
        mtu.max(budget.unwrap_or(0))
    } else if overrides.probe_due {
        mtu
    } else {
        0
    }
}

/// What the slow-link rules do with one picture's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowLinkDecision {
    /// Send this option (as [`choose_frame`] names them).
    Send(Choice),
    /// Send the coarsest-quality encode of the same picture.
    SendCoarsest,
    /// Even the worse option is over the limit: encode the picture once more at the coarsest
    /// quality, from the same source, and decide again.
    EncodeCoarsest,
    /// Send nothing.
    Skip,
}

/// The slow-link rules' decision: [`choose_paper`] when an option fits the budget; otherwise,
/// when `overrides` call for a send, the worse option if it is within [`override_limit`], else
/// the coarsest encode (`coarsest_len`, `None` while it has not been made) if within it.
///
/// A coarsest frame over the limit still goes as a probe — it is the smallest frame the
/// encoder can make, and a probe that never goes leaves the sender waiting forever for ACKs
/// of fragments lost in the outage; [`probe_interval`]'s backoff bounds what probes cost.
/// A forced send over the limit waits, unless `lift` (the sender has waited long enough with
/// nothing in flight; see [`crate::Sender`]): waiting does not make the next picture's
/// coarsest frame smaller either.
pub fn choose_slow_link(
    budget: Option<usize>,
    mtu: usize,
    better_len: usize,
    worse_len: usize,
    coarsest_len: Option<usize>,
    overrides: Overrides,
    lift: bool,
) -> SlowLinkDecision {
    match choose_paper(budget, better_len, worse_len) {
        PaperDecision::SendBetter => return SlowLinkDecision::Send(Choice::Better),
        PaperDecision::SendWorse => return SlowLinkDecision::Send(Choice::Worse),
        PaperDecision::Skip => {}
    }
    if !(overrides.feedback_starved || overrides.probe_due) {
        return SlowLinkDecision::Skip;
    }
    let limit = override_limit(mtu, budget, overrides);
    if worse_len <= limit {
        return SlowLinkDecision::Send(Choice::ForcedWorse);
    }
    match coarsest_len {
        None => SlowLinkDecision::EncodeCoarsest,
        Some(len) if len <= limit => SlowLinkDecision::SendCoarsest,
        Some(_) if !overrides.feedback_starved || lift => SlowLinkDecision::SendCoarsest,
        Some(_) => SlowLinkDecision::Skip,
    }
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
    fn probes_are_spaced_by_the_probe_interval() {
        let t0 = Instant::from_millis(1_000);
        assert!(!probe_due(t0, false, None, MS(80)));
        assert!(probe_due(t0, true, None, MS(80)));
        assert!(!probe_due(t0 + MS(79), true, Some(t0), MS(80)));
        assert!(probe_due(t0 + MS(80), true, Some(t0), MS(80)));
    }

    #[test]
    fn the_paper_forces_after_the_skip_limit_even_with_fragments_in_flight() {
        assert!(!paper_forced(3, 4));
        assert!(paper_forced(4, 4));
        assert!(paper_forced(9, 4));
    }

    #[test]
    fn the_pace_is_the_slower_of_tau_and_the_last_ack_interval() {
        assert_eq!(link_pace(None, None), None);
        assert_eq!(link_pace(Some(MS(5)), None), Some(MS(5)));
        assert_eq!(link_pace(None, Some(MS(7))), Some(MS(7)));
        assert_eq!(link_pace(Some(MS(5)), Some(MS(560))), Some(MS(560)));
        assert_eq!(link_pace(Some(MS(50)), Some(MS(1))), Some(MS(50)));
    }

    #[test]
    fn the_ack_timeout_follows_the_link_and_the_flight() {
        // A fast link: the floor.
        assert_eq!(paced_ack_timeout(MS(250), 2, Some(MS(1)), 40), MS(250));
        assert_eq!(paced_ack_timeout(MS(250), 2, None, 40), MS(250));
        // 20 kb/s: one 1400-byte fragment takes 560 ms; three in flight drain in 1.68 s.
        assert_eq!(paced_ack_timeout(MS(250), 2, Some(MS(560)), 3), MS(3_360));
        // Nothing counted in flight still waits for one fragment.
        assert_eq!(paced_ack_timeout(MS(250), 2, Some(MS(560)), 0), MS(1_120));
        // Absurd values saturate.
        assert_eq!(
            paced_ack_timeout(MS(250), u32::MAX, Some(Duration::MAX), u64::MAX),
            Duration::MAX
        );
        let t0 = Instant::from_millis(1_000);
        assert!(!paced_outage_suspected(t0 + MS(5_000), None, MS(250), 3));
        assert!(!paced_outage_suspected(
            t0 + MS(5_000),
            Some(t0),
            MS(250),
            0
        ));
        assert!(!paced_outage_suspected(
            t0 + MS(3_359),
            Some(t0),
            MS(3_360),
            3
        ));
        assert!(paced_outage_suspected(
            t0 + MS(3_360),
            Some(t0),
            MS(3_360),
            3
        ));
        // A clock that went backwards is not silence.
        assert!(!paced_outage_suspected(t0, Some(t0 + MS(10)), MS(1), 3));
    }

    #[test]
    fn probes_back_off_exponentially_up_to_the_cap() {
        let i = |n| probe_interval(MS(80), MS(2_000), n);
        assert_eq!(i(0), MS(80));
        assert_eq!(i(1), MS(160));
        assert_eq!(i(2), MS(320));
        assert_eq!(i(4), MS(1_280));
        assert_eq!(i(5), MS(2_000));
        assert_eq!(i(u32::MAX), MS(2_000));
        // A cap below the base never shortens the base.
        assert_eq!(probe_interval(MS(80), MS(10), 3), MS(80));
    }

    #[test]
    fn the_probe_backoff_is_capped_by_the_link_pace() {
        let cap = |pace| probe_interval_cap(MS(80), MS(2_000), 2, pace);
        assert_eq!(
            cap(None),
            MS(2_000),
            "no pace: nothing says the link is fast"
        );
        assert_eq!(cap(Some(MS(1))), MS(80));
        assert_eq!(cap(Some(MS(560))), MS(1_120));
        assert_eq!(cap(Some(MS(5_000))), MS(2_000));
        assert_eq!(cap(Some(Duration::MAX)), MS(2_000));
        assert_eq!(probe_interval_cap(MS(80), MS(10), 2, Some(MS(500))), MS(80));
    }

    #[test]
    fn slow_link_sizes_what_the_budget_did_not_allow() {
        use SlowLinkDecision::*;
        let none = Overrides::default();
        let starved = Overrides {
            feedback_starved: true,
            ..none
        };
        let probe = Overrides {
            probe_due: true,
            ..none
        };
        let mtu = 1400;
        let choose = |budget, better, worse, coarsest, o, lift| {
            choose_slow_link(budget, mtu, better, worse, coarsest, o, lift)
        };
        // What fits the budget goes as Algorithm 2 says.
        assert_eq!(
            choose(Some(10_000), 8_000, 3_000, None, probe, false),
            Send(Choice::Better)
        );
        assert_eq!(
            choose(Some(5_000), 8_000, 3_000, None, starved, false),
            Send(Choice::Worse)
        );
        // No override: skip.
        assert_eq!(choose(Some(0), 8_000, 3_000, None, none, true), Skip);
        // A probe: the worse if it is one fragment, else the coarsest encode.
        assert_eq!(
            choose(Some(0), 8_000, 1_400, None, probe, false),
            Send(Choice::ForcedWorse)
        );
        assert_eq!(
            choose(Some(0), 8_000, 3_000, None, probe, false),
            EncodeCoarsest
        );
        assert_eq!(
            choose(Some(0), 8_000, 3_000, Some(600), probe, false),
            SendCoarsest
        );
        // The coarsest frame is the smallest there is: a probe sends it whatever its size.
        assert_eq!(
            choose(Some(0), 8_000, 3_000, Some(1_401), probe, false),
            SendCoarsest
        );
        // Starved: up to the budget, one fragment at least.
        assert_eq!(
            choose(Some(2_800), 8_000, 2_900, Some(2_000), starved, false),
            SendCoarsest
        );
        assert_eq!(
            choose(Some(0), 8_000, 3_000, Some(2_000), starved, false),
            Skip
        );
        // ... unless the sender has waited long enough: the coarsest goes whatever its size.
        assert_eq!(
            choose(Some(0), 8_000, 3_000, Some(2_000), starved, true),
            SendCoarsest
        );
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
        fn slow_link_overrides_stay_within_their_limits(
            budget in proptest::option::of(0usize..20_000),
            mtu in 1usize..2_000,
            better in 0usize..20_000,
            worse in 0usize..20_000,
            coarsest in proptest::option::of(0usize..20_000),
            feedback_starved: bool,
            probe_due: bool,
            lift: bool,
        ) {
            let overrides = Overrides { feedback_starved, probe_due };
            let decision =
                choose_slow_link(budget, mtu, better, worse, coarsest, overrides, lift);
            let sent = match decision {
                SlowLinkDecision::Send(Choice::Better) => Some(better),
                SlowLinkDecision::Send(_) => Some(worse),
                SlowLinkDecision::SendCoarsest => Some(coarsest.unwrap_or(worse)),
                SlowLinkDecision::EncodeCoarsest => {
                    prop_assert!(coarsest.is_none());
                    None
                }
                SlowLinkDecision::Skip => None,
            };
            let paper = transcription(budget, better, worse);
            match paper {
                // Whatever fits the budget is Algorithm 2's choice.
                SendBetter => prop_assert_eq!(decision, SlowLinkDecision::Send(Choice::Better)),
                SendWorse => prop_assert_eq!(decision, SlowLinkDecision::Send(Choice::Worse)),
                Skip => {
                    if let Some(len) = sent {
                        prop_assert!(feedback_starved || probe_due);
                        if feedback_starved {
                            // A forced send never exceeds max(1 fragment, budget), unless
                            // the limit is lifted for the coarsest frame.
                            let limit = mtu.max(budget.unwrap_or(0));
                            prop_assert!(
                                len <= limit
                                    || (lift && decision == SlowLinkDecision::SendCoarsest)
                            );
                        } else {
                            // A probe is one fragment at most, or the coarsest frame (the
                            // smallest the encoder makes), never the worse option over it.
                            prop_assert!(
                                len <= mtu || decision == SlowLinkDecision::SendCoarsest
                            );
                            prop_assert!(coarsest.is_none_or(|c| len <= c.max(mtu)));
                        }
                    }
                    // Nothing is skipped that could have gone within the limit.
                    let limit = override_limit(mtu, budget, overrides);
                    if (feedback_starved || probe_due) && worse <= limit {
                        prop_assert_eq!(decision, SlowLinkDecision::Send(Choice::ForcedWorse));
                    }
                }
            }
        }

        #[test]
        fn the_ack_timeout_is_never_below_the_floor_nor_the_flights_drain(
            floor_ms in 1u64..1_000,
            factor in 1u32..8,
            pace_us in proptest::option::of(0u64..2_000_000),
            n in 0u64..500,
        ) {
            let t = paced_ack_timeout(MS(floor_ms), factor, pace_us.map(US), n);
            prop_assert!(t >= MS(floor_ms));
            if let Some(p) = pace_us {
                prop_assert!(t >= US(p * u64::from(factor) * n.max(1)));
            }
        }

        #[test]
        fn probe_intervals_grow_and_stay_capped(
            base_ms in 1u64..500,
            cap_ms in 1u64..10_000,
            n in 0u32..64,
        ) {
            let (base, cap) = (MS(base_ms), MS(cap_ms));
            let now = probe_interval(base, cap, n);
            prop_assert!(now >= base);
            prop_assert!(now <= cap.max(base));
            prop_assert!(probe_interval(base, cap, n + 1) >= now);
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
