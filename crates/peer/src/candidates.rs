//! ICE candidates rewritten so that both directions of a call cross the link relay.
//!
//! Each peer connection is given one candidate of the other: its first UDP IPv4 host
//! candidate on loopback (127.0.0.0/8), with the address and port replaced by the relay's
//! (on 127.0.0.1). The relay forwards what the receiver sends to the last other address it
//! heard, so the sender must reach it from one address only; other candidates (TCP, IPv6,
//! other interfaces) are never offered, so the call's media never leaves loopback and the
//! call works on a machine whose only interface is loopback. Chromium offers loopback
//! candidates only with `--allow-loopback-in-peer-connection` (see [`crate::chromium`]).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// A candidate as the page reports it (`RTCIceCandidate.candidate` and `sdpMid`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The `candidate:...` attribute.
    pub candidate: String,
    /// The media section it belongs to.
    pub sdp_mid: Option<String>,
}

/// A UDP IPv4 host candidate's parsed fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCandidate {
    /// Its transport address.
    pub address: SocketAddrV4,
}

impl Candidate {
    /// The candidate's address if it is a UDP IPv4 host candidate.
    pub fn udp_ipv4_host(&self) -> Option<HostCandidate> {
        let fields: Vec<&str> = self.candidate.split_whitespace().collect();
        // candidate:FOUNDATION COMPONENT TRANSPORT PRIORITY ADDRESS PORT typ TYPE ...
        if fields.len() < 8 || !fields[0].starts_with("candidate:") {
            return None;
        }
        if !fields[2].eq_ignore_ascii_case("udp") || fields[6] != "typ" || fields[7] != "host" {
            return None;
        }
        let ip: Ipv4Addr = fields[4].parse().ok()?;
        let port: u16 = fields[5].parse().ok()?;
        Some(HostCandidate {
            address: SocketAddrV4::new(ip, port),
        })
    }

    /// This candidate with its address and port replaced by `to`.
    pub fn pointed_at(&self, to: SocketAddr) -> Candidate {
        let mut fields: Vec<String> = self
            .candidate
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if fields.len() > 5 {
            fields[4] = to.ip().to_string();
            fields[5] = to.port().to_string();
        }
        Candidate {
            candidate: fields.join(" "),
            sdp_mid: self.sdp_mid.clone(),
        }
    }
}

/// The first UDP IPv4 host candidate on loopback of `side`'s list and its address.
pub fn loopback_udp_host(side: &str, list: &[Candidate]) -> Result<(Candidate, SocketAddr)> {
    for c in list {
        if let Some(h) = c.udp_ipv4_host().filter(|h| h.address.ip().is_loopback()) {
            return Ok((c.clone(), SocketAddr::V4(h.address)));
        }
    }
    if list.is_empty() {
        bail!(
            "the {side} peer gathered no ICE candidate (was Chromium started with --allow-loopback-in-peer-connection?)"
        );
    }
    let all: Vec<&str> = list.iter().map(|c| c.candidate.as_str()).collect();
    bail!(
        "the {side} peer has no UDP IPv4 host candidate on loopback (127.0.0.0/8) among: {}",
        all.join(" | ")
    )
}

/// What the page adds: the sender's candidate pointed at the relay for the receiver, and the
/// receiver's for the sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// To add to the receiving peer connection.
    pub for_receiver: Candidate,
    /// To add to the sending peer connection.
    pub for_sender: Candidate,
}

/// The route through `relay` for candidates `sender` and `receiver`.
pub fn route(sender: &Candidate, receiver: &Candidate, relay: SocketAddr) -> Route {
    Route {
        for_receiver: sender.pointed_at(relay),
        for_sender: receiver.pointed_at(relay),
    }
}

/// Parses the page's `{sender: [...], receiver: [...]}`.
pub fn parse_lists(body: &str) -> Result<(Vec<Candidate>, Vec<Candidate>)> {
    #[derive(Deserialize)]
    struct Lists {
        sender: Vec<Candidate>,
        receiver: Vec<Candidate>,
    }
    let lists: Lists = serde_json::from_str(body).context("candidate lists")?;
    Ok((lists.sender, lists.receiver))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(s: &str) -> Candidate {
        Candidate {
            candidate: s.into(),
            sdp_mid: Some("0".into()),
        }
    }

    const V4: &str =
        "candidate:1539715417 1 udp 2122194687 127.0.0.1 52698 typ host generation 0 ufrag K6Dt network-id 1";
    const ETH: &str =
        "candidate:1539715418 1 udp 2122194687 192.0.2.2 52699 typ host generation 0 ufrag K6Dt network-id 2";
    const V6: &str =
        "candidate:2426466489 1 udp 2122265343 fd00::2 45852 typ host generation 0 ufrag K6Dt network-id 2";
    const TCP: &str = "candidate:2775377357 1 tcp 1518214911 192.0.2.2 9 typ host tcptype active generation 0 ufrag K6Dt network-id 1";
    const SRFLX: &str =
        "candidate:1 1 udp 1686052607 198.51.100.7 40000 typ srflx raddr 192.0.2.2 rport 52698";

    #[test]
    fn only_udp_ipv4_host_candidates_on_loopback_are_chosen() {
        let list = [cand(V6), cand(TCP), cand(SRFLX), cand(ETH), cand(V4)];
        let (c, addr) = loopback_udp_host("sender", &list).unwrap();
        assert_eq!(c.candidate, V4);
        assert_eq!(addr, "127.0.0.1:52698".parse().unwrap());
        let e = loopback_udp_host("sender", &list[..4]).unwrap_err();
        assert!(e.to_string().contains("on loopback"), "{e}");
        let e = loopback_udp_host("receiver", &[]).unwrap_err();
        assert!(e.to_string().contains("allow-loopback"), "{e}");
        assert!(cand("garbage").udp_ipv4_host().is_none());
        assert!(cand("candidate:1 1 udp 5 1.2.3.4 notaport typ host")
            .udp_ipv4_host()
            .is_none());
    }

    #[test]
    fn rewriting_keeps_everything_but_the_address() {
        let relay: SocketAddr = "127.0.0.1:40123".parse().unwrap();
        let r = route(&cand(ETH), &cand(V4), relay);
        assert_eq!(
            r.for_receiver.candidate,
            "candidate:1539715418 1 udp 2122194687 127.0.0.1 40123 typ host generation 0 ufrag K6Dt network-id 2"
        );
        assert_eq!(r.for_sender.sdp_mid.as_deref(), Some("0"));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"sdpMid\":\"0\""), "{json}");
        let (s, rcv) =
            parse_lists(r#"{"sender":[{"candidate":"a","sdpMid":"0"}],"receiver":[]}"#).unwrap();
        assert_eq!((s.len(), rcv.len()), (1, 0));
        assert!(parse_lists("{").is_err());
    }
}
