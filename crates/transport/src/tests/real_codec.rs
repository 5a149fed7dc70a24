//! The bar: Salsify over a lossy, reordering fake network with the real VP8 codec.
//!
//! 3000 pictures (100 s at 30 fps) of 64x48 synthetic video, 10% loss and 5% reordering on
//! both directions, 40 ms RTT. Every shown picture must be bit-exact with the sender's
//! reconstruction of that frame (so no frame is ever shown from a wrong state), nothing may
//! panic, the state stores stay bounded, and once the loss stops a frame sent after that is
//! shown within 2 RTT + one frame interval. Run with `--nocapture` for the figures.

use super::support::{EncodeRequest, EncodeService, LinkConfig, SentFrame, Session};
use crate::*;
use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::{EncodedFrame as Vp8Frame, Encoder, Image, State};
use salsify_endpoint::EncodeJob;
use salsify_time::Duration;

const RTT: Duration = Duration::from_millis(40);
const FRAME: Duration = Duration::from_micros(33_333);

/// Encodes synthetic pictures with the real codec.
struct Vp8Service {
    encoder: Encoder,
    source: SyntheticSource,
    encodes: u64,
}

impl EncodeService for Vp8Service {
    type Frame = Vp8Frame;
    fn encode(&mut self, r: &EncodeRequest<State>) -> Vec<Vp8Frame> {
        let image = self.source.frame(r.picture);
        let (source, qualities) = match &r.job {
            EncodeJob::Qualities {
                source, qualities, ..
            } => (source, qualities.clone()),
            // Not used here; a runtime would predict the quality for the size.
            EncodeJob::SizeTarget { source, hint, .. } => (source, vec![*hint]),
            other => panic!("Salsify never asks for {other:?}"),
        };
        qualities
            .into_iter()
            .map(|q| {
                self.encodes += 1;
                self.encoder.encode(source, &image, q).expect("encode")
            })
            .collect()
    }
}

type Vp8Session = Session<Vp8Service, VideoDecoder>;

/// 64x48 synthetic video at 30 fps through links `lossy` both ways, 2 ms per encode.
fn vp8_session(lossy: LinkConfig) -> Vp8Session {
    let (width, height) = (64, 48);
    let sender = Sender::new(SenderConfig::default(), State::initial()).unwrap();
    let receiver = Receiver::new(ReceiverConfig::default(), VideoDecoder::new().unwrap()).unwrap();
    let service = Vp8Service {
        encoder: Encoder::new(width, height).unwrap(),
        source: SyntheticSource::new(width, height, 30, 7).unwrap(),
        encodes: 0,
    };
    // Bit-exact: the shown picture equals the sender's reconstruction of that frame.
    let verify = Box::new(|_: &SentFrame, target: &State, shown: &Image| {
        target.picture().is_some_and(|p| p.visible_eq(shown))
    });
    let mut s = Session::new(sender, receiver, service, lossy, lossy, 11, verify);
    s.frame_interval = FRAME;
    s.encode_time = Duration::from_millis(2);
    s
}

fn report(s: &Vp8Session, recovery: Duration) {
    let (tx, rx) = (s.sender.stats(), s.receiver.stats());
    let (mean_tx_states, mean_rx_states) = s.mean_states();
    println!(
        "real codec 64x48, 10% loss 5% reorder: pictures {} encodes {} sent {} (better {} worse {} \
         forced {}) skipped {} shown {} lost {} recoveries {} wrong {} | states sender max {} mean \
         {:.1}, receiver max {} mean {:.1} | link fwd lost {} reordered {} | recovery {:?} (bar {:?})",
        tx.pictures,
        s.service.encodes,
        tx.frames_sent(),
        tx.sent_better,
        tx.sent_worse,
        tx.sent_forced,
        tx.skipped,
        rx.frames_displayed,
        rx.frames_lost,
        tx.recoveries,
        s.wrong.len(),
        tx.max_states_held,
        mean_tx_states,
        rx.max_states_held,
        mean_rx_states,
        s.forward.stats.lost,
        s.forward.stats.reordered,
        recovery,
        2 * RTT + FRAME,
    );
}

#[test]
fn lossy_reordering_network_with_real_codec_never_shows_a_wrong_frame() {
    let lossy = LinkConfig {
        latency: RTT / 2,
        bytes_per_sec: Some(40_000.0),
        loss: 0.10,
        reorder: 0.05,
        reorder_delay: Duration::from_millis(5),
        duplicate: 0.0,
    };
    let mut s = vp8_session(lossy);
    s.run_until(salsify_time::Instant::ZERO + FRAME * 3000);
    let clean = LinkConfig {
        loss: 0.0,
        reorder: 0.0,
        ..lossy
    };
    s.forward.config = clean;
    s.backward.config = clean;
    let clean_from = s.now;
    s.run_until(clean_from + Duration::from_secs(2));

    let (tx, rx) = (s.sender.stats(), s.receiver.stats());
    let first = s
        .first_shown_sent_after(clean_from)
        .expect("shown after loss stops");
    let recovery = first.at - clean_from;
    report(&s, recovery);
    assert!(tx.pictures >= 3000);
    assert!(
        s.wrong.is_empty(),
        "shown from a wrong state: {:?}",
        s.wrong
    );
    assert!(s.shown.windows(2).all(|w| w[0].frame < w[1].frame));
    assert_eq!(
        rx.decode_failures, 0,
        "only frames from held states are decoded"
    );
    assert!(rx.frames_displayed as f64 > 0.6 * tx.frames_sent() as f64);
    assert!(tx.recoveries > 10, "loss was seen and recovered from");
    // Bounded by the caps whatever happens, and small on average (the paper: ~6 and ~3).
    let (mean_tx_states, mean_rx_states) = s.mean_states();
    assert!(tx.max_states_held <= SenderConfig::default().max_states);
    assert!(rx.max_states_held <= ReceiverConfig::default().max_states);
    // The receiver also keeps up to `states_behind` older states (for an ACK path that lags).
    let behind = ReceiverConfig::default().states_behind as f64;
    assert!(mean_tx_states < 12.0 && mean_rx_states < 8.0 + behind);
    assert!(recovery <= 2 * RTT + FRAME, "recovery {recovery:?}");
}
