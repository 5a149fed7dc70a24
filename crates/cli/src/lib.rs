//! `salsify`: low-latency video after Salsify (NSDI 2018). See `salsify --help`.
//!
//! The command is a library function, [`main_with`], taking the scheme registry: the
//! `salsify` binary hands it [`Registry::builtin`], and a researcher's own crate hands it the
//! built-in families plus its own, and gets every command (`sim`, `eval`, `report`, `send`,
//! `recv`, `demo`, `call`, ...) for its scheme (docs/custom-scheme.md).
//!
//! Layer 6, the top of the workspace (README, "Layout"): the command sits on the drivers
//! (`salsify-runtime`, `salsify-sim` through `salsify-eval`), the black-box peers
//! (`salsify-peer`), the window and the barcodes; no crate of the workspace depends on it.

// The commands: each parses its flags and runs, using the library modules below; none
// imports another.
mod audio_marks_cmd;
mod barcode_cmd;
mod bench_codec;
mod bench_secure;
mod call_cmd;
mod codec_demo;
mod demo;
mod eval_cmd;
mod eval_live;
mod keys;
mod link;
mod peer_cmd;
mod recv;
mod rendezvous_cmd;
mod report_cmd;
mod send;
mod sim_cmd;
mod view_cmd;

// What several commands share.
mod blackbox;
mod call;
mod chromium_call;
mod clips;
mod dashboard;
mod flags;
mod input;
mod live_input;
mod monitor;
mod out_dir;
mod paths;
mod report_files;
mod runtime;
mod size;
mod stamp;
mod usage;
mod window;

use anyhow::Result;
use clap::{Parser, Subcommand};

pub use salsify_schemes::{Registry, RegistryError};

/// Low-latency Internet video: a functional VP8 codec fused with a video-aware transport.
///
/// With no command, runs `salsify demo`: sender, emulated cellular link and receiver on
/// loopback for 30 s.
#[derive(Parser, Debug)]
#[command(
    name = "salsify",
    version,
    about,
    long_about = None,
    after_help = "With no command, salsify runs `salsify demo` for 30 s: sender, emulated \
                  cellular link and receiver on loopback (Ctrl-C stops it).\n\
                  Exit status: 0 when the command did its work, 1 on an error (including \
                  input with no picture or a run that showed no frame), 2 for bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Real-time video on loopback: receiver, link relay (a built-in cellular-like link) and
    /// sender with a synthetic source, for any scheme that runs live (--scheme, default
    /// salsify-2c); a live line per second, a summary, and logs in an output folder;
    /// --display shows the received video in a window.
    Demo(Box<demo::DemoArgs>),
    /// A two-way call: the same command on each side (one dials with --to or meets through
    /// --via, the other listens or meets too); each sends its pictures (or --input none),
    /// voice (--audio) and data messages (--data-in) and shows (--display), plays (--play)
    /// and writes (--out, --data-out) the peer's, in one encrypted session on one socket.
    Call(Box<call_cmd::CallArgs>),
    /// Stream video to a receiver over UDP (--scheme: salsify-2c, salsify-1c, the Salsify
    /// ablations, conventional or vidaptive).
    Send(Box<send::SendArgs>),
    /// Write a key pair for encrypted sessions: NAME.key (private, for this side's --key)
    /// and NAME.pub (public, for the peer's --peer-key).
    Keygen(keys::KeygenArgs),
    /// Receive, decode and display a stream of any scheme (learned from the first datagram,
    /// or fixed with --scheme): in a window (--display), to Y4M / IVF files or pipes, logs.
    Recv(Box<recv::RecvArgs>),
    /// A UDP relay between sender and receiver that applies an emulated link in real time.
    Link(Box<link::LinkArgs>),
    /// The server two peers behind NATs meet through (`send`/`recv --via`): it introduces
    /// them and nothing else (no keys, no media).
    Rendezvous(Box<rendezvous_cmd::RendezvousArgs>),
    /// Encode and decode a clip with the functional codec, choosing between two qualities per
    /// frame as Salsify does, and print per-frame sizes and quality.
    CodecDemo(codec_demo::CodecDemoArgs),
    /// Simulate a run in virtual time (real codec, emulated link): per-frame CSV, per-packet
    /// log and summary JSON.
    Sim(Box<sim_cmd::SimArgs>),
    /// The paper's evaluation (experiments 1-7, or a matrix file) in parallel, resumable and
    /// shardable, ending with report.html, report.md and figures.
    Eval(Box<eval_cmd::EvalArgs>),
    /// The report of one or more `salsify eval` folders (e.g. one per shard), merged.
    Report(report_cmd::ReportArgs),
    /// Stamp a frame-id barcode into every picture of a video (a Y4M file to feed a
    /// black-box peer such as Chromium), or read the barcodes of a Y4M file back.
    Barcode(barcode_cmd::BarcodeArgs),
    /// Read the audio barcode of a WAV file: one line per mark, its number then its time in
    /// seconds (or --write the synthetic voice that carries them).
    AudioMarks(audio_marks_cmd::AudioMarksArgs),
    /// Unmodified systems as peers (headless Chromium's WebRTC), measured black-box through
    /// the link relay by barcodes and scored as simulated runs are.
    #[command(subcommand)]
    Peer(peer_cmd::PeerCommand),
    /// A finished run's folder (demo, sim, a run of eval, a Chromium peer run) on the live
    /// dashboard's page, with a time cursor: `salsify view salsify-demo-out`.
    View(view_cmd::ViewArgs),
    /// Benchmarks (figures per core, measured side by side in one run).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Encode/decode/state-handling costs and bytes and SSIM per quality.
    Codec(bench_codec::CodecBenchArgs),
    /// Per-datagram cost of encrypted sessions (seal + open, refusals, handshakes) and its
    /// share of one core at 720p60 video rates.
    Secure(bench_secure::SecureBenchArgs),
}

/// The `salsify` command over `registry`'s scheme families: installs the registry as the
/// process's (before anything reads a scheme), parses the arguments and runs the command,
/// exiting with its status (0 done, 1 an error, 2 bad usage).
pub fn main_with(registry: Registry) {
    if let Err(why) = salsify_schemes::registry::install(registry) {
        eprintln!("salsify: error: {why}");
        std::process::exit(1);
    }
    let cli = Cli::parse();
    log_to_stderr_if_asked();
    if let Err(err) = run(cli) {
        eprintln!("salsify: error: {err:#}");
        std::process::exit(usage::exit_code(&err));
    }
}

/// With `RUST_LOG` set (e.g. `RUST_LOG=goog_cc=debug`), the libraries' `tracing` events go
/// to stderr: GoogCC says there why a probe was or was not taken. Without it nothing is set
/// up, so nothing is spent formatting them.
fn log_to_stderr_if_asked() {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .without_time()
            .init();
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => demo::run(&demo::DemoArgs::default()),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Call(args)) => call_cmd::run(&args),
        Some(Command::Send(args)) => send::run(&args),
        Some(Command::Recv(args)) => recv::run(&args),
        Some(Command::Keygen(args)) => keys::run(&args),
        Some(Command::Link(args)) => link::run(&args),
        Some(Command::Rendezvous(args)) => rendezvous_cmd::run(&args),
        Some(Command::CodecDemo(args)) => codec_demo::run(&args),
        Some(Command::Sim(args)) => sim_cmd::run(&args),
        Some(Command::Eval(args)) => eval_cmd::run(&args),
        Some(Command::Report(args)) => report_cmd::run(&args),
        Some(Command::Barcode(args)) => barcode_cmd::run(&args),
        Some(Command::AudioMarks(args)) => audio_marks_cmd::run(&args),
        Some(Command::Peer(command)) => peer_cmd::run(&command),
        Some(Command::View(args)) => view_cmd::run(&args),
        Some(Command::Bench(BenchCommand::Codec(args))) => bench_codec::run(&args),
        Some(Command::Bench(BenchCommand::Secure(args))) => bench_secure::run(&args),
    }
}
