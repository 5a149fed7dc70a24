//! Golden traces of the CBR senders and the receiver's transport half: every output
//! (encode jobs with their target, size and keyframe flag, datagrams, events, deadlines) over
//! a deterministic trace-driven link with loss, an outage, failed encodes and garbage
//! datagrams, with a fake CBR encoder and a fake decoder, digested into one number per
//! scenario.
//!
//! The digests were recorded on the code before the schemes moved onto the endpoint traits,
//! with the simulator's own CBR policy of that time (the 10 % target deadband, the ladder's
//! picture size, a re-opened encoder's keyframe) applied by the harness: the senders now ask
//! for exactly what the simulator's encoder did. The first byte and the media header's byte
//! 19 (the wire tag and the scheme, changed on purpose) are left out of the datagram hashes.
//! A changed digest means behaviour changed; if that is intended, re-record (run with
//! `--nocapture` to see the new values) and say so in the commit.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;

use salsify_codec::CbrFrame;
use salsify_endpoint::{
    EncodeFailed, EncodeJob, EncodeOutcome, SenderEndpoint, SenderEvent, SenderOutput,
};
use salsify_time::{Bitrate, Instant};

use crate::jitter::{JitterReceiver, Output};
use crate::{
    BaselineSender, ConventionalConfig, ReceiverConfig, VidaptiveConfig, VidaptiveSender,
    WebrtcSender,
};

const OPP_BYTES: u32 = 1500;
const PROP_US: u64 = 20_000;

/// Rate in kb/s at millisecond `ms` for a scenario.
fn rate_kbps(scenario: &str, ms: u64) -> u64 {
    let s = ms / 1000;
    match scenario {
        "switch" => match s {
            0..=3 => 1000,
            4..=6 => 250,
            7..=8 => 3000,
            9..=12 => 0,
            13..=15 => 120,
            _ => 2000,
        },
        "updown" => match s {
            0..=3 => 1500,
            4..=8 => 0,
            _ => 3000,
        },
        _ => 800,
    }
}

/// Opportunity times (µs) for the first `n` seconds, then extrapolated at 1 per ms.
struct Opps {
    times: Vec<u64>,
}

impl Opps {
    fn new(scenario: &str, secs: u64) -> Opps {
        let mut times = Vec::new();
        let mut credit = 0u64; // bits
        for ms in 0..secs * 1000 {
            credit += rate_kbps(scenario, ms);
            while credit >= u64::from(OPP_BYTES) * 8 {
                credit -= u64::from(OPP_BYTES) * 8;
                times.push(ms * 1000 + 500);
            }
        }
        Opps { times }
    }
    fn at(&self, n: u64) -> u64 {
        let len = self.times.len() as u64;
        if n < len {
            self.times[n as usize]
        } else {
            let last = self.times.last().copied().unwrap_or(0);
            last + (n - len + 1) * 1000
        }
    }
}

/// FIFO bottleneck served at the opportunities, 64-packet DropTail, loss and corruption
/// patterns, then propagation delay.
struct DataLink {
    opps: std::sync::Arc<Opps>,
    next: u64,
    used: u32,
    departures: VecDeque<u64>,
    deliveries: VecDeque<(u64, Vec<u8>)>,
    count: u64,
    loss_every: u64,
}

impl DataLink {
    fn new(opps: std::sync::Arc<Opps>, loss_every: u64) -> Self {
        DataLink {
            opps,
            next: 0,
            used: 0,
            departures: VecDeque::new(),
            deliveries: VecDeque::new(),
            count: 0,
            loss_every,
        }
    }
    fn send(&mut self, now: u64, mut d: Vec<u8>, log: &mut String) {
        self.count += 1;
        while self.departures.front().is_some_and(|&t| t <= now) {
            self.departures.pop_front();
        }
        if self.loss_every > 0 && self.count.is_multiple_of(self.loss_every) {
            let _ = writeln!(log, "  link lost #{}", self.count);
            return;
        }
        if self.departures.len() >= 64 {
            let _ = writeln!(log, "  link dropped #{}", self.count);
            return;
        }
        if self.count % 311 == 7 && d.len() > 40 && d[1] == 1 {
            d[30] ^= 0x5a;
        }
        if self.opps.at(self.next) <= now {
            // skip to the first opportunity after now
            while self.opps.at(self.next) <= now {
                self.next += 1;
            }
            self.used = 0;
        }
        let mut left = d.len() as u32;
        let mut departs = self.opps.at(self.next);
        while left > 0 {
            let take = (OPP_BYTES - self.used).min(left);
            left -= take;
            self.used += take;
            departs = self.opps.at(self.next);
            if self.used == OPP_BYTES {
                self.next += 1;
                self.used = 0;
            }
        }
        self.departures.push_back(departs);
        let at = departs + PROP_US;
        let at = self.deliveries.back().map_or(at, |b| b.0.max(at));
        self.deliveries.push_back((at, d));
    }
    fn next_delivery(&self) -> Option<u64> {
        self.deliveries.front().map(|d| d.0)
    }
    fn poll(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.deliveries.front().is_some_and(|d| d.0 <= now) {
            self.deliveries.pop_front().map(|d| d.1)
        } else {
            None
        }
    }
}

/// 20 ms, every 97th lost.
struct FeedbackLink {
    deliveries: VecDeque<(u64, Vec<u8>)>,
    count: u64,
}
impl FeedbackLink {
    fn new() -> Self {
        FeedbackLink {
            deliveries: VecDeque::new(),
            count: 0,
        }
    }
    fn send(&mut self, now: u64, d: Vec<u8>) {
        self.count += 1;
        if self.count.is_multiple_of(97) {
            return;
        }
        self.deliveries.push_back((now + PROP_US, d));
    }
    fn next_delivery(&self) -> Option<u64> {
        self.deliveries.front().map(|d| d.0)
    }
    fn poll(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.deliveries.front().is_some_and(|d| d.0 <= now) {
            self.deliveries.pop_front().map(|d| d.1)
        } else {
            None
        }
    }
}

fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// The datagram's hash with the first byte and (media) byte 19 zeroed.
fn norm_hash(d: &[u8]) -> u64 {
    let mut v = d.to_vec();
    if !v.is_empty() {
        v[0] = 0;
    }
    if v.len() >= 20 && v[1] == 1 {
        v[19] = 0;
    }
    fnv(&v)
}

const FPS_INTERVAL_US: u64 = 33_333;
const ENCODE_US: u64 = 5_000;
const SIZE: (u32, u32) = (160, 96);
fn inst(us: u64) -> Instant {
    Instant::from_micros(us)
}

/// The fake CBR encoder's frame for a picture: deterministic sizes around the target.
fn fake_cbr(kbps: u32, keyframe: bool, size: (u32, u32), pic: u64) -> Option<(Vec<u8>, bool, u8)> {
    if !keyframe && pic % 23 == 11 {
        return None; // the rate control drops it
    }
    let base = (u64::from(kbps) * 1000 / 8 / 30).max(50) * u64::from(size.0) / 160;
    let len = base * if keyframe { 4 } else { 1 } * (90 + (pic * 37) % 21) / 100;
    let data = (0..len)
        .map(|j| (pic as u8).wrapping_add(j as u8))
        .collect();
    Some((data, keyframe, (pic % 60) as u8 + 4))
}

fn run(
    scheme: &str,
    scenario: &str,
    loss: u64,
    fail_every: u64,
    garbage_every: u64,
    secs: u64,
) -> String {
    let mut log = String::new();
    let opps = Arc::new(Opps::new(scenario, secs + 5));
    let (w, h) = SIZE;
    let (mut sender, rcfg) = match scheme {
        "conventional" => (
            BaselineSender::Conventional(
                WebrtcSender::new(ConventionalConfig::default(), (w, h)).unwrap(),
            ),
            ReceiverConfig {
                feedback_interval: crate::WireId::Conventional.feedback_interval(),
                ..Default::default()
            },
        ),
        _ => (
            BaselineSender::Vidaptive(
                VidaptiveSender::new(VidaptiveConfig::default(), (w, h)).unwrap(),
            ),
            ReceiverConfig {
                feedback_interval: None,
                ..Default::default()
            },
        ),
    };
    let mut receiver = JitterReceiver::new(rcfg);
    // What the fake encoder was last told: target and size (as the driver's encoder).
    let mut applied: Option<(Bitrate, (u32, u32))> = None;
    let mut data = DataLink::new(opps.clone(), loss);
    let mut fb = FeedbackLink::new();
    let (mut sdl, mut rdl) = (0u64, 0u64);
    let mut encoding: Option<(u64, u64, Option<Option<CbrFrame>>)> = None;
    let mut next_capture = 0u64;
    let mut n = 0u64;
    let end = secs * 1_000_000;
    let mut requests = 0u64;
    loop {
        let now = [
            encoding.as_ref().map(|e| e.0),
            Some(next_capture),
            data.next_delivery(),
            fb.next_delivery(),
            Some(sdl),
            Some(rdl),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        if now >= end {
            break;
        }
        let t = inst(now);
        if encoding.as_ref().is_some_and(|e| e.0 <= now) {
            let (_, id, frame) = encoding.take().unwrap();
            let result = match frame {
                Some(frame) => Ok(EncodeOutcome::Cbr(frame)),
                None => Err(EncodeFailed("fake failure".into())),
            };
            sender.handle_encoded(t, id, result).unwrap();
        }
        if next_capture <= now {
            sender.handle_picture(t, n, t);
            if garbage_every > 0 && n.is_multiple_of(garbage_every) {
                let g = [0xB1u8, (n % 7) as u8, 1, 2, 3];
                let _ = sender.handle_datagram(t, &g).unwrap_err();
                let _ = receiver.handle_datagram(t, &g).unwrap_err();
                let _ = writeln!(log, "{now} garbage");
            }
            n += 1;
            next_capture += FPS_INTERVAL_US;
        }
        while let Some(d) = data.poll(now) {
            let _ = receiver.handle_datagram(t, &d);
        }
        while let Some(d) = fb.poll(now) {
            let _ = sender.handle_datagram(t, &d);
        }
        if sdl <= now {
            sender.handle_timeout(t);
        }
        if rdl <= now {
            receiver.handle_timeout(t);
        }
        loop {
            match sender.poll_output(t) {
                SenderOutput::Encode(req) => {
                    requests += 1;
                    let EncodeJob::Cbr(job) = req.job else {
                        panic!("{:?}", req.job)
                    };
                    let (target, keyframe) = (job.target, job.keyframe);
                    let size = (job.width, job.height);
                    let _ = writeln!(
                        log,
                        "{now} S encode {} pic {} cap {} key {keyframe} {}x{}",
                        req.id,
                        req.picture,
                        req.captured.as_micros(),
                        size.0,
                        size.1
                    );
                    if fail_every > 0 && requests.is_multiple_of(fail_every) {
                        let _ = writeln!(log, "  fails");
                        encoding = Some((now + ENCODE_US, req.id, None));
                        continue;
                    }
                    let kbps = u32::try_from(target.as_kbps()).unwrap_or(u32::MAX);
                    let reopen = applied.is_none_or(|a| a.1 != size);
                    if reopen || applied.is_none_or(|a| a.0 != target) {
                        applied = Some((target, size));
                        let _ = writeln!(log, "  apply {kbps}");
                    }
                    let a = kbps;
                    let f = fake_cbr(a, keyframe || reopen, size, req.picture);
                    let _ = writeln!(
                        log,
                        "  target {a} -> {:?}",
                        f.as_ref().map(|f| (f.0.len(), f.1, f.2))
                    );
                    let f = f.map(|(data, keyframe, quality)| CbrFrame {
                        data,
                        keyframe,
                        quality,
                    });
                    encoding = Some((now + ENCODE_US, req.id, Some(f)));
                }
                SenderOutput::Transmit(d) => {
                    let _ = writeln!(log, "{now} S tx {} {:x}", d.len(), norm_hash(&d));
                    data.send(now, d, &mut log);
                }
                SenderOutput::Event(SenderEvent::FrameSent(s)) => {
                    let _ = writeln!(
                        log,
                        "{now} S sent f{} p{} c{} at{} {}B q{} k{}",
                        s.frame,
                        s.picture,
                        s.captured.as_micros(),
                        s.at.as_micros(),
                        s.bytes,
                        s.quality.index(),
                        s.keyframe
                    );
                }
                SenderOutput::Event(SenderEvent::PictureDropped {
                    picture,
                    at,
                    reason,
                }) => {
                    let _ = writeln!(
                        log,
                        "{now} S dropped p{picture} at{} {reason:?}",
                        at.as_micros()
                    );
                }
                SenderOutput::Event(SenderEvent::Target {
                    at,
                    encoder,
                    pacing,
                }) => {
                    let _ = writeln!(
                        log,
                        "{now} S target at{} {} {}",
                        at.as_micros(),
                        encoder.as_bps(),
                        pacing.as_bps()
                    );
                }
                SenderOutput::Event(e) => panic!("{e:?}"),
                SenderOutput::Timeout(x) => {
                    let _ = writeln!(log, "{now} S timeout {}", x.as_micros());
                    sdl = x.as_micros();
                    break;
                }
            }
        }
        loop {
            match receiver.poll_output() {
                Output::Transmit(d) => {
                    let _ = writeln!(log, "{now} R tx {} {:x}", d.len(), norm_hash(&d));
                    fb.send(now, d);
                }
                Output::Frame {
                    frame,
                    at,
                    data: fdata,
                    keyframe,
                } => {
                    if frame % 17 == 5 && !keyframe {
                        let _ = writeln!(log, "{now} R undecodable f{frame}");
                        receiver.handle_decode_failed(t);
                    } else {
                        let _ = writeln!(
                            log,
                            "{now} R frame f{frame} at{} {}B k{keyframe} {:x}",
                            at.as_micros(),
                            fdata.len(),
                            fnv(&fdata)
                        );
                    }
                }
                Output::FramesLost { through, count, at } => {
                    let _ = writeln!(
                        log,
                        "{now} R lost through {through} count {count} at{}",
                        at.as_micros()
                    );
                }
                Output::Timeout(x) => {
                    let _ = writeln!(log, "{now} R timeout {}", x.as_micros());
                    rdl = x.as_micros();
                    break;
                }
            }
        }
    }
    let s = match &sender {
        BaselineSender::Conventional(c) => c.counters(),
        BaselineSender::Vidaptive(v) => v.counters(),
        BaselineSender::Oracle(o) => o.counters(),
    };
    let r = receiver.stats();
    let _ = writeln!(
        log,
        "END sender {} {} {} {} {} {} {} {} {} {} {} {} | receiver {} {} {} {} {} {} {} {}",
        s.pictures,
        s.frames_sent,
        s.keyframes,
        s.dropped,
        s.media_packets,
        s.retransmissions,
        s.padding_packets,
        s.padding_bytes,
        s.plis,
        s.nacked,
        s.feedback,
        s.bad_datagrams,
        r.datagrams,
        r.bad_datagrams,
        r.frames,
        r.frames_lost,
        r.nacks,
        r.plis,
        r.feedback,
        r.recovered
    );
    log
}

/// (scheme, link, lose every n-th video datagram, fail every n-th encode, garbage every n-th
/// picture, seconds) and the digest recorded before the refactor.
///
/// The `conventional` scheme's digests were re-recorded when it moved onto libwebrtc's
/// controller (`goog_cc`, issue 14), and again when libwebrtc's encoder bitrate adjuster
/// became the scheme's default (issue 14, second round: the encoder is asked for 1/1.2 of
/// its target for the first 30 frames of each coded size). `updown`'s was re-recorded when an
/// encode's own target change was logged too (more `target` lines; with them left out the
/// log is byte for byte the same).
const SCENARIOS: [(&str, &str, u64, u64, u64, u64, u64); 6] = [
    ("conventional", "switch", 53, 0, 0, 22, 0x4d2d29bccce6fadd),
    ("conventional", "updown", 0, 29, 41, 30, 0xb43bdbcfa0f312d7),
    ("conventional", "flat", 37, 0, 13, 15, 0x0f5f5b8e4d93d22d),
    ("vidaptive", "switch", 0, 0, 0, 22, 0x2d7b44d5109096e9),
    ("vidaptive", "updown", 61, 31, 43, 40, 0x592580fde7f632e7),
    ("vidaptive", "flat", 41, 0, 17, 15, 0xfc922a768183484b),
];

#[test]
fn golden_traces_are_unchanged() {
    let mut changed = vec![];
    for (scheme, scenario, loss, fail, garbage, secs, digest) in SCENARIOS {
        let log = run(scheme, scenario, loss, fail, garbage, secs);
        let got = fnv(log.as_bytes());
        println!(
            "{scheme} {scenario} {got:#018x} ({} lines)",
            log.lines().count()
        );
        if let Ok(dir) = std::env::var("GOLDEN_OUT") {
            let _ = std::fs::write(format!("{dir}/fake-{scheme}-{scenario}.log"), &log);
        }
        if got != digest {
            changed.push(format!(
                "{scheme} {scenario}: {got:#018x}, recorded {digest:#018x}"
            ));
        }
    }
    assert!(changed.is_empty(), "behaviour changed: {changed:#?}");
}
