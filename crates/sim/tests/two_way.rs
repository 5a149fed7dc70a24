//! A two-way call in the simulator: both directions run, the run is a pure function of its
//! configuration, and each direction's ACKs queue behind the other direction's video.

use salsify_netem::{generators, Bitrate, LinkConfig};
use salsify_sim::{simulate, simulate_two_way, SimConfig, SyntheticVideo, TwoWayOutput};
use salsify_time::Duration;

/// Both ways a narrow constant link, so a direction's video keeps a queue the other
/// direction's ACKs must wait behind.
fn config() -> SimConfig {
    let link = LinkConfig::with_trace(generators::constant(Bitrate::kbps(400)).unwrap());
    SimConfig {
        data_link: link.clone(),
        feedback_link: link,
        duration: Duration::from_secs(4),
        ..SimConfig::default()
    }
}

fn video() -> SyntheticVideo {
    SyntheticVideo::new(160, 96, 30, 1).unwrap()
}

fn call() -> TwoWayOutput {
    simulate_two_way(&config(), &mut video(), &mut |_| {}).unwrap()
}

#[test]
fn a_call_is_deterministic_and_shows_both_directions() {
    let (a, b) = (call(), call());
    let json = |s: &salsify_metrics::Summary| serde_json::to_string(s).unwrap();
    for (x, y) in [(&a.a_to_b, &b.a_to_b), (&a.b_to_a, &b.b_to_a)] {
        assert_eq!(json(&x.summary), json(&y.summary));
        assert_eq!(x.records, y.records);
        assert_eq!(x.feedback, y.feedback);
    }
    for (name, d) in [("A to B", &a.a_to_b), ("B to A", &a.b_to_a)] {
        assert_eq!(d.records.len(), 120, "{name}");
        assert!(
            d.summary.frames_shown > 40,
            "{name}: {}",
            d.summary.frames_shown
        );
        assert!(d.feedback.datagrams > 0, "{name}");
    }
}

/// A's ACKs share link 1 with B's video: they wait in its queue, where alone on the link
/// (one-way) they hardly wait at all.
#[test]
fn acks_queue_behind_the_other_directions_video() {
    let one_way = simulate(&config(), &mut video(), &mut |_| {}).unwrap();
    let two_way = call();
    let alone = one_way.feedback.queue_mean_ms.unwrap();
    let shared = two_way.a_to_b.feedback.queue_mean_ms.unwrap();
    println!("A's ACKs queued {alone:.1} ms alone, {shared:.1} ms behind B's video");
    assert!(
        shared > alone + 10.0,
        "alone {alone:.1} ms, shared {shared:.1} ms"
    );
    // B's video was really on that link: its direction delivered media bytes.
    assert!(two_way.b_to_a.summary.link_utilisation.unwrap() > 0.3);
}
