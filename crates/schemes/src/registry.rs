//! The registry: the scheme families a process runs, and what drivers ask of a scheme by name.
//!
//! A [`Registry`] is a value: [`Registry::builtin`] holds the families in `families/mod.rs`,
//! and [`Registry::with`] adds one from any crate, refusing a family whose scheme names,
//! table names or wire ids another family already claims. The binary assembles it and
//! [`install`]s it once, before any driver runs; the drivers (the simulator, the runtime,
//! the evaluation, the command) and the experiment-file reader ask the installed one through
//! the functions below (reading an experiment file's tables happens inside serde, where no
//! value can be handed in, so the registry is the process's). A process that installs
//! none runs the built-in families.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use salsify_netem::LinkModel;
use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::SchemeError;
use crate::families::FAMILIES;
use crate::family::{Family, Runs, SchemeConfig, SchemeInfo, SchemeRole, TableInfo};
use crate::params::SchemeParams;

/// The scheme families a process runs, in the order lists and legends show them.
#[derive(Clone)]
pub struct Registry {
    families: Vec<&'static dyn Family>,
    /// Link models added beside the simulator's built-in presets ([`Registry::with_link`]).
    links: Vec<&'static dyn LinkModel>,
}

/// Why a family (or a link model) was refused: it claims what one already in the registry
/// claims.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{added}` cannot join the registry: {what} is already claimed by `{holder}`")]
pub struct RegistryError {
    /// The family (or link model) refused.
    pub added: &'static str,
    /// The family (or link model) already holding the claim.
    pub holder: &'static str,
    /// What both claim (`wire id plugin 1 (code 129)`, `scheme name x`, `table [x]`).
    pub what: String,
}

impl Registry {
    /// The built-in families (`families/mod.rs`).
    pub fn builtin() -> Registry {
        let mut registry = Registry {
            families: vec![],
            links: vec![],
        };
        for family in FAMILIES {
            registry = registry
                .with(*family)
                .unwrap_or_else(|e| panic!("the built-in families clash: {e}"));
        }
        registry
    }

    /// This registry with `family` added after the others, or why not: a scheme name, a
    /// table name, a family id or a wire id it claims is another family's (the error names
    /// both families).
    pub fn with(mut self, family: &'static dyn Family) -> Result<Registry, RegistryError> {
        for held in &self.families {
            if let Some(what) = clash(*held, family) {
                return Err(RegistryError {
                    added: family.id(),
                    holder: held.id(),
                    what,
                });
            }
        }
        self.families.push(family);
        Ok(self)
    }

    /// This registry with link model `model` added, or why not: another model holds its name.
    /// A built-in preset of the same name wins over it (the simulator reads its presets first).
    pub fn with_link(mut self, model: &'static dyn LinkModel) -> Result<Registry, RegistryError> {
        if let Some(held) = self.links.iter().find(|l| l.name() == model.name()) {
            return Err(RegistryError {
                added: model.name(),
                holder: held.name(),
                what: format!("link name {}", model.name()),
            });
        }
        self.links.push(model);
        Ok(self)
    }

    /// The link models added, in registration order.
    pub fn links(&self) -> impl Iterator<Item = &'static dyn LinkModel> + '_ {
        self.links.iter().copied()
    }

    /// Every family, in registration order.
    pub fn families(&self) -> impl Iterator<Item = &'static dyn Family> + '_ {
        self.families.iter().copied()
    }

    /// Every scheme of every family, in registration order (browser peers included).
    pub fn schemes(&self) -> impl Iterator<Item = &'static SchemeInfo> + '_ {
        self.families().flat_map(|f| f.schemes().iter())
    }

    /// The family that owns scheme `name`.
    pub fn family_of(&self, name: &str) -> Option<&'static dyn Family> {
        self.families()
            .find(|f| f.schemes().iter().any(|s| s.name == name))
    }

    /// Every parameter table, in registration order.
    pub fn tables(&self) -> impl Iterator<Item = &'static TableInfo> + '_ {
        self.families().flat_map(|f| f.tables().iter())
    }
}

/// What `added` claims that `held` already does, in words.
fn clash(held: &dyn Family, added: &dyn Family) -> Option<String> {
    if held.id() == added.id() {
        return Some(format!("family id {}", added.id()));
    }
    let held_wire = held.wire_ids();
    if let Some(id) = added.wire_ids().into_iter().find(|w| held_wire.contains(w)) {
        return Some(format!("wire id {id:?} (code {})", id.wire_id()));
    }
    for s in added.schemes() {
        if held.schemes().iter().any(|h| h.name == s.name) {
            return Some(format!("scheme name {}", s.name));
        }
    }
    for t in added.tables() {
        if held.tables().iter().any(|h| h.name == t.name) {
            return Some(format!("table [{}]", t.name));
        }
    }
    None
}

static INSTALLED: OnceLock<Registry> = OnceLock::new();

/// Makes `registry` the process's, before any driver asks (a binary's `main` does this).
/// Installing again is accepted when the families are the same ones (a test process whose
/// tests each install it); otherwise the error says which registry is in place.
pub fn install(registry: Registry) -> Result<(), String> {
    let ids = |r: &Registry| {
        let links = r.links().map(|l| l.name());
        r.families()
            .map(|f| f.id())
            .chain(links)
            .collect::<Vec<_>>()
    };
    let wanted = ids(&registry);
    let held = INSTALLED.get_or_init(|| registry);
    if ids(held) == wanted {
        Ok(())
    } else {
        Err(format!(
            "a registry is already in place (families {}); install the registry before anything asks for a scheme",
            ids(held).join(", ")
        ))
    }
}

/// The process's registry: the one [`install`]ed, or the built-in families.
pub fn installed() -> &'static Registry {
    INSTALLED.get_or_init(Registry::builtin)
}

/// The link model called `name` among those added ([`Registry::with_link`]).
pub fn link_model(name: &str) -> Option<&'static dyn LinkModel> {
    installed().links().find(|l| l.name() == name)
}

/// Every registered family, in registration order.
pub fn families() -> impl Iterator<Item = &'static dyn Family> {
    installed().families()
}

/// Every scheme of every family, in registration order (browser peers included).
pub fn schemes() -> impl Iterator<Item = &'static SchemeInfo> {
    installed().schemes()
}

/// The scheme called `name`.
pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    schemes().find(|s| s.name == name)
}

/// The family that owns scheme `name`.
pub fn family_of(name: &str) -> Option<&'static dyn Family> {
    installed().family_of(name)
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
pub fn with_role(role: SchemeRole) -> Vec<&'static str> {
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
pub fn the(role: SchemeRole) -> &'static str {
    with_role(role)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no scheme plays {role:?}"))
}

/// The scheme `--scheme` and experiment files default to.
pub fn default_scheme() -> &'static str {
    the(SchemeRole::Default)
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
    installed().tables()
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
    use salsify_baselines::WireId;
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
        for role in [
            SchemeRole::Default,
            SchemeRole::Salsify,
            SchemeRole::Webrtc,
            SchemeRole::Bound,
        ] {
            assert_eq!(with_role(role).len(), 1, "{role:?}");
        }
        assert!(!with_role(SchemeRole::Main).is_empty());
    }

    /// A family for the refusal tests: a name, and the wire id it claims.
    struct Claims(&'static str, &'static [SchemeInfo], WireId);

    impl Family for Claims {
        fn id(&self) -> &'static str {
            self.0
        }
        fn schemes(&self) -> &'static [SchemeInfo] {
            self.1
        }
        fn wire_ids(&self) -> Vec<WireId> {
            vec![self.2]
        }
        fn configure(&self, name: &str, _: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
            Err(unknown(name))
        }
    }

    const fn info(name: &'static str) -> SchemeInfo {
        SchemeInfo {
            name,
            about: "a test family",
            runs: Runs::SimulatorOnly,
            sends_video: true,
            color: "#123456",
            marker: crate::Marker::Star,
            roles: &[],
        }
    }

    static FIRST: Claims = Claims("first", &[info("first")], WireId::Plugin(7));
    static SECOND: Claims = Claims("second", &[info("second")], WireId::Plugin(7));
    static THIRD: Claims = Claims("third", &[info("third")], WireId::Plugin(8));
    static STEALS_WEBRTC: Claims = Claims("steals", &[info("steals")], WireId::Conventional);
    static SAME_NAME: Claims = Claims("same-name", &[info("first")], WireId::Plugin(9));

    #[test]
    fn two_families_claiming_one_wire_id_are_refused_naming_both() {
        let registry = Registry::builtin().with(&FIRST).unwrap();
        let err = registry.clone().with(&SECOND).err().expect("refused");
        let message = err.to_string();
        assert!(
            message.contains("`second`") && message.contains("`first`"),
            "{message}"
        );
        assert!(
            message.contains("Plugin(7)") && message.contains("135"),
            "{message}"
        );
        // A family with an id of its own joins, after the others.
        let registry = registry.with(&THIRD).unwrap();
        assert_eq!(registry.families().last().unwrap().id(), "third");
        assert!(registry.family_of("third").is_some());
        // A built-in id, or a scheme name already taken, is refused as well.
        let err = Registry::builtin().with(&STEALS_WEBRTC).err().unwrap();
        assert_eq!((err.added, err.holder), ("steals", "conventional"));
        let err = registry.with(&SAME_NAME).err().unwrap();
        assert_eq!(
            (err.holder, err.what.as_str()),
            ("first", "scheme name first")
        );
    }

    struct Flat(&'static str);

    impl LinkModel for Flat {
        fn name(&self) -> &'static str {
            self.0
        }
        fn about(&self) -> &'static str {
            "a flat test link"
        }
        fn capacity(
            &self,
            _seed: u64,
        ) -> Result<salsify_netem::Trace, salsify_netem::GeneratorError> {
            salsify_netem::generators::constant(salsify_netem::Bitrate::mbps(1))
        }
    }

    static FLAT: Flat = Flat("flat");
    static FLAT_AGAIN: Flat = Flat("flat");

    #[test]
    fn a_link_model_joins_once_by_name() {
        let registry = Registry::builtin().with_link(&FLAT).unwrap();
        assert_eq!(
            registry.links().map(|l| l.name()).collect::<Vec<_>>(),
            ["flat"]
        );
        let err = registry.with_link(&FLAT_AGAIN).err().expect("refused");
        assert_eq!(err.what, "link name flat");
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
