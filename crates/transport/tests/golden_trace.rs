//! Golden traces: the exact sequence of every output (encode requests, datagrams, events,
//! deadlines) and every input's result of a sender and receiver pair, over seeded fake links
//! in every mode and through the awkward paths (loss, outage, a link too slow for the delay
//! target, failed and malformed encodes, garbage datagrams), digested into one number per
//! scenario.
//!
//! Why: refactors (the pure decision functions, the endpoint adapter, serde on the configs)
//! must not change behaviour at all — simulator runs are compared byte for byte before and
//! after. The digests were recorded on the code before those refactors; a changed digest
//! means behaviour changed. If a change of behaviour is intended, re-record them (run with
//! `--nocapture` to see the new values) and say so in the commit.

mod support;

use salsify_codec::{Quality, StateHash};
use salsify_time::{Duration, Instant};
use salsify_transport::fake::{FakeDecoder, FakeFrame, FakeState};
use salsify_transport::*;
use support::{EncodeService, FakeService, Link, LinkConfig};

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

/// The sender's defaults under the rules and pacing these digests were recorded with (the first
/// round's, [`SenderRules::Project`], 0.5-2 ms gaps, no encode-time floor); the slow-link
/// rules, now the default, have scenarios of their own.
fn first_round_rules() -> SenderConfig {
    SenderConfig {
        rules: SenderRules::Project,
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
            config: first_round_rules(),
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

/// A request as its `Debug` text read before requests named a picture size: the size is
/// added only when it is not the source's, so the digests recorded before it still hold.
fn request_text(r: &EncodeRequest<FakeState>) -> String {
    let text = format!(
        "EncodeRequest {{ id: {:?}, picture: {:?}, captured: {:?}, source: {:?}, job: {:?} }}",
        r.id, r.picture, r.captured, r.source, r.job
    );
    match r.halvings {
        0 => text,
        h => format!("{text} halvings {h}"),
    }
}

fn every(n: u64, i: u64) -> bool {
    n != 0 && i % n == n - 1
}

fn run(s: Scenario) -> (u64, SenderStats, ReceiverStats) {
    let mut d = Digest::new();
    let mut sender: Sender<FakeFrame> =
        Sender::new(s.config.clone(), FakeState(StateHash::INITIAL)).unwrap();
    // The first round's receiver too: the plain per-packet estimate.
    let first_round_receiver = ReceiverConfig::default().first_round();
    let mut receiver = Receiver::new(first_round_receiver, FakeDecoder).unwrap();
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
                SenderOutput::Event(e) => d.debug(3, &e),
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
                ReceiverOutput::Event(e) => d.debug(6, &e),
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
    // Digested as the stats read when the digests were recorded: before the encode-time
    // floor (off in these scenarios) and the resolution step's counters (0 here) were fields.
    assert_eq!(tx.quality_floor, None);
    let stats = format!("{tx:?}").replace(", quality_floor: None", "");
    let step = ", halvings: 0, resolution_changes: 0 }";
    assert!(stats.ends_with(step), "{stats}");
    d.bytes(
        12,
        format!("{} }}", &stats[..stats.len() - step.len()]).as_bytes(),
    );
    d.debug(12, &rx);
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

fn scenarios() -> Vec<(&'static str, Scenario, u64)> {
    let slow = LinkConfig {
        bytes_per_sec: Some(8_000.0),
        ..LinkConfig::default()
    };
    let narrow = LinkConfig {
        bytes_per_sec: Some(62_500.0),
        ..LinkConfig::default()
    };
    vec![
        ("salsify, clean", Scenario::default(), 0x10bd_12d6_a65e_aef7),
        (
            "salsify, lossy both ways",
            Scenario {
                forward: lossy(),
                backward: lossy(),
                seed: 7,
                ..Scenario::default()
            },
            0x5c4e_559f_d9be_b4f3,
        ),
        (
            "salsify, one-second outage on a narrow link",
            Scenario {
                forward: narrow,
                backward: narrow,
                outage: Some((Instant::from_millis(3_000), Instant::from_millis(4_000))),
                ..Scenario::default()
            },
            0x3ab9_aef5_3d36_2490,
        ),
        (
            "salsify, link too slow for the delay target (forced sends)",
            Scenario {
                forward: slow,
                ..Scenario::default()
            },
            0x2104_ef74_f222_661d,
        ),
        (
            "salsify, failed, short and garbage inputs",
            Scenario {
                forward: lossy(),
                fail_every: 17,
                short_every: 23,
                garbage_every: 11,
                seed: 3,
                ..Scenario::default()
            },
            0xc629_e345_4b93_a679,
        ),
        (
            "no grace period, lossy",
            Scenario {
                config: SenderConfig {
                    grace_period: false,
                    ..first_round_rules()
                },
                forward: lossy(),
                seed: 5,
                ..Scenario::default()
            },
            0x84b6_551c_9817_0b07,
        ),
        (
            "conventional codec, narrow and slow",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalCodec,
                    ..first_round_rules()
                },
                forward: narrow,
                outage: Some((Instant::from_millis(2_000), Instant::from_millis(2_500))),
                ..Scenario::default()
            },
            0x9693_7349_6bb6_d0c1,
        ),
        (
            "conventional codec, too slow",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalCodec,
                    ..first_round_rules()
                },
                forward: slow,
                ..Scenario::default()
            },
            0x53c3_e6c2_d875_c0db,
        ),
        (
            "conventional transport, lossy",
            Scenario {
                config: SenderConfig {
                    mode: SenderMode::ConventionalTransport {
                        update_interval: Duration::from_millis(700),
                    },
                    ..first_round_rules()
                },
                forward: lossy(),
                seed: 9,
                ..Scenario::default()
            },
            0x5659_7c4d_005b_223c,
        ),
        (
            "tuned: small payload, short target, 3 skips, coarse start",
            Scenario {
                config: SenderConfig {
                    fragment_payload: 600,
                    delay_target: Duration::from_millis(60),
                    max_consecutive_skips: 3,
                    start_quality: Quality::new(90).unwrap(),
                    ..first_round_rules()
                },
                forward: narrow,
                outage: Some((Instant::from_millis(5_000), Instant::from_millis(5_300))),
                seed: 11,
                ..Scenario::default()
            },
            0x7edb_b00e_59ca_2527,
        ),
    ]
}

#[test]
fn every_scenario_produces_its_recorded_trace() {
    let mut wrong = Vec::new();
    for (name, scenario, expected) in scenarios() {
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
