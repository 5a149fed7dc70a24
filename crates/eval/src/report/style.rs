//! How each system looks in every figure: one fixed colour and marker shape per scheme name
//! (every simulated scheme and every live-only system), so a reader can follow a system from
//! one chart to the next; and how a live run is told from a simulated run of the same
//! scheme (dashed lines, outlined markers, "(live)" in the legend).

use super::plot::{Marker, Series};
use super::tables::Entry;
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
        M::Hexagon => Marker::Hexagon,
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

/// A series styled as run `r`'s among `runs` (the runs of its chart): its scheme's colour and
/// marker for the scheme's default setting (or its first, if the default did not run), and for
/// each further setting of the scheme a shade of that colour and the next marker shape, so
/// every point of a sweep is told apart in the legend.
pub fn styled_run(series: Series, r: &Entry, runs: &[&Entry]) -> Series {
    let mut settings: Vec<String> = Vec::new();
    for o in runs.iter().filter(|o| o.scheme() == r.scheme()) {
        if !settings.contains(&o.setting()) {
            settings.push(o.setting());
        }
    }
    if let Some(i) = settings.iter().position(String::is_empty) {
        let default = settings.remove(i);
        settings.insert(0, default);
    }
    let k = settings.iter().position(|s| *s == r.setting()).unwrap_or(0);
    let series = styled(series, r.scheme(), r.live());
    if k == 0 {
        return series;
    }
    let base = style(r.scheme());
    series
        .with_color(shade(base.color, k))
        .with_marker(next_marker(base.marker, k))
}

/// The `k`th shade of `color` (`#rrggbb`): alternately darker and lighter, further each pair.
pub fn shade(color: &str, k: usize) -> String {
    let hex = color.trim_start_matches('#');
    let channel =
        |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("7f"), 16).unwrap_or(127);
    let amount = 0.3 + 0.2 * ((k.div_ceil(2) - 1) % 3) as f64;
    let towards: f64 = if k % 2 == 1 { 0.0 } else { 255.0 };
    let mix = |c: u8| (f64::from(c) + (towards - f64::from(c)) * amount).round() as u8;
    format!(
        "#{:02X}{:02X}{:02X}",
        mix(channel(0)),
        mix(channel(2)),
        mix(channel(4))
    )
}

/// The marker `k` shapes after `m`.
fn next_marker(m: Marker, k: usize) -> Marker {
    let all = Marker::ALL;
    let at = all.iter().position(|x| *x == m).unwrap_or(0);
    all[(at + k) % all.len()]
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
        let mut main = registry::with_role(salsify_schemes::SchemeRole::Main);
        main.extend(registry::peer_names());
        let shapes: HashSet<Marker> = main.iter().map(|m| style(m).marker).collect();
        assert_eq!(shapes.len(), main.len());
    }

    #[test]
    fn shades_differ_from_the_colour_and_each_other() {
        let base = "#1F77B4";
        let shades: HashSet<String> = (1..=6).map(|k| shade(base, k)).collect();
        assert_eq!(shades.len(), 6);
        assert!(!shades.contains(base));
        assert_eq!(shade("#000000", 2), "#4D4D4D");
        assert_ne!(next_marker(Marker::Circle, 1), Marker::Circle);
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
