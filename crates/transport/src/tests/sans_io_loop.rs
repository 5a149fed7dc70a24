//! The crate doc's loop, "mutate, then drain `poll_output` until `Timeout`", written out on the
//! fake codec over a zero-delay, lossless "network" (it was the crate's doc example until the
//! fake codec became test-only).

use crate::fake::{FakeDecoder, FakeEncoder, FakeFrame, FakeState};
use crate::*;
use salsify_codec::StateHash;
use salsify_endpoint::{EncodeJob, ReceiverEvent, ReceiverOutput, SenderOutput};
use salsify_time::Instant;

#[test]
fn a_keyframe_is_paced_out_and_shown() {
    let mut sender: Sender<FakeFrame> =
        Sender::new(SenderConfig::default(), FakeState(StateHash::INITIAL)).unwrap();
    let mut receiver = Receiver::new(ReceiverConfig::default(), FakeDecoder).unwrap();
    let encoder = FakeEncoder::default();
    let mut now = Instant::ZERO;
    sender.handle_frame(now, 0, now); // picture 0, captured now
    let mut shown = 0;
    while shown == 0 {
        let next = loop {
            match sender.poll_output(now) {
                SenderOutput::Encode(req) => {
                    let EncodeJob::Qualities {
                        source, qualities, ..
                    } = &req.job
                    else {
                        unreachable!()
                    };
                    let frames = qualities
                        .iter()
                        .map(|&q| encoder.encode(source, req.picture, q));
                    sender
                        .handle_encoded(now, req.id, frames.collect())
                        .unwrap();
                }
                // A zero-delay, lossless "network":
                SenderOutput::Transmit(datagram) => {
                    receiver.handle_datagram(now, &datagram).unwrap()
                }
                SenderOutput::Event(_) => {}
                SenderOutput::Timeout(t) => break t,
            }
        };
        loop {
            match receiver.poll_output() {
                ReceiverOutput::Event(ReceiverEvent::Display(_)) => shown += 1,
                ReceiverOutput::Transmit(ack) => sender.handle_datagram(now, &ack).unwrap(),
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(_) => break,
            }
        }
        now = next; // a real runtime sleeps until then, or until a datagram arrives
    }
    assert!(
        now > Instant::ZERO,
        "the keyframe's fragments were paced out"
    );
}
