//! The guide's scheme page (docs/schemes.md) names every parameter every scheme takes: each
//! key of each table the registry's families read, as the default configuration writes it to TOML (`[salsify]`,
//! `[salsify.pacing]`, ...), must appear on the page as `` `key` `` under its table's heading
//! (`` `[salsify.pacing]` ``), on docs/schemes.md or, for a family documented on a page of its
//! own, on that page. A parameter added to a config without a line in the guide fails here,
//! and so does a registered scheme the guide never names.

use std::collections::BTreeMap;

use salsify_schemes::registry;

/// (table, key) for every leaf of `value` below `table`.
fn keys(table: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
    if let toml::Value::Table(t) = value {
        for (k, v) in t {
            match v {
                toml::Value::Table(_) => keys(&format!("{table}.{k}"), v, out),
                _ => out.push((table.to_string(), k.clone())),
            }
        }
    }
}

/// The page split by headings that name a table: table -> text under it.
fn sections(page: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut current = String::new();
    for line in page.lines() {
        if line.starts_with('#') {
            current = match (line.find("`["), line.find("]`")) {
                (Some(a), Some(b)) if b > a => line[a + 2..b].to_string(),
                _ => String::new(),
            };
        }
        out.entry(current.clone())
            .or_insert_with(String::new)
            .push_str(&format!("{line}\n"));
    }
    out
}

/// Every page of the guide (docs/*.md), docs/schemes.md first.
fn guide() -> String {
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs");
    let mut pages: Vec<_> = std::fs::read_dir(docs)
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort_by_key(|p| !p.ends_with("schemes.md"));
    pages
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap() + "\n# end of page\n")
        .collect()
}

#[test]
fn every_registered_scheme_is_named_in_the_guide() {
    let page = guide();
    let missing: Vec<&str> = registry::schemes()
        .map(|s| s.name)
        .filter(|name| !page.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "the guide never names {missing:?}");
}

#[test]
fn every_parameter_of_every_scheme_is_in_the_guide() {
    // Every table every registered family reads, with its defaults.
    let mut all = vec![];
    for table in registry::tables() {
        keys(table.name, &table.default_value(), &mut all);
    }
    assert!(all.len() > 50, "too few keys found: {all:?}");
    let page = guide();
    let sections = sections(&page);
    let missing: Vec<String> = all
        .iter()
        .filter(|(table, key)| {
            !sections
                .get(table)
                .is_some_and(|text| text.contains(&format!("`{key}`")))
        })
        .map(|(table, key)| format!("[{table}] {key}"))
        .collect();
    assert!(
        missing.is_empty(),
        "the guide (docs/schemes.md or another page of docs/) lacks these parameters (under a \
         heading naming `[table]`):\n{}",
        missing.join("\n")
    );
}
