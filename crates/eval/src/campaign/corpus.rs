//! A corpus as a link set: `links = ["corpus:DIR"]` is every link recording in folder DIR,
//! each a link named by its file, and the group's `[group.corpus]` table says which schemes
//! the report compares the others against ([`CorpusSpec`]).
//!
//! What in the folder is a link:
//! - `NAME.down` (with `NAME.up` beside it, or alone): the Mahimahi trace prefix NAME, as
//!   `traces:*` takes it; link `NAME`;
//! - any other file whose first data line is one whole number: a Mahimahi trace, both ways;
//!   link named by the file without its extension;
//! - any other file whose first data line is two fields (or a header of two words): a rate
//!   log (`rate:FILE`, see `salsify_netem::rate_log`); link named by the file without its
//!   extension.
//!
//! Hidden files, `README*` and `*.md` are skipped; any other file that is neither is an
//! error naming it, as are two files that would give one link name. Only the start of each
//! file is read here; the whole file is parsed when its runs run.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a group's link starts with to name a corpus folder.
pub const PREFIX: &str = "corpus:";

/// Capacity below which a trace counts as a slow link in the report's second comparison, by
/// default: 1 Mb/s, where frame rate suffers first.
pub const DEFAULT_LOW_RATE_KBPS: f64 = 1000.0;

/// Bytes of a file read to tell a trace from a rate log.
const SNIFF_BYTES: u64 = 4096;

/// How the report compares a corpus group's schemes (`[group.corpus]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusSpec {
    /// The schemes every other is measured against, one comparison each; empty: the
    /// group's first scheme.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Capacity (kb/s, mean over the run) below which a trace is also compared on its own
    /// among the slow links; none: [`DEFAULT_LOW_RATE_KBPS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_rate_kbps: Option<f64>,
}

impl CorpusSpec {
    /// Whether nothing is set (then it is not written out).
    pub fn is_empty(&self) -> bool {
        *self == CorpusSpec::default()
    }

    /// The reference schemes of a group with these schemes.
    pub fn references<'a>(&'a self, schemes: &'a [String]) -> Vec<&'a str> {
        if self.references.is_empty() {
            schemes.iter().take(1).map(String::as_str).collect()
        } else {
            self.references.iter().map(String::as_str).collect()
        }
    }

    /// The slow-link threshold in kb/s.
    pub fn low_rate_kbps(&self) -> f64 {
        self.low_rate_kbps.unwrap_or(DEFAULT_LOW_RATE_KBPS)
    }

    /// Checks the references are among the group's schemes and the threshold is sane.
    pub fn check(&self, schemes: &[String]) -> Result<(), String> {
        if let Some(r) = self.references.iter().find(|r| !schemes.contains(r)) {
            return Err(format!(
                "corpus.references: '{r}' is not one of the group's schemes"
            ));
        }
        if let Some(kbps) = self.low_rate_kbps {
            if !(kbps.is_finite() && kbps > 0.0) {
                return Err(format!(
                    "corpus.low_rate_kbps: {kbps} is not a positive rate"
                ));
            }
        }
        Ok(())
    }
}

/// One link of a corpus: its name and the experiment's `trace` setting for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusLink {
    /// The link's name (its file's, without the extension).
    pub name: String,
    /// A trace prefix, a trace file, or `rate:FILE`.
    pub trace: PathBuf,
}

/// Every link in `dir`, sorted by name.
pub fn links(dir: &Path) -> Result<Vec<CorpusLink>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("'{}': {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out: Vec<CorpusLink> = Vec::new();
    for path in &files {
        let Some(link) = link_of(path)? else {
            continue;
        };
        if let Some(twin) = out.iter().find(|l| l.name == link.name) {
            return Err(format!(
                "'{}' and '{}' would both be link '{}'",
                twin.trace.display(),
                link.trace.display(),
                link.name
            ));
        }
        out.push(link);
    }
    if out.is_empty() {
        return Err(format!("no trace or rate log in '{}'", dir.display()));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The link a file is, `None` for one to skip.
fn link_of(path: &Path) -> Result<Option<CorpusLink>, String> {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let Some(file) = file else {
        return Ok(None);
    };
    if file.starts_with('.') || file.starts_with("README") || file.ends_with(".md") {
        return Ok(None);
    }
    if let Some(prefix) = file.strip_suffix(".down") {
        return Ok(Some(CorpusLink {
            name: prefix.to_string(),
            trace: path.with_file_name(prefix),
        }));
    }
    if let Some(prefix) = file.strip_suffix(".up") {
        if path.with_file_name(format!("{prefix}.down")).is_file() {
            return Ok(None);
        }
    }
    let name = Path::new(&file)
        .file_stem()
        .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
    let trace = match sniff(path)? {
        Kind::Mahimahi => path.to_path_buf(),
        Kind::RateLog => PathBuf::from(format!(
            "{}{}",
            salsify_netem::rate_log::SPEC_PREFIX,
            path.display()
        )),
    };
    Ok(Some(CorpusLink { name, trace }))
}

enum Kind {
    Mahimahi,
    RateLog,
}

/// A trace or a rate log, by the first line that is not blank or a `#` comment.
fn sniff(path: &Path) -> Result<Kind, String> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES).read_to_end(&mut head))
        .map_err(|e| format!("'{}': {e}", path.display()))?;
    let text = String::from_utf8_lossy(&head);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let fields: Vec<&str> = first
        .unwrap_or("")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|f| !f.is_empty())
        .collect();
    match fields.as_slice() {
        [one] if one.bytes().all(|b| b.is_ascii_digit()) => Ok(Kind::Mahimahi),
        [_, _] => Ok(Kind::RateLog),
        _ => Err(format!(
            "'{}' is neither a Mahimahi trace (one millisecond timestamp a line) nor a rate \
             log (TIME RATE a line)",
            path.display()
        )),
    }
}

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod tests;
