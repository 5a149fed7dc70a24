//! Any baseline sender by scheme: [`BaselineSender`] builds the one a scheme name calls for
//! and forwards the endpoint calls to it. Each sender implements [`SenderEndpoint`] itself;
//! this only picks one.

use salsify_endpoint::{
    DatagramError, Diagnostic, EncodeFailed, EncodeOutcome, InputError, SenderEndpoint,
    SenderOutput, SenderStats,
};
use salsify_time::Instant;

use crate::error::ConfigError;
use crate::wire_id::WireId;
use crate::{
    ConventionalConfig, LinkForecast, OracleConfig, OracleSender, VidaptiveConfig, VidaptiveSender,
    WebrtcSender,
};

/// One of the baseline senders.
#[derive(Debug)]
pub enum BaselineSender {
    /// libwebrtc's GoogCC and video sender.
    Conventional(WebrtcSender),
    /// Vidaptive-style Copa.
    Vidaptive(VidaptiveSender),
    /// The oracle (simulator only).
    Oracle(OracleSender),
}

impl BaselineSender {
    /// The conventional sender for a `source` = (width, height) camera
    /// ([`WebrtcSender::new`]).
    pub fn conventional(
        config: ConventionalConfig,
        source: (u32, u32),
    ) -> Result<Self, ConfigError> {
        WebrtcSender::new(config, source).map(BaselineSender::Conventional)
    }

    /// The Vidaptive-style sender for a `source` = (width, height) camera
    /// ([`VidaptiveSender::new`]).
    pub fn vidaptive(config: VidaptiveConfig, source: (u32, u32)) -> Result<Self, ConfigError> {
        VidaptiveSender::new(config, source).map(BaselineSender::Vidaptive)
    }

    /// The oracle, reading the link's future from `forecast` ([`OracleSender::new`]).
    pub fn oracle(config: OracleConfig, forecast: LinkForecast) -> Result<Self, ConfigError> {
        OracleSender::new(config, forecast).map(BaselineSender::Oracle)
    }

    /// Which scheme it runs.
    pub fn kind(&self) -> WireId {
        match self {
            BaselineSender::Conventional(_) => WireId::Conventional,
            BaselineSender::Vidaptive(_) => WireId::Vidaptive,
            BaselineSender::Oracle(_) => WireId::Oracle,
        }
    }

    fn endpoint(&self) -> &dyn SenderEndpoint {
        match self {
            BaselineSender::Conventional(s) => s,
            BaselineSender::Vidaptive(s) => s,
            BaselineSender::Oracle(s) => s,
        }
    }

    fn endpoint_mut(&mut self) -> &mut dyn SenderEndpoint {
        match self {
            BaselineSender::Conventional(s) => s,
            BaselineSender::Vidaptive(s) => s,
            BaselineSender::Oracle(s) => s,
        }
    }
}

impl SenderEndpoint for BaselineSender {
    fn scheme(&self) -> &'static str {
        self.endpoint().scheme()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        self.endpoint_mut().handle_picture(now, picture, captured)
    }

    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        self.endpoint_mut().handle_encoded(now, id, result)
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        self.endpoint_mut().handle_datagram(now, datagram)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint_mut().handle_timeout(now)
    }

    fn handle_audio_sent(&mut self, now: Instant, bytes: usize) {
        self.endpoint_mut().handle_audio_sent(now, bytes)
    }

    fn set_max_datagram(&mut self, now: Instant, bytes: usize) {
        self.endpoint_mut().set_max_datagram(now, bytes)
    }

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        self.endpoint_mut().poll_output(now)
    }

    fn stats(&self) -> SenderStats {
        self.endpoint().stats()
    }

    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.endpoint().diagnostics()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use salsify_codec::CbrFrame;
    use salsify_endpoint::EncodeJob;
    use salsify_time::{Bitrate, Duration};

    use super::*;
    use crate::history::PacketResult;
    use crate::jitter::{JitterReceiver, Output};
    use crate::wire::{Packet, MEDIA_HEADER_LEN};
    use crate::{RateController, RateSender, ReceiverConfig, VidaptiveConfig};

    /// A rate controller that never moves, for [`RateSender`].
    #[derive(Debug)]
    struct Fixed;

    impl RateController for Fixed {
        fn scheme(&self) -> &'static str {
            "fixed"
        }
        fn wire_number(&self) -> u8 {
            7
        }
        fn start_rate(&self) -> Bitrate {
            Bitrate::kbps(600)
        }
        fn on_feedback(&mut self, _: Instant, _: &[PacketResult]) {}
        fn target(&mut self, _: Instant) -> Bitrate {
            Bitrate::kbps(600)
        }
    }

    /// What one sender did in [`drive`].
    #[derive(Default)]
    struct Seen {
        /// (datagram size, the path's limit when it left, media?) of every datagram.
        datagrams: Vec<(usize, Option<usize>, bool)>,
        /// (time in ms, keyframe) of every encode job.
        jobs: Vec<(u64, bool)>,
        /// (time in ms, the path's limit then, frame intact) of every frame the receiver
        /// reassembled.
        frames: Vec<(u64, Option<usize>, bool)>,
    }

    /// Three seconds of 30 pictures a second, each coded at 8000 bytes (16000 for a
    /// keyframe) 5 ms after it is asked for, over a path of 10 ms each way with the shared
    /// receiver's feedback; at each (ms, bytes) of `limits` the path's datagram size becomes
    /// `bytes`.
    fn drive(s: &mut dyn SenderEndpoint, limits: &[(u64, usize)]) -> Seen {
        let mut r = JitterReceiver::new(ReceiverConfig {
            feedback_interval: Some(Duration::from_millis(20)),
            ..ReceiverConfig::default()
        });
        let (mut forward, mut back) = (VecDeque::new(), VecDeque::new());
        let mut seen = Seen::default();
        let mut limit = None;
        let mut limits = limits.iter().copied().peekable();
        let mut encode: Option<(u64, u64, bool)> = None;
        let (mut picture, mut receiver_wake) = (0u64, u64::MAX);
        let ms = |t: u64| Instant::from_micros(t);
        for now in (0..3_000_000u64).step_by(250) {
            let t = ms(now);
            if let Some((_, bytes)) = limits.next_if(|&(at, _)| at * 1000 <= now) {
                s.set_max_datagram(t, bytes);
                limit = Some(bytes);
            }
            if now % 33_250 == 0 {
                s.handle_picture(t, picture, t);
                picture += 1;
            }
            if let Some((_, id, keyframe)) = encode.filter(|e| e.0 <= now) {
                encode = None;
                let data = vec![0x55; if keyframe { 16_000 } else { 8_000 }];
                let frame = CbrFrame {
                    data,
                    keyframe,
                    quality: 40,
                };
                s.handle_encoded(t, id, Ok(EncodeOutcome::Cbr(Some(frame))))
                    .unwrap();
            }
            while forward.front().is_some_and(|(at, _)| *at <= now) {
                let (_, d): (u64, Vec<u8>) = forward.pop_front().unwrap();
                let _ = r.handle_datagram(t, &d);
            }
            while back.front().is_some_and(|(at, _)| *at <= now) {
                let (_, d): (u64, Vec<u8>) = back.pop_front().unwrap();
                let _ = s.handle_datagram(t, &d);
            }
            s.handle_timeout(t);
            if receiver_wake <= now {
                r.handle_timeout(t);
            }
            loop {
                match s.poll_output(t) {
                    SenderOutput::Encode(req) => {
                        let EncodeJob::Cbr(job) = req.job else {
                            panic!("{:?}", req.job)
                        };
                        seen.jobs.push((now / 1000, job.keyframe));
                        encode = Some((now + 5_000, req.id, job.keyframe));
                    }
                    SenderOutput::Transmit(d) => {
                        let media = matches!(Packet::parse(&d), Ok(Packet::Media { .. }));
                        seen.datagrams.push((d.len(), limit, media));
                        forward.push_back((now + 10_000, d));
                    }
                    SenderOutput::Event(_) => {}
                    SenderOutput::Timeout(_) => break,
                }
            }
            loop {
                match r.poll_output() {
                    Output::Transmit(d) => back.push_back((now + 10_000, d)),
                    Output::Frame { data, .. } => {
                        let intact = [8_000, 16_000].contains(&data.len())
                            && data.iter().all(|&b| b == 0x55);
                        seen.frames.push((now / 1000, limit, intact));
                    }
                    Output::Timeout(w) => {
                        receiver_wake = w.as_micros();
                        break;
                    }
                    _ => {}
                }
            }
        }
        seen
    }

    /// The shared core, through each sender built on it: once the path is said to carry
    /// smaller datagrams, no datagram handed out is larger (media, retransmissions and
    /// padding alike) and the receiver reassembles the frames cut for it; a frame left
    /// waiting in packets cut for the larger path is dropped and the next frame is a
    /// keyframe; a larger path brings back the 1400-byte ceiling, and below a header and one
    /// byte the datagrams are the smallest that carry media.
    #[test]
    fn after_set_max_datagram_every_datagram_fits() {
        let source = (640, 360);
        let senders: Vec<Box<dyn SenderEndpoint>> = vec![
            Box::new(BaselineSender::conventional(ConventionalConfig::default(), source).unwrap()),
            Box::new(BaselineSender::vidaptive(VidaptiveConfig::default(), source).unwrap()),
            Box::new(RateSender::new(Fixed, source)),
        ];
        // At 1004 ms a frame was just queued (picture 30 at 997.5 ms, coded 5 ms later).
        let limits = [(1_004, 1_000), (2_000, 9_000), (2_500, 10)];
        for mut s in senders {
            let name = s.scheme();
            let seen = drive(s.as_mut(), &limits);
            let largest = MEDIA_HEADER_LEN + crate::core::FRAGMENT_PAYLOAD;
            for &(len, limit, _) in &seen.datagrams {
                let bound = limit.map_or(largest, |l| l.clamp(MEDIA_HEADER_LEN + 1, largest));
                assert!(
                    len <= bound,
                    "{name}: {len} bytes with the path at {limit:?}"
                );
            }
            let under = |l| {
                seen.datagrams
                    .iter()
                    .filter(|d| d.1 == Some(l) && d.2)
                    .count()
            };
            assert!(under(1_000) > 20, "{name}: {} media at 1000", under(1_000));
            assert!(under(9_000) > 20, "{name}: {} media at 9000", under(9_000));
            assert!(
                seen.datagrams
                    .iter()
                    .any(|&(len, limit, media)| limit == Some(9_000) && media && len > 1_000),
                "{name}: full packets again on the larger path"
            );
            // The receiver reassembles the frames cut for the smaller path, as they were sent.
            let shown = |l| seen.frames.iter().filter(|f| f.1 == Some(l) && f.2).count();
            assert!(shown(1_000) > 10, "{name}: {} frames at 1000", shown(1_000));
            assert!(
                seen.frames.iter().all(|f| f.2),
                "{name}: a frame reassembled wrong"
            );
            let next_job = seen.jobs.iter().find(|(at, _)| *at >= 1_004);
            assert_eq!(
                next_job.map(|j| j.1),
                Some(true),
                "{name}: the frame dropped from the pacer is replaced by a keyframe"
            );
        }
    }
}
