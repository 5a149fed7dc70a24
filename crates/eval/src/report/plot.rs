//! A small SVG chart renderer for the report: linear and log axes (either reversed), lines,
//! steps, points with whiskers and labels, a legend. No dependencies, deterministic output
//! (same chart, same bytes), and no NaN ever reaches the SVG: points that cannot be drawn
//! (non-finite, or not positive on a log axis) are skipped.

use std::fmt::Write as _;

use super::tables::escape;

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced decades.
    Log10,
}

/// One axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Its label.
    pub label: String,
    /// Linear or log.
    pub scale: Scale,
    /// High values to the left (x) or bottom (y).
    pub reversed: bool,
    /// Fixed range; `None` fits the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            reversed: false,
            range: None,
        }
    }

    /// A log axis fitted to the data.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Log10,
            ..Axis::linear(label)
        }
    }

    /// The same axis, reversed.
    pub fn reversed(self) -> Axis {
        Axis {
            reversed: true,
            ..self
        }
    }

    /// The same axis with a fixed range.
    pub fn range(self, lo: f64, hi: f64) -> Axis {
        Axis {
            range: Some((lo, hi)),
            ..self
        }
    }

    fn drawable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    fn transform(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
        }
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Points joined by straight lines.
    Line,
    /// Points joined by horizontal-then-vertical steps (a value held until the next).
    Step,
    /// Lines with a marker at each point.
    LinePoints,
    /// Markers only, each with its label beside it.
    LabelledPoints,
}

/// Error bars of one point: absolute low and high on each axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whiskers {
    /// Low and high x.
    pub x: (f64, f64),
    /// Low and high y.
    pub y: (f64, f64),
}

/// One series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// How it is drawn.
    pub mark: Mark,
    /// (x, y) values.
    pub points: Vec<(f64, f64)>,
    /// Error bars, one per point (or empty).
    pub whiskers: Vec<Option<Whiskers>>,
    /// Text beside each point (for [`Mark::LabelledPoints`]).
    pub labels: Vec<String>,
    /// A CSS colour; `None` takes the palette's next.
    pub color: Option<String>,
    /// Dashed line (and legend entry): tells apart two series of one colour, e.g. a scheme's
    /// sending rate and its delivered rate, or a live run and a simulated run of one scheme.
    pub dashed: bool,
    /// The shape of its markers, so systems stay apart where colours are hard to tell apart
    /// (print, colour-blind readers).
    pub marker: Marker,
    /// Markers drawn as outlines (a live run's, beside its scheme's filled simulated ones).
    pub hollow: bool,
}

/// A marker's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Marker {
    /// A disc.
    #[default]
    Circle,
    /// A square.
    Square,
    /// A square on its corner.
    Diamond,
    /// A triangle pointing up.
    TriangleUp,
    /// A triangle pointing down.
    TriangleDown,
    /// A diagonal cross.
    Cross,
    /// An upright cross.
    Plus,
    /// A five-pointed star.
    Star,
    /// A hexagon.
    Hexagon,
}

impl Marker {
    /// Every shape, in the order systems are given them.
    pub const ALL: [Marker; 9] = [
        Marker::Circle,
        Marker::Square,
        Marker::Diamond,
        Marker::TriangleUp,
        Marker::TriangleDown,
        Marker::Cross,
        Marker::Plus,
        Marker::Star,
        Marker::Hexagon,
    ];

    /// The SVG element of this marker centred on (`x`, `y`), about 8 px across. Crosses are
    /// strokes (they have no inside), so `hollow` thins them instead.
    pub fn svg(self, x: f64, y: f64, color: &str, hollow: bool) -> String {
        let paint = if hollow {
            format!("fill=\"white\" stroke=\"{color}\" stroke-width=\"1.5\"")
        } else {
            format!("fill=\"{color}\"")
        };
        let polygon = |points: &[(f64, f64)]| {
            let list: Vec<String> = points
                .iter()
                .map(|(dx, dy)| format!("{:.1},{:.1}", x + dx, y + dy))
                .collect();
            format!("<polygon points=\"{}\" {paint}/>", list.join(" "))
        };
        let r = 4.0;
        match self {
            Marker::Circle => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" {paint}/>"),
            Marker::Square => polygon(&[(-3.6, -3.6), (3.6, -3.6), (3.6, 3.6), (-3.6, 3.6)]),
            Marker::Diamond => polygon(&[(0.0, -5.0), (5.0, 0.0), (0.0, 5.0), (-5.0, 0.0)]),
            Marker::TriangleUp => polygon(&[(0.0, -5.0), (4.6, 3.5), (-4.6, 3.5)]),
            Marker::TriangleDown => polygon(&[(0.0, 5.0), (4.6, -3.5), (-4.6, -3.5)]),
            Marker::Hexagon => polygon(&[
                (-2.6, -4.5),
                (2.6, -4.5),
                (5.0, 0.0),
                (2.6, 4.5),
                (-2.6, 4.5),
                (-5.0, 0.0),
            ]),
            Marker::Star => {
                let points: Vec<(f64, f64)> = (0..10)
                    .map(|i| {
                        let radius = if i % 2 == 0 { 5.5 } else { 2.3 };
                        let angle = std::f64::consts::PI * (f64::from(i) / 5.0 - 0.5);
                        (radius * angle.cos(), radius * angle.sin())
                    })
                    .collect();
                polygon(&points)
            }
            Marker::Cross | Marker::Plus => {
                let width = if hollow { 1.2 } else { 2.2 };
                let (a, b) = if self == Marker::Cross {
                    ((-r, -r, r, r), (-r, r, r, -r))
                } else {
                    ((-r - 1.0, 0.0, r + 1.0, 0.0), (0.0, -r - 1.0, 0.0, r + 1.0))
                };
                let line = |(x0, y0, x1, y1): (f64, f64, f64, f64)| {
                    format!(
                        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"{width}\"/>",
                        x + x0,
                        y + y0,
                        x + x1,
                        y + y1
                    )
                };
                format!("<g>{}{}</g>", line(a), line(b))
            }
        }
    }
}

impl Series {
    fn new(name: impl Into<String>, mark: Mark, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            mark,
            points,
            whiskers: Vec::new(),
            labels: Vec::new(),
            color: None,
            dashed: false,
            marker: Marker::Circle,
            hollow: false,
        }
    }

    /// A line.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::new(name, Mark::Line, points)
    }

    /// A step line.
    pub fn step(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::new(name, Mark::Step, points)
    }

    /// A line with markers.
    pub fn line_with_points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::new(name, Mark::LinePoints, points)
    }

    /// Markers with labels.
    pub fn labelled_points(
        name: impl Into<String>,
        points: Vec<(f64, f64)>,
        labels: Vec<String>,
    ) -> Series {
        Series {
            labels,
            ..Series::new(name, Mark::LabelledPoints, points)
        }
    }

    /// The same series with error bars.
    pub fn with_whiskers(self, whiskers: Vec<Option<Whiskers>>) -> Series {
        Series { whiskers, ..self }
    }

    /// The same series drawn dashed.
    pub fn dashed(self) -> Series {
        Series {
            dashed: true,
            ..self
        }
    }

    /// The same series in a given colour.
    pub fn with_color(self, color: impl Into<String>) -> Series {
        Series {
            color: Some(color.into()),
            ..self
        }
    }

    /// The same series with markers of another shape.
    pub fn with_marker(self, marker: Marker) -> Series {
        Series { marker, ..self }
    }

    /// The same series with outlined markers.
    pub fn hollow(self) -> Series {
        Series {
            hollow: true,
            ..self
        }
    }
}

/// Colours told apart by most readers, colour-blind ones included (Okabe and Ito's palette,
/// yellow left out for contrast on white, plus two).
pub const PALETTE: &[&str] = &[
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
];

/// A range of y drawn filled across the plot, behind the series, with its legend entry: a
/// window the values should stay inside.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Legend entry.
    pub name: String,
    /// Low and high y.
    pub y: (f64, f64),
    /// A CSS colour (drawn translucent).
    pub color: String,
}

/// A chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// Series, drawn in order.
    pub series: Vec<Series>,
    /// Bands, drawn behind the series.
    pub bands: Vec<Band>,
    /// Size in pixels.
    pub width: u32,
    /// Size in pixels.
    pub height: u32,
}

const LEFT: f64 = 72.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 52.0;

/// Where an axis' values land on the page.
struct Mapping {
    axis: Axis,
    lo: f64,
    hi: f64,
    start: f64,
    length: f64,
}

impl Mapping {
    /// Page position of `v` (not checked for drawability).
    fn at(&self, v: f64) -> f64 {
        let t = (self.axis.transform(v) - self.lo) / (self.hi - self.lo);
        let t = if self.axis.reversed { 1.0 - t } else { t };
        self.start + t * self.length
    }
}

impl Chart {
    /// An empty chart, 760 x 420 pixels.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Chart {
        Chart {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            bands: Vec::new(),
            width: 760,
            height: 420,
        }
    }

    /// Adds a series.
    pub fn push(&mut self, series: Series) -> &mut Chart {
        self.series.push(series);
        self
    }

    /// Adds a band.
    pub fn band(&mut self, band: Band) -> &mut Chart {
        self.bands.push(band);
        self
    }

    /// Every drawable value on one axis, whiskers and bands included.
    fn values(&self, horizontal: bool) -> Vec<f64> {
        let axis = if horizontal { &self.x } else { &self.y };
        let mut out = Vec::new();
        if !horizontal {
            let edges = self.bands.iter().flat_map(|b| [b.y.0, b.y.1]);
            out.extend(edges.filter(|&v| axis.drawable(v)));
        }
        for s in &self.series {
            for (i, &(x, y)) in s.points.iter().enumerate() {
                if !(self.x.drawable(x) && self.y.drawable(y)) {
                    continue;
                }
                out.push(if horizontal { x } else { y });
                if let Some(Some(w)) = s.whiskers.get(i) {
                    let (a, b) = if horizontal { w.x } else { w.y };
                    out.extend([a, b].into_iter().filter(|&v| axis.drawable(v)));
                }
            }
        }
        out
    }

    /// The SVG document. Its one `id` (the plot area's clip) is `plot-` and a hash of the
    /// drawing, so charts inlined in one page do not share ids.
    pub fn to_svg(&self) -> String {
        let (w, h) = (f64::from(self.width), f64::from(self.height));
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            self.width, self.height, self.width, self.height
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            LEFT + (w - LEFT - RIGHT) / 2.0,
            escape(&self.title)
        );
        let (xs, ys) = (self.values(true), self.values(false));
        let (Some(xm), Some(ym)) = (
            fit(&self.x, &xs, LEFT, w - LEFT - RIGHT),
            fit(&self.y, &ys, h - BOTTOM, -(h - TOP - BOTTOM)),
        ) else {
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#666\">no data</text>",
                w / 2.0,
                h / 2.0
            );
            return svg + "</svg>\n";
        };
        draw_axes(&mut svg, &xm, &ym);
        let _ = writeln!(
            svg,
            "<clipPath id=\"{CLIP_ID}\"><rect x=\"{LEFT:.1}\" y=\"{TOP:.1}\" width=\"{:.1}\" height=\"{:.1}\"/></clipPath>",
            w - LEFT - RIGHT,
            h - TOP - BOTTOM
        );
        svg += &format!("<g clip-path=\"url(#{CLIP_ID})\">\n");
        for b in self.bands.iter().filter(|b| ym.axis.drawable(b.y.0)) {
            let (top, bottom) = (ym.at(b.y.1), ym.at(b.y.0));
            let _ = writeln!(
                svg,
                "<rect x=\"{LEFT:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"0.15\"/>",
                top.min(bottom),
                w - LEFT - RIGHT,
                (bottom - top).abs(),
                escape(&b.color)
            );
        }
        for (i, s) in self.series.iter().enumerate() {
            draw_series(&mut svg, s, &color(s, i), &xm, &ym);
        }
        svg += "</g>\n";
        draw_labels(&mut svg, &self.series, &xm, &ym);
        self.draw_legend(&mut svg, w);
        svg += "</svg>\n";
        // A report inlines many charts in one page, where ids must be unique: the clip's id is
        // named after what the chart draws, the same in every build.
        let id = format!("plot-{:016x}", fnv1a(svg.as_bytes()));
        svg.replace(CLIP_ID, &id)
    }

    fn draw_legend(&self, svg: &mut String, width: f64) {
        let x = width - RIGHT + 14.0;
        for (i, s) in self.series.iter().enumerate() {
            let y = TOP + 8.0 + 18.0 * i as f64;
            let c = color(s, i);
            if s.mark != Mark::LabelledPoints {
                let _ = writeln!(
                    svg,
                    "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"2\"{}/>",
                    x + 20.0,
                    dash(s.dashed)
                );
            }
            if matches!(s.mark, Mark::LabelledPoints | Mark::LinePoints) {
                let _ = writeln!(svg, "{}", s.marker.svg(x + 10.0, y, &c, s.hollow));
            }
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 26.0,
                y + 4.0,
                escape(&s.name)
            );
        }
        for (j, b) in self.bands.iter().enumerate() {
            let y = TOP + 8.0 + 18.0 * (self.series.len() + j) as f64;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"20\" height=\"10\" fill=\"{}\" fill-opacity=\"0.3\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y - 5.0,
                escape(&b.color),
                x + 26.0,
                y + 4.0,
                escape(&b.name)
            );
        }
    }
}

/// The stroke attribute of a dashed line (nothing for a solid one).
fn dash(dashed: bool) -> &'static str {
    if dashed {
        " stroke-dasharray=\"6 4\""
    } else {
        ""
    }
}

fn color(s: &Series, index: usize) -> String {
    s.color
        .clone()
        .unwrap_or_else(|| PALETTE[index % PALETTE.len()].to_string())
}

/// The axis' range (given, or fitted with a margin) in transformed units; `None` when there
/// is nothing to draw.
fn fit(axis: &Axis, values: &[f64], start: f64, length: f64) -> Option<Mapping> {
    let (lo, hi) = match axis.range {
        Some((lo, hi)) if axis.drawable(lo) && axis.drawable(hi) && lo < hi => (lo, hi),
        _ => {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !(lo.is_finite() && hi.is_finite()) {
                return None;
            }
            match axis.scale {
                Scale::Linear => {
                    let pad = if hi > lo {
                        (hi - lo) * 0.06
                    } else {
                        lo.abs().max(1.0) * 0.1
                    };
                    let lo = if lo >= 0.0 && lo - pad < 0.0 {
                        0.0
                    } else {
                        lo - pad
                    };
                    (lo, hi + pad)
                }
                Scale::Log10 => (lo / 1.3, hi * 1.3),
            }
        }
    };
    Some(Mapping {
        axis: axis.clone(),
        lo: axis.transform(lo),
        hi: axis.transform(hi),
        start,
        length,
    })
}

/// Stands for the clip id while a chart is drawn (no chart text contains it).
const CLIP_ID: &str = "plot-CLIP-ID";

/// FNV-1a, fixed by its definition, so a chart's ids are the same in every build.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Tick values inside `[lo, hi]` (untransformed): 1-2-5 steps on a linear axis, decades
/// (with 2 and 5 between when there are few) on a log axis.
pub fn ticks(scale: Scale, lo: f64, hi: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Vec::new();
    }
    match scale {
        Scale::Linear => {
            let raw = (hi - lo) / 6.0;
            let magnitude = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * magnitude)
                .find(|&s| s >= raw)
                .unwrap_or(10.0 * magnitude);
            let first = (lo / step).ceil() as i64;
            let last = (hi / step).floor() as i64;
            (first..=last).map(|i| i as f64 * step).collect()
        }
        Scale::Log10 => {
            if lo <= 0.0 {
                return Vec::new();
            }
            let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            let within = |multiples: &[f64]| -> Vec<f64> {
                (d0..=d1)
                    .flat_map(|d| multiples.iter().map(move |m| m * 10f64.powi(d)))
                    .filter(|&v| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9))
                    .collect()
            };
            if d1 - d0 > 3 {
                return within(&[1.0]);
            }
            // A narrow range gets more steps, so the axis always has a few labels.
            let ticks = within(&[1.0, 2.0, 5.0]);
            if ticks.len() >= 4 {
                ticks
            } else {
                within(&[1.0, 1.5, 2.0, 3.0, 5.0, 7.0])
            }
        }
    }
}

/// A tick label: as few decimals as the value needs (up to 3).
fn tick_label(v: f64) -> String {
    for digits in 0..=3 {
        let text = format!("{v:.digits$}");
        if (text.parse::<f64>().unwrap_or(f64::NAN) - v).abs() <= v.abs() * 1e-9 + 1e-12 {
            return if text == "-0" { "0".into() } else { text };
        }
    }
    format!("{v:.3}")
}

fn draw_axes(svg: &mut String, x: &Mapping, y: &Mapping) {
    let (x0, x1) = (x.start, x.start + x.length);
    let (y0, y1) = (y.start, y.start + y.length);
    let untransform = |m: &Mapping, v: f64| match m.axis.scale {
        Scale::Linear => v,
        Scale::Log10 => 10f64.powf(v),
    };
    for v in ticks(x.axis.scale, untransform(x, x.lo), untransform(x, x.hi)) {
        let px = x.at(v);
        let _ = writeln!(
            svg,
            "<line x1=\"{px:.1}\" y1=\"{y1:.1}\" x2=\"{px:.1}\" y2=\"{y0:.1}\" stroke=\"#e4e4e4\"/>\n<text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            y0 + 16.0,
            tick_label(v)
        );
    }
    for v in ticks(y.axis.scale, untransform(y, y.lo), untransform(y, y.hi)) {
        let py = y.at(v);
        let _ = writeln!(
            svg,
            "<line x1=\"{x0:.1}\" y1=\"{py:.1}\" x2=\"{x1:.1}\" y2=\"{py:.1}\" stroke=\"#e4e4e4\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            x0 - 6.0,
            py + 4.0,
            tick_label(v)
        );
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{x0:.1}\" y=\"{y1:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#444\"/>",
        x1 - x0,
        y0 - y1
    );
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        (x0 + x1) / 2.0,
        y0 + 38.0,
        escape(&x.axis.label)
    );
    let (cx, cy) = (18.0, (y0 + y1) / 2.0);
    let _ = writeln!(
        svg,
        "<text x=\"{cx:.1}\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {cx:.1} {cy:.1})\">{}</text>",
        escape(&y.axis.label)
    );
}

/// Page coordinates of a series' drawable points, in runs broken where a point is missing,
/// thinned to the smallest and largest value per half pixel so long series stay small.
fn runs(s: &Series, x: &Mapping, y: &Mapping) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for &(vx, vy) in &s.points {
        if !(x.axis.drawable(vx) && y.axis.drawable(vy)) {
            if !out.last().expect("never empty").is_empty() {
                out.push(Vec::new());
            }
            continue;
        }
        out.last_mut()
            .expect("never empty")
            .push((x.at(vx), y.at(vy)));
    }
    out.retain(|r| !r.is_empty());
    out.into_iter().map(thin).collect()
}

fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    let mut i = 0;
    while i < points.len() {
        let column = (points[i].0 * 2.0).round();
        let mut j = i;
        while j + 1 < points.len() && (points[j + 1].0 * 2.0).round() == column {
            j += 1;
        }
        let group = &points[i..=j];
        if group.len() <= 2 {
            out.extend_from_slice(group);
        } else {
            let lowest = group
                .iter()
                .copied()
                .fold(group[0], |a, b| if b.1 < a.1 { b } else { a });
            let highest = group
                .iter()
                .copied()
                .fold(group[0], |a, b| if b.1 > a.1 { b } else { a });
            out.push(group[0]);
            out.push(lowest);
            out.push(highest);
            out.push(group[group.len() - 1]);
        }
        i = j + 1;
    }
    out
}

fn polyline(svg: &mut String, points: &[(f64, f64)], c: &str, dashed: bool) {
    let coords: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.6\" stroke-linejoin=\"round\"{} points=\"{}\"/>",
        dash(dashed),
        coords.join(" ")
    );
}

fn draw_series(svg: &mut String, s: &Series, c: &str, x: &Mapping, y: &Mapping) {
    for run in runs(s, x, y) {
        match s.mark {
            Mark::Line | Mark::LinePoints => polyline(svg, &run, c, s.dashed),
            Mark::Step => {
                let mut stepped = Vec::with_capacity(run.len() * 2);
                for (k, &(px, py)) in run.iter().enumerate() {
                    if k > 0 {
                        stepped.push((px, run[k - 1].1));
                    }
                    stepped.push((px, py));
                }
                polyline(svg, &stepped, c, s.dashed);
            }
            Mark::LabelledPoints => {}
        }
        if matches!(s.mark, Mark::LinePoints | Mark::LabelledPoints) {
            for &(px, py) in &run {
                let _ = writeln!(svg, "{}", s.marker.svg(px, py, c, s.hollow));
            }
        }
    }
    draw_whiskers(svg, s, c, x, y);
}

fn draw_whiskers(svg: &mut String, s: &Series, c: &str, x: &Mapping, y: &Mapping) {
    for (i, &(vx, vy)) in s.points.iter().enumerate() {
        if !(x.axis.drawable(vx) && y.axis.drawable(vy)) {
            continue;
        }
        let (px, py) = (x.at(vx), y.at(vy));
        if let Some(Some(w)) = s.whiskers.get(i) {
            if x.axis.drawable(w.x.0) && x.axis.drawable(w.x.1) {
                let _ = writeln!(
                    svg,
                    "<line x1=\"{:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\" stroke=\"{c}\" stroke-width=\"1.2\"{}/>",
                    x.at(w.x.0),
                    x.at(w.x.1),
                    dash(s.dashed)
                );
            }
            if y.axis.drawable(w.y.0) && y.axis.drawable(w.y.1) {
                let _ = writeln!(
                    svg,
                    "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"1.2\"{}/>",
                    y.at(w.y.0),
                    y.at(w.y.1),
                    dash(s.dashed)
                );
            }
        }
    }
}

/// A rectangle on the page: left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    fn overlap(&self, o: &Rect) -> f64 {
        let w = (self.x1.min(o.x1) - self.x0.max(o.x0)).max(0.0);
        let h = (self.y1.min(o.y1) - self.y0.max(o.y0)).max(0.0);
        w * h
    }

    fn area(&self) -> f64 {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

/// Average width of a 12 px sans-serif glyph. Without font metrics (no dependencies) label
/// boxes are estimates; erring wide reports a near miss as a collision rather than letting
/// two labels touch.
const GLYPH_WIDTH: f64 = 7.0;

/// A label's spot: baseline anchor, `text-anchor`, estimated box, and whether it sits away
/// from its point (then a leader line shows whose it is).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spot {
    x: f64,
    y: f64,
    anchor: &'static str,
    bounds: Rect,
    far: bool,
}

/// Spots to try for a label of `width` at point (`px`, `py`), nearest first: the four
/// diagonals, above, below, then the same further out.
fn spots(px: f64, py: f64, width: f64) -> Vec<Spot> {
    let mut out = Vec::new();
    for ring in 0..5 {
        let step = 13.0 * f64::from(ring);
        for (dx, dy, anchor) in [
            (7.0, -7.0 - step, "start"),
            (7.0, 15.0 + step, "start"),
            (-7.0, -7.0 - step, "end"),
            (-7.0, 15.0 + step, "end"),
            (0.0, -10.0 - step, "middle"),
            (0.0, 19.0 + step, "middle"),
        ] {
            let (x, y) = (px + dx, py + dy);
            let x0 = match anchor {
                "start" => x,
                "end" => x - width,
                _ => x - width / 2.0,
            };
            out.push(Spot {
                x,
                y,
                anchor,
                bounds: Rect {
                    x0,
                    y0: y - 10.0,
                    x1: x0 + width,
                    y1: y + 3.0,
                },
                far: ring > 0,
            });
        }
    }
    out
}

/// Places labels, in order, each on the first spot that covers no marker, no label placed
/// before it and nothing outside the plot; failing that, on the least-covered spot. Schemes
/// in the paper's figure 6 sit within a few pixels of each other (the Salsify variants), so
/// a fixed offset would overprint them. Greedy and in order, so deterministic.
fn place_labels(labels: &[(f64, f64, f64)], markers: &[Rect], plot: Rect) -> Vec<Spot> {
    let mut placed: Vec<Spot> = Vec::with_capacity(labels.len());
    for &(px, py, width) in labels {
        let cost = |spot: &Spot| -> f64 {
            let b = &spot.bounds;
            let covered: f64 = markers.iter().map(|m| b.overlap(m)).sum::<f64>()
                + placed.iter().map(|p| b.overlap(&p.bounds)).sum::<f64>();
            covered + 4.0 * (b.area() - b.overlap(&plot))
        };
        let mut best: Option<(f64, Spot)> = None;
        for spot in spots(px, py, width) {
            let c = cost(&spot);
            if best.is_none_or(|(b, _)| c < b) {
                best = Some((c, spot));
            }
            if c == 0.0 {
                break;
            }
        }
        placed.push(best.expect("spots is never empty").1);
    }
    placed
}

/// Thin boxes around a point's drawn whiskers, so labels keep off them too (a label's white
/// halo would otherwise cut a whisker short).
fn whisker_rects(w: &Whiskers, px: f64, py: f64, x: &Mapping, y: &Mapping) -> Vec<Rect> {
    let mut out = Vec::new();
    if x.axis.drawable(w.x.0) && x.axis.drawable(w.x.1) {
        let (a, b) = (x.at(w.x.0), x.at(w.x.1));
        out.push(Rect {
            x0: a.min(b),
            y0: py - 1.0,
            x1: a.max(b),
            y1: py + 1.0,
        });
    }
    if y.axis.drawable(w.y.0) && y.axis.drawable(w.y.1) {
        let (a, b) = (y.at(w.y.0), y.at(w.y.1));
        out.push(Rect {
            x0: px - 1.0,
            y0: a.min(b),
            x1: px + 1.0,
            y1: a.max(b),
        });
    }
    out
}

/// The labels of [`Mark::LabelledPoints`] series, drawn last (over lines and whiskers, with a
/// white halo) and placed so they do not overprint each other.
fn draw_labels(svg: &mut String, series: &[Series], x: &Mapping, y: &Mapping) {
    let mut markers = Vec::new();
    let mut labels = Vec::new();
    for (i, s) in series.iter().enumerate() {
        if !matches!(s.mark, Mark::LinePoints | Mark::LabelledPoints) {
            continue;
        }
        for (k, &(vx, vy)) in s.points.iter().enumerate() {
            if !(x.axis.drawable(vx) && y.axis.drawable(vy)) {
                continue;
            }
            let (px, py) = (x.at(vx), y.at(vy));
            markers.push(Rect {
                x0: px - 4.0,
                y0: py - 4.0,
                x1: px + 4.0,
                y1: py + 4.0,
            });
            if let Some(Some(w)) = s.whiskers.get(k) {
                markers.extend(whisker_rects(w, px, py, x, y));
            }
            match (s.mark, s.labels.get(k)) {
                (Mark::LabelledPoints, Some(text)) if !text.is_empty() => {
                    let width = GLYPH_WIDTH * text.chars().count() as f64;
                    labels.push((px, py, width, text, color(s, i)));
                }
                _ => {}
            }
        }
    }
    let plot = Rect {
        x0: x.start.min(x.start + x.length),
        y0: y.start.min(y.start + y.length),
        x1: x.start.max(x.start + x.length),
        y1: y.start.max(y.start + y.length),
    };
    let boxes: Vec<(f64, f64, f64)> = labels.iter().map(|l| (l.0, l.1, l.2)).collect();
    for (spot, (px, py, _, text, c)) in place_labels(&boxes, &markers, plot).iter().zip(&labels) {
        if spot.far {
            let b = &spot.bounds;
            let _ = writeln!(
                svg,
                "<line x1=\"{px:.1}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"0.8\"/>",
                px.clamp(b.x0, b.x1),
                py.clamp(b.y0, b.y1)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{}\" fill=\"{c}\" stroke=\"white\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\">{}</text>",
            spot.x,
            spot.y,
            spot.anchor,
            escape(text)
        );
    }
}

#[cfg(test)]
#[path = "plot_tests.rs"]
mod tests;
