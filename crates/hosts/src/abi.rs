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
pub(crate) const STACK_MACS: &str = "stack_macs";

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

/// `struct host_mac`: a host's MAC, the value of `hosts_v4` and `hosts_v6` (and the key of
/// `stack_macs`, with no prefix).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostMac {
    mac: MacAddr,
    /// In `hosts_v4`: the host's IPv4 prefix, for XDP to tell its subnet's broadcast.
    prefix4: u8,
    _pad: u8,
}

/// `struct neigh`: a learned neighbour and when (CLOCK_MONOTONIC ns).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Neigh {
    pub(crate) mac: MacAddr,
    /// `HOSTS_NEIGH_*`.
    flags: u16,
    pub(crate) ktime_ns: u64,
}

/// `HOSTS_NEIGH_BOGUS`: the answer claimed a MAC no neighbour has; kept to be named, never used.
const NEIGH_BOGUS: u16 = 1;
/// `HOSTS_NEIGH_CHANGED`: believed answers for the address named different MACs.
const NEIGH_CHANGED: u16 = 2;

/// Every map of an object that includes `bpf/hosts.h`, as the Rust side reads it.
pub(crate) const ABI: [MapAbi; 6] = [
    MapAbi::of::<Key4, HostMac>(HOSTS_V4),
    MapAbi::of::<Key6, HostMac>(HOSTS_V6),
    MapAbi::of::<Key4, Neigh>(NEIGH_V4),
    MapAbi::of::<Key6, Neigh>(NEIGH_V6),
    MapAbi::of::<u32, HostCounters>(COUNTERS),
    MapAbi::of::<HostMac, u32>(STACK_MACS),
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

/// A MAC as the key of `stack_macs`.
pub(crate) fn host_mac(mac: MacAddr) -> [u8; size_of::<HostMac>()] {
    host_value(mac, 0)
}

/// A host's MAC and IPv4 prefix (0 in `hosts_v6`) as the value of `hosts_v4` / `hosts_v6`.
pub(crate) fn host_value(mac: MacAddr, prefix4: u8) -> [u8; size_of::<HostMac>()] {
    let value = HostMac {
        mac,
        prefix4,
        _pad: 0,
    };
    let mut b = [0; size_of::<HostMac>()];
    b[..6].copy_from_slice(&value.mac);
    b[6] = value.prefix4;
    b
}

impl Neigh {
    pub(crate) fn parse(bytes: &[u8]) -> Option<Neigh> {
        if bytes.len() != size_of::<Neigh>() {
            return None;
        }
        Some(Neigh {
            mac: bytes[..6].try_into().ok()?,
            flags: u16::from_ne_bytes(bytes[6..8].try_into().ok()?),
            ktime_ns: u64::from_ne_bytes(bytes[8..16].try_into().ok()?),
        })
    }

    /// True when the XDP side found the MAC bogus (group, zero or the host's own) and wrote it
    /// only to be named.
    pub(crate) fn bogus(&self) -> bool {
        self.flags & NEIGH_BOGUS != 0
    }

    /// True when answers for the address, believed, have named more than one MAC.
    pub(crate) fn changed(&self) -> bool {
        self.flags & NEIGH_CHANGED != 0
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
            ignored: w.next()?,
        })
    }

    pub(crate) fn add(&mut self, other: &HostCounters) {
        self.arp_replies += other.arp_replies;
        self.nd_replies += other.nd_replies;
        self.echo_replies += other.echo_replies;
        self.learned += other.learned;
        self.dropped += other.dropped;
        self.ignored += other.ignored;
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
        assert_eq!(size_of::<HostCounters>(), 48);
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
        assert_eq!(
            (n.mac, n.ktime_ns, n.bogus()),
            ([2, 0, 0, 0, 0, 9], 77, false)
        );
        bytes[6..8].copy_from_slice(&NEIGH_BOGUS.to_ne_bytes());
        assert!(Neigh::parse(&bytes).unwrap().bogus());
        bytes[6..8].copy_from_slice(&NEIGH_CHANGED.to_ne_bytes());
        let n = Neigh::parse(&bytes).unwrap();
        assert!(n.changed() && !n.bogus());
        assert_eq!(host_mac([1, 2, 3, 4, 5, 6]), [1, 2, 3, 4, 5, 6, 0, 0]);
        assert_eq!(
            host_value([1, 2, 3, 4, 5, 6], 24),
            [1, 2, 3, 4, 5, 6, 24, 0]
        );
        let words: Vec<u8> = (1..=6u64).flat_map(u64::to_ne_bytes).collect();
        let c = HostCounters::parse(&words).unwrap();
        assert_eq!((c.arp_replies, c.dropped, c.ignored), (1, 5, 6));
    }
}
