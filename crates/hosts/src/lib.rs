//! Emulated hosts on a port: each a MAC, an optional VLAN and IPv4/IPv6 addresses with prefix
//! and gateway. On Linux, XDP answers ARP, neighbour solicitations and pings for them on the port
//! (`bpf/hosts.h`, in the receiver or in `bpf/host.bpf.c`) and learns their neighbours;
//! [`resolve`] asks for a host's next hops and reads the answers from the same maps. What the
//! hosts transmit, and the session that owns the ports, live elsewhere.
#![forbid(unsafe_code)]

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

/// A neighbour the hosts asked for (a gateway, a flow's next hop): its address and VLAN, and
/// the MAC their streams were compiled with (resolved, or given).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AskedFor {
    pub addr: IpAddr,
    pub vlan: Option<u16>,
    pub mac: MacAddr,
}

/// A neighbour the hosts asked for, as a report shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskedNeighbour {
    pub addr: IpAddr,
    pub vlan: Option<u16>,
    /// The MAC the streams use: the answer believed when it was resolved (or the one given).
    pub mac: MacAddr,
    /// What the port's table holds for the address now, when that is not `mac`: the last
    /// answer heard, which a spoofer may have sent.
    pub learned: Option<MacAddr>,
    /// Answers for the address named more than one MAC: the table holds another than `mac`,
    /// or it changed from one to another since the first (and maybe back).
    pub conflict: bool,
}

/// The hosts' neighbours on one port, for a report: those they asked for, and how many
/// others they learned (the stations that asked for the hosts: after an ARP flood, thousands,
/// which a report counts rather than lists).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NeighbourReport {
    pub asked: Vec<AskedNeighbour>,
    pub others: usize,
}

impl NeighbourReport {
    /// The report of a port whose hosts asked for `asked` and whose table holds `heard` (each
    /// neighbour with whether its answers changed MAC).
    pub fn of(asked: &[AskedFor], heard: &[(Neighbour, bool)]) -> NeighbourReport {
        let mut asked: Vec<AskedFor> = asked.to_vec();
        asked.sort();
        asked.dedup_by_key(|a| (a.addr, a.vlan));
        let is_asked = |n: &Neighbour| asked.iter().any(|a| a.addr == n.addr && a.vlan == n.vlan);
        let others = heard.iter().filter(|(n, _)| !is_asked(n)).count();
        let asked = asked
            .iter()
            .map(|a| {
                let now = heard
                    .iter()
                    .find(|(n, _)| n.addr == a.addr && n.vlan == a.vlan);
                let learned = now.map(|(n, _)| n.mac).filter(|m| *m != a.mac);
                AskedNeighbour {
                    addr: a.addr,
                    vlan: a.vlan,
                    mac: a.mac,
                    learned,
                    conflict: learned.is_some() || now.is_some_and(|(_, changed)| *changed),
                }
            })
            .collect();
        NeighbourReport { asked, others }
    }

    /// One line for each neighbour asked for whose answers conflicted, naming `port`.
    pub fn conflicts(&self, port: &str) -> Vec<String> {
        self.asked
            .iter()
            .filter(|n| n.conflict)
            .map(|n| {
                let vlan = n.vlan.map(|v| format!(" vlan {v}")).unwrap_or_default();
                let used = mac_text(&n.mac);
                let heard = match n.learned {
                    Some(m) => format!("{} answered for it too", mac_text(&m)),
                    None => "another MAC answered for it between answers from that one".into(),
                };
                format!(
                    "neighbour {}{vlan} on {port}: the streams use {used}, and {heard}: another station claims the address (a spoofer, or a neighbour whose MAC changed)",
                    n.addr
                )
            })
            .collect()
    }
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
    /// Requests for a host that RFC 1122 or RFC 4861 say to discard (a bad checksum, a group
    /// or broadcast source, a malformed neighbour solicitation…): dropped unanswered, nothing
    /// learned from them (docs/hosts.md).
    pub ignored: u64,
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

/// What makes `mac` no one station's address, if anything: "broadcast", "multicast" (the
/// group bit, IPv4's 01:00:5e:… and IPv6's 33:33:… among others) or "all-zero". A neighbour
/// answering with one is not believed (RFC 1812 §3.3.2), nor is one given for a gateway.
pub fn group_or_zero(mac: &MacAddr) -> Option<&'static str> {
    if *mac == [0xff; 6] {
        Some("broadcast")
    } else if mac[0] & 1 != 0 {
        Some("multicast")
    } else if *mac == [0; 6] {
        Some("all-zero")
    } else {
        None
    }
}

/// `mac` as `xx:xx:xx:xx:xx:xx`.
pub(crate) fn mac_text(mac: &MacAddr) -> String {
    mac.map(|b| format!("{b:02x}")).join(":")
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
    fn group_and_zero_macs_are_told_from_unicast_ones() {
        assert_eq!(group_or_zero(&[0xff; 6]), Some("broadcast"));
        assert_eq!(group_or_zero(&[0x01, 0, 0x5e, 0, 0, 1]), Some("multicast"));
        assert_eq!(group_or_zero(&[0x33, 0x33, 0, 0, 0, 1]), Some("multicast"));
        assert_eq!(group_or_zero(&[0; 6]), Some("all-zero"));
        assert_eq!(group_or_zero(&[0x02, 0, 0, 0, 0, 0]), None);
        assert_eq!(group_or_zero(&[0, 0, 0, 0, 0, 1]), None);
        assert_eq!(
            mac_text(&[0x01, 0, 0x5e, 0xa, 0xbc, 0xff]),
            "01:00:5e:0a:bc:ff"
        );
    }

    /// The report lists what was asked for with the MAC the streams use, not the table's last
    /// answer, says when answers conflicted, and only counts the stations that asked.
    #[test]
    fn a_report_shows_the_mac_used_flags_conflicts_and_counts_the_others() {
        let (real, spoofer) = ([0x02, 0, 0, 0, 0, 1], [0x02, 0, 0, 0, 0, 0x66]);
        let gw4 = AskedFor {
            addr: ip("198.18.0.1"),
            vlan: None,
            mac: real,
        };
        let gw6 = AskedFor {
            addr: ip("2001:2::1"),
            vlan: Some(7),
            mac: real,
        };
        let heard = |addr: &str, vlan, mac, changed| {
            (
                Neighbour {
                    addr: ip(addr),
                    vlan,
                    mac,
                },
                changed,
            )
        };
        let mut table = vec![
            heard("198.18.0.1", None, spoofer, true),
            // The same address on another VLAN is another neighbour.
            heard("2001:2::1", None, spoofer, false),
            heard("2001:2::1", Some(7), real, true),
        ];
        table.extend((0..4096u32).map(|i| {
            let a = std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string();
            heard(&a, None, [2, 0, 0, 0, 0x10, 1], false)
        }));
        let r = NeighbourReport::of(&[gw6, gw4, gw4], &table);
        assert_eq!(r.others, 4097);
        assert_eq!(
            r.asked,
            [
                AskedNeighbour {
                    addr: gw4.addr,
                    vlan: None,
                    mac: real,
                    learned: Some(spoofer),
                    conflict: true,
                },
                // Back to the MAC used, but it changed on the way: still a conflict.
                AskedNeighbour {
                    addr: gw6.addr,
                    vlan: Some(7),
                    mac: real,
                    learned: None,
                    conflict: true,
                },
            ]
        );
        let lines = r.conflicts("lr0");
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].contains("198.18.0.1 on lr0")
                && lines[0].contains("use 02:00:00:00:00:01")
                && lines[0].contains("02:00:00:00:00:66 answered"),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("2001:2::1 vlan 7"), "{}", lines[1]);
        // A given MAC never learned, and one learned as used: no conflict.
        let quiet = NeighbourReport::of(&[gw4], &[heard("198.18.0.1", None, real, false)]);
        assert_eq!(
            (quiet.asked[0].learned, quiet.asked[0].conflict),
            (None, false)
        );
        assert_eq!(quiet.others, 0);
        let none = NeighbourReport::of(&[gw4], &[]);
        assert!(!none.asked[0].conflict);
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
