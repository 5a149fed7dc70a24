//! Salsify's resolution step end to end: a 720p source on a link that falls to 24 kb/s for
//! four seconds. Even the coarsest 720p frame then takes longer than the delay target to
//! cross, so the sender codes 640x360 (a keyframe at that size), the receiver decodes it and
//! the simulator scales it up for scoring; when the link returns the sender steps back up.

use salsify_netem::{generators, Bitrate, LinkConfig};
use salsify_schemes::{SchemeConfig, SchemeParams};
use salsify_sim::{simulate, SimConfig, SimOutput, SyntheticVideo};
use salsify_time::{Duration, Instant};
use salsify_transport::{ResolutionStepConfig, SenderConfig};

const SECS: u64 = 16;

fn run(resolution: ResolutionStepConfig) -> SimOutput {
    let mut salsify = SenderConfig::default();
    salsify.slow_link.resolution = resolution;
    let mut params = SchemeParams::default();
    params.set("salsify", &salsify);
    let trace = generators::from_rate_fn(Duration::from_secs(SECS), |t| {
        if (2.5..6.5).contains(&t.as_secs_f64()) {
            24_000.0
        } else {
            2_000_000.0
        }
    })
    .unwrap();
    let feedback = LinkConfig::with_trace(generators::constant(Bitrate::kbps(2000)).unwrap());
    let config = SimConfig {
        scheme: SchemeConfig::named("salsify-2c", &params).unwrap(),
        data_link: LinkConfig::with_trace(trace),
        feedback_link: feedback,
        duration: Duration::from_secs(SECS),
        ..SimConfig::default()
    };
    let mut video = SyntheticVideo::new(1280, 720, 6, 1).unwrap();
    simulate(&config, &mut video, &mut |_| {}).unwrap()
}

fn diagnostic(out: &SimOutput, name: &str) -> f64 {
    out.diagnostics
        .iter()
        .find(|d| d.name == name)
        .map_or(f64::NAN, |d| d.value)
}

#[test]
fn a_720p_run_steps_down_on_a_slow_link_and_back_up_after_it() {
    let out = run(ResolutionStepConfig::default());
    println!(
        "sizes {:?}\nsender {:?}\nreceiver {:?}\n{:?}",
        out.shown_sizes, out.sender, out.receiver, out.diagnostics
    );
    let sizes: Vec<(u32, u32)> = out.shown_sizes.iter().map(|&(w, h, _)| (w, h)).collect();
    // Full size, then half, then full again (in that order, each shown).
    let half = sizes.iter().position(|&s| s == (640, 360));
    assert!(
        half.is_some_and(|i| i > 0 && sizes[..i].contains(&(1280, 720))),
        "{sizes:?}"
    );
    assert!(sizes[half.unwrap()..].contains(&(1280, 720)), "{sizes:?}");
    assert_eq!(diagnostic(&out, "resolution_changes"), 2.0);
    assert_eq!(diagnostic(&out, "halvings"), 0.0);
    // Every size change was a keyframe, and nothing shown failed to decode or was lost.
    assert!(out.sender.keyframes >= 3, "{:?}", out.sender);
    assert_eq!(out.receiver.frames_lost, 0, "{:?}", out.receiver);
    // Pictures shown at 640x360 (after the link returns, before the step up) are scored
    // against the 720p source (scaled up).
    let scored_small: Vec<f64> = out
        .records
        .iter()
        .filter(|r| {
            r.capture >= Instant::from_millis(7_000) && r.capture < Instant::from_millis(11_000)
        })
        .filter_map(|r| r.ssim)
        .collect();
    assert!(scored_small.len() > 5, "{scored_small:?}");
    let after: Vec<f64> = out
        .records
        .iter()
        .filter(|r| r.capture >= Instant::from_millis(15_000))
        .filter_map(|r| r.ssim)
        .collect();
    assert!(after.len() > 3, "{} scored at the end", after.len());
}
