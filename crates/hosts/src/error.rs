//! The one error type of this crate: each variant says what went wrong and what to do.

use std::net::IpAddr;

/// Errors while declaring hosts, loading their program or resolving their neighbours.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("host {host}: VLAN {vlan} is out of range: use 1..=4094 (or none, untagged)")]
    BadVlan { host: String, vlan: u16 },

    #[error("host {host}: prefix /{prefix} is longer than the address (at most /{max})")]
    BadPrefix { host: String, prefix: u8, max: u8 },

    #[error("host {host}: gateway {gateway} is not on the host's subnet: it could not be reached")]
    GatewayOffLink { host: String, gateway: IpAddr },

    #[error("host {host} has no {family} address, so it cannot reach {dst}: give it one")]
    NoAddress {
        host: String,
        family: &'static str,
        dst: IpAddr,
    },

    #[error("host {host}: {dst} is off its subnet and the host has no gateway: give it one")]
    NoRoute { host: String, dst: IpAddr },

    #[error("no host number {index}: there are {hosts} hosts")]
    NoSuchHost { index: usize, hosts: usize },

    #[error(
        "{addr} did not answer on {iface} ({tries} {} unanswered): is it up, on that link and \
         VLAN, with that address?",
        if .addr.is_ipv4() { "ARP requests" } else { "neighbour solicitations" }
    )]
    Unresolved {
        addr: IpAddr,
        iface: String,
        tries: u32,
    },

    #[error(
        "{addr} answered on {iface} with {} ({kind}), a MAC no neighbour has (RFC 1812 \
         §3.3.2): ignored, so {addr} is unresolved; find what answers for it on that link and \
         VLAN",
        crate::mac_text(.mac)
    )]
    BogusNeighbour {
        addr: IpAddr,
        iface: String,
        mac: crate::MacAddr,
        /// "broadcast", "multicast", "all-zero" or "the host's own".
        kind: &'static str,
    },

    #[error(transparent)]
    Xdp(#[from] linerate_xdp::XdpError),

    #[error("the hosts' map {map}: {message}")]
    Map { map: &'static str, message: String },

    #[error("sending on {iface}: {source}{}", if .source.kind() == std::io::ErrorKind::PermissionDenied { " (run as root: needs CAP_NET_RAW)" } else { "" })]
    Send {
        iface: String,
        source: std::io::Error,
    },
}

impl HostError {
    /// True when the user can fix it by changing what they asked for (exit code 2). A neighbour
    /// that does not answer is a finding about the network, not a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::BadVlan { .. }
            | Self::BadPrefix { .. }
            | Self::GatewayOffLink { .. }
            | Self::NoAddress { .. }
            | Self::NoRoute { .. }
            | Self::NoSuchHost { .. } => true,
            Self::Xdp(e) => e.is_usage(),
            Self::Send { source, .. } => source.kind() == std::io::ErrorKind::PermissionDenied,
            Self::Unresolved { .. } | Self::BogusNeighbour { .. } | Self::Map { .. } => false,
        }
    }
}
