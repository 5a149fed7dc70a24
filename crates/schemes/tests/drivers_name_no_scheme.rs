//! The drivers know no scheme by name: no source file of `salsify-sim`, `salsify-runtime`,
//! `salsify-eval` or the command (`crates/cli`) holds a registered scheme's name, or the
//! `name-` prefix of one, as a string literal. They ask the registry instead (its default
//! scheme, the schemes playing a role, a family's sweep or style).
//!
//! What is scanned: each crate's `src/` (the code that ships), outside comments and outside
//! the `#[cfg(test)]` module at the end of a file. Tests, examples and benches may name the
//! scheme they exercise.

use std::path::{Path, PathBuf};

use salsify_schemes::registry;

const DRIVERS: &[&str] = &["sim", "runtime", "eval", "cli"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code: without its test module and without comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The string literals of `code` (plain "..." ones, escapes kept as written).
fn literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        // A char literal '"' is not a string.
        if c == '"' && previous != '\'' {
            let mut s = String::new();
            while let Some(d) = chars.next() {
                match d {
                    '\\' => {
                        s.push(d);
                        if let Some(e) = chars.next() {
                            s.push(e);
                        }
                    }
                    '"' => break,
                    _ => s.push(d),
                }
            }
            out.push(s);
            previous = '"';
        } else {
            previous = c;
        }
    }
    out
}

/// Whether `literal` names a scheme: a registered name, or a prefix `xxx-` of one.
fn names_a_scheme(literal: &str, names: &[&str]) -> bool {
    names.iter().any(|n| {
        *n == literal || (literal.len() >= 4 && literal.ends_with('-') && n.starts_with(literal))
    })
}

#[test]
fn no_driver_names_a_scheme() {
    let names: Vec<&str> = registry::schemes().map(|s| s.name).collect();
    assert!(names.len() > 10, "{names:?}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for driver in DRIVERS {
        let mut files = Vec::new();
        rust_files(&root.join(driver).join("src"), &mut files);
        assert!(!files.is_empty(), "{driver}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for literal in literals(&code(&text)) {
                if names_a_scheme(&literal, &names) {
                    found.push(format!("{}: \"{literal}\"", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "drivers name schemes (ask salsify_schemes::registry instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_what_it_looks_for() {
    let names = ["salsify-2c", "sprout"];
    let code = code(
        "let a = \"salsify-2c\";\n// \"sprout\"\nlet b = '\"'; let c = \"salsify-\";\n#[cfg(test)]\nmod tests { \"sprout\" }",
    );
    let found: Vec<String> = literals(&code)
        .into_iter()
        .filter(|l| names_a_scheme(l, &names))
        .collect();
    assert_eq!(found, ["salsify-2c", "salsify-"]);
}
