//! The encoder thread: carries out the sender's encode requests off the control loop, so ACKs
//! are handled while a picture is being encoded.
//!
//! Salsify-2c (`s2`) encodes the two options at once on two threads; Salsify-1c (`s1`) one
//! after the other. The work itself is the simulator's [`EncodeWorker`] (two encoder
//! instances, and the size-target prediction of the conventional-codec ablation).

use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::{EncodedFrame, Image, State};
use salsify_eval::sim::EncodeWorker;
use salsify_transport::{EncodeJob, EncodeRequest};

/// How the two encodes of a Salsify picture share cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EncodeMode {
    /// Salsify-1c: one core, the two encodes in series.
    S1,
    /// Salsify-2c: two cores, the two encodes in parallel.
    S2,
}

/// A finished request.
#[derive(Debug)]
pub struct Encoded {
    /// The request id.
    pub id: u64,
    /// The frames, or why encoding failed.
    pub frames: Result<Vec<EncodedFrame>, String>,
}

/// The handle the control loop keeps.
pub struct EncoderThread {
    jobs: mpsc::Sender<(EncodeRequest<State>, Arc<Image>)>,
}

impl EncoderThread {
    /// Starts a worker for `width` x `height` pictures; results go through `deliver`.
    pub fn start(
        width: u32,
        height: u32,
        cpu_used: i32,
        mode: EncodeMode,
        deliver: impl Fn(Encoded) -> bool + Send + 'static,
    ) -> Result<EncoderThread> {
        let mut worker =
            EncodeWorker::new(width, height, cpu_used).context("cannot create the VP8 encoders")?;
        let (jobs, rx) = mpsc::channel::<(EncodeRequest<State>, Arc<Image>)>();
        std::thread::Builder::new()
            .name("encoder".into())
            .spawn(move || {
                for (request, image) in rx {
                    let frames = run(&mut worker, mode, &request, &image);
                    if !deliver(Encoded {
                        id: request.id,
                        frames,
                    }) {
                        return;
                    }
                }
            })
            .context("cannot start the encoder thread")?;
        Ok(EncoderThread { jobs })
    }

    /// Queues a request (the sender issues one at a time). False if the thread is gone.
    pub fn submit(&self, request: EncodeRequest<State>, image: Arc<Image>) -> bool {
        self.jobs.send((request, image)).is_ok()
    }
}

fn run(
    worker: &mut EncodeWorker,
    mode: EncodeMode,
    request: &EncodeRequest<State>,
    image: &Image,
) -> Result<Vec<EncodedFrame>, String> {
    let serial_pair = match (&request.job, mode) {
        (EncodeJob::Qualities(qs), EncodeMode::S1) if qs.len() > 1 => Some(qs.clone()),
        _ => None,
    };
    let Some(qualities) = serial_pair else {
        return worker
            .run(request, image)
            .map(|r| r.frames)
            .map_err(|e| e.to_string());
    };
    // One quality per call: the worker runs a single-quality job on one encoder, in series.
    let mut frames = Vec::with_capacity(qualities.len());
    for q in qualities {
        let one = EncodeRequest {
            job: EncodeJob::Qualities(vec![q]),
            ..request.clone()
        };
        let mut result = worker.run(&one, image).map_err(|e| e.to_string())?;
        frames.append(&mut result.frames);
    }
    Ok(frames)
}
