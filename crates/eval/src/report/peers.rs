//! Each peer against Salsify-2c's frontier: a peer's one point set against every Salsify-2c
//! run of the same link and video (its sweep), read at the peer's delay and at the peer's
//! quality. One operating point each hides the trade; this table says what Salsify-2c gets
//! where the peer sits.

use super::frontier::{Delay, Frontier};
use super::tables::{num, Entry, Table};
use salsify_schemes::{registry, SchemeRole};

/// The scheme whose frontier the peers are read against (the report's Salsify).
fn salsify() -> &'static str {
    registry::the(SchemeRole::Salsify)
}

/// Whether `b` ran the link and video `a` did (and the same seed, duration and frame rate):
/// only such runs can share a frontier.
fn same_cell(a: &Entry, b: &Entry) -> bool {
    let (x, y) = (&a.plan.experiment, &b.plan.experiment);
    a.link() == b.link()
        && x.link == y.link
        && x.video == y.video
        && x.size == y.size
        && x.fps == y.fps
        && x.duration_s == y.duration_s
        && x.seed == y.seed
}

/// A peer as its row names it: the scheme, its setting where it has one, and the oracle
/// marked as the bound it is rather than a peer.
fn peer_name(r: &Entry) -> String {
    let mut name = r.name();
    if r.scheme() == registry::the(SchemeRole::Bound) {
        name += " (bound, not a peer)";
    }
    name
}

/// Salsify-2c's quality at the peer's delay: "SSIM (difference)", or why not.
fn ssim_cell(f: &Frontier, delay: Option<f64>, peer_db: Option<f64>) -> String {
    match (delay, peer_db) {
        (Some(d), Some(q)) => f.ssim_at(d).map_or("beyond the sweep".into(), |s| {
            format!("{s:.2} ({:+.2})", s - q)
        }),
        _ => "-".into(),
    }
}

/// Salsify-2c's delay at the peer's quality: "ms (ratio to the peer's)", or why not.
fn delay_cell(f: &Frontier, delay: Option<f64>, peer_db: Option<f64>) -> String {
    match (delay, peer_db) {
        (Some(d), Some(q)) if d > 0.0 => f.delay_at(q).map_or("beyond the sweep".into(), |s| {
            format!("{s:.0} ({:.2}x)", s / d)
        }),
        _ => "-".into(),
    }
}

/// The efficient points' range: "lowest-highest ms, lowest-highest dB (points)".
fn range_cell(f: &Frontier) -> String {
    match (f.points().first(), f.points().last()) {
        (Some(a), Some(b)) => format!(
            "{:.0}-{:.0}, {:.2}-{:.2} ({})",
            a.0,
            b.0,
            a.1,
            b.1,
            f.points().len()
        ),
        _ => "-".into(),
    }
}

/// One row per peer run (every scheme not Salsify's) of a link where Salsify-2c ran: at the
/// peer's p95 and mean, Salsify-2c's SSIM, and at the peer's SSIM, Salsify-2c's p95 and
/// mean, each read linearly along Salsify-2c's efficient points; "beyond the sweep" where the
/// peer's value is outside their range. `None` when no peer has a link where Salsify-2c ran
/// at two or more settings.
pub fn peer_table(runs: &[Entry]) -> Option<Table> {
    let header = [
        "link",
        "peer",
        "run",
        "peer SSIM dB",
        "peer delay ms mean / p95",
        "Salsify-2c SSIM dB at the peer's p95 (diff)",
        "Salsify-2c p95 ms at the peer's SSIM (ratio)",
        "Salsify-2c SSIM dB at the peer's mean (diff)",
        "Salsify-2c mean ms at the peer's SSIM (ratio)",
        "Salsify-2c frontier at p95: ms, dB (points)",
        "at mean: ms, dB (points)",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for peer in runs
        .iter()
        .filter(|r| !registry::same_family(r.scheme(), salsify()))
    {
        let sweep: Vec<&Entry> = runs
            .iter()
            .filter(|r| r.scheme() == salsify() && same_cell(peer, r))
            .collect();
        // A frontier needs two settings: one setting of Salsify-2c (run once, or simulated
        // and live) is no sweep to read along.
        let settings: std::collections::BTreeSet<String> =
            sweep.iter().map(|r| r.setting()).collect();
        if settings.len() < 2 {
            continue;
        }
        let [p95, mean] = [Delay::P95, Delay::Mean].map(|delay| {
            Frontier::new(
                sweep
                    .iter()
                    .filter_map(|r| Some((delay.of(r)?, r.result.summary.ssim_db_mean?))),
            )
        });
        let s = &peer.result.summary;
        let q = s.ssim_db_mean;
        rows.push(vec![
            peer.link().to_string(),
            peer_name(peer),
            peer.how().to_string(),
            num(q, 2),
            format!("{} / {}", num(s.delay_mean_ms, 0), num(s.delay_p95_ms, 0)),
            ssim_cell(&p95, s.delay_p95_ms, q),
            delay_cell(&p95, s.delay_p95_ms, q),
            ssim_cell(&mean, s.delay_mean_ms, q),
            delay_cell(&mean, s.delay_mean_ms, q),
            range_cell(&p95),
            range_cell(&mean),
        ]);
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::runs;
    use super::*;

    /// A peer inside Salsify-2c's sweep is read by interpolation; one below it or beyond it
    /// is said to be beyond the sweep; the oracle is marked; Salsify's own variants and a
    /// link without Salsify-2c give no row.
    #[test]
    fn each_peer_is_read_along_salsifys_sweep() {
        let mut made = runs(&[
            ("salsify-2c", "cellular", 1, Some(50.0), Some(100.0)),
            ("salsify-2c", "cellular", 1, Some(80.0), Some(200.0)),
            ("salsify-2c", "cellular", 1, Some(120.0), Some(300.0)),
            ("conventional", "cellular", 1, Some(65.0), Some(150.0)),
            ("sprout", "cellular", 1, Some(30.0), Some(50.0)),
            ("vidaptive", "cellular", 1, Some(200.0), Some(400.0)),
            ("oracle", "cellular", 1, Some(40.0), Some(60.0)),
            ("salsify-1c", "cellular", 1, Some(40.0), Some(60.0)),
            ("conventional", "wifi", 1, Some(40.0), Some(60.0)),
        ]);
        for (i, db) in [10.0, 12.0, 13.0, 10.6, 9.0, 14.0, 12.0]
            .into_iter()
            .enumerate()
        {
            made[i].1.summary.ssim_db_mean = Some(db);
        }
        for (i, d) in [50.0, 80.0, 120.0].into_iter().enumerate() {
            made[i]
                .0
                .experiment
                .params
                .set("salsify", &toml::toml! { delay_target_ms = d });
        }
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        let t = peer_table(&entries).unwrap();
        assert_eq!(t.rows.len(), 4, "{:#?}", t.rows);
        assert_eq!(
            t.rows[0],
            [
                "cellular",
                "conventional",
                "sim",
                "10.60",
                "65 / 150",
                "11.00 (+0.40)",
                "130 (0.87x)",
                "11.00 (+0.40)",
                "59 (0.91x)",
                "100-300, 10.00-13.00 (3)",
                "50-120, 10.00-13.00 (3)",
            ]
        );
        // Below the sweep (sprout) and beyond it (vidaptive): no extrapolation.
        for row in &t.rows[1..3] {
            assert_eq!(row[5..9], ["beyond the sweep"; 4], "{row:?}");
        }
        assert!(t.rows[2][1].starts_with("vidaptive"));
        assert!(t.rows[3][1].starts_with("oracle"));
        assert!(t.rows[3][1].ends_with("(bound, not a peer)"));
        // The oracle's SSIM is inside the sweep, its delays below it.
        assert_eq!(t.rows[3][5], "beyond the sweep");
        assert_eq!(t.rows[3][6], "200 (3.33x)");
        // No Salsify-2c, no table; one point of it is no frontier either.
        assert!(peer_table(&entries[3..]).is_none());
        assert!(peer_table(&entries[2..]).is_none());
    }

    /// One setting of Salsify-2c run twice (a live cell and its simulated twin) is one point
    /// of the trade, not a frontier: no table.
    #[test]
    fn one_setting_simulated_and_live_is_no_frontier() {
        let mut made = runs(&[
            ("salsify-2c", "dropout", 1, Some(138.0), Some(494.0)),
            ("salsify-2c", "dropout", 1, Some(150.0), Some(608.0)),
            ("conventional", "dropout", 1, Some(637.0), Some(2775.0)),
        ]);
        made[1].0.live = true;
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        assert!(peer_table(&entries).is_none());
        made[1]
            .0
            .experiment
            .params
            .set("salsify", &toml::toml! { delay_target_ms = 50.0 });
        let entries: Vec<Entry> = made
            .iter()
            .map(|(plan, result)| Entry { plan, result })
            .collect();
        assert_eq!(peer_table(&entries).unwrap().rows.len(), 1);
    }
}
