//! Finished runs made up for the report's tests.

use super::super::campaign::{PlannedRun, RunResult};

pub(super) fn summary(mean: Option<f64>, p95: Option<f64>) -> salsify_metrics::Summary {
    let mut v = serde_json::json!({
        "frames": 100, "frames_shown": 90, "frames_with_delay": 100, "duration_s": 10.0,
        "ssim_mean": 0.9, "ssim_p25": 0.85, "ssim_db_mean": 10.0, "ssim_db_p25": 8.2,
        "psnr_db_mean": 35.0, "delay_mean_ms": null, "delay_median_ms": null,
        "delay_p95_ms": null, "displayed_fps": 9.0, "video_bytes": 1000,
        "video_bitrate_bps": 800.0, "link_utilisation": 0.5,
        "choices": {"better": 0, "worse": 0, "single": 90, "skipped": 10, "unknown": 0},
        "skip_share": 0.1, "better_share": 0.0, "worse_share": 0.0, "single_share": 0.9,
        "qoe_video_call": 3.0, "qoe_driving": 2.0
    });
    v["delay_mean_ms"] = mean.into();
    v["delay_p95_ms"] = p95.into();
    serde_json::from_value(v).unwrap()
}

/// A run: scheme, link, seed, delay mean, delay p95.
pub(super) type Spec<'a> = (&'a str, &'a str, u64, Option<f64>, Option<f64>);

pub(super) fn runs(specs: &[Spec]) -> Vec<(PlannedRun, RunResult)> {
    specs
        .iter()
        .map(|&(scheme, link, seed, mean, p95)| {
            let experiment = salsify_sim::experiment::Experiment {
                scheme: scheme.into(),
                seed,
                ..Default::default()
            };
            let id = format!("{scheme}-{link}-{seed}");
            let plan = PlannedRun {
                id: id.clone(),
                link: link.into(),
                experiment,
                live: false,
            };
            let result = RunResult {
                meta: crate::campaign::RunMeta {
                    id,
                    link: link.into(),
                    wall_s: 1.0,
                    sender_states_max: 0,
                    receiver_states_max: 0,
                    sizes_shown: vec![],
                    live: None,
                    code: String::new(),
                    video: String::new(),
                },
                summary: summary(mean, p95),
                dir: "/nonexistent".into(),
            };
            (plan, result)
        })
        .collect()
}
