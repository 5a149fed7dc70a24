//! The knobs a frontier sweep varies (an evaluation group's `[group.sweep]`); each family
//! reads the ones that apply to its schemes ([`crate::Family::sweep`]).
//!
//! ```toml
//! [group.sweep]
//! delay_target_ms = [25, 50, 100, 200]   # Salsify's d (every salsify-* scheme)
//! budget = ["ewma", "forecast"]          # Salsify's budget source
//! confidence = [0.5, 0.95]               # the forecast's confidence (Salsify with the
//!                                        # forecast budget, and Sprout's video schemes)
//! oracle_slack_frames = [0, 0.5, 2, 8]   # the oracle's quality slack
//!
//! [group.sweep.sprout]                   # any field of any scheme's parameter table
//! fragment_payload = [1000, 1200]
//! ```
//!
//! A table's sweep ([`Sweep::tables`]) applies to the schemes whose family reads that table;
//! each field is checked against the table (an unknown one, or a value out of its range, is an
//! error naming it).

pub use salsify_transport::BudgetSource;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The knobs a group sweeps (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sweep {
    /// Salsify's delay target in ms (`[salsify] delay_target_ms`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_target_ms: Vec<f64>,
    /// Salsify's budget source (`[salsify] budget`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub budget: Vec<BudgetSource>,
    /// The forecast's confidence (`[salsify_receiver.forecast] confidence` where the budget
    /// is the forecast, `[sprout.forecast] confidence` for Sprout's video schemes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub confidence: Vec<f64>,
    /// The oracle's quality slack in frame intervals (`[oracle] quality_slack_frames`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oracle_slack_frames: Vec<f64>,
    /// Fields of scheme parameter tables, by table (`[group.sweep.TABLE] FIELD = [...]`; a
    /// nested field as `forecast.confidence = [...]`): each field's list of values. Any other
    /// key lands here too and is refused by [`Sweep::check`].
    #[serde(flatten)]
    pub tables: BTreeMap<String, toml::Value>,
}

/// One swept field of a table: its dotted path and values.
#[derive(Clone, Debug, PartialEq)]
pub struct TableField {
    /// The table's name.
    pub table: String,
    /// The field's dotted path in the table.
    pub field: String,
    /// The values to run.
    pub values: Vec<toml::Value>,
}

impl Sweep {
    /// True when nothing is swept.
    pub fn is_empty(&self) -> bool {
        *self == Sweep::default()
    }

    /// Why a named knob's values are invalid, if they are ([`Sweep::check`] checks the
    /// tables' fields too).
    pub(crate) fn check_knobs(&self) -> Result<(), String> {
        if let Some(d) = self
            .delay_target_ms
            .iter()
            .find(|d| !(d.is_finite() && **d > 0.0))
        {
            return Err(format!(
                "sweep.delay_target_ms: {d} is not a positive number of ms"
            ));
        }
        if let Some(c) = self.confidence.iter().find(|c| !(**c > 0.0 && **c < 1.0)) {
            return Err(format!("sweep.confidence: {c} is not between 0 and 1"));
        }
        if let Some(s) = self
            .oracle_slack_frames
            .iter()
            .find(|s| !(s.is_finite() && **s >= 0.0))
        {
            return Err(format!(
                "sweep.oracle_slack_frames: {s} is not a number >= 0"
            ));
        }
        Ok(())
    }
}

/// `base` with `set` applied for each value, or `base` alone when there are none.
pub fn each<P: Clone, T>(values: &[T], base: &P, set: impl Fn(&mut P, &T)) -> Vec<P> {
    if values.is_empty() {
        return vec![base.clone()];
    }
    values
        .iter()
        .map(|v| {
            let mut p = base.clone();
            set(&mut p, v);
            p
        })
        .collect()
}
