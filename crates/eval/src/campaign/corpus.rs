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
mod tests {
    use super::*;

    #[test]
    fn a_folder_gives_its_traces_and_rate_logs_by_name() {
        let dir = std::env::temp_dir().join(format!("salsify-corpus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in [
            ("b.rate", "300.2 1\n300.4 2\n"),
            ("a.csv", "time_s,Mbps\n0.2,1\n"),
            ("lte.down", "1\n2\n"),
            ("lte.up", "3\n"),
            ("single", "# a trace\n5\n7\n"),
            ("README.md", "not a link\n"),
            (".hidden", "x"),
        ] {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let got: Vec<(String, String)> = links(&dir)
            .unwrap()
            .into_iter()
            .map(|l| (l.name, l.trace.display().to_string()))
            .collect();
        let at = |f: &str| dir.join(f).display().to_string();
        assert_eq!(
            got,
            [
                ("a".to_string(), format!("rate:{}", at("a.csv"))),
                ("b".to_string(), format!("rate:{}", at("b.rate"))),
                ("lte".to_string(), at("lte")),
                ("single".to_string(), at("single")),
            ]
        );
        std::fs::write(dir.join("b.log"), "1 2\n").unwrap();
        assert!(links(&dir).unwrap_err().contains("both be link 'b'"));
        std::fs::remove_file(dir.join("b.log")).unwrap();
        std::fs::write(dir.join("junk.bin"), "1 2 3\n").unwrap();
        let err = links(&dir).unwrap_err();
        assert!(err.contains("junk.bin") && err.contains("neither"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(links(&dir).is_err());
    }

    /// A corpus group plans one run per scheme and file, each named by its file, with the
    /// log as a `rate:` link; shards split those runs between them, each run once; a bad
    /// reference and a missing folder are the group's errors.
    #[test]
    fn a_corpus_group_plans_a_run_per_file_and_shards_them() {
        use crate::campaign::{Matrix, Shard};
        let dir = std::env::temp_dir().join(format!("salsify-corpus-plan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["x", "y", "z"] {
            std::fs::write(dir.join(format!("{name}.rate")), "0.2 1\n0.4 2\n").unwrap();
        }
        let text = |extra: &str| {
            format!(
                "[defaults]\nsize = \"64x48\"\nduration_s = 2\n[[group]]\nname = \"c\"\n\
                 schemes = [\"salsify-2c\", \"conventional\"]\nlinks = [\"corpus:{}\"]\n{extra}",
                dir.display()
            )
        };
        let plan = Matrix::from_toml(&text("")).unwrap().plan().unwrap();
        assert_eq!(plan.runs.len(), 6);
        let mut links: Vec<&str> = plan.runs.iter().map(|r| r.link.as_str()).collect();
        links.dedup();
        links.sort();
        links.dedup();
        assert_eq!(links, ["x", "y", "z"]);
        let x = plan.runs.iter().find(|r| r.link == "x").unwrap();
        let trace = x.experiment.link.trace.as_ref().unwrap();
        assert_eq!(
            trace.display().to_string(),
            format!("rate:{}", dir.join("x.rate").display())
        );
        for count in [2, 4] {
            let mut seen = vec![0; plan.runs.len()];
            for index in 1..=count {
                let shard = Shard { index, count };
                for (pos, n) in seen.iter_mut().enumerate() {
                    if shard.takes(pos) {
                        *n += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{count}: {seen:?}");
        }
        let bad = Matrix::from_toml(&text("[group.corpus]\nreferences = [\"sprout\"]\n")).unwrap();
        assert!(bad.plan().unwrap_err().to_string().contains("'sprout'"));
        std::fs::remove_dir_all(&dir).unwrap();
        let gone = Matrix::from_toml(&text(""))
            .unwrap()
            .plan()
            .unwrap_err()
            .to_string();
        assert!(gone.contains("corpus:"), "{gone}");
    }

    #[test]
    fn references_default_to_the_first_scheme_and_are_checked() {
        let schemes = vec!["salsify-2c".to_string(), "conventional".to_string()];
        let spec = CorpusSpec::default();
        assert_eq!(spec.references(&schemes), ["salsify-2c"]);
        assert_eq!(spec.low_rate_kbps(), DEFAULT_LOW_RATE_KBPS);
        let spec = CorpusSpec {
            references: vec!["sprout".into()],
            low_rate_kbps: Some(-1.0),
        };
        assert!(spec.check(&schemes).unwrap_err().contains("'sprout'"));
        let spec = CorpusSpec {
            references: vec![],
            low_rate_kbps: Some(f64::NAN),
        };
        assert!(spec.check(&schemes).unwrap_err().contains("low_rate_kbps"));
    }
}
