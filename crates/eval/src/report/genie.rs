//! The past genie of [`salsify_sim::bounds`] beside the runs: each run's delay against its
//! link utilisation, with the genie's lower envelope on the same link. The genie sends bytes,
//! not pictures, so it has no SSIM; utilisation (bytes over capacity) is where it and the
//! schemes meet: below the envelope no sender that knows only the past goes.

use std::cell::RefCell;
use std::collections::BTreeMap;

use salsify_sim::bounds::{envelope, genie_family, genie_sweep, GeniePoint, Horizon};
use salsify_sim::experiment::Experiment;

use super::figures::{slug, Drawn};
use super::frontier::{push_lines, Delay};
use super::plot::{Axis, Chart, Series};
use super::tables::Entry;

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
}

/// The genie's envelope for `delay`: for each utilisation a member reached, the member with
/// the lowest delay among those that reached at least as much (the envelope's points are
/// genies that ran, by rising utilisation).
pub fn envelope_points(points: &[GeniePoint], delay: Delay) -> Vec<(f64, f64)> {
    let levels: Vec<f64> = points.iter().map(|p| p.utilisation).collect();
    let mut out: Vec<(f64, f64)> = envelope(points, &levels)
        .into_iter()
        .filter_map(|row| match delay {
            Delay::P95 => row.by_p95.map(|p| (p.utilisation, p.delay.p95_ms)),
            Delay::Mean => row.by_mean.map(|p| (p.utilisation, p.delay.mean_ms)),
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    out.dedup();
    out
}

/// Each delay of `link`'s simulated runs against their utilisation, with the past genie's
/// envelope where the link has one. Live runs are left out: their utilisation is not known
/// from outside the sender.
pub fn utilisation_figures(
    group: &str,
    link: &str,
    here: &[&Entry],
    genies: &Genies,
) -> Vec<Drawn> {
    let simulated: Vec<&Entry> = here
        .iter()
        .copied()
        .filter(|r| !r.live() && r.result.summary.link_utilisation.is_some())
        .collect();
    let Some(first) = simulated.first() else {
        return Vec::new();
    };
    let genie = genies.points(&first.plan.experiment);
    [Delay::P95, Delay::Mean]
        .into_iter()
        .map(|delay| {
            let which = delay.words();
            let mut chart = Chart::new(
                format!("{link}: delay against utilisation ({which} delay)"),
                Axis::linear("link utilisation (bytes delivered / capacity; better ->)"),
                Axis::log(format!("video delay, {which} (ms, log scale)")),
            );
            push_lines(&mut chart, &simulated, |r| {
                Some((r.result.summary.link_utilisation?, delay.of(r)?))
            });
            if let Some(points) = &genie {
                chart.push(
                    Series::line("past genie's envelope", envelope_points(points, delay))
                        .with_color("#555555")
                        .dashed(),
                );
            }
            Drawn {
                name: format!("{group}-{}-utilisation-{}", slug(link), delay.short()),
                caption: format!(
                    "{link}: each simulated run's {which} delay (log scale, down is better) \
                     against the share of the link's capacity it used (right is better), one \
                     line per scheme as in the frontier. Dashed grey: the past genie's envelope \
                     on this link, the lowest {which} delay of any sender of the genie family \
                     (it knows the link's whole past and the bottleneck's queue exactly, and \
                     codes no pictures: utilisation stands in for quality) using at least that \
                     share; a run above it has room to close with the past alone."
                ),
                svg: chart.to_svg(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
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
        assert_eq!(
            envelope_points(&points, Delay::P95),
            [(0.6, 90.0), (0.7, 200.0)]
        );
        assert_eq!(
            envelope_points(&points, Delay::Mean),
            [(0.4, 40.0), (0.5, 60.0), (0.7, 65.0)]
        );
    }

    /// Runs that differ only in what the genie ignores share one sweep; a live run has no
    /// utilisation, so a link with only live runs gets no panel.
    #[test]
    fn a_link_is_swept_once_and_live_runs_stay_out() {
        let mut made = runs(&[
            ("salsify-2c", "cellular", 1, Some(120.0), Some(300.0)),
            ("conventional", "cellular", 1, Some(80.0), Some(250.0)),
            ("chromium-vp8", "wifi", 1, Some(80.0), Some(250.0)),
        ]);
        for (plan, _) in &mut made {
            plan.experiment.duration_s = 2.0;
        }
        made[1].0.experiment.video = "other.mp4".into();
        made[2].0.live = true;
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let genies = Genies::default();
        let cellular: Vec<&Entry> = entries[..2].iter().collect();
        assert_eq!(
            utilisation_figures("g", "cellular", &cellular, &genies).len(),
            2
        );
        assert!(genies.points(&entries[1].plan.experiment).is_some());
        assert_eq!(genies.sweeps.borrow().len(), 1);
        assert!(utilisation_figures("g", "wifi", &[&entries[2]], &genies).is_empty());
    }
}
