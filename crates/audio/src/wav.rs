//! WAV files in and out (`hound`): what the receiver played, and a file as a source.

use std::path::Path;

use crate::config::{AudioError, SAMPLE_RATE};

/// Writes mono 16-bit samples at [`SAMPLE_RATE`] to `path`.
pub fn write_wav(path: &Path, samples: &[i16]) -> Result<(), AudioError> {
    let err = |e: hound::Error| AudioError::Wav {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).map_err(err)?;
    for &s in samples {
        writer.write_sample(s).map_err(err)?;
    }
    writer.finalize().map_err(err)
}

/// A WAV file written as audio is played (mono 16-bit at [`SAMPLE_RATE`]), so a long call
/// never holds its samples in memory. [`WavSink::finish`] writes the lengths in the header.
pub struct WavSink {
    path: String,
    writer: hound::WavWriter<std::io::BufWriter<std::fs::File>>,
    samples: u64,
}

impl std::fmt::Debug for WavSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WavSink")
            .field("path", &self.path)
            .field("samples", &self.samples)
            .finish()
    }
}

impl WavSink {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> Result<Self, AudioError> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: SAMPLE_RATE,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let writer = hound::WavWriter::create(path, spec).map_err(|e| AudioError::Wav {
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        Ok(WavSink {
            path: path.display().to_string(),
            writer,
            samples: 0,
        })
    }

    /// Appends `samples`.
    pub fn write(&mut self, samples: &[i16]) -> Result<(), AudioError> {
        for &s in samples {
            self.writer.write_sample(s).map_err(|e| AudioError::Wav {
                path: self.path.clone(),
                why: e.to_string(),
            })?;
        }
        self.samples += samples.len() as u64;
        Ok(())
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Completes the header and closes the file.
    pub fn finish(self) -> Result<(), AudioError> {
        let path = self.path;
        self.writer.finalize().map_err(|e| AudioError::Wav {
            path,
            why: e.to_string(),
        })
    }
}

/// Reads a WAV file at [`SAMPLE_RATE`] as mono 16-bit samples: integer or float samples of
/// any width, channels averaged. Another sample rate is refused (convert it first, e.g.
/// `ffmpeg -i IN -ar 48000 OUT.wav`).
pub fn read_wav(path: &Path) -> Result<Vec<i16>, AudioError> {
    let err = |why: String| AudioError::Wav {
        path: path.display().to_string(),
        why,
    };
    let mut reader = hound::WavReader::open(path).map_err(|e| err(e.to_string()))?;
    let spec = reader.spec();
    if spec.sample_rate != SAMPLE_RATE {
        return Err(err(format!(
            "{} Hz; {SAMPLE_RATE} Hz is needed (ffmpeg -i IN -ar {SAMPLE_RATE} OUT.wav)",
            spec.sample_rate
        )));
    }
    let channels = usize::from(spec.channels.max(1));
    let values: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader
            .samples::<f32>()
            .map(|s| s.map(|v| v * 32_767.0))
            .collect::<Result<_, _>>(),
        hound::SampleFormat::Int => {
            let scale = 2f32.powi(16 - i32::from(spec.bits_per_sample));
            reader
                .samples::<i32>()
                .map(|s| s.map(|v| v as f32 * scale))
                .collect::<Result<_, _>>()
        }
    }
    .map_err(|e| err(e.to_string()))?;
    Ok(values
        .chunks(channels)
        .map(|c| (c.iter().sum::<f32>() / c.len() as f32).clamp(-32_768.0, 32_767.0) as i16)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_survive_a_file() {
        let path =
            std::env::temp_dir().join(format!("salsify-audio-wav-{}.wav", std::process::id()));
        let samples: Vec<i16> = (0..4_800)
            .map(|i| (i * 7 % 30_000) as i16 - 15_000)
            .collect();
        write_wav(&path, &samples).unwrap();
        assert_eq!(read_wav(&path).unwrap(), samples);
        std::fs::remove_file(&path).ok();
        let missing = read_wav(Path::new("/nonexistent/x.wav")).unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/x.wav"),
            "{missing}"
        );
    }

    #[test]
    fn a_sink_writes_what_it_is_given_in_pieces() {
        let path =
            std::env::temp_dir().join(format!("salsify-audio-sink-{}.wav", std::process::id()));
        let samples: Vec<i16> = (0..3_000).map(|i| (i * 13 % 20_000) as i16).collect();
        let mut sink = WavSink::create(&path).unwrap();
        for piece in samples.chunks(960) {
            sink.write(piece).unwrap();
        }
        assert_eq!(sink.samples(), 3_000);
        sink.finish().unwrap();
        assert_eq!(read_wav(&path).unwrap(), samples);
        std::fs::remove_file(&path).ok();
        assert!(WavSink::create(Path::new("/nonexistent/dir/x.wav")).is_err());
    }

    #[test]
    fn another_rate_is_refused_with_advice() {
        let path =
            std::env::temp_dir().join(format!("salsify-audio-8k-{}.wav", std::process::id()));
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 8_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        w.write_sample(1i16).unwrap();
        w.write_sample(1i16).unwrap();
        w.finalize().unwrap();
        let e = read_wav(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).ok();
        assert!(e.contains("8000 Hz") && e.contains("ffmpeg"), "{e}");
    }
}
