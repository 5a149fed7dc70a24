//! The Salsify sender's rules beyond Algorithm 2, one concern per seam, chosen once from the
//! configuration when the sender is built ([`Rules::new`]), so that [`crate::Sender`] never
//! asks which rule set it runs:
//!
//! - [`budget`]: where the budget comes from (the paper's formula, the EWMA, the receiver's
//!   Sprout forecast);
//! - [`outage`]: when an ACK silence means an outage and how often probes go out then (never
//!   under the paper's rules; paced by the link and backing off under the slow-link rules);
//! - [`forced`]: when a frame is forced out because feedback is starved;
//! - [`walk`]: which option of a picture is sent (the paper's choice, or the slow-link rules'
//!   with one-fragment overrides and the coarsest re-encode).
//!
//! What the sender assumes while ACKs are silent (the ACK-stall rule) is the outage rule's:
//! the budget freezes at the last ACK's view and probes follow once the ACK is overdue (the
//! alternative, `ack_stall = "drain"`, lost on the measurements and was deleted in issue 37).
//!
//! [`SenderRules`] names the two sets: [`SenderRules::Paper`] and [`SenderRules::SlowLink`].

pub mod budget;
pub mod forced;
mod link;
pub mod outage;
pub mod walk;

pub use link::LinkView;

use crate::config::{ResolutionStepConfig, SenderConfig, SenderRules};
use crate::delivery::BudgetSource;

use budget::{BudgetRule, EwmaBudget, ForecastBudget, PaperBudget};
use forced::{ForcedSend, IdleLinkForced, PaperForced};
use outage::{NoOutage, OutageRule, PacedOutage};
use walk::{PaperWalk, QualityWalk, SlowLinkWalk};

/// The rules a sender runs, one per seam.
#[derive(Debug)]
pub struct Rules {
    /// Where the budget comes from.
    pub budget: Box<dyn BudgetRule>,
    /// When silence means an outage, and the probes then.
    pub outage: Box<dyn OutageRule>,
    /// When feedback is starved.
    pub forced: Box<dyn ForcedSend>,
    /// Which option is sent.
    pub walk: Box<dyn QualityWalk>,
    /// The resolution step in force (disabled where the rules do not step).
    pub resolution: ResolutionStepConfig,
}

impl Rules {
    /// The rules `config` names.
    pub fn new(config: &SenderConfig) -> Self {
        let d = config.delay_target;
        match config.rules {
            SenderRules::Paper => Rules {
                budget: Box::new(PaperBudget::new(d)),
                outage: Box::new(NoOutage),
                forced: Box::new(PaperForced::new(config.max_consecutive_skips)),
                walk: Box::new(PaperWalk),
                resolution: ResolutionStepConfig {
                    enabled: false,
                    ..config.slow_link.resolution
                },
            },
            SenderRules::SlowLink => Rules {
                budget: match config.budget {
                    BudgetSource::Ewma => Box::new(EwmaBudget::new(d)),
                    BudgetSource::Forecast => Box::new(ForecastBudget::new(d)),
                },
                outage: Box::new(PacedOutage::new(config)),
                forced: Box::new(IdleLinkForced::new(config.slow_link.idle_link_skips)),
                walk: Box::new(SlowLinkWalk::new(config)),
                resolution: config.slow_link.resolution,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_time::Instant;

    #[test]
    fn the_paper_rules_never_suspect_an_outage_nor_step_the_resolution() {
        let config = SenderConfig {
            rules: SenderRules::Paper,
            ..SenderConfig::default()
        };
        let rules = Rules::new(&config);
        assert!(!rules.resolution.enabled);
        assert!(!rules.outage.keeps_probe_references());
        let far = Instant::from_millis(60_000);
        assert!(!rules.outage.outage_suspected(far, None, 100));
        let rules = Rules::new(&SenderConfig::default());
        assert!(rules.resolution.enabled);
        assert!(rules.outage.keeps_probe_references());
    }
}
