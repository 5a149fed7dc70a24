//! Datagrams leave with DF set and are never fragmented on the way: the call finds the
//! path's size itself by probing (`salsify-path`), as RFC 8899 asks, so ICMP that a path
//! filters costs nothing, and a datagram too large for the path is lost whole rather than
//! as fragments a path may drop.
//!
//! `IP_PMTUDISC_PROBE` (and its IPv6 twin) sets DF and keeps the kernel's path MTU cache
//! from refusing sends above a size an ICMP message once named: the prober's probes must
//! leave. nix has no name for these options, so this is the one place the runtime calls
//! `setsockopt` itself.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Sets DF on `socket` (IPv4 and IPv6 options both tried; the one that does not apply fails
/// harmlessly). Returns whether one took.
pub fn set(socket: &UdpSocket) -> bool {
    let v4 = set_int(
        socket,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_PROBE,
    );
    let v6 = set_int(
        socket,
        libc::IPPROTO_IPV6,
        libc::IPV6_MTU_DISCOVER,
        libc::IPV6_PMTUDISC_PROBE,
    );
    v4 || v6
}

fn set_int(socket: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: the descriptor is open for the borrow of `socket`; the option value is a live
    // c_int whose size is passed with it, as setsockopt(2) requires.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn df_is_settable_and_datagrams_still_leave() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(set(&socket), "IP_MTU_DISCOVER is settable on Linux");
        let to = socket.local_addr().unwrap();
        // Loopback's MTU is 65536: a datagram within it leaves.
        assert!(socket.send_to(&[0u8; 1400], to).is_ok());
    }
}
