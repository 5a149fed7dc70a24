//! Socket addresses on the meeting wire: 19 bytes each (family 4 or 6, 16 bytes of address,
//! an IPv4 one in the first 4, the port), big-endian.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Bytes of one address.
pub const ADDR_LEN: usize = 19;

/// Appends `addr`.
pub fn put(out: &mut Vec<u8>, addr: SocketAddr) {
    let mut ip = [0u8; 16];
    let family = match addr.ip() {
        IpAddr::V4(v4) => {
            ip[..4].copy_from_slice(&v4.octets());
            4
        }
        IpAddr::V6(v6) => {
            ip.copy_from_slice(&v6.octets());
            6
        }
    };
    out.push(family);
    out.extend_from_slice(&ip);
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// Reads an address at the start of `b`; `None` if short or of no family.
pub fn get(b: &[u8]) -> Option<SocketAddr> {
    let b = b.get(..ADDR_LEN)?;
    let port = u16::from_be_bytes([b[17], b[18]]);
    let ip = match b[0] {
        // The rest of an IPv4 address's 16 bytes must be zero: one address, one encoding.
        4 if b[5..17].iter().all(|x| *x == 0) => IpAddr::V4(Ipv4Addr::new(b[1], b[2], b[3], b[4])),
        6 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&b[1..17]);
            IpAddr::V6(Ipv6Addr::from(o))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn addresses_survive_the_wire(v4 in any::<[u8; 4]>(), v6 in any::<[u8; 16]>(), port in any::<u16>()) {
            for a in [SocketAddr::from((v4, port)), SocketAddr::from((v6, port))] {
                let mut b = vec![];
                put(&mut b, a);
                prop_assert_eq!(b.len(), ADDR_LEN);
                prop_assert_eq!(get(&b), Some(a));
            }
        }

        #[test]
        fn an_address_has_one_encoding(b in proptest::collection::vec(any::<u8>(), ADDR_LEN)) {
            if let Some(a) = get(&b) {
                let mut again = vec![];
                put(&mut again, a);
                prop_assert_eq!(again, b);
            }
        }

        #[test]
        fn any_bytes_read_without_panic(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = get(&b);
        }
    }
}
