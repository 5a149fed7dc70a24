//! The legacy conventional sender (`"conventional-legacy"`), the hand-written GCC kept to
//! compare with the conventional scheme's libwebrtc controller ([`crate::webrtc`]): GCC sets a target bit rate; libvpx's own CBR rate
//! control encodes every camera picture at that rate (its frame dropper at WebRTC's
//! threshold, [`GccConfig::dropframe_thresh`]); a pacer sends at 2.5x the target; pictures
//! are dropped before encoding while the pacer queue is longer than
//! [`GccConfig::max_pacer_queue`] at the target rate; NACKed packets are retransmitted and a
//! PLI forces a keyframe. GCC's probe clusters go to the pacer, which sends them at the probe
//! rate (media when queued, padding otherwise); the feedback on their packets goes back to
//! GCC's probe estimator. Every encode is a [`CbrJob`] at the source size, with GCC's target
//! through the 10 % deadband ([`crate::deadband_passes`]).
//!
//! [`CbrJob`]: salsify_endpoint::CbrJob

use std::collections::BTreeMap;

use salsify_endpoint::{
    DatagramError, Diagnostic, DropReason, EncodeFailed, EncodeOutcome, InputError, SenderEndpoint,
    SenderEvent, SenderOutput, SenderStats,
};
use salsify_time::Instant;

#[cfg(test)]
use crate::core::deadband_passes;
use crate::core::{Core, Incoming, Picture};
use crate::error::{datagram_error, ConfigError};
use crate::gcc::probe::{ProbeCluster, ProbePacket};
use crate::gcc::{Gcc, GccConfig};
use crate::pacer::Paced;
use crate::rate::Bitrate;
use crate::scheme::Scheme;
use crate::stats::SenderCounters;
use crate::wire::Packet;

/// Probe packets remembered for their feedback, at most (older ones are forgotten).
const MAX_PROBE_PACKETS: usize = 4096;

/// The WebRTC-style sender.
#[derive(Debug)]
pub struct GccSender {
    config: GccConfig,
    /// The source's picture size (every frame is coded at it).
    source: (u32, u32),
    core: Core,
    gcc: Gcc,
    /// The newest picture that arrived while the encoder was busy.
    waiting: Option<Picture>,
    /// Transport sequence numbers of probe packets, with their cluster.
    probe_packets: BTreeMap<u32, ProbeCluster>,
}

impl GccSender {
    /// A sender for a `source` = (width, height) camera; the configuration is checked.
    pub fn new(config: GccConfig, source: (u32, u32)) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut core = Core::new(Scheme::ConventionalLegacy);
        core.pacer
            .set_rate(config.start.mul_f64(config.pacing_factor));
        core.stats.target = config.start;
        Ok(GccSender {
            gcc: Gcc::new(&config),
            config,
            source,
            core,
            waiting: None,
            probe_packets: BTreeMap::new(),
        })
    }

    /// The estimator (for logs and tests).
    pub fn gcc(&self) -> &Gcc {
        &self.gcc
    }

    /// The current target rate.
    pub fn target(&self) -> Bitrate {
        self.gcc.target()
    }

    /// The target last given to the encoder (after the deadband), once an encode ran.
    pub fn applied_target(&self) -> Option<Bitrate> {
        self.core.cbr.applied()
    }

    /// The scheme's own counters.
    pub fn counters(&self) -> SenderCounters {
        self.core.stats
    }

    fn start_encode(&mut self, now: Instant, p: Picture) {
        let target = self.gcc.target();
        if self.core.pacer.queue_time(target) > self.config.max_pacer_queue {
            self.core.dropped(now, p, DropReason::PacerQueue);
            return;
        }
        let keyframe = self.core.keyframe_owed;
        let job = self
            .core
            .cbr
            .job(target, keyframe, self.source, self.config.cbr_settings());
        self.core.request_cbr(p, job);
    }

    fn on_feedback(&mut self, now: Instant, results: &[crate::history::PacketResult]) {
        if results.is_empty() {
            return;
        }
        let rtt = self
            .core
            .srtt
            .unwrap_or(salsify_time::Duration::from_millis(100));
        let before = self.gcc.target();
        let probes: Vec<ProbePacket> = results
            .iter()
            .filter_map(|r| {
                let cluster = self.probe_packets.remove(&r.seq)?;
                Some(ProbePacket {
                    cluster,
                    sent: r.sent,
                    arrival: r.arrival?,
                    size: r.size,
                })
            })
            .collect();
        let target = self.gcc.on_feedback_with_probes(now, results, &probes, rtt);
        self.core
            .pacer
            .set_rate(target.mul_f64(self.config.pacing_factor));
        self.core.stats.target = target;
        if target != before {
            self.core.event(SenderEvent::Target {
                at: now,
                encoder: target,
                pacing: self.core.pacer.rate(),
            });
        }
    }
}

impl SenderEndpoint for GccSender {
    fn scheme(&self) -> &'static str {
        Scheme::ConventionalLegacy.name()
    }

    fn handle_picture(&mut self, now: Instant, picture: u64, captured: Instant) {
        let p = Picture { picture, captured };
        if let Some(p) = self.core.admit(now, &mut self.waiting, p) {
            self.start_encode(now, p);
        }
    }

    /// A failed encode drops its picture; a picture waiting meanwhile is encoded after the
    /// next picture arrives and its encode finishes.
    fn handle_encoded(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<(), InputError> {
        let Some((p, frame)) = self.core.take_cbr_result(now, id, result)? else {
            return Ok(());
        };
        match frame {
            Some(f) => {
                self.core.queue_frame(now, p, &f);
            }
            None => self.core.dropped(now, p, DropReason::RateControl),
        }
        if let Some(next) = self.waiting.take() {
            self.start_encode(now, next);
        }
        Ok(())
    }

    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        match self.core.handle_datagram(now, datagram) {
            Incoming::Feedback(results) => self.on_feedback(now, &results),
            Incoming::Other => {}
            Incoming::Bad(e) => return Err(datagram_error(e)),
        }
        Ok(())
    }

    fn handle_timeout(&mut self, _now: Instant) {}

    fn poll_output(&mut self, now: Instant) -> SenderOutput {
        if let Some(o) = self.core.out.pop_front() {
            return o;
        }
        for cluster in self.gcc.take_probes(now) {
            self.core.pacer.add_probe(now, cluster);
        }
        if let Some((paced, probe)) = self.core.pacer.pop_paced(now) {
            match paced {
                Paced::Packet(q) => self.core.transmit(now, q),
                Paced::Padding(len) => self.core.transmit_padding(now, len),
            }
            if let Some(SenderOutput::Transmit(bytes)) = self.core.out.back() {
                self.gcc.on_sent(now, bytes.len());
                if let Some(cluster) = probe {
                    let seq = match Packet::parse(bytes) {
                        Ok(Packet::Media { header, .. }) => Some(header.transport_seq),
                        Ok(Packet::Padding { transport_seq, .. }) => Some(transport_seq),
                        _ => None,
                    };
                    if let Some(seq) = seq {
                        self.probe_packets.insert(seq, cluster);
                        while self.probe_packets.len() > MAX_PROBE_PACKETS {
                            self.probe_packets.pop_first();
                        }
                    }
                }
            }
            if let Some(o) = self.core.out.pop_front() {
                return o;
            }
        }
        let pacer = self.core.pacer.next_wake(now);
        let probe = self.gcc.next_probe_time();
        let wake = match (pacer, probe) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(Instant::FAR_FUTURE),
        };
        SenderOutput::Timeout(wake.max(now))
    }

    fn stats(&self) -> SenderStats {
        self.core.stats.common(Some(self.core.stats.target))
    }

    /// Retransmissions, NACKs and padding (counters); GCC's target, the target applied to
    /// the encoder, the pacer's rate and queue, and the smoothed RTT (gauges).
    fn diagnostics(&self) -> Vec<Diagnostic> {
        let s = &self.core.stats;
        let d = |name, value: f64| Diagnostic { name, value };
        vec![
            d("padding_packets", s.padding_packets as f64),
            d("padding_bytes", s.padding_bytes as f64),
            d("retransmissions", s.retransmissions as f64),
            d("nacked", s.nacked as f64),
            d("target_kbps", s.target.as_f64() / 1000.0),
            d(
                "applied_target_kbps",
                self.core.cbr.applied().map_or(0.0, |b| b.as_f64() / 1000.0),
            ),
            d("pacing_kbps", self.core.pacer.rate().as_f64() / 1000.0),
            d("pacer_bytes", self.core.pacer.queued_bytes() as f64),
            d(
                "srtt_ms",
                self.core.srtt.map_or(0.0, |t| t.as_secs_f64() * 1e3),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Feedback;
    use salsify_codec::CbrFrame;
    use salsify_endpoint::{EncodeJob, SenderOutput};

    fn frame(bytes: usize, keyframe: bool) -> EncodeOutcome {
        EncodeOutcome::Cbr(Some(CbrFrame {
            data: vec![7; bytes],
            keyframe,
            quality: 30,
        }))
    }

    /// Runs the sender for `pictures` pictures 33 ms apart, answering every job with a frame,
    /// and acknowledging every datagram with one feedback report per picture; returns the
    /// jobs and the datagrams.
    fn run(s: &mut GccSender, pictures: u64) -> (Vec<salsify_endpoint::CbrJob>, Vec<Vec<u8>>) {
        let (mut jobs, mut sent) = (vec![], vec![]);
        let mut next_report = 0u32;
        for i in 0..pictures {
            let now = Instant::from_millis(i * 33);
            s.handle_picture(now, i, now);
            loop {
                match s.poll_output(now) {
                    SenderOutput::Encode(req) => {
                        let EncodeJob::Cbr(job) = req.job else {
                            panic!("{:?}", req.job)
                        };
                        jobs.push(job);
                        s.handle_encoded(now, req.id, Ok(frame(1000, job.keyframe)))
                            .unwrap();
                    }
                    SenderOutput::Transmit(d) => sent.push(d),
                    SenderOutput::Timeout(_) => break,
                    SenderOutput::Event(_) => {}
                }
            }
            // Everything sent so far arrived 20 ms after this picture.
            let count = sent.len() as u32 - next_report;
            let arrivals =
                vec![Some(now + salsify_time::Duration::from_millis(20)); count as usize];
            let fb = Packet::Feedback(Feedback {
                base_seq: next_report,
                arrivals,
            });
            next_report += count;
            if count > 0 {
                s.handle_datagram(
                    now + salsify_time::Duration::from_millis(40),
                    &fb.emit().unwrap(),
                )
                .unwrap();
            }
        }
        (jobs, sent)
    }

    /// Every job names the source size and WebRTC's encoder settings; the first forces a
    /// keyframe; the target given to the encoder is GCC's through the 10 % deadband.
    #[test]
    fn jobs_name_the_source_size_settings_and_the_deadbanded_target() {
        let mut s = GccSender::new(GccConfig::default(), (320, 180)).unwrap();
        let (jobs, sent) = run(&mut s, 150);
        assert_eq!(jobs.len(), 150);
        assert!(jobs[0].keyframe && jobs[1..].iter().all(|j| !j.keyframe));
        for j in &jobs {
            assert_eq!((j.width, j.height), (320, 180));
            assert_eq!(j.settings, GccConfig::default().cbr_settings());
            assert_eq!(j.settings.dropframe_thresh, 30);
            assert_eq!(j.settings.max_gap_frames, 0);
        }
        // Each change of the job's target moved more than 10 % from the one before.
        let mut changes = 0;
        for w in jobs.windows(2) {
            if w[1].target != w[0].target {
                changes += 1;
                assert!(deadband_passes(w[1].target, w[0].target), "{w:?}");
            }
        }
        assert!(changes > 0, "GCC's target never left the deadband");
        assert_eq!(s.applied_target(), Some(jobs.last().unwrap().target));
        // Every media datagram names the scheme.
        assert!(sent.iter().any(|d| crate::scheme_of(d).is_some()));
        for d in &sent {
            if let Ok(Packet::Media { header, .. }) = Packet::parse(d) {
                assert_eq!(header.scheme, Scheme::ConventionalLegacy);
            }
        }
    }

    #[test]
    fn a_pli_forces_a_keyframe_and_wrong_results_are_refused() {
        let mut s = GccSender::new(GccConfig::default(), (64, 48)).unwrap();
        run(&mut s, 3);
        let now = Instant::from_millis(200);
        s.handle_datagram(now, &Packet::Pli.emit().unwrap())
            .unwrap();
        s.handle_picture(now, 10, now);
        let req = loop {
            match s.poll_output(now) {
                SenderOutput::Encode(req) => break req,
                SenderOutput::Timeout(_) => panic!("no encode request"),
                _ => {}
            }
        };
        let EncodeJob::Cbr(job) = req.job else {
            panic!()
        };
        assert!(job.keyframe);
        assert!(matches!(
            s.handle_encoded(now, req.id, Ok(EncodeOutcome::Functional(vec![]))),
            Err(InputError::WrongResult { .. })
        ));
        assert_eq!(
            s.handle_encoded(now, req.id, Ok(frame(10, true))),
            Err(InputError::UnknownRequest(req.id))
        );
        assert_eq!(s.stats().dropped, 1);
        assert_eq!(s.stats().recoveries, 1);
        assert!(matches!(
            s.handle_datagram(now, &[1, 3, 0]),
            Err(DatagramError::OtherProtocol { first_byte: 1 })
        ));
        assert!(matches!(
            s.handle_datagram(
                now,
                &Packet::Padding {
                    transport_seq: 0,
                    len: 10
                }
                .emit()
                .unwrap()
            ),
            Err(DatagramError::Rejected(_))
        ));
        assert_eq!(s.stats().bad_datagrams, 2);
    }
}
