//! End-to-end tests of the real-time runtime: `salsify recv`, `link` and `send` as separate
//! processes on loopback, small pictures, a few seconds each. Assertions are generous floors
//! (frames shown, SSIM against the source), never timings.

use std::collections::HashMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use salsify_codec::av1::parse_temporal_unit;
use salsify_codec::frame::parse_vp8_header;
use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::Y4mReader;
use salsify_codec::{FunctionalCodec, Image, IvfReader, PlainDecoder};
use salsify_eval::metrics::ssim_luma;
use salsify_schemes::registry::{self, scheme_names};
use salsify_schemes::Runs;
use salsify_transport::DataFragment;

mod support;

use support::{finish, free_addr, keys, Keep, Tap};

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("rt", name)
}

const SIZE: (u32, u32) = (160, 96);
const FPS: u32 = 30;

fn salsify(args: &[&str]) -> Child {
    support::spawn(args)
}

/// Stops processes that outlive their sender (receivers, relays) once the last datagrams
/// are in: SIGTERM, which they handle like Ctrl-C (files finished, summary printed), so the
/// suite does not wait out their `--duration` (kept as a bound).
fn stop_all(children: Vec<(Child, &str)>) -> Vec<Output> {
    std::thread::sleep(std::time::Duration::from_millis(300));
    for (child, _) in &children {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
    }
    children
        .into_iter()
        .map(|(child, what)| finish(child, what))
        .collect()
}

fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn sender_args<'a>(to: &'a str, log: &'a str, seconds: &'a str) -> Vec<&'a str> {
    vec![
        "send",
        "--to",
        to,
        "--size",
        "160x96",
        "--fps",
        "30",
        "--duration",
        seconds,
        "--log",
        log,
        "-q",
    ]
}

/// (session, frame) -> picture, from a sender log (whose other rows are pictures skipped or
/// dropped, with no frame number).
fn pictures_sent(log: &Path) -> HashMap<(String, String), u64> {
    csv_rows(log)
        .into_iter()
        .filter(|r| !r[1].is_empty())
        .map(|r| ((r[0].clone(), r[1].clone()), r[2].parse().unwrap()))
        .collect()
}

/// The source pictures 0..n of the synthetic input the sender plays.
fn source_pictures(n: u64) -> Vec<Image> {
    let mut source = SyntheticSource::new(SIZE.0, SIZE.1, FPS, 1).unwrap();
    (0..n).map(|_| source.next_frame().image).collect()
}

/// SSIM of each frame of `y4m` (one per row of the receiver log `shown`) against the source
/// picture the sender log says it encodes.
fn score(y4m: &Path, shown: &[Vec<String>], sent: &HashMap<(String, String), u64>) -> Vec<f64> {
    let mut reader = Y4mReader::new(std::fs::File::open(y4m).unwrap()).unwrap();
    let pictures: Vec<u64> = shown
        .iter()
        .map(|r| sent[&(r[0].clone(), r[1].clone())])
        .collect();
    let sources = source_pictures(pictures.iter().max().unwrap() + 1);
    let mut ssims = Vec::new();
    for picture in pictures {
        let image = reader
            .next_frame()
            .unwrap()
            .expect("a Y4M frame per logged frame");
        ssims.push(ssim_luma(&sources[picture as usize], &image).unwrap());
    }
    ssims
}

/// Checks the IVF file `ivf` against the receiver log `shown`: one frame per shown frame, in
/// order, keyframes where the log has them, and it plays as a VP8 player would (a plain
/// decoder, re-opened at a keyframe of another size) at the sizes the log says were shown.
fn check_ivf(ivf: &Path, shown: &[Vec<String>], what: &str) {
    let reader = IvfReader::new(std::fs::File::open(ivf).unwrap()).unwrap();
    let header = *reader.header();
    let frames: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(
        frames.len(),
        shown.len(),
        "{what}: IVF frames vs frames shown"
    );
    // The header's length field holds the duration in ticks of its timebase (what ffmpeg
    // reads there), the frame rate: the last timestamp plus one.
    assert_eq!(
        u64::from(header.frame_count),
        frames.last().map_or(0, |f| f.pts + 1),
        "{what}: IVF header length"
    );
    assert_eq!(
        (header.rate, header.scale),
        (FPS, 1),
        "{what}: IVF timebase"
    );
    let size = |r: &Vec<String>| -> (u32, u32) { (r[9].parse().unwrap(), r[10].parse().unwrap()) };
    assert_eq!(
        (u32::from(header.width), u32::from(header.height)),
        size(&shown[0]),
        "{what}: IVF header size"
    );
    let mut decoder: Option<(PlainDecoder, (u32, u32))> = None;
    for (i, (f, row)) in frames.iter().zip(shown).enumerate() {
        assert!(i == 0 || f.pts > frames[i - 1].pts, "{what}: frame {i} pts");
        let vp8 = parse_vp8_header(&f.data).unwrap_or_else(|e| panic!("{what}: frame {i}: {e}"));
        assert_eq!(
            vp8.keyframe_size.is_some(),
            row[8] == "1",
            "{what}: frame {i} type"
        );
        if let Some(s) = vp8.keyframe_size {
            if decoder.as_ref().map(|d| d.1) != Some(s) {
                decoder = Some((PlainDecoder::new(s.0, s.1).unwrap(), s));
            }
        }
        let (d, _) = decoder
            .as_mut()
            .expect("the IVF stream starts with a keyframe");
        let picture = d
            .decode(&f.data)
            .unwrap_or_else(|e| panic!("{what}: frame {i}: {e}"));
        assert_eq!(
            (picture.width(), picture.height()),
            size(row),
            "{what}: frame {i}"
        );
    }
}

#[test]
fn video_crosses_a_lossy_relay_and_matches_its_source() {
    let dir = temp_dir("e2e");
    let (recv_addr, link_addr) = (free_addr(), free_addr());
    let (y4m, ivf, recv_log, send_log) = (
        dir.join("out.y4m"),
        dir.join("out.ivf"),
        dir.join("recv.csv"),
        dir.join("send.csv"),
    );
    // Encrypted, as a user following the README would run it.
    let (recv_keys, send_keys) = keys(&dir);
    let mut recv_args = vec![
        "recv",
        "--listen",
        &recv_addr,
        "-o",
        y4m.to_str().unwrap(),
        "--ivf",
        ivf.to_str().unwrap(),
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "6",
        "-q",
    ];
    recv_args.extend(recv_keys.iter().map(String::as_str));
    let recv = salsify(&recv_args);
    let link = salsify(&[
        "link",
        "--listen",
        &link_addr,
        "--to",
        &recv_addr,
        "--link",
        "constant:4000",
        "--loss",
        "0.03",
        "--delay-ms",
        "10",
        "--duration",
        "6",
        "--log-dir",
        dir.to_str().unwrap(),
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut send_args = sender_args(&link_addr, send_log.to_str().unwrap(), "4");
    send_args.extend(send_keys.iter().map(String::as_str));
    finish(salsify(&send_args), "send");
    stop_all(vec![(link, "link"), (recv, "recv")]);

    let sent = pictures_sent(&send_log);
    let shown = csv_rows(&recv_log);
    assert!(
        shown.len() >= 40,
        "only {} frames shown in 4 s",
        shown.len()
    );
    check_ivf(&ivf, &shown, "salsify");
    let ssims = score(&y4m, &shown, &sent);
    let mean = ssims.iter().sum::<f64>() / ssims.len() as f64;
    let worst = ssims.iter().copied().fold(1.0, f64::min);
    assert!(
        mean > 0.9 && worst > 0.7,
        "mean SSIM {mean:.3}, worst {worst:.3}"
    );
    // The relay logged every packet in mm-link format, drops included.
    let log = std::fs::read_to_string(dir.join("video.log")).unwrap();
    assert!(
        log.starts_with("# mahimahi mm-link"),
        "{}",
        &log[..log.len().min(200)]
    );
    assert!(
        log.lines().any(|l| l.contains(" d ")),
        "3% loss shows as drops in the log"
    );
    // ... and said how late it forwarded them: a video row with datagrams in, out and its
    // lateness quantiles in order.
    let report = std::fs::read_to_string(dir.join("relay.csv")).unwrap();
    let video: Vec<u64> = report
        .lines()
        .find(|l| l.starts_with("video,"))
        .unwrap_or_else(|| panic!("no video row in {report}"))
        .split(',')
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    let (packets_in, packets_out, p50, p99, p999, max, counted) = (
        video[0], video[1], video[2], video[3], video[4], video[5], video[7],
    );
    assert!(packets_in > 100 && packets_out > 0, "{report}");
    assert!(p50 <= p99 && p99 <= p999 && p999 <= max, "{report}");
    // Every datagram forwarded was timed.
    assert_eq!(counted, packets_out, "{report}");
}

/// An AV1 call's received stream, written by `recv --ivf`, is an AV1 IVF file (fourcc
/// `AV01`, the codec learnt from the stream; one temporal unit as libaom wrote it per frame
/// shown) that a standard decoder (ffprobe's own choice, dav1d or libaom) decodes frame for
/// frame.
#[test]
fn an_av1_calls_ivf_plays_in_a_standard_decoder() {
    if Command::new("ffprobe").arg("-version").output().is_err() {
        println!("SKIP: ffprobe not installed (scripts/setup installs ffmpeg)");
        return;
    }
    let dir = temp_dir("av1-ivf");
    let (recv_keys, send_keys) = keys(&dir);
    let recv_addr = free_addr();
    let (ivf, recv_log, send_log) = (
        dir.join("out.ivf"),
        dir.join("recv.csv"),
        dir.join("send.csv"),
    );
    let mut recv_args = vec![
        "recv",
        "--listen",
        &recv_addr,
        "--ivf",
        ivf.to_str().unwrap(),
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "6",
        "-q",
    ];
    recv_args.extend(recv_keys.iter().map(String::as_str));
    let recv = salsify(&recv_args);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut send_args = sender_args(&recv_addr, send_log.to_str().unwrap(), "3");
    send_args.extend(["--codec", "av1"]);
    send_args.extend(send_keys.iter().map(String::as_str));
    finish(salsify(&send_args), "send");
    stop_all(vec![(recv, "recv")]);

    let shown = csv_rows(&recv_log);
    assert!(
        shown.len() >= 20,
        "only {} frames shown in 3 s",
        shown.len()
    );
    let reader = IvfReader::new(std::fs::File::open(&ivf).unwrap()).unwrap();
    assert_eq!(reader.header().codec, FunctionalCodec::Av1);
    let frames: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(frames.len(), shown.len(), "IVF frames vs frames shown");
    for (i, (f, row)) in frames.iter().zip(&shown).enumerate() {
        let header = parse_temporal_unit(&f.data).unwrap_or_else(|e| panic!("frame {i}: {e}"));
        assert_eq!(header.keyframe_size.is_some(), row[8] == "1", "frame {i}");
    }
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args(["-show_entries", "stream=codec_name,nb_read_frames"])
        .args(["-of", "default=noprint_wrappers=1"])
        .arg(&ivf)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&probe.stdout);
    assert!(
        probe.status.success() && probe.stderr.is_empty(),
        "ffprobe: {}{report}",
        String::from_utf8_lossy(&probe.stderr)
    );
    assert!(report.contains("codec_name=av1"), "{report}");
    assert!(
        report.contains(&format!("nb_read_frames={}", frames.len())),
        "ffprobe decoded other than the {} frames written: {report}",
        frames.len()
    );
}

/// Sends garbage, truncated datagrams and another session's forged keyframe fragment to
/// `to` for `how_long`; returns how many datagrams.
fn flood(to: &str, how_long: std::time::Duration) -> u64 {
    let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut forged = Vec::new();
    DataFragment {
        connection_id: 7,
        frame: 1_000_000,
        index: 0,
        count: 1,
        source: salsify_codec::StateHash::INITIAL,
        target: salsify_codec::StateHash(42),
        grace: std::time::Duration::ZERO,
        sent_at: salsify_time::Instant::ZERO,
        payload: &[1, 2, 3],
    }
    .emit(&mut forged)
    .unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut sent = 0;
    let end = std::time::Instant::now() + how_long;
    while std::time::Instant::now() < end {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 1600) as usize;
        let garbage: Vec<u8> = (0..len).map(|i| (x >> (i % 56)) as u8).collect();
        let _ = flooder.send_to(&garbage, to);
        let _ = flooder.send_to(&forged, to); // another session's "keyframe"
        let _ = flooder.send_to(&forged[..forged.len() / 2], to);
        sent += 3;
        if sent % 300 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    sent
}

#[test]
fn a_flood_of_bad_datagrams_does_not_stop_the_receiver() {
    let dir = temp_dir("flood");
    let recv_addr = free_addr();
    let (recv_log, send_log) = (dir.join("recv.csv"), dir.join("send.csv"));
    let recv = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "5",
        "-q",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let send = salsify(&sender_args(&recv_addr, send_log.to_str().unwrap(), "4"));
    // Let the session start, then flood it for most of its life.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let sent = flood(&recv_addr, std::time::Duration::from_millis(2800));
    finish(send, "send");
    let out = stop_all(vec![(recv, "recv")]).remove(0);
    let shown = csv_rows(&recv_log);
    assert!(sent > 1000, "flooded with {sent} datagrams");
    assert!(
        shown.len() >= 40,
        "only {} frames shown under the flood",
        shown.len()
    );
    let sessions: std::collections::HashSet<&str> = shown.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(sessions.len(), 1, "the forged session never took over");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ignored"), "{stderr}");
}

#[test]
fn a_restarted_sender_takes_over_after_the_old_one_falls_silent() {
    let dir = temp_dir("restart");
    let (recv_keys, send_keys) = keys(&dir);
    let recv_addr = free_addr();
    let recv_log = dir.join("recv.csv");
    let mut recv_args = vec![
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "6",
        "--session-timeout",
        "1",
        // The first sender says goodbye as it ends: the receiver waits for the next.
        "--stay",
        "-q",
    ];
    recv_args.extend(recv_keys.iter().map(String::as_str));
    let recv = salsify(&recv_args);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let keyed = |log: &Path, seconds| {
        let mut args = sender_args(&recv_addr, log.to_str().unwrap(), seconds);
        args.extend(send_keys.iter().map(String::as_str));
        salsify(&args)
    };
    let first_log = dir.join("send1.csv");
    finish(keyed(&first_log, "2"), "first send");
    let second_log = dir.join("send2.csv");
    finish(keyed(&second_log, "3"), "second send");
    stop_all(vec![(recv, "recv")]);
    let shown = csv_rows(&recv_log);
    let mut per_session: Vec<(String, usize)> = Vec::new();
    for r in &shown {
        match per_session.last_mut() {
            Some((s, n)) if *s == r[0] => *n += 1,
            _ => per_session.push((r[0].clone(), 1)),
        }
    }
    assert_eq!(per_session.len(), 2, "{per_session:?}");
    assert!(per_session.iter().all(|(_, n)| *n >= 15), "{per_session:?}");
}

#[test]
fn bad_addresses_busy_ports_and_missing_inputs_are_clear_errors() {
    let busy = UdpSocket::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    // Exit 2 for bad usage (a flag's value that can never work), 1 for the rest.
    let cases: [(&[&str], i32, &str); 9] = [
        (&["recv", "--listen", "nonsense"], 2, "has no port"),
        (
            &["recv", "--listen", "127.0.0.1:0", "-o", "-", "--ivf", "-"],
            2,
            "both write to standard output",
        ),
        (
            &["recv", "--listen", &busy_addr, "--duration", "1"],
            1,
            "busy",
        ),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--input",
                "/nonexistent/x.y4m",
            ],
            1,
            "cannot open video",
        ),
        (
            &[
                "link",
                "--listen",
                "127.0.0.1:0",
                "--to",
                "127.0.0.1:9",
                "--link",
                "nope",
            ],
            2,
            "preset",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--scheme", "oracle"],
            2,
            "oracle reads the link's future and runs only in the simulator",
        ),
        (
            &["recv", "--listen", "127.0.0.1:0", "--scheme", "oracle"],
            2,
            "runs only in the simulator",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--scheme", "webrtc"],
            2,
            "unknown scheme 'webrtc'",
        ),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--scheme",
                "conventional",
                "--delay-target-ms",
                "50",
            ],
            2,
            "--delay-target-ms applies to the salsify schemes",
        ),
    ];
    for (args, code, message) in cases {
        let out = salsify(args).wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_restarted_receiver_gets_a_keyframe_without_help() {
    let dir = temp_dir("recv-restart");
    // Encrypted: the restarted receiver has no keys of the old session, so the sender's
    // new session must also start a new handshake.
    let (recv_keys, send_keys) = keys(&dir);
    let recv_addr = free_addr();
    let (first_log, second_log) = (dir.join("recv1.csv"), dir.join("recv2.csv"));
    let _ = &first_log;
    let receiver = |log: &Path, seconds| keyed_recv(&recv_addr, log, seconds, &recv_keys);
    let mut first = receiver(&first_log, "6");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let send_log = dir.join("send.csv");
    let mut send_args = sender_args(&recv_addr, send_log.to_str().unwrap(), "6");
    send_args.extend(send_keys.iter().map(String::as_str));
    let send = salsify(&send_args);
    // It crashes (no goodbye: a receiver that ends says one, and the sender would end too).
    std::thread::sleep(std::time::Duration::from_millis(2000));
    first.kill().unwrap();
    first.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let second = receiver(&second_log, "3.5");
    finish(second, "second recv");
    finish(send, "send");
    // The first receiver's log may be cut where it was killed.
    let after = csv_rows(&second_log);
    assert!(
        after.len() >= 15,
        "the restarted receiver showed {}",
        after.len()
    );
    assert_eq!(
        after[0][5], "0000000000000000",
        "it starts from a keyframe: {:?}",
        after[0]
    );
}

/// One scheme's live run: receiver, relay and sender as processes, with their files.
struct LiveRun {
    scheme: &'static str,
    dir: PathBuf,
    send: Option<Child>,
    /// The relay and the receiver.
    others: Vec<(Child, &'static str)>,
}

impl LiveRun {
    /// Starts `scheme` sending for `seconds` through a relay; the receiver is told the scheme
    /// or learns it from the first datagram.
    fn start(scheme: &'static str, seconds: &str, receiver_told: bool) -> LiveRun {
        let dir = temp_dir(scheme);
        let (recv_addr, link_addr) = (free_addr(), free_addr());
        let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
        let (y4m, recv_log, send_log) = (path("out.y4m"), path("recv.csv"), path("send.csv"));
        let ivf = path("out.ivf");
        let bound = format!("{}", seconds.parse::<f64>().unwrap() + 5.0);
        let mut recv_args = vec![
            "recv",
            "--listen",
            &recv_addr,
            "-o",
            &y4m,
            "--ivf",
            &ivf,
            "--size",
            "160x96",
            "--log",
            &recv_log,
            "--duration",
            &bound,
            "-q",
        ];
        if receiver_told {
            recv_args.extend(["--scheme", scheme]);
        }
        // Every scheme's datagrams cross encrypted.
        let (recv_keys, send_keys) = keys(&dir);
        recv_args.extend(recv_keys.iter().map(String::as_str));
        let recv = salsify(&recv_args);
        let link = salsify(&[
            "link",
            "--listen",
            &link_addr,
            "--to",
            &recv_addr,
            "--link",
            "constant:3000",
            "--delay-ms",
            "10",
            "--duration",
            &bound,
        ]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut send_args = sender_args(&link_addr, &send_log, seconds);
        send_args.extend(["--scheme", scheme]);
        send_args.extend(send_keys.iter().map(String::as_str));
        LiveRun {
            scheme,
            dir,
            send: Some(salsify(&send_args)),
            others: vec![(link, "link"), (recv, "recv")],
        }
    }

    /// (frames shown, mean SSIM, worst SSIM) of the finished run.
    fn score(&self, stderr: &str) -> (usize, f64, f64) {
        let sent = pictures_sent(&self.dir.join("send.csv"));
        let shown = csv_rows(&self.dir.join("recv.csv"));
        assert!(
            !shown.is_empty(),
            "{}: no frame shown\n{stderr}",
            self.scheme
        );
        check_ivf(&self.dir.join("out.ivf"), &shown, self.scheme);
        let ssims = score(&self.dir.join("out.y4m"), &shown, &sent);
        let mean = ssims.iter().sum::<f64>() / ssims.len() as f64;
        let worst = ssims.iter().copied().fold(1.0, f64::min);
        (shown.len(), mean, worst)
    }
}

/// Every scheme that runs live crosses the relay and shows its source: all at once (small
/// pictures), so the suite stays short. Half the receivers learn the scheme, half are told it.
#[test]
fn every_live_scheme_crosses_the_relay_and_matches_its_source() {
    let mut live = vec![
        "salsify-2c",
        "salsify-1c",
        "conventional",
        "vidaptive",
        "sprout",
        "sprout-ewma",
    ];
    assert!(live.iter().all(|s| scheme_names().contains(s)));
    // And one live scheme of every other registered family (a built-in family added later included).
    for family in registry::families() {
        let first = family
            .schemes()
            .iter()
            .find(|s| s.runs == Runs::Anywhere && s.sends_video);
        if let Some(s) = first.filter(|s| !live.iter().any(|l| registry::same_family(l, s.name))) {
            live.push(s.name);
        }
    }
    let mut runs: Vec<LiveRun> = live
        .iter()
        .enumerate()
        .map(|(i, s)| LiveRun::start(s, "2", i % 2 == 1))
        .collect();
    let mut others = Vec::new();
    for run in &mut runs {
        finish(run.send.take().unwrap(), run.scheme);
        others.append(&mut run.others);
    }
    let stderr: String = stop_all(others)
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    let results: Vec<_> = runs.iter().map(|r| (r.scheme, r.score(&stderr))).collect();
    for (scheme, (shown, mean, worst)) in &results {
        assert!(
            *shown >= 20,
            "{scheme}: only {shown} frames shown in 2 s: {results:?}"
        );
        assert!(
            *mean > 0.85 && *worst > 0.5,
            "{scheme}: mean SSIM {mean:.3}, worst {worst:.3}: {results:?}"
        );
    }
}

/// A receiver told one scheme is not ended by a sender of another (anyone may send one): it
/// says so once, counts its datagrams, and still serves a sender of its own scheme.
#[test]
fn a_receiver_ignores_a_sender_of_another_scheme_and_names_both() {
    let dir = temp_dir("mismatch");
    let recv_addr = free_addr();
    let recv_log = dir.join("recv.csv");
    let recv = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--scheme",
        "conventional",
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "8",
        "-q",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let stranger_log = dir.join("stranger.csv");
    let stranger = salsify(&sender_args(
        &recv_addr,
        stranger_log.to_str().unwrap(),
        "1",
    ));
    finish(stranger, "the salsify sender");
    let send_log = dir.join("send.csv");
    let mut args = sender_args(&recv_addr, send_log.to_str().unwrap(), "2");
    args.extend(["--scheme", "conventional"]);
    finish(salsify(&args), "the conventional sender");
    let out = stop_all(vec![(recv, "recv")]).remove(0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sends salsify") && stderr.contains("runs conventional"),
        "{stderr}"
    );
    assert!(stderr.contains("of another scheme"), "{stderr}");
    let shown = csv_rows(&recv_log);
    assert!(
        shown.len() >= 10,
        "only {} frames shown: {stderr}",
        shown.len()
    );
}

/// Feedback lost on the way back: the sender starts a fresh session (keyframe) every
/// `--reset-after`, and the receiver follows each at once (the new stream's datagrams go to a
/// successor that takes over with its keyframe), rather than after its session timeout.
#[test]
fn a_receiver_follows_its_senders_restarts_at_once() {
    let dir = temp_dir("follow");
    let (recv_addr, link_addr) = (free_addr(), free_addr());
    let recv_log = dir.join("recv.csv");
    let recv = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "4.5",
        "-q",
    ]);
    let link = salsify(&[
        "link",
        "--listen",
        &link_addr,
        "--to",
        &recv_addr,
        "--link",
        "constant:3000",
        "--delay-ms",
        "10",
        "--ack-loss",
        "1",
        "--duration",
        "4.5",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let send_log = dir.join("send.csv");
    let mut args = sender_args(&link_addr, send_log.to_str().unwrap(), "2.5");
    args.extend(["--reset-after", "0.5"]);
    finish(salsify(&args), "send");
    stop_all(vec![(link, "link"), (recv, "recv")]);
    let shown = csv_rows(&recv_log);
    let sessions: std::collections::BTreeSet<u32> =
        shown.iter().map(|r| r[0].parse().unwrap()).collect();
    // A session every 0.5 s for 2.5 s; waiting out the 2 s timeout would allow at most 2.
    assert!(sessions.len() >= 4, "sessions {sessions:?}");
    for session in &sessions {
        let first = shown.iter().find(|r| r[0] == session.to_string()).unwrap();
        assert_eq!(
            first[8], "1",
            "session {session} starts with a keyframe: {first:?}"
        );
    }
}

/// `salsify recv` on `addr` for `seconds`, logging shown frames to `log`, with `keys`.
fn keyed_recv(addr: &str, log: &Path, seconds: &str, keys: &[String]) -> Child {
    let mut args = vec![
        "recv",
        "--listen",
        addr,
        "--log",
        log.to_str().unwrap(),
        "--duration",
        seconds,
        "-q",
    ];
    args.extend(keys.iter().map(String::as_str));
    salsify(&args)
}

/// A receiver with keys shows nothing from a sender with another key pair (which knows the
/// receiver's public key) or with none, and says why; its own sender gets through.
#[test]
fn strangers_without_the_key_get_no_frame_shown() {
    let dir = temp_dir("stranger");
    let (recv_keys, send_keys) = keys(&dir);
    let stranger_dir = dir.join("stranger");
    std::fs::create_dir_all(&stranger_dir).unwrap();
    let (_, mut stranger_keys) = keys(&stranger_dir);
    stranger_keys[3] = dir.join("recv.pub").to_str().unwrap().to_string();
    let recv_addr = free_addr();
    let recv_log = dir.join("recv.csv");
    let recv = keyed_recv(&recv_addr, &recv_log, "8", &recv_keys);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (stranger_log, plain_log) = (dir.join("stranger.csv"), dir.join("plain.csv"));
    let mut stranger = sender_args(&recv_addr, stranger_log.to_str().unwrap(), "2");
    stranger.extend(stranger_keys.iter().map(String::as_str));
    let stranger = salsify(&stranger);
    let plain = salsify(&sender_args(&recv_addr, plain_log.to_str().unwrap(), "2"));
    // The stranger's handshakes go unanswered: it delivered nothing, and says so.
    let refused = stranger.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("never answered the handshake"), "{said}");
    finish(plain, "plaintext sender");
    let shown_to_strangers = csv_rows(&recv_log).len();
    let send_log = dir.join("send.csv");
    let mut good = sender_args(&recv_addr, send_log.to_str().unwrap(), "2");
    good.extend(send_keys.iter().map(String::as_str));
    finish(salsify(&good), "send");
    let out = stop_all(vec![(recv, "recv")]).remove(0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(shown_to_strangers, 0, "{stderr}");
    let shown = csv_rows(&recv_log);
    assert!(
        shown.len() >= 20,
        "only {} frames shown\n{stderr}",
        shown.len()
    );
    assert!(stderr.contains("handshake refused"), "{stderr}");
    assert!(
        stderr.contains("not an encrypted Salsify datagram"),
        "{stderr}"
    );
    // Rate-limited: a few lines, not one per refused datagram.
    assert!(stderr.lines().count() < 20, "{stderr}");
}

/// Sends `count` forged datagrams to `to` from a stranger's socket, about 30,000 a second:
/// the session's own datagrams recorded by `tap` replayed, with a bit flipped, truncated,
/// and made-up ones (handshake inits, data for random session ids, garbage).
fn forged_flood(to: &str, tap: &Tap, count: u64) -> u64 {
    let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sent = 0;
    while sent < count {
        let recorded = {
            let seen = tap.seen.lock().unwrap();
            seen.get(rand() as usize % seen.len().max(1)).cloned()
        };
        let r = rand();
        let datagram = match (sent % 4, recorded) {
            (0, Some(d)) => d,
            (1, Some(mut d)) => {
                let bit = r as usize % (d.len() * 8);
                d[bit / 8] ^= 1 << (bit % 8);
                d
            }
            (2, Some(mut d)) => {
                d.truncate(r as usize % d.len());
                d
            }
            _ => {
                let kind = [0xE1u8, 0xE3, 0x01, 0xB1][(r % 4) as usize];
                let len = [61usize, 1000, 500, 300][(r % 4) as usize];
                let mut d: Vec<u8> = (0..len).map(|i| (r >> (i % 56)) as u8).collect();
                d[0] = kind;
                d
            }
        };
        let _ = flooder.send_to(&datagram, to);
        sent += 1;
        if sent % 100 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    sent
}

/// Frames shown by a receiver (its log) with display times within `[from, to]` µs.
fn shown_between(log: &Path, from: u64, to: u64) -> usize {
    csv_rows(log)
        .iter()
        .filter(|r| (from..=to).contains(&r[2].parse::<u64>().unwrap()))
        .count()
}

/// The bar: 100,000 forged datagrams (replays, bit flips, truncations of the session's own
/// datagrams, made-up handshakes and data) flooding a live encrypted session leave its
/// frames-shown rate within 5% of an identical session's, run side by side at the same
/// time (so machine load hits both alike).
#[test]
fn a_flood_of_forged_datagrams_leaves_an_encrypted_sessions_frame_rate() {
    let dir = temp_dir("secure-flood");
    let (recv_keys, send_keys) = keys(&dir);
    let mut runs = Vec::new();
    for name in ["clean", "flooded"] {
        let recv_addr = free_addr();
        let tap = Tap::start(&recv_addr, Keep::Newest(64));
        let recv_log = dir.join(format!("{name}-recv.csv"));
        let recv = keyed_recv(&recv_addr, &recv_log, "12", &recv_keys);
        runs.push((name, recv, tap, recv_addr, recv_log));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let senders: Vec<Child> = runs
        .iter()
        .map(|(name, _, tap, _, _)| {
            let log = dir.join(format!("{name}-send.csv"));
            let mut args = sender_args(&tap.addr, log.to_str().unwrap(), "6");
            args.extend(send_keys.iter().map(String::as_str));
            salsify(&args)
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let start = salsify_runtime::clock::now().as_micros();
    let (_, _, tap, recv_addr, _) = &runs[1];
    let sent = forged_flood(recv_addr, tap, 100_000);
    let end = salsify_runtime::clock::now().as_micros();
    for s in senders {
        finish(s, "send");
    }
    let mut recvs = Vec::new();
    let mut logs = Vec::new();
    for (name, recv, tap, _, log) in runs {
        recvs.push((recv, name));
        logs.push(log);
        drop(tap);
    }
    let outputs = stop_all(recvs);
    let flooded_stderr = String::from_utf8_lossy(&outputs[1].stderr);
    let seconds = (end - start) as f64 / 1e6;
    let clean = shown_between(&logs[0], start, end) as f64 / seconds;
    let flooded = shown_between(&logs[1], start, end) as f64 / seconds;
    eprintln!(
        "{sent} forged datagrams in {seconds:.2} s: clean {clean:.1} frames/s, flooded \
         {flooded:.1} frames/s, ratio {:.3}",
        flooded / clean
    );
    assert_eq!(sent, 100_000);
    assert!(clean >= 15.0, "the clean session shows {clean:.1} frames/s");
    assert!(
        flooded >= 0.95 * clean,
        "flooded {flooded:.1} vs clean {clean:.1} frames/s\n{flooded_stderr}"
    );
    let sessions: std::collections::HashSet<String> = csv_rows(&logs[1])
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(sessions.len(), 1, "the flood started no session");
    assert!(flooded_stderr.contains("replayed"), "{flooded_stderr}");
    assert!(
        flooded_stderr.contains("failed authentication"),
        "{flooded_stderr}"
    );
}
