//! Every registered scheme that runs in the simulator, built-in or plugged in, runs a few
//! seconds on a modest link and shows frames: a family added by its registration line is
//! simulated here without a test of its own. The simulator's executor refuses (and the run
//! fails on) an encode job of a kind the scheme did not declare, so this also checks every
//! scheme's `encode_jobs`.

use salsify_netem::{generators, Bitrate, LinkConfig};
use salsify_schemes::{registry, Runs, SchemeConfig};
use salsify_sim::{simulate, SimConfig, SyntheticVideo};
use salsify_time::Duration;

#[test]
fn every_simulated_scheme_shows_frames() {
    let link = || LinkConfig::with_trace(generators::constant(Bitrate::kbps(1500)).unwrap());
    let mut ran = Vec::new();
    for info in registry::schemes().filter(|s| !matches!(s.runs, Runs::Peer(_))) {
        let config = SimConfig {
            scheme: SchemeConfig::named(info.name, &Default::default()).unwrap(),
            data_link: link(),
            feedback_link: link(),
            duration: Duration::from_secs(4),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(160, 96, 30, 1).unwrap();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        let shown = out.summary.frames_shown;
        if info.sends_video {
            assert!(shown >= 30, "{}: {shown} frames shown in 4 s", info.name);
        }
        ran.push((info.name, shown));
    }
    println!("{ran:?}");
    assert!(ran.len() >= 10, "{ran:?}");
}
