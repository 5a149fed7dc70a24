//! Which option of a picture is sent: the paper's choice (Algorithm 2 with this project's
//! overrides), or the slow-link rules', whose overrides are at most one fragment and which may
//! ask for one more encode of the picture at the coarsest quality.

use std::fmt::Debug;

use salsify_codec::Quality;
use salsify_endpoint::Choice;

use crate::config::SenderConfig;
use crate::decision::{self, Overrides, SlowLinkDecision};

/// One encoded option as the walk sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSize {
    /// Its size in bytes.
    pub len: usize,
    /// Its quantizer.
    pub quality: Quality,
}

/// What to do with a picture's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// Send the option at this index as `choice`.
    Send {
        /// Index into the options.
        index: usize,
        /// Which option it is.
        choice: Choice,
    },
    /// Encode the picture once more at the coarsest quality; the options wait for it.
    EncodeCoarsest,
    /// Send nothing.
    Skip,
    /// The options are not what the walk can choose from (dropped rather than guessed at).
    Drop,
}

/// A quality walk: chooses among `[better, worse]`, or `[better, worse, coarsest]` when the
/// walk asked for the coarsest encode.
pub trait QualityWalk: Debug + Send {
    /// The choice for `options` against `budget` (`None`: no limit) with fragments of `mtu`
    /// payload bytes (the size in use), with `overrides` in force after `consecutive_skips`
    /// skips in a row.
    fn pick(
        &self,
        budget: Option<usize>,
        mtu: usize,
        options: &[OptionSize],
        overrides: Overrides,
        consecutive_skips: u32,
    ) -> Pick;
}

/// [`decision::choose_frame`]: the larger option that fits, else the worse one if an
/// override says a frame must go, whatever its size.
#[derive(Debug, Clone, Copy, Default)]
pub struct PaperWalk;

impl QualityWalk for PaperWalk {
    fn pick(
        &self,
        budget: Option<usize>,
        _: usize,
        options: &[OptionSize],
        overrides: Overrides,
        _: u32,
    ) -> Pick {
        let [better, worse] = options else {
            return Pick::Drop;
        };
        match decision::choose_frame(budget, better.len, worse.len, overrides) {
            Some(Choice::Better) => Pick::Send {
                index: 0,
                choice: Choice::Better,
            },
            Some(choice) => Pick::Send { index: 1, choice },
            None => Pick::Skip,
        }
    }
}

/// [`decision::choose_slow_link`]: overrides send at most what
/// [`decision::override_limit`] allows, the coarsest encode when even the worse option is over
/// it; after twice `max_consecutive_skips` skips the limit is lifted.
#[derive(Debug, Clone, Copy)]
pub struct SlowLinkWalk {
    max_quality: Quality,
    max_consecutive_skips: u32,
}

impl SlowLinkWalk {
    /// The walk with `config`'s coarsest quality and skip limit.
    pub fn new(config: &SenderConfig) -> Self {
        SlowLinkWalk {
            max_quality: config.max_quality,
            max_consecutive_skips: config.max_consecutive_skips,
        }
    }
}

impl QualityWalk for SlowLinkWalk {
    fn pick(
        &self,
        budget: Option<usize>,
        mtu: usize,
        options: &[OptionSize],
        overrides: Overrides,
        consecutive_skips: u32,
    ) -> Pick {
        let (better, worse, coarsest) = match options {
            [b, w] if w.quality >= self.max_quality => (b.len, w.len, Some(w.len)),
            [b, w] => (b.len, w.len, None),
            [b, w, c] => (b.len, w.len, Some(c.len)),
            _ => return Pick::Drop,
        };
        let lift = consecutive_skips >= self.max_consecutive_skips.saturating_mul(2);
        let decision =
            decision::choose_slow_link(budget, mtu, better, worse, coarsest, overrides, lift);
        match decision {
            SlowLinkDecision::Send(Choice::Better) => Pick::Send {
                index: 0,
                choice: Choice::Better,
            },
            SlowLinkDecision::Send(choice) => Pick::Send { index: 1, choice },
            SlowLinkDecision::SendCoarsest => Pick::Send {
                index: options.len() - 1,
                choice: Choice::ForcedWorse,
            },
            SlowLinkDecision::EncodeCoarsest => Pick::EncodeCoarsest,
            SlowLinkDecision::Skip => Pick::Skip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(len: usize, q: u8) -> OptionSize {
        OptionSize {
            len,
            quality: Quality::new(q).unwrap(),
        }
    }

    #[test]
    fn the_paper_forces_the_worse_option_whatever_its_size() {
        let starved = Overrides {
            feedback_starved: true,
            probe_due: false,
        };
        let options = [option(9000, 40), option(6000, 80)];
        assert_eq!(
            PaperWalk.pick(Some(0), 1400, &options, starved, 4),
            Pick::Send {
                index: 1,
                choice: Choice::ForcedWorse
            }
        );
        assert_eq!(
            PaperWalk.pick(Some(0), 1400, &options, Overrides::default(), 4),
            Pick::Skip
        );
        assert_eq!(
            PaperWalk.pick(None, 1400, &options[..1], starved, 0),
            Pick::Drop
        );
    }

    #[test]
    fn the_slow_link_walk_asks_for_the_coarsest_frame_when_the_worse_is_too_large() {
        let walk = SlowLinkWalk::new(&SenderConfig::default());
        let probe = Overrides {
            feedback_starved: false,
            probe_due: true,
        };
        let options = [option(9000, 40), option(6000, 80)];
        assert_eq!(
            walk.pick(Some(0), 1400, &options, probe, 1),
            Pick::EncodeCoarsest
        );
        let with_coarsest = [option(9000, 40), option(6000, 80), option(900, 127)];
        assert_eq!(
            walk.pick(Some(0), 1400, &with_coarsest, probe, 1),
            Pick::Send {
                index: 2,
                choice: Choice::ForcedWorse
            }
        );
        assert_eq!(
            walk.pick(Some(20_000), 1400, &options, Overrides::default(), 0),
            Pick::Send {
                index: 0,
                choice: Choice::Better
            }
        );
        // A probe is one fragment of the size in use: 1300 bytes is one at 1400, two at 1158.
        let small = [option(9000, 40), option(1300, 80)];
        let forced = Pick::Send {
            index: 1,
            choice: Choice::ForcedWorse,
        };
        assert_eq!(walk.pick(Some(0), 1400, &small, probe, 1), forced);
        assert_eq!(
            walk.pick(Some(0), 1158, &small, probe, 1),
            Pick::EncodeCoarsest
        );
    }
}
