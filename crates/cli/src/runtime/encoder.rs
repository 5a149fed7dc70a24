//! The encoder thread: carries out the sender's encode requests off the control loop, so ACKs
//! are handled while a picture is being encoded.
//!
//! Salsify-2c (`s2`) encodes the two options at once on two threads; Salsify-1c (`s1`) one
//! after the other. The work itself is `salsify_schemes::Executor` (two encoder instances,
//! and the size-target prediction of the conventional-codec ablation), as in the simulator.

use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{Context, Result};
use salsify_codec::{EncodedFrame, Image, State};
use salsify_endpoint as ep;
use salsify_schemes::Executor;
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
        // The fps matters only to CBR jobs, which this Salsify encoder thread never gets.
        let mut worker = Executor::new(width, height, 30.0, cpu_used)
            .context("cannot create the VP8 encoders")?;
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
    executor: &mut Executor,
    mode: EncodeMode,
    request: &EncodeRequest<State>,
    image: &Image,
) -> Result<Vec<EncodedFrame>, String> {
    let job = match &request.job {
        EncodeJob::Qualities(qualities) => ep::EncodeJob::Qualities {
            source: request.source.clone(),
            qualities: qualities.clone(),
            parallel: mode == EncodeMode::S2,
        },
        EncodeJob::SizeTarget { bytes, hint } => ep::EncodeJob::SizeTarget {
            source: request.source.clone(),
            bytes: *bytes,
            hint: *hint,
        },
    };
    let request = ep::EncodeRequest {
        id: request.id,
        picture: request.picture,
        captured: request.captured,
        job,
    };
    match executor
        .run(&request, image)
        .map_err(|e| e.to_string())?
        .outcome
    {
        ep::EncodeOutcome::Functional(frames) => Ok(frames),
        _ => Err("the encoder returned frames of another codec".into()),
    }
}
