//! Carries out the sender's encode requests with the real codec.
//!
//! Salsify-2c encodes its two options on two cores; Salsify-1c one after the other. The
//! simulator charges virtual time for either ([`Parallelism::encode_time`]); the real work
//! always uses two threads when there are two encodes, since each option has its own encoder
//! instance (so each instance sees the same sequence of calls whatever the threads do, and
//! the output stays deterministic).

use salsify_codec::{CodecError, EncodedFrame, Encoder, EncoderConfig, Image, Quality, State};
use salsify_time::Duration;
use salsify_transport::{EncodeJob, EncodeRequest};
use serde::{Deserialize, Serialize};

use super::cost::CostModel;

/// How the sender's encodes share cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Parallelism {
    /// Salsify-1c: encodes in series on one core.
    Serial,
    /// Salsify-2c: the two options encoded at once on two cores.
    Parallel,
}

impl Parallelism {
    /// Virtual time for `encodes` encodes of a `width` x `height` picture.
    pub fn encode_time(self, cost: &CostModel, width: u32, height: u32, encodes: u32) -> Duration {
        let one = cost.encode(width, height);
        match self {
            Parallelism::Serial => one * encodes,
            Parallelism::Parallel => one * encodes.div_ceil(2),
        }
    }
}

/// The encoders of one simulated sender.
pub struct EncodeWorker {
    encoders: [Encoder; 2],
    predictor: QualityPredictor,
}

/// What one request produced, and how many encoder runs it took (for the time model).
pub struct EncodeResult {
    /// The frames, in the order the job listed them.
    pub frames: Vec<EncodedFrame>,
    /// Full-size encodes done, plus prediction work in full-size-encode equivalents.
    pub encode_equivalents: f64,
}

impl EncodeWorker {
    /// Encoders for `width` x `height` pictures at libvpx speed `cpu_used`.
    pub fn new(width: u32, height: u32, cpu_used: i32) -> Result<Self, CodecError> {
        let config = EncoderConfig {
            cpu_used,
            ..EncoderConfig::new(width, height)
        };
        Ok(EncodeWorker {
            encoders: [Encoder::with_config(config)?, Encoder::with_config(config)?],
            predictor: QualityPredictor::new(width, height, cpu_used)?,
        })
    }

    /// Encodes `image` as `request` asks.
    pub fn run(
        &mut self,
        request: &EncodeRequest<State>,
        image: &Image,
    ) -> Result<EncodeResult, CodecError> {
        let source = &request.source;
        match &request.job {
            EncodeJob::Qualities(qualities) => {
                let frames = match qualities.as_slice() {
                    [a, b] => {
                        let [e0, e1] = &mut self.encoders;
                        let (fa, fb) = std::thread::scope(|s| {
                            let other = s.spawn(|| e1.encode(source, image, *b));
                            let first = e0.encode(source, image, *a);
                            (first, other.join().expect("encoder thread panicked"))
                        });
                        vec![fa?, fb?]
                    }
                    qs => qs
                        .iter()
                        .map(|&q| self.encoders[0].encode(source, image, q))
                        .collect::<Result<_, _>>()?,
                };
                let encode_equivalents = frames.len() as f64;
                Ok(EncodeResult {
                    frames,
                    encode_equivalents,
                })
            }
            EncodeJob::SizeTarget { bytes, hint } => {
                let (quality, trials) = self.predictor.predict(image, *bytes, *hint)?;
                let frame = self.encoders[0].encode(source, image, quality)?;
                Ok(EncodeResult {
                    frames: vec![frame],
                    // Each trial codes 1/16 of the picture.
                    encode_equivalents: 1.0 + f64::from(trials) / 16.0,
                })
            }
        }
    }
}

/// The paper's "conventional codec" ablation: predict, before encoding, the quantizer that
/// makes a frame of a target size, by binary search over encodes of a 1/16-area (quarter
/// width and height) copy of the picture.
///
/// The small encoder keeps its own stream: each trial encodes from the small state reached by
/// the previous prediction, and the chosen trial's state becomes the next one, so its inter
/// frames predict from a picture like the full encoder's.
struct QualityPredictor {
    encoder: Encoder,
    state: State,
    size: (u32, u32),
}

impl QualityPredictor {
    fn new(width: u32, height: u32, cpu_used: i32) -> Result<Self, CodecError> {
        let size = (even_quarter(width), even_quarter(height));
        let config = EncoderConfig {
            cpu_used,
            ..EncoderConfig::new(size.0, size.1)
        };
        Ok(QualityPredictor {
            encoder: Encoder::with_config(config)?,
            state: State::initial(),
            size,
        })
    }

    /// The finest quantizer whose predicted full-size frame fits `bytes`, and the trials made.
    fn predict(
        &mut self,
        image: &Image,
        bytes: usize,
        hint: Quality,
    ) -> Result<(Quality, u32), CodecError> {
        let small = decimate(image, self.size)?;
        let (mut lo, mut hi) = (0u8, 127u8); // invariant: hi fits or is the coarsest
        let mut trials = 0;
        let mut best: Option<(u8, State)> = None;
        let mut probe = hint.index();
        while lo < hi {
            let frame = self
                .encoder
                .encode(&self.state, &small, Quality::new(probe)?)?;
            trials += 1;
            if frame.len() * 16 <= bytes {
                hi = probe;
                best = Some((probe, frame.target));
            } else {
                lo = probe + 1;
            }
            probe = lo + (hi - lo) / 2;
        }
        let chosen = match best {
            Some((q, state)) if q == hi => {
                self.state = state;
                q
            }
            _ => {
                let frame = self
                    .encoder
                    .encode(&self.state, &small, Quality::new(hi)?)?;
                trials += 1;
                self.state = frame.target;
                hi
            }
        };
        Ok((Quality::new(chosen)?, trials))
    }
}

/// A quarter of `n`, rounded down to an even number of at least 2.
fn even_quarter(n: u32) -> u32 {
    (n / 4).max(2) & !1
}

/// Area-averages `image` down to `size` (each output sample averages its source block).
fn decimate(image: &Image, size: (u32, u32)) -> Result<Image, CodecError> {
    let mut out = Image::new(size.0, size.1)?;
    for id in salsify_codec::PlaneId::ALL {
        let src = image.plane(id);
        let dst = out.plane_mut(id);
        let (sx, sy) = (src.width() / dst.width(), src.height() / dst.height());
        for y in 0..dst.height() {
            for x in 0..dst.width() {
                let mut sum = 0u32;
                for row in src.rows().skip(y * sy).take(sy) {
                    sum += row[x * sx..(x + 1) * sx]
                        .iter()
                        .map(|&v| u32::from(v))
                        .sum::<u32>();
                }
                dst.row_mut(y)[x] = (sum / (sx * sy) as u32) as u8;
            }
        }
    }
    out.extend_edges();
    Ok(out)
}

/// An [`EncodeWorker`] on its own thread, so the simulator can decode and score pictures
/// while encodes run (the results are the same whatever the timing: each encoder instance
/// sees the same calls in the same order).
pub struct BackgroundEncoder {
    jobs: std::sync::mpsc::Sender<(EncodeRequest<State>, std::sync::Arc<Image>)>,
    results: std::sync::mpsc::Receiver<Result<EncodeResult, CodecError>>,
    busy: bool,
    /// A result already collected, handed out by the next [`Self::wait`].
    ready: Option<EncodeResult>,
}

impl BackgroundEncoder {
    /// Moves `worker` to a new thread.
    pub fn new(mut worker: EncodeWorker) -> Self {
        let (jobs, job_rx) =
            std::sync::mpsc::channel::<(EncodeRequest<State>, std::sync::Arc<Image>)>();
        let (result_tx, results) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (request, image) in job_rx {
                if result_tx.send(worker.run(&request, &image)).is_err() {
                    break;
                }
            }
        });
        BackgroundEncoder {
            jobs,
            results,
            busy: false,
            ready: None,
        }
    }

    /// Starts a job; at most one runs at a time.
    pub fn submit(&mut self, request: EncodeRequest<State>, image: std::sync::Arc<Image>) {
        assert!(!self.busy && self.ready.is_none(), "one encode at a time"); // a simulator bug
        self.busy = self.jobs.send((request, image)).is_ok();
    }

    /// Keeps a result collected early, for the next [`Self::wait`].
    pub fn submit_ready(&mut self, result: EncodeResult) {
        self.ready = Some(result);
    }

    /// Waits for the job started last.
    pub fn wait(&mut self) -> Result<EncodeResult, CodecError> {
        if let Some(result) = self.ready.take() {
            return Ok(result);
        }
        self.busy = false;
        self.results.recv().unwrap_or_else(|_| {
            Err(CodecError::InvalidInput(
                "the encoder thread stopped".into(),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::SyntheticSource;
    use salsify_time::Instant;

    #[test]
    fn serial_time_adds_parallel_time_overlaps() {
        let cost = CostModel {
            encode_us_per_megapixel: 1000.0,
            decode_us_per_megapixel: 0.0,
        };
        let one = Duration::from_millis(1);
        assert_eq!(
            Parallelism::Serial.encode_time(&cost, 1000, 1000, 2),
            one * 2
        );
        assert_eq!(Parallelism::Parallel.encode_time(&cost, 1000, 1000, 2), one);
        assert_eq!(Parallelism::Parallel.encode_time(&cost, 1000, 1000, 1), one);
    }

    #[test]
    fn predicted_quality_tracks_the_size_target() {
        let mut source = SyntheticSource::new(160, 96, 30, 5).unwrap();
        let mut worker = EncodeWorker::new(160, 96, -8).unwrap();
        let hint = Quality::new(64).unwrap();
        let mut sizes = Vec::new();
        for target in [400usize, 4000, 40000] {
            let request = EncodeRequest {
                id: 0,
                picture: 0,
                captured: Instant::ZERO,
                source: State::initial(),
                job: EncodeJob::SizeTarget {
                    bytes: target,
                    hint,
                },
            };
            let image = source.next_frame().image;
            let result = worker.run(&request, &image).unwrap();
            sizes.push((target, result.frames[0].quality.index()));
        }
        // A larger target never gets a coarser quantizer.
        assert!(
            sizes[0].1 >= sizes[1].1 && sizes[1].1 >= sizes[2].1,
            "{sizes:?}"
        );
        assert!(sizes[0].1 > sizes[2].1, "{sizes:?}");
    }

    #[test]
    fn decimation_averages_blocks() {
        let mut img = Image::new(8, 8).unwrap();
        for y in 0..8 {
            for (x, s) in img
                .plane_mut(salsify_codec::PlaneId::Y)
                .row_mut(y)
                .iter_mut()
                .enumerate()
            {
                *s = if x < 4 { 0 } else { 200 };
            }
        }
        let small = decimate(&img, (2, 2)).unwrap();
        assert_eq!(small.y().row(0), &[0, 200]);
        assert_eq!(small.y().row(1), &[0, 200]);
    }
}
