//! Calibration of the conventional scheme (libwebrtc's GoogCC through `goog_cc`) against
//! published behaviour.
//!
//! ```text
//! cargo run --release -p salsify-sim --example conventional_calibration -- fig1 [secs] [WxH]
//! ```
//!
//! `fig1`: Vidaptive's Figure 1 set-up: the `vidaptive-fig1` link (2 Mb/s and 500 kb/s
//! alternating every 40 s, starting high), 25 ms each way (50 ms RTT), an unlimited queue
//! (no drops), the synthetic source at 30 fps (default 640x360), encoder maximum 12 Mb/s as
//! in Vidaptive's experiments. For `conventional` it prints:
//!
//! - rise: after each return to 2 Mb/s, the time until the controller's target (its
//!   pacing rate / 1.1), and until the video delivered (frames by display time, 1 s windows), first reach 90 % of
//!   2 Mb/s;
//! - utilisation: video delivered / link rate over the last 20 s of each phase;
//! - spike: the largest frame delay in the 40 s after each drop to 500 kb/s;
//! - settle: the time after the drop until the median frame delay over the next 2 s is back
//!   within 100 ms of its median over the 10 s before the drop.

use std::time::Instant as WallClock;

use salsify_baselines::ConventionalConfig;
use salsify_netem::{presets, QueueLimit};
use salsify_schemes::SchemeConfig;
use salsify_sim::{simulate, SimConfig, SimOutput, SyntheticVideo};
use salsify_time::{Bitrate, Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(0) {
        Some("fig1") => {
            let secs = arg(1).map_or(240, |s| s.parse().expect("seconds"));
            let (w, h) = arg(2).map_or((640, 360), |s| {
                let (w, h) = s.split_once('x').expect("WxH");
                (w.parse().expect("width"), h.parse().expect("height"))
            });
            fig1(secs, w, h)
        }
        _ => eprintln!("usage: conventional_calibration fig1 [secs] [WxH]"),
    }
}

fn schemes() -> Vec<SchemeConfig> {
    let conventional = ConventionalConfig {
        encoder_max: Some(Bitrate::kbps(12_000)),
        ..ConventionalConfig::default()
    };
    // `CALIBRATION_VARIANT=no-cwnd`: a diagnostic run without congestion-window pushback
    // (libwebrtc's `WebRTC-CongestionWindow` off), to see what the pushback does to the drain.
    if std::env::var("CALIBRATION_VARIANT").as_deref() == Ok("no-cwnd") {
        return vec![webrtc(ConventionalConfig {
            congestion_window: None,
            ..conventional
        })];
    }
    // `CALIBRATION_VARIANT=no-adjuster`: without libwebrtc's encoder bitrate adjuster (the
    // first round's sender).
    if std::env::var("CALIBRATION_VARIANT").as_deref() == Ok("no-adjuster") {
        return vec![webrtc(ConventionalConfig {
            bitrate_adjuster: false,
            ..conventional
        })];
    }
    vec![webrtc(conventional)]
}

/// The WebRTC scheme with `config`.
fn webrtc(config: ConventionalConfig) -> SchemeConfig {
    let mut params = salsify_schemes::SchemeParams::default();
    params.set("conventional", &config);
    SchemeConfig::named("conventional", &params).expect("a valid configuration")
}

/// The controller's target at `t`. With `from_pacing`, the pacing rate it set over
/// libwebrtc's pacing factor 1.1 (the encoder's target is lower by the header overhead, the
/// pushback and the bitrate adjuster); otherwise the target its encoder was given.
fn target_at(out: &SimOutput, t: Instant, from_pacing: bool) -> Bitrate {
    if from_pacing {
        return pacing_at(out, t).mul_f64(1.0 / 1.1);
    }
    let i = out.rates.partition_point(|r| r.0 <= t);
    out.rates
        .get(i.wrapping_sub(1))
        .map_or(Bitrate::ZERO, |r| r.1)
}

/// The pacing rate at `t`.
fn pacing_at(out: &SimOutput, t: Instant) -> Bitrate {
    let i = out.rates.partition_point(|r| r.0 <= t);
    out.rates
        .get(i.wrapping_sub(1))
        .map_or(Bitrate::ZERO, |r| r.2)
}

/// Video delivered in [t, t + len), kb/s, by display time.
fn delivered_kbps(out: &SimOutput, t: Instant, len: Duration) -> f64 {
    let bytes: u64 = out
        .records
        .iter()
        .filter(|r| r.display.is_some_and(|d| d >= t && d < t + len))
        .map(|r| r.size_bytes)
        .sum();
    bytes as f64 * 8.0 / len.as_secs_f64() / 1000.0
}

/// (capture, delay ms) of shown frames.
fn delays(out: &SimOutput) -> Vec<(Instant, f64)> {
    out.records
        .iter()
        .filter_map(|r| {
            r.display
                .map(|d| (r.capture, (d - r.capture).as_secs_f64() * 1e3))
        })
        .collect()
}

fn fmt_s(v: Option<f64>) -> String {
    v.map_or("never".into(), |s| format!("{s:.1} s"))
}

fn fig1(secs: u64, w: u32, h: u32) {
    let mut data = presets::vidaptive_fig1().expect("the preset");
    data.propagation_delay = Duration::from_millis(25);
    data.queue = QueueLimit::UNLIMITED;
    let mut feedback = data.clone();
    feedback.trace = salsify_netem::generators::constant(Bitrate::mbps(2)).expect("trace");
    println!(
        "Vidaptive Figure 1 set-up: 2 Mb/s / 500 kb/s every 40 s, 50 ms RTT, no drops; synthetic {w}x{h} @ 30 fps, {secs} s\n"
    );
    println!("| scheme | phase | rise: target 90 % | rise: video 90 % | utilisation (last 20 s) | delay spike after drop | settle |");
    println!("|---|---|---|---|---|---|---|");
    for scheme in schemes() {
        let conventional = scheme.name() == "conventional";
        let config = SimConfig {
            scheme: scheme.clone(),
            data_link: data.clone(),
            feedback_link: feedback.clone(),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(w, h, 30, 1).expect("video");
        let wall = WallClock::now();
        let out = simulate(&config, &mut video, &mut |_| {}).expect("simulate");
        let d = delays(&out);
        let mut phase = 0u64;
        while (phase + 1) * 40 <= secs {
            let start = Instant::from_millis(phase * 40_000);
            let high = phase.is_multiple_of(2);
            let link_kbps = if high { 2000.0 } else { 500.0 };
            let util = delivered_kbps(
                &out,
                start + Duration::from_secs(20),
                Duration::from_secs(20),
            ) / link_kbps;
            let reach = |f: &dyn Fn(Instant) -> bool| -> Option<f64> {
                (0..4000)
                    .map(|i| start + Duration::from_millis(i * 10))
                    .find(|&t| f(t))
                    .map(|t| (t - start).as_secs_f64())
            };
            let (rise_t, rise_v) = if high && phase > 0 {
                (
                    fmt_s(reach(&|t| {
                        target_at(&out, t, conventional) >= Bitrate::kbps(1800)
                    })),
                    fmt_s(reach(&|t| {
                        delivered_kbps(&out, t, Duration::from_secs(1)) >= 1800.0
                    })),
                )
            } else {
                ("-".into(), "-".into())
            };
            let (spike, settle) = if !high {
                let end = start + Duration::from_secs(40);
                let mut before: Vec<f64> = d
                    .iter()
                    .filter(|x| x.0 >= start - Duration::from_secs(10) && x.0 < start)
                    .map(|x| x.1)
                    .collect();
                before.sort_by(f64::total_cmp);
                let median = before.get(before.len() / 2).copied().unwrap_or(0.0);
                let after: Vec<&(Instant, f64)> =
                    d.iter().filter(|x| x.0 >= start && x.0 < end).collect();
                let spike = after.iter().map(|x| x.1).fold(0.0, f64::max);
                // Settled: the first time the median delay over the next 2 s is back
                // within 100 ms of the median before the drop.
                let settled = (0..400u64)
                    .map(|i| start + Duration::from_millis(i * 100))
                    .find(|&t| {
                        let mut w: Vec<f64> = after
                            .iter()
                            .filter(|x| x.0 >= t && x.0 < t + Duration::from_secs(2))
                            .map(|x| x.1)
                            .collect();
                        w.sort_by(f64::total_cmp);
                        w.get(w.len() / 2).is_some_and(|&m| m <= median + 100.0)
                    })
                    .map(|t| (t - start).as_secs_f64());
                (
                    format!("{spike:.0} ms (before: {median:.0} ms)"),
                    fmt_s(settled),
                )
            } else {
                ("-".into(), "-".into())
            };
            println!(
                "| {} | {}-{} s {} | {} | {} | {:.0} % | {} | {} |",
                scheme.name(),
                phase * 40,
                phase * 40 + 40,
                if high { "2 Mb/s" } else { "500 kb/s" },
                rise_t,
                rise_v,
                util * 100.0,
                spike,
                settle
            );
            phase += 1;
        }
        let s = &out.summary;
        println!(
            "| {} | whole run | | | ssim {:.2} dB | delay mean {:.0} ms, p95 {:.0} ms | wall {:.0} s |",
            scheme.name(),
            s.ssim_db_mean.unwrap_or(f64::NAN),
            s.delay_mean_ms.unwrap_or(f64::NAN),
            s.delay_p95_ms.unwrap_or(f64::NAN),
            wall.elapsed().as_secs_f64()
        );
        if std::env::var("CALIBRATION_TRAIL").is_ok() {
            let trail: Vec<String> = (0..secs)
                .step_by(2)
                .map(|t| {
                    let at = Instant::from_millis(t * 1000);
                    format!(
                        "{t}:{}/{}/{:.0}",
                        target_at(&out, at, false).as_kbps(),
                        pacing_at(&out, at).as_kbps(),
                        delivered_kbps(&out, at, Duration::from_secs(2))
                    )
                })
                .collect();
            println!(
                "  encoder target/pacing/delivered kb/s every 2 s: {}",
                trail.join(" ")
            );
            let by_second: Vec<String> = (0..secs)
                .map(|t| {
                    let mut w: Vec<f64> = d
                        .iter()
                        .filter(|x| x.0.since_epoch().as_secs() == t)
                        .map(|x| x.1)
                        .collect();
                    w.sort_by(f64::total_cmp);
                    format!("{t}:{:.0}", w.get(w.len() / 2).copied().unwrap_or(f64::NAN))
                })
                .collect();
            println!(
                "  median frame delay ms by capture second: {}",
                by_second.join(" ")
            );
            println!(
                "  sender {:?}\n  diagnostics {:?}",
                out.sender, out.diagnostics
            );
        }
    }
}
