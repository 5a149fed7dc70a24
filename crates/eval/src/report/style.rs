//! How each system looks in every figure: one fixed colour and marker shape per scheme name
//! (every simulated scheme and every live-only system), so a reader can follow a system from
//! one chart to the next; and how a live run is told from a simulated run of the same
//! scheme (dashed lines, outlined markers, "(live)" in the legend).

use super::plot::{Marker, Series};
use crate::campaign::live::CHROMIUM_SYSTEMS;
use crate::experiment::SCHEMES;

/// A system's colour and marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// A CSS colour.
    pub color: &'static str,
    /// Its markers' shape.
    pub marker: Marker,
}

/// The fixed styles. The main comparison (Salsify-2c/1c, conventional, Vidaptive, the
/// oracle, Chromium) takes Okabe and Ito's colours, told apart by most colour-blind
/// readers, each with a shape of its own; the ablations, variants and Sprout take further
/// colours, with shapes that differ from their neighbours' in hue.
const STYLES: &[(&str, &str, Marker)] = &[
    ("salsify-2c", "#0072B2", Marker::Circle),
    ("salsify-1c", "#56B4E9", Marker::Square),
    ("conventional", "#D55E00", Marker::TriangleUp),
    ("vidaptive", "#009E73", Marker::Diamond),
    ("oracle", "#000000", Marker::Star),
    ("chromium-vp8", "#CC79A7", Marker::TriangleDown),
    ("chromium-vp9-svc", "#E69F00", Marker::Plus),
    ("chromium-av1", "#8C564B", Marker::Cross),
    ("salsify-paper", "#332288", Marker::Diamond),
    ("salsify-no-grace", "#88CCEE", Marker::TriangleDown),
    ("salsify-conventional-codec", "#44AA99", Marker::Cross),
    ("salsify-conventional-transport", "#AA4499", Marker::Plus),
    ("sprout", "#882255", Marker::Circle),
    ("sprout-ewma", "#DDCC77", Marker::Square),
    ("sprout-bulk", "#117733", Marker::Star),
    ("sprout-ewma-bulk", "#999933", Marker::Diamond),
];

/// A system the table does not know (a scheme added since): grey crosses, never one of the
/// known systems' colours.
const UNKNOWN: Style = Style {
    color: "#7F7F7F",
    marker: Marker::Cross,
};

/// Every system name the report knows: the simulator's schemes and the live-only ones.
pub fn known_systems() -> impl Iterator<Item = &'static str> {
    SCHEMES.iter().chain(CHROMIUM_SYSTEMS).copied()
}

/// The style of a system, the same in every figure.
pub fn style(system: &str) -> Style {
    STYLES
        .iter()
        .find(|(name, _, _)| *name == system)
        .map_or(UNKNOWN, |&(_, color, marker)| Style { color, marker })
}

/// A series styled as `system`'s, drawn as a live run's when `live`.
pub fn styled(series: Series, system: &str, live: bool) -> Series {
    let s = style(system);
    let series = series.with_color(s.color).with_marker(s.marker);
    if live {
        series.dashed().hollow()
    } else {
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_known_system_has_a_colour_of_its_own() {
        let mut colors = HashSet::new();
        for system in known_systems() {
            let s = style(system);
            assert_ne!(s, UNKNOWN, "{system} has no style");
            assert!(colors.insert(s.color), "{system} shares colour {}", s.color);
        }
        assert_eq!(colors.len(), SCHEMES.len() + CHROMIUM_SYSTEMS.len());
        // The table names nothing that is not a system (a renamed scheme would keep a stale
        // entry here while the new name fell back to grey).
        for (name, _, _) in STYLES {
            assert!(known_systems().any(|k| k == *name), "{name}");
        }
    }

    #[test]
    fn the_main_systems_have_distinct_shapes_too() {
        let main = [
            "salsify-2c",
            "salsify-1c",
            "conventional",
            "vidaptive",
            "oracle",
            "chromium-vp8",
            "chromium-vp9-svc",
            "chromium-av1",
        ];
        let shapes: HashSet<Marker> = main.iter().map(|m| style(m).marker).collect();
        assert_eq!(shapes.len(), main.len());
    }

    #[test]
    fn a_live_run_is_dashed_and_hollow_in_its_schemes_colour() {
        let sim = styled(Series::line("a", vec![]), "salsify-2c", false);
        let live = styled(Series::line("a", vec![]), "salsify-2c", true);
        assert_eq!(sim.color, live.color);
        assert!(!sim.dashed && live.dashed && live.hollow);
        assert_eq!(style("no-such-scheme"), UNKNOWN);
    }
}
