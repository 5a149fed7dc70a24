//! End-to-end tests of the real-time runtime: `salsify recv`, `link` and `send` as separate
//! processes on loopback, small pictures, a few seconds each. Assertions are generous floors
//! (frames shown, SSIM against the source), never timings.

use std::collections::HashMap;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use salsify_codec::frame::parse_vp8_header;
use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::Y4mReader;
use salsify_codec::{Image, IvfReader, PlainDecoder};
use salsify_eval::metrics::ssim_luma;
use salsify_schemes::SCHEMES;
use salsify_transport::wire::DataFragment;

const SIZE: (u32, u32) = (160, 96);
const FPS: u32 = 30;

fn salsify(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_salsify"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the salsify binary runs")
}

fn finish(child: Child, what: &str) -> Output {
    let out = child.wait_with_output().expect("wait for salsify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed: {}\n{stderr}",
        out.status
    );
    out
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

/// A loopback address with a port free right now.
fn free_addr() -> String {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().to_string()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("salsify-rt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    assert_eq!(
        header.frame_count as usize,
        frames.len(),
        "{what}: IVF header count"
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
    let recv = salsify(&[
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
    ]);
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
    let send = salsify(&sender_args(&link_addr, send_log.to_str().unwrap(), "4"));
    finish(send, "send");
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
    let recv_addr = free_addr();
    let recv_log = dir.join("recv.csv");
    let recv = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        recv_log.to_str().unwrap(),
        "--duration",
        "6",
        "--session-timeout",
        "1",
        "-q",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let first_log = dir.join("send1.csv");
    let first = salsify(&sender_args(&recv_addr, first_log.to_str().unwrap(), "2"));
    finish(first, "first send");
    let second_log = dir.join("send2.csv");
    let second = salsify(&sender_args(&recv_addr, second_log.to_str().unwrap(), "3"));
    finish(second, "second send");
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
    let cases: [(&[&str], &str); 9] = [
        (&["recv", "--listen", "nonsense"], "not a usable HOST:PORT"),
        (
            &["recv", "--listen", "127.0.0.1:0", "-o", "-", "--ivf", "-"],
            "both write to standard output",
        ),
        (&["recv", "--listen", &busy_addr, "--duration", "1"], "busy"),
        (
            &[
                "send",
                "--to",
                "127.0.0.1:9",
                "--input",
                "/nonexistent/x.y4m",
            ],
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
            "preset",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--scheme", "oracle"],
            "the oracle reads the link's future and runs only in the simulator",
        ),
        (
            &["recv", "--listen", "127.0.0.1:0", "--scheme", "oracle"],
            "runs only in the simulator",
        ),
        (
            &["send", "--to", "127.0.0.1:9", "--scheme", "webrtc"],
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
            "--delay-target-ms applies to the salsify schemes",
        ),
    ];
    for (args, message) in cases {
        let out = salsify(args).wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_restarted_receiver_gets_a_keyframe_without_help() {
    let dir = temp_dir("recv-restart");
    let recv_addr = free_addr();
    let (first_log, second_log) = (dir.join("recv1.csv"), dir.join("recv2.csv"));
    let first = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        first_log.to_str().unwrap(),
        "--duration",
        "2",
        "-q",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let send_log = dir.join("send.csv");
    let send = salsify(&sender_args(&recv_addr, send_log.to_str().unwrap(), "6"));
    finish(first, "first recv");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let second = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--log",
        second_log.to_str().unwrap(),
        "--duration",
        "3.5",
        "-q",
    ]);
    finish(second, "second recv");
    finish(send, "send");
    let (before, after) = (csv_rows(&first_log), csv_rows(&second_log));
    assert!(before.len() >= 15, "first receiver showed {}", before.len());
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

/// Every scheme that runs live crosses the relay and shows its source: the four at once (small
/// pictures), so the suite stays short. Two receivers learn the scheme, two are told it.
#[test]
fn every_live_scheme_crosses_the_relay_and_matches_its_source() {
    let live = ["salsify-2c", "salsify-1c", "conventional", "vidaptive"];
    assert!(live.iter().all(|s| SCHEMES.contains(s)));
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

/// A receiver told one scheme stops at the first datagram of another, naming both.
#[test]
fn a_receiver_refuses_a_sender_of_another_scheme_by_name() {
    let dir = temp_dir("mismatch");
    let recv_addr = free_addr();
    let recv = salsify(&[
        "recv",
        "--listen",
        &recv_addr,
        "--scheme",
        "conventional",
        "--duration",
        "5",
        "-q",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let send_log = dir.join("send.csv");
    let send = salsify(&sender_args(&recv_addr, send_log.to_str().unwrap(), "1"));
    let started = std::time::Instant::now();
    let out = recv.wait_with_output().unwrap();
    finish(send, "send");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("sends salsify") && stderr.contains("runs conventional"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "it stops at once"
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
