//! Where the sender's budget comes from (`[salsify] budget`, and the paper's rules' own).

use std::fmt::Debug;

use salsify_time::Duration;

use super::link::LinkView;
use crate::decision;
use crate::delivery::{self, Curve};

/// A budget source: bytes the next frame may have, `None` for no limit.
pub trait BudgetRule: Debug + Send {
    /// `MTU x (d / tau - N)` as these rules count it before the first estimate (see
    /// [`crate::Sender::budget`]).
    fn formula(&self, link: &LinkView<'_>) -> Option<usize>;

    /// The budget the sender decides with: [`Self::formula`] unless the source reads more.
    fn budget(&self, link: &LinkView<'_>) -> Option<usize> {
        self.formula(link)
    }
}

/// The paper's: [`decision::paper_budget`] once tau is reported, no limit before.
#[derive(Debug, Clone, Copy)]
pub struct PaperBudget {
    delay_target: Duration,
}

impl PaperBudget {
    /// For delay target `delay_target` (fragments of the link's [`LinkView::mtu`]).
    pub fn new(delay_target: Duration) -> Self {
        PaperBudget { delay_target }
    }
}

impl BudgetRule for PaperBudget {
    fn formula(&self, link: &LinkView<'_>) -> Option<usize> {
        link.tau
            .map(|tau| decision::paper_budget(link.mtu, self.delay_target, tau, link.in_flight))
    }
}

/// The EWMA's ([`decision::frame_budget`]): the paper's formula, and one frame at a time
/// before the first estimate.
#[derive(Debug, Clone, Copy)]
pub struct EwmaBudget {
    delay_target: Duration,
}

impl EwmaBudget {
    /// For delay target `delay_target` (fragments of the link's [`LinkView::mtu`]).
    pub fn new(delay_target: Duration) -> Self {
        EwmaBudget { delay_target }
    }
}

impl BudgetRule for EwmaBudget {
    fn formula(&self, link: &LinkView<'_>) -> Option<usize> {
        decision::frame_budget(link.mtu, self.delay_target, link.tau, link.in_flight)
    }
}

/// The receiver's Sprout forecast (see [`crate::delivery`]): what the link delivers within
/// `d` of the last ACK, less what is in flight. Until a forecast arrives, the same curve drawn
/// from tau; before any ACK, [`EwmaBudget`]'s.
#[derive(Debug, Clone, Copy)]
pub struct ForecastBudget {
    ewma: EwmaBudget,
}

impl ForecastBudget {
    /// For delay target `delay_target` (fragments of the link's [`LinkView::mtu`]).
    pub fn new(delay_target: Duration) -> Self {
        ForecastBudget {
            ewma: EwmaBudget::new(delay_target),
        }
    }
}

impl BudgetRule for ForecastBudget {
    fn formula(&self, link: &LinkView<'_>) -> Option<usize> {
        self.ewma.formula(link)
    }

    fn budget(&self, link: &LinkView<'_>) -> Option<usize> {
        let curve = match (link.forecast, link.tau) {
            (Some(f), _) => Curve::Forecast(f),
            (None, Some(tau)) => Curve::Ewma(tau),
            (None, None) => return self.formula(link),
        };
        let Some(acked) = link.acked_at else {
            return self.formula(link);
        };
        let deliverable = curve.between(acked, acked + self.ewma.delay_target);
        Some(delivery::budget_bytes(
            deliverable,
            link.in_flight,
            link.mtu,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_time::Instant;

    fn view(tau_ms: Option<u64>, in_flight: u64) -> LinkView<'static> {
        LinkView {
            tau: tau_ms.map(Duration::from_millis),
            forecast: None,
            acked_at: Some(Instant::from_millis(5)),
            in_flight,
            mtu: 1400,
        }
    }

    #[test]
    fn before_an_estimate_only_the_paper_allows_anything_with_fragments_out() {
        let d = Duration::from_millis(100);
        assert_eq!(PaperBudget::new(d).budget(&view(None, 3)), None);
        assert_eq!(EwmaBudget::new(d).budget(&view(None, 3)), Some(0));
        assert_eq!(EwmaBudget::new(d).budget(&view(None, 0)), None);
        assert_eq!(ForecastBudget::new(d).budget(&view(None, 3)), Some(0));
    }

    #[test]
    fn every_source_counts_d_over_tau_less_what_is_in_flight() {
        let d = Duration::from_millis(100);
        let v = view(Some(10), 4);
        assert_eq!(PaperBudget::new(d).budget(&v), Some(6 * 1400));
        assert_eq!(EwmaBudget::new(d).budget(&v), Some(6 * 1400));
        assert_eq!(ForecastBudget::new(d).budget(&v), Some(6 * 1400));
    }

    #[test]
    fn every_source_counts_fragments_of_the_size_in_use() {
        let d = Duration::from_millis(100);
        let v = LinkView {
            mtu: 1158,
            ..view(Some(10), 4)
        };
        assert_eq!(PaperBudget::new(d).budget(&v), Some(6 * 1158));
        assert_eq!(EwmaBudget::new(d).budget(&v), Some(6 * 1158));
        assert_eq!(ForecastBudget::new(d).budget(&v), Some(6 * 1158));
    }
}
