//! The call's audio in the report (issue 46): for every run that carried audio, a figure of
//! its mouth-to-ear delay over time and one of the A/V skew of each picture shown, with
//! ITU-R BT.1359's window as a band; and a table of the runs' audio figures.

use salsify_audio::sync::{MAX_AHEAD, MAX_BEHIND};
use salsify_audio::PlayedKind;
use salsify_sim::{read_run_audio, RunAudio};

use super::figures::{slug, Drawn};
use super::plot::{Axis, Band, Chart, Series};
use super::style::styled_run;
use super::tables::{cell_columns, num, Entry, Table};

/// Width of the delay chart's bins, s (the video's time series use the same).
const BIN_S: f64 = 0.25;

/// Every run of `runs` with an `audio.csv`: its audio delay figure and its A/V skew figure.
pub fn figures(group: &str, runs: &[Entry]) -> Vec<Drawn> {
    let all: Vec<&Entry> = runs.iter().collect();
    let mut out = Vec::new();
    for r in runs {
        let Ok(Some(audio)) = read_run_audio(&r.result.dir) else {
            continue;
        };
        out.extend(run_figures(group, r, &all, &audio));
    }
    out
}

/// The run's name as its charts say it: link, scheme and setting, live or simulated, and
/// the audio's source and lip sync.
fn run_title(r: &Entry) -> String {
    let e = &r.plan.experiment;
    format!(
        "{}: {} ({}, seed {}; audio {}, sync {})",
        r.link(),
        r.name(),
        r.how(),
        e.seed,
        source_name(&e.audio),
        e.sync
    )
}

/// The audio's source as a title says it: `synthetic`, or a file's name.
fn source_name(audio: &str) -> &str {
    std::path::Path::new(audio)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(audio)
}

fn run_figures(group: &str, r: &Entry, runs: &[&Entry], audio: &RunAudio) -> [Drawn; 2] {
    let title = run_title(r);
    let stem = format!("{group}-{}", slug(&r.plan.id));
    let mut delay = Chart::new(
        format!("{title}: audio delay"),
        Axis::linear("time (s)"),
        Axis::linear("mouth-to-ear delay (ms)"),
    );
    let (mean, largest) = binned_delay(audio);
    delay.push(styled_run(
        Series::line("audio, mean (250 ms)", mean),
        r,
        runs,
    ));
    delay.push(Series::line("audio, largest (250 ms)", largest).with_color("#888888"));
    if let Ok(bins) = r.result.time_series() {
        let video = bins
            .iter()
            .filter_map(|b| b.delay_mean_ms.map(|d| (b.start_s, d)))
            .collect();
        delay.push(
            Series::line("video, mean (250 ms)", video)
                .with_color("#000000")
                .dashed(),
        );
    }
    let mut skew = Chart::new(
        format!("{title}: A/V skew"),
        Axis::linear("time the picture was shown (s)"),
        Axis::linear("audio lead (ms; + heard before seen)"),
    );
    let (ahead, behind) = (ms(MAX_AHEAD), ms(MAX_BEHIND));
    skew.band(Band {
        name: format!("BT.1359: -{behind:.0}..+{ahead:.0} ms"),
        y: (-behind, ahead),
        color: "#009E73".into(),
    });
    let points = audio
        .skews
        .iter()
        .map(|&(at, lead)| (at.as_micros() as f64 / 1e6, lead))
        .collect();
    skew.push(styled_run(
        Series::line("each picture shown", points),
        r,
        runs,
    ));
    let inside = audio
        .skews
        .iter()
        .filter(|(_, lead)| (-behind..=ahead).contains(lead))
        .count();
    let share = match audio.skews.len() {
        0 => "no picture was shown while audio played".to_string(),
        n => format!(
            "{:.1}% of its {n} pictures inside the window",
            inside as f64 * 100.0 / n as f64
        ),
    };
    let run = format!("{title}, run {}", r.plan.id);
    [
        Drawn {
            name: format!("{stem}-audio-delay"),
            caption: format!(
                "{run}: the audio's mouth-to-ear delay (capture to playout, any lip-sync hold \
                 included) of the frames played, mean and largest in 250 ms bins, from its \
                 audio.csv; dashed black: the video's per-frame delay (the paper's), mean over \
                 the frames captured in each bin."
            ),
            svg: delay.to_svg(),
        },
        Drawn {
            name: format!("{stem}-av-skew"),
            caption: format!(
                "{run}: the A/V skew of each picture shown while audio played: the capture \
                 time of the audio playing when the picture was shown less the picture's own \
                 (positive: the sound is heard before its picture is seen), from audio.csv and \
                 frames.csv; the band is ITU-R BT.1359's window of acceptable skew. {share}."
            ),
            svg: skew.to_svg(),
        },
    ]
}

fn ms(d: salsify_time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (time s, value) points of a line.
type Points = Vec<(f64, f64)>;

/// The delay of the stream's frames played (stretch frames carry no captured audio of their
/// own) in [`BIN_S`] bins by when they played: (mean, largest) per bin with frames.
fn binned_delay(audio: &RunAudio) -> (Points, Points) {
    let mut bins: std::collections::BTreeMap<u64, (f64, u32, f64)> = Default::default();
    for p in audio
        .played
        .iter()
        .filter(|p| p.kind != PlayedKind::Stretch)
    {
        let at_s = p.at.as_micros() as f64 / 1e6;
        let delay = ms(p.at.saturating_duration_since(p.captured));
        let bin = bins
            .entry((at_s / BIN_S) as u64)
            .or_insert((0.0, 0, f64::MIN));
        bin.0 += delay;
        bin.1 += 1;
        bin.2 = bin.2.max(delay);
    }
    let start = |b: u64| b as f64 * BIN_S;
    let mean = bins
        .iter()
        .map(|(&b, &(sum, n, _))| (start(b), sum / f64::from(n)))
        .collect();
    let largest = bins
        .iter()
        .map(|(&b, &(_, _, max))| (start(b), max))
        .collect();
    (mean, largest)
}

/// The audio figures of every run that carried audio (from its `summary.json`), beside its
/// video's delay; `None` when no run did.
pub fn table(runs: &[Entry]) -> Option<Table> {
    let with: Vec<Entry> = runs
        .iter()
        .filter(|r| r.result.summary.audio.is_some())
        .copied()
        .collect();
    if with.is_empty() {
        return None;
    }
    let cells = cell_columns(&with);
    let mut header: Vec<String> = ["link", "scheme", "run", "audio", "sync"]
        .map(String::from)
        .to_vec();
    header.extend(cells.iter().map(|(name, _)| name.to_string()));
    header.extend(
        [
            "audio delay ms mean",
            "audio delay ms p95",
            "video delay ms p95",
            "concealed %",
            "FEC-recovered %",
            "skipped %",
            "stalled %",
            "played faster %",
            "A/V skew in window %",
        ]
        .map(String::from),
    );
    let rows = with
        .iter()
        .map(|r| {
            let (s, e) = (&r.result.summary, &r.plan.experiment);
            let a = s.audio.expect("filtered on audio");
            let percent = |v: f64| format!("{:.2}", v * 100.0);
            let mut row = vec![
                r.link().to_string(),
                r.name(),
                r.how().to_string(),
                source_name(&e.audio).to_string(),
                e.sync.clone(),
            ];
            row.extend(cells.iter().map(|(_, value)| value(r)));
            row.extend([
                format!("{:.0}", a.audio_delay_mean_ms),
                format!("{:.0}", a.audio_delay_p95_ms),
                num(s.delay_p95_ms, 0),
                percent(a.audio_concealed_fraction),
                percent(a.audio_fec_fraction),
                percent(a.audio_skipped_fraction),
                percent(a.audio_stalled_fraction),
                percent(a.audio_accelerated_fraction),
                num(a.av_skew_in_window_fraction.map(|f| f * 100.0), 1),
            ]);
            row
        })
        .collect();
    Some(Table { header, rows })
}
