//! Tests of the SVG plotter (a child module of `plot`).
use super::*;

/// Every opened tag is closed in order (a tiny well-formedness check).
fn balanced(svg: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("tag ends") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop().as_deref() != Some(name) {
                return false;
            }
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap_or("").to_string());
        }
        rest = &rest[close + 1..];
    }
    stack.is_empty()
}

fn sample() -> Chart {
    let mut c = Chart::new(
        "A & B <test>",
        Axis::log("delay (ms)").reversed(),
        Axis::linear("SSIM dB"),
    );
    c.push(
        Series::labelled_points("salsify", vec![(300.0, 15.0)], vec!["salsify".into()])
            .with_whiskers(vec![Some(Whiskers {
                x: (150.0, 300.0),
                y: (14.0, 15.0),
            })]),
    );
    c.push(Series::labelled_points(
        "webrtc",
        vec![(4000.0, 13.0), (f64::NAN, 1.0), (-5.0, 2.0)],
        vec!["webrtc".into()],
    ));
    c
}

#[test]
fn linear_ticks_step_by_1_2_5() {
    assert_eq!(
        ticks(Scale::Linear, 0.0, 10.0),
        vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    );
    assert_eq!(
        ticks(Scale::Linear, 0.0, 1.0),
        vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    );
    assert_eq!(ticks(Scale::Linear, 13.0, 27.0), vec![15.0, 20.0, 25.0]);
    assert!(ticks(Scale::Linear, 1.0, 1.0).is_empty());
}

#[test]
fn log_ticks_are_decades_with_2_and_5() {
    assert_eq!(
        ticks(Scale::Log10, 40.0, 3000.0),
        vec![50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0]
    );
    assert_eq!(
        ticks(Scale::Log10, 1.0, 1e6),
        vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]
    );
    assert!(ticks(Scale::Log10, -1.0, 10.0).is_empty());
    assert_eq!(ticks(Scale::Log10, 90.0, 270.0), vec![100.0, 150.0, 200.0]);
    assert_eq!(tick_label(0.6000000000000001), "0.6");
    assert_eq!(tick_label(2000.0), "2000");
}

#[test]
fn reversed_axis_puts_high_values_left() {
    let m = fit(&Axis::log("x").reversed(), &[100.0, 1000.0], 0.0, 100.0).unwrap();
    assert!(m.at(1000.0) < m.at(100.0));
    let m = fit(&Axis::linear("x"), &[0.0, 1.0], 0.0, 100.0).unwrap();
    assert!(m.at(1.0) > m.at(0.0));
}

#[test]
fn svg_is_well_formed_escaped_and_free_of_nan() {
    let svg = sample().to_svg();
    assert!(balanced(&svg), "{svg}");
    assert!(svg.contains("A &amp; B &lt;test&gt;"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg, sample().to_svg(), "deterministic");
}

#[test]
fn empty_chart_says_so() {
    let svg = Chart::new("t", Axis::linear("x"), Axis::log("y")).to_svg();
    assert!(svg.contains("no data") && balanced(&svg));
    let mut only_bad = Chart::new("t", Axis::linear("x"), Axis::log("y"));
    only_bad.push(Series::line("s", vec![(1.0, 0.0), (2.0, -1.0)]));
    assert!(only_bad.to_svg().contains("no data"));
}

#[test]
fn long_series_are_thinned_but_keep_extremes() {
    let points: Vec<(f64, f64)> = (0..100_000)
        .map(|i| (i as f64, if i == 50_000 { 100.0 } else { (i % 7) as f64 }))
        .collect();
    let mut c = Chart::new("t", Axis::linear("x"), Axis::linear("y"));
    c.push(Series::line("s", points));
    let svg = c.to_svg();
    assert!(svg.len() < 60_000, "{} bytes", svg.len());
    // The spike survives thinning: some point sits at the top of the plot.
    let top = format!(
        ",{:.1}",
        fit(&Axis::linear("y"), &[0.0, 100.0], 368.0, -332.0)
            .unwrap()
            .at(100.0)
    );
    assert!(svg.contains(&top), "spike at {top}");
}

#[test]
fn clustered_labels_do_not_overlap_each_other_or_markers() {
    let points = [(100.0, 100.0), (104.0, 102.0), (98.0, 96.0), (102.0, 99.0)];
    let markers: Vec<Rect> = points
        .iter()
        .map(|&(x, y)| Rect {
            x0: x - 4.0,
            y0: y - 4.0,
            x1: x + 4.0,
            y1: y + 4.0,
        })
        .collect();
    let labels: Vec<(f64, f64, f64)> = points.iter().map(|&(x, y)| (x, y, 70.0)).collect();
    let plot = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 400.0,
        y1: 300.0,
    };
    let placed = place_labels(&labels, &markers, plot);
    for (i, a) in placed.iter().enumerate() {
        assert_eq!(a.bounds.overlap(&plot), a.bounds.area(), "inside the plot");
        assert!(markers.iter().all(|m| a.bounds.overlap(m) == 0.0));
        for b in &placed[i + 1..] {
            assert_eq!(a.bounds.overlap(&b.bounds), 0.0, "{a:?} {b:?}");
        }
    }
    // A lone label takes the first spot: right of and above its point.
    let lone = place_labels(&labels[..1], &markers[..1], plot);
    assert_eq!(
        (lone[0].x, lone[0].y, lone[0].anchor),
        (107.0, 93.0, "start")
    );
}

#[test]
fn labels_near_the_edge_stay_inside_the_plot() {
    let plot = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 400.0,
        y1: 300.0,
    };
    let placed = place_labels(&[(398.0, 2.0, 60.0)], &[], plot);
    assert_eq!(placed[0].bounds.overlap(&plot), placed[0].bounds.area());
}

#[test]
fn every_marker_is_drawn_well_formed_filled_or_hollow() {
    let mut c = sample();
    for (i, marker) in Marker::ALL.into_iter().enumerate() {
        let y = 10.0 + i as f64;
        let s = Series::line_with_points(format!("m{i}"), vec![(100.0, y), (200.0, y)])
            .with_marker(marker);
        c.push(if i % 2 == 0 { s } else { s.hollow() });
    }
    let svg = c.to_svg();
    assert!(balanced(&svg), "{svg}");
    assert!(
        svg.contains("<polygon") && svg.contains("fill=\"white\""),
        "{svg}"
    );
    assert!(!svg.contains("NaN"));
}

#[test]
fn labels_are_drawn_escaped_and_dashed_series_dashed() {
    let mut c = sample();
    c.push(Series::line("a \"quoted\" line", vec![(100.0, 12.0), (200.0, 13.0)]).dashed());
    let svg = c.to_svg();
    assert!(balanced(&svg), "{svg}");
    assert!(svg.contains(">salsify</text>") && svg.contains(">webrtc</text>"));
    assert!(svg.contains("a &quot;quoted&quot; line"));
    // The line and its legend entry.
    assert_eq!(svg.matches("stroke-dasharray").count(), 2, "{svg}");
}
