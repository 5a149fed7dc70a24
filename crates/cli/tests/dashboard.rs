//! The dashboard's bar: a running demo's page in headless Chromium (charts drawn, values and
//! picture changing, the same frames-shown count as the demo's summary at the end), a
//! simulated run replayed by `salsify view` (its summary read back from the page), and the
//! server on loopback only.
//!
//! What the page shows is read back from its own DOM: opened with `?probe`, it posts what it
//! displays (legend values, totals, summary cells, charts with lines, the picture it loaded)
//! twice a second, and the test reads those reports from the server's `/probes`.
//!
//! Chromium comes from `scripts/setup --peers`; without it the browser tests say so and
//! pass, unless SALSIFY_REQUIRE_CHROMIUM=1 (set by `scripts/test`).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{temp_dir, SALSIFY};

fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        assert!(
            std::env::var("SALSIFY_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "Chromium is required (SALSIFY_REQUIRE_CHROMIUM=1) but not installed: scripts/setup --peers"
        );
        println!("note: Chromium not installed (scripts/setup --peers); test skipped");
    }
    found
}

/// Headless Chromium on `url`, with a profile of its own in `dir`.
fn open_page(browser: &str, url: &str, dir: &Path) -> Child {
    let sep = if url.contains('?') { '&' } else { '?' };
    Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("{url}{sep}probe"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium")
}

/// Reads `stderr` on a thread; returns the dashboard's URL (the line that names it) and a
/// channel with every line.
fn dashboard_url(stderr: ChildStderr) -> (String, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap().to_string();
            return (url, rx);
        }
    }
    panic!("no dashboard URL printed");
}

/// `GET path` from the server of `url`; the body.
fn get(url: &str, path: &str) -> Option<String> {
    let host = url.trim_start_matches("http://").split('/').next()?;
    let mut s = TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// The page's reports so far.
fn probes(url: &str) -> Vec<Value> {
    get(url, "/probes")
        .and_then(|b| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// A number shown on the page.
fn shown_number(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number on the page: {v}"))
}

/// A 10 s demo with its page open: charts are drawn, their values change from one read to
/// one a second later, the picture changes (named by its frame number, nothing broken before
/// the first), and the ended page shows the frames-shown count of the demo's own summary and
/// a value in every legend.
#[test]
fn a_running_demos_page_follows_the_call() {
    let Some(browser) = chromium() else { return };
    let dir = temp_dir("dashboard", "live");
    let mut demo = demo_with_dashboard(&dir, "10", Stdio::piped());
    let (url, lines) = dashboard_url(demo.stderr.take().unwrap());
    let mut page = open_page(browser, &url, &dir);
    // (when read, the report) for every new report while the call runs.
    let mut reads: Vec<(Instant, Value)> = Vec::new();
    while demo.try_wait().unwrap().is_none() {
        if let Some(last) = probes(&url).pop() {
            if reads.last().map(|r| &r.1) != Some(&last) {
                reads.push((Instant::now(), last));
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let mut stdout = String::new();
    demo.stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = demo.wait().unwrap();
    let _ = page.kill();
    let _ = page.wait();
    let stderr: Vec<String> = lines.iter().collect();
    assert!(status.success(), "demo failed: {stdout}\n{stderr:?}");

    let live: Vec<&(Instant, Value)> = reads
        .iter()
        .filter(|r| r.1["charts"].as_u64() >= Some(8))
        .collect();
    assert!(live.len() >= 4, "the page drew too few charts: {reads:?}");
    let changed = live.iter().any(|(t0, a)| {
        live.iter().any(|(t1, b)| {
            t1.duration_since(*t0) >= Duration::from_secs(1) && a["values"] != b["values"]
        })
    });
    assert!(changed, "no value changed over a second: {live:?}");
    let pictures: Vec<u64> = live
        .iter()
        .filter_map(|r| r.1["picture"].as_u64())
        .collect();
    assert!(
        pictures.iter().max() > pictures.iter().min(),
        "the picture did not change: {pictures:?}"
    );
    // Nothing shows broken, before the first picture or after; a picture is named by the
    // number of the frame it is.
    assert!(
        reads.iter().all(|r| r.1["picture_broken"] == false),
        "a broken picture: {reads:?}"
    );
    let named = reads
        .iter()
        .filter(|r| r.1["picture"].as_u64() > Some(0))
        .all(|r| {
            let frame = r.1["frame"].as_u64().expect("a frame number");
            r.1["caption"].as_str() == Some(&format!("the last shown picture: frame {frame}"))
        });
    assert!(named, "pictures without their frame number: {reads:?}");
    check_axes(&live.last().unwrap().1);

    let summary_shown: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shown "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {stdout}"));
    let end = stderr
        .iter()
        .find_map(|l| l.strip_prefix("dashboard: a page saw the end: frames shown "))
        .unwrap_or_else(|| panic!("the page did not report the end: {stderr:?}"));
    let page_shown: f64 = end
        .split(',')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {end}"));
    assert_eq!(
        page_shown, summary_shown,
        "the ended page against the summary"
    );
    assert!(end.ends_with("a value in every legend"), "{end}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `salsify view` on a simulated run, the page at its end (the default cursor): the frames
/// shown and the delay p95 of its summary.json, the same frames-shown count in its totals,
/// a value in every legend, the time axis as long as the run, round axis ticks with a unit
/// on every chart, and no video offered that the run did not write.
#[test]
fn view_shows_a_simulated_runs_summary() {
    let Some(browser) = chromium() else { return };
    let dir = temp_dir("dashboard", "view");
    let run = dir.join("run");
    let sim = Command::new(SALSIFY)
        .args([
            "sim",
            "--size",
            "320x180",
            "--duration",
            "6",
            "--quiet",
            "--out",
        ])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        sim.status.success(),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let mut view = Command::new(SALSIFY)
        .args(["view", "--duration", "20"])
        .arg(&run)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (url, _lines) = dashboard_url(view.stderr.take().unwrap());
    let mut page = open_page(browser, &url, &dir);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = None;
    while Instant::now() < deadline && seen.is_none() {
        std::thread::sleep(Duration::from_millis(300));
        seen = probes(&url).into_iter().find(|p| {
            p["ended"] == true
                && p["summary"]["frames_shown"].is_string()
                && p["charts"].as_u64() >= Some(4)
        });
    }
    let _ = page.kill();
    let _ = view.kill();
    let _ = (page.wait(), view.wait());
    let seen = seen.expect("the page never showed the summary and charts");
    assert_eq!(
        shown_number(&seen["summary"]["frames_shown"]),
        summary["frames_shown"].as_f64().unwrap()
    );
    let p95 = summary["delay_p95_ms"].as_f64().unwrap();
    assert!((shown_number(&seen["summary"]["delay_p95_ms"]) - p95).abs() < 0.006);
    // The replayed series count the same frames as the summary.
    assert_eq!(
        shown_number(&seen["totals"]["recv.shown"]),
        summary["frames_shown"].as_f64().unwrap()
    );
    let values = seen["values"].as_object().unwrap();
    assert!(values.len() >= 10, "{values:?}");
    for (series, v) in values {
        assert!(
            v.as_str() != Some("-"),
            "no value for {series} at the end: {seen}"
        );
    }
    // The rate at the end is a whole last second's (a 320x180 sim shows its 60 fps).
    let fps = shown_number(&seen["values"]["recv.shown"]);
    assert!(fps > 50.0, "frames shown per second at the end: {fps}");
    assert_eq!(seen["cursor"], "6.00 s", "the time axis is the run's");
    check_axes(&seen);
    let caption = seen["caption"].as_str().unwrap();
    assert!(!caption.contains("received.ivf"), "{caption}");
    assert_eq!(seen["picture_broken"], false);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every chart of a page's report has a unit and round ticks: at least two, evenly spaced
/// by 1, 2 or 5 times a power of ten, all different.
fn check_axes(report: &Value) {
    let units = report["units"].as_object().expect("units");
    assert!(!units.is_empty());
    for (chart, unit) in units {
        assert!(
            unit.as_str().is_some_and(|u| !u.is_empty()),
            "chart {chart} has no unit: {report}"
        );
    }
    for (chart, ticks) in report["ticks"].as_object().expect("ticks") {
        let ticks: Vec<f64> = ticks
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let t = t.as_str().unwrap();
                match t.strip_suffix('k') {
                    Some(k) => k.parse::<f64>().unwrap() * 1e3,
                    None => t.parse().unwrap(),
                }
            })
            .collect();
        assert!(ticks.len() >= 2, "chart {chart}: {ticks:?}");
        let step = ticks[1] - ticks[0];
        assert!(step > 0.0, "chart {chart}: {ticks:?}");
        for pair in ticks.windows(2) {
            assert!(
                ((pair[1] - pair[0]) - step).abs() < step * 1e-6,
                "chart {chart}: uneven ticks {ticks:?}"
            );
        }
        let mantissa = step / 10f64.powf(step.log10().floor());
        assert!(
            [1.0, 2.0, 5.0, 10.0]
                .iter()
                .any(|m| (mantissa - m).abs() < 1e-6),
            "chart {chart}: step {step} is not round: {ticks:?}"
        );
    }
}

/// A small `salsify demo --dashboard` of `seconds` writing to `dir/out`, its stderr piped
/// (where the dashboard's address is printed).
fn demo_with_dashboard(dir: &Path, seconds: &str, stdout: Stdio) -> Child {
    Command::new(SALSIFY)
        .args([
            "demo",
            "--duration",
            seconds,
            "--size",
            "320x180",
            "--quiet",
            "--dashboard",
        ])
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `--dashboard` with no address listens on 127.0.0.1, and on nothing else.
#[test]
fn the_dashboard_listens_on_loopback_only() {
    let dir = temp_dir("dashboard", "loopback");
    let mut demo = demo_with_dashboard(&dir, "3", Stdio::null());
    let (url, _lines) = dashboard_url(demo.stderr.take().unwrap());
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap_or_else(|_| panic!("not a 127.0.0.1 URL: {url}"));
    // Every listening TCP socket on that port, from the kernel's tables: (local address, state 0A).
    let mut listening = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (f.get(1), f.get(3)) else {
                continue;
            };
            let Some((ip, p)) = local.split_once(':') else {
                continue;
            };
            if u16::from_str_radix(p, 16) == Ok(port) && *state == "0A" {
                listening.push(ip.to_string());
            }
        }
    }
    assert_eq!(
        listening,
        ["0100007F"],
        "127.0.0.1 in the kernel's byte order, and nothing else"
    );
    assert!(get(&url, "/").is_some_and(|page| page.contains("app.js")));
    support::finish(demo, "demo");
    let _ = std::fs::remove_dir_all(&dir);
}
