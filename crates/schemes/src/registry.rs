//! The registry: every scheme family, and what drivers ask of a scheme by name. The list of
//! families is in `families/mod.rs` (one line per family).

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::SchemeError;
use crate::families::FAMILIES;
use crate::family::{Family, Role, Runs, SchemeConfig, SchemeInfo, TableInfo};
use crate::params::SchemeParams;

/// Every registered family, in registration order.
pub fn families() -> impl Iterator<Item = &'static dyn Family> {
    FAMILIES.iter().copied()
}

/// Every scheme of every family, in registration order (browser peers included).
pub fn schemes() -> impl Iterator<Item = &'static SchemeInfo> {
    families().flat_map(|f| f.schemes().iter())
}

/// The scheme called `name`.
pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    schemes().find(|s| s.name == name)
}

/// The family that owns scheme `name`.
pub fn family_of(name: &str) -> Option<&'static dyn Family> {
    families().find(|f| f.schemes().iter().any(|s| s.name == name))
}

/// The names of the schemes our endpoints run (in the simulator, and live where they can):
/// every scheme but the browser peers.
pub fn scheme_names() -> Vec<&'static str> {
    schemes()
        .filter(|s| !matches!(s.runs, Runs::Peer(_)))
        .map(|s| s.name)
        .collect()
}

/// The names of the browser peers (run live by `salsify-peer`).
pub fn peer_names() -> Vec<&'static str> {
    schemes()
        .filter(|s| matches!(s.runs, Runs::Peer(_)))
        .map(|s| s.name)
        .collect()
}

/// The schemes that play group role `role`, by rank.
pub fn with_role(role: Role) -> Vec<&'static str> {
    let mut out: Vec<(u8, &'static str)> = schemes()
        .filter_map(|s| s.rank(role).map(|n| (n, s.name)))
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out.into_iter().map(|(_, name)| name).collect()
}

/// The scheme that plays a single role (the first by rank).
///
/// # Panics
/// If no registered scheme plays it (the registry's own tests check every role is taken).
pub fn the(role: Role) -> &'static str {
    with_role(role)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no scheme plays {role:?}"))
}

/// The scheme `--scheme` and experiment files default to.
pub fn default_scheme() -> &'static str {
    the(Role::Default)
}

/// Whether schemes `a` and `b` belong to the same family.
pub fn same_family(a: &str, b: &str) -> bool {
    match (family_of(a), family_of(b)) {
        (Some(x), Some(y)) => x.id() == y.id(),
        _ => false,
    }
}

/// The scheme that sent `datagram`, as far as its wire tells (a receiver learns the scheme
/// it serves from the first one).
pub fn scheme_of_datagram(datagram: &[u8]) -> Option<&'static str> {
    families().find_map(|f| f.scheme_of_datagram(datagram))
}

/// Whether `datagram` is one a sender of some registered scheme sends.
pub fn from_a_sender(datagram: &[u8]) -> bool {
    families().any(|f| f.is_sender_datagram(datagram))
}

/// The scheme whose receiver serves a sender of scheme `name`.
pub fn receiver_scheme(name: &str) -> Option<&'static str> {
    family_of(name).map(|f| f.receiver_scheme(name))
}

/// Every parameter table, in registration order.
pub fn tables() -> impl Iterator<Item = &'static TableInfo> {
    families().flat_map(|f| f.tables().iter())
}

/// The table called `name`.
pub fn table(name: &str) -> Option<&'static TableInfo> {
    tables().find(|t| t.name == name)
}

/// [`SchemeError::Unknown`] for `name`, listing the names there are.
pub fn unknown(name: &str) -> SchemeError {
    SchemeError::Unknown(name.to_string(), scheme_names().join(", "))
}

impl SchemeConfig {
    /// The scheme called `name`, with `params` for its family.
    pub fn named(name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        params.validate()?;
        let family = family_of(name).ok_or_else(|| unknown(name))?;
        family.configure(name, params)
    }
}

impl SchemeParams {
    /// Checks every table given against its family's type and ranges (the error names the
    /// table and the field).
    pub fn validate(&self) -> Result<(), SchemeError> {
        for (name, value) in &self.tables {
            let Some(table) = table(name) else {
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
        let known = tables().map(|t| t.name);
        let mut order: Vec<&str> = known.filter(|n| self.tables.contains_key(*n)).collect();
        order.extend(
            self.tables
                .keys()
                .map(String::as_str)
                .filter(|n| table(n).is_none()),
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
        let mut read = BTreeMap::new();
        for (name, value) in given {
            let Some(table) = table(&name) else {
                return Err(D::Error::custom(format!(
                    "unknown field `{name}` (not a field, nor a scheme's parameter table: {})",
                    tables().map(|t| t.name).collect::<Vec<_>>().join(", ")
                )));
            };
            let value = table
                .normalise(value)
                .map_err(|e| D::Error::custom(format!("[{name}]: {e}")))?;
            read.insert(name, value);
        }
        Ok(SchemeParams { tables: read })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_colours_and_tables_are_unique_and_single_roles_taken() {
        let mut names = HashSet::new();
        let mut colors = HashSet::new();
        for s in schemes() {
            assert!(names.insert(s.name), "{} twice", s.name);
            assert!(
                colors.insert(s.color),
                "{} shares colour {}",
                s.name,
                s.color
            );
        }
        let mut tables = HashSet::new();
        for t in super::tables() {
            assert!(tables.insert(t.name), "table {} twice", t.name);
        }
        for role in [Role::Default, Role::Salsify, Role::Webrtc, Role::Bound] {
            assert_eq!(with_role(role).len(), 1, "{role:?}");
        }
        assert!(!with_role(Role::Main).is_empty());
    }

    #[test]
    fn every_scheme_configures_and_reports_itself() {
        for s in schemes() {
            let configured = crate::SchemeConfig::named(s.name, &Default::default());
            match s.runs {
                Runs::Peer(_) => assert!(configured.is_err(), "{}", s.name),
                runs => {
                    let c = configured.unwrap();
                    assert_eq!(c.name(), s.name);
                    assert_eq!(c.runs_live(), runs == Runs::Anywhere, "{}", s.name);
                    let r = receiver_scheme(s.name).unwrap();
                    let receiver = crate::SchemeConfig::named(r, &Default::default()).unwrap();
                    assert!(receiver.serves(s.name), "{r} serves {}", s.name);
                }
            }
        }
        assert!(matches!(
            crate::SchemeConfig::named("no-such-scheme", &Default::default()),
            Err(crate::SchemeError::Unknown(..))
        ));
    }
}
