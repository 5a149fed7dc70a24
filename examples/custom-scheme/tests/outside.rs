//! The crate stays outside the tree: no file under the project's `crates/` names it or its
//! scheme, and its family is refused by a registry where another family holds its wire id.

use std::path::{Path, PathBuf};

use custom_scheme::delay_aimd::{FAMILY, WIRE_NUMBER};
use salsify_schemes::{Family, Registry, SchemeConfig, SchemeError, SchemeInfo, SchemeParams};
use salsify_schemes::{Marker, Runs, WireId};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// What names this crate: its scheme, its table, its types, its folder and its package.
const NAMES: [&str; 5] = [
    "delay-aimd",
    "delay_aimd",
    "DelayAimd",
    "custom_scheme",
    "examples/custom-scheme",
];

/// Every file under `dir` (build outputs left out) that names this crate, with the name.
fn files_naming(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut found = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    todo.push(path);
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // The guide page is the project's; naming it is not naming the crate.
            let text = text.replace("docs/custom-scheme.md", "");
            let package = text.contains("custom-scheme =") || text.contains("\"custom-scheme\"");
            if let Some(name) = NAMES.iter().find(|n| text.contains(**n)) {
                found.push((path, *name));
            } else if package {
                found.push((path, "custom-scheme"));
            }
        }
    }
    found
}

#[test]
fn no_file_under_crates_names_this_crate() {
    let crates = Path::new(ROOT).join("crates");
    assert!(crates.join("schemes/src/families/mod.rs").is_file());
    let found = files_naming(&crates);
    assert!(
        found.is_empty(),
        "files under crates/ name the example: {found:?}"
    );
    // The scan finds what it looks for: this crate's own files name it.
    let own = files_naming(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        own.iter().any(|(p, _)| p.ends_with("src/delay_aimd.rs")),
        "{own:?}"
    );
    assert!(
        own.iter().any(|(p, _)| p.ends_with("Cargo.toml")),
        "{own:?}"
    );
}

/// Another plug-in that picked the same wire number by hand.
struct SameWire;

static SAME_WIRE_SCHEMES: [SchemeInfo; 1] = [SchemeInfo {
    name: "same-wire",
    about: "a second plug-in on delay-aimd's wire id",
    runs: Runs::Anywhere,
    sends_video: true,
    color: "#010203",
    marker: Marker::Cross,
    roles: &[],
}];

impl Family for SameWire {
    fn id(&self) -> &'static str {
        "same-wire"
    }
    fn schemes(&self) -> &'static [SchemeInfo] {
        &SAME_WIRE_SCHEMES
    }
    fn wire_ids(&self) -> Vec<WireId> {
        vec![WireId::Plugin(WIRE_NUMBER)]
    }
    fn configure(&self, name: &str, _: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        Err(SchemeError::Unknown(name.into(), String::new()))
    }
}

static SAME: SameWire = SameWire;

#[test]
fn two_plug_ins_on_one_wire_id_are_refused_naming_both() {
    let registry = custom_scheme::registry().expect("delay-aimd joins the built-in families");
    assert!(registry.family_of("delay-aimd").is_some());
    let message = registry
        .clone()
        .with(&SAME)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        message.contains("`same-wire`") && message.contains("`delay-aimd`"),
        "{message}"
    );
    assert!(message.contains("wire id"), "{message}");
    // Either order: the one added second is refused.
    let message = Registry::builtin()
        .with(&SAME)
        .unwrap()
        .with(&FAMILY)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        message.contains("`same-wire`") && message.contains("`delay-aimd`"),
        "{message}"
    );
    // On a number of its own it joins.
    assert!(registry.with(&SameWireElsewhere).is_ok());
}

/// The same plug-in on a free number joins.
struct SameWireElsewhere;

impl Family for SameWireElsewhere {
    fn id(&self) -> &'static str {
        "same-wire"
    }
    fn schemes(&self) -> &'static [SchemeInfo] {
        &SAME_WIRE_SCHEMES
    }
    fn wire_ids(&self) -> Vec<WireId> {
        vec![WireId::Plugin(WIRE_NUMBER + 1)]
    }
    fn configure(&self, name: &str, _: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        Err(SchemeError::Unknown(name.into(), String::new()))
    }
}
