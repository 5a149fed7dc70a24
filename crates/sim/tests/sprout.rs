//! Sprout and Sprout-EWMA end to end in the simulator: video sized to the forecast window,
//! bulk filler, and recovery from loss by acknowledged states.

use salsify_netem::{generators, Bitrate, LinkConfig, LossModel};
use salsify_schemes::{SchemeConfig, SchemeParams};
use salsify_sim::{simulate, SimConfig, SimOutput, SyntheticVideo};
use salsify_time::Duration;

fn run(name: &str, kbps: u64, loss: f64, secs: u64) -> SimOutput {
    let mut data = LinkConfig::with_trace(generators::constant(Bitrate::kbps(kbps)).unwrap());
    if loss > 0.0 {
        data.loss = vec![LossModel::Iid { probability: loss }];
    }
    let feedback = LinkConfig::with_trace(generators::constant(Bitrate::kbps(2000)).unwrap());
    let config = SimConfig {
        scheme: SchemeConfig::named(name, &SchemeParams::default()).unwrap(),
        data_link: data,
        feedback_link: feedback,
        duration: Duration::from_secs(secs),
        ..SimConfig::default()
    };
    let mut video = SyntheticVideo::new(320, 192, 30, 1).unwrap();
    simulate(&config, &mut video, &mut |_| {}).unwrap()
}

fn describe(name: &str, out: &SimOutput) {
    let s = &out.summary;
    println!(
        "{name}: shown {} ssim {:?} dB delay mean {:?} p95 {:?} ms util {:?} kbps {:.0}\n  {:?}\n  {:?}",
        s.frames_shown,
        s.ssim_db_mean,
        s.delay_mean_ms,
        s.delay_p95_ms,
        s.link_utilisation,
        s.video_bitrate_bps / 1e3,
        out.sender,
        out.receiver,
    );
}

#[test]
fn sprout_video_follows_the_forecast_with_low_delay() {
    for name in ["sprout", "sprout-ewma"] {
        let out = run(name, 1500, 0.0, 10);
        describe(name, &out);
        let s = &out.summary;
        assert!(s.frames_shown >= 200, "{name}: shown {}", s.frames_shown);
        assert!(s.ssim_db_mean.unwrap() > 8.0, "{name}");
        let p95 = s.delay_p95_ms.unwrap();
        assert!(p95 < 250.0, "{name}: p95 {p95} ms");
        // A forecast per 20 ms tick while data flows.
        assert!(
            out.receiver.feedback_sent >= 400,
            "{name}: {:?}",
            out.receiver
        );
        // The window, not a fixed rate, sizes the frames: a real share of the link is used.
        let util = s.link_utilisation.unwrap();
        assert!(util > 0.2, "{name}: utilisation {util}");
    }
}

#[test]
fn bulk_sprout_fills_a_share_of_the_link_without_a_standing_queue() {
    for name in ["sprout-bulk", "sprout-ewma-bulk"] {
        let out = run(name, 2000, 0.0, 10);
        describe(name, &out);
        let util = out.summary.link_utilisation.unwrap();
        assert!(util > 0.3, "{name}: utilisation {util}");
        assert_eq!(out.summary.frames_shown, 0, "bulk mode sends no video");
        assert!(out.sender.datagrams_sent > 1000, "{name}");
    }
}

#[test]
fn after_loss_sprout_video_recovers_from_an_acknowledged_state() {
    let out = run("sprout", 1500, 0.03, 10);
    describe("sprout lossy", &out);
    assert!(out.sender.recoveries > 0, "{:?}", out.sender);
    assert!(
        out.summary.frames_shown >= 150,
        "shown {}",
        out.summary.frames_shown
    );
    assert!(out.receiver.frames_lost > 0);
}
