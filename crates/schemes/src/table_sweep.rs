//! A group's sweep of scheme parameter tables (`[group.sweep.TABLE] FIELD = [...]`): each field
//! checked against the table it names, and the variants of a run it makes. Apart from
//! `sweep.rs` (which the families read) because it asks the registry for the tables.

use crate::params::SchemeParams;
use crate::registry;
use crate::sweep::{each, Sweep, TableField};

impl Sweep {
    /// The swept fields of parameter tables, each checked against its table: the table and
    /// the field exist, and each value is of the field's type and in its range.
    pub fn table_fields(&self) -> Result<Vec<TableField>, String> {
        let mut out = Vec::new();
        for (name, value) in &self.tables {
            let Some(table) = registry::table(name) else {
                return Err(format!(
                    "sweep.{name}: not a knob ({KNOBS}) nor a scheme's parameter table ({})",
                    registry::tables()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            let toml::Value::Table(fields) = value else {
                return Err(format!(
                    "sweep.{name}: a table's sweep is a table of fields \
                     ([group.sweep.{name}] FIELD = [values])"
                ));
            };
            let mut leaves = Vec::new();
            leaves_of("", fields, &mut leaves);
            let default = table.defaults_for(value);
            for (field, values) in leaves {
                let here = format!("sweep.{name}.{field}");
                if lookup(&default, &field).is_none() {
                    return Err(format!("{here}: `{name}` has no field `{field}`"));
                }
                let toml::Value::Array(values) = values else {
                    return Err(format!("{here}: give a list of values, e.g. [1, 2]"));
                };
                for v in &values {
                    let mut one = SchemeParams::default();
                    one.tables.insert(name.clone(), default.clone());
                    set_field(&mut one, name, &field, v.clone());
                    table
                        .normalise(one.tables[name.as_str()].clone())
                        .and_then(|t| table.validate(&t))
                        .map_err(|why| format!("{here} = {v}: {why}"))?;
                }
                out.push(TableField {
                    table: name.clone(),
                    field,
                    values,
                });
            }
        }
        Ok(out)
    }

    /// Why the sweep is invalid, if it is: a named knob's value out of range, or a table's
    /// field unknown or out of range (the message names it).
    pub fn check(&self) -> Result<(), String> {
        self.check_knobs()?;
        self.table_fields().map(|_| ())
    }
}

/// Scheme `name`'s runs for a sweep: `base` once per combination of the named knobs its
/// family varies ([`crate::Family::sweep`]) and of the swept table fields its family reads.
pub fn variants(name: &str, sweep: &Sweep, base: &SchemeParams) -> Vec<SchemeParams> {
    let Some(family) = registry::family_of(name) else {
        return vec![base.clone()];
    };
    let fields = sweep.table_fields().unwrap_or_default();
    family
        .sweep(name, sweep, base)
        .iter()
        .flat_map(|p| table_variants(name, &fields, p))
        .collect()
}

/// The named knobs, for messages.
const KNOBS: &str = "delay_target_ms, budget, confidence, oracle_slack_frames";

/// Every field path of `fields` whose value is not a table (a list of values, or a mistake
/// [`Sweep::table_fields`] names).
fn leaves_of(prefix: &str, fields: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (key, value) in fields {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => leaves_of(&path, inner, out),
            other => out.push((path, other.clone())),
        }
    }
}

/// The value at dotted `path` in `table`.
fn lookup<'a>(table: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    path.split('.').try_fold(table, |t, key| t.get(key))
}

/// `params`' table `table` (its defaults if not given) with the field at dotted `path` set.
pub(crate) fn set_field(params: &mut SchemeParams, table: &str, path: &str, value: toml::Value) {
    let default = || registry::table(table).map(|t| t.default_value());
    let mut root = params
        .tables
        .get(table)
        .cloned()
        .or_else(default)
        .unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
    let mut at = &mut root;
    let keys: Vec<&str> = path.split('.').collect();
    for key in &keys[..keys.len() - 1] {
        let toml::Value::Table(t) = at else { return };
        at = t
            .entry(key.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
    if let toml::Value::Table(t) = at {
        t.insert(keys[keys.len() - 1].to_string(), value);
    }
    // Written back as the table's type (a float field given an integer reads as a float).
    let root = registry::table(table)
        .and_then(|t| t.normalise(root.clone()).ok())
        .unwrap_or(root);
    params.tables.insert(table.to_string(), root);
}

/// `base` once per combination of the swept table fields that scheme `name`'s family reads
/// (in the sweep's order), or `base` alone when none apply.
pub fn table_variants(name: &str, fields: &[TableField], base: &SchemeParams) -> Vec<SchemeParams> {
    let Some(family) = registry::family_of(name) else {
        return vec![base.clone()];
    };
    let mine = |f: &&TableField| family.tables().iter().any(|t| t.name == f.table);
    let mut out = vec![base.clone()];
    for f in fields.iter().filter(mine) {
        out = out
            .iter()
            .flat_map(|p| {
                each(&f.values, p, |p, v| {
                    set_field(p, &f.table, &f.field, v.clone())
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setting::setting;

    fn sweep(text: &str) -> Sweep {
        toml::from_str(text).unwrap()
    }

    /// A scheme's own parameter, swept by its table's name, names each run by it.
    #[test]
    fn a_tables_field_is_swept_for_the_schemes_that_read_it() {
        let s = sweep("[sprout]\nfragment_payload = [1000, 1200]");
        s.check().unwrap();
        let runs = variants("sprout", &s, &SchemeParams::default());
        let names: Vec<String> = runs.iter().map(|p| setting("sprout", p)).collect();
        // Neither is the default (1400): both runs are named.
        assert_eq!(names, ["fragment_payload 1000", "fragment_payload 1200"]);
        // Other families do not read the table.
        assert_eq!(
            variants("salsify-2c", &s, &SchemeParams::default()).len(),
            1
        );
    }

    #[test]
    fn nested_fields_and_knobs_combine() {
        let s = sweep(
            "delay_target_ms = [50, 100]\n[salsify_receiver.forecast]\nconfidence = [0.5, 0.9]",
        );
        s.check().unwrap();
        let runs = variants("salsify-2c", &s, &SchemeParams::default());
        let names: Vec<String> = runs.iter().map(|p| setting("salsify-2c", p)).collect();
        assert_eq!(
            names,
            [
                "d 50 ms, confidence 0.5",
                "d 50 ms, confidence 0.9",
                "confidence 0.5",
                "confidence 0.9"
            ]
        );
    }

    #[test]
    fn unknown_tables_fields_and_bad_values_are_named() {
        let err = |text: &str| sweep(text).check().unwrap_err();
        assert!(err("[no_table]\nx = [1]").contains("sweep.no_table"));
        assert!(err("[sprout]\nfragment_paylod = [1]").contains("has no field `fragment_paylod`"));
        assert!(err("[sprout]\nfragment_payload = 5").contains("list of values"));
        // Out of the table's range: its own check's message.
        assert!(err("[sprout]\nfragment_payload = [0]").contains("fragment_payload"));
        // Of the wrong type.
        assert!(
            err("[sprout]\nfragment_payload = [\"x\"]").contains("sweep.sprout.fragment_payload")
        );
        assert!(err("knob = [1]").contains("not a knob"));
    }
}
