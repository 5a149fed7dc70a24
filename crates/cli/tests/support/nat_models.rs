//! NAT models for the namespaces of `netns.rs`: each an nftables rule set for a NAT box that
//! behaves like a kind of NAT people sit behind, in the terms of RFC 4787 (mapping: does one
//! inside socket keep one outside port whatever the destination; filtering: who may send to
//! that port). The rules replace the box's `slsf_nat` table.
//!
//! Why not plain `masquerade` for a home router: Linux masquerading keeps the inside port only
//! while no other connection-tracking entry holds it. A peer's datagram that reaches the NAT
//! before the inside host has sent to that peer is tracked as a flow to the NAT itself, and
//! the host's own datagram to the peer, which would take the same tuple, then leaves from a
//! new port. A home router's mapping is kept in a table of its own (here a dynamic nftables
//! map from outside port to inside address and port, updated by every datagram leaving), and
//! inbound datagrams are translated through it before connection tracking can claim them.

#![allow(dead_code)] // the tests use what their scenario needs

use crate::netns::{Nat, Net, MASQUERADE};

/// A kind of NAT, as a rule set for a box whose outside interface is `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NatModel {
    /// A home router: endpoint-independent mapping (the inside port kept, one outside port
    /// for every destination), address-and-port-dependent filtering (only those the host
    /// has sent to get in).
    Home,
    /// A full cone: endpoint-independent mapping and filtering (anyone may send to a
    /// mapping once it exists).
    FullCone,
    /// A corporate firewall or cloud NAT gateway: endpoint-dependent ("symmetric")
    /// mapping, a random outside port per destination, and only replies let in.
    Gateway,
    /// A Linux router with one plain `masquerade` rule (what the tests used before models).
    LinuxMasquerade,
}

/// What a model is named for: the checks of `nat_models.rs` measure both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// One inside socket's datagrams to two destinations leave from one outside port.
    pub one_port_for_two_destinations: bool,
    /// A datagram from an address the host never sent to reaches the host's mapping.
    pub lets_strangers_in: bool,
}

/// How long an endpoint-independent mapping lasts after its last outgoing datagram, as the
/// UDP mappings of home routers commonly do (RFC 4787 asks for 2 minutes at least).
pub const MAPPING_TIMEOUT_S: u32 = 300;

impl NatModel {
    /// Every model, in the order of the matrix.
    pub const ALL: [NatModel; 4] = [
        NatModel::Home,
        NatModel::FullCone,
        NatModel::Gateway,
        NatModel::LinuxMasquerade,
    ];

    /// Its name in test output and the matrix.
    pub fn name(self) -> &'static str {
        match self {
            NatModel::Home => "home",
            NatModel::FullCone => "full-cone",
            NatModel::Gateway => "gateway",
            NatModel::LinuxMasquerade => "linux-masquerade",
        }
    }

    /// What it is named for.
    pub fn behaviour(self) -> Behaviour {
        Behaviour {
            one_port_for_two_destinations: self != NatModel::Gateway,
            lets_strangers_in: self == NatModel::FullCone,
        }
    }

    /// Its nftables rules (one transaction that replaces the box's `slsf_nat` table).
    pub fn ruleset(self) -> String {
        let replace = "table ip slsf_nat {}\ndelete table ip slsf_nat\n";
        let body = match self {
            NatModel::Home => endpoint_independent(true),
            NatModel::FullCone => endpoint_independent(false),
            NatModel::Gateway => "table ip slsf_nat {\n\
                 \tchain postrouting {\n\
                 \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
                 \t\toifname \"out\" masquerade random,fully-random\n\
                 \t}\n\
                 }\n"
            .to_string(),
            NatModel::LinuxMasquerade => MASQUERADE.to_string(),
        };
        format!("{replace}{body}")
    }

    /// Makes `nat` behave as this model, and forgets the flows it tracked.
    pub fn apply(self, net: &Net, nat: &Nat) {
        net.nft(&nat.ns, &self.ruleset());
        net.exec(&nat.ns, &["conntrack", "-F"]);
    }
}

/// Endpoint-independent mapping: every UDP datagram leaving by `out` records (or refreshes)
/// its inside address and port under its source port in the `mapping` map, in a filter
/// chain just before the masquerading (a nat chain sees only a flow's first datagram); the
/// source port is its outside port, as the masquerading keeps the port when free. And a
/// datagram arriving on `out` for a mapped port is translated to the inside socket before
/// connection tracking decides. With `filtering`, the forward hook lets in from outside only
/// datagrams of flows the inside began (address-and-port-dependent filtering); without it,
/// anyone (endpoint-independent).
fn endpoint_independent(filtering: bool) -> String {
    let filter = if filtering {
        "\tchain forward {\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\tiifname \"out\" ct state established,related accept\n\
         \t\tiifname \"out\" drop\n\
         \t}\n"
    } else {
        ""
    };
    format!(
        "table ip slsf_nat {{\n\
         \tmap mapping {{\n\
         \t\ttype inet_service : ipv4_addr . inet_service\n\
         \t\tflags dynamic,timeout\n\
         \t\ttimeout {t}s\n\
         \t}}\n\
         \tchain prerouting {{\n\
         \t\ttype nat hook prerouting priority dstnat; policy accept;\n\
         \t\tiifname \"out\" meta l4proto udp dnat ip to udp dport map @mapping\n\
         \t}}\n\
         \tchain remember {{\n\
         \t\ttype filter hook postrouting priority 99; policy accept;\n\
         \t\toifname \"out\" meta l4proto udp update @mapping {{ udp sport timeout {t}s : ip saddr . udp sport }}\n\
         \t}}\n\
         \tchain postrouting {{\n\
         \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
         \t\toifname \"out\" masquerade\n\
         \t}}\n\
         {filter}\
         }}\n",
        t = MAPPING_TIMEOUT_S
    )
}
