//! Embeds the commit the evaluation code was built from (`SALSIFY_CODE`), so every run and
//! report can say which code made it: the short hash, `+changes` when tracked files differed
//! from it, or `unknown` outside a git checkout.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let code = match git(&["rev-parse", "--short=7", "HEAD"]) {
        Some(hash) => {
            let changed = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if changed {
                format!("{hash}+changes")
            } else {
                hash
            }
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=SALSIFY_CODE={code}");
    // A new commit, a checkout or a staged change moves HEAD, its ref or the index; an edit of
    // any source of the workspace changes its crates.
    // (A worktree keeps HEAD and index in its own git folder, branches in the common one.)
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for file in ["HEAD", "index"] {
            println!(
                "cargo:rerun-if-changed={}",
                Path::new(&dir).join(file).display()
            );
        }
    }
    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    if let (Some(common), Some(reference)) = (common, git(&["symbolic-ref", "-q", "HEAD"])) {
        println!(
            "cargo:rerun-if-changed={}",
            Path::new(&common).join(reference).display()
        );
    }
    println!("cargo:rerun-if-changed=../../crates");
    println!("cargo:rerun-if-changed=build.rs");
}
