//! Loss models: i.i.d. loss, the paper's intermittent link, scheduled outages.
//!
//! # Where loss is applied
//! By default ([`LossPlacement::Entry`]) a packet is lost as it *enters* the link, before the
//! DropTail queue: a lost packet never occupies the queue or uses a delivery opportunity.
//! This is what Mahimahi's `mm-loss` and `mm-onoff` shells do when they sit in front of
//! `mm-link` (their `LossQueue::read_packet` decides at arrival), and it is what "all packets
//! are dropped while the link is failed" means from the sender's side: the verdict depends on
//! when the packet was sent. [`LossPlacement::Exit`] instead decides as the packet leaves the
//! bottleneck ("on the wire"): it has used capacity and then vanishes, as with `mm-loss`
//! placed after `mm-link`. Packets queued before a failure then die if they leave during it.
//!
//! Each model draws from its own ChaCha stream derived from the link's seed, so the failure
//! schedule of an intermittent link depends only on the seed, not on the traffic, and adding
//! a model does not perturb the others' draws.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::Exp1;
use salsify_time::{Duration, Instant};

/// Longest mean accepted for an up or down period (about 11.6 days): long enough for any
/// experiment, short enough that sampled durations stay far from `u64` microsecond overflow.
const MAX_MEAN_PERIOD: Duration = Duration::from_secs(1_000_000);

/// Longest single sampled up or down period, a guard against the exponential's long tail.
const MAX_PERIOD_MICROS: f64 = 1e15;

/// A way the link loses packets. A link may combine several; a packet survives only if
/// every model lets it through.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LossModel {
    /// Each packet is lost independently with this probability (0..=1).
    Iid {
        /// Loss probability.
        probability: f64,
    },
    /// The link alternates between up and failed; both durations are exponential
    /// (Mahimahi's `mm-onoff`). While failed, every packet is lost. The link starts up.
    Intermittent {
        /// Mean time from a restore to the next failure.
        mean_up: Duration,
        /// Mean time a failure lasts.
        mean_down: Duration,
    },
    /// The link is failed during fixed windows, measured from the link's start.
    Outages(Vec<Outage>),
}

impl LossModel {
    /// I.i.d. loss with probability `p`.
    pub fn iid(probability: f64) -> LossModel {
        LossModel::Iid { probability }
    }

    /// The paper's intermittent link: failures after exponential gaps of mean 5 s, each
    /// lasting an exponential time of mean 0.2 s.
    pub fn paper_intermittent() -> LossModel {
        LossModel::Intermittent {
            mean_up: Duration::from_secs(5),
            mean_down: Duration::from_millis(200),
        }
    }

    /// A single outage of `duration` starting `start` after the link starts.
    pub fn outage(start: Duration, duration: Duration) -> LossModel {
        LossModel::Outages(vec![Outage { start, duration }])
    }

    /// Checks the model's parameters; see [`LossError`].
    pub fn validate(&self) -> Result<(), LossError> {
        match self {
            LossModel::Iid { probability } => {
                if !(0.0..=1.0).contains(probability) {
                    return Err(LossError::Probability(*probability));
                }
            }
            LossModel::Intermittent { mean_up, mean_down } => {
                for mean in [mean_up, mean_down] {
                    if mean.is_zero() || *mean > MAX_MEAN_PERIOD {
                        return Err(LossError::MeanPeriod(*mean));
                    }
                }
            }
            LossModel::Outages(outages) => {
                if let Some(o) = outages.iter().find(|o| o.duration.is_zero()) {
                    return Err(LossError::EmptyOutage(o.start));
                }
            }
        }
        Ok(())
    }
}

/// A window during which the link is failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    /// Start, measured from the link's start.
    pub start: Duration,
    /// Length; packets at `start <= t < start + duration` are lost.
    pub duration: Duration,
}

/// Where the link applies its loss models; see the module docs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossPlacement {
    /// Decide when the packet enters the link, before the queue (the default).
    #[default]
    Entry,
    /// Decide when the packet leaves the bottleneck, after it used capacity.
    Exit,
}

/// An invalid loss model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LossError {
    /// A probability outside 0..=1 (or NaN).
    #[error("loss probability {0} is not within 0..=1")]
    Probability(f64),
    /// An intermittent link's mean period is zero or unreasonably long.
    #[error("intermittent link mean period {0:?} must be > 0 and at most 10^6 s")]
    MeanPeriod(Duration),
    /// An outage of zero length.
    #[error("outage at {0:?} has zero length")]
    EmptyOutage(Duration),
}

/// The running state of a link's loss models.
#[derive(Debug)]
pub(crate) struct LossState {
    models: Vec<ModelState>,
}

#[derive(Debug)]
enum ModelState {
    Iid { probability: f64, rng: ChaCha8Rng },
    Intermittent(OnOff),
    Outages(Vec<(Instant, Instant)>),
}

/// The random stream of a link's loss model number `index`, for the link and its forecast
/// alike. Stream 0 is left for other uses of the seed.
fn model_stream(seed: u64, index: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64 + 1);
    rng
}

impl LossState {
    /// Starts the models of a link that starts at `start`. The models must be valid.
    pub(crate) fn new(models: &[LossModel], seed: u64, start: Instant) -> LossState {
        let models = models
            .iter()
            .enumerate()
            .map(|(i, model)| ModelState::new(model, model_stream(seed, i), start))
            .collect();
        LossState { models }
    }

    /// Whether a packet at time `t` is lost. Times must not decrease between calls.
    pub(crate) fn drops(&mut self, t: Instant) -> bool {
        // Evaluate every model (no short-circuit) so each consumes its stream identically
        // whatever the others decide.
        self.models
            .iter_mut()
            .fold(false, |lost, m| m.drops(t) | lost)
    }
}

impl ModelState {
    fn new(model: &LossModel, rng: ChaCha8Rng, start: Instant) -> ModelState {
        match model {
            LossModel::Iid { probability } => ModelState::Iid {
                probability: *probability,
                rng,
            },
            LossModel::Intermittent { mean_up, mean_down } => {
                ModelState::Intermittent(OnOff::new(*mean_up, *mean_down, rng, start))
            }
            LossModel::Outages(outages) => ModelState::Outages(
                outages
                    .iter()
                    .map(|o| (start + o.start, start + o.start + o.duration))
                    .collect(),
            ),
        }
    }

    fn drops(&mut self, t: Instant) -> bool {
        match self {
            ModelState::Iid { probability, rng } => rng.gen_bool(*probability),
            ModelState::Intermittent(on_off) => !on_off.is_up(t),
            ModelState::Outages(windows) => windows.iter().any(|&(a, b)| a <= t && t < b),
        }
    }
}

/// The failure windows a link will have — its intermittent failures and scheduled outages,
/// drawn from the same seeded streams the link draws them from — generated lazily as far as
/// asked: what a sender that reads the link's future (the simulator's oracle) knows about
/// which packets the link will drop on entry ([`LossPlacement::Entry`]). I.i.d. loss depends
/// on the traffic, not on time, and is not forecast ([`FailureForecast::has_iid_loss`]).
#[derive(Debug)]
pub struct FailureForecast {
    sources: Vec<WindowSource>,
    iid: bool,
}

#[derive(Debug)]
enum WindowSource {
    /// An intermittent link's process and its windows generated so far.
    OnOff(Box<OnOff>, Vec<(Instant, Instant)>),
    Fixed(Vec<(Instant, Instant)>),
}

impl FailureForecast {
    /// The forecast for `models` on a link seeded `seed` that starts at `start` (as
    /// [`crate::LinkConfig::seed`] and the link's start). The models must be valid.
    pub fn new(models: &[LossModel], seed: u64, start: Instant) -> FailureForecast {
        let mut iid = false;
        let sources = models
            .iter()
            .enumerate()
            .filter_map(
                |(i, model)| match ModelState::new(model, model_stream(seed, i), start) {
                    ModelState::Iid { probability, .. } => {
                        iid |= probability > 0.0;
                        None
                    }
                    ModelState::Intermittent(on_off) => {
                        Some(WindowSource::OnOff(Box::new(on_off), Vec::new()))
                    }
                    ModelState::Outages(windows) => Some(WindowSource::Fixed(windows)),
                },
            )
            .collect();
        FailureForecast { sources, iid }
    }

    /// A link that never fails.
    pub fn never() -> FailureForecast {
        FailureForecast {
            sources: Vec::new(),
            iid: false,
        }
    }

    /// True when the link also loses packets at random (not forecast).
    pub fn has_iid_loss(&self) -> bool {
        self.iid
    }

    /// The first instant at or after `t` when the link is up: `t` itself unless `t` falls in
    /// a failure window (overlapping windows of several models are crossed together).
    pub fn up_at(&mut self, t: Instant) -> Instant {
        let mut at = t;
        loop {
            let end = self
                .sources
                .iter_mut()
                .filter_map(|s| s.failed_until(at))
                .max();
            match end {
                Some(end) if end > at => at = end,
                _ => return at,
            }
        }
    }
}

impl WindowSource {
    /// The end of this source's failure window holding `t`, if any.
    fn failed_until(&mut self, t: Instant) -> Option<Instant> {
        let windows = match self {
            WindowSource::OnOff(process, windows) => {
                while windows.last().is_none_or(|&(_, end)| end <= t) {
                    let next = process.next_failure();
                    windows.push(next);
                    if next.0 > t {
                        break;
                    }
                }
                &*windows
            }
            WindowSource::Fixed(windows) => &*windows,
        };
        windows
            .iter()
            .find(|&&(a, b)| a <= t && t < b)
            .map(|&(_, b)| b)
    }
}

/// An alternating up/down process with exponential holding times, advanced lazily to the
/// time of each query.
#[derive(Debug)]
pub(crate) struct OnOff {
    up: bool,
    next_switch: Instant,
    mean_up_us: f64,
    mean_down_us: f64,
    rng: ChaCha8Rng,
}

impl OnOff {
    pub(crate) fn new(
        mean_up: Duration,
        mean_down: Duration,
        rng: ChaCha8Rng,
        start: Instant,
    ) -> OnOff {
        let mut on_off = OnOff {
            up: true,
            next_switch: start,
            mean_up_us: mean_up.as_secs_f64() * 1e6,
            mean_down_us: mean_down.as_secs_f64() * 1e6,
            rng,
        };
        let first = on_off.sample(on_off.mean_up_us);
        on_off.next_switch = start + first;
        on_off
    }

    /// Whether the link is up at `t`; `t` must not decrease between calls.
    pub(crate) fn is_up(&mut self, t: Instant) -> bool {
        while self.next_switch <= t {
            self.up = !self.up;
            let mean = if self.up {
                self.mean_up_us
            } else {
                self.mean_down_us
            };
            let length = self.sample(mean);
            self.next_switch += length;
        }
        self.up
    }

    /// When the current up or down period ends.
    #[cfg(test)]
    pub(crate) fn next_switch(&self) -> Instant {
        self.next_switch
    }

    /// An exponential duration with the given mean, at least 1 µs so time always advances.
    /// The next failure window `[start, end)`, drawing as [`OnOff::is_up`] would to cross
    /// it. Only for a process that is up and has not been queried by `is_up`.
    fn next_failure(&mut self) -> (Instant, Instant) {
        let start = self.next_switch;
        let down = self.sample(self.mean_down_us);
        let end = start + down;
        let up = self.sample(self.mean_up_us);
        self.next_switch = end + up;
        (start, end)
    }

    fn sample(&mut self, mean_us: f64) -> Duration {
        let x: f64 = self.rng.sample(Exp1);
        let us = (x * mean_us).round().clamp(1.0, MAX_PERIOD_MICROS);
        Duration::from_micros(us as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn the_forecast_names_exactly_the_failures_the_link_has() {
        let models = [
            LossModel::Intermittent {
                mean_up: Duration::from_millis(300),
                mean_down: Duration::from_millis(100),
            },
            LossModel::outage(Duration::from_secs(2), Duration::from_millis(500)),
        ];
        let start = Instant::from_millis(7);
        let mut link = LossState::new(&models, 9, start);
        let mut forecast = FailureForecast::new(&models, 9, start);
        assert!(!forecast.has_iid_loss());
        let mut failed = 0;
        for ms in 0..20_000u64 {
            let t = start + Duration::from_micros(ms * 1_000 + 311);
            let up = forecast.up_at(t);
            assert_eq!(link.drops(t), up > t, "at {t:?}");
            failed += u32::from(up > t);
            // The end named is an instant the link is up again.
            assert_eq!(forecast.up_at(up), up);
        }
        assert!(failed > 3_000, "{failed} ms failed");
        // Asked out of order, it answers the same.
        let mut again = FailureForecast::new(&models, 9, start);
        let late = again.up_at(start + Duration::from_millis(2_100));
        assert_eq!(late, forecast.up_at(start + Duration::from_millis(2_100)));
        assert!(late >= start + Duration::from_millis(2_500));
    }

    #[test]
    fn iid_loss_is_not_forecast() {
        let mut f = FailureForecast::new(&[LossModel::iid(0.5)], 1, Instant::ZERO);
        assert!(f.has_iid_loss());
        assert_eq!(f.up_at(Instant::from_millis(5)), Instant::from_millis(5));
        assert!(!FailureForecast::never().has_iid_loss());
    }

    #[test]
    fn validate_rejects_nonsense() {
        assert!(LossModel::iid(0.0).validate().is_ok());
        assert!(LossModel::iid(1.0).validate().is_ok());
        assert!(LossModel::iid(1.5).validate().is_err());
        assert!(LossModel::iid(f64::NAN).validate().is_err());
        assert!(LossModel::paper_intermittent().validate().is_ok());
        let zero = LossModel::Intermittent {
            mean_up: Duration::ZERO,
            mean_down: Duration::from_secs(1),
        };
        assert_eq!(zero.validate(), Err(LossError::MeanPeriod(Duration::ZERO)));
        let empty = LossModel::outage(Duration::from_secs(3), Duration::ZERO);
        assert!(empty.validate().is_err());
    }

    #[test]
    fn iid_loss_rate_is_close_to_the_probability() {
        let mut state = LossState::new(&[LossModel::iid(0.1)], 7, Instant::ZERO);
        let n = 200_000;
        let lost = (0..n).filter(|_| state.drops(Instant::ZERO)).count();
        let rate = lost as f64 / n as f64;
        // Binomial std dev is 0.00067; allow about 5 sigma.
        assert!((rate - 0.1).abs() < 0.0035, "rate {rate}");
    }

    #[test]
    fn intermittent_periods_have_the_paper_means() {
        // 20 000 s of the paper's process: about 3 850 failures.
        let start = Instant::ZERO;
        let mut p = OnOff::new(
            Duration::from_secs(5),
            Duration::from_millis(200),
            rng(42),
            start,
        );
        let end = Instant::from_millis(20_000_000);
        let (mut ups, mut downs) = (Vec::new(), Vec::new());
        let mut last = start;
        while p.next_switch() < end {
            let was_up = p.is_up(last);
            let switch = p.next_switch();
            let len = (switch - last).as_secs_f64();
            if was_up {
                ups.push(len);
            } else {
                downs.push(len);
            }
            last = switch;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let down_share = downs.iter().sum::<f64>() / (last - start).as_secs_f64();
        assert!(
            ups.len() > 3500 && ups.len() < 4200,
            "{} failures",
            ups.len()
        );
        // Standard error of each mean is mean / sqrt(n), about 1.6%; allow 8%.
        assert!((mean(&ups) - 5.0).abs() < 0.4, "mean up {}", mean(&ups));
        assert!(
            (mean(&downs) - 0.2).abs() < 0.016,
            "mean down {}",
            mean(&downs)
        );
        assert!(
            (down_share - 0.2 / 5.2).abs() < 0.004,
            "failed {down_share}"
        );
    }

    #[test]
    fn intermittent_loss_drops_everything_while_failed_and_nothing_while_up() {
        let mut state = LossState::new(&[LossModel::paper_intermittent()], 3, Instant::ZERO);
        let mut reference = OnOff::new(
            Duration::from_secs(5),
            Duration::from_millis(200),
            {
                let mut r = rng(3);
                r.set_stream(1);
                r
            },
            Instant::ZERO,
        );
        let mut lost = 0;
        for ms in 0..600_000u64 {
            let t = Instant::from_millis(ms);
            let dropped = state.drops(t);
            assert_eq!(dropped, !reference.is_up(t), "at {ms} ms");
            lost += u64::from(dropped);
        }
        assert!(lost > 0, "no failure in 600 s");
    }

    #[test]
    fn outages_drop_exactly_inside_their_window() {
        let start = Instant::from_millis(500);
        let model = LossModel::outage(Duration::from_secs(2), Duration::from_secs(1));
        let mut state = LossState::new(&[model], 0, start);
        for ms in (0..5000u64).step_by(1) {
            let t = Instant::from_millis(ms);
            let inside = (2500..3500).contains(&ms);
            assert_eq!(state.drops(t), inside, "at {ms} ms");
        }
    }

    #[test]
    fn same_seed_same_losses_and_models_do_not_disturb_each_other() {
        let run = |models: &[LossModel], seed| {
            let mut s = LossState::new(models, seed, Instant::ZERO);
            (0..2000u64)
                .map(|ms| s.drops(Instant::from_millis(ms)))
                .collect::<Vec<_>>()
        };
        let iid = [LossModel::iid(0.3)];
        assert_eq!(run(&iid, 1), run(&iid, 1));
        assert_ne!(run(&iid, 1), run(&iid, 2));
        // An outage model added after the i.i.d. one changes nothing outside its window.
        let both = [
            LossModel::iid(0.3),
            LossModel::outage(Duration::from_secs(1), Duration::from_millis(100)),
        ];
        let (a, b) = (run(&iid, 1), run(&both, 1));
        for ms in 0..2000 {
            let in_outage = (1000..1100).contains(&ms);
            assert_eq!(b[ms], a[ms] || in_outage, "at {ms} ms");
        }
    }
}
