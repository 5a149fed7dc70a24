//! "One-way against two-way": each direction of a two-way call beside the same direction
//! run alone, and whether the call keeps to issue 54's bar.

use super::tables::{num, Entry, Table};
use crate::metrics::Summary;
use crate::sim::FeedbackDelay;

/// Most SSIM a direction may move, in dB, between one-way and two-way (issue 54's bar).
pub const BAR_SSIM_DB: f64 = 0.5;

/// Most a direction's mean and p95 delay may grow from one-way to two-way, as a ratio.
pub const BAR_DELAY_RATIO: f64 = 1.15;

/// One direction: its one-way run's and the call's figures.
struct Direction<'a> {
    name: &'static str,
    alone: &'a Summary,
    call: Summary,
    alone_acks: Option<FeedbackDelay>,
    call_acks: Option<FeedbackDelay>,
}

/// Per two-way call among `runs` whose one-way runs are there too, a row per direction:
/// SSIM, mean and p95 delay one-way and two-way, the ACKs' queueing both ways, and which
/// parts of the bar it misses. `None` when the group has no such call.
pub fn table(runs: &[Entry]) -> Option<Table> {
    let header = [
        "link",
        "scheme",
        "direction",
        "SSIM dB one-way / two-way",
        "two - one dB",
        "delay mean ms one / two",
        "ratio",
        "delay p95 ms one / two",
        "ratio",
        "ACKs queued mean ms one / two",
        "within the bar",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for call in runs.iter().filter(|r| r.plan.experiment.two_way) {
        let mut alone = call.plan.experiment.clone();
        alone.two_way = false;
        let find = |uplink: bool| {
            let mut e = alone.clone();
            e.link.uplink = uplink;
            runs.iter()
                .find(move |r| !r.live() && r.plan.experiment == e)
        };
        let (Some(down), Some(up), Ok(Some(b_to_a))) =
            (find(false), find(true), call.result.b_to_a())
        else {
            continue;
        };
        let directions = [
            Direction {
                name: "A to B",
                alone: &down.result.summary,
                call: call.result.summary.clone(),
                alone_acks: down.result.feedback(false),
                call_acks: call.result.feedback(false),
            },
            Direction {
                name: "B to A",
                alone: &up.result.summary,
                call: b_to_a,
                alone_acks: up.result.feedback(false),
                call_acks: call.result.feedback(true),
            },
        ];
        for d in directions {
            rows.push(row(call, &d));
        }
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}

fn row(call: &Entry, d: &Direction) -> Vec<String> {
    let (a, c) = (d.alone, &d.call);
    let pair =
        |x: Option<f64>, y: Option<f64>, digits| format!("{} / {}", num(x, digits), num(y, digits));
    let ratio = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x),
        _ => None,
    };
    let ssim = match (a.ssim_db_mean, c.ssim_db_mean) {
        (Some(x), Some(y)) => Some(y - x),
        _ => None,
    };
    let mean = ratio(a.delay_mean_ms, c.delay_mean_ms);
    let p95 = ratio(a.delay_p95_ms, c.delay_p95_ms);
    let mut missed = Vec::new();
    if ssim.is_none_or(|s| s.abs() > BAR_SSIM_DB) {
        missed.push("SSIM");
    }
    if mean.is_none_or(|r| r > BAR_DELAY_RATIO) {
        missed.push("mean");
    }
    if p95.is_none_or(|r| r > BAR_DELAY_RATIO) {
        missed.push("p95");
    }
    let queued = |f: Option<FeedbackDelay>| f.and_then(|f| f.queue_mean_ms);
    vec![
        call.link().to_string(),
        call.name(),
        d.name.to_string(),
        pair(a.ssim_db_mean, c.ssim_db_mean, 2),
        ssim.map_or("-".into(), |s| format!("{s:+.2}")),
        pair(a.delay_mean_ms, c.delay_mean_ms, 0),
        mean.map_or("-".into(), |r| format!("{r:.2}x")),
        pair(a.delay_p95_ms, c.delay_p95_ms, 0),
        p95.map_or("-".into(), |r| format!("{r:.2}x")),
        pair(queued(d.alone_acks), queued(d.call_acks), 1),
        match missed.is_empty() {
            true => "yes".into(),
            false => format!("no ({})", missed.join(", ")),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::super::fixtures;
    use super::*;

    /// A call whose B-to-A direction's p95 grew by a fifth misses the bar there only; its
    /// A-to-B direction, within it, passes; the ACKs' queueing is read from each folder.
    #[test]
    fn each_direction_is_set_beside_itself_alone() {
        let dir = std::env::temp_dir().join(format!("salsify-two-way-{}", std::process::id()));
        let mut runs = fixtures::runs(&[
            ("salsify-2c", "T", 1, Some(100.0), Some(200.0)),
            ("salsify-2c", "T-up", 1, Some(50.0), Some(100.0)),
            ("salsify-2c", "T", 1, Some(110.0), Some(220.0)),
        ]);
        runs[1].0.experiment.link.uplink = true;
        runs[2].0.experiment.two_way = true;
        runs[2].0.link = "T".into();
        let acks = |queue: f64| FeedbackDelay {
            datagrams: 10,
            queue_mean_ms: Some(queue),
            ..FeedbackDelay::default()
        };
        let write = |sub: &str, json: String| {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("feedback.json"), json).unwrap();
            d
        };
        let json = |f| serde_json::to_string(&f).unwrap();
        runs[0].1.dir = write("down", json(acks(1.0)));
        runs[1].1.dir = write("up", json(acks(2.0)));
        runs[2].1.dir = write("call", json(acks(15.0)));
        write("call/b-to-a", json(acks(30.0)));
        let b_to_a = fixtures::summary(Some(55.0), Some(120.0));
        let both = serde_json::json!({"a_to_b": runs[2].1.summary, "b_to_a": b_to_a});
        std::fs::write(dir.join("call/summary.json"), both.to_string()).unwrap();
        let entries: Vec<Entry> = runs
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = table(&entries).unwrap();
        // Without its one-way runs a call has no row.
        assert!(table(&entries[2..]).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(t.rows.len(), 2);
        let (a, b) = (&t.rows[0], &t.rows[1]);
        assert_eq!((a[2].as_str(), b[2].as_str()), ("A to B", "B to A"));
        assert_eq!(a[5], "100 / 110");
        assert_eq!(a[9], "1.0 / 15.0");
        assert_eq!(a[10], "yes");
        assert_eq!(b[7], "100 / 120");
        assert_eq!(b[8], "1.20x");
        assert_eq!(b[9], "2.0 / 30.0");
        assert_eq!(b[10], "no (p95)");
    }
}
