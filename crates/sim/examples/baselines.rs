//! The comparison schemes' bar measurements (issue 7).
//!
//! ```text
//! cargo run --release -p salsify-sim --example baselines -- switch [secs]
//! cargo run --release -p salsify-sim --example baselines -- table [secs] [trace-dir]
//! cargo run --release -p salsify-sim --example baselines -- constant <kbps> [secs]
//! ```
//!
//! - `switch`: a link alternating 2 Mb/s and 500 kb/s every 40 s, 25 ms each way (50 ms
//!   RTT), 320x180 synthetic video at 30 fps; prints, for GCC and Vidaptive-style, how long
//!   after each return to 2 Mb/s the sender's rate (GCC target; Copa's CC-Rate) and the
//!   video bit rate actually sent (1 s windows) take to reach 90 % of 2 Mb/s.
//! - `table`: every scheme on Verizon-LTE-short (video over `.down`, feedback over `.up`,
//!   20 ms each way, 256-packet queues), FourPeople 320x180 at 60 fps looped; prints SSIM dB
//!   mean/p25 and delay mean/p95.
//! - `constant`: every baseline on a constant link, with mean quantizer and bit rates.

use std::time::Instant as WallClock;

use salsify_codec::Y4mReader;
use salsify_netem::{generators, Bitrate, LinkConfig, Trace};
use salsify_schemes::{SchemeConfig, SchemeParams};
use salsify_sim::{simulate, LoopedClip, SimConfig, SimOutput, SyntheticVideo, VideoSource};
use salsify_time::{Bitrate as Rate, Duration, Instant};

fn scheme(name: &str) -> SchemeConfig {
    SchemeConfig::named(name, &SchemeParams::default()).expect("a scheme")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(0) {
        Some("switch") => switch(arg(1).map_or(160, |s| s.parse().expect("seconds"))),
        Some("table") => table(
            arg(1).map_or(140, |s| s.parse().expect("seconds")),
            arg(2).unwrap_or("/work/shared/traces"),
            arg(3).unwrap_or("/work/shared/video/FourPeople_320x180_60_120f.y4m"),
        ),
        Some("constant") => constant(
            arg(1).map_or(1000, |s| s.parse().expect("kbps")),
            arg(2).map_or(10, |s| s.parse().expect("seconds")),
        ),
        _ => eprintln!("usage: baselines switch [secs] | table [secs] [trace-dir] [y4m] | constant <kbps> [secs]"),
    }
}

fn mean_quality(out: &SimOutput) -> f64 {
    let q: Vec<f64> = out
        .records
        .iter()
        .filter_map(|r| r.quality)
        .map(f64::from)
        .collect();
    q.iter().sum::<f64>() / q.len().max(1) as f64
}

fn constant(kbps: u64, secs: u64) {
    for scheme in ["conventional", "vidaptive", "oracle"].map(scheme) {
        let config = SimConfig {
            scheme: scheme.clone(),
            data_link: LinkConfig::with_trace(generators::constant(Bitrate::kbps(kbps)).unwrap()),
            feedback_link: LinkConfig::with_trace(
                generators::constant(Bitrate::kbps(kbps.max(1000))).unwrap(),
            ),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(320, 180, 30, 1).unwrap();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        let s = &out.summary;
        let sent: u64 = out.records.iter().map(|r| r.size_bytes).sum();
        println!(
            "{:<13} shown {:>4} ssim {:>5.2} dB  q {:>5.1}  video {:>6.0} kb/s  delay mean {:>6.1} p95 {:>6.1} ms  {:?}",
            scheme.name(),
            s.frames_shown,
            s.ssim_db_mean.unwrap_or(f64::NAN),
            mean_quality(&out),
            sent as f64 * 8.0 / secs as f64 / 1000.0,
            s.delay_mean_ms.unwrap_or(f64::NAN),
            s.delay_p95_ms.unwrap_or(f64::NAN),
            out.sender,
        );
    }
}

/// 2 Mb/s for 40 s, 500 kb/s for 40 s, repeating.
fn switching_trace() -> Trace {
    generators::from_rate_fn(Duration::from_secs(80), |t| {
        if t < Duration::from_secs(40) {
            2_000_000.0
        } else {
            500_000.0
        }
    })
    .unwrap()
}

fn switch(secs: u64) {
    let mut data = LinkConfig::with_trace(switching_trace());
    data.propagation_delay = Duration::from_millis(25);
    let mut feedback = LinkConfig::with_trace(generators::constant(Bitrate::mbps(2)).unwrap());
    feedback.propagation_delay = Duration::from_millis(25);
    for scheme in ["conventional", "vidaptive"].map(scheme) {
        let config = SimConfig {
            scheme: scheme.clone(),
            data_link: data.clone(),
            feedback_link: feedback.clone(),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let mut video = SyntheticVideo::new(320, 180, 30, 1).unwrap();
        let wall = WallClock::now();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        if let Ok(dir) = std::env::var("BASELINES_CSV_DIR") {
            let path = format!("{dir}/switch-{}.csv", scheme.name());
            let file = std::fs::File::create(&path).expect("create the CSV");
            salsify_sim::write_frames_csv(&out.records, std::io::BufWriter::new(file))
                .expect("write the CSV");
        }
        let b = &out;
        // The controller's rate: GCC's target; Copa's CC-Rate (= the pacing rate).
        let rate_at = |t: Instant| -> Rate {
            let i = b.rates.partition_point(|r| r.0 <= t);
            b.rates
                .get(i.wrapping_sub(1))
                .map_or(Rate::ZERO, |r| match scheme.name() {
                    "conventional" => r.1,
                    _ => r.2,
                })
        };
        // Video sent per 1 s window, by capture time.
        let video_kbps = |t: Instant| -> f64 {
            let bytes: u64 = out
                .records
                .iter()
                .filter(|r| r.capture >= t && r.capture < t + Duration::from_secs(1))
                .map(|r| r.size_bytes)
                .sum();
            bytes as f64 * 8.0 / 1000.0
        };
        println!(
            "{} ({:.0} s wall):",
            scheme.name(),
            wall.elapsed().as_secs_f64()
        );
        let mut up = 80;
        while up < secs {
            let start = Instant::from_millis(up * 1000);
            let limit = Duration::from_secs(40);
            let reach = |f: &dyn Fn(Instant) -> bool| -> Option<f64> {
                (0..4000)
                    .map(|i| start + Duration::from_millis(i * 10))
                    .take_while(|&t| t - start < limit)
                    .find(|&t| f(t))
                    .map(|t| (t - start).as_secs_f64())
            };
            let rate_t = reach(&|t| rate_at(t) >= Rate::kbps(1800));
            let video_t = reach(&|t| video_kbps(t) >= 1800.0);
            let before = rate_at(start - Duration::from_millis(10));
            let end_rate = rate_at(start + Duration::from_millis(39_990));
            println!(
                "  back to 2 Mb/s at {up} s: rate {before} -> 90 % after {}; video 90 % after {}; rate at +40 s {end_rate}",
                rate_t.map_or("never (40 s)".into(), |s| format!("{s:.1} s")),
                video_t.map_or("never (40 s)".into(), |s| format!("{s:.1} s")),
            );
            up += 80;
        }
        // The rate trace every 2 s around the first return, for the record.
        let trail: Vec<String> = (0..=20)
            .map(|i| {
                let t = Instant::from_millis(80_000 + i * 2000);
                format!("{}", rate_at(t).as_kbps())
            })
            .collect();
        println!("  rate (kb/s) every 2 s from 80 s: {}", trail.join(" "));
        if let Ok(window) = std::env::var("BASELINES_TRAIL") {
            // "from_s,to_s"
            let (from, to) = window.split_once(',').expect("from,to");
            let from = Instant::from_millis(from.parse::<u64>().expect("s") * 1000);
            let to = Instant::from_millis(to.parse::<u64>().expect("s") * 1000);
            for r in b
                .rates
                .iter()
                .filter(|r| r.0 >= from && r.0 <= to)
                .step_by(3)
            {
                println!("    {:?} encoder {} pacing {}", r.0, r.1, r.2);
            }
        }
        let ratios: Vec<f64> = b
            .rates
            .iter()
            .filter(|r| r.2.as_bps() > 0)
            .map(|r| r.1.as_f64() / r.2.as_f64())
            .collect();
        println!(
            "  encoder target / pacing rate: mean {:.2} over {} changes; sender {:?}",
            ratios.iter().sum::<f64>() / ratios.len().max(1) as f64,
            ratios.len(),
            b.sender
        );
        println!(
            "  summary: ssim {:.2} dB delay mean {:.0} p95 {:.0} ms",
            out.summary.ssim_db_mean.unwrap_or(f64::NAN),
            out.summary.delay_mean_ms.unwrap_or(f64::NAN),
            out.summary.delay_p95_ms.unwrap_or(f64::NAN)
        );
    }
}

fn load_clip(path: &str) -> LoopedClip {
    let file = std::fs::File::open(path).expect("open the clip");
    let mut reader = Y4mReader::new(std::io::BufReader::new(file)).expect("a Y4M file");
    let fps = reader.header().frame_rate.map_or(60.0, |r| r.to_f64());
    let mut frames = Vec::new();
    while let Some(f) = reader.next_frame().expect("a Y4M frame") {
        frames.push(f);
    }
    LoopedClip::new(frames, fps, path.to_string()).expect("a clip")
}

fn table(secs: u64, traces: &str, clip: &str) {
    let down = Trace::from_path(format!("{traces}/Verizon-LTE-short.down")).expect("trace");
    let up = Trace::from_path(format!("{traces}/Verizon-LTE-short.up")).expect("trace");
    let data = LinkConfig::with_trace(down); // 20 ms each way, 256-packet DropTail: defaults
    let feedback = LinkConfig::with_trace(up);
    let mut video = load_clip(clip);
    let rows: Vec<(&str, SchemeConfig)> = [
        ("Salsify-2c", "salsify-2c"),
        ("Salsify-1c", "salsify-1c"),
        ("no grace period", "salsify-no-grace"),
        ("conventional codec", "salsify-conventional-codec"),
        ("conv. transport+codec", "salsify-conventional-transport"),
        ("conventional (GCC)", "conventional"),
        ("Vidaptive-style", "vidaptive"),
        ("oracle", "oracle"),
    ]
    .map(|(label, name)| (label, scheme(name)))
    .into();
    println!(
        "Verizon-LTE-short, {secs} s, {} ({}x{} @ {} fps)\n",
        video.name(),
        video.size().0,
        video.size().1,
        video.fps()
    );
    println!("| scheme | SSIM dB mean | SSIM dB p25 | delay mean ms | delay p95 ms | frames shown | video kb/s | wall s |");
    println!("|---|---|---|---|---|---|---|---|");
    let only = std::env::var("BASELINES_ONLY").ok();
    for (name, scheme) in rows {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let config = SimConfig {
            scheme,
            data_link: data.clone(),
            feedback_link: feedback.clone(),
            duration: Duration::from_secs(secs),
            ..SimConfig::default()
        };
        let wall = WallClock::now();
        let out = simulate(&config, &mut video, &mut |_| {}).unwrap();
        let s = &out.summary;
        let sent: u64 = out.records.iter().map(|r| r.size_bytes).sum();
        println!(
            "| {name} | {:.2} | {:.2} | {:.0} | {:.0} | {} / {} | {:.0} | {:.0} |",
            s.ssim_db_mean.unwrap_or(f64::NAN),
            s.ssim_db_p25.unwrap_or(f64::NAN),
            s.delay_mean_ms.unwrap_or(f64::NAN),
            s.delay_p95_ms.unwrap_or(f64::NAN),
            s.frames_shown,
            out.records.len(),
            sent as f64 * 8.0 / secs as f64 / 1000.0,
            wall.elapsed().as_secs_f64(),
        );
        if !out.rates.is_empty() {
            let b = &out;
            if only.is_some() {
                println!("  sender {:?}\n  receiver {:?}", b.sender, b.receiver);
                let at = |t: u64| {
                    let i = b
                        .rates
                        .partition_point(|r| r.0 <= Instant::from_millis(t * 1000));
                    b.rates.get(i.wrapping_sub(1)).map_or(0, |r| r.1.as_kbps())
                };
                let trail: Vec<String> = (0..secs).step_by(5).map(|t| at(t).to_string()).collect();
                println!("  encoder target every 5 s (kb/s): {}", trail.join(" "));
            }
        }
    }
}
