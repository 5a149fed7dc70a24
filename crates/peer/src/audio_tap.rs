//! The call's audio as the page recorded it: chunks of 16-bit PCM from the sender's
//! microphone track ("sent") and the receiver's remote track as played ("received"), each
//! with its first sample's frame on the page's audio clock and that frame's host time; put
//! in order (uploads arrive out of order) and written as `audio-sent.wav`,
//! `audio-received.wav` and `audio.json` (when each recording's first sample was taken).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::audio_delay::Recording;

/// Largest gap filled with silence between two chunks (10 s at 48 kHz): a frame number
/// further on is an error, not a reason to write a huge file.
const MAX_GAP: u64 = 480_000;
/// Most samples a recording keeps (30 minutes at 48 kHz).
const MAX_SAMPLES: usize = 86_400_000;

/// One side's chunks by their first frame: (host µs of that frame, samples).
#[derive(Debug, Default)]
pub struct Tap {
    chunks: BTreeMap<u64, (u64, Vec<i16>)>,
    samples: usize,
}

impl Tap {
    /// Takes a chunk whose first sample is context frame `frame`, taken at host µs `us`.
    pub fn add(&mut self, frame: u64, us: u64, pcm: Vec<i16>) -> Result<()> {
        if self.samples + pcm.len() > MAX_SAMPLES {
            bail!("the audio recording is longer than {MAX_SAMPLES} samples");
        }
        self.samples += pcm.len();
        self.chunks.insert(frame, (us, pcm));
        Ok(())
    }

    /// The chunks as one recording from the first chunk's frame, gaps filled with silence
    /// and overlaps taken from the later chunk; its start in host µs. `None`: no chunk.
    pub fn assemble(&self) -> Result<Option<(u64, Vec<i16>)>> {
        let Some((&first, &(start_us, _))) = self.chunks.iter().next() else {
            return Ok(None);
        };
        let mut out: Vec<i16> = Vec::with_capacity(self.samples);
        for (&frame, (_, pcm)) in &self.chunks {
            let at = frame - first;
            if at > out.len() as u64 + MAX_GAP {
                bail!(
                    "a gap of {} samples in the audio recording",
                    at - out.len() as u64
                );
            }
            let at = at as usize;
            if at > out.len() {
                out.resize(at, 0);
            }
            out.truncate(at);
            out.extend_from_slice(pcm);
        }
        Ok(Some((start_us, out)))
    }
}

/// 16-bit little-endian PCM.
pub fn parse_pcm(body: &[u8]) -> Result<Vec<i16>> {
    if !body.len().is_multiple_of(2) {
        bail!(
            "audio chunk of {} bytes: 16-bit samples come in pairs",
            body.len()
        );
    }
    Ok(body
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect())
}

/// Both sides of a call's audio.
#[derive(Debug, Default)]
pub struct AudioTaps {
    /// The microphone's track at the sender.
    pub sent: Tap,
    /// The remote track as the receiving page played it.
    pub received: Tap,
}

/// What `audio.json` says: each recording's first sample's host time (µs) and its length.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AudioTapsRecord {
    /// Host µs of the sent recording's first sample.
    pub sent_start_us: u64,
    /// Its samples (48 kHz).
    pub sent_samples: u64,
    /// Host µs of the received recording's first sample.
    pub received_start_us: u64,
    /// Its samples (48 kHz).
    pub received_samples: u64,
}

/// File names in a call's folder.
pub const SENT_WAV: &str = "audio-sent.wav";
/// ...
pub const RECEIVED_WAV: &str = "audio-received.wav";
/// ...
pub const TAPS_JSON: &str = "audio.json";

impl AudioTaps {
    /// Writes both recordings and `audio.json` into `dir`; `None` (nothing written) unless
    /// both sides recorded something.
    pub fn write(&self, dir: &Path) -> Result<Option<AudioTapsRecord>> {
        let (Some((sent_start_us, sent)), Some((received_start_us, received))) =
            (self.sent.assemble()?, self.received.assemble()?)
        else {
            return Ok(None);
        };
        salsify_audio::write_wav(&dir.join(SENT_WAV), &sent)?;
        salsify_audio::write_wav(&dir.join(RECEIVED_WAV), &received)?;
        let record = AudioTapsRecord {
            sent_start_us,
            sent_samples: sent.len() as u64,
            received_start_us,
            received_samples: received.len() as u64,
        };
        let path = dir.join(TAPS_JSON);
        salsify_codec::output::write(&path, serde_json::to_string_pretty(&record)? + "\n")
            .with_context(|| format!("cannot write '{}'", path.display()))?;
        Ok(Some(record))
    }
}

/// The two recordings of a call in `dir` (written by [`AudioTaps::write`]), on the host
/// clock in seconds.
pub fn read_recordings(dir: &Path) -> Result<(Recording, Recording)> {
    let path = dir.join(TAPS_JSON);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let record: AudioTapsRecord =
        serde_json::from_str(&text).with_context(|| format!("'{}'", path.display()))?;
    let read = |name: &str, start_us: u64| -> Result<Recording> {
        Ok(Recording {
            samples: salsify_audio::read_wav(&dir.join(name))?,
            start_s: start_us as f64 / 1e6,
        })
    };
    Ok((
        read(SENT_WAV, record.sent_start_us)?,
        read(RECEIVED_WAV, record.received_start_us)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_out_of_order_make_one_recording_from_the_first() {
        let mut tap = Tap::default();
        tap.add(110, 2_000, vec![3, 4]).unwrap();
        tap.add(100, 1_000, vec![1, 2]).unwrap();
        // A chunk lost between 112 and 115.
        tap.add(115, 3_000, vec![5]).unwrap();
        let (start, samples) = tap.assemble().unwrap().unwrap();
        assert_eq!(start, 1_000);
        let mut expected = vec![1, 2];
        expected.extend([0; 8]);
        expected.extend([3, 4, 0, 0, 0, 5]);
        assert_eq!(samples, expected);
        assert!(Tap::default().assemble().unwrap().is_none());
    }

    #[test]
    fn a_frame_far_ahead_is_refused() {
        let mut tap = Tap::default();
        tap.add(0, 0, vec![1]).unwrap();
        tap.add(u64::MAX / 2, 0, vec![1]).unwrap();
        assert!(tap.assemble().is_err());
    }

    proptest::proptest! {
        /// Chunks at any frames and of any bodies (what a page may post) are assembled or
        /// refused, never a panic, and a recording never outgrows its gap limit.
        #[test]
        fn any_chunks_are_assembled_or_refused(
            chunks in proptest::collection::vec(
                (0u64..2_000_000, proptest::collection::vec(proptest::num::u8::ANY, 0..64)),
                0..12,
            ),
        ) {
            let mut tap = Tap::default();
            for (frame, body) in chunks {
                if let Ok(pcm) = parse_pcm(&body) {
                    tap.add(frame, frame, pcm).unwrap();
                }
            }
            if let Ok(Some((_, samples))) = tap.assemble() {
                proptest::prop_assert!(samples.len() as u64 <= 12 * (MAX_GAP + 64));
            }
        }
    }

    #[test]
    fn pcm_is_little_endian_pairs() {
        assert_eq!(parse_pcm(&[1, 0, 0xff, 0xff]).unwrap(), [1, -1]);
        assert!(parse_pcm(&[1]).is_err());
    }
}
