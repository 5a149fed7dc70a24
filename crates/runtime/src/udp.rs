//! UDP sockets with kernel receive timestamps, and a reader thread that turns a socket into a
//! stream of [`Received`] datagrams for a control loop's channel.
//!
//! `SO_TIMESTAMPNS` asks Linux to stamp each datagram when it reaches the socket; the stamp
//! comes back as a control message of `recvmsg`. Where the option or the stamp is missing the
//! user-space time of the `recvmsg` return is used instead ([`Received::kernel_stamp`] says
//! which). The socket calls go through `nix`, so this file holds no `unsafe`.

#![forbid(unsafe_code)]

use std::io::IoSliceMut;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use salsify_time::{Duration, Instant};

use crate::clock;

/// Largest datagram read; anything longer is truncated (and then rejected by the parser).
pub const MAX_DATAGRAM: usize = 2048;

/// Socket buffer asked for in each direction. Without pacing floors a 720p frame at a fine
/// quantizer (70 datagrams) leaves at once; the default 208 KiB holds barely one such frame as
/// the kernel counts it, so a reader descheduled on a busy machine would lose the next. The
/// kernel caps the request at `net.core.rmem_max` / `wmem_max`.
const SOCKET_BUFFER: usize = 4 << 20;

/// How often a blocked reader looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// One datagram as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived: the kernel's stamp where available.
    pub at: Instant,
    /// Whether `at` came from the kernel.
    pub kernel_stamp: bool,
    /// Who sent it.
    pub from: SocketAddr,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Resolves `spec` (`HOST:PORT`) to one address, with a clear error.
pub fn resolve(spec: &str) -> Result<SocketAddr> {
    let mut addrs = spec
        .to_socket_addrs()
        .with_context(|| format!("'{spec}' is not a usable HOST:PORT address"))?;
    match addrs.next() {
        Some(a) => Ok(a),
        None => bail!("'{spec}' resolves to no address"),
    }
}

/// Resolves `spec` as a place to send to: port 0 and the unspecified address (0.0.0.0, ::)
/// name no peer and are refused.
pub fn resolve_destination(spec: &str) -> Result<SocketAddr> {
    let addr = resolve(spec)?;
    if addr.port() == 0 {
        bail!("'{spec}': port 0 is no destination (give the port the peer listens on)");
    }
    if addr.ip().is_unspecified() {
        bail!(
            "'{spec}': {} is no destination (give the peer's address)",
            addr.ip()
        );
    }
    Ok(addr)
}

/// Binds a UDP socket on `addr` with receive timestamps turned on where the OS allows.
pub fn bind(addr: SocketAddr) -> Result<UdpSocket> {
    let socket = UdpSocket::bind(addr).with_context(|| match addr.port() {
        0 => format!("cannot open a UDP socket on {addr}"),
        _ => format!("cannot listen on UDP {addr} (is the port busy or the address not local?)"),
    })?;
    enable_timestamps(&socket);
    enlarge_buffers(&socket);
    crate::dont_fragment::set(&socket);
    Ok(socket)
}

/// A socket bound to an ephemeral port of the local address that reaches `peer`.
pub fn bind_for(peer: SocketAddr) -> Result<UdpSocket> {
    let any: SocketAddr = match peer {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("literal address"),
        SocketAddr::V6(_) => "[::]:0".parse().expect("literal address"),
    };
    bind(any)
}

fn enable_timestamps(socket: &UdpSocket) {
    // Failure only means no kernel stamps, which `recv` handles.
    let _ = setsockopt(socket, sockopt::ReceiveTimestampns, &true);
}

fn enlarge_buffers(socket: &UdpSocket) {
    // Failure only leaves the default size.
    let _ = setsockopt(socket, sockopt::RcvBuf, &SOCKET_BUFFER);
    let _ = setsockopt(socket, sockopt::SndBuf, &SOCKET_BUFFER);
}

/// Room for the control messages of one datagram (a `SCM_TIMESTAMPNS` needs 32 bytes), aligned
/// as a `cmsghdr` must be.
#[repr(C, align(8))]
struct Control([u8; 128]);

/// Reads one datagram, waiting at most for the socket's read timeout. `Ok(None)` on timeout.
pub fn recv(socket: &UdpSocket, buf: &mut [u8]) -> std::io::Result<Option<Received>> {
    let mut control = Control([0; 128]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = match recvmsg::<SockaddrStorage>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut control.0),
        MsgFlags::empty(),
    ) {
        Ok(msg) => msg,
        Err(errno) => {
            let err = std::io::Error::from(errno);
            return match err.kind() {
                std::io::ErrorKind::WouldBlock
                | std::io::ErrorKind::TimedOut
                | std::io::ErrorKind::Interrupted => Ok(None),
                _ => Err(err),
            };
        }
    };
    let user_time = clock::now();
    let Some(from) = msg.address.as_ref().and_then(sockaddr_to_std) else {
        return Ok(None);
    };
    // The `SCM_TIMESTAMPNS` control message, if any (none either when the buffer was short).
    let stamp = msg
        .cmsgs()
        .into_iter()
        .flatten()
        .find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(ts) => Some(std::time::Duration::new(
                ts.tv_sec() as u64,
                ts.tv_nsec() as u32,
            )),
            _ => None,
        })
        .and_then(clock::from_realtime);
    let n = msg.bytes;
    Ok(Some(Received {
        at: stamp.unwrap_or(user_time).min(user_time),
        kernel_stamp: stamp.is_some(),
        from,
        bytes: buf[..n].to_vec(),
    }))
}

fn sockaddr_to_std(name: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = name.as_sockaddr_in() {
        return Some(SocketAddr::V4((*v4).into()));
    }
    name.as_sockaddr_in6()
        .map(|v6| SocketAddr::V6((*v6).into()))
}

/// How many datagrams a reader holds for a loop that has not taken them yet (channels made
/// with `mpsc::sync_channel(READER_BACKLOG)`): a flood costs at most this many datagrams of
/// memory; beyond it datagrams are dropped, as a full socket buffer would drop them.
pub const READER_BACKLOG: usize = 4096;

/// Reads `socket` on a new thread until `stop` is set, handing each datagram, wrapped, to `tx`
/// without ever waiting: when the loop is `READER_BACKLOG` datagrams behind, the datagram is
/// dropped and counted (reported on standard error at 1, 2, 4, ... drops). The thread ends
/// when the loop is gone, or after reporting a socket error other than a timeout.
pub fn spawn_reader<T: Send + 'static>(
    socket: &UdpSocket,
    stop: Arc<AtomicBool>,
    tx: mpsc::SyncSender<T>,
    wrap: fn(Received) -> T,
) -> Result<std::thread::JoinHandle<()>> {
    let socket = socket.try_clone().context("cannot clone the UDP socket")?;
    socket
        .set_read_timeout(Some(STOP_POLL))
        .context("cannot set the socket's read timeout")?;
    std::thread::Builder::new()
        .name("udp-reader".into())
        .spawn(move || {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            let mut dropped: u64 = 0;
            while !stop.load(Ordering::Relaxed) {
                match recv(&socket, &mut buf) {
                    Ok(Some(d)) => match tx.try_send(wrap(d)) {
                        Ok(()) => {}
                        Err(mpsc::TrySendError::Full(_)) => {
                            dropped += 1;
                            if dropped.is_power_of_two() {
                                eprintln!(
                                    "salsify: datagrams arrive faster than they are handled: \
                                     {dropped} dropped so far"
                                );
                            }
                        }
                        Err(mpsc::TrySendError::Disconnected(_)) => return,
                    },
                    Ok(None) => {}
                    // Linux reports an earlier send's ICMP "port unreachable" here; not fatal.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                    Err(e) => {
                        eprintln!("salsify: UDP receive failed: {e}");
                        return;
                    }
                }
            }
        })
        .context("cannot start the UDP reader thread")
}

/// Sends `bytes` to `to`; a failure is counted by the caller, never fatal (UDP is lossy anyway,
/// and a peer that is not up yet makes the kernel refuse sends for a while).
pub fn send(socket: &UdpSocket, bytes: &[u8], to: SocketAddr) -> bool {
    socket.send_to(bytes, to).is_ok()
}

/// Sends `bytes` to `to` with IP TTL `ttl` (a hole-punching opener, meant to die on the way),
/// then puts the socket's TTL back. IPv6 sockets send as usual.
pub fn send_with_ttl(socket: &UdpSocket, bytes: &[u8], to: SocketAddr, ttl: u32) -> bool {
    let before = match to {
        SocketAddr::V4(_) => socket.ttl().ok(),
        SocketAddr::V6(_) => None,
    };
    let Some(before) = before.filter(|_| socket.set_ttl(ttl).is_ok()) else {
        return send(socket, bytes, to);
    };
    let sent = send(socket, bytes, to);
    let _ = socket.set_ttl(before);
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_holds_at_most_its_backlog_and_keeps_reading() {
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::sync_channel(4);
        let _reader = spawn_reader(&socket, stop.clone(), tx, |d| d).unwrap();
        let flood = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        for i in 0..100u8 {
            assert!(send(&flood, &[i], to));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let held: Vec<Received> = rx.try_iter().collect();
        assert_eq!(
            held.len(),
            4,
            "the reader holds its backlog and drops the rest"
        );
        assert_eq!(held[0].bytes, [0]);
        // Still reading after the flood.
        assert!(send(&flood, &[200], to));
        let next = rx.recv_timeout(std::time::Duration::from_secs(2)).unwrap();
        assert_eq!(next.bytes, [200]);
        stop.store(true, Ordering::Relaxed);
    }

    #[test]
    fn sockets_get_larger_receive_buffers_than_the_default() {
        let Ok(default) = std::fs::read_to_string("/proc/sys/net/core/rmem_default") else {
            return; // not Linux: nothing to compare with
        };
        let default: usize = default.trim().parse().unwrap();
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let size = nix::sys::socket::getsockopt(&socket, sockopt::RcvBuf).unwrap();
        assert!(size > default, "{size} bytes, default {default}");
    }

    #[test]
    fn datagrams_arrive_with_their_sender_and_a_timestamp() {
        let a = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let before = clock::now();
        b.send_to(b"hello", a.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 64];
        let got = recv(&a, &mut buf).unwrap().expect("a datagram");
        assert_eq!(got.bytes, b"hello");
        assert_eq!(got.from, b.local_addr().unwrap());
        assert!(got.at + Duration::from_millis(5) >= before, "{got:?}");
        assert!(got.at <= clock::now());
        // Linux stamps every datagram once asked to; a stamp lost here is a broken cmsg walk.
        if cfg!(target_os = "linux") {
            assert!(got.kernel_stamp, "{got:?}");
        }
    }

    #[test]
    fn port_zero_and_unspecified_addresses_are_no_destination() {
        assert!(resolve_destination("127.0.0.1:9").is_ok());
        for bad in ["127.0.0.1:0", "0.0.0.0:9000", "[::]:9000"] {
            let err = resolve_destination(bad).unwrap_err().to_string();
            assert!(err.contains("no destination"), "{bad}: {err}");
        }
        assert!(resolve("127.0.0.1:0").is_ok(), "fine to listen on");
    }

    #[test]
    fn busy_port_and_bad_address_are_clear_errors() {
        let a = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let err = bind(a.local_addr().unwrap()).unwrap_err();
        assert!(format!("{err:#}").contains("busy"), "{err:#}");
        assert!(resolve("not an address").is_err());
    }
}
