//! A group's sweep: each scheme's own knob at several values, so the report can draw each
//! scheme's quality-delay frontier (`figures = ["frontier"]`) and compare schemes at equal
//! quality rather than at one operating point each.
//!
//! ```toml
//! [group.sweep]
//! delay_target_ms = [25, 50, 100, 200]   # Salsify's d (every salsify-* scheme)
//! budget = ["ewma", "forecast"]          # Salsify's budget source
//! confidence = [0.5, 0.95]               # the forecast's confidence (Salsify with the
//!                                        # forecast budget, and Sprout's video schemes)
//! oracle_slack_frames = [0, 0.5, 2, 8]   # the oracle's quality slack
//! ```
//!
//! A scheme runs once per combination of the lists that apply to it (an empty or absent list
//! leaves the defaults' value), so the conventional scheme, which has none of these knobs,
//! still runs once.

use serde::{Deserialize, Serialize};

use salsify_sim::experiment::Experiment;
use salsify_transport::BudgetSource;

/// The knobs a group sweeps (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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
}

impl Sweep {
    /// True when nothing is swept.
    pub fn is_empty(&self) -> bool {
        *self == Sweep::default()
    }

    /// Why the sweep is invalid, if it is.
    pub fn check(&self) -> Result<(), String> {
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

    /// `base` once per combination of the knobs that apply to its scheme.
    pub fn variants(&self, base: &Experiment) -> Vec<Experiment> {
        let scheme = base.scheme.as_str();
        if scheme.starts_with("salsify-") && scheme != "salsify-paper" {
            self.salsify_variants(base)
        } else if scheme == "oracle" {
            each(&self.oracle_slack_frames, base, |e, &slack| {
                e.oracle
                    .get_or_insert_with(Default::default)
                    .quality_slack_frames = slack;
            })
        } else if matches!(scheme, "sprout" | "sprout-ewma") {
            each(&self.confidence, base, |e, &c| {
                e.sprout
                    .get_or_insert_with(Default::default)
                    .forecast
                    .confidence = c;
            })
        } else {
            vec![base.clone()]
        }
    }

    fn salsify_variants(&self, base: &Experiment) -> Vec<Experiment> {
        let mut out = Vec::new();
        for with_budget in each(&self.budget, base, |e, &b| {
            e.salsify.get_or_insert_with(Default::default).budget = b;
        }) {
            let forecast = with_budget
                .salsify
                .as_ref()
                .is_some_and(|s| s.budget == BudgetSource::Forecast);
            let confidences: &[f64] = if forecast { &self.confidence } else { &[] };
            for with_confidence in each(confidences, &with_budget, |e, &c| {
                e.salsify_receiver
                    .get_or_insert_with(Default::default)
                    .forecast
                    .confidence = c;
            }) {
                out.extend(each(&self.delay_target_ms, &with_confidence, |e, &d| {
                    e.salsify.get_or_insert_with(Default::default).delay_target =
                        salsify_time::Duration::from_secs_f64(d / 1000.0);
                }));
            }
        }
        out
    }
}

/// A run's swept settings in words (`d 50 ms, forecast`, `slack 2`), for tables and
/// legends; empty for a scheme without knobs.
pub fn setting(e: &Experiment) -> String {
    let scheme = e.scheme.as_str();
    if scheme.starts_with("salsify-") {
        let sender = e.salsify.clone().unwrap_or_default();
        let mut out = format!(
            "d {} ms, {}",
            sender.delay_target.as_secs_f64() * 1000.0,
            match sender.budget {
                BudgetSource::Forecast => "forecast",
                _ => "ewma",
            }
        );
        let confidence = e
            .salsify_receiver
            .as_ref()
            .map_or(0.95, |r| r.forecast.confidence);
        if sender.budget == BudgetSource::Forecast && confidence != 0.95 {
            out += &format!(" {confidence}");
        }
        out
    } else if scheme == "oracle" {
        let slack = e.oracle.unwrap_or_default().quality_slack_frames;
        format!("slack {slack}")
    } else if matches!(scheme, "sprout" | "sprout-ewma") {
        let c = e.sprout.unwrap_or_default().forecast.confidence;
        format!("confidence {c}")
    } else {
        String::new()
    }
}

/// `base` with `set` applied for each value, or `base` alone when there are none.
fn each<T>(values: &[T], base: &Experiment, set: impl Fn(&mut Experiment, &T)) -> Vec<Experiment> {
    if values.is_empty() {
        return vec![base.clone()];
    }
    values
        .iter()
        .map(|v| {
            let mut e = base.clone();
            set(&mut e, v);
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> Sweep {
        toml::from_str(
            "delay_target_ms = [25, 100]\nbudget = [\"ewma\", \"forecast\"]\nconfidence = [0.5, 0.95]\noracle_slack_frames = [0, 2, 8]",
        )
        .unwrap()
    }

    fn with_scheme(scheme: &str) -> Experiment {
        Experiment {
            scheme: scheme.into(),
            ..Experiment::default()
        }
    }

    #[test]
    fn each_scheme_sweeps_its_own_knobs() {
        let s = sweep();
        s.check().unwrap();
        // ewma x 2 targets + forecast x 2 confidences x 2 targets.
        let salsify = s.variants(&with_scheme("salsify-2c"));
        assert_eq!(salsify.len(), 2 + 4);
        let forecast = salsify
            .iter()
            .filter(|e| e.salsify.as_ref().unwrap().budget == BudgetSource::Forecast)
            .count();
        assert_eq!(forecast, 4);
        assert_eq!(s.variants(&with_scheme("oracle")).len(), 3);
        assert_eq!(s.variants(&with_scheme("sprout")).len(), 2);
        assert_eq!(s.variants(&with_scheme("conventional")).len(), 1);
        // The paper's sender stays the paper's.
        assert_eq!(s.variants(&with_scheme("salsify-paper")).len(), 1);
        // Nothing swept: the run as it was.
        let none = Sweep::default().variants(&with_scheme("salsify-2c"));
        assert_eq!(none, vec![with_scheme("salsify-2c")]);
    }

    #[test]
    fn settings_name_the_knobs() {
        let s = sweep();
        let names: Vec<String> = s
            .variants(&with_scheme("salsify-2c"))
            .iter()
            .map(setting)
            .collect();
        assert!(names.contains(&"d 25 ms, ewma".to_string()), "{names:?}");
        assert!(
            names.contains(&"d 100 ms, forecast 0.5".to_string()),
            "{names:?}"
        );
        assert!(
            names.contains(&"d 100 ms, forecast".to_string()),
            "{names:?}"
        );
        let oracle: Vec<String> = s
            .variants(&with_scheme("oracle"))
            .iter()
            .map(setting)
            .collect();
        assert_eq!(oracle, ["slack 0", "slack 2", "slack 8"]);
        assert_eq!(setting(&with_scheme("conventional")), "");
    }

    #[test]
    fn bad_values_are_named() {
        let bad: Sweep = toml::from_str("confidence = [1.5]").unwrap();
        assert!(bad.check().unwrap_err().contains("confidence"));
        let bad: Sweep = toml::from_str("delay_target_ms = [0]").unwrap();
        assert!(bad.check().unwrap_err().contains("delay_target_ms"));
        assert!(toml::from_str::<Sweep>("knob = [1]").is_err());
    }
}
