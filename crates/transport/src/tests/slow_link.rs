//! The default rules for slow and fading links ([`SenderRules::SlowLink`]) and the paper's rules
//! ([`SenderRules::Paper`]) in whole sessions over the fake codec: what they send while the
//! link is slow, silent or too slow for the delay target, against the default rules.

use super::support::{fake_session, fake_session_with_receiver, ms, FakeSession, LinkConfig};
use crate::fake::SizeModel;
use crate::*;
use salsify_codec::Quality;
use salsify_endpoint::{Choice, SentFrame};
use salsify_time::Duration;

/// 500 kbit/s, 20 ms each way.
fn narrow() -> LinkConfig {
    LinkConfig {
        bytes_per_sec: Some(62_500.0),
        ..LinkConfig::default()
    }
}

/// A session whose fake frames are sized like VP8's at 640x360 (measured in the simulator:
/// about 6.8 KB at quantizer 47, 3 KB at 94, 1.9 KB at 127), so that even the coarsest frame
/// is often more than one fragment, as on the slow links this is about.
fn session(rules: SenderRules, forward: LinkConfig, seed: u64) -> FakeSession {
    session_with(config(rules), forward, seed)
}

/// [`session`] with a whole sender configuration.
fn session_with(config: SenderConfig, forward: LinkConfig, seed: u64) -> FakeSession {
    let mut s = fake_session(config, forward, narrow(), seed);
    s.service.encoder.model = SizeModel {
        bytes_at_q64: 5_000.0,
        halving_step: 36.0,
        ..SizeModel::default()
    };
    s
}

/// The default configuration under `rules`.
fn config(rules: SenderRules) -> SenderConfig {
    SenderConfig {
        rules,
        ..SenderConfig::default()
    }
}

/// Frames sent (by commit time) within `from..to`.
fn sent_between(s: &FakeSession, from: u64, to: u64) -> Vec<SentFrame> {
    s.sent
        .values()
        .map(|(f, _)| *f)
        .filter(|f| f.at >= ms(from) && f.at < ms(to))
        .collect()
}

/// The p95 delay of the pictures captured within `from..to`, as the paper counts it: the
/// display time of the first frame shown of that picture or a later one, minus its capture.
fn p95_delay(s: &FakeSession, from: u64, to: u64) -> Duration {
    let mut delays: Vec<Duration> = (0u64..)
        .map(|i| ms(0) + Duration::from_micros(33_333 * i))
        .skip_while(|t| *t < ms(from))
        .take_while(|t| *t < ms(to))
        .map(|t| {
            s.shown
                .iter()
                .filter(|f| f.captured >= t)
                .map(|f| f.at - t)
                .min()
                .unwrap_or(Duration::MAX)
        })
        .collect();
    delays.sort();
    delays
        .get(delays.len() * 95 / 100)
        .copied()
        .unwrap_or(Duration::MAX)
}

/// 5 s at 500 kbit/s, 20 s at 20 kbit/s (one 1400-byte fragment per ~560 ms), 5 s back at
/// 500 kbit/s.
fn fading_run(rules: SenderRules) -> FakeSession {
    let mut s = session(rules, narrow(), 21);
    s.run_until(ms(5_000));
    s.forward.config.bytes_per_sec = Some(2_500.0);
    s.run_until(ms(25_000));
    s.forward.config.bytes_per_sec = Some(62_500.0);
    s.run_until(ms(30_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    s
}

#[test]
fn on_a_fading_link_the_slow_link_rules_do_not_build_a_queue() {
    let slow = fading_run(SenderRules::SlowLink);
    let paper = fading_run(SenderRules::Paper);
    let offered =
        |s: &FakeSession| -> usize { sent_between(s, 5_000, 25_000).iter().map(|f| f.bytes).sum() };
    for (name, s) in [("slow-link", &slow), ("paper", &paper)] {
        println!(
            "{name}: offered {} B in the 20 s fade (link: 50000 B), p95 delay in the fade {:?}, \
             after it {:?}, {} frames shown after it",
            offered(s),
            p95_delay(s, 5_000, 25_000),
            p95_delay(s, 26_000, 29_000),
            s.shown.iter().filter(|f| f.at >= ms(26_000)).count(),
        );
    }
    // The link carries 50 kB in the fade: the slow-link rules offer not much more than that
    // (their frames are at least one fragment), the paper's rules several times it.
    assert!(offered(&slow) < 75_000, "{}", offered(&slow));
    // A second after the link comes back, the video is live again.
    assert!(p95_delay(&slow, 26_000, 29_000) < Duration::from_millis(400));
    assert!(slow.shown.iter().filter(|f| f.at >= ms(26_000)).count() > 40);
    // The queue built before the estimate notices the fade drains under both rules (a step
    // from 500 to 20 kbit/s strands seconds of fragments); the slow-link rules add less to it.
    assert!(offered(&paper) > 2 * offered(&slow), "{}", offered(&paper));
    assert!(p95_delay(&slow, 5_000, 25_000) < p95_delay(&paper, 5_000, 25_000));
}

#[test]
fn probes_are_the_smallest_frames_and_back_off_while_the_silence_lasts() {
    // Uncapped backoff: with the default paced cap, probes on this 500 kb/s link (a fragment
    // in ~22 ms) stay 80 ms apart; the cap's effect is covered by fake_network's outage test.
    let mut uncapped = config(SenderRules::SlowLink);
    uncapped.slow_link.paced_probe_cap = false;
    let mut s = session_with(uncapped, narrow(), 5);
    s.run_until(ms(5_000));
    s.forward.config.loss = 1.0;
    s.run_until(ms(15_000));
    s.forward.config.loss = 0.0;
    let restored = s.now;
    s.run_until(ms(20_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    // Frames committed once the outage is noticed (the floor, 250 ms, plus the flight).
    let probes = sent_between(&s, 5_400, 15_000);
    let at: Vec<_> = probes.iter().map(|f| f.at).collect();
    println!("probes at {at:?}");
    assert!(!probes.is_empty());
    assert!(probes.len() <= 10, "{} probes in 10 s", probes.len());
    for f in &probes {
        // One fragment, or the coarsest frame there is.
        assert!(f.fragments == 1 || f.quality == Quality::WORST, "{f:?}");
        assert_eq!(f.choice, Choice::ForcedWorse);
        assert!(f.recovery, "probes are encoded from an acknowledged state");
    }
    // The interval doubles with each probe (a probe goes at the first picture whose coarsest
    // frame is one fragment once it is due, so later than that, never earlier) up to the 2 s
    // cap, which the last ones reach.
    let gaps: Vec<Duration> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| *g >= Duration::from_millis(80)));
    assert!(gaps
        .iter()
        .rev()
        .take(2)
        .all(|g| *g >= Duration::from_millis(2_000)));
    let first = s.first_shown_after(restored).expect("shown again");
    println!(
        "first frame shown {:?} after the link came back",
        first.at - restored
    );
    assert!(first.at - restored < Duration::from_millis(2_300));
    let after = s.shown.iter().filter(|f| f.at >= ms(17_000)).count();
    assert!(after > 30, "{after} frames shown in 17-20 s");
}

#[test]
fn forced_sends_on_a_link_too_slow_for_the_target_fit_the_estimate() {
    // 64 kbit/s: one fragment per ~180 ms, longer than the 100 ms target: the budget is
    // always zero, every frame is a forced send.
    let slow = LinkConfig {
        bytes_per_sec: Some(8_000.0),
        ..LinkConfig::default()
    };
    let c = config(SenderRules::SlowLink);
    let mut s = session(SenderRules::SlowLink, slow, 3);
    s.run_until(ms(20_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    let forced: Vec<SentFrame> = sent_between(&s, 2_000, 20_000)
        .into_iter()
        .filter(|f| f.choice == Choice::ForcedWorse)
        .collect();
    // 64 kbit/s carries about 5 frames of 1.5 KB a second; the forced ones are a share.
    let all = sent_between(&s, 5_000, 20_000).len();
    assert!(all > 40, "{all} frames in 15 s");
    assert!(!forced.is_empty());
    for f in &forced {
        let limit = c.fragment_payload.max(f.budget.unwrap_or(0));
        assert!(
            f.bytes <= limit || f.quality == c.max_quality,
            "{f:?} over {limit}"
        );
    }
    let coarsest = forced.iter().filter(|f| f.quality == c.max_quality).count();
    println!(
        "{} forced sends, {coarsest} at the coarsest quality; p95 delay {:?}",
        forced.len(),
        p95_delay(&s, 5_000, 19_000)
    );
    assert!(p95_delay(&s, 5_000, 19_000) < Duration::from_millis(800));
}

#[test]
fn the_coarsest_encode_is_one_more_job_from_the_same_source() {
    // Silence the receiver: after the outage timeout a probe is due, and the worse option of
    // a keyframe-sized picture is more than a fragment.
    let mut s = session(SenderRules::SlowLink, narrow(), 9);
    s.run_until(ms(3_000));
    s.forward.config.loss = 1.0;
    s.run_until(ms(4_000));
    // The options step 23 quantizers from the last frame's (about 60 here): a frame at 127 is
    // the extra encode.
    assert!(s
        .sent
        .values()
        .any(|(f, _)| f.quality == Quality::WORST && f.fragments == 1));
}

#[test]
fn the_paper_rules_never_suspect_an_outage_and_force_with_fragments_in_flight() {
    // The paper's receiver too, as the salsify-paper scheme has it.
    let paper_receiver = ReceiverConfig::default().first_round();
    let mut s = fake_session_with_receiver(
        config(SenderRules::Paper),
        paper_receiver,
        narrow(),
        narrow(),
        4,
    );
    s.service.encoder.model = SizeModel {
        bytes_at_q64: 5_000.0,
        halving_step: 36.0,
        ..SizeModel::default()
    };
    s.run_until(ms(3_000));
    s.forward.config.loss = 1.0;
    for t in (3_100..5_000).step_by(100) {
        s.run_until(ms(t));
        assert!(!s.sender.outage_suspected(s.now));
    }
    s.forward.config.loss = 0.0;
    s.run_until(ms(8_000));
    let tx = s.sender.stats();
    assert_eq!(tx.outage_frames, 0);
    // With fragments in flight and no ACK, the budget stays shut and every fifth picture is
    // forced out (the project's rules force only with nothing in flight).
    let forced = sent_between(&s, 3_300, 5_000);
    assert!(forced.len() >= 8, "{}", forced.len());
    assert!(forced.iter().all(|f| f.choice == Choice::ForcedWorse));
    assert!(
        s.shown.iter().any(|f| f.at >= ms(7_000)),
        "video flows again"
    );
}

#[test]
fn with_the_paced_probe_cap_a_fast_link_is_probed_every_interval() {
    // A probe costs a 500 kbit/s link next to nothing: every 80 ms, as the default rules.
    let c = SenderConfig {
        slow_link: SlowLinkConfig {
            paced_probe_cap: true,
            ..config(SenderRules::SlowLink).slow_link
        },
        ..config(SenderRules::SlowLink)
    };
    let mut s = fake_session(c, narrow(), narrow(), 5);
    s.service.encoder.model = session(SenderRules::SlowLink, narrow(), 5)
        .service
        .encoder
        .model;
    s.run_until(ms(5_000));
    s.forward.config.loss = 1.0;
    s.run_until(ms(8_000));
    s.forward.config.loss = 0.0;
    let restored = s.now;
    s.run_until(ms(10_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    let probes = sent_between(&s, 5_400, 8_000);
    assert!(probes
        .iter()
        .all(|f| f.fragments == 1 || f.quality == Quality::WORST));
    let gaps: Vec<Duration> = probes.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps.len() > 15, "{gaps:?}");
    assert!(gaps.iter().all(|g| *g >= Duration::from_millis(80)));
    assert!(
        gaps.iter().all(|g| *g <= Duration::from_millis(150)),
        "{gaps:?}"
    );
    let first = s.first_shown_after(restored).expect("shown again");
    assert!(first.at - restored < Duration::from_millis(300));
}

/// A 5 Mb/s link falls to 16 kbit/s for 10 s and comes back: how long after the sender sends
/// again until it sends a better (finer) option, with `idle_link_skips` skips before
/// a forced send into an idle link. (The fake link times each packet when it enters, so what
/// queued during the fade drains at the fade's rate: the sender waits for it until ~37 s.)
fn recovery_after_a_deep_fade(idle_link_skips: u32) -> Duration {
    let mut c = config(SenderRules::SlowLink);
    c.slow_link.idle_link_skips = idle_link_skips;
    let fast = LinkConfig {
        bytes_per_sec: Some(625_000.0),
        ..LinkConfig::default()
    };
    let mut s = session_with(c, fast, 9);
    s.run_until(ms(3_000));
    s.forward.config.bytes_per_sec = Some(2_000.0);
    s.run_until(ms(13_000));
    s.forward.config.bytes_per_sec = Some(625_000.0);
    s.run_until(ms(60_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    // The sender resumes once what queued during the fade has drained.
    let back = s
        .sent
        .values()
        .map(|(f, _)| f.at)
        .filter(|at| *at >= ms(13_000))
        .min()
        .expect("sends again");
    let better = s
        .sent
        .values()
        .map(|(f, _)| f)
        .filter(|f| f.at >= back && f.choice == Choice::Better)
        .map(|f| f.at)
        .min()
        .expect("better options again");
    println!("{idle_link_skips} skips: sends again at {back:?}, better option at {better:?}");
    better - back
}

#[test]
fn forced_fragments_into_an_idle_link_bring_the_estimate_back_after_a_fade() {
    let (eager, patient) = (recovery_after_a_deep_fade(1), recovery_after_a_deep_fade(4));
    println!("first better option after the fade: {eager:?} (1 skip), {patient:?} (4 skips)");
    assert!(eager < patient, "{eager:?} vs {patient:?}");
}

/// Frames shown in the last second of a 5 s dead ACK path (from 5 s to 10 s) while the
/// video path (10 Mb/s) stays healthy, with the camera at `fps` and the receiver configured `receiver`:
/// the sender encodes every probe from the last state it saw acknowledged (dozens of
/// probes), and the receiver must still hold that state for the last of them. Asserts that
/// no frame is shown wrong and that probes went out.
fn shown_late_in_an_ack_stall(fps: u64, receiver: ReceiverConfig) -> usize {
    let mut s = fake_session_with_receiver(
        config(SenderRules::SlowLink),
        receiver,
        LinkConfig {
            bytes_per_sec: Some(1_250_000.0),
            ..LinkConfig::default()
        },
        narrow(),
        7,
    );
    s.frame_interval = Duration::from_micros(1_000_000 / fps);
    s.run_until(ms(5_000));
    s.backward.config.loss = 1.0;
    s.run_until(ms(10_000));
    s.backward.config.loss = 0.0;
    s.run_until(ms(12_000));
    assert!(s.wrong.is_empty(), "frames shown wrong: {:?}", s.wrong);
    let probes = sent_between(&s, 5_500, 10_000);
    assert!(probes.len() > 20, "{} probes", probes.len());
    s.shown
        .iter()
        .filter(|f| f.at >= ms(9_000) && f.at < ms(10_000))
        .count()
}

#[test]
fn in_a_long_ack_stall_every_probe_still_decodes() {
    for fps in [30, 60] {
        let shown = shown_late_in_an_ack_stall(fps, ReceiverConfig::default());
        assert!(
            shown >= 5,
            "{fps} fps: {shown} frames shown in the stall's last second"
        );
    }
}

#[test]
fn at_60_fps_a_receiver_keeping_8_states_behind_loses_the_probes_reference() {
    // What the default's 32 is for: at 60 fps the sender sends more frames past its newest
    // acknowledged state before the budget stops it than 8 older states cover.
    let eight = ReceiverConfig {
        states_behind: 8,
        max_states: 16,
        ..ReceiverConfig::default()
    };
    assert!(shown_late_in_an_ack_stall(30, eight.clone()) >= 5);
    let at_60 = shown_late_in_an_ack_stall(60, eight);
    assert_eq!(at_60, 0, "{at_60} shown at 60 fps");
}
