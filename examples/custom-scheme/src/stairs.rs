//! An example link model kept outside the built-in presets: `stairs`, a capacity that steps
//! down and back up (4 Mb/s for 10 s, 1 Mb/s for 5 s, 2 Mb/s for 5 s, then again), with 0.5 %
//! of packets lost at random. It joins the registry beside the scheme ([`crate::registry`]),
//! and `--link stairs` then works in `sim`, `link`, `demo` and an evaluation's groups.

use salsify_netem::generators::{self, Bitrate, RateSegment};
use salsify_netem::presets::LinkEvent;
use salsify_netem::{GeneratorError, LinkModel, LossModel, Trace};
use salsify_time::Duration;

/// The link model, as registered.
pub static STAIRS: Stairs = Stairs;

/// How long it holds its top rate before the first step down.
const TOP_HOLD: Duration = Duration::from_secs(10);
/// How long each lower stair lasts.
const STAIR: Duration = Duration::from_secs(5);
/// Its random loss.
const LOSS: f64 = 0.005;

/// The `stairs` link.
pub struct Stairs;

impl LinkModel for Stairs {
    fn name(&self) -> &'static str {
        "stairs"
    }

    fn about(&self) -> &'static str {
        "example: 4 Mb/s for 10 s, 1 Mb/s for 5 s, 2 Mb/s for 5 s, repeated; 0.5 % lost"
    }

    fn capacity(&self, _seed: u64) -> Result<Trace, GeneratorError> {
        generators::segments(&[
            RateSegment::hold(TOP_HOLD, Bitrate::mbps(4)),
            RateSegment::hold(STAIR, Bitrate::mbps(1)),
            RateSegment::hold(STAIR, Bitrate::mbps(2)),
        ])
    }

    fn loss(&self, _seed: u64) -> Vec<LossModel> {
        vec![LossModel::iid(LOSS)]
    }

    fn first_event(&self, _seed: u64) -> Option<LinkEvent> {
        Some(LinkEvent {
            what: "the step down",
            start: TOP_HOLD,
            end: TOP_HOLD + STAIR,
        })
    }
}
