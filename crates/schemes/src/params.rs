//! The scheme parameter tables of an experiment file: one table per name a family registers
//! (`[salsify]`, `[conventional]`, ...), each read and written as its family's type.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::registry;
use crate::SchemeError;

/// The parameter tables given, by name. Each defaults to its family's documented values;
/// only the tables of the scheme run are read. Written out in the registry's order, each
/// table with every field of its type (the evaluation hashes the text into run ids).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemeParams {
    tables: BTreeMap<String, toml::Value>,
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

    /// Checks every table given against its family's type and ranges (the error names the
    /// table and the field).
    pub fn validate(&self) -> Result<(), SchemeError> {
        for (name, value) in &self.tables {
            let Some(table) = registry::table(name) else {
                return Err(SchemeError::UnknownTable(name.clone()));
            };
            table
                .normalise(value.clone())
                .and_then(|v| table.validate(&v))
                .map_err(|why| SchemeError::Invalid {
                    scheme: table.name,
                    why,
                })?;
        }
        Ok(())
    }
}

impl Serialize for SchemeParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = registry::tables().map(|t| t.name);
        let mut order: Vec<&str> = known.filter(|n| self.tables.contains_key(*n)).collect();
        order.extend(
            self.tables
                .keys()
                .map(String::as_str)
                .filter(|n| registry::table(n).is_none()),
        );
        let mut map = serializer.serialize_map(Some(order.len()))?;
        for name in order {
            map.serialize_entry(name, &self.tables[name])?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SchemeParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let given = BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
        let mut tables = BTreeMap::new();
        for (name, value) in given {
            let Some(table) = registry::table(&name) else {
                return Err(D::Error::custom(format!(
                    "unknown field `{name}` (not a field, nor a scheme's parameter table: {})",
                    registry::tables()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            let value = table
                .normalise(value)
                .map_err(|e| D::Error::custom(format!("[{name}]: {e}")))?;
            tables.insert(name, value);
        }
        Ok(SchemeParams { tables })
    }
}
