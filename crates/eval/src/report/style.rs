//! How each system looks in every figure: one fixed colour and marker shape per scheme name
//! (every simulated scheme and every live-only system), so a reader can follow a system from
//! one chart to the next; and how a live run is told from a simulated run of the same
//! scheme (dashed lines, outlined markers, "(live)" in the legend).

use super::plot::{Marker, Series};
use salsify_schemes::registry;

/// A system's colour and marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// A CSS colour.
    pub color: &'static str,
    /// Its markers' shape.
    pub marker: Marker,
}

/// A system the registry does not know (a run of a scheme since removed): grey crosses, never one of the
/// known systems' colours.
const UNKNOWN: Style = Style {
    color: "#7F7F7F",
    marker: Marker::Cross,
};

/// Every system name the report knows: every registered scheme, browser peers included.
pub fn known_systems() -> impl Iterator<Item = &'static str> {
    registry::schemes().map(|s| s.name)
}

/// The style of a system, the same in every figure: its family's choice.
pub fn style(system: &str) -> Style {
    registry::scheme(system).map_or(UNKNOWN, |s| Style {
        color: s.color,
        marker: marker(s.marker),
    })
}

fn marker(m: salsify_schemes::Marker) -> Marker {
    use salsify_schemes::Marker as M;
    match m {
        M::Circle => Marker::Circle,
        M::Square => Marker::Square,
        M::TriangleUp => Marker::TriangleUp,
        M::TriangleDown => Marker::TriangleDown,
        M::Diamond => Marker::Diamond,
        M::Star => Marker::Star,
        M::Plus => Marker::Plus,
        M::Cross => Marker::Cross,
    }
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
        assert_eq!(colors.len(), known_systems().count());
    }

    #[test]
    fn the_main_systems_have_distinct_shapes_too() {
        let mut main = registry::with_role(salsify_schemes::Role::Main);
        main.extend(registry::peer_names());
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
