//! The bar for black-box measurement: a 10 s 640x360 Chromium call through the link relay,
//! where nearly every presented picture matches a barcode (and its content matches the
//! barcode's source picture) at a high mean SSIM; and the same call scored against a source
//! shifted by three frames, where the match fails.
//!
//! Needs Debian's `chromium` (`scripts/setup --peers`, which `scripts/test` runs). Without
//! it the tests say so and pass, unless SALSIFY_REQUIRE_CHROMIUM=1 (set by `scripts/test`),
//! when its absence fails them. The source is real camera content (FourPeople, scaled to
//! 640x360 at 30 fps by ffmpeg) when /work/shared/video and ffmpeg are there; otherwise
//! the built-in synthetic source, whose sensor noise VP8 cannot code well at Chrome's
//! 1.7 Mb/s cap for 360p (SSIM about 0.87, ffmpeg's libvpx gives 0.79 at that rate), so
//! its SSIM bar is 0.8.

mod support;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use support::chromium_available;

const SALSIFY: &str = env!("CARGO_BIN_EXE_salsify");

/// One browser at a time: a second one would compete with the measured call for the CPU.
static BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tests done with the recorded call; the last one removes it (a failing test leaves it for
/// a look).
static DONE: AtomicUsize = AtomicUsize::new(0);
const TESTS: usize = 2;

fn done_with(call: &Path) {
    if DONE.fetch_add(1, Ordering::SeqCst) + 1 == TESTS {
        if let Some(dir) = call.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The recorded call's folder and the SSIM bar its content allows, or `None` (skipped).
fn recorded_call() -> Option<&'static (PathBuf, f64)> {
    static CALL: OnceLock<Option<(PathBuf, f64)>> = OnceLock::new();
    CALL.get_or_init(|| {
        if !chromium_available() {
            assert!(
                std::env::var("SALSIFY_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
                "Chromium is required (SALSIFY_REQUIRE_CHROMIUM=1) but not installed: scripts/setup --peers"
            );
            println!("note: Chromium not installed (scripts/setup --peers); test skipped");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("salsify-peer-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (input, ssim_bar) = match real_clip(&dir) {
            Some(clip) => (clip, 0.9),
            None => {
                println!("note: no real clip (/work/shared/video + ffmpeg): synthetic source, SSIM bar 0.8");
                ("synthetic".to_string(), 0.8)
            }
        };
        let out = dir.join("call");
        let _browser = one_browser();
        let status = Command::new(SALSIFY)
            .args(["peer", "chromium", "--input", &input, "--size", "640x360"])
            .args(["--duration", "10", "--link", "constant:4000", "--delay-ms", "20"])
            .arg("--out")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "salsify peer chromium failed: {status}");
        Some((out, ssim_bar))
    })
    .as_ref()
}

/// The paper's picture size: a 1280x720 call at 30 fps (Chrome's sender told to keep the
/// resolution: by default it starts at 640x360 and a short call never leaves it), where at
/// least 95 % of the presented pictures the page recorded match their barcodes, every one of
/// them 1280x720. Presentations the page could not record on a busy machine are printed, and
/// bounded loosely (at most a quarter), not held to 95 %: they measure the machine.
#[test]
fn a_1280x720_call_matches_its_barcodes() {
    if !chromium_available() {
        println!("note: Chromium not installed (scripts/setup --peers); test skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("salsify-peer-720p-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = clip_at(&dir, 1280, 720).unwrap_or_else(|| {
        println!("note: no real clip (/work/shared/video + ffmpeg): synthetic source");
        "synthetic".to_string()
    });
    let out = dir.join("call");
    let _browser = one_browser();
    let status = Command::new(SALSIFY)
        .args(["peer", "chromium", "--input", &input, "--size", "1280x720"])
        .args([
            "--duration",
            "8",
            "--link",
            "constant:12000",
            "--delay-ms",
            "20",
        ])
        .args(["--degradation-preference", "maintain-resolution"])
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "salsify peer chromium failed: {status}");
    let m = match_json(&out);
    println!("{m:#}");
    let shown = m["shown"].as_u64().unwrap();
    let matched = m["shown_matched"].as_u64().unwrap();
    let missed = m["presentations_missed"].as_u64().unwrap();
    println!(
        "1280x720: {matched} of {shown} recorded presentations matched; {missed} presentations not recorded ({:.1} % of all matched)",
        100.0 * matched as f64 / (shown + missed).max(1) as f64
    );
    assert!(
        shown >= 150,
        "only {shown} presented pictures recorded in 8 s"
    );
    assert!(
        matched as f64 >= 0.95 * shown as f64,
        "{matched} of {shown}"
    );
    assert!(
        missed * 4 <= shown + missed,
        "{missed} of {} not recorded",
        shown + missed
    );
    let sizes = std::fs::read_to_string(out.join("shown.csv")).unwrap();
    let small = sizes
        .lines()
        .skip(1)
        .filter(|l| !l.contains(",1280,720,"))
        .count();
    assert_eq!(small, 0, "pictures shown below 1280x720");
    assert_loopback_only(&out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// FourPeople scaled to 640x360 at 30 fps, 150 frames, if the clip and ffmpeg are here.
fn real_clip(dir: &Path) -> Option<String> {
    clip_at(dir, 640, 360)
}

/// FourPeople scaled to `width` x `height` at 30 fps, 150 frames, if the clip and ffmpeg are
/// here.
fn clip_at(dir: &Path, width: u32, height: u32) -> Option<String> {
    let videos = std::env::var_os("SALSIFY_VIDEO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/video"));
    let clip = videos.join("FourPeople_1280x720_60.mp4");
    if !clip.is_file() {
        return None;
    }
    let out = dir.join(format!("fourpeople_{width}x{height}_30.y4m"));
    let scale = format!("scale={width}:{height},fps=30");
    let ok = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-y", "-i"])
        .arg(&clip)
        .args(["-vf", &scale, "-frames:v", "150"])
        .args(["-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe"])
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| out.display().to_string())
}

fn match_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("match.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_chromium_call_through_the_link_matches_its_barcodes() {
    let Some((call, ssim_bar)) = recorded_call() else {
        return;
    };
    let m = match_json(call);
    println!("{m:#}");
    let shown = m["shown"].as_u64().unwrap();
    let matched = m["shown_matched"].as_u64().unwrap();
    // 10 s at 30 fps, less start-up and frames the page's callback missed.
    assert!(shown >= 200, "only {shown} presented pictures recorded");
    assert!(
        matched as f64 >= 0.99 * shown as f64,
        "{matched} of {shown} presented pictures matched"
    );
    let ssim = m["matched_ssim_mean"].as_f64().unwrap();
    assert!(ssim >= *ssim_bar, "mean SSIM of matched pictures {ssim}");
    // The same analysis as simulated runs: the summary has the paper's figures.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(call.join("summary.json")).unwrap()).unwrap();
    let delay = summary["delay_mean_ms"].as_f64().unwrap();
    assert!((10.0..1000.0).contains(&delay), "delay {delay} ms");
    assert!(summary["displayed_fps"].as_f64().unwrap() > 20.0);
    let frames = std::fs::read_to_string(call.join("frames.csv")).unwrap();
    assert!(frames.starts_with("frame,capture_ms,display_ms,delay_ms,ssim"));
    // The relay logged the call's packets in mm-link format.
    assert!(std::fs::metadata(call.join("video.log")).unwrap().len() > 1000);
    assert_loopback_only(call);
    done_with(call);
}

/// The call used loopback only: the relay listened on 127.0.0.1, and every second's
/// nominated candidate pair (Chrome's getStats, in stats.jsonl) joined two loopback
/// addresses. Datagrams the relay refused (from the machine's other addresses, whose
/// candidates Chromium still gathers and checks against the loopback one it was given) are
/// counted in call.json; they were sent to 127.0.0.1, so they never left the machine either.
fn assert_loopback_only(call: &Path) -> u64 {
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(call.join("call.json")).unwrap()).unwrap();
    let relay = record["relay"].as_str().unwrap();
    assert!(relay.starts_with("127.0.0.1:"), "relay on {relay}");
    let stats = std::fs::read_to_string(call.join("stats.jsonl")).unwrap();
    let mut pairs = 0;
    for line in stats.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for end in ["local", "remote"] {
            if let Some(address) = v["pair"][end]["address"].as_str() {
                assert_eq!(address, "127.0.0.1", "{end} end of the pair: {line}");
                pairs += 1;
            }
        }
    }
    assert!(
        pairs >= 2,
        "no nominated candidate pair in stats.jsonl:\n{stats}"
    );
    record["relay_refused"].as_u64().unwrap()
}

/// Whether this machine lets an unprivileged process make a user and network namespace
/// (`unshare -rn`) and bring its loopback up; why not, otherwise.
fn loopback_only_namespace() -> Result<(), String> {
    let out = Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up && ip -o addr"])
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "unshare -rn failed (unprivileged user namespaces off?): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let addresses = String::from_utf8_lossy(&out.stdout).to_string();
    let interfaces: std::collections::BTreeSet<&str> = addresses
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        interfaces.into_iter().collect::<Vec<_>>(),
        ["lo"],
        "a fresh network namespace should hold loopback only:\n{addresses}"
    );
    Ok(())
}

/// Where loopback is the only interface (a fresh network namespace: no other interface, no
/// route off the machine), a call still connects and is scored, through a relay on
/// 127.0.0.1 that refused nothing.
#[test]
fn a_call_runs_where_loopback_is_the_only_interface() {
    if !chromium_available() {
        println!("note: Chromium not installed (scripts/setup --peers); test skipped");
        return;
    }
    if let Err(why) = loopback_only_namespace() {
        println!("note: {why}; test skipped");
        return;
    }
    let _browser = one_browser();
    let out = std::env::temp_dir().join(format!("salsify-peer-lo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let result = Command::new("unshare")
        .args([
            "-rn",
            "sh",
            "-c",
            "ip link set lo up && exec \"$@\"",
            "sh",
            SALSIFY,
        ])
        .args([
            "peer",
            "chromium",
            "--input",
            "synthetic",
            "--size",
            "320x180",
        ])
        .args(["--duration", "4", "--link", "constant:2000"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let m = match_json(&out);
    let (shown, matched) = (
        m["shown"].as_u64().unwrap(),
        m["shown_matched"].as_u64().unwrap(),
    );
    assert!(shown >= 60, "only {shown} presented pictures");
    assert!(
        matched as f64 >= 0.95 * shown as f64,
        "{matched} of {shown} matched"
    );
    assert_eq!(assert_loopback_only(&out), 0, "no other address to refuse");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_source_shifted_by_three_frames_fails_the_match() {
    let Some((call, _)) = recorded_call() else {
        return;
    };
    let shifted = call.join("shifted.y4m");
    // The same pictures, each carrying the barcode of the frame three later.
    let status = Command::new(SALSIFY)
        .args(["barcode", "--first-id", "3", "--input"])
        .arg(call.join("source.y4m"))
        .arg("--out")
        .arg(&shifted)
        .status()
        .unwrap();
    assert!(status.success());
    let out = call.join("shifted");
    let result = Command::new(SALSIFY)
        .args(["peer", "score"])
        .arg(call)
        .arg("--reference")
        .arg(&shifted)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success(), "{stderr}");
    assert!(
        stderr.contains("match their barcode's source picture"),
        "{stderr}"
    );
    let m = match_json(&out);
    let shown = m["shown"].as_u64().unwrap();
    let matched = m["shown_matched"].as_u64().unwrap();
    assert!(
        (matched as f64) < 0.1 * shown as f64,
        "{matched} of {shown} still matched"
    );
    done_with(call);
}

/// Runs `salsify peer chromium` with `args` (synthetic source, 20 frames) expecting it to
/// fail; returns its error output.
fn failing_call(name: &str, args: &[&str]) -> String {
    let out = std::env::temp_dir().join(format!("salsify-peer-{name}-{}", std::process::id()));
    let result = Command::new(SALSIFY)
        .args([
            "peer",
            "chromium",
            "--source-frames",
            "20",
            "--link",
            "none",
        ])
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let stderr = String::from_utf8_lossy(&result.stderr).to_string();
    assert!(!result.status.success(), "{stderr}");
    stderr
}

#[test]
fn a_missing_browser_is_a_clear_error() {
    let e = failing_call("missing", &["--chromium", "/nonexistent/chromium"]);
    assert!(e.contains("does not exist"), "{e}");
}

#[test]
fn a_busy_relay_port_and_a_call_that_cannot_connect_are_clear_errors() {
    if !chromium_available() {
        println!("note: Chromium not installed; test skipped");
        return;
    }
    let _browser = one_browser();
    // A socket on every address holds the port, so the relay cannot listen on it.
    let held = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let e = failing_call("busy", &["--relay-port", &port, "--duration", "3"]);
    assert!(e.contains("choose another with --relay-port"), "{e}");
    drop(held);
    // Far too short for the browser to start and connect.
    let e = failing_call("timeout", &["--connect-timeout", "0.3"]);
    assert!(e.contains("did not connect within"), "{e}");
}

/// A codec this Chromium does not offer for WebRTC is refused, naming those it does (how a
/// live `chromium-av1` cell fails where AV1 is missing). Debian's Chromium 156 has no H.265
/// encoder for WebRTC; a build that has one runs the call instead, and the test says so.
#[test]
fn a_codec_chromium_lacks_is_refused_naming_the_ones_it_offers() {
    if !chromium_available() {
        println!("note: Chromium not installed; test skipped");
        return;
    }
    let _browser = one_browser();
    let out = std::env::temp_dir().join(format!("salsify-peer-h265-{}", std::process::id()));
    let result = Command::new(SALSIFY)
        .args(["peer", "chromium", "--codec", "h265", "--size", "320x180"])
        .args(["--source-frames", "20", "--duration", "2", "--link", "none"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let stderr = String::from_utf8_lossy(&result.stderr);
    if result.status.success() {
        println!("note: this Chromium offers H.265 for WebRTC; nothing to refuse");
        return;
    }
    assert!(
        stderr.contains("does not offer video/H265") && stderr.contains("video/VP8"),
        "{stderr}"
    );
}
