//! The past genie of [`salsify_sim::bounds`] beside the runs: each run's delay against its
//! link utilisation, with the genie's lower envelope on the same link. The genie sends bytes,
//! not pictures, so it has no SSIM; utilisation (bytes over capacity) is where it and the
//! schemes meet: below the envelope no sender that knows only the past goes.

use std::cell::RefCell;
use std::collections::BTreeMap;

use salsify_sim::bounds::{envelope, genie_family, genie_sweep, GeniePoint, Horizon};
use salsify_sim::experiment::Experiment;

/// The past genie's sweep per link, made once per report: a sweep takes seconds (about 12 s
/// on a 140 s trace in release), and groups often share their links.
#[derive(Default)]
pub struct Genies {
    sweeps: RefCell<BTreeMap<String, Option<Vec<GeniePoint>>>>,
}

impl Genies {
    /// Every member's point on `e`'s link (`None`: no link to replay, or a lossy one, where
    /// the genie's figures are no bound). Only the link, the frame rate and the duration
    /// matter to the genie, so runs that differ in nothing else share one sweep.
    pub fn points(&self, e: &Experiment) -> Option<Vec<GeniePoint>> {
        let key = serde_json::to_string(&(&e.link, e.fps, e.duration_s)).ok()?;
        self.sweeps
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                genie_sweep(e, Horizon::Past, &genie_family())
                    .ok()
                    .filter(|s| !s.lossy)
                    .map(|s| s.points)
            })
            .clone()
    }

    /// How many links were swept.
    #[cfg(test)]
    pub(super) fn swept(&self) -> usize {
        self.sweeps.borrow().len()
    }
}

/// The genie's envelope for the p95 (`by_p95`) or the mean: for each utilisation a member reached, the member with
/// the lowest delay among those that reached at least as much (the envelope's points are
/// genies that ran, by rising utilisation).
pub fn envelope_points(points: &[GeniePoint], by_p95: bool) -> Vec<(f64, f64)> {
    let levels: Vec<f64> = points.iter().map(|p| p.utilisation).collect();
    let mut out: Vec<(f64, f64)> = envelope(points, &levels)
        .into_iter()
        .filter_map(|row| match by_p95 {
            true => row.by_p95.map(|p| (p.utilisation, p.delay.p95_ms)),
            false => row.by_mean.map(|p| (p.utilisation, p.delay.mean_ms)),
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_sim::bounds::{DelayFigures, GenieParams};

    fn point(utilisation: f64, p95_ms: f64, mean_ms: f64) -> GeniePoint {
        GeniePoint {
            params: GenieParams {
                window_ms: 100.0,
                target_ms: 50.0,
                k: 1.0,
            },
            utilisation,
            wire_utilisation: utilisation,
            delay: DelayFigures { mean_ms, p95_ms },
            mean_frame_bytes: 1000.0,
            sent_share: 1.0,
        }
    }

    /// The envelope keeps only genies no other beats on both utilisation and delay.
    #[test]
    fn the_envelope_is_the_genies_that_no_other_beats() {
        let points = [
            point(0.4, 120.0, 40.0),
            point(0.5, 100.0, 60.0),
            point(0.6, 90.0, 70.0),
            point(0.7, 200.0, 65.0),
        ];
        assert_eq!(envelope_points(&points, true), [(0.6, 90.0), (0.7, 200.0)]);
        assert_eq!(
            envelope_points(&points, false),
            [(0.4, 40.0), (0.5, 60.0), (0.7, 65.0)]
        );
    }
}
