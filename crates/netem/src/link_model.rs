//! A link model from outside the built-in presets: one type implementing [`LinkModel`] says a
//! link's capacity over time, its losses and when its first event happens. A crate adds one to
//! a scheme registry (`salsify_schemes::Registry::with_link`) the way it adds a scheme family,
//! and the simulator, `salsify link` and the evaluation's groups then take its name wherever
//! they take a preset's.

use crate::config::LinkConfig;
use crate::generators::GeneratorError;
use crate::loss::LossModel;
use crate::presets::LinkEvent;
use crate::trace::Trace;

/// A link model, by name.
pub trait LinkModel: Sync {
    /// The name `--link` and a group's `links` take (e.g. `stairs`).
    fn name(&self) -> &'static str;
    /// One line on what it is (for listings and docs).
    fn about(&self) -> &'static str;
    /// Its delivery opportunities over time (the capacity), drawn from `seed`.
    fn capacity(&self, seed: u64) -> Result<Trace, GeneratorError>;
    /// What it loses beyond its queue's overflow (default nothing).
    fn loss(&self, seed: u64) -> Vec<LossModel> {
        let _ = seed;
        Vec::new()
    }
    /// Its first event (a dropout, a cliff), if it has one: an evaluation shortening a run
    /// keeps a few seconds past its end. Default: none.
    fn first_event(&self, seed: u64) -> Option<LinkEvent> {
        let _ = seed;
        None
    }
}

/// The video link of `model` with the testbed's queue and delay ([`LinkConfig::with_trace`]).
pub fn link_of(model: &dyn LinkModel, seed: u64) -> Result<LinkConfig, GeneratorError> {
    let mut config = LinkConfig::with_trace(model.capacity(seed)?);
    config.loss = model.loss(seed);
    config.seed = seed;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generators::{self, Bitrate};

    struct Lossy;

    impl LinkModel for Lossy {
        fn name(&self) -> &'static str {
            "lossy"
        }
        fn about(&self) -> &'static str {
            "1 Mb/s, 1 % lost"
        }
        fn capacity(&self, _seed: u64) -> Result<Trace, GeneratorError> {
            generators::constant(Bitrate::mbps(1))
        }
        fn loss(&self, _seed: u64) -> Vec<LossModel> {
            vec![LossModel::iid(0.01)]
        }
    }

    #[test]
    fn a_model_becomes_a_link_with_its_capacity_and_losses() {
        let link = link_of(&Lossy, 7).unwrap();
        assert!(link.trace == generators::constant(Bitrate::mbps(1)).unwrap());
        assert_eq!(link.loss, vec![LossModel::iid(0.01)]);
        assert_eq!(link.seed, 7);
        assert_eq!(Lossy.first_event(7), None);
    }
}
