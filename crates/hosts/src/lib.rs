//! Emulated hosts on a port: each a MAC, an optional VLAN and IPv4/IPv6 addresses with prefix
//! and gateway. On Linux, XDP answers ARP, neighbour solicitations and pings for them on the port
//! (`bpf/hosts.h`, in the receiver or in `bpf/host.bpf.c`) and learns their neighbours;
//! [`resolve`] asks for a host's next hops and reads the answers from the same maps. What the
//! hosts transmit, and the session that owns the ports, live elsewhere.

#[cfg(target_os = "linux")]
mod abi;
mod error;
pub mod frames;
#[cfg(target_os = "linux")]
mod linux;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use error::HostError;
#[cfg(target_os = "linux")]
pub use linux::{HostProgram, HostTable, RETRY, answer_mode, resolve};

/// An Ethernet address, as `linerate_wire::MacAddr`.
pub type MacAddr = [u8; 6];

/// One emulated host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// What errors and reports call it.
    pub name: String,
    pub mac: MacAddr,
    /// The 802.1Q VLAN it sits on (1..=4094); None: untagged.
    pub vlan: Option<u16>,
    pub ipv4: Option<Ipv4Iface>,
    pub ipv6: Option<Ipv6Iface>,
}

/// A host's IPv4 address, its subnet and the router off it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Iface {
    pub addr: Ipv4Addr,
    pub prefix: u8,
    pub gateway: Option<Ipv4Addr>,
}

/// A host's IPv6 address, its subnet and the router off it (a global or a link-local address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Iface {
    pub addr: Ipv6Addr,
    pub prefix: u8,
    pub gateway: Option<Ipv6Addr>,
}

/// A neighbour a host learned: from its answer to [`resolve`], or from its own ARP request or
/// neighbour solicitation for the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Neighbour {
    pub addr: IpAddr,
    pub vlan: Option<u16>,
    pub mac: MacAddr,
}

/// What the hosts' XDP code has done, summed over CPUs. Laid out as `struct host_counters` of
/// `bpf/hosts.h`, which the loader checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct HostCounters {
    pub arp_replies: u64,
    pub nd_replies: u64,
    pub echo_replies: u64,
    /// Neighbour entries written (a neighbour heard again counts again).
    pub learned: u64,
    /// Frames for no host that `host.bpf.c` dropped; the receiver counts its own instead.
    pub dropped: u64,
}

impl Host {
    /// Checks what the XDP side and [`Host::next_hop`] rely on: a VLAN id in 1..=4094, prefixes
    /// within the address, gateways inside the host's subnet (or IPv6 link-local).
    pub fn validate(&self) -> Result<(), HostError> {
        if let Some(vlan) = self.vlan
            && !(1..=4094).contains(&vlan)
        {
            return Err(HostError::BadVlan {
                host: self.name.clone(),
                vlan,
            });
        }
        if let Some(v4) = &self.ipv4 {
            self.check_prefix(v4.prefix, 32)?;
            if let Some(gw) = v4.gateway
                && !same_subnet(v4.addr.to_bits().into(), gw.to_bits().into(), v4.prefix, 32)
            {
                return Err(self.gateway_off_link(gw.into()));
            }
        }
        if let Some(v6) = &self.ipv6 {
            self.check_prefix(v6.prefix, 128)?;
            if let Some(gw) = v6.gateway
                && !gw.is_unicast_link_local()
                && !same_subnet(v6.addr.to_bits(), gw.to_bits(), v6.prefix, 128)
            {
                return Err(self.gateway_off_link(gw.into()));
            }
        }
        Ok(())
    }

    /// The next hop for `dst`: `dst` itself when it is on the host's subnet (or IPv6
    /// link-local), else the host's gateway; an error when the host has no address of that
    /// family, or `dst` is off-link and there is no gateway.
    pub fn next_hop(&self, dst: IpAddr) -> Result<IpAddr, HostError> {
        match dst {
            IpAddr::V4(d) => {
                let v4 = self.ipv4.as_ref().ok_or_else(|| self.no_address(dst))?;
                if same_subnet(v4.addr.to_bits().into(), d.to_bits().into(), v4.prefix, 32) {
                    return Ok(dst);
                }
                v4.gateway.map(IpAddr::V4).ok_or_else(|| self.no_route(dst))
            }
            IpAddr::V6(d) => {
                let v6 = self.ipv6.as_ref().ok_or_else(|| self.no_address(dst))?;
                if d.is_unicast_link_local()
                    || same_subnet(v6.addr.to_bits(), d.to_bits(), v6.prefix, 128)
                {
                    return Ok(dst);
                }
                v6.gateway.map(IpAddr::V6).ok_or_else(|| self.no_route(dst))
            }
        }
    }

    /// The host's IPv6 link-local address, fe80::/64 with the modified EUI-64 of its MAC (RFC
    /// 4291 appendix A), which it answers for beside its own IPv6 address, as a real host would.
    pub fn link_local(&self) -> Ipv6Addr {
        let m = self.mac;
        Ipv6Addr::from([
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            m[0] ^ 0x02,
            m[1],
            m[2],
            0xff,
            0xfe,
            m[3],
            m[4],
            m[5],
        ])
    }

    /// The address the host sends from to reach `target`: its own address of that family (its
    /// link-local one for a link-local target).
    pub fn source_for(&self, target: IpAddr) -> Result<IpAddr, HostError> {
        match target {
            IpAddr::V4(_) => self
                .ipv4
                .map(|v4| IpAddr::V4(v4.addr))
                .ok_or_else(|| self.no_address(target)),
            // The link-local address comes with an IPv6 one: without, the host answers for neither.
            IpAddr::V6(t) => {
                let v6 = self.ipv6.ok_or_else(|| self.no_address(target))?;
                Ok(IpAddr::V6(if t.is_unicast_link_local() {
                    self.link_local()
                } else {
                    v6.addr
                }))
            }
        }
    }

    fn check_prefix(&self, prefix: u8, max: u8) -> Result<(), HostError> {
        if prefix > max {
            return Err(HostError::BadPrefix {
                host: self.name.clone(),
                prefix,
                max,
            });
        }
        Ok(())
    }

    fn no_address(&self, dst: IpAddr) -> HostError {
        HostError::NoAddress {
            host: self.name.clone(),
            family: if dst.is_ipv4() { "IPv4" } else { "IPv6" },
            dst,
        }
    }

    fn no_route(&self, dst: IpAddr) -> HostError {
        HostError::NoRoute {
            host: self.name.clone(),
            dst,
        }
    }

    fn gateway_off_link(&self, gateway: IpAddr) -> HostError {
        HostError::GatewayOffLink {
            host: self.name.clone(),
            gateway,
        }
    }
}

/// True when `a` and `b` (addresses of `bits` bits, right-aligned in a u128) share their first
/// `prefix` bits.
fn same_subnet(a: u128, b: u128, prefix: u8, bits: u32) -> bool {
    let prefix = u32::from(prefix).min(bits);
    let host_bits = bits - prefix;
    // A shift by 128 overflows: a /0 keeps no bits, every address shares it.
    (a ^ b).checked_shr(host_bits).unwrap_or(0) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "h1".into(),
            mac: [0x02, 0, 0, 0, 0, 0x10],
            vlan: None,
            ipv4: Some(Ipv4Iface {
                addr: "198.18.0.10".parse().unwrap(),
                prefix: 24,
                gateway: Some("198.18.0.1".parse().unwrap()),
            }),
            ipv6: Some(Ipv6Iface {
                addr: "2001:2::10".parse().unwrap(),
                prefix: 64,
                gateway: Some("fe80::1".parse().unwrap()),
            }),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_next_hop_is_the_destination_on_link_and_the_gateway_off_it() {
        let h = host();
        assert_eq!(h.next_hop(ip("198.18.0.200")).unwrap(), ip("198.18.0.200"));
        assert_eq!(h.next_hop(ip("198.18.1.2")).unwrap(), ip("198.18.0.1"));
        assert_eq!(h.next_hop(ip("2001:2::99")).unwrap(), ip("2001:2::99"));
        assert_eq!(h.next_hop(ip("2001:3::1")).unwrap(), ip("fe80::1"));
        assert_eq!(h.next_hop(ip("fe80::77")).unwrap(), ip("fe80::77"));
    }

    #[test]
    fn a_missing_route_or_family_is_named() {
        let mut h = host();
        h.ipv4.as_mut().unwrap().gateway = None;
        let err = h.next_hop(ip("10.0.0.1")).unwrap_err();
        assert!(matches!(err, HostError::NoRoute { .. }), "{err}");
        assert!(err.to_string().contains("10.0.0.1") && err.to_string().contains("h1"));
        assert!(err.is_usage());
        h.ipv6 = None;
        let err = h.next_hop(ip("2001:2::1")).unwrap_err();
        assert!(err.to_string().contains("IPv6"), "{err}");
    }

    #[test]
    fn prefixes_at_the_edges() {
        assert!(same_subnet(0, u128::MAX, 0, 128));
        assert!(same_subnet(0, 0xffff_ffff, 0, 32));
        assert!(same_subnet(5, 5, 32, 32));
        assert!(!same_subnet(5, 4, 32, 32));
        assert!(same_subnet(0x0a00_0001, 0x0aff_ffff, 8, 32));
        assert!(!same_subnet(0x0a00_0001, 0x0b00_0001, 8, 32));
        assert!(!same_subnet(1, 0, 128, 128));
    }

    #[test]
    fn validation_names_the_bad_field() {
        let mut h = host();
        h.validate().unwrap();
        h.vlan = Some(4095);
        assert!(matches!(
            h.validate(),
            Err(HostError::BadVlan { vlan: 4095, .. })
        ));
        h.vlan = Some(100);
        h.ipv4.as_mut().unwrap().gateway = Some("198.18.1.1".parse().unwrap());
        let err = h.validate().unwrap_err();
        assert!(err.to_string().contains("198.18.1.1"), "{err}");
        h.ipv4.as_mut().unwrap().gateway = None;
        h.ipv6.as_mut().unwrap().prefix = 129;
        assert!(matches!(
            h.validate(),
            Err(HostError::BadPrefix { max: 128, .. })
        ));
    }

    #[test]
    fn the_link_local_address_is_the_modified_eui64() {
        let mut h = host();
        h.mac = [0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc];
        assert_eq!(
            h.link_local(),
            "fe80::21b:21ff:feaa:bbcc".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(
            h.source_for(ip("fe80::1")).unwrap(),
            IpAddr::V6(h.link_local())
        );
        assert_eq!(h.source_for(ip("2001:2::1")).unwrap(), ip("2001:2::10"));
    }
}
