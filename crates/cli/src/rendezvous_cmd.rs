//! `salsify rendezvous`: the server two peers behind NATs meet through (`send`/`recv --via`).
//! It holds no keys and carries no media: it keeps sealed introductions under ids and hands
//! each peer the other's (see `salsify_meet::rendezvous`).

use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use clap::Args;
use salsify_meet::Rendezvous;
use salsify_time::Duration;

use crate::runtime::{self, clock, udp};

/// How often idle entries are forgotten.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// Flags of `salsify rendezvous`.
#[derive(Args, Debug, Clone)]
pub struct RendezvousArgs {
    /// Where to listen, HOST:PORT (e.g. 0.0.0.0:7000). Peers give it as `--via HOST:PORT`.
    #[arg(long)]
    pub listen: String,
    /// Stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_parser = runtime::parse_seconds)]
    pub duration: Option<Duration>,
    /// No start line and no summary.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Runs `salsify rendezvous`.
pub fn run(args: &RendezvousArgs) -> Result<()> {
    let socket = udp::bind(crate::usage::resolve("--listen", &args.listen)?)?;
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(100)))
        .context("cannot set the socket's read timeout")?;
    let stop = runtime::stop_on_ctrl_c()?;
    runtime::stop_after(&stop, args.duration);
    if !args.quiet {
        eprintln!(
            "salsify rendezvous: listening on {} (introduces peers that give it as --via; \
             sees no keys and no media)",
            socket.local_addr()?
        );
    }
    let mut server = Rendezvous::new();
    let mut buf = vec![0u8; udp::MAX_DATAGRAM];
    let mut next_expiry = clock::now() + EXPIRE_EVERY;
    while !stop.load(Ordering::Relaxed) {
        match udp::recv(&socket, &mut buf) {
            Ok(Some(d)) => {
                if let Some((answer, news)) = server.handle_and_tell(d.at, d.from, &d.bytes) {
                    udp::send(&socket, &answer, d.from);
                    if let Some((to, news)) = news {
                        udp::send(&socket, &news, to);
                    }
                }
            }
            Ok(None) => {}
            // An ICMP error of an earlier answer: not fatal.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e).context("receiving"),
        }
        let now = clock::now();
        if now >= next_expiry {
            server.expire(now);
            next_expiry = now + EXPIRE_EVERY;
        }
    }
    if !args.quiet {
        let s = server.stats();
        eprintln!(
            "salsify rendezvous: {} registrations, {} refused, {} entries forgotten idle, {} held",
            s.registered,
            s.refused,
            s.expired,
            server.len()
        );
    }
    Ok(())
}
