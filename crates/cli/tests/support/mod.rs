//! Helpers the command-line end-to-end tests share: the binary, free ports, scratch folders,
//! and waiting for a child that must succeed.

#![allow(dead_code)] // each test file uses its own subset

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The `salsify` binary under test.
pub const SALSIFY: &str = env!("CARGO_BIN_EXE_salsify");

/// Starts `salsify ARGS` with no input, its output dropped and its standard error kept (for
/// [`finish`]'s message).
pub fn spawn(args: &[&str]) -> Child {
    Command::new(SALSIFY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the salsify binary runs")
}

/// Runs `salsify ARGS` in `dir` to the end, with no input.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(SALSIFY)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("the salsify binary runs")
}

/// A loopback address with a port free right now.
pub fn free_addr() -> String {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().to_string()
}

/// An empty scratch folder named after the suite (`prefix`), the test and this process.
pub fn temp_dir(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("salsify-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits for `child`, which must exit successfully (its standard error in the message).
pub fn finish(child: Child, what: &str) -> Output {
    let out = child.wait_with_output().expect("wait for salsify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed: {}\n{stderr}",
        out.status
    );
    out
}

/// A UDP hop on loopback between a sender and `to`: forwards the sender's datagrams to `to`
/// and the answers back, and keeps copies of what it carries towards `to` (what an
/// eavesdropper records, to replay).
pub struct Tap {
    /// Where the sender should send.
    pub addr: String,
    /// The datagrams kept (see [`Keep`]).
    pub seen: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<Vec<u8>>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Which of the carried datagrams a [`Tap`] keeps.
#[derive(Clone, Copy)]
pub enum Keep {
    /// The newest this many.
    Newest(usize),
    /// The first this many for which the test returns true.
    First(usize, fn(&[u8]) -> bool),
}

impl Keep {
    fn add(self, seen: &mut std::collections::VecDeque<Vec<u8>>, d: &[u8]) {
        match self {
            Keep::Newest(n) => {
                if seen.len() == n {
                    seen.pop_front();
                }
                seen.push_back(d.to_vec());
            }
            Keep::First(n, wanted) => {
                if seen.len() < n && wanted(d) {
                    seen.push_back(d.to_vec());
                }
            }
        }
    }
}

impl Tap {
    /// A tap in front of `to`, keeping the datagrams `keep` says.
    pub fn start(to: &str, keep: Keep) -> Tap {
        use std::sync::atomic::Ordering;
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        let tap = Tap {
            addr: socket.local_addr().unwrap().to_string(),
            seen: Default::default(),
            stop: Default::default(),
        };
        let (seen, stop) = (tap.seen.clone(), tap.stop.clone());
        let to: std::net::SocketAddr = to.parse().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut sender = None;
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                if from == to {
                    if let Some(s) = sender {
                        let _ = socket.send_to(&buf[..n], s);
                    }
                    continue;
                }
                sender = Some(from);
                keep.add(&mut seen.lock().unwrap(), &buf[..n]);
                let _ = socket.send_to(&buf[..n], to);
            }
        });
        tap
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Stops `child` as Ctrl-C would (SIGTERM: files finished, summary written) and waits for
/// it; it must exit successfully.
pub fn stop(child: Child, what: &str) -> Output {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    finish(child, what)
}

/// Fresh key pairs for a receiver and a sender made by `salsify keygen` in `dir`: the flags
/// `salsify recv` and `salsify send` take.
pub fn keys(dir: &Path) -> (Vec<String>, Vec<String>) {
    for name in ["recv", "send"] {
        let out = dir.join(name);
        let run = Command::new(SALSIFY)
            .args(["keygen", "--force", "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
    }
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let flags = |key: &str, peer: &str| {
        vec![
            "--key".to_string(),
            path(key),
            "--peer-key".to_string(),
            path(peer),
        ]
    };
    (flags("recv.key", "send.pub"), flags("send.key", "recv.pub"))
}

/// Whether a Chromium the peer tests can drive is on `PATH`.
pub fn chromium_available() -> bool {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}
