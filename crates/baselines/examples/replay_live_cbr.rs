//! Replays a live conventional run's encoder inputs through libvpx offline, to tell whether
//! its frames follow from its inputs (libvpx at a negative `cpu_used` runs at a fixed speed, so
//! the same pictures, timestamps, targets and keyframe flags give the same frames).
//!
//! ```text
//! cargo run --release -p salsify-baselines --example replay_live_cbr -- LIVE_DIR CLIP.y4m [SLACK_US]
//! ```
//!
//! `LIVE_DIR` is a live run's log folder (`sender.csv`, `rates.csv`; e.g. a live cell's
//! `live/`), `CLIP.y4m` the clip it played in a loop (the cell's `live-sources/`). Each picture
//! the sender encoded (or libvpx dropped) is encoded again at its capture time, with the
//! encoder target `rates.csv` last gave by then (or `SLACK_US` later: the encode is asked for
//! a little after the capture) and its keyframe flag, at the clip's size
//! (runs whose picture size changed are not replayed right). Prints how many frames came out
//! the same size, and the bytes over the target per 5 s, live and replayed.

use std::collections::BTreeMap;
use std::io::BufReader;

use salsify_baselines::ConventionalConfig;
use salsify_codec::{y4m::Y4mReader, CbrConfig, CbrEncoder};

/// An encoded (or libvpx-dropped) picture of `sender.csv`.
struct Encoded {
    picture: usize,
    captured_us: u64,
    bytes: u64,
    keyframe: bool,
}

fn column(header: &str, name: &str) -> usize {
    header
        .split(',')
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column '{name}' in '{header}'"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read '{path}': {e}"))
}

/// (time µs, encoder target b/s) of each change in `rates.csv`.
fn rates(dir: &str) -> Vec<(u64, u64)> {
    let text = read(&format!("{dir}/rates.csv"));
    let header = text.lines().next().unwrap_or_default();
    let (at, encoder) = (column(header, "at_us"), column(header, "encoder_bps"));
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            (v[at].parse().unwrap(), v[encoder].parse().unwrap())
        })
        .collect()
}

/// The pictures libvpx was given, in order. `sender.csv` leaves the capture time of a picture
/// libvpx dropped empty; a played clip's pictures are captured every `interval_us` exactly,
/// so it is the last known capture's plus the pictures between.
fn encoded(dir: &str, interval_us: f64) -> Vec<Encoded> {
    let text = read(&format!("{dir}/sender.csv"));
    let header = text.lines().next().unwrap_or_default();
    let [picture, captured, bytes, choice, keyframe] =
        ["picture", "captured_us", "bytes", "choice", "keyframe"].map(|c| column(header, c));
    let mut known: Option<(usize, u64)> = None;
    let mut out = vec![];
    for v in text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<&str>>())
    {
        if v[choice] != "only" && v[choice] != "dropped:rate-control" {
            continue;
        }
        let p: usize = v[picture].parse().unwrap();
        let captured_us = match v[captured].parse::<u64>() {
            Ok(t) => t,
            Err(_) => match known {
                Some((kp, kt)) => kt + ((p - kp) as f64 * interval_us) as u64,
                None => continue,
            },
        };
        known = Some((p, captured_us));
        out.push(Encoded {
            picture: p,
            captured_us,
            bytes: v[bytes].parse().unwrap_or(0),
            keyframe: v[keyframe] == "1",
        });
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, clip, slack_us) = match &args[..] {
        [_, dir, clip] => (dir, clip, 0),
        [_, dir, clip, slack] => (dir, clip, slack.parse().expect("SLACK_US: microseconds")),
        _ => {
            eprintln!("usage: replay_live_cbr LIVE_DIR CLIP.y4m [SLACK_US]");
            std::process::exit(2);
        }
    };
    let file = std::fs::File::open(clip).unwrap_or_else(|e| panic!("cannot open '{clip}': {e}"));
    let mut reader = Y4mReader::new(BufReader::new(file)).expect("a Y4M file");
    let fps = reader.header().frame_rate.map_or(30.0, |r| r.to_f64());
    let mut pictures = vec![];
    while let Some(p) = reader.next_frame().expect("a readable Y4M file") {
        pictures.push(p);
    }
    let (w, h) = (pictures[0].width(), pictures[0].height());
    let settings = ConventionalConfig::default().cbr_settings();
    let config = CbrConfig {
        max_fps: fps.round().max(1.0) as u32,
        dropframe_thresh: settings.dropframe_thresh,
        max_gap_frames: settings.max_gap_frames,
        ..CbrConfig::default()
    };
    let mut encoder = CbrEncoder::new(w, h, config).expect("encoder settings");
    let rates = rates(dir);
    let (mut same, mut total) = (0, 0);
    // 5 s window -> (live bytes, replayed bytes, target bytes)
    let mut windows: BTreeMap<u64, (u64, u64, f64)> = BTreeMap::new();
    let interval_us = (1e6 / fps).floor();
    let pictures_in = encoded(dir, interval_us);
    let start = pictures_in.first().map_or(0, |e| e.captured_us);
    for e in pictures_in {
        let target = rates
            .iter()
            .take_while(|(at, _)| *at <= e.captured_us + slack_us)
            .last()
            .map_or(u64::from(config.start_kbps) * 1000, |r| r.1);
        encoder
            .set_target_bitrate(u32::try_from(target / 1000).unwrap_or(u32::MAX))
            .expect("a target");
        let picture = &pictures[e.picture % pictures.len()];
        let frame = encoder
            .encode(picture, e.captured_us, e.keyframe)
            .expect("an encode");
        let replayed = frame.map_or(0, |f| f.data.len() as u64);
        total += 1;
        same += u64::from(replayed == e.bytes);
        let window = windows
            .entry((e.captured_us - start) / 5_000_000)
            .or_default();
        window.0 += e.bytes;
        window.1 += replayed;
        window.2 += target as f64 / 8.0 / fps;
    }
    println!("{same} of {total} frames the same size as live");
    for (k, (live, replayed, target)) in windows {
        println!(
            "{:4} s: live {:.2} x target, replayed {:.2} x target",
            k * 5,
            live as f64 / target,
            replayed as f64 / target
        );
    }
}
