//! A run's setting: what its parameter tables change from its scheme's defaults, in words
//! (`d 50 ms`, `ewma`, `threshold_ms 25`). Tables, legends, the dashboard's title and
//! `summary.json` name a run by its scheme and this, so two runs of one scheme that differ
//! only in a swept or configured parameter are never shown under the same name.
//!
//! It is computed, not declared: every field of each of the scheme's family's tables is
//! compared with the table's default, so a new scheme's own parameters are named without a
//! line of code; a family may put a field in shorter words ([`crate::Family::describe`]).

use crate::params::{plain, SchemeParams};
use crate::registry;

/// What the setting of a run with the defaults is called where a name is needed.
pub const DEFAULT_SETTING: &str = "default";

/// What `params` change from the defaults of scheme `scheme`'s tables, one phrase per
/// changed field joined by ", ", in the tables' and fields' order; empty when nothing
/// differs (or the scheme is unknown).
pub fn setting(scheme: &str, params: &SchemeParams) -> String {
    let Some(family) = registry::family_of(scheme) else {
        return String::new();
    };
    let mut phrases = Vec::new();
    for table in family.tables() {
        let Some(given) = params.tables.get(table.name) else {
            continue;
        };
        let given = table
            .normalise(given.clone())
            .unwrap_or_else(|_| given.clone());
        let mut changed = Vec::new();
        differences("", &given, &table.defaults_for(&given), &mut changed);
        for (field, value) in changed {
            phrases.push(
                family
                    .describe(scheme, table.name, &field, &value)
                    .unwrap_or_else(|| format!("{field} {}", plain(&value))),
            );
        }
    }
    phrases.join(", ")
}

/// `setting`, or [`DEFAULT_SETTING`] when it is empty.
pub fn setting_or_default(scheme: &str, params: &SchemeParams) -> String {
    let s = setting(scheme, params);
    if s.is_empty() {
        DEFAULT_SETTING.to_string()
    } else {
        s
    }
}

/// A run's name: its scheme, and its setting in brackets when it has one
/// (`salsify-2c [d 50 ms]`).
pub fn run_name(scheme: &str, params: &SchemeParams) -> String {
    match setting(scheme, params) {
        s if s.is_empty() => scheme.to_string(),
        s => format!("{scheme} [{s}]"),
    }
}

/// The leaves of `given` that differ from `default`, as dotted field paths (a nested table's
/// fields as `forecast.confidence`).
fn differences(
    prefix: &str,
    given: &toml::Value,
    default: &toml::Value,
    out: &mut Vec<(String, toml::Value)>,
) {
    match (given, default) {
        (toml::Value::Table(g), toml::Value::Table(d)) => {
            for (key, value) in g {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                match d.get(key) {
                    Some(dv) => differences(&path, value, dv, out),
                    None => out.push((path, value.clone())),
                }
            }
        }
        _ if same(given, default) => {}
        _ => out.push((prefix.to_string(), given.clone())),
    }
}

/// Equal values, numbers compared as numbers (an integer 50 is the float 50.0).
fn same(a: &toml::Value, b: &toml::Value) -> bool {
    match (number(a), number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> SchemeParams {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_defaults_have_no_setting() {
        assert_eq!(setting("salsify-2c", &SchemeParams::default()), "");
        // Given, but equal to the defaults: still nothing.
        assert_eq!(
            setting("salsify-2c", &params("[salsify]\ndelay_target_ms = 100")),
            ""
        );
        assert_eq!(
            setting_or_default("conventional", &SchemeParams::default()),
            "default"
        );
        assert_eq!(
            run_name("salsify-2c", &SchemeParams::default()),
            "salsify-2c"
        );
    }

    #[test]
    fn changed_fields_are_named_in_the_familys_words() {
        let p = params("[salsify]\ndelay_target_ms = 50\nbudget = \"ewma\"");
        assert_eq!(setting("salsify-2c", &p), "d 50 ms, ewma");
        assert_eq!(run_name("salsify-1c", &p), "salsify-1c [d 50 ms, ewma]");
        let p = params("[salsify_receiver.forecast]\nconfidence = 0.5");
        assert_eq!(setting("salsify-2c", &p), "confidence 0.5");
        let p = params("[oracle]\nquality_slack_frames = 2");
        assert_eq!(setting("oracle", &p), "slack 2");
    }

    /// Only the scheme's own tables count: Salsify's table does not name a conventional run.
    #[test]
    fn other_families_tables_are_not_a_setting() {
        let p = params("[salsify]\ndelay_target_ms = 50");
        assert_eq!(setting("conventional", &p), "");
        assert_eq!(setting("no-such-scheme", &p), "");
    }

    #[test]
    fn values_read_as_written() {
        assert_eq!(plain(&toml::Value::Float(50.0)), "50");
        assert_eq!(plain(&toml::Value::Float(0.25)), "0.25");
        assert_eq!(plain(&toml::Value::String("ewma".into())), "ewma");
        assert_eq!(plain(&toml::Value::Boolean(true)), "true");
    }
}
