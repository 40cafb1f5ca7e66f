//! The structures `bpf/hosts.h` shares with user space, once: map keys and values as the C side
//! lays them out (`repr(C)`, native byte order but for addresses, which stay as on the wire),
//! and the sizes the loader checks each map against.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use linerate_xdp::MapAbi;

use crate::{HostCounters, MacAddr};

pub(crate) const HOSTS_V4: &str = "hosts_v4";
pub(crate) const HOSTS_V6: &str = "hosts_v6";
pub(crate) const NEIGH_V4: &str = "neigh_v4";
pub(crate) const NEIGH_V6: &str = "neigh_v6";
pub(crate) const COUNTERS: &str = "host_counters";

/// `struct host_key4`: an IPv4 address on a VLAN (0: untagged).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key4 {
    addr: [u8; 4],
    vlan: u16,
    _pad: u16,
}

/// `struct host_key6`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key6 {
    addr: [u8; 16],
    vlan: u16,
    _pad: u16,
}

/// `struct host_mac`: a host's MAC, the value of `hosts_v4` and `hosts_v6`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostMac {
    mac: MacAddr,
    _pad: u16,
}

/// `struct neigh`: a learned neighbour and when (CLOCK_MONOTONIC ns).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Neigh {
    pub(crate) mac: MacAddr,
    _pad: u16,
    pub(crate) ktime_ns: u64,
}

/// Every map of an object that includes `bpf/hosts.h`, as the Rust side reads it.
pub(crate) const ABI: [MapAbi; 5] = [
    MapAbi::of::<Key4, HostMac>(HOSTS_V4),
    MapAbi::of::<Key6, HostMac>(HOSTS_V6),
    MapAbi::of::<Key4, Neigh>(NEIGH_V4),
    MapAbi::of::<Key6, Neigh>(NEIGH_V6),
    MapAbi::of::<u32, HostCounters>(COUNTERS),
];

/// The key of `addr` on `vlan`, in the map of its family, as bytes.
pub(crate) fn key(addr: IpAddr, vlan: Option<u16>) -> Vec<u8> {
    let vlan = vlan.unwrap_or(0);
    match addr {
        IpAddr::V4(a) => Key4 {
            addr: a.octets(),
            vlan,
            _pad: 0,
        }
        .bytes()
        .to_vec(),
        IpAddr::V6(a) => Key6 {
            addr: a.octets(),
            vlan,
            _pad: 0,
        }
        .bytes()
        .to_vec(),
    }
}

/// Reads a key back, by its length: the address and the VLAN.
pub(crate) fn parse_key(bytes: &[u8]) -> Option<(IpAddr, Option<u16>)> {
    let vlan_at = match bytes.len() {
        n if n == size_of::<Key4>() => 4,
        n if n == size_of::<Key6>() => 16,
        _ => return None,
    };
    let addr: IpAddr = if vlan_at == 4 {
        Ipv4Addr::from(<[u8; 4]>::try_from(&bytes[..4]).ok()?).into()
    } else {
        Ipv6Addr::from(<[u8; 16]>::try_from(&bytes[..16]).ok()?).into()
    };
    let vlan = u16::from_ne_bytes(bytes[vlan_at..vlan_at + 2].try_into().ok()?);
    Some((addr, (vlan != 0).then_some(vlan)))
}

impl Key4 {
    fn bytes(&self) -> [u8; size_of::<Key4>()] {
        let mut b = [0; size_of::<Key4>()];
        b[..4].copy_from_slice(&self.addr);
        b[4..6].copy_from_slice(&self.vlan.to_ne_bytes());
        b
    }
}

impl Key6 {
    fn bytes(&self) -> [u8; size_of::<Key6>()] {
        let mut b = [0; size_of::<Key6>()];
        b[..16].copy_from_slice(&self.addr);
        b[16..18].copy_from_slice(&self.vlan.to_ne_bytes());
        b
    }
}

/// A host's MAC as the value of `hosts_v4` / `hosts_v6`.
pub(crate) fn host_mac(mac: MacAddr) -> [u8; size_of::<HostMac>()] {
    let value = HostMac { mac, _pad: 0 };
    let mut b = [0; size_of::<HostMac>()];
    b[..6].copy_from_slice(&value.mac);
    b
}

impl Neigh {
    pub(crate) fn parse(bytes: &[u8]) -> Option<Neigh> {
        if bytes.len() != size_of::<Neigh>() {
            return None;
        }
        Some(Neigh {
            mac: bytes[..6].try_into().ok()?,
            _pad: 0,
            ktime_ns: u64::from_ne_bytes(bytes[8..16].try_into().ok()?),
        })
    }
}

impl HostCounters {
    /// One CPU's counters, as the map holds them.
    pub(crate) fn parse(bytes: &[u8]) -> Option<HostCounters> {
        if bytes.len() != size_of::<HostCounters>() {
            return None;
        }
        let mut w = bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")));
        Some(HostCounters {
            arp_replies: w.next()?,
            nd_replies: w.next()?,
            echo_replies: w.next()?,
            learned: w.next()?,
            dropped: w.next()?,
        })
    }

    pub(crate) fn add(&mut self, other: &HostCounters) {
        self.arp_replies += other.arp_replies;
        self.nd_replies += other.nd_replies;
        self.echo_replies += other.echo_replies;
        self.learned += other.learned;
        self.dropped += other.dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layouts_are_the_c_ones() {
        assert_eq!(size_of::<Key4>(), 8);
        assert_eq!(size_of::<Key6>(), 20);
        assert_eq!(size_of::<HostMac>(), 8);
        assert_eq!(size_of::<Neigh>(), 16);
        assert_eq!(size_of::<HostCounters>(), 40);
    }

    #[test]
    fn keys_read_back() {
        for (addr, vlan) in [
            ("198.18.0.1".parse().unwrap(), None),
            ("198.18.0.1".parse().unwrap(), Some(100)),
            ("2001:2::1".parse().unwrap(), Some(4094)),
        ] {
            let bytes = key(addr, vlan);
            assert_eq!(parse_key(&bytes), Some((addr, vlan)));
        }
        let k = key("10.1.2.3".parse().unwrap(), Some(0x0102));
        assert_eq!(k[..4], [10, 1, 2, 3]);
        assert_eq!(k[4..6], 0x0102u16.to_ne_bytes());
        assert_eq!(parse_key(&[0; 7]), None);
    }

    #[test]
    fn values_read_back() {
        let mut bytes = [0u8; 16];
        bytes[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        bytes[8..].copy_from_slice(&77u64.to_ne_bytes());
        let n = Neigh::parse(&bytes).unwrap();
        assert_eq!((n.mac, n.ktime_ns), ([2, 0, 0, 0, 0, 9], 77));
        assert_eq!(host_mac([1, 2, 3, 4, 5, 6]), [1, 2, 3, 4, 5, 6, 0, 0]);
        let words: Vec<u8> = (1..=5u64).flat_map(u64::to_ne_bytes).collect();
        let c = HostCounters::parse(&words).unwrap();
        assert_eq!((c.arp_replies, c.dropped), (1, 5));
    }
}
