//! Headless Chromium as a managed child: found on the machine, started in a process group of
//! its own with a fake camera fed from a file, and stopped (the whole group, by its id) when
//! dropped, so neither an error nor Ctrl-C leaves a browser behind.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};

/// Names tried on `PATH` when no binary is given.
const NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// How to start the browser.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// The binary (default: found on `PATH`).
    pub binary: Option<PathBuf>,
    /// The Y4M file the fake camera plays (looped).
    pub camera: PathBuf,
    /// A fresh profile folder.
    pub profile: PathBuf,
    /// Where its own log goes.
    pub log: PathBuf,
    /// Extra switches.
    pub extra_args: Vec<String>,
    /// The WAV file the fake microphone plays (looped by Chromium, resampled to its
    /// capture rate); `None`: Chromium's own fake microphone (a beep), which the video-only
    /// call never asks for.
    pub microphone: Option<PathBuf>,
}

/// Finds the browser binary: `given`, or the first of `NAMES` on `PATH`.
pub fn find_binary(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = given {
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        bail!("Chromium binary '{}' does not exist", path.display());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in NAMES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    bail!(
        "Chromium is not installed (none of {} on PATH): run `scripts/setup --peers` (Debian's chromium package) or give --chromium PATH",
        NAMES.join(", ")
    )
}

/// The browser's version line, e.g. "Chromium 156.0.8078.79 built on Debian ...".
pub fn version(binary: &Path) -> Result<String> {
    let out = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run '{}'", binary.display()))?;
    if !out.status.success() {
        bail!("'{} --version' failed: {}", binary.display(), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The switches: headless, no sandbox (root in CI), a fake camera from the file with the
/// permission prompt answered, autoplay, no background throttling, and nothing that reaches
/// out to Google's services (the machine's network is closed).
pub fn switches(config: &BrowserConfig) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--metrics-recording-only",
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        "--autoplay-policy=no-user-gesture-required",
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        // Loopback host candidates (Chromium leaves loopback out by default): the call is
        // routed over 127.0.0.1 only (see `candidates`); real addresses instead of mDNS names.
        "--allow-loopback-in-peer-connection",
        "--disable-features=WebRtcHideLocalIpsWithMdns",
        // No name resolves (the page is at 127.0.0.1): without it Chromium sent packets off
        // the machine on its own (50 in 6 s on about:blank, counted on this project's VM;
        // none with it).
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--enable-logging=stderr",
        "--v=0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!(
        "--use-file-for-fake-video-capture={}",
        config.camera.display()
    ));
    if let Some(wav) = &config.microphone {
        args.push(format!(
            "--use-file-for-fake-audio-capture={}",
            wav.display()
        ));
    }
    args.push(format!("--user-data-dir={}", config.profile.display()));
    args.extend(config.extra_args.iter().cloned());
    args
}

/// A running browser; dropping it stops its whole process group.
pub struct Browser {
    child: Child,
    log: PathBuf,
}

impl Browser {
    /// Starts the browser at `url`.
    pub fn start(binary: &Path, config: &BrowserConfig, url: &str) -> Result<Browser> {
        std::fs::create_dir_all(&config.profile)
            .with_context(|| format!("cannot create '{}'", config.profile.display()))?;
        let log = salsify_codec::output::create(&config.log)
            .with_context(|| format!("cannot create '{}'", config.log.display()))?;
        let child = Command::new(binary)
            .args(switches(config))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start Chromium '{}'", binary.display()))?;
        Ok(Browser {
            child,
            log: config.log.clone(),
        })
    }

    /// The browser's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error if the browser has exited, with the end of its log.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "Chromium exited ({status}) before the call ended; the end of its log ({}):\n{}",
                self.log.display(),
                log_tail(&self.log, 15)
            );
        }
        Ok(())
    }

    /// Stops the process group: SIGTERM, then SIGKILL after a grace period.
    pub fn stop(&mut self) {
        let group = self.child.id() as libc::pid_t;
        if self.child.try_wait().ok().flatten().is_none() {
            signal_group(group, libc::SIGTERM);
            for _ in 0..30 {
                if self.child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(StdDuration::from_millis(50));
            }
        }
        // Renderers and helpers of the group that outlived the browser.
        signal_group(group, libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    if group > 1 {
        // SAFETY: kill(2) with a negative id signals exactly the process group this process
        // created for the browser (its id is the browser's pid); errors (e.g. ESRCH once the
        // group is gone) are harmless.
        unsafe {
            libc::kill(-group, signal);
        }
    }
}

/// The last `lines` lines of a log file that are not noise.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    kept[kept.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_a_clear_error() {
        let e = find_binary(Some(Path::new("/nonexistent/chromium"))).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn switches_name_the_camera_and_profile() {
        let config = BrowserConfig {
            binary: None,
            camera: "/tmp/x.y4m".into(),
            profile: "/tmp/p".into(),
            log: "/tmp/l".into(),
            extra_args: vec!["--foo".into()],
            microphone: None,
        };
        let s = switches(&config);
        assert!(s.contains(&"--use-file-for-fake-video-capture=/tmp/x.y4m".to_string()));
        assert!(s.contains(&"--user-data-dir=/tmp/p".to_string()));
        assert!(s.contains(&"--disable-background-networking".to_string()));
        assert!(s.contains(&"--allow-loopback-in-peer-connection".to_string()));
        assert!(s
            .iter()
            .any(|a| a.starts_with("--host-resolver-rules=MAP * ~NOTFOUND")));
        assert_eq!(s.last().map(String::as_str), Some("--foo"));
        assert!(!s.iter().any(|a| a.contains("fake-audio-capture")));
        let with_audio = switches(&BrowserConfig {
            microphone: Some("/tmp/voice.wav".into()),
            ..config
        });
        assert!(
            with_audio.contains(&"--use-file-for-fake-audio-capture=/tmp/voice.wav".to_string())
        );
    }
}
