//! The layer picture in docs/architecture.md is the truth: every workspace crate sits in
//! exactly one row, and every Salsify crate a crate depends on (normal or dev dependency)
//! sits in a lower row.

use std::collections::BTreeMap;
use std::path::Path;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Crate folder name -> row, from the fenced picture under "## Layers": on a line that starts
/// with a row number, the words that name a crate (a parenthesis after one is its package
/// name) up to the first that does not, where the description starts.
fn rows(page: &str, crates: &[String]) -> BTreeMap<String, u32> {
    let section = &page[page.find("## Layers").expect("a Layers section")..];
    let start = section.find("```\n").expect("a picture") + 4;
    let picture = &section[start..start + section[start..].find("```").expect("its end")];
    let mut rows = BTreeMap::new();
    for line in picture.lines() {
        let mut words = line.split_whitespace();
        let Some(row) = words.next().and_then(|w| w.parse::<u32>().ok()) else {
            continue;
        };
        for word in words {
            if word.starts_with('(') {
                continue;
            }
            if !crates.iter().any(|c| c == word) {
                break;
            }
            let previous = rows.insert(word.to_string(), row);
            assert!(previous.is_none(), "{word} is in two rows");
        }
    }
    rows
}

/// `salsify-*` packages named in a manifest's dependency tables, as folder names.
fn salsify_deps(manifest: &str) -> Vec<String> {
    let mut deps = vec![];
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]" || line == "[dev-dependencies]";
            continue;
        }
        if in_deps {
            if let Some(name) = line.strip_prefix("salsify-") {
                let name = name.split(['.', ' ', '=']).next().unwrap_or("");
                deps.push(name.to_string());
            }
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_rows_below_its_own() {
    let page = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let mut crates = vec![];
    for entry in std::fs::read_dir(Path::new(ROOT).join("crates")).expect("crates/") {
        let dir = entry.expect("an entry").path();
        if dir.join("Cargo.toml").is_file() {
            crates.push(dir.file_name().unwrap().to_string_lossy().to_string());
        }
    }
    assert!(crates.len() >= 21, "too few crates: {crates:?}");
    let rows = rows(&page, &crates);
    let mut wrong = vec![];
    for name in &crates {
        let manifest =
            std::fs::read_to_string(Path::new(ROOT).join("crates").join(name).join("Cargo.toml"))
                .expect("a manifest");
        let Some(&row) = rows.get(name) else {
            wrong.push(format!("{name} is in no row"));
            continue;
        };
        for dep in salsify_deps(&manifest) {
            match rows.get(&dep) {
                Some(&r) if r < row => {}
                Some(&r) => wrong.push(format!("{name} (row {row}) depends on {dep} (row {r})")),
                None => wrong.push(format!("{name} depends on {dep}, in no row")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md, Layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_picture_and_manifests_are_read_as_written() {
    let page = "## Layers\n\n```\n2  transport     barcode    Salsify | sprout-model\n                 sprout-model\n1  sprout-model (salsify-sprout-model)  the forecaster\n```\n";
    let crates = ["transport", "barcode", "sprout-model"].map(String::from);
    let rows = rows(page, &crates);
    assert_eq!(rows.get("transport"), Some(&2));
    assert_eq!(rows.get("barcode"), Some(&2));
    assert_eq!(rows.get("sprout-model"), Some(&1));
    let deps = salsify_deps("[dependencies]\nsalsify-sprout-model.workspace = true\n[dev-dependencies]\nsalsify-time = { path = \"x\" }\n[features]\nsalsify-x = []\n");
    assert_eq!(deps, ["sprout-model", "time"]);
}
