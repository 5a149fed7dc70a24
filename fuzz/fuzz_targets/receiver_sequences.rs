//! Fuzzes every live receiver with sequences of datagrams, not single ones: a valid stream
//! the harness builds, interleaved with the same datagrams mutated (any sequence, frame and
//! fragment numbers) and with raw bytes, over a clock that jumps. Whatever arrives, no
//! receiver panics, one datagram or timeout yields a bounded number of outputs, and what a
//! receiver holds stays within its configuration.
//!
//! Input: byte 0 picks the receiver (conventional, vidaptive, Sprout, Salsify); then
//! records of `op, len, len bytes`: op 0 raw bytes as a datagram; op 1 the stream's next
//! valid datagram; op 2 the next valid datagram with its numbers taken from the record's
//! bytes; op 3 time passes (the record's first two bytes, in ms).
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_baselines::sprout::wire::{emit_data, DataHeader, Payload};
use salsify_baselines::sprout::{SproutConfig, SproutReceiver};
use salsify_baselines::wire::{MediaHeader, Packet};
use salsify_baselines::{BaselineReceiver, ReceiverConfig, WireId};
use salsify_codec::StateHash;
use salsify_endpoint::{ReceiverEndpoint, ReceiverOutput};
use salsify_sprout_model::ForecasterKind;
use salsify_time::{Duration, Instant};
use salsify_transport::{DataFragment, SalsifyReceiver};

/// Most outputs one input may yield: every feedback datagram a full sequence window needs,
/// NACKs, a PLI and every frame the reassembly limit holds, with room to spare.
const MAX_OUTPUTS: usize = 8192 / 180 + 1000 / 300 + 2 * 128 + 16;

/// The numbers a stream datagram carries.
#[derive(Clone, Copy, Default)]
struct Numbers {
    seq: u32,
    media: u32,
    frame: u32,
    fragment: u16,
    count: u16,
}

fn u32_of(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    for (i, x) in a.iter_mut().enumerate() {
        *x = b.get(at + i).copied().unwrap_or(0);
    }
    u32::from_be_bytes(a)
}

/// A datagram of the picked scheme carrying `n`.
fn datagram(kind: u8, n: Numbers, key: bool) -> Vec<u8> {
    let count = n.count.clamp(1, 4096);
    let fragment = n.fragment % count;
    match kind {
        0 | 1 => Packet::Media {
            header: MediaHeader {
                transport_seq: n.seq,
                media_seq: n.media,
                frame: n.frame,
                fragment,
                count,
                keyframe: key,
                retransmission: false,
                scheme: if kind == 0 {
                    WireId::Conventional
                } else {
                    WireId::Vidaptive
                },
            },
            payload: vec![n.frame as u8; 40],
        }
        .emit()
        .unwrap_or_default(),
        2 => emit_data(
            &DataHeader {
                session: 7,
                payload: Payload::Fragment,
                forecaster: ForecasterKind::Sprout,
                seq: u64::from(n.seq) * 1000,
                throwaway: n.media % 5000,
                time_to_next_ms: 0,
                sent_at_us: u64::from(n.seq) * 1000,
                frame: n.frame,
                fragment,
                fragments: count,
            },
            &[n.frame as u8; 40],
        ),
        _ => {
            let mut out = Vec::new();
            let _ = DataFragment {
                connection_id: 7,
                frame: n.frame,
                index: fragment,
                count,
                source: StateHash::INITIAL,
                target: StateHash(u64::from(n.media)),
                grace: Duration::ZERO,
                sent_at: Instant::from_micros(u64::from(n.seq)),
                payload: &[n.frame as u8; 40],
            }
            .emit(&mut out);
            out
        }
    }
}

/// The receiver under test, by its own type so its limits can be checked.
enum Rx {
    Baseline(BaselineReceiver, ReceiverConfig),
    Sprout(SproutReceiver),
    Salsify(SalsifyReceiver),
}

impl Rx {
    fn new(kind: u8) -> Option<Rx> {
        let baseline = |feedback_interval| {
            let config = ReceiverConfig {
                feedback_interval,
                ..ReceiverConfig::default()
            };
            Some(Rx::Baseline(
                BaselineReceiver::new(config, (64, 48)).ok()?,
                config,
            ))
        };
        match kind {
            0 => baseline(Some(Duration::from_millis(50))),
            1 => baseline(None),
            2 => Some(Rx::Sprout(
                SproutReceiver::new(SproutConfig::default()).ok()?,
            )),
            _ => Some(Rx::Salsify(SalsifyReceiver::from_config(Default::default()).ok()?)),
        }
    }

    fn endpoint(&mut self) -> &mut dyn ReceiverEndpoint {
        match self {
            Rx::Baseline(r, _) => r,
            Rx::Sprout(r) => r,
            Rx::Salsify(r) => r,
        }
    }

    /// What the receiver holds stays within its configuration.
    fn check_bounds(&self) {
        match self {
            Rx::Baseline(r, c) => {
                let f = r.footprint();
                assert!(f.bytes <= c.max_buffered_bytes, "{f:?}");
                assert!(f.fragment_slots <= c.max_pending_frames * 4096, "{f:?}");
                let most = 2 * c.sequence_window as usize + 1 + 1000 + c.max_pending_frames;
                assert!(f.entries <= most, "{f:?}");
            }
            Rx::Sprout(r) => assert!(r.stats().states_held <= 32),
            Rx::Salsify(r) => {
                let s = r.stats();
                assert!(s.pending_frames <= 16 && s.states_held <= 64, "{s:?}");
            }
        }
    }
}

/// Drains `r`; panics if it yields more than [`MAX_OUTPUTS`].
fn drain(r: &mut dyn ReceiverEndpoint, now: Instant) {
    for _ in 0..=MAX_OUTPUTS {
        if let ReceiverOutput::Timeout(_) = r.poll_output(now) {
            return;
        }
    }
    panic!("more than {MAX_OUTPUTS} outputs for one input");
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&pick, mut rest)) = bytes.split_first() else {
        return;
    };
    let kind = pick % 4;
    let Some(mut rx) = Rx::new(kind) else {
        return;
    };
    let mut now = Instant::from_millis(1);
    let mut next = Numbers {
        count: 1,
        ..Numbers::default()
    };
    while let [op, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (body, after) = tail.split_at(len);
        rest = after;
        let d = match op % 4 {
            0 => body.to_vec(),
            1 | 2 => {
                let n = if op % 4 == 1 {
                    next
                } else {
                    Numbers {
                        seq: u32_of(body, 0),
                        media: u32_of(body, 4),
                        frame: u32_of(body, 8),
                        fragment: u32_of(body, 12) as u16,
                        count: (u32_of(body, 12) >> 16) as u16,
                    }
                };
                let key = n.frame % 8 == 0 || body.first().is_some_and(|b| b & 1 == 1);
                next = Numbers {
                    seq: next.seq.wrapping_add(1),
                    media: next.media.wrapping_add(1),
                    frame: next.frame.wrapping_add(1),
                    ..next
                };
                datagram(kind, n, key)
            }
            _ => {
                now = now + Duration::from_millis(u64::from(u32_of(body, 0) >> 16));
                rx.endpoint().handle_timeout(now);
                drain(rx.endpoint(), now);
                continue;
            }
        };
        now = now + Duration::from_millis(1);
        let _ = rx.endpoint().handle_datagram(now, &d);
        drain(rx.endpoint(), now);
        rx.check_bounds();
    }
});
