//! The window (`--display`) and the screen input (`--input x11grab:`) under Xvfb, a virtual
//! X server: a screenshot of the window compared with the decoded picture, closing the
//! window ending the session with its files kept, a screen grabbed live end to end, and the
//! error without a display.
//!
//! Needs Xvfb, xdotool and ffmpeg (`scripts/setup --x11-tests`, which `scripts/test` runs).
//! Without Xvfb the tests that need it say so and pass, unless CI=true or
//! SALSIFY_REQUIRE_XVFB=1 (set by `scripts/test`), when its absence fails them. Each test
//! starts its own Xvfb on a free display number and stops it (by its process id) at the end.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::{Rational, Y4mHeader, Y4mReader, Y4mWriter};
use salsify_codec::Image;
use salsify_eval::metrics::ssim_luma;

/// Screen and picture size: the window fills the virtual screen exactly.
mod support;

use support::{finish, free_addr, SALSIFY};

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("x11", name)
}

const SIZE: (u32, u32) = (320, 240);

/// A virtual X server of the test's own, stopped when dropped.
struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn required() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
        || std::env::var("SALSIFY_REQUIRE_XVFB").as_deref() == Ok("1")
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Starts Xvfb with a `SIZE` screen, or `None` (the test is skipped) when it is not installed
/// and not required.
fn xvfb(test: &str) -> Option<Xvfb> {
    let missing: Vec<&str> = ["Xvfb", "ffmpeg", "xdotool"]
        .into_iter()
        .filter(|p| !have(p))
        .collect();
    if !missing.is_empty() {
        assert!(
            !required(),
            "{test}: {missing:?} required (CI=true or SALSIFY_REQUIRE_XVFB=1) but not installed: scripts/setup --x11-tests"
        );
        eprintln!("{test}: skipped: {missing:?} not installed (scripts/setup --x11-tests)");
        return None;
    }
    // -displayfd 1: Xvfb picks a free display number and writes it on standard output.
    let mut child = Command::new("Xvfb")
        .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0"])
        .arg(format!("{}x{}x24", SIZE.0, SIZE.1))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("Xvfb starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("Xvfb names its display");
    let number = line.trim();
    assert!(!number.is_empty(), "Xvfb did not start");
    Some(Xvfb {
        child,
        display: format!(":{number}"),
    })
}

fn salsify(display: Option<&str>, args: &[&str]) -> Child {
    let mut c = Command::new(SALSIFY);
    c.args(args)
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("SDL_VIDEODRIVER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match display {
        Some(d) => c.env("DISPLAY", d),
        None => c.env_remove("DISPLAY"),
    };
    c.spawn().expect("the salsify binary runs")
}

fn read_y4m(path: &Path) -> Vec<Image> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = Y4mReader::new(BufReader::new(file)).unwrap();
    let mut frames = vec![];
    while let Some(f) = reader.next_frame().unwrap() {
        frames.push(f);
    }
    frames
}

fn write_y4m(path: &Path, pictures: &[Image]) {
    let header = Y4mHeader::new(SIZE.0, SIZE.1, Rational::new(30, 1));
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = Y4mWriter::new(file, header).unwrap();
    for p in pictures {
        w.write_frame(p).unwrap();
    }
    w.finish().unwrap();
}

/// A screenshot of the whole virtual screen (no pointer), as I420 through ffmpeg's x11grab.
fn screenshot(x: &Xvfb, dir: &Path) -> Image {
    let path = dir.join("screenshot.y4m");
    let out = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-nostdin",
            "-y",
            "-f",
            "x11grab",
            "-draw_mouse",
            "0",
        ])
        .args(["-video_size", &format!("{}x{}", SIZE.0, SIZE.1)])
        .args(["-i", &x.display, "-frames:v", "1", "-pix_fmt", "yuv420p"])
        .arg(&path)
        .output()
        .expect("ffmpeg runs");
    assert!(
        out.status.success(),
        "screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    read_y4m(&path).remove(0)
}

fn picture(seed: u64) -> Image {
    SyntheticSource::new(SIZE.0, SIZE.1, 30, seed)
        .unwrap()
        .frame(0)
}

/// The window shows the decoded picture: a still picture is sent (looped), and a screenshot
/// of the window matches the last picture the receiver decoded (luma SSIM after the
/// window's YUV->RGB and ffmpeg's RGB->YUV), while a different picture does not.
#[test]
fn the_window_shows_the_decoded_picture() {
    let Some(x) = xvfb("the_window_shows_the_decoded_picture") else {
        return;
    };
    let dir = temp_dir("shown");
    let still = dir.join("still.y4m");
    write_y4m(&still, &[picture(1)]);
    let addr = free_addr();
    let out = dir.join("out.y4m");
    let recv = salsify(
        Some(&x.display),
        &[
            "recv",
            "--listen",
            &addr,
            "--display",
            "--size",
            "320x240",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "4",
            "-q",
        ],
    );
    let send = salsify(
        None,
        &[
            "send",
            "--to",
            &addr,
            "--input",
            still.to_str().unwrap(),
            "--loop",
            "--duration",
            "4",
            "-q",
        ],
    );
    // Long enough for the quantizer to settle on the still picture.
    std::thread::sleep(Duration::from_millis(3000));
    let shot = screenshot(&x, &dir);
    let recv = finish(recv, "salsify recv --display");
    finish(send, "salsify send");
    let stderr = String::from_utf8_lossy(&recv.stderr);
    assert!(stderr.contains("window:"), "{stderr}");
    let decoded = read_y4m(&out);
    assert!(
        decoded.len() >= 30,
        "only {} pictures decoded",
        decoded.len()
    );
    let last = decoded.last().unwrap();
    let same = ssim_luma(&shot, last).unwrap();
    let other = ssim_luma(&shot, &picture(2)).unwrap();
    let black = ssim_luma(&shot, &Image::new(SIZE.0, SIZE.1).unwrap()).unwrap();
    eprintln!(
        "screenshot vs decoded: SSIM {same:.4}; vs another picture {other:.4}; vs black {black:.4}"
    );
    assert!(
        same > 0.9,
        "the window does not show the decoded picture: SSIM {same:.4}"
    );
    assert!(
        other < 0.6,
        "another picture passes the comparison: SSIM {other:.4}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pressing q in the window (as closing it) ends `salsify recv` like Ctrl-C: exit 0, the
/// summary printed, and its Y4M and IVF outputs complete.
#[test]
fn closing_the_window_ends_the_session_and_keeps_the_files() {
    let Some(x) = xvfb("closing_the_window_ends_the_session_and_keeps_the_files") else {
        return;
    };
    let dir = temp_dir("close");
    let addr = free_addr();
    let (y4m, ivf) = (dir.join("out.y4m"), dir.join("out.ivf"));
    let recv = salsify(
        Some(&x.display),
        &[
            "recv",
            "--listen",
            &addr,
            "--display",
            "-o",
            y4m.to_str().unwrap(),
            "--ivf",
            ivf.to_str().unwrap(),
            "--duration",
            "30",
            "-q",
        ],
    );
    let send = salsify(
        None,
        &[
            "send",
            "--to",
            &addr,
            "--size",
            "320x240",
            "--duration",
            "30",
            "-q",
        ],
    );
    std::thread::sleep(Duration::from_millis(2000));
    let start = Instant::now();
    let key = Command::new("xdotool")
        .args([
            "search",
            "--sync",
            "--name",
            "salsify recv",
            "windowfocus",
            "--sync",
            "key",
            "q",
        ])
        .env("DISPLAY", &x.display)
        .output()
        .expect("xdotool runs");
    assert!(
        key.status.success(),
        "xdotool: {}",
        String::from_utf8_lossy(&key.stderr)
    );
    let recv = finish(recv, "salsify recv --display (closed)");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "recv did not stop when closed"
    );
    let mut send = send;
    let _ = send.kill();
    let _ = send.wait();
    let stderr = String::from_utf8_lossy(&recv.stderr);
    assert!(stderr.contains("closed by the user"), "{stderr}");
    let shown: u64 = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("salsify recv: ")?
                .split(" frames shown")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no summary line: {stderr}"));
    let pictures = read_y4m(&y4m);
    assert!(shown >= 10, "{shown} frames shown");
    assert_eq!(pictures.len() as u64, shown, "the Y4M output lost pictures");
    let reader = salsify_codec::IvfReader::new(std::fs::File::open(&ivf).unwrap()).unwrap();
    let length = u64::from(reader.header().frame_count);
    let frames: Vec<u64> = reader.map(|f| f.unwrap().pts).collect();
    assert_eq!(frames.len() as u64, shown, "the IVF output lost frames");
    assert_eq!(
        length,
        frames.last().map_or(0, |p| p + 1),
        "the IVF header was not finished"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A screen grabbed live: ffplay plays a barcoded moving clip on the virtual screen, `salsify
/// send --input x11grab:` grabs it through ffmpeg, and the receiver's pictures have the
/// screen's size, carry the clip's barcodes (many different ones: it moves) and match the
/// clip's pictures of those ids.
#[test]
fn a_grabbed_screen_arrives_end_to_end() {
    let Some(x) = xvfb("a_grabbed_screen_arrives_end_to_end") else {
        return;
    };
    let dir = temp_dir("grab");
    let clip = dir.join("clip.y4m");
    let made = Command::new(SALSIFY)
        .args([
            "barcode",
            "--input",
            "synthetic",
            "--size",
            "320x240",
            "--frames",
            "90",
            "-o",
        ])
        .arg(&clip)
        .output()
        .unwrap();
    assert!(made.status.success());
    let source = read_y4m(&clip);
    let mut player = Command::new("ffplay")
        .args([
            "-v",
            "error",
            "-noborder",
            "-left",
            "0",
            "-top",
            "0",
            "-loop",
            "0",
            "-an",
        ])
        .arg(&clip)
        .env("DISPLAY", &x.display)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("ffplay runs");
    std::thread::sleep(Duration::from_millis(700));
    assert!(player.try_wait().unwrap().is_none(), "ffplay did not start");
    let addr = free_addr();
    let out = dir.join("out.y4m");
    let recv = salsify(
        None,
        &[
            "recv",
            "--listen",
            &addr,
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "5",
            "-q",
        ],
    );
    let send = salsify(
        Some(&x.display),
        &[
            "send",
            "--to",
            &addr,
            "--input",
            "x11grab:",
            "--size",
            "320x240",
            "--fps",
            "30",
            "--duration",
            "3",
            "-q",
        ],
    );
    finish(send, "salsify send --input x11grab:");
    let _ = Command::new("kill")
        .args(["-TERM", &recv.id().to_string()])
        .status();
    finish(recv, "salsify recv");
    let _ = player.kill();
    let _ = player.wait();

    let received = read_y4m(&out);
    assert!(
        received.len() >= 30,
        "only {} pictures arrived",
        received.len()
    );
    assert_eq!((received[0].width(), received[0].height()), SIZE);
    let mut ids = std::collections::BTreeSet::new();
    let mut ssims = vec![];
    for p in &received {
        if let Ok(id) = salsify_barcode::read(p) {
            ids.insert(id);
            ssims.push(
                salsify_barcode::ssim_outside_band(&source[id as usize], p)
                    .unwrap()
                    .ssim,
            );
        }
    }
    assert!(
        ssims.len() * 10 >= received.len() * 8,
        "{} of {} barcodes readable",
        ssims.len(),
        received.len()
    );
    assert!(
        ids.len() >= 20,
        "the grabbed screen hardly moved: ids {ids:?}"
    );
    ssims.sort_by(f64::total_cmp);
    let median = ssims[ssims.len() / 2];
    eprintln!(
        "{} pictures, {} ids, median SSIM against the clip {median:.3}",
        received.len(),
        ids.len()
    );
    assert!(
        median > 0.8,
        "grabbed pictures do not match the clip: median SSIM {median:.3}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--display` with no display is a clear error before anything runs, for recv and demo, and
/// so is a display that is named but not there.
#[test]
fn display_without_a_display_is_a_clear_error() {
    for args in [
        vec![
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--display",
            "--duration",
            "5",
        ],
        vec!["demo", "--display", "--duration", "5", "--out"],
    ] {
        let mut args = args;
        let out_dir = temp_dir("nodisplay");
        let out_str = out_dir.to_str().unwrap().to_string();
        if args.last() == Some(&"--out") {
            args.push(&out_str);
        }
        let out = salsify(None, &args).wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no display to open a window on"),
            "{stderr}"
        );
        assert!(stderr.contains("xvfb-run"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let _ = std::fs::remove_dir_all(&out_dir);
    }
    // A display named but not there: SDL's own error, not an invisible window.
    let args = [
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--display",
        "--duration",
        "5",
    ];
    let out = salsify(Some(":59999"), &args).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot open a window on DISPLAY=:59999"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `salsify demo --display` (monitor moved off the main thread, window on it) runs to its end
/// under Xvfb, shows pictures in the window and reports what it showed and dropped.
#[test]
fn the_demo_shows_its_video_in_a_window() {
    let Some(x) = xvfb("the_demo_shows_its_video_in_a_window") else {
        return;
    };
    let dir = temp_dir("demo");
    let demo = salsify(
        Some(&x.display),
        &[
            "demo",
            "--display",
            "--size",
            "320x240",
            "--duration",
            "3",
            "--no-ssim",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    let out = finish(demo, "salsify demo --display");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("salsify demo: window: "))
        .unwrap_or_else(|| panic!("no window line: {stderr}"));
    let shown: u64 = line["salsify demo: window: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(shown >= 10, "{line}");
    assert!(dir.join("received.ivf").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The mean luma of `w`x`h` pixels of `image` from (`x`, `y`).
fn mean_luma(image: &Image, (x, y, w, h): (usize, usize, usize, usize)) -> f64 {
    let plane = image.y();
    let sum: u64 = (y..y + h)
        .flat_map(|r| plane.row(r)[x..x + w].iter().map(|&v| u64::from(v)))
        .sum();
    sum as f64 / (w * h) as f64
}

/// Root-mean-square of 16-bit mono samples `from..to` seconds into a 48 kHz WAV.
fn rms(wav: &Path, from: f64, to: f64) -> f64 {
    let bytes = std::fs::read(wav).unwrap_or_else(|e| panic!("{}: {e}", wav.display()));
    let data = bytes
        .windows(4)
        .position(|w| w == b"data")
        .expect("a data chunk")
        + 8;
    let samples: Vec<f64> = bytes[data..]
        .chunks_exact(2)
        .map(|c| f64::from(i16::from_le_bytes([c[0], c[1]])))
        .collect();
    let (a, b) = ((from * 48_000.0) as usize, (to * 48_000.0) as usize);
    let part = &samples[a.min(samples.len())..b.min(samples.len())];
    assert!(
        !part.is_empty(),
        "{}: no samples in {from}-{to} s",
        wav.display()
    );
    (part.iter().map(|s| s * s).sum::<f64>() / part.len() as f64).sqrt()
}

/// A call's window shows the peer's video with this side's own pictures small in its
/// bottom-right corner; `v` turns the camera off (the peer then gets black pictures, the
/// preview goes black, the title says so) and `m` the microphone (the peer hears silence).
#[test]
fn a_calls_window_previews_its_own_pictures_and_its_keys_mute_and_blank() {
    let Some(x) = xvfb("a_calls_window_previews_its_own_pictures_and_its_keys_mute_and_blank")
    else {
        return;
    };
    let dir = temp_dir("call-keys");
    let addr = free_addr();
    let peer_out = dir.join("peer");
    let size = format!("{}x{}", SIZE.0, SIZE.1);
    let side = salsify(
        Some(&x.display),
        &[
            "call",
            "--listen",
            &addr,
            "--display",
            "--size",
            &size,
            "--audio",
            "synthetic",
            "--duration",
            "12",
            "-q",
        ],
    );
    let peer = salsify(
        None,
        &[
            "call",
            "--to",
            &addr,
            "--size",
            &size,
            "--audio",
            "synthetic",
            "--out",
            peer_out.to_str().unwrap(),
            "--duration",
            "12",
            "-q",
        ],
    );
    std::thread::sleep(Duration::from_millis(3500));
    let before = screenshot(&x, &dir);
    let press = |keys: &[&str]| {
        let mut args = vec![
            "search",
            "--sync",
            "--name",
            "salsify call",
            "windowfocus",
            "--sync",
        ];
        args.push("key");
        args.extend_from_slice(keys);
        let out = Command::new("xdotool")
            .args(&args)
            .env("DISPLAY", &x.display)
            .output()
            .expect("xdotool runs");
        assert!(
            out.status.success(),
            "xdotool: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let pressed = Instant::now();
    press(&["v", "m"]);
    std::thread::sleep(Duration::from_millis(2000));
    let after = screenshot(&x, &dir);
    let title = Command::new("xdotool")
        .args(["search", "--name", "microphone off, camera off"])
        .env("DISPLAY", &x.display)
        .output()
        .expect("xdotool runs");
    let side = finish(side, "salsify call --display");
    finish(peer, "salsify call (the peer)");
    assert!(
        title.status.success(),
        "the title does not say the microphone and camera are off: {}",
        String::from_utf8_lossy(&side.stderr)
    );
    // The preview: a quarter of the width, in the bottom-right corner (inside its margin).
    let (w, h) = (SIZE.0 as usize / 4, SIZE.1 as usize / 4);
    let margin = (SIZE.0 as f64 * 0.02).round() as usize;
    let corner = (
        SIZE.0 as usize - w - margin + 4,
        SIZE.1 as usize - h - margin + 4,
        w - 8,
        h - 8,
    );
    let middle = (SIZE.0 as usize / 4, SIZE.1 as usize / 4, w, h);
    let (corner_before, corner_after) = (mean_luma(&before, corner), mean_luma(&after, corner));
    let middle_after = mean_luma(&after, middle);
    eprintln!(
        "preview luma {corner_before:.1} -> {corner_after:.1} after `v`; the peer's picture {middle_after:.1}"
    );
    assert!(
        corner_after < 20.0,
        "the preview is not black: {corner_after:.1}"
    );
    assert!(
        corner_before > 30.0,
        "no preview before `v`: {corner_before:.1}"
    );
    assert!(
        middle_after > 30.0,
        "the peer's picture went dark too: {middle_after:.1}"
    );
    // What the peer got: black pictures at the end, silence after the keys.
    let y4m = dir.join("peer.y4m");
    let ffmpeg = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-i"])
        .arg(peer_out.join("received.ivf"))
        .arg(&y4m)
        .output()
        .expect("ffmpeg runs");
    assert!(
        ffmpeg.status.success(),
        "{}",
        String::from_utf8_lossy(&ffmpeg.stderr)
    );
    let decoded = read_y4m(&y4m);
    let full = (0, 0, SIZE.0 as usize, SIZE.1 as usize);
    let (first, last) = (
        mean_luma(&decoded[decoded.len() / 10], full),
        mean_luma(decoded.last().unwrap(), full),
    );
    let since_keys = pressed.elapsed().as_secs_f64(); // the WAV ends with the call
    let wav = peer_out.join("audio.wav");
    let (loud, quiet) = (
        rms(&wav, 1.0, 3.0),
        rms(&wav, 12.0 - since_keys + 1.5, 10.5),
    );
    eprintln!(
        "the peer's pictures: luma {first:.1} -> {last:.1}; its audio RMS {loud:.0} -> {quiet:.0}"
    );
    assert!(
        first > 30.0 && last < 20.0,
        "pictures {first:.1} -> {last:.1}"
    );
    assert!(
        loud > 300.0 && quiet < loud / 20.0,
        "audio RMS {loud:.0} -> {quiet:.0}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
