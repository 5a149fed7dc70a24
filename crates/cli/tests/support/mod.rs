//! Helpers the command-line end-to-end tests share: the binary, free ports, scratch folders,
//! and waiting for a child that must succeed.

#![allow(dead_code)] // each test file uses its own subset

use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Child, Output};

/// The `salsify` binary under test.
pub const SALSIFY: &str = env!("CARGO_BIN_EXE_salsify");

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
