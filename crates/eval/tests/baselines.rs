//! Every comparison scheme runs end to end in the simulator on a constant link and shows
//! frames with sane quality and delay.

use salsify_baselines::{GccConfig, OracleConfig, VidaptiveConfig};
use salsify_eval::sim::{simulate, Scheme, SimConfig, SimOutput, SyntheticVideo};
use salsify_netem::{generators, Bitrate, LinkConfig};
use salsify_time::Duration;

fn run(scheme: Scheme, kbps: u64, secs: u64) -> SimOutput {
    let data = LinkConfig::with_trace(generators::constant(Bitrate::kbps(kbps)).unwrap());
    let feedback = LinkConfig::with_trace(generators::constant(Bitrate::kbps(2000)).unwrap());
    let config = SimConfig {
        scheme,
        data_link: data,
        feedback_link: feedback,
        duration: Duration::from_secs(secs),
        ..SimConfig::default()
    };
    let mut video = SyntheticVideo::new(160, 96, 30, 1).unwrap();
    simulate(&config, &mut video, &mut |_| {}).unwrap()
}

fn check(name: &str, out: &SimOutput, min_shown: u64, max_p95_ms: f64) {
    let s = &out.summary;
    let b = out.baseline.as_ref().expect("baseline counters");
    println!(
        "{name}: shown {} ssim {:?} dB delay mean {:?} p95 {:?} ms util {:?}\n  {:?}\n  {:?}",
        s.frames_shown,
        s.ssim_db_mean,
        s.delay_mean_ms,
        s.delay_p95_ms,
        s.link_utilisation,
        b.sender,
        b.receiver
    );
    assert!(
        s.frames_shown >= min_shown,
        "{name}: shown {}",
        s.frames_shown
    );
    let ssim = s.ssim_db_mean.unwrap();
    assert!(ssim > 8.0, "{name}: SSIM {ssim} dB");
    let p95 = s.delay_p95_ms.unwrap();
    assert!(p95 > 20.0 && p95 < max_p95_ms, "{name}: p95 delay {p95} ms");
}

#[test]
fn conventional_gcc_shows_frames_on_a_constant_link() {
    let out = run(Scheme::Conventional(GccConfig::default()), 1000, 8);
    check("conventional", &out, 180, 1000.0);
    let b = out.baseline.unwrap();
    assert!(b.receiver.feedback > 50);
    // GCC ramps up from its 300 kb/s start towards the 1 Mb/s link.
    assert!(
        b.sender.target > salsify_baselines::Bitrate::kbps(400),
        "{:?}",
        b.sender.target
    );
}

#[test]
fn vidaptive_shows_frames_on_a_constant_link() {
    let out = run(Scheme::Vidaptive(VidaptiveConfig::default()), 1000, 8);
    check("vidaptive", &out, 150, 1000.0);
    assert!(out.baseline.unwrap().sender.padding_packets > 0);
}

#[test]
fn oracle_shows_frames_within_its_delay_target() {
    let out = run(Scheme::Oracle(OracleConfig::default()), 1000, 6);
    check("oracle", &out, 170, 200.0);
    // Nothing it sends is late or lost.
    assert_eq!(out.baseline.unwrap().receiver.frames_lost, 0);
}
