//! The report's figures, drawn from finished runs: quality against delay (the paper's
//! figure 6), time series (figures 7 and 8) and queue-size sensitivity (figure 9).

use super::plot::{Axis, Chart, Series, Whiskers};
use super::style::styled_run;
use super::tables::Entry;

/// A figure ready to write: file stem, caption and SVG text.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// File name without extension (unique in the report).
    pub name: String,
    /// What it shows.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
}

/// The links of `runs` in first-seen order.
pub fn links<'a>(runs: &[Entry<'a>]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for r in runs {
        if !out.contains(&r.plan.link.as_str()) {
            out.push(&r.plan.link);
        }
    }
    out
}

fn on_link<'a, 'b>(runs: &'b [Entry<'a>], link: &str) -> Vec<&'b Entry<'a>> {
    runs.iter().filter(|r| r.link() == link).collect()
}

pub(super) fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// A scheme's colour, the same in every chart (see [`super::style`]).
pub(super) fn scheme_color(scheme: &str) -> String {
    super::style::style(scheme).color.to_string()
}

/// A run's label in a legend: its name (scheme and setting; "(live)" for a live run), plus
/// what else varies in the group.
fn label(r: &Entry, runs: &[&Entry]) -> String {
    let e = &r.plan.experiment;
    let mut label = r.name();
    if r.live() {
        label += " (live)";
    }
    if runs.iter().any(|o| o.plan.experiment.seed != e.seed) {
        label += &format!(" s{}", e.seed);
    }
    if runs.iter().any(|o| o.queue() != r.queue()) {
        label += &format!(" q{}", r.queue());
    }
    label
}

/// SSIM dB (mean, whisker down to p25) against p95 delay (whisker left to the mean) on a
/// reversed log axis, one point per run: up and to the right is better.
pub fn quality_delay(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let mut out = Vec::new();
    for link in links(runs) {
        let here = on_link(runs, link);
        let mut chart = Chart::new(
            format!("{link}: quality vs delay"),
            Axis::log("video delay, 95th percentile (ms, log scale; better ->)").reversed(),
            Axis::linear("SSIM (dB), mean; whisker to 25th percentile"),
        );
        for r in &here {
            let s = &r.result.summary;
            let (Some(p95), Some(mean_db)) = (s.delay_p95_ms, s.ssim_db_mean) else {
                continue;
            };
            let whiskers = Whiskers {
                x: (s.delay_mean_ms.unwrap_or(p95), p95),
                y: (s.ssim_db_p25.unwrap_or(mean_db), mean_db),
            };
            let name = label(r, &here);
            chart.push(styled_run(
                Series::labelled_points(name.clone(), vec![(p95, mean_db)], vec![name])
                    .with_whiskers(vec![Some(whiskers)]),
                r,
                &here,
            ));
        }
        out.push(Drawn {
            name: format!("{group}-{}-quality-delay", slug(link)),
            caption: format!(
                "{link}: each scheme's mean SSIM (dB, up is better) against its 95th-percentile delay \
                 (log scale, reversed: right is better). Whiskers: down to the 25th-percentile SSIM, \
                 left to the mean delay."
            ),
            svg: chart.to_svg(),
        });
    }
    out
}

/// Per link: capacity against each scheme's delivered rate, and per-frame delay, over time.
pub fn time_series(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let mut out = Vec::new();
    for link in links(runs) {
        let here = on_link(runs, link);
        let mut rates = Chart::new(
            format!("{link}: capacity and throughput"),
            Axis::linear("time (s)"),
            Axis::linear("Mbit/s"),
        );
        let mut delays = Chart::new(
            format!("{link}: per-frame delay"),
            Axis::linear("time (s)"),
            Axis::log("delay (ms, log scale), mean over 250 ms"),
        );
        let mut shown = Chart::new(
            format!("{link}: frames shown"),
            Axis::linear("time (s)"),
            Axis::linear("frames shown per second"),
        );
        let mut capacity_drawn = false;
        for r in &here {
            let Ok(bins) = r.result.time_series() else {
                continue;
            };
            if !capacity_drawn {
                let points = bins
                    .iter()
                    .map(|b| (b.start_s, b.capacity_kbps / 1000.0))
                    .collect();
                rates.push(Series::step("link capacity", points).with_color("#888888"));
                capacity_drawn = true;
            }
            let name = label(r, &here);
            let sent = bins
                .iter()
                .map(|b| (b.start_s, b.delivered_kbps / 1000.0))
                .collect();
            rates.push(styled_run(Series::line(name.clone(), sent), r, &here));
            let delay = bins
                .iter()
                .filter_map(|b| b.delay_mean_ms.map(|d| (b.start_s, d)))
                .collect();
            delays.push(styled_run(Series::line(name.clone(), delay), r, &here));
            let width_s = crate::campaign::store::BIN_WIDTH.as_secs_f64();
            let rate = bins
                .iter()
                .map(|b| (b.start_s, f64::from(b.frames_shown) / width_s))
                .collect();
            shown.push(styled_run(Series::line(name, rate), r, &here));
        }
        let stem = format!("{group}-{}", slug(link));
        out.push(Drawn {
            name: format!("{stem}-throughput"),
            caption: format!(
                "{link}: the link's capacity (grey: its delivery opportunities; losses and \
                 outages are not subtracted) and each scheme's throughput through the bottleneck \
                 (all it sent: video, retransmissions, probes and padding), in 250 ms bins."
            ),
            svg: rates.to_svg(),
        });
        out.push(Drawn {
            name: format!("{stem}-delay"),
            caption: format!(
                "{link}: the paper's per-frame delay (display time minus capture time; a frame \
                 never shown counts until the next frame is shown), mean over frames captured in \
                 each 250 ms bin."
            ),
            svg: delays.to_svg(),
        });
        out.push(Drawn {
            name: format!("{stem}-frames"),
            caption: format!(
                "{link}: frames displayed per second by each scheme, counted in 250 ms bins."
            ),
            svg: shown.to_svg(),
        });
    }
    out
}

/// Sprout's Figure 1: per link, one panel per scheme: the link's capacity and the scheme's
/// throughput, and the largest per-packet delay (queue plus propagation) in each bin.
pub fn sprout(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let mut out = Vec::new();
    for link in links(runs) {
        let here = on_link(runs, link);
        for r in &here {
            let Ok(bins) = r.result.time_series() else {
                continue;
            };
            let name = label(r, &here);
            let mut rates = Chart::new(
                format!("{link}: {name}: capacity and throughput"),
                Axis::linear("time (s)"),
                Axis::linear("Mbit/s"),
            );
            let capacity = bins
                .iter()
                .map(|b| (b.start_s, b.capacity_kbps / 1000.0))
                .collect();
            rates.push(Series::step("link capacity", capacity).with_color("#888888"));
            let through = bins
                .iter()
                .map(|b| (b.start_s, b.delivered_kbps / 1000.0))
                .collect();
            rates.push(styled_run(Series::line(name.clone(), through), r, &here));
            let propagation = r.plan.experiment.link.delay_ms as f64;
            let mut delay = Chart::new(
                format!("{link}: {name}: per-packet delay"),
                Axis::linear("time (s)"),
                Axis::log("delay (ms, log scale), largest per 250 ms"),
            );
            let points = bins
                .iter()
                .filter_map(|b| b.packet_delay_max_ms.map(|d| (b.start_s, d + propagation)))
                .collect();
            delay.push(styled_run(Series::line(name.clone(), points), r, &here));
            let stem = format!("{group}-{}-{}", slug(link), slug(&name));
            out.push(Drawn {
                name: format!("{stem}-sprout-throughput"),
                caption: format!(
                    "{link}, {name}: the link's capacity (grey) and the scheme's throughput \
                     through the bottleneck, in 250 ms bins (Sprout's Figure 1, top)."
                ),
                svg: rates.to_svg(),
            });
            out.push(Drawn {
                name: format!("{stem}-sprout-delay"),
                caption: format!(
                    "{link}, {name}: the largest one-way delay (queue plus {propagation:.0} ms \
                     propagation) of a packet leaving the bottleneck in each 250 ms bin \
                     (Sprout's Figure 1, bottom)."
                ),
                svg: delay.to_svg(),
            });
        }
    }
    out
}

/// Per link: p95 delay and mean SSIM against the queue size, one line per scheme.
pub fn queue_size(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let mut out = Vec::new();
    for link in links(runs) {
        let here = on_link(runs, link);
        // One line per scheme, setting and kind of run (a sweep's points are lines of their own).
        let line_of = |r: &Entry| (r.name(), r.live());
        let mut lines: Vec<&Entry> = Vec::new();
        for r in &here {
            if !lines.iter().any(|l| line_of(l) == line_of(r)) {
                lines.push(r);
            }
        }
        let mut delay = Chart::new(
            format!("{link}: delay vs queue size"),
            Axis::log("DropTail queue (packets, log scale)"),
            Axis::log("video delay, 95th percentile (ms, log scale)"),
        );
        let mut quality = Chart::new(
            format!("{link}: quality vs queue size"),
            Axis::log("DropTail queue (packets, log scale)"),
            Axis::linear("SSIM (dB), mean"),
        );
        for first in lines {
            let mut points: Vec<_> = here
                .iter()
                .filter(|r| line_of(r) == line_of(first))
                .map(|r| (r.queue() as f64, &r.result.summary))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let d = points
                .iter()
                .filter_map(|(q, s)| s.delay_p95_ms.map(|v| (*q, v)))
                .collect();
            let s = points
                .iter()
                .filter_map(|(q, s)| s.ssim_db_mean.map(|v| (*q, v)))
                .collect();
            let name = if first.live() {
                format!("{} (live)", first.name())
            } else {
                first.name()
            };
            delay.push(styled_run(Series::line_with_points(&name, d), first, &here));
            quality.push(styled_run(Series::line_with_points(name, s), first, &here));
        }
        let stem = format!("{group}-{}", slug(link));
        out.push(Drawn {
            name: format!("{stem}-queue-delay"),
            caption: format!("{link}: 95th-percentile delay against the bottleneck's queue size."),
            svg: delay.to_svg(),
        });
        out.push(Drawn {
            name: format!("{stem}-queue-quality"),
            caption: format!("{link}: mean SSIM against the bottleneck's queue size."),
            svg: quality.to_svg(),
        });
    }
    out
}
