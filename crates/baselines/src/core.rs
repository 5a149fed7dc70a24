//! The parts a conventional media sender shares between schemes: frame numbering and
//! fragmentation, transport and media sequence numbers, the send history, the pacer, NACK
//! and PLI handling, RTT samples, the output queue, and what the CBR encoder was last told
//! ([`CbrTarget`]: the 10 % target deadband). The schemes ([`crate::webrtc`] for
//! "conventional", [`crate::vidaptive`], [`crate::oracle`]) own one and add their congestion
//! control.

use std::collections::VecDeque;

use salsify_codec::{CbrFrame, Quality};
use salsify_endpoint::{
    AudioMeter, CbrJob, CbrSettings, DropReason, EncodeFailed, EncodeJob, EncodeOutcome,
    EncodeRequest, InputError, SenderEvent, SenderOutput, SentFrame,
};
use salsify_time::{Bitrate, Duration, Instant};

use crate::error::PacketError;
use crate::history::{PacketResult, SendHistory};
use crate::pacer::{Pacer, Queued};
use crate::stats::SenderCounters;
use crate::wire::{MediaHeader, Packet, MAX_FRAGMENTS, MEDIA_HEADER_LEN};
use crate::wire_id::WireId;

/// Payload bytes per fragment: 1400, as Salsify's fragments, so datagrams fit the 1500-byte
/// opportunities of the emulated link with room for the 20-byte header. The most: on a path
/// that carries smaller datagrams, less ([`Core::set_max_datagram`]).
pub const FRAGMENT_PAYLOAD: usize = 1400;

/// A picture waiting for the encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Picture {
    pub picture: u64,
    pub captured: Instant,
}

/// What feedback or control a datagram carried, for the scheme to act on.
pub(crate) enum Incoming {
    /// Transport feedback: the packets it settled.
    Feedback(Vec<PacketResult>),
    /// NACK or PLI, handled by the core.
    Other,
    /// Counted as bad and dropped.
    Bad(PacketError),
}

/// Whether a change from the `applied` CBR target to `wanted` is passed on to libvpx: only
/// changes of more than 10 % (in whole kb/s, as libvpx takes them).
///
/// libvpx's CBR clamps its buffer to the new (smaller) size on every decrease and does not
/// give it back on an increase, so a target that swings frame by frame ratchets the output
/// below the mean target (measured: a target alternating 2000/1000 kb/s every 3 frames yields
/// 850 kb/s).
pub fn deadband_passes(wanted: Bitrate, applied: Bitrate) -> bool {
    let kbps = |b: Bitrate| b.as_kbps().min(u64::from(u32::MAX));
    let (w, a) = (kbps(wanted), kbps(applied));
    w.abs_diff(a) * 10 > a
}

/// What the driver's CBR encoder was last told: the target applied, for the picture size and
/// settings it was opened with. A job's target is the applied one unless the scheme's target
/// moved past the deadband ([`deadband_passes`]); a new size or new settings (the driver
/// re-opens its encoder) always take the scheme's target.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CbrTarget {
    applied: Option<(Bitrate, (u32, u32), CbrSettings)>,
}

impl CbrTarget {
    /// The job for a picture the scheme wants at `wanted`, coded at `size` with `settings`.
    pub fn job(
        &self,
        wanted: Bitrate,
        keyframe: bool,
        size: (u32, u32),
        settings: CbrSettings,
    ) -> CbrJob {
        let target = match self.applied {
            Some((a, s, c)) if s == size && c == settings && !deadband_passes(wanted, a) => a,
            _ => wanted,
        };
        CbrJob {
            target,
            keyframe,
            width: size.0,
            height: size.1,
            settings,
        }
    }

    /// The driver's encoder ran `job` (whether or not its rate control kept the picture).
    pub fn ran(&mut self, job: &CbrJob) {
        self.applied = Some((job.target, (job.width, job.height), job.settings));
    }

    /// The target last applied.
    pub fn applied(&self) -> Option<Bitrate> {
        self.applied.map(|a| a.0)
    }
}

/// The encode under way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Encoding {
    pub id: u64,
    pub picture: Picture,
    /// The CBR job asked for (committed to [`CbrTarget`] when it ran).
    pub cbr: Option<CbrJob>,
}

/// Shared sender machinery.
#[derive(Debug)]
pub(crate) struct Core {
    scheme: WireId,
    next_transport_seq: u32,
    next_media_seq: u32,
    next_frame: u32,
    next_request: u64,
    pub history: SendHistory,
    pub pacer: Pacer,
    pub out: VecDeque<SenderOutput>,
    /// The encode under way.
    pub encoding: Option<Encoding>,
    /// What the CBR encoder was last told.
    pub cbr: CbrTarget,
    /// A keyframe is owed (start, PLI, reset).
    pub keyframe_owed: bool,
    /// Frames before this are superseded by a keyframe: not worth retransmitting.
    pub oldest_useful_frame: u32,
    /// Smoothed RTT (RFC 6298 gains, 1/8).
    pub srtt: Option<Duration>,
    pub stats: SenderCounters,
    /// Payload bytes per fragment now: [`FRAGMENT_PAYLOAD`] until the path is said to carry
    /// less.
    payload: usize,
    /// The call's audio, sent by the driver on the same path.
    pub audio: AudioMeter,
}

impl Core {
    pub fn new(scheme: WireId) -> Self {
        Core {
            scheme,
            next_transport_seq: 0,
            next_media_seq: 0,
            next_frame: 0,
            next_request: 0,
            history: SendHistory::default(),
            pacer: Pacer::default(),
            out: VecDeque::new(),
            encoding: None,
            cbr: CbrTarget::default(),
            keyframe_owed: true,
            oldest_useful_frame: 0,
            srtt: None,
            stats: SenderCounters::default(),
            payload: FRAGMENT_PAYLOAD,
            audio: AudioMeter::default(),
        }
    }

    /// The video's share of a rate target: `target` less the audio's send rate over the
    /// last second, `floor` at least, as libwebrtc allocates its estimate to the audio first.
    /// Without audio, `target` as it is.
    pub fn less_audio(&self, now: Instant, target: Bitrate, floor: Bitrate) -> Bitrate {
        if self.audio.total() == 0 {
            return target;
        }
        let audio = self.audio.rate(now).as_bps();
        Bitrate::bps(target.as_bps().saturating_sub(audio)).max(floor.min(target))
    }

    /// Payload bytes per fragment now.
    pub fn payload(&self) -> usize {
        self.payload
    }

    /// The largest datagram sent now: a full fragment behind its header.
    pub fn max_datagram(&self) -> usize {
        MEDIA_HEADER_LEN + self.payload
    }

    /// A padding datagram of `len` bytes, cut to [`Self::max_datagram`].
    pub fn padding_len(&self, len: usize) -> usize {
        len.min(self.max_datagram())
    }

    /// The path carries datagrams of at most `bytes`: fragments are cut at
    /// [`salsify_endpoint::fragment_payload`]`(FRAGMENT_PAYLOAD, bytes, MEDIA_HEADER_LEN)`
    /// bytes from now on (1400 at most, one at least) and padding at most that size with its
    /// header. After a decrease, what waits and no longer fits is dropped, never sent: a
    /// frame with a packet over the new size in the pacer loses every packet it has there
    /// (its packets were cut for the old size and cannot be cut again), a datagram over it
    /// waiting to be handed out is dropped, and a retransmission asked for later that does not
    /// fit is not sent. A frame so dropped cannot arrive whole: the next frame is a keyframe
    /// (as the receiver's keyframe request would ask a round trip later). A size that leaves
    /// the fragment size as it is changes nothing.
    pub fn set_max_datagram(&mut self, bytes: usize) {
        let payload = salsify_endpoint::fragment_payload(FRAGMENT_PAYLOAD, bytes, MEDIA_HEADER_LEN);
        if payload == self.payload {
            return;
        }
        self.payload = payload;
        let max = self.max_datagram();
        let frames = self.pacer.limit_datagrams(max);
        let before = self.out.len();
        self.out
            .retain(|o| !matches!(o, SenderOutput::Transmit(d) if d.len() > max));
        if !frames.is_empty() || self.out.len() != before {
            self.keyframe_owed = true;
        }
    }

    pub fn event(&mut self, e: SenderEvent) {
        self.out.push_back(SenderOutput::Event(e));
    }

    pub fn dropped(&mut self, now: Instant, p: Picture, reason: DropReason) {
        self.stats.dropped += 1;
        self.event(SenderEvent::PictureDropped {
            picture: p.picture,
            at: now,
            reason,
        });
    }

    /// A new picture `p`: returned to be encoded now if the encoder is free; else it waits
    /// in `waiting` (one slot: the picture it replaces is dropped as `EncoderBusy`).
    pub fn admit(
        &mut self,
        now: Instant,
        waiting: &mut Option<Picture>,
        p: Picture,
    ) -> Option<Picture> {
        self.stats.pictures += 1;
        if self.encoding.is_none() {
            return Some(p);
        }
        if let Some(old) = waiting.replace(p) {
            self.dropped(now, old, DropReason::EncoderBusy);
        }
        None
    }

    /// Asks the driver to encode `p` with the CBR encoder.
    pub fn request_cbr(&mut self, p: Picture, job: CbrJob) {
        let id = self.next_request;
        self.next_request += 1;
        self.encoding = Some(Encoding {
            id,
            picture: p,
            cbr: Some(job),
        });
        self.out.push_back(SenderOutput::Encode(EncodeRequest {
            id,
            picture: p.picture,
            captured: p.captured,
            job: EncodeJob::Cbr(job),
        }));
    }

    /// Takes the result of CBR encode `id`. `Ok(Some((picture, frame)))`: the encoder ran
    /// (`frame` `None`: its rate control dropped the picture). `Ok(None)`: the driver could
    /// not encode; the picture is dropped. A result for another request, or of another codec,
    /// is an error (the latter also drops the picture).
    pub fn take_cbr_result(
        &mut self,
        now: Instant,
        id: u64,
        result: Result<EncodeOutcome, EncodeFailed>,
    ) -> Result<Option<(Picture, Option<CbrFrame>)>, InputError> {
        let e = match self.encoding {
            Some(e) if e.id == id => e,
            _ => return Err(InputError::UnknownRequest(id)),
        };
        self.encoding = None;
        match result {
            Ok(EncodeOutcome::Cbr(frame)) => {
                if let Some(job) = &e.cbr {
                    self.cbr.ran(job);
                }
                Ok(Some((e.picture, frame)))
            }
            Err(_) => {
                self.dropped(now, e.picture, DropReason::Failed);
                Ok(None)
            }
            Ok(other) => {
                self.dropped(now, e.picture, DropReason::Failed);
                Err(InputError::WrongResult {
                    id,
                    why: format!("a CBR job answered with {}", outcome_kind(&other)),
                })
            }
        }
    }

    /// Splits a frame into fragments and queues them; returns the frame number, or `None`
    /// (picture dropped) when it has too many fragments.
    pub fn queue_frame(&mut self, now: Instant, p: Picture, f: &CbrFrame) -> Option<u32> {
        let count = f.data.len().div_ceil(self.payload).max(1);
        if count > usize::from(MAX_FRAGMENTS) {
            self.dropped(now, p, DropReason::Failed);
            return None;
        }
        let frame = self.next_frame;
        self.next_frame += 1;
        let per = f.data.len().div_ceil(count).max(1);
        for (i, chunk) in f.data.chunks(per).enumerate() {
            let header = MediaHeader {
                transport_seq: 0,
                media_seq: self.next_media_seq,
                frame,
                fragment: i as u16,
                count: count as u16,
                keyframe: f.keyframe,
                retransmission: false,
                scheme: self.scheme,
            };
            self.next_media_seq += 1;
            self.pacer.push(Queued {
                header,
                payload: chunk.to_vec(),
                enqueued: now,
                frame_enqueued: now,
            });
        }
        if f.keyframe {
            self.keyframe_owed = false;
            self.oldest_useful_frame = frame;
            self.stats.keyframes += 1;
        }
        let quality = cbr_quality(f.quality);
        self.stats.frames_sent += 1;
        self.stats.quality = Some(quality);
        self.event(SenderEvent::FrameSent(SentFrame {
            frame,
            picture: p.picture,
            captured: p.captured,
            at: now,
            bytes: f.data.len(),
            fragments: count as u16,
            quality,
            keyframe: f.keyframe,
            choice: salsify_endpoint::Choice::Only,
            budget: None,
            recovery: false,
            states: None,
        }));
        Some(frame)
    }

    /// Puts a media packet on the wire with the next transport sequence number.
    pub fn transmit(&mut self, now: Instant, mut q: Queued) {
        q.header.transport_seq = self.next_transport_seq;
        self.next_transport_seq = self.next_transport_seq.wrapping_add(1);
        if q.header.retransmission {
            self.stats.retransmissions += 1;
        } else {
            self.stats.media_packets += 1;
            self.history.store_media(q.header, q.payload.clone(), now);
        }
        let packet = Packet::Media {
            header: q.header,
            payload: q.payload,
        };
        // Emitting a header built here cannot fail (fragment < count <= MAX_FRAGMENTS).
        if let Ok(bytes) = packet.emit() {
            self.history
                .on_sent(q.header.transport_seq, now, bytes.len());
            self.out.push_back(SenderOutput::Transmit(bytes));
        }
    }

    /// Sends a padding datagram of `len` bytes.
    pub fn transmit_padding(&mut self, now: Instant, len: usize) {
        let len = self.padding_len(len);
        let seq = self.next_transport_seq;
        self.next_transport_seq = seq.wrapping_add(1);
        if let Ok(bytes) = (Packet::Padding {
            transport_seq: seq,
            len,
        })
        .emit()
        {
            self.stats.padding_packets += 1;
            self.stats.padding_bytes += bytes.len() as u64;
            self.history.on_sent(seq, now, bytes.len());
            self.out.push_back(SenderOutput::Transmit(bytes));
        }
    }

    /// Parses a datagram from the receiver and handles NACK and PLI itself.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Incoming {
        match Packet::parse(datagram) {
            Ok(Packet::Feedback(f)) => {
                self.stats.feedback += 1;
                let results = self.history.on_feedback(&f);
                // RTT from the newest packet reported received (its feedback left soon
                // after it arrived; with periodic feedback this overestimates by up to
                // one interval).
                if let Some(sent) = results
                    .iter()
                    .filter(|r| r.arrival.is_some())
                    .map(|r| r.sent)
                    .max()
                {
                    let sample = now - sent;
                    self.srtt = Some(match self.srtt {
                        None => sample,
                        Some(s) => (s * 7 + sample) / 8,
                    });
                }
                Incoming::Feedback(results)
            }
            Ok(Packet::Nack(seqs)) => {
                let min_interval = self.srtt.unwrap_or(Duration::from_millis(100)) / 2;
                for seq in seqs {
                    self.stats.nacked += 1;
                    let max = self.max_datagram();
                    if let Some((mut header, payload)) = self
                        .history
                        .retransmission(seq, now, min_interval, self.oldest_useful_frame)
                        .filter(|(_, payload)| MEDIA_HEADER_LEN + payload.len() <= max)
                    {
                        header.retransmission = true;
                        self.pacer.push_retransmission(Queued {
                            header,
                            payload,
                            enqueued: now,
                            frame_enqueued: now,
                        });
                    }
                }
                Incoming::Other
            }
            Ok(Packet::Pli) => {
                self.stats.plis += 1;
                self.keyframe_owed = true;
                Incoming::Other
            }
            Ok(p) => {
                self.stats.bad_datagrams += 1;
                Incoming::Bad(PacketError::Unexpected { kind: p.kind() })
            }
            Err(e) => {
                self.stats.bad_datagrams += 1;
                Incoming::Bad(e.into())
            }
        }
    }
}

/// A CBR frame's quantizer index as a [`Quality`] (libvpx reports 0..=127).
pub(crate) fn cbr_quality(index: u8) -> Quality {
    Quality::new(index).unwrap_or(Quality::WORST)
}

/// What kind of outcome `o` is, for error messages.
pub(crate) fn outcome_kind(o: &EncodeOutcome) -> &'static str {
    match o {
        EncodeOutcome::Functional(_) => "functional-codec frames",
        EncodeOutcome::Cbr(_) => "a CBR frame",
        _ => "an unknown outcome",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: CbrSettings = CbrSettings {
        dropframe_thresh: 0,
        max_gap_frames: 2,
    };

    /// The deadband the simulator applied: changes of 10 % or less (whole kb/s) are not
    /// passed on; a new size (a fresh encoder) always takes the target; nothing is applied
    /// until an encode ran.
    #[test]
    fn the_deadband_passes_on_only_changes_over_ten_percent_or_a_new_size() {
        let mut c = CbrTarget::default();
        let s = (320, 180);
        let run = |c: &mut CbrTarget, kbps: u64, size| {
            let job = c.job(Bitrate::kbps(kbps), false, size, SETTINGS);
            c.ran(&job);
            job.target.as_kbps()
        };
        // Not run: the next job still takes the wanted target.
        let job = c.job(Bitrate::kbps(900), false, s, SETTINGS);
        assert_eq!(job.target, Bitrate::kbps(900));
        assert_eq!(c.applied(), None);
        assert_eq!(run(&mut c, 1000, s), 1000);
        assert_eq!(run(&mut c, 1100, s), 1000);
        assert_eq!(run(&mut c, 901, s), 1000);
        assert_eq!(run(&mut c, 1101, s), 1101);
        assert_eq!(run(&mut c, 1050, (160, 90)), 1050);
        assert_eq!(run(&mut c, 1060, (160, 90)), 1050);
        // Sub-kb/s differences are judged in whole kb/s, as libvpx takes them.
        assert!(!deadband_passes(Bitrate::bps(11_999), Bitrate::kbps(10)));
        assert!(deadband_passes(Bitrate::bps(12_000), Bitrate::kbps(10)));
        assert!(deadband_passes(Bitrate::kbps(1), Bitrate::ZERO));
        assert!(!deadband_passes(Bitrate::bps(999), Bitrate::ZERO));
    }
}

#[cfg(test)]
mod audio_tests {
    use super::*;

    #[test]
    fn the_audio_rate_comes_off_a_target_down_to_its_floor() {
        let mut core = Core::new(WireId::Conventional);
        let t = Instant::from_millis(1000);
        assert_eq!(
            core.less_audio(t, Bitrate::kbps(500), Bitrate::kbps(50)),
            Bitrate::kbps(500)
        );
        for i in 0..50 {
            core.audio.on_sent(Instant::from_millis(20 + i * 20), 100);
        }
        assert_eq!(
            core.less_audio(t, Bitrate::kbps(500), Bitrate::kbps(50)),
            Bitrate::kbps(460)
        );
        assert_eq!(
            core.less_audio(t, Bitrate::kbps(60), Bitrate::kbps(50)),
            Bitrate::kbps(50)
        );
        // A floor above the target does not raise it.
        assert_eq!(
            core.less_audio(t, Bitrate::kbps(30), Bitrate::kbps(50)),
            Bitrate::kbps(30)
        );
    }
}
