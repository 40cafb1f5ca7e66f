//! An emulated end's addresses: its MAC, the addresses it owns (one, or a client range of up to
//! millions), the on-link network it shares with its gateway, and the check a port's frames go
//! through before the TCP stack sees them. IPv4 or IPv6, one family an end.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::StatefulError;

/// Addresses taken from a prefix: every host address of it (a /31 or /32 every address; of an
/// IPv6 prefix every address but the first, the subnet-router anycast, and at most 2^32 - 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub network: IpAddr,
    pub prefix_len: u8,
}

/// An address's bits, wide enough for either family.
fn bits(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(a.to_bits()),
        IpAddr::V6(a) => a.to_bits(),
    }
}

/// The address of `bits` in `like`'s family.
fn of(like: IpAddr, bits: u128) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from_bits(bits as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from_bits(bits)),
    }
}

/// An address family's width in bits.
fn width(addr: IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

/// The network mask of a prefix length `len` of a `width`-bit address.
fn mask(len: u8, width: u8) -> u128 {
    let all = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    match len {
        0 => 0,
        n if n >= width => all,
        n => all & !(all >> n),
    }
}

impl Range {
    /// `A.B.C.D/N`, `X:X::X/N` or one address.
    pub fn parse(text: &str) -> Result<Range, StatefulError> {
        let bad = |reason: &str| StatefulError::Usage(format!("address range {text:?}: {reason}"));
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| bad("expected A.B.C.D/N or X:X::X/N (an address or a prefix)"))?;
        let w = width(addr);
        let len = match len {
            None => w,
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= w)
                .ok_or_else(|| bad(&format!("the prefix length is 0 to {w}")))?,
        };
        let network = of(addr, bits(addr) & mask(len, w));
        if network != addr {
            return Err(bad(&format!(
                "{addr} is not the prefix's first address ({network})"
            )));
        }
        Ok(Range {
            network,
            prefix_len: len,
        })
    }

    /// One address.
    pub fn single(addr: IpAddr) -> Range {
        Range {
            network: addr,
            prefix_len: width(addr),
        }
    }

    pub fn is_ipv6(&self) -> bool {
        self.network.is_ipv6()
    }

    /// The first host address and how many there are.
    fn hosts(&self) -> (u128, u32) {
        let base = bits(self.network);
        let host_bits = width(self.network) - self.prefix_len;
        match (self.network, host_bits) {
            (_, 0) => (base, 1),
            (IpAddr::V4(_), 1) => (base, 2),
            // IPv4's network and broadcast addresses are no host's; IPv6 has no broadcast.
            (IpAddr::V4(_), n) => (base + 1, ((1u64 << n) - 2) as u32),
            (IpAddr::V6(_), n) if n >= 32 => (base + 1, u32::MAX),
            (IpAddr::V6(_), n) => (base + 1, ((1u64 << n) - 1) as u32),
        }
    }

    pub fn len(&self) -> u32 {
        self.hosts().1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th host address, `i` taken modulo the count.
    pub fn nth(&self, i: u64) -> IpAddr {
        let (first, count) = self.hosts();
        of(self.network, first + u128::from(i % u64::from(count)))
    }

    pub fn contains(&self, addr: IpAddr) -> bool {
        if addr.is_ipv6() != self.is_ipv6() {
            return false;
        }
        let (first, count) = self.hosts();
        let a = bits(addr);
        a >= first && a - first < u128::from(count)
    }
}

/// An end's addresses on its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    pub mac: [u8; 6],
    /// The addresses this end owns: a client's range, a server's one address.
    pub range: Range,
    /// The on-link network's prefix length (the gateway's and the range's network).
    pub prefix_len: u8,
    /// Where traffic off the on-link network goes; None: everything is on-link.
    pub gateway: Option<IpAddr>,
    /// The 802.1Q VLAN id of the end's frames (None: untagged): it sends them tagged and sees
    /// only frames of that VLAN.
    pub vlan: Option<u16>,
    /// A second, inner VLAN (QinQ): `vlan` is then the outer tag, a service tag of
    /// `outer_tpid`, and this the 802.1Q customer tag inside it; frames of both only are seen.
    pub inner_vlan: Option<u16>,
    /// The outer tag's TPID on stacked VLANs: 802.1ad's 0x88a8 ([`QINQ_TPID`]), or the 0x8100
    /// or 0x9100 some older switches put outside.
    pub outer_tpid: u16,
}

/// 802.1ad's service tag, the outer TPID of stacked VLANs unless told otherwise.
pub const QINQ_TPID: u16 = 0x88a8;
/// The outer TPIDs an end may send on stacked VLANs.
pub const OUTER_TPIDS: [u16; 3] = [QINQ_TPID, 0x8100, 0x9100];

impl Addresses {
    /// Checks that the range and the gateway share the on-link network and the family.
    pub fn validate(&self) -> Result<(), StatefulError> {
        if self.mac[0] & 1 == 1 {
            return Err(StatefulError::Usage(
                "the MAC is a multicast address: give a unicast one (first octet even)".into(),
            ));
        }
        for v in [self.vlan, self.inner_vlan].into_iter().flatten() {
            if !(1..=4094).contains(&v) {
                return Err(StatefulError::Usage(format!(
                    "VLAN {v}: an 802.1Q VLAN id is 1 to 4094"
                )));
            }
        }
        if self.inner_vlan.is_some() && self.vlan.is_none() {
            return Err(StatefulError::Usage(
                "an inner VLAN goes inside an outer one: give --vlan ID too".into(),
            ));
        }
        if !OUTER_TPIDS.contains(&self.outer_tpid) {
            return Err(StatefulError::Usage(format!(
                "outer TPID {:#06x}: stacked VLANs go out under 0x88a8, 0x8100 or 0x9100",
                self.outer_tpid
            )));
        }
        if self.outer_tpid != QINQ_TPID && self.inner_vlan.is_none() {
            return Err(StatefulError::Usage(
                "an outer TPID is the outer tag's of stacked VLANs: give --inner-vlan ID too"
                    .into(),
            ));
        }
        if let Some(gw) = self.gateway
            && gw.is_ipv6() != self.range.is_ipv6()
        {
            return Err(StatefulError::Usage(format!(
                "gateway {gw} and the addresses {} are not of one family: give an {} gateway",
                self.range.network,
                if self.range.is_ipv6() { "IPv6" } else { "IPv4" }
            )));
        }
        if self.range.prefix_len < self.prefix_len {
            return Err(StatefulError::Usage(format!(
                "the address range /{} is wider than the on-link network /{}",
                self.range.prefix_len, self.prefix_len
            )));
        }
        if let Some(gw) = self.gateway {
            let m = mask(self.prefix_len, width(gw));
            let net = bits(self.range.network) & m;
            if bits(gw) & m != net {
                return Err(StatefulError::Usage(format!(
                    "gateway {gw} is not on the network {}/{} of the addresses",
                    of(gw, net),
                    self.prefix_len
                )));
            }
            if self.range.contains(gw) {
                return Err(StatefulError::Usage(format!(
                    "gateway {gw} is inside the address range {}/{}",
                    self.range.network, self.range.prefix_len
                )));
            }
        }
        Ok(())
    }

    /// Whether a frame from the port is this end's to see: to its MAC (or broadcast), IPv4 to
    /// an address it owns, or ARP asking for or answering one; IPv6 to an address it owns, or
    /// a neighbour solicitation (to a solicited-node group's multicast MAC) for one. Everything
    /// else — the host's own traffic on a shared interface, the other family, the link's
    /// control frames — is left alone, so the stack never answers for an address it does not
    /// own.
    pub fn accepts(&self, frame: &[u8]) -> bool {
        if frame.len() < 14 {
            return false;
        }
        let to_us = frame[..6] == self.mac;
        let broadcast = frame[..6] == [0xff; 6];
        let multicast = frame[..2] == [0x33, 0x33];
        let v4_at = |at: usize| -> Option<IpAddr> {
            let b: [u8; 4] = frame.get(at..at + 4)?.try_into().ok()?;
            Some(IpAddr::V4(Ipv4Addr::from(b)))
        };
        let v6_at = |at: usize| -> Option<IpAddr> {
            let b: [u8; 16] = frame.get(at..at + 16)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(b)))
        };
        let owned = |a: Option<IpAddr>| a.is_some_and(|a| self.range.contains(a));
        match u16::from_be_bytes([frame[12], frame[13]]) {
            0x0800 if to_us => owned(v4_at(14 + 16)),
            // The target protocol address of an ARP request or reply.
            0x0806 if to_us || broadcast => owned(v4_at(14 + 24)),
            0x86dd if to_us && owned(v6_at(14 + 24)) => true,
            // ICMPv6 (next header 58) type 135, a neighbour solicitation: its target address.
            0x86dd if to_us || multicast => {
                frame.get(14 + 6) == Some(&58)
                    && frame.get(14 + 40) == Some(&135)
                    && owned(v6_at(14 + 40 + 8))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_their_host_addresses() {
        let r = Range::parse("100.64.1.0/24").unwrap();
        assert_eq!(r.len(), 254);
        assert_eq!(r.nth(0), IpAddr::from([100, 64, 1, 1]));
        assert_eq!(r.nth(253), IpAddr::from([100, 64, 1, 254]));
        assert_eq!(r.nth(254), IpAddr::from([100, 64, 1, 1]));
        assert!(!r.contains(IpAddr::from([100, 64, 1, 255])));
        assert_eq!(
            Range::parse("10.0.0.7").unwrap().nth(5),
            IpAddr::from([10, 0, 0, 7])
        );
        assert!(Range::parse("100.64.1.1/24").is_err());
        assert!(Range::parse("100.64.1.0/33").is_err());
    }

    #[test]
    fn a_gateway_off_the_network_or_inside_the_range_is_refused() {
        let mut a = Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::parse("100.64.1.0/24").unwrap(),
            prefix_len: 16,
            gateway: Some(IpAddr::from([100, 64, 0, 1])),
            vlan: None,
            inner_vlan: None,
            outer_tpid: QINQ_TPID,
        };
        a.validate().unwrap();
        a.gateway = Some(IpAddr::from([100, 65, 0, 1]));
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("not on the network")
        );
        a.gateway = Some(IpAddr::from([100, 64, 1, 9]));
        assert!(a.validate().unwrap_err().to_string().contains("inside"));
        // VLANs: ids 1-4094, an inner one only inside an outer.
        a.gateway = None;
        a.inner_vlan = Some(200);
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("give --vlan")
        );
        a.vlan = Some(100);
        a.validate().unwrap();
        a.inner_vlan = Some(4095);
        assert!(a.validate().unwrap_err().to_string().contains("VLAN 4095"));
        // An outer TPID: one of three, and only on stacked VLANs.
        a.inner_vlan = Some(200);
        a.outer_tpid = 0x9100;
        a.validate().unwrap();
        a.outer_tpid = 0x9200;
        assert!(a.validate().unwrap_err().to_string().contains("0x9200"));
        a.outer_tpid = 0x8100;
        a.inner_vlan = None;
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("give --inner-vlan")
        );
    }

    #[test]
    fn only_our_frames_pass() {
        let a = Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::parse("100.64.1.0/24").unwrap(),
            prefix_len: 16,
            gateway: None,
            vlan: None,
            inner_vlan: None,
            outer_tpid: QINQ_TPID,
        };
        let mut ip = vec![0u8; 34];
        ip[..6].copy_from_slice(&a.mac);
        ip[12..14].copy_from_slice(&[8, 0]);
        ip[30..34].copy_from_slice(&[100, 64, 1, 3]);
        assert!(a.accepts(&ip));
        ip[33] = 255;
        assert!(!a.accepts(&ip));
        let mut arp = vec![0u8; 42];
        arp[..6].copy_from_slice(&[0xff; 6]);
        arp[12..14].copy_from_slice(&[8, 6]);
        arp[38..42].copy_from_slice(&[100, 64, 1, 3]);
        assert!(a.accepts(&arp));
        arp[38..42].copy_from_slice(&[100, 64, 0, 9]);
        assert!(!a.accepts(&arp));
    }

    #[test]
    fn ipv6_ranges_skip_the_anycast_address_and_stop_at_two_to_the_32() {
        let r = Range::parse("2001:db8:1::/120").unwrap();
        assert!(r.is_ipv6());
        assert_eq!(r.len(), 255);
        assert_eq!(r.nth(0), "2001:db8:1::1".parse::<IpAddr>().unwrap());
        assert_eq!(r.nth(254), "2001:db8:1::ff".parse::<IpAddr>().unwrap());
        assert!(!r.contains("2001:db8:1::".parse().unwrap()));
        assert!(!r.contains("10.0.0.1".parse().unwrap()));
        assert_eq!(Range::parse("2001:db8::/64").unwrap().len(), u32::MAX);
        assert_eq!(Range::parse("2001:db8::7").unwrap().len(), 1);
        assert!(Range::parse("2001:db8::1/64").is_err());
        assert!(Range::parse("2001:db8::/129").is_err());
    }

    #[test]
    fn a_gateway_of_the_other_family_is_refused() {
        let mut a = Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::parse("2001:db8:1::/120").unwrap(),
            prefix_len: 64,
            gateway: Some("2001:db8:1:0:1::1".parse().unwrap()),
            vlan: None,
            inner_vlan: None,
            outer_tpid: QINQ_TPID,
        };
        a.validate().unwrap();
        a.gateway = Some("2001:db8:2::1".parse().unwrap());
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("not on the network")
        );
        a.gateway = Some(IpAddr::from([100, 64, 0, 1]));
        assert!(a.validate().unwrap_err().to_string().contains("one family"));
    }

    #[test]
    fn ipv6_to_us_and_solicitations_for_our_addresses_pass() {
        let a = Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::parse("2001:db8:1::/120").unwrap(),
            prefix_len: 64,
            gateway: None,
            vlan: None,
            inner_vlan: None,
            outer_tpid: QINQ_TPID,
        };
        let ours: Ipv6Addr = "2001:db8:1::9".parse().unwrap();
        let mut ip = vec![0u8; 14 + 40 + 24];
        ip[..6].copy_from_slice(&a.mac);
        ip[12..14].copy_from_slice(&[0x86, 0xdd]);
        ip[14 + 24..14 + 40].copy_from_slice(&ours.octets());
        assert!(a.accepts(&ip));
        ip[14 + 39] = 0;
        assert!(!a.accepts(&ip));
        // A solicitation to the solicited-node group ff02::1:ff00:9, for ours.
        let mut ns = ip.clone();
        ns[..6].copy_from_slice(&[0x33, 0x33, 0xff, 0, 0, 9]);
        ns[14 + 6] = 58;
        ns[14 + 40] = 135;
        ns[14 + 40 + 8..14 + 40 + 24].copy_from_slice(&ours.octets());
        assert!(a.accepts(&ns));
        ns[14 + 40 + 23] = 0;
        assert!(!a.accepts(&ns), "for the anycast address, no host's");
    }
}
