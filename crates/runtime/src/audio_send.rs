//! The sender's audio in a live call: Opus frames made on the wall clock from the source, one
//! datagram each, for the sender loop to seal in the call's session and send on its socket
//! beside the video (telling the scheme, whose budget counts them). Sans-IO: time is passed
//! in, and the loop asks [`LiveAudioSender::next_at`] when to come back.
//!
//! Audio is never held back for the video: every frame due is sent when the loop gets to it.
//! Before the peer can be sent to (no receiver has dialed, or the handshake is not done) the
//! frames due are made and dropped, so the stream's capture clock stays the wall clock and
//! nothing stale is sent once the call starts.
//!
//! With the microphone (`--audio mic`, the `sound` feature) the frames are pushed rather
//! than pulled: the device's callback makes them on the sender's grid with their capture
//! times ([`crate::audio_capture`]), and each is encoded as soon as the loop finds it in the
//! queue (the loop comes back every [`MIC_POLL`] once the next frame is due).

use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_audio::{AudioSender, AudioSource, LoopedSamples, OpusConfig, SyntheticSpeech};
use salsify_time::{Duration, Instant};

use crate::sound::Microphone;
use crate::switch::Switch;

/// How often the loop looks for the microphone's next frame once it is due (the device
/// hands frames on in its own rhythm, after its own buffering).
pub const MIC_POLL: Duration = Duration::from_millis(2);

/// Where the sender's audio comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveAudioInput {
    /// The synthetic voice with a timing mark each second (`--audio synthetic`).
    Synthetic,
    /// Samples (48 kHz mono) played in a loop (`--audio FILE.wav`).
    Samples(Arc<Vec<i16>>),
    /// The default input device (`--audio mic`; needs the `sound` feature).
    Mic,
}

impl LiveAudioInput {
    /// `none` (no audio), `synthetic`, `mic`, or a 48 kHz `.wav` file, read now. An error
    /// says what the flag takes (for `flag`). The microphone is opened when the call starts.
    pub fn parse(flag: &str, value: &str) -> Result<Option<LiveAudioInput>> {
        match value {
            "none" => Ok(None),
            "synthetic" => Ok(Some(LiveAudioInput::Synthetic)),
            "mic" => Ok(Some(LiveAudioInput::Mic)),
            path if path.to_ascii_lowercase().ends_with(".wav") => {
                let samples = salsify_audio::read_wav(std::path::Path::new(path))
                    .with_context(|| format!("{flag} {path}"))?;
                Ok(Some(LiveAudioInput::Samples(Arc::new(samples))))
            }
            other => anyhow::bail!(
                "{flag} '{other}': none, synthetic, mic or a .wav file (48 kHz; \
                 ffmpeg -i IN -ac 1 -ar 48000 OUT.wav converts any other)"
            ),
        }
    }

    fn source(&self) -> Box<dyn AudioSource> {
        match self {
            LiveAudioInput::Synthetic => Box::new(SyntheticSpeech::new(0)),
            LiveAudioInput::Samples(s) => Box::new(LoopedSamples::new(s.to_vec())),
            // Its frames are pushed (`encode_frame`); the source is never asked.
            LiveAudioInput::Mic => Box::new(LoopedSamples::new(Vec::new())),
        }
    }
}

/// The sender's audio settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioSendConfig {
    /// The source.
    pub input: LiveAudioInput,
    /// The encoder (default: 20 ms frames, 32 kb/s, FEC and DTX on).
    pub opus: OpusConfig,
    /// Silence is sent while this is on (a call window's `m`).
    pub mute: Option<Switch>,
}

impl AudioSendConfig {
    /// `input` with the default encoder.
    pub fn new(input: LiveAudioInput) -> Self {
        AudioSendConfig {
            input,
            opus: OpusConfig::default(),
            mute: None,
        }
    }
}

/// The audio half of a live sender.
#[derive(Debug)]
pub struct LiveAudioSender {
    sender: AudioSender,
    /// Datagrams handed out to send, and their bytes (before sealing).
    pub datagrams: u64,
    /// Bytes of those.
    pub bytes: u64,
    /// Packets made while the peer could not be sent to, dropped.
    pub dropped: u64,
    /// The microphone, with `--audio mic`.
    mic: Option<Microphone>,
    /// With the microphone: when to look in its queue again.
    poll_again: Instant,
    mute: Option<Switch>,
}

impl LiveAudioSender {
    /// A sender whose first frame starts being captured at `start`; with `--audio mic`,
    /// the microphone is opened (an error if this build or machine has none).
    pub fn new(config: &AudioSendConfig, start: Instant) -> Result<Self> {
        let sender = AudioSender::new(&config.opus, config.input.source(), start)
            .context("cannot start the Opus encoder")?;
        let mic = match config.input {
            LiveAudioInput::Mic => {
                let mic = Microphone::open(start)?;
                eprintln!("salsify: microphone {}", mic.description());
                Some(mic)
            }
            _ => None,
        };
        Ok(LiveAudioSender {
            sender,
            datagrams: 0,
            bytes: 0,
            dropped: 0,
            mic,
            poll_again: start,
            mute: config.mute.clone(),
        })
    }

    /// When the next frame is whole and due (with the microphone, and every [`MIC_POLL`]
    /// after that until it comes).
    pub fn next_at(&self) -> Instant {
        match self.mic {
            None => self.sender.next_at(),
            Some(_) => self.sender.next_at().max(self.poll_again),
        }
    }

    /// Microphone frames dropped because the loop did not take them in time.
    pub fn overruns(&self) -> u64 {
        self.mic.as_ref().map_or(0, Microphone::overruns)
    }

    /// The datagrams due at `now`, oldest first (DTX's silent frames make none). `ready`:
    /// whether the peer can be sent to; if not, what is due is dropped.
    pub fn poll(&mut self, now: Instant, ready: bool) -> Result<Vec<Vec<u8>>> {
        self.sender
            .set_muted(self.mute.as_ref().is_some_and(Switch::is_on));
        if self.mic.is_some() {
            return self.poll_mic(now, ready);
        }
        let mut out = Vec::new();
        while let Some(packet) = self.sender.poll(now).context("Opus encoding failed")? {
            if !ready {
                self.dropped += 1;
                continue;
            }
            let datagram = packet.encode();
            self.datagrams += 1;
            self.bytes += datagram.len() as u64;
            out.push(datagram);
        }
        Ok(out)
    }

    /// The microphone's frames waiting, encoded in order.
    fn poll_mic(&mut self, now: Instant, ready: bool) -> Result<Vec<Vec<u8>>> {
        self.poll_again = now + MIC_POLL;
        let mut out = Vec::new();
        while let Some(frame) = self.mic.as_ref().and_then(Microphone::try_next) {
            if !ready {
                self.dropped += 1;
                continue;
            }
            let packet = self
                .sender
                .encode_frame(frame.index, &frame.samples)
                .context("Opus encoding failed")?;
            if let Some(packet) = packet {
                let datagram = packet.encode();
                self.datagrams += 1;
                self.bytes += datagram.len() as u64;
                out.push(datagram);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_audio::AudioPacket;
    use salsify_audio::SyntheticSpeech;

    /// Frames come out on the clock given, one 20 ms frame each once whole, numbered in
    /// order with their capture times; a loop that comes late gets every frame due (audio is
    /// never skipped), and frames due before the peer is there are dropped, not sent late.
    #[test]
    fn frames_are_due_on_the_clock_and_never_skipped() {
        let t0 = Instant::from_millis(5_000);
        let config = AudioSendConfig::new(LiveAudioInput::Synthetic);
        let mut audio = LiveAudioSender::new(&config, t0).unwrap();
        assert_eq!(audio.next_at(), t0 + Duration::from_millis(20));
        assert!(audio
            .poll(t0 + Duration::from_millis(19), true)
            .unwrap()
            .is_empty());
        // Not ready for the first 100 ms: five frames dropped.
        assert!(audio
            .poll(t0 + Duration::from_millis(100), false)
            .unwrap()
            .is_empty());
        assert_eq!(audio.dropped, 5);
        let mut packets = vec![];
        let mut now = t0 + Duration::from_millis(100);
        while now < t0 + Duration::from_millis(1_100) {
            now += Duration::from_millis(20);
            packets.extend(audio.poll(now, true).unwrap());
        }
        // A loop 200 ms late gets the ten frames due at once.
        now += Duration::from_millis(200);
        let late = audio.poll(now, true).unwrap();
        packets.extend(late);
        let decoded: Vec<AudioPacket> = packets
            .iter()
            .map(|d| AudioPacket::decode(d).unwrap())
            .collect();
        // The synthetic voice has pauses DTX leaves out, but most frames carry sound.
        assert!(decoded.len() >= 30, "{} packets", decoded.len());
        assert_eq!(audio.datagrams, decoded.len() as u64);
        assert_eq!(
            audio.bytes,
            packets.iter().map(|d| d.len() as u64).sum::<u64>()
        );
        for (i, p) in decoded.iter().enumerate() {
            assert_eq!(
                p.seq,
                decoded[0].seq + i as u32,
                "one sequence number a packet"
            );
            assert_eq!(
                p.captured,
                t0 + Duration::from_millis(20) * p.frame,
                "frame {} captured on the clock",
                p.frame
            );
        }
        assert!(decoded.windows(2).all(|w| w[0].frame < w[1].frame));
        assert!(decoded.first().unwrap().frame >= 5);
        let last = decoded.last().unwrap().frame;
        assert!(last <= 64, "frame {last}: none made before it was whole");
        assert_eq!(audio.next_at(), t0 + Duration::from_millis(20) * 66);
    }

    /// The microphone's path without a device: a voice cut into odd-sized callback buffers
    /// by the chunker, through the bounded queue, into packets whose frame numbers and
    /// capture times are the chunker's (on the sender's grid); frames the queue dropped
    /// leave a gap in the numbers and count as overruns; nothing is sent before the peer is
    /// ready. The loop is told to come back every 2 ms once a frame is due.
    #[test]
    fn microphone_frames_keep_their_numbers_and_capture_times() {
        use crate::audio_capture::{CaptureQueue, ChunkerConfig, FrameChunker};
        let t0 = Instant::from_millis(3_000);
        let (sink, queue) = CaptureQueue::bounded(4);
        let mut audio = LiveAudioSender::new(&AudioSendConfig::new(LiveAudioInput::Synthetic), t0)
            .expect("encoder");
        audio.mic = Some(Microphone::from_queue(queue));
        audio.poll_again = t0;
        assert_eq!(audio.next_at(), t0 + Duration::from_millis(20));
        let mut voice = SyntheticSpeech::new(3);
        let mut chunker = FrameChunker::new(ChunkerConfig::new(48_000, t0));
        // The device starts 5 ms after the sender; buffers of 441 samples.
        let device_start = t0 + Duration::from_millis(5);
        let mut captured = 0u64;
        let mut feed = |samples: u64, chunker: &mut FrameChunker| {
            let mut offered = 0;
            while captured < samples {
                let mut buffer = vec![0i16; 441];
                voice.fill(captured, &mut buffer);
                let at = device_start + Duration::from_micros(captured * 1_000_000 / 48_000);
                chunker.push(at, &buffer, |f| {
                    sink.offer(f);
                    offered += 1;
                });
                captured += 441;
            }
            offered
        };
        // 100 ms before the peer is there: dropped.
        feed(4_800, &mut chunker);
        let now = t0 + Duration::from_millis(110);
        assert!(audio.poll(now, false).unwrap().is_empty());
        assert_eq!(audio.next_at(), now + MIC_POLL);
        let early = audio.dropped;
        assert!(early >= 3, "{early} frames dropped before the peer");
        // Two seconds in steps of 60 ms (3 frames, within the queue's 4).
        let mut packets = vec![];
        for step in 1..=33u64 {
            feed(4_800 + step * 2_880, &mut chunker);
            packets.extend(
                audio
                    .poll(now + Duration::from_millis(60 * step), true)
                    .unwrap(),
            );
        }
        assert_eq!(audio.overruns(), 0);
        // A stalled loop: 200 ms of frames, the queue keeps 4 of the 10.
        let stalled = feed(4_800 + 33 * 2_880 + 9_600, &mut chunker);
        packets.extend(audio.poll(now + Duration::from_secs(3), true).unwrap());
        feed(4_800 + 33 * 2_880 + 9_600 + 2_880, &mut chunker);
        packets.extend(audio.poll(now + Duration::from_secs(4), true).unwrap());
        assert!(stalled >= 10);
        assert_eq!(audio.overruns(), stalled - 4);
        let decoded: Vec<AudioPacket> = packets
            .iter()
            .map(|d| AudioPacket::decode(d).unwrap())
            .collect();
        assert!(decoded.len() >= 60, "{} packets", decoded.len());
        for p in &decoded {
            assert_eq!(p.captured, t0 + Duration::from_millis(20) * p.frame);
        }
        assert!(decoded.windows(2).all(|w| w[0].frame < w[1].frame));
        assert!(u64::from(decoded[0].frame) >= early);
        // The overrun shows as a gap the receiver conceals, not as late frames.
        let gaps: u32 = decoded
            .windows(2)
            .map(|w| w[1].frame - w[0].frame - 1)
            .sum();
        assert!(gaps >= (stalled - 4) as u32, "{gaps} frames missing");
    }

    #[test]
    fn inputs_parse_with_clear_errors() {
        assert_eq!(LiveAudioInput::parse("--audio", "none").unwrap(), None);
        assert_eq!(
            LiveAudioInput::parse("--audio", "synthetic").unwrap(),
            Some(LiveAudioInput::Synthetic)
        );
        let e = LiveAudioInput::parse("--audio", "song.mp3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--audio 'song.mp3'") && e.contains("ffmpeg"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            LiveAudioInput::parse("--audio", "/nonexistent/x.wav").unwrap_err()
        );
        assert!(e.contains("/nonexistent/x.wav"), "{e}");
    }
}
