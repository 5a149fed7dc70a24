//! Embedding Salsify's sans-IO crates in another program: a sender and a receiver of any
//! scheme, joined by two emulated links held in memory, driven by one loop that owns the
//! clock. Nothing here opens a socket, starts a thread or reads the machine's clock; a real
//! program would put its own sockets where the links are and its own clock where `now` is.
//!
//! ```text
//! cargo run --release -p salsify-embedding-example -- [SCHEME] [SECONDS]
//! ```
//!
//! prints, for `salsify-2c` (the default) over 10 s of a 2 Mb/s link:
//!
//! ```text
//! salsify-2c over a 2000 kb/s link, 20 ms each way, 10 s of 320x180 at 30 fps:
//!   pictures 300, frames sent N, shown N, mean delay N ms, bad datagrams 0
//! ```
//!
//! The loop is the one every driver of the project runs ("mutate, then drain `poll_output`
//! until `Timeout`"): feed each endpoint what arrived, then drain it, then jump to the
//! earliest deadline of anything. See docs/embedding.md.
//!
//! Outside the layers of the workspace (README, "Layout"): it sits on top, beside the
//! command, and uses only layers 0 to 3 (`salsify-time`, `salsify-codec`,
//! `salsify-endpoint`, `salsify-netem`, `salsify-schemes`), as another program would.

use std::collections::{BTreeMap, HashMap};

use salsify_codec::{Image, SyntheticSource};
use salsify_endpoint::{
    ReceiverEndpoint, ReceiverEvent, ReceiverOutput, SenderEndpoint, SenderEvent, SenderOutput,
};
use salsify_netem::{generators, Bitrate, Link, LinkConfig};
use salsify_schemes::{Executor, SchemeConfig, SchemeParams, SourceInfo};
use salsify_time::{Duration, Instant};

/// What one run did.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Report {
    /// Camera pictures handed to the sender.
    pub pictures: u64,
    /// Frames the sender committed to the wire.
    pub frames_sent: u64,
    /// Frames the receiver showed.
    pub frames_shown: u64,
    /// Mean time from capture to display of the frames shown, in ms.
    pub mean_delay_ms: f64,
    /// Datagrams either end refused (none are expected here).
    pub bad_datagrams: u64,
}

/// Width, height and frame rate of the built-in synthetic camera.
const SIZE: (u32, u32) = (320, 180);
const FPS: u32 = 30;
/// The link's rate each way and its one-way propagation delay.
const RATE_KBPS: u64 = 2000;
const ONE_WAY: Duration = Duration::from_millis(20);

fn link(now: Instant) -> Result<Link<Vec<u8>>, String> {
    let mut config = LinkConfig::default();
    config.trace = generators::constant(Bitrate::kbps(RATE_KBPS)).map_err(|e| e.to_string())?;
    config.propagation_delay = ONE_WAY;
    Link::new(config, now).map_err(|e| e.to_string())
}

/// Runs `scheme` for `seconds` of virtual time.
pub fn run(scheme: &str, seconds: u64) -> Result<Report, String> {
    let scheme =
        SchemeConfig::named(scheme, &SchemeParams::default()).map_err(|e| e.to_string())?;
    let source = SourceInfo {
        width: SIZE.0,
        height: SIZE.1,
        fps: f64::from(FPS),
    };
    // The endpoints are plain values; the library knows no sockets and no clock.
    let mut sender: Box<dyn SenderEndpoint> =
        scheme.build_sender(&source, 1).map_err(|e| e.to_string())?;
    let mut receiver: Box<dyn ReceiverEndpoint> =
        scheme.build_receiver(&source).map_err(|e| e.to_string())?;
    // Encoding is work the sender asks for; the Executor does it with libvpx, with the
    // encoders for the kinds of job the scheme declared.
    let jobs = scheme.encode_jobs();
    let mut executor =
        Executor::new(SIZE.0, SIZE.1, source.fps, -8, jobs).map_err(|e| e.to_string())?;
    let camera = SyntheticSource::new(SIZE.0, SIZE.1, FPS, 1).map_err(|e| e.to_string())?;

    let start = Instant::ZERO;
    let end = start + Duration::from_secs(seconds);
    let mut forward = link(start)?; // sender -> receiver
    let mut backward = link(start)?; // receiver -> sender

    let mut report = Report::default();
    let mut pictures: BTreeMap<u64, Image> = BTreeMap::new();
    let mut captured_of_frame: HashMap<u32, Instant> = HashMap::new();
    let mut delay_sum = Duration::ZERO;
    let mut next_picture = start;
    let mut sender_wake = start;
    let mut receiver_wake = Instant::FAR_FUTURE;
    let mut now = start;

    while now < end {
        // 1. Mutate: give each part what is due at `now`.
        if now >= next_picture {
            let id = report.pictures;
            pictures.insert(id, camera.frame(id));
            // Keep the pictures an encode request may still name.
            while pictures.len() > 8 {
                pictures.pop_first();
            }
            sender.handle_picture(now, id, now);
            report.pictures += 1;
            next_picture =
                start + Duration::from_micros(report.pictures * 1_000_000 / u64::from(FPS));
        }
        while let Some(d) = forward.poll_delivery(now) {
            if receiver.handle_datagram(now, &d.payload).is_err() {
                report.bad_datagrams += 1;
            }
        }
        while let Some(d) = backward.poll_delivery(now) {
            if sender.handle_datagram(now, &d.payload).is_err() {
                report.bad_datagrams += 1;
            }
        }
        if now >= sender_wake {
            sender.handle_timeout(now);
        }
        if now >= receiver_wake {
            receiver.handle_timeout(now);
        }

        // 2. Drain each endpoint until it names its next deadline.
        sender_wake = loop {
            match sender.poll_output(now) {
                SenderOutput::Encode(request) => {
                    // Encodes take no virtual time in this loop; the simulator charges a cost
                    // model here, the real-time runtime runs them on an encoder thread.
                    let result = match pictures.get(&request.picture) {
                        Some(image) => executor
                            .run(&request, image)
                            .map(|done| done.outcome)
                            .map_err(|e| salsify_endpoint::EncodeFailed(e.to_string())),
                        None => Err(salsify_endpoint::EncodeFailed("picture gone".into())),
                    };
                    sender
                        .handle_encoded(now, request.id, result)
                        .map_err(|e| e.to_string())?;
                }
                SenderOutput::Transmit(datagram) => {
                    let len = datagram.len();
                    // A full queue drops the datagram, as a network would.
                    let _ = forward.handle_packet(now, datagram, len);
                }
                SenderOutput::Event(SenderEvent::FrameSent(frame)) => {
                    report.frames_sent += 1;
                    captured_of_frame.insert(frame.frame, frame.captured);
                }
                SenderOutput::Event(_) => {}
                SenderOutput::Timeout(at) => break at,
            }
        };
        receiver_wake = loop {
            match receiver.poll_output(now) {
                ReceiverOutput::Transmit(datagram) => {
                    let len = datagram.len();
                    let _ = backward.handle_packet(now, datagram, len);
                }
                ReceiverOutput::Event(ReceiverEvent::Display(shown)) => {
                    report.frames_shown += 1;
                    if let Some(captured) = captured_of_frame.remove(&shown.frame) {
                        delay_sum += shown.at.saturating_duration_since(captured);
                    }
                }
                ReceiverOutput::Event(_) => {}
                ReceiverOutput::Timeout(at) => break at,
            }
        };

        // 3. Wait: jump to the earliest deadline of anything.
        now = [
            next_picture,
            sender_wake,
            receiver_wake,
            forward.poll_timeout().unwrap_or(Instant::FAR_FUTURE),
            backward.poll_timeout().unwrap_or(Instant::FAR_FUTURE),
        ]
        .into_iter()
        .min()
        .unwrap_or(end)
        .max(now);
    }
    if report.frames_shown > 0 {
        report.mean_delay_ms = delay_sum.as_secs_f64() * 1e3 / report.frames_shown as f64;
    }
    Ok(report)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scheme = args.first().map_or("salsify-2c", String::as_str);
    let seconds = match args.get(1).map(|s| s.parse::<u64>()) {
        None => 10,
        Some(Ok(s)) if s > 0 => s,
        Some(_) => {
            eprintln!("usage: salsify-embedding-example [SCHEME] [SECONDS > 0]");
            std::process::exit(2);
        }
    };
    match run(scheme, seconds) {
        Ok(r) => {
            println!(
                "{scheme} over a {RATE_KBPS} kb/s link, {} ms each way, {seconds} s of {}x{} at {FPS} fps:",
                ONE_WAY.as_millis(),
                SIZE.0,
                SIZE.1
            );
            println!(
                "  pictures {}, frames sent {}, shown {}, mean delay {:.0} ms, bad datagrams {}",
                r.pictures, r.frames_sent, r.frames_shown, r.mean_delay_ms, r.bad_datagrams
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example works for Salsify and for a baseline, and its numbers are those of a
    /// working call: most pictures shown, a delay near the link's, no datagram refused.
    #[test]
    fn salsify_and_conventional_run_over_the_in_memory_link() {
        for scheme in ["salsify-2c", "conventional"] {
            let r = run(scheme, 4).unwrap();
            assert_eq!(r.pictures, 120, "{scheme}: {r:?}");
            assert!(r.frames_shown >= 60, "{scheme}: {r:?}");
            assert!(r.frames_shown <= r.frames_sent, "{scheme}: {r:?}");
            assert!(
                r.mean_delay_ms >= 20.0 && r.mean_delay_ms < 400.0,
                "{scheme}: {r:?}"
            );
            assert_eq!(r.bad_datagrams, 0, "{scheme}: {r:?}");
        }
    }

    #[test]
    fn an_unknown_scheme_is_an_error_naming_it() {
        let e = run("salsa", 1).unwrap_err();
        assert!(e.contains("salsa"), "{e}");
    }
}
