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
