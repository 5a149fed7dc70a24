//! The scheme parameter tables of an experiment file: one table per name a family registers
//! (`[salsify]`, `[conventional]`, ...), each read and written as its family's type.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::SchemeError;

/// The parameter tables given, by name. Each defaults to its family's documented values;
/// only the tables of the scheme run are read. Written out in the registry's order, each
/// table with every field of its type (the evaluation hashes the text into run ids); the
/// registry reads and checks each table as its family's type (`registry.rs`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemeParams {
    pub(crate) tables: BTreeMap<String, toml::Value>,
}

impl SchemeParams {
    /// The table `name` as type `T`, if given.
    pub fn get<T: DeserializeOwned>(&self, name: &'static str) -> Result<Option<T>, SchemeError> {
        self.tables
            .get(name)
            .map(|v| {
                v.clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| SchemeError::Invalid {
                        scheme: name,
                        why: e.to_string(),
                    })
            })
            .transpose()
    }

    /// The table `name` as type `T`, its defaults when not given.
    pub fn get_or_default<T: DeserializeOwned + Default>(
        &self,
        name: &'static str,
    ) -> Result<T, SchemeError> {
        Ok(self.get(name)?.unwrap_or_default())
    }

    /// Sets table `name` to `value` (every field).
    pub fn set<T: Serialize>(&mut self, name: &str, value: &T) {
        let value = toml::Value::try_from(value).expect("a parameter table serialises");
        self.tables.insert(name.to_string(), value);
    }

    /// Changes table `name` (its defaults if not given) with `f`.
    pub fn update<T: Serialize + DeserializeOwned + Default>(
        &mut self,
        name: &'static str,
        f: impl FnOnce(&mut T),
    ) {
        let mut value: T = self.get(name).ok().flatten().unwrap_or_default();
        f(&mut value);
        self.set(name, &value);
    }

    /// Whether table `name` is given.
    pub fn has(&self, name: &str) -> bool {
        self.tables.contains_key(name)
    }
}

/// A value as a person writes it: `50` not `50.0`, `ewma` not `"ewma"`.
pub fn plain(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
        toml::Value::Float(f) => format!("{f}"),
        toml::Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(plain).collect();
            format!("[{}]", inner.join(" "))
        }
        other => other.to_string(),
    }
}
