//! Golden traces: the exact sequence of every output (encode requests, datagrams, events,
//! deadlines) and every input's result of a sender and receiver pair, over seeded fake links
//! in every mode and through the awkward paths (loss, outage, a link too slow for the delay
//! target, failed and malformed encodes, garbage datagrams), digested into one number per
//! scenario.
//!
//! Why: refactors (the pure decision functions, the endpoint's one vocabulary, serde on the configs)
//! must not change behaviour at all — simulator runs are compared byte for byte before and
//! after. The digests were recorded on the code before those refactors; a changed digest
//! means behaviour changed. If a change of behaviour is intended, re-record them (run with
//! `--nocapture` to see the new values) and say so in the commit.

use super::support::{EncodeService, FakeService, Link, LinkConfig};
use crate::fake::{FakeDecoder, FakeFrame, FakePicture, FakeState};
use crate::*;
use salsify_codec::{Quality, StateHash};
use salsify_endpoint::{
    EncodeJob, EncodeRequest, ReceiverEvent, ReceiverOutput, SenderEvent, SenderOutput,
};
use salsify_time::{Duration, Instant};

/// FNV-1a, 64 bits: tiny and stable across Rust versions (unlike `DefaultHasher`).
struct Digest(u64);

impl Digest {
    fn new() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, tag: u8, bytes: &[u8]) {
        for &b in std::iter::once(&tag).chain(bytes) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn debug(&mut self, tag: u8, value: &impl std::fmt::Debug) {
        self.bytes(tag, format!("{value:?}").as_bytes());
    }
}

/// The `salsify-paper` scheme's sender: the paper's rules and budget, 0.5-2 ms gaps, no
/// encode-time floor.
fn paper_rules() -> SenderConfig {
    SenderConfig {
        rules: SenderRules::Paper,
        budget: BudgetSource::Ewma,
        pacing: PacingConfig::original(),
        encode_time: EncodeTimeConfig {
            enabled: false,
            ..EncodeTimeConfig::default()
        },
        ..SenderConfig::default()
    }
}

/// One scenario: sender config, links, an outage window on the video direction, faults.
struct Scenario {
    config: SenderConfig,
    receiver: ReceiverConfig,
    forward: LinkConfig,
    backward: LinkConfig,
    outage: Option<(Instant, Instant)>,
    /// Every n-th encode request is reported failed.
    fail_every: u64,
    /// Every n-th encode request gets one frame too few back.
    short_every: u64,
    /// Every n-th camera picture, a garbage datagram is handed to both ends.
    garbage_every: u64,
    seed: u64,
    end: Instant,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            config: paper_rules(),
            receiver: ReceiverConfig::default().first_round(),
            forward: LinkConfig::default(),
            backward: LinkConfig::default(),
            outage: None,
            fail_every: 0,
            short_every: 0,
            garbage_every: 0,
            seed: 1,
            end: Instant::from_millis(8_000),
        }
    }
}

// The digests were recorded when the transport had its own request, event and counter types
// (before the one vocabulary of `salsify-endpoint`). The texts below are those types' `Debug`
// texts, written from today's types field by field, so the recorded digests still hold.

/// A request as its `Debug` text read before requests named a picture size: the size is
/// added only when it is not the source's, so the digests recorded before it still hold.
fn request_text(r: &EncodeRequest<FakeState>) -> String {
    let (source, job, halvings) = match &r.job {
        EncodeJob::Qualities {
            source,
            qualities,
            halvings,
            ..
        } => (source, format!("Qualities({qualities:?})"), *halvings),
        EncodeJob::SizeTarget {
            source,
            bytes,
            hint,
        } => (
            source,
            format!("SizeTarget {{ bytes: {bytes:?}, hint: {hint:?} }}"),
            0,
        ),
        other => panic!("Salsify never asks for {other:?}"),
    };
    let text = format!(
        "EncodeRequest {{ id: {:?}, picture: {:?}, captured: {:?}, source: {source:?}, job: {job} }}",
        r.id, r.picture, r.captured
    );
    match halvings {
        0 => text,
        h => format!("{text} halvings {h}"),
    }
}

/// A sender event as the transport's own event type printed it.
fn sender_event_text(e: &SenderEvent) -> String {
    match e {
        SenderEvent::FrameSent(f) => {
            let (source, target) = f.states.expect("Salsify names its states");
            format!(
                "FrameSent(SentFrame {{ frame: {:?}, picture: {:?}, captured: {:?}, at: {:?}, \
                 quality: {:?}, bytes: {:?}, fragments: {:?}, source: {source:?}, \
                 target: {target:?}, choice: {:?}, budget: {:?}, recovery: {:?} }})",
                f.frame,
                f.picture,
                f.captured,
                f.at,
                f.quality,
                f.bytes,
                f.fragments,
                f.choice,
                f.budget,
                f.recovery
            )
        }
        SenderEvent::PictureDropped { picture, at, .. } => {
            format!("PictureDropped {{ picture: {picture:?}, at: {at:?} }}")
        }
        // Skips and recoveries print as they did.
        other => format!("{other:?}"),
    }
}

/// A receiver event as the transport's own event type printed it.
fn receiver_event_text(e: &ReceiverEvent<FakePicture>) -> String {
    match e {
        ReceiverEvent::Display(d) => {
            let (source, target) = d.states.expect("Salsify names its states");
            let sent = d.first_sent_at.expect("Salsify's wire says when");
            format!(
                "Display {{ frame: {:?}, at: {:?}, picture: {:?}, source: {source:?}, \
                 target: {target:?}, first_sent_at: {sent:?}, bytes: {:?} }}",
                d.frame, d.at, d.picture, d.bytes
            )
        }
        // Losses print as they did.
        other => format!("{other:?}"),
    }
}

/// The counters as the transport's own types printed them: the sender's without the
/// keyframe count it gained with the one vocabulary.
fn stats_text(tx: &SalsifySenderStats, rx: &SalsifyReceiverStats) -> (String, String) {
    let tx = format!("{tx:?}")
        .replacen("SalsifySenderStats {", "SenderStats {", 1)
        .replacen(&format!(", keyframes: {}", tx.keyframes), "", 1);
    let rx = format!("{rx:?}").replacen("SalsifyReceiverStats {", "ReceiverStats {", 1);
    (tx, rx)
}

fn every(n: u64, i: u64) -> bool {
    n != 0 && i % n == n - 1
}

fn run(s: Scenario) -> (u64, SalsifySenderStats, SalsifyReceiverStats) {
    let mut d = Digest::new();
    let mut sender: Sender<FakeFrame> =
        Sender::new(s.config.clone(), FakeState(StateHash::INITIAL)).unwrap();
    let mut receiver = Receiver::new(s.receiver.clone(), FakeDecoder).unwrap();
    let mut service = FakeService::default();
    let mut forward = Link::new(s.forward, s.seed);
    let mut backward = Link::new(s.backward, s.seed ^ 0xb0b);
    let frame_interval = Duration::from_micros(33_333);
    let encode_time = Duration::from_millis(5);
    let mut now = Instant::ZERO;
    let mut next_capture = Instant::ZERO;
    let mut picture = 0u64;
    let mut encoding: Option<(Instant, EncodeRequest<FakeState>)> = None;
    let mut requests = 0u64;
    loop {
        // Drain both ends.
        let sender_deadline = loop {
            match sender.poll_output(now) {
                SenderOutput::Encode(r) => {
                    d.bytes(1, request_text(&r).as_bytes());
                    assert!(encoding.is_none());
                    encoding = Some((now + encode_time, r));
                }
                SenderOutput::Transmit(bytes) => {
                    d.bytes(2, &bytes);
                    let lost = s.outage.is_some_and(|(a, b)| now >= a && now < b);
                    if !lost {
                        forward.send(now, bytes);
                    }
                }
                SenderOutput::Event(e) => d.bytes(3, sender_event_text(&e).as_bytes()),
                SenderOutput::Timeout(t) => {
                    d.debug(4, &t);
                    break t;
                }
            }
        };
        let receiver_deadline = loop {
            match receiver.poll_output() {
                ReceiverOutput::Transmit(bytes) => {
                    d.bytes(5, &bytes);
                    backward.send(now, bytes);
                }
                ReceiverOutput::Event(e) => d.bytes(6, receiver_event_text(&e).as_bytes()),
                ReceiverOutput::Timeout(t) => {
                    d.debug(7, &t);
                    break t;
                }
            }
        };
        let next = [
            Some(next_capture),
            encoding.as_ref().map(|(t, _)| *t),
            Some(sender_deadline),
            Some(receiver_deadline),
            forward.next_arrival(),
            backward.next_arrival(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if next > s.end {
            break;
        }
        now = now.max(next);
        if next_capture <= now {
            sender.handle_frame(now, picture, next_capture);
            if every(s.garbage_every, picture) {
                let garbage = [1u8, 0xee, 3, 4, 5];
                d.debug(8, &sender.handle_datagram(now, &garbage));
                d.debug(8, &receiver.handle_datagram(now, &garbage));
                d.debug(8, &receiver.handle_datagram(now, &[]));
            }
            picture += 1;
            next_capture += frame_interval;
        }
        if encoding.as_ref().is_some_and(|(t, _)| *t <= now) {
            let (_, request) = encoding.take().unwrap();
            requests += 1;
            if every(s.fail_every, requests) {
                d.debug(9, &sender.handle_encode_failed(now, request.id));
            } else {
                let mut frames = service.encode(&request);
                if every(s.short_every, requests) {
                    frames.pop();
                }
                d.debug(9, &sender.handle_encoded(now, request.id, frames));
            }
        }
        while let Some(bytes) = forward.pop_due(now) {
            d.debug(10, &receiver.handle_datagram(now, &bytes));
        }
        while let Some(bytes) = backward.pop_due(now) {
            d.debug(11, &sender.handle_datagram(now, &bytes));
        }
        sender.handle_timeout(now);
        receiver.handle_timeout(now);
    }
    let (tx, rx) = (sender.stats(), receiver.stats());
    // Digested as the stats read before the encode-time floor and the resolution step's
    // counters were fields, when they are off or 0 (the paper's rules).
    let (tx_text, rx_text) = stats_text(&tx, &rx);
    let mut stats = tx_text.replace(", quality_floor: None", "");
    if let Some(before) = stats.strip_suffix(", halvings: 0, resolution_changes: 0 }") {
        stats = format!("{before} }}");
    }
    d.bytes(12, stats.as_bytes());
    d.bytes(12, rx_text.as_bytes());
    (d.0, tx, rx)
}

fn lossy() -> LinkConfig {
    LinkConfig {
        loss: 0.03,
        reorder: 0.02,
        duplicate: 0.01,
        ..LinkConfig::default()
    }
}

/// The scenarios on `base` (the sender's rules) and `receiver`, each with its digest.
fn scenarios(
    base: fn() -> SenderConfig,
    receiver: ReceiverConfig,
    digests: [u64; 10],
) -> Vec<(&'static str, Scenario, u64)> {
    let slow = LinkConfig {
        bytes_per_sec: Some(8_000.0),
        ..LinkConfig::default()
    };
    let narrow = LinkConfig {
        bytes_per_sec: Some(62_500.0),
        ..LinkConfig::default()
    };
    let start = || Scenario {
        config: base(),
        receiver: receiver.clone(),
        ..Scenario::default()
    };
    vec![
        ("salsify, clean", start(), digests[0]),
        (
            "salsify, lossy both ways",
            Scenario {
                forward: lossy(),
                backward: lossy(),
                seed: 7,
                ..start()
            },
            digests[1],
        ),
        (
            "salsify, one-second outage on a narrow link",
            Scenario {
                forward: narrow,
                backward: narrow,
                outage: Some((Instant::from_millis(3_000), Instant::from_millis(4_000))),
                ..start()
            },
            digests[2],
        ),
        (
            "salsify, link too slow for the delay target (forced sends)",
            Scenario {
                forward: slow,
                ..start()
            },
            digests[3],
        ),
        (
            "salsify, failed, short and garbage inputs",
            Scenario {
                forward: lossy(),
                fail_every: 17,
                short_every: 23,
                garbage_every: 11,
                seed: 3,
                ..start()
            },
            digests[4],
        ),
        (
            "no grace period, lossy",
            Scenario {
                config: SenderConfig {
                    grace_period: false,
                    ..base()
                },
                forward: lossy(),
                seed: 5,
                ..start()
            },
            digests[5],
        ),
        (
            "conventional codec, narrow and slow",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalCodec,
                    ..base()
                },
                forward: narrow,
                outage: Some((Instant::from_millis(2_000), Instant::from_millis(2_500))),
                ..start()
            },
            digests[6],
        ),
        (
            "conventional codec, too slow",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalCodec,
                    ..base()
                },
                forward: slow,
                ..start()
            },
            digests[7],
        ),
        (
            "conventional transport, lossy",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalTransport {
                        update_interval: Duration::from_millis(700),
                    },
                    ..base()
                },
                forward: lossy(),
                seed: 9,
                ..start()
            },
            digests[8],
        ),
        (
            "tuned: small payload, short target, 3 skips, coarse start",
            Scenario {
                config: SenderConfig {
                    fragment_payload: 600,
                    delay_target: Duration::from_millis(60),
                    max_consecutive_skips: 3,
                    start_quality: Quality::new(90).unwrap(),
                    ..base()
                },
                forward: narrow,
                outage: Some((Instant::from_millis(5_000), Instant::from_millis(5_300))),
                seed: 11,
                ..start()
            },
            digests[9],
        ),
    ]
}

/// The digests under the paper's rules ([`paper_rules`]), recorded before the sender's rules
/// were split into seams (issue 37).
const PAPER: [u64; 10] = [
    0x8f49_d9f3_4b31_f6e3,
    0x83b3_6937_e9a3_337c,
    0xb79d_5669_9b00_be26,
    0xa981_9903_2aa2_ee63,
    0xe1e9_13ff_d0b7_9847,
    0xfffb_7ee8_9e38_e975,
    0x4c59_505a_f9fa_f6b9,
    0x25ba_9546_f8ae_d286,
    0xedc1_422b_875b_8eaf,
    0x7a21_a7c8_8a4b_4b5e,
];

/// The digests under the default rules (slow-link, forecast budget), recorded as [`PAPER`].
const SLOW_LINK: [u64; 10] = [
    0x547e_e017_f69f_b5cd,
    0x207f_8ba6_224c_96f9,
    0xbce3_1220_d391_bb86,
    0x5364_337d_f5af_60fa,
    0xfe06_dedf_bec4_548a,
    0xa5d2_f839_58e2_3a9f,
    0xf2cc_91c0_4a28_70f1,
    0x9449_aa92_1bf0_ce6e,
    0xcf5b_8366_3ac9_2f02,
    0x4693_cdd2_bb50_59d7,
];

#[test]
fn every_scenario_produces_its_recorded_trace() {
    let mut wrong = Vec::new();
    let paper = scenarios(paper_rules, ReceiverConfig::default().first_round(), PAPER);
    // The default sender (slow-link rules, forecast budget) with the receiver that forecasts.
    let forecasting = ReceiverConfig {
        link_forecast: true,
        ..ReceiverConfig::default()
    };
    let slow_link = scenarios(SenderConfig::default, forecasting, SLOW_LINK);
    for ((name, scenario, expected), rules) in paper
        .into_iter()
        .zip(std::iter::repeat("paper"))
        .chain(slow_link.into_iter().zip(std::iter::repeat("slow-link")))
    {
        let name = format!("{rules}: {name}");
        let (digest, tx, rx) = run(scenario);
        println!(
            "{name}: {digest:#018x} (sent {} better {} worse {} forced {} only {} skipped {} \
             dropped {}; shown {} lost {})",
            tx.frames_sent(),
            tx.sent_better,
            tx.sent_worse,
            tx.sent_forced,
            tx.sent_only,
            tx.skipped,
            tx.dropped,
            rx.frames_displayed,
            rx.frames_lost
        );
        if digest != expected {
            wrong.push(format!("{name}: {digest:#018x}, recorded {expected:#018x}"));
        }
    }
    assert!(wrong.is_empty(), "traces changed:\n{}", wrong.join("\n"));
}
