//! `salsify bench secure`: what encrypted sessions cost per datagram, and as a share of one
//! core at 720p60 video rates.
//!
//! One thread, an initiator and a responder in memory (no sockets): each data fragment is
//! sealed by the sender and opened by the receiver, and Salsify's receiver answers every
//! fragment with an ACK, sealed and opened the other way. Costs are this thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), so other load on the machine does not inflate them (wall
//! time is shown beside it): medians and 95th percentiles over batches, all measured side by
//! side in one run.

use std::time::Instant as WallInstant;

use anyhow::{bail, Context, Result};
use salsify_eval::metrics::percentile;
use salsify_secure::{Incoming, Keypair, SecureChannel, SecureConfig};
use salsify_time::Instant;

/// Options of `salsify bench secure`.
#[derive(clap::Args, Debug)]
pub struct SecureBenchArgs {
    /// Seconds to measure each operation.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Video bit rates (Mb/s) to price, comma-separated. At 720p60 Salsify sends 5-20 Mb/s on
    /// good cellular and Wi-Fi links and up to about 50 Mb/s unconstrained (60-110 KB frames).
    #[arg(long, value_delimiter = ',', default_value = "5,20,50")]
    rates: Vec<f64>,
    /// Bytes of a data datagram before sealing (Salsify's default fragment: 1400 B payload +
    /// 42 B header).
    #[arg(long, default_value_t = 1442)]
    data_bytes: usize,
    /// Bytes of an ACK before sealing (37 B + 8 per held state; 4 states held).
    #[arg(long, default_value_t = 69)]
    ack_bytes: usize,
    /// Quiet: only the figures, without the lines that explain them.
    #[arg(long, short)]
    quiet: bool,
}

/// Datagrams per batch timed.
const BATCH: usize = 500;

/// Per-operation nanoseconds over batches: CPU time (median, 95th percentile) and the
/// median wall time.
#[derive(Debug, Clone, Copy)]
struct Cost {
    median: f64,
    p95: f64,
    wall: f64,
}

/// This thread's CPU time in ns.
fn thread_cpu_ns() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

fn measure(seconds: f64, batch: usize, mut op: impl FnMut()) -> Cost {
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    let start = WallInstant::now();
    while start.elapsed().as_secs_f64() < seconds || cpu.len() < 5 {
        let (t, c) = (WallInstant::now(), thread_cpu_ns());
        for _ in 0..batch {
            op();
        }
        cpu.push((thread_cpu_ns() - c) / batch as f64);
        wall.push(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
    }
    Cost {
        median: percentile(&cpu, 50.0).unwrap_or(f64::NAN),
        p95: percentile(&cpu, 95.0).unwrap_or(f64::NAN),
        wall: percentile(&wall, 50.0).unwrap_or(f64::NAN),
    }
}

/// An initiator and a responder with a confirmed session.
fn pair() -> Result<(SecureChannel, SecureChannel)> {
    let (s, r) = (Keypair::generate()?, Keypair::generate()?);
    let now = Instant::ZERO;
    let mut sender = SecureChannel::initiator(SecureConfig::new(s.private, r.public), now, 1);
    let mut receiver = SecureChannel::responder(SecureConfig::new(r.private, s.public), now);
    let init = sender.poll_transmit(now).context("no handshake init")?;
    let Ok(Incoming::Reply(reply)) = receiver.handle_datagram(now, &init) else {
        bail!("the responder refused the handshake");
    };
    sender
        .handle_datagram(now, &reply)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let first = sender.seal(now, b"confirm").context("no keys")?;
    receiver
        .handle_datagram(now, &first)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((sender, receiver))
}

/// Seal-then-open cost of `bytes`-byte datagrams from `from` to `to`.
fn round(from: &mut SecureChannel, to: &mut SecureChannel, bytes: usize, seconds: f64) -> Cost {
    let datagram = vec![0x5Au8; bytes];
    let now = Instant::ZERO;
    measure(seconds, BATCH, || {
        let sealed = from.seal(now, &datagram).expect("established keys");
        let opened = to.handle_datagram(now, &sealed);
        assert!(matches!(opened, Ok(Incoming::Data(_))), "{opened:?}");
    })
}

impl SecureBenchArgs {
    /// Refuses what cannot be measured: sizes a sealed datagram cannot carry, durations and
    /// rates that are not positive numbers.
    fn check(&self) -> Result<()> {
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            bail!(
                "--seconds {} is not a duration between 0 and 3600 s",
                self.seconds
            );
        }
        let max = salsify_secure::wire::MAX_PLAINTEXT;
        for (flag, bytes) in [
            ("--data-bytes", self.data_bytes),
            ("--ack-bytes", self.ack_bytes),
        ] {
            if bytes == 0 || bytes > max {
                bail!(
                    "{flag} {bytes}: a sealed datagram carries 1 to {max} bytes (UDP's limit \
                     less the {} bytes sealing adds)",
                    salsify_secure::OVERHEAD
                );
            }
        }
        if let Some(bad) = self.rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
            bail!("--rates: {bad} is not a positive bit rate in Mb/s");
        }
        Ok(())
    }
}

/// Runs `salsify bench secure`.
pub fn run(args: &SecureBenchArgs) -> Result<()> {
    args.check()?;
    let (mut sender, mut receiver) = pair()?;
    let now = Instant::ZERO;
    let seconds = args.seconds;
    if !args.quiet {
        println!(
            "salsify bench secure: ChaCha20-Poly1305 (snow), one thread, {seconds} s per row, \
             batches of {BATCH}"
        );
    }
    let data = round(&mut sender, &mut receiver, args.data_bytes, seconds);
    let ack = round(&mut receiver, &mut sender, args.ack_bytes, seconds);
    let live = sender
        .seal(now, &vec![0u8; args.data_bytes])
        .context("keys")?;
    let mut forged = live.clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let mut counter = 1u64 << 40;
    let forged_cost = measure(seconds, BATCH, || {
        // A fresh counter each time, so the replay window does not refuse it first.
        counter += 1;
        forged[5..13].copy_from_slice(&counter.to_be_bytes());
        assert!(receiver.handle_datagram(now, &forged).is_err());
    });
    let mut stranger = forged.clone();
    stranger[1..5].copy_from_slice(&0u32.to_be_bytes());
    let unknown_cost = measure(seconds, BATCH, || {
        assert!(receiver.handle_datagram(now, &stranger).is_err());
    });
    let handshake = measure(seconds, 10, || {
        pair().expect("a handshake");
    });
    println!();
    println!("per datagram, ns of CPU                   median      p95   (wall median)");
    let row = |what: &str, c: Cost| {
        println!(
            "{what:<40} {:>8.0} {:>8.0}   ({:.0})",
            c.median, c.p95, c.wall
        )
    };
    row(&format!("data {} B: seal + open", args.data_bytes), data);
    row(&format!("ACK {} B: seal + open", args.ack_bytes), ack);
    row("forged data, live session id: refused", forged_cost);
    row("data for an unknown session id: refused", unknown_cost);
    println!(
        "{:<40} {:>8.0} {:>8.0}   ({:.0})",
        "handshake incl. 2 key pairs, both (µs)",
        handshake.median / 1e3,
        handshake.p95 / 1e3,
        handshake.wall / 1e3
    );
    println!();
    println!(
        "720p60: every fragment sealed and opened, plus its ACK (median cost {:.2} µs per fragment)",
        (data.median + ack.median) / 1e3
    );
    println!("video Mb/s   fragments/s   share of one core");
    let fragment_payload = args.data_bytes.saturating_sub(42).max(1) as f64;
    for rate in &args.rates {
        let per_second = rate * 1e6 / 8.0 / fragment_payload;
        let share = per_second * (data.median + ack.median) / 1e9;
        println!("{rate:>10.1} {per_second:>13.0} {:>18.2}%", share * 100.0);
    }
    if !args.quiet {
        println!(
            "(a flood of forged datagrams for the live session costs {:.2}% of a core per 10,000/s)",
            10_000.0 * forged_cost.median / 1e9 * 100.0
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(data_bytes: usize, ack_bytes: usize) -> SecureBenchArgs {
        SecureBenchArgs {
            seconds: 0.02,
            rates: vec![5.0],
            data_bytes,
            ack_bytes,
            quiet: true,
        }
    }

    /// Sizes a sealed datagram cannot carry were a panic ("established keys"); they are a
    /// clear error before anything runs, and the largest size that fits runs.
    #[test]
    fn datagram_sizes_beyond_the_limit_are_refused() {
        let max = salsify_secure::wire::MAX_PLAINTEXT;
        for (data, ack) in [(65520, 69), (1442, 100_000), (0, 69)] {
            let err = run(&args(data, ack)).unwrap_err().to_string();
            assert!(err.contains("sealed datagram carries"), "{err}");
        }
        assert!(args(max, 69).check().is_ok());
        let (mut s, _) = pair().unwrap();
        assert!(s.seal(Instant::ZERO, &vec![0; max]).is_some());
        let mut bad = args(1442, 69);
        bad.rates = vec![f64::NAN];
        assert!(bad.check().is_err());
    }
}
