//! The encoder thread: carries out a sender's encode requests off the control loop, so
//! feedback is handled (and paced datagrams leave) while a picture is being encoded.
//!
//! The work itself is `salsify_schemes::Executor`, which knows every job a scheme can ask for
//! (functional encodes, the size-target prediction, libvpx's CBR encoder with picture
//! scaling). One rule is the runtime's own: a job that says it is *not* parallel
//! (Salsify-1c) has its qualities encoded one after the other on this one thread, so the
//! live run spends the time that variant stands for; a parallel job (Salsify-2c) is handed
//! over whole and the executor encodes its two options on two threads.

use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::Image;
use salsify_endpoint::{EncodeFailed, EncodeJob, EncodeOutcome, EncodeRequest};
use salsify_schemes::Executor;

/// A finished request.
#[derive(Debug)]
pub struct Encoded {
    /// The request id.
    pub id: u64,
    /// The frames, or why encoding failed.
    pub result: Result<EncodeOutcome, EncodeFailed>,
}

/// The handle the control loop keeps; the thread ends when it is dropped.
pub struct EncoderThread {
    jobs: mpsc::Sender<(EncodeRequest, Arc<Image>)>,
}

impl EncoderThread {
    /// Moves `executor` to a new thread; results go through `deliver` (which returns false
    /// when its consumer is gone).
    pub fn start(
        mut executor: Executor,
        deliver: impl Fn(Encoded) -> bool + Send + 'static,
    ) -> Result<EncoderThread> {
        let (jobs, rx) = mpsc::channel::<(EncodeRequest, Arc<Image>)>();
        std::thread::Builder::new()
            .name("encoder".into())
            .spawn(move || {
                for (request, image) in rx {
                    let result = run(&mut executor, &request, &image);
                    if !deliver(Encoded {
                        id: request.id,
                        result,
                    }) {
                        return;
                    }
                }
            })
            .context("cannot start the encoder thread")?;
        Ok(EncoderThread { jobs })
    }

    /// Queues a request (jobs run in order). False if the thread is gone.
    pub fn submit(&self, request: EncodeRequest, image: Arc<Image>) -> bool {
        self.jobs.send((request, image)).is_ok()
    }
}

/// Carries out one request; a serial multi-quality job one quality at a time.
pub fn run(
    executor: &mut Executor,
    request: &EncodeRequest,
    image: &Image,
) -> Result<EncodeOutcome, EncodeFailed> {
    let failed = |e: salsify_codec::CodecError| EncodeFailed(e.to_string());
    let EncodeJob::Qualities {
        source,
        qualities,
        parallel: false,
        halvings,
    } = &request.job
    else {
        return executor
            .run(request, image)
            .map(|e| e.outcome)
            .map_err(failed);
    };
    let mut frames = Vec::with_capacity(qualities.len());
    for &q in qualities {
        let one = EncodeRequest {
            job: EncodeJob::Qualities {
                source: source.clone(),
                qualities: vec![q],
                parallel: false,
                halvings: *halvings,
            },
            ..request.clone()
        };
        match executor.run(&one, image).map_err(failed)?.outcome {
            EncodeOutcome::Functional(mut f) => frames.append(&mut f),
            other => {
                return Err(EncodeFailed(format!(
                    "a functional job came back as {other:?}"
                )))
            }
        }
    }
    Ok(EncodeOutcome::Functional(frames))
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::{Quality, State, SyntheticSource};
    use salsify_endpoint::EncodeKind;
    use salsify_time::Instant;

    #[test]
    fn serial_and_parallel_jobs_give_one_frame_per_quality_in_order() {
        let image = SyntheticSource::new(64, 48, 30, 1).unwrap().frame(0);
        let mut ex = Executor::new(64, 48, 30.0, -8, &[EncodeKind::Qualities]).unwrap();
        let qualities = vec![Quality::new(20).unwrap(), Quality::new(60).unwrap()];
        for parallel in [false, true] {
            let request = EncodeRequest {
                id: 3,
                picture: 0,
                captured: Instant::ZERO,
                job: EncodeJob::Qualities {
                    source: State::initial(),
                    qualities: qualities.clone(),
                    parallel,
                    halvings: 0,
                },
            };
            let Ok(EncodeOutcome::Functional(frames)) = run(&mut ex, &request, &image) else {
                panic!("functional frames");
            };
            // In the job's order (libvpx may round a quantizer to a neighbour).
            assert_eq!(frames.len(), 2, "parallel {parallel}");
            assert!(
                frames[0].quality < frames[1].quality,
                "parallel {parallel}: {:?}",
                frames.iter().map(|f| f.quality).collect::<Vec<_>>()
            );
        }
    }
}
