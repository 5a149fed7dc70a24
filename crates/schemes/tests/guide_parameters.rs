//! The guide's scheme page (docs/schemes.md) names every parameter every scheme takes: each
//! key of each table the registry's families read, as the default configuration writes it to TOML (`[salsify]`,
//! `[salsify.pacing]`, ...), must appear on the page as `` `key` `` under its table's heading
//! (`` `[salsify.pacing]` ``). A parameter added to a config without a line in the guide
//! fails here.

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

#[test]
fn every_parameter_of_every_scheme_is_in_the_guide() {
    // Every table every registered family reads, with its defaults.
    let mut all = vec![];
    for table in registry::tables() {
        keys(table.name, &table.default_value(), &mut all);
    }
    assert!(all.len() > 50, "too few keys found: {all:?}");
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/schemes.md"
    ))
    .expect("docs/schemes.md");
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
        "docs/schemes.md lacks these parameters (under a heading naming `[table]`):\n{}",
        missing.join("\n")
    );
}
