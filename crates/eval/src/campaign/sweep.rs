//! A group's sweep: each scheme's own knob at several values, so the report can draw each
//! scheme's quality-delay frontier (`figures = ["frontier"]`) and compare schemes at equal
//! quality rather than at one operating point each. The knobs ([`Sweep`]) are listed in
//! `salsify_schemes::Sweep`; which apply to a scheme, and how, is its family's business.
//!
//! A scheme runs once per combination of the lists that apply to it (an empty or absent list
//! leaves the defaults' value), so a scheme with none of these knobs still runs once.

use salsify_schemes::registry;
pub use salsify_schemes::Sweep;
use salsify_sim::experiment::Experiment;

/// `base` once per combination of the knobs and table fields that apply to its scheme.
pub fn variants(sweep: &Sweep, base: &Experiment) -> Vec<Experiment> {
    salsify_schemes::sweep_variants(&base.scheme, sweep, &base.params)
        .into_iter()
        .map(|params| Experiment {
            params,
            ..base.clone()
        })
        .collect()
}

/// What a run's parameters change from its scheme's defaults, in words (`d 50 ms, ewma`,
/// `slack 2`), for tables and legends; empty for the defaults.
pub fn setting(e: &Experiment) -> String {
    salsify_schemes::setting(&e.scheme, &e.params)
}

/// A run's name in tables and legends: its scheme and, when it has one, its setting
/// (`salsify-2c [d 50 ms]`).
pub fn run_name(e: &Experiment) -> String {
    salsify_schemes::run_name(&e.scheme, &e.params)
}

/// The line a run is drawn on in a frontier chart: its scheme, and whatever its family adds
/// (Salsify: its budget source).
pub fn series(e: &Experiment) -> String {
    registry::family_of(&e.scheme)
        .map_or_else(|| e.scheme.clone(), |f| f.series(&e.scheme, &e.params))
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
        let salsify = variants(&s, &with_scheme("salsify-2c"));
        assert_eq!(salsify.len(), 2 + 4);
        let ewma = salsify
            .iter()
            .filter(|e| setting(e).contains("ewma"))
            .count();
        assert_eq!(ewma, 2);
        assert_eq!(variants(&s, &with_scheme("oracle")).len(), 3);
        assert_eq!(variants(&s, &with_scheme("sprout")).len(), 2);
        assert_eq!(variants(&s, &with_scheme("conventional")).len(), 1);
        // The paper's sender stays the paper's.
        assert_eq!(variants(&s, &with_scheme("salsify-paper")).len(), 1);
        // Nothing swept: the run as it was.
        let none = variants(&Sweep::default(), &with_scheme("salsify-2c"));
        assert_eq!(none, vec![with_scheme("salsify-2c")]);
    }

    #[test]
    fn settings_name_the_knobs() {
        let s = sweep();
        let names: Vec<String> = variants(&s, &with_scheme("salsify-2c"))
            .iter()
            .map(setting)
            .collect();
        // Only what differs from the defaults (d 100 ms, the forecast at 0.95).
        assert_eq!(
            names,
            [
                "d 25 ms, ewma",
                "ewma",
                "d 25 ms, confidence 0.5",
                "confidence 0.5",
                "d 25 ms",
                ""
            ]
        );
        // Every run of the sweep has a name of its own.
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let oracle: Vec<String> = variants(&s, &with_scheme("oracle"))
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
        let unknown: Sweep = toml::from_str("knob = [1]").unwrap();
        assert!(unknown.check().unwrap_err().contains("sweep.knob"));
    }
}
