//! UDP sockets with kernel receive timestamps, and a reader thread that turns a socket into a
//! stream of [`Received`] datagrams for a control loop's channel.
//!
//! `SO_TIMESTAMPNS` asks Linux to stamp each datagram when it reaches the socket; the stamp
//! comes back as a control message of `recvmsg`. Where the option or the stamp is missing the
//! user-space time of the `recvmsg` return is used instead ([`Received::kernel_stamp`] says
//! which).

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use salsify_time::{Duration, Instant};

use crate::clock;

/// Largest datagram read; anything longer is truncated (and then rejected by the parser).
pub const MAX_DATAGRAM: usize = 2048;

/// Socket buffer asked for in each direction. Without pacing floors a 720p frame at a fine
/// quantizer (70 datagrams) leaves at once; the default 208 KiB holds barely one such frame as
/// the kernel counts it, so a reader descheduled on a busy machine would lose the next. The
/// kernel caps the request at `net.core.rmem_max` / `wmem_max`.
const SOCKET_BUFFER: libc::c_int = 4 << 20;

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
    let on: libc::c_int = 1;
    // SAFETY: valid fd, option value is a c_int of the stated length. Failure only means no
    // kernel stamps, which `recv` handles.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn enlarge_buffers(socket: &UdpSocket) {
    for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: valid fd, option value is a c_int of the stated length. Failure only leaves
        // the default size.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Reads one datagram, waiting at most for the socket's read timeout. `Ok(None)` on timeout.
pub fn recv(socket: &UdpSocket, buf: &mut [u8]) -> std::io::Result<Option<Received>> {
    // SAFETY: zeroed sockaddr_storage and msghdr are valid initial values.
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 16]; // 128 bytes, 8-aligned, room for a timespec cmsg
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points at live buffers of the stated sizes.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        let err = std::io::Error::last_os_error();
        return match err.kind() {
            std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted => Ok(None),
            _ => Err(err),
        };
    }
    let user_time = clock::now();
    let Some(from) = sockaddr_to_std(&name) else {
        return Ok(None);
    };
    let stamp = kernel_stamp(&msg).and_then(clock::from_realtime);
    Ok(Some(Received {
        at: stamp.unwrap_or(user_time).min(user_time),
        kernel_stamp: stamp.is_some(),
        from,
        bytes: buf[..n as usize].to_vec(),
    }))
}

/// The `SCM_TIMESTAMPNS` control message of `msg`, if any.
fn kernel_stamp(msg: &libc::msghdr) -> Option<std::time::Duration> {
    // SAFETY: the CMSG macros walk the control buffer `recvmsg` filled, within its length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            let c = &*cmsg;
            if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                return Some(std::time::Duration::new(
                    ts.tv_sec as u64,
                    ts.tv_nsec as u32,
                ));
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    None
}

fn sockaddr_to_std(name: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(name.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(name as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 =
                unsafe { &*(name as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(a.sin6_port))))
        }
        _ => None,
    }
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
        let default: libc::c_int = default.trim().parse().unwrap();
        let socket = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut size: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid fd; `size` and `len` describe a c_int the kernel writes.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut size as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
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
