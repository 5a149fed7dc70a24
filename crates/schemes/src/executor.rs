//! Carries out encode requests with the real codec, for any scheme: the functional encoder
//! (two instances, so Salsify's two options can run at once), the size-target predictor of
//! the conventional-codec ablation, the quantizer search of the oracle, and libvpx's CBR
//! encoder (re-opened when a job names another picture size or other settings).
//!
//! The simulator and the real-time runtime both use it; the simulator charges [`Work`]
//! through its cost model, the runtime simply takes the time.

use std::sync::mpsc;
use std::sync::Arc;

use salsify_codec::{
    halved_size, scale, search, CbrConfig, CbrEncoder, CodecError, Encoder, EncoderConfig,
    FunctionalCodec, FunctionalEncoder, Image, PlaneId, Quality, State,
};
use salsify_endpoint::{CbrJob, EncodeJob, EncodeKind, EncodeOutcome, EncodeRequest};

/// How much encoding a job took, for a time model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    /// Whole encodes of a `width` x `height` picture; `parallel`: they ran at once on two cores.
    Encodes {
        /// How many.
        count: u32,
        /// In parallel (two at a time) rather than one after the other.
        parallel: bool,
        /// Picture width encoded.
        width: u32,
        /// Picture height encoded.
        height: u32,
    },
    /// Full-size-encode equivalents (prediction work counts in fractions).
    Equivalents {
        /// How many.
        count: f64,
        /// Picture width.
        width: u32,
        /// Picture height.
        height: u32,
    },
}

/// What a job produced and what it cost.
#[derive(Debug)]
pub struct Executed {
    /// The frames.
    pub outcome: EncodeOutcome,
    /// The work done.
    pub work: Work,
}

/// The encoders of one sender, for pictures of one source size, for the kinds of job its
/// scheme declared.
pub struct Executor {
    size: (u32, u32),
    fps: f64,
    cpu_used: i32,
    /// The functional codec of the functional pairs.
    codec: FunctionalCodec,
    /// The kinds of job the scheme declared; any other is refused.
    jobs: Vec<EncodeKind>,
    /// The functional pair at the source size, opened when a declared kind needs it.
    functional: Option<[FunctionalEncoder; 2]>,
    /// The functional pair for a smaller picture size (a resolution step), opened on the
    /// first job at that size and re-opened when the size changes.
    halved: Option<HalvedEncoders>,
    predictor: Option<QualityPredictor>,
    cbr: Option<CbrStream>,
}

/// Functional encoders for pictures scaled down to `size`, and the last picture scaled (the
/// coarsest-quality re-encode of a picture needs it again).
struct HalvedEncoders {
    size: (u32, u32),
    encoders: [FunctionalEncoder; 2],
    scaled: Option<(u64, Image)>,
}

/// libvpx's CBR encoder as the last job set it up.
struct CbrStream {
    encoder: CbrEncoder,
    settings: salsify_endpoint::CbrSettings,
    applied: salsify_time::Bitrate,
}

impl Executor {
    /// Encoders for `width` x `height` pictures captured at `fps`, at libvpx speed `cpu_used`,
    /// for jobs of the kinds in `jobs` (the scheme's [`crate::Scheme::encode_jobs`]): the
    /// functional pair is opened now if any of them needs it, the CBR encoder on its first job.
    pub fn new(
        width: u32,
        height: u32,
        fps: f64,
        cpu_used: i32,
        jobs: &[EncodeKind],
    ) -> Result<Self, CodecError> {
        Self::for_codec(FunctionalCodec::Vp8, width, height, fps, cpu_used, jobs)
    }

    /// [`Executor::new`] with the functional pairs on `codec` (the scheme's
    /// [`crate::Scheme::codec`]); `cpu_used` stays libvpx's, for VP8 and the CBR encoder.
    /// The size-target prediction and the quantizer search are VP8's only.
    pub fn for_codec(
        codec: FunctionalCodec,
        width: u32,
        height: u32,
        fps: f64,
        cpu_used: i32,
        jobs: &[EncodeKind],
    ) -> Result<Self, CodecError> {
        let open = || FunctionalEncoder::new(codec, width, height, cpu_used);
        let functional = match jobs.iter().any(|k| k.is_functional()) {
            true => Some([open()?, open()?]),
            false => None,
        };
        Ok(Executor {
            size: (width, height),
            fps,
            cpu_used,
            codec,
            jobs: jobs.to_vec(),
            functional,
            halved: None,
            predictor: None,
            cbr: None,
        })
    }

    /// The work a job for a `width` x `height` source will take, when that is known before it
    /// runs (all but the size-target prediction, whose trials vary), so a simulator may run
    /// it in the background.
    pub fn work_for(job: &EncodeJob, width: u32, height: u32) -> Option<Work> {
        match job {
            EncodeJob::Qualities {
                qualities,
                parallel,
                halvings,
                ..
            } => {
                let (width, height) = halved_size(width, height, *halvings);
                Some(Work::Encodes {
                    count: qualities.len() as u32,
                    parallel: *parallel,
                    width,
                    height,
                })
            }
            EncodeJob::FinestFitting { halvings, .. } => {
                let (width, height) = halved_size(width, height, *halvings);
                Some(Work::Encodes {
                    count: 1,
                    parallel: false,
                    width,
                    height,
                })
            }
            EncodeJob::Cbr(job) => Some(Work::Encodes {
                count: 1,
                parallel: false,
                width: job.width,
                height: job.height,
            }),
            _ => None,
        }
    }

    /// Encodes `image` (at the source size) as `request` asks.
    pub fn run(&mut self, request: &EncodeRequest, image: &Image) -> Result<Executed, CodecError> {
        let (width, height) = self.size;
        let kind = request.job.kind();
        let undeclared = || {
            CodecError::InvalidInput(format!(
                "a {kind:?} encode job, which the sender's scheme did not declare"
            ))
        };
        if !self.jobs.contains(&kind) {
            return Err(undeclared());
        }
        // Declared functional kinds opened the pair in `new`.
        let functional = self.functional.as_mut();
        match &request.job {
            EncodeJob::Qualities {
                source,
                qualities,
                parallel,
                halvings,
            } => {
                let (width, height) = halved_size(width, height, *halvings);
                let frames = if (width, height) == self.size {
                    let [e0, e1] = functional.ok_or_else(undeclared)?;
                    encode_qualities([e0, e1], source, image, qualities, *parallel)?
                } else {
                    self.encode_halved(
                        request,
                        (width, height),
                        source,
                        image,
                        qualities,
                        *parallel,
                    )?
                };
                let work = Work::Encodes {
                    count: frames.len() as u32,
                    parallel: *parallel,
                    width,
                    height,
                };
                Ok(Executed {
                    outcome: EncodeOutcome::Functional(frames),
                    work,
                })
            }
            EncodeJob::SizeTarget {
                source,
                bytes,
                hint,
            } => {
                let predictor = match &mut self.predictor {
                    Some(p) => p,
                    None => {
                        self.predictor
                            .insert(QualityPredictor::new(width, height, self.cpu_used)?)
                    }
                };
                let (quality, trials) = predictor.predict(image, *bytes, *hint)?;
                let [e0, _] = self.functional.as_mut().ok_or_else(undeclared)?;
                let frame = vp8_only(e0)?.encode(source, image, quality)?;
                Ok(Executed {
                    outcome: EncodeOutcome::Functional(vec![frame]),
                    // Each trial codes 1/16 of the picture.
                    work: Work::Equivalents {
                        count: 1.0 + f64::from(trials) / 16.0,
                        width,
                        height,
                    },
                })
            }
            EncodeJob::FinestFitting {
                source,
                bytes,
                start,
                halvings,
            } => {
                let (width, height) = halved_size(width, height, *halvings);
                let frame = if (width, height) == self.size {
                    let [e0, _] = functional.ok_or_else(undeclared)?;
                    search::finest_fitting(vp8_only(e0)?, source, image, *bytes, *start)?
                } else {
                    let ([e0, _], picture) = self.halved(request, (width, height), image)?;
                    search::finest_fitting(vp8_only(e0)?, source, picture, *bytes, *start)?
                };
                Ok(Executed {
                    outcome: EncodeOutcome::Functional(frame.into_iter().collect()),
                    work: Work::Encodes {
                        count: 1,
                        parallel: false,
                        width,
                        height,
                    },
                })
            }
            EncodeJob::Cbr(job) => {
                let frame = self.encode_cbr(job, request, image)?;
                Ok(Executed {
                    outcome: EncodeOutcome::Cbr(frame),
                    work: Work::Encodes {
                        count: 1,
                        parallel: false,
                        width: job.width,
                        height: job.height,
                    },
                })
            }
            other => Err(CodecError::InvalidInput(format!(
                "no encoder for the job {other:?}"
            ))),
        }
    }

    /// [`encode_qualities`] on the pair for `size`.
    fn encode_halved(
        &mut self,
        request: &EncodeRequest,
        size: (u32, u32),
        source: &State,
        image: &Image,
        qualities: &[Quality],
        parallel: bool,
    ) -> Result<Vec<salsify_codec::EncodedFrame>, CodecError> {
        let ([e0, e1], picture) = self.halved(request, size, image)?;
        encode_qualities([e0, e1], source, picture, qualities, parallel)
    }

    /// The functional pair for `size` (opened, or re-opened, for it) and the request's
    /// picture scaled down to it (once per picture).
    fn halved(
        &mut self,
        request: &EncodeRequest,
        size: (u32, u32),
        image: &Image,
    ) -> Result<(&mut [FunctionalEncoder; 2], &Image), CodecError> {
        if self.halved.as_ref().is_none_or(|h| h.size != size) {
            let open = || FunctionalEncoder::new(self.codec, size.0, size.1, self.cpu_used);
            self.halved = Some(HalvedEncoders {
                size,
                encoders: [open()?, open()?],
                scaled: None,
            });
        }
        let halved = self.halved.as_mut().expect("opened above");
        if halved
            .scaled
            .as_ref()
            .is_none_or(|(p, _)| *p != request.picture)
        {
            halved.scaled = Some((request.picture, scale(image, size.0, size.1)?));
        }
        let HalvedEncoders {
            encoders, scaled, ..
        } = halved;
        let (_, picture) = scaled.as_ref().expect("scaled above");
        Ok((encoders, picture))
    }

    fn encode_cbr(
        &mut self,
        job: &CbrJob,
        request: &EncodeRequest,
        image: &Image,
    ) -> Result<Option<salsify_codec::CbrFrame>, CodecError> {
        let (w, h) = (job.width, job.height);
        let reopen = self
            .cbr
            .as_ref()
            .is_none_or(|s| s.encoder.size() != (w, h) || s.settings != job.settings);
        if reopen {
            let config = CbrConfig {
                cpu_used: self.cpu_used,
                max_fps: self.fps.round().max(1.0) as u32,
                dropframe_thresh: job.settings.dropframe_thresh,
                max_gap_frames: job.settings.max_gap_frames,
                ..CbrConfig::default()
            };
            self.cbr = Some(CbrStream {
                encoder: CbrEncoder::new(w, h, config)?,
                settings: job.settings,
                applied: salsify_time::Bitrate::ZERO,
            });
        }
        let stream = self.cbr.as_mut().expect("opened above");
        if stream.applied != job.target || reopen {
            let kbps = u32::try_from(job.target.as_kbps()).unwrap_or(u32::MAX);
            stream.encoder.set_target_bitrate(kbps)?;
            stream.applied = job.target;
        }
        let scaled;
        let picture = if (w, h) == (image.width(), image.height()) {
            image
        } else {
            scaled = scale(image, w, h)?;
            &scaled
        };
        stream
            .encoder
            .encode(picture, request.captured.as_micros(), job.keyframe)
    }
}

/// The VP8 encoder of a pair, for the jobs only VP8 does.
fn vp8_only(encoder: &mut FunctionalEncoder) -> Result<&mut Encoder, CodecError> {
    let codec = encoder.codec();
    encoder.vp8().ok_or_else(|| {
        CodecError::InvalidInput(format!(
            "this encode job runs on VP8 only, not on the call's codec {codec}"
        ))
    })
}

/// One frame per quality. Two options go to two encoder instances, one each, whether they
/// run at once on two threads (`parallel`) or one after the other, so each instance sees
/// the same calls in the same order and the frames do not depend on the threads.
fn encode_qualities(
    [e0, e1]: [&mut FunctionalEncoder; 2],
    source: &State,
    image: &Image,
    qualities: &[Quality],
    parallel: bool,
) -> Result<Vec<salsify_codec::EncodedFrame>, CodecError> {
    match qualities {
        [a, b] if !parallel => Ok(vec![
            e0.encode(source, image, *a)?,
            e1.encode(source, image, *b)?,
        ]),
        [a, b] => {
            let (fa, fb) = std::thread::scope(|s| {
                let other = s.spawn(|| e1.encode(source, image, *b));
                let first = e0.encode(source, image, *a);
                let second = other.join().unwrap_or_else(|_| {
                    Err(CodecError::InvalidInput(
                        "the encoder thread panicked".into(),
                    ))
                });
                (first, second)
            });
            Ok(vec![fa?, fb?])
        }
        qs => qs.iter().map(|&q| e0.encode(source, image, q)).collect(),
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
            // After a miss at the coarsest index lo passes hi: the loop ends.
            probe = lo.saturating_add(hi.saturating_sub(lo) / 2);
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
    for id in PlaneId::ALL {
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

impl Executed {
    /// The bytes whose coding took time one after the other: the largest frame of encodes
    /// that ran in parallel, all of them otherwise (what a cost per byte applies to).
    pub fn serial_bytes(&self) -> usize {
        let parallel = matches!(self.work, Work::Encodes { parallel: true, .. });
        match &self.outcome {
            EncodeOutcome::Functional(frames) => {
                let sizes = frames.iter().map(|f| f.bytes.len());
                match parallel {
                    true => sizes.max().unwrap_or(0),
                    false => sizes.sum(),
                }
            }
            EncodeOutcome::Cbr(frame) => frame.as_ref().map_or(0, |f| f.data.len()),
            _ => 0,
        }
    }
}

/// An [`Executor`] on its own thread, so a driver can do other work (decode, score, handle
/// feedback) while an encode runs.
pub struct BackgroundExecutor {
    jobs: mpsc::Sender<(EncodeRequest, Arc<Image>)>,
    results: mpsc::Receiver<Result<Executed, CodecError>>,
    pending: usize,
    /// A result already collected, handed out by the next [`Self::wait`].
    kept: Option<Executed>,
}

impl BackgroundExecutor {
    /// Moves `executor` to a new thread.
    pub fn new(mut executor: Executor) -> Self {
        let (jobs, job_rx) = mpsc::channel::<(EncodeRequest, Arc<Image>)>();
        let (result_tx, results) = mpsc::channel();
        std::thread::Builder::new()
            .name("encoder".into())
            .spawn(move || {
                for (request, image) in job_rx {
                    if result_tx.send(executor.run(&request, &image)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| eprintln!("salsify: cannot start the encoder thread: {e}"))
            .ok();
        BackgroundExecutor {
            jobs,
            results,
            pending: 0,
            kept: None,
        }
    }

    /// Starts a job; results come back in order.
    pub fn submit(&mut self, request: EncodeRequest, image: Arc<Image>) {
        if self.jobs.send((request, image)).is_ok() {
            self.pending += 1;
        }
    }

    /// Keeps a result collected early, for the next [`Self::wait`].
    pub fn keep(&mut self, result: Executed) {
        self.kept = Some(result);
    }

    /// The result kept by [`Self::keep`], else waits for the oldest job still running.
    pub fn wait(&mut self) -> Result<Executed, CodecError> {
        if let Some(result) = self.kept.take() {
            return Ok(result);
        }
        if self.pending == 0 {
            return Err(CodecError::InvalidInput("no encode is running".into()));
        }
        self.pending -= 1;
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
    use salsify_endpoint::CbrSettings;
    use salsify_time::{Bitrate, Instant};

    fn request(job: EncodeJob) -> EncodeRequest {
        EncodeRequest {
            id: 0,
            picture: 0,
            captured: Instant::ZERO,
            job,
        }
    }

    #[test]
    fn predicted_quality_tracks_the_size_target() {
        let mut source = SyntheticSource::new(160, 96, 30, 5).unwrap();
        let mut ex = Executor::new(160, 96, 30.0, -8, &[EncodeKind::SizeTarget]).unwrap();
        let hint = Quality::new(64).unwrap();
        let mut sizes = Vec::new();
        for target in [400usize, 4000, 40000] {
            let job = EncodeJob::SizeTarget {
                source: State::initial(),
                bytes: target,
                hint,
            };
            let image = source.next_frame().image;
            let out = ex.run(&request(job), &image).unwrap();
            let EncodeOutcome::Functional(frames) = out.outcome else {
                panic!("functional job")
            };
            sizes.push((target, frames[0].quality.index()));
        }
        // A larger target never gets a coarser quantizer.
        assert!(
            sizes[0].1 >= sizes[1].1 && sizes[1].1 >= sizes[2].1,
            "{sizes:?}"
        );
        assert!(sizes[0].1 > sizes[2].1, "{sizes:?}");
    }

    /// A size target no frame can meet, from the coarsest hint, once overflowed the search.
    #[test]
    fn predictor_survives_an_impossible_target_from_the_coarsest_hint() {
        let source = SyntheticSource::new(160, 96, 30, 5).unwrap();
        let mut ex = Executor::new(160, 96, 30.0, -8, &[EncodeKind::SizeTarget]).unwrap();
        let job = EncodeJob::SizeTarget {
            source: State::initial(),
            bytes: 0,
            hint: Quality::WORST,
        };
        let out = ex.run(&request(job), &source.frame(0)).unwrap();
        let EncodeOutcome::Functional(frames) = out.outcome else {
            panic!("functional job")
        };
        assert_eq!(frames[0].quality, Quality::WORST);
    }

    #[test]
    fn cbr_jobs_follow_the_size_they_name() {
        let source = SyntheticSource::new(320, 180, 30, 5).unwrap();
        let mut ex = Executor::new(320, 180, 30.0, -8, &[EncodeKind::Cbr]).unwrap();
        let settings = CbrSettings {
            dropframe_thresh: 0,
            max_gap_frames: 0,
        };
        let mut sizes = Vec::new();
        for (i, (w, h)) in [(320, 180), (320, 180), (160, 90)].into_iter().enumerate() {
            let job = EncodeJob::Cbr(CbrJob {
                target: Bitrate::kbps(500),
                keyframe: i == 0,
                width: w,
                height: h,
                settings,
            });
            let mut req = request(job);
            req.captured = Instant::from_millis(33 * i as u64);
            let out = ex.run(&req, &source.frame(i as u64)).unwrap();
            let EncodeOutcome::Cbr(Some(frame)) = out.outcome else {
                panic!("a frame")
            };
            let mut d = salsify_codec::PlainDecoder::new(w, h).unwrap();
            if frame.keyframe {
                sizes.push(
                    d.decode(&frame.data)
                        .map(|p| (p.width(), p.height()))
                        .unwrap(),
                );
            }
        }
        // The first frame and the first at the new size are keyframes of their size.
        assert_eq!(sizes, vec![(320, 180), (160, 90)]);
    }

    /// The oracle's search at half the width and height: a keyframe at that size from a
    /// state of another size, then inter frames from its state; back at the source size a
    /// keyframe again. The work charged is the size coded.
    #[test]
    fn finest_fitting_codes_the_size_it_names() {
        let source = SyntheticSource::new(160, 96, 30, 5).unwrap();
        let mut ex = Executor::new(160, 96, 30.0, -8, &[EncodeKind::FinestFitting]).unwrap();
        let mut state = State::initial();
        let mut seen = Vec::new();
        for (i, halvings) in [1u8, 1, 0, 0].into_iter().enumerate() {
            let job = EncodeJob::FinestFitting {
                source: state.clone(),
                bytes: 100_000,
                start: Quality::new(64).unwrap(),
                halvings,
            };
            let expected = Executor::work_for(&job, 160, 96);
            let mut req = request(job);
            req.picture = i as u64;
            let out = ex.run(&req, &source.frame(i as u64)).unwrap();
            assert_eq!(Some(out.work), expected);
            let EncodeOutcome::Functional(mut frames) = out.outcome else {
                panic!("functional job")
            };
            let frame = frames.pop().expect("a frame fits 100 kB");
            let Work::Encodes { width, height, .. } = out.work else {
                panic!("{:?}", out.work)
            };
            assert_eq!(frame.target.size(), Some((width, height)));
            seen.push((width, height, frame.keyframe));
            state = frame.target;
        }
        assert_eq!(
            seen,
            [
                (80, 48, true),
                (80, 48, false),
                (160, 96, true),
                (160, 96, false)
            ]
        );
    }

    /// A job of a kind the scheme did not declare fails (the picture is dropped), and a
    /// scheme that declared only CBR jobs gets no functional encoders.
    #[test]
    fn jobs_of_undeclared_kinds_are_refused() {
        let image = SyntheticSource::new(160, 96, 30, 5).unwrap().frame(0);
        let mut ex = Executor::new(160, 96, 30.0, -8, &[EncodeKind::Cbr]).unwrap();
        assert!(
            ex.functional.is_none(),
            "no functional pair for a CBR scheme"
        );
        let qualities = request(EncodeJob::Qualities {
            source: State::initial(),
            qualities: vec![Quality::new(40).unwrap()],
            parallel: false,
            halvings: 0,
        });
        let err = ex.run(&qualities, &image).unwrap_err().to_string();
        assert!(
            err.contains("Qualities") && err.contains("did not declare"),
            "{err}"
        );
        let mut ex = Executor::new(160, 96, 30.0, -8, &[EncodeKind::Qualities]).unwrap();
        assert!(ex.run(&qualities, &image).is_ok());
        let target = request(EncodeJob::SizeTarget {
            source: State::initial(),
            bytes: 1000,
            hint: Quality::new(40).unwrap(),
        });
        assert!(ex.run(&target, &image).is_err());
    }

    /// On AV1 the functional pair codes AV1 frames at the quantizers asked for (AV1's
    /// scale), at the source size and a step down; the VP8-only jobs are refused.
    #[test]
    fn an_av1_executor_codes_av1_frames() {
        let image = SyntheticSource::new(160, 96, 30, 5).unwrap().frame(0);
        let jobs = [EncodeKind::Qualities, EncodeKind::SizeTarget];
        let mut ex = Executor::for_codec(FunctionalCodec::Av1, 160, 96, 30.0, -8, &jobs).unwrap();
        for halvings in [0, 1] {
            let job = request(EncodeJob::Qualities {
                source: State::initial(),
                qualities: vec![Quality::new(20).unwrap(), Quality::new(40).unwrap()],
                parallel: true,
                halvings,
            });
            let EncodeOutcome::Functional(frames) = ex.run(&job, &image).unwrap().outcome else {
                panic!("functional job")
            };
            for (frame, q) in frames.iter().zip([20, 40]) {
                assert_eq!(
                    FunctionalCodec::of_frame(&frame.bytes),
                    FunctionalCodec::Av1
                );
                assert_eq!(frame.quality.index(), q);
                assert_eq!(frame.target.size(), Some(halved_size(160, 96, halvings)));
            }
            assert!(frames[0].len() > frames[1].len(), "finer codes more");
        }
        let target = request(EncodeJob::SizeTarget {
            source: State::initial(),
            bytes: 1000,
            hint: Quality::new(40).unwrap(),
        });
        let err = ex.run(&target, &image).unwrap_err().to_string();
        assert!(err.contains("VP8 only"), "{err}");
    }

    #[test]
    fn decimation_averages_blocks() {
        let mut img = Image::new(8, 8).unwrap();
        for y in 0..8 {
            for (x, s) in img.plane_mut(PlaneId::Y).row_mut(y).iter_mut().enumerate() {
                *s = if x < 4 { 0 } else { 200 };
            }
        }
        let small = decimate(&img, (2, 2)).unwrap();
        assert_eq!(small.y().row(0), &[0, 200]);
        assert_eq!(small.y().row(1), &[0, 200]);
    }
}
