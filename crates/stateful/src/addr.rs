//! An emulated end's addresses: its MAC, the addresses it owns (one, or a client range of up to
//! millions), the on-link network it shares with its gateway, and the check a port's frames go
//! through before the TCP stack sees them.

use std::net::Ipv4Addr;

use crate::StatefulError;

/// Addresses taken from a prefix: every host address of it (a /31 or /32 every address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub network: Ipv4Addr,
    pub prefix_len: u8,
}

impl Range {
    /// `A.B.C.D/N` or one address.
    pub fn parse(text: &str) -> Result<Range, StatefulError> {
        let bad = |reason: &str| StatefulError::Usage(format!("address range {text:?}: {reason}"));
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (
                a,
                l.parse::<u8>()
                    .map_err(|_| bad("the prefix length is 0 to 32"))?,
            ),
            None => (text, 32),
        };
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| bad("expected A.B.C.D or A.B.C.D/N"))?;
        if len > 32 {
            return Err(bad("the prefix length is 0 to 32"));
        }
        let network = Ipv4Addr::from(u32::from(addr) & mask(len));
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
    pub fn single(addr: Ipv4Addr) -> Range {
        Range {
            network: addr,
            prefix_len: 32,
        }
    }

    /// The first host address and how many there are.
    fn hosts(&self) -> (u32, u32) {
        let base = u32::from(self.network);
        match self.prefix_len {
            32 => (base, 1),
            31 => (base, 2),
            n => (base + 1, (1u32 << (32 - n)) - 2),
        }
    }

    pub fn len(&self) -> u32 {
        self.hosts().1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th host address, `i` taken modulo the count.
    pub fn nth(&self, i: u64) -> Ipv4Addr {
        let (first, count) = self.hosts();
        Ipv4Addr::from(first + (i % u64::from(count)) as u32)
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let (first, count) = self.hosts();
        let a = u32::from(addr);
        a >= first && a - first < count
    }
}

fn mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - len) }
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
    pub gateway: Option<Ipv4Addr>,
}

impl Addresses {
    /// Checks that the range and the gateway share the on-link network.
    pub fn validate(&self) -> Result<(), StatefulError> {
        if self.mac[0] & 1 == 1 {
            return Err(StatefulError::Usage(
                "the MAC is a multicast address: give a unicast one (first octet even)".into(),
            ));
        }
        if self.range.prefix_len < self.prefix_len {
            return Err(StatefulError::Usage(format!(
                "the address range /{} is wider than the on-link network /{}",
                self.range.prefix_len, self.prefix_len
            )));
        }
        if let Some(gw) = self.gateway {
            let m = mask(self.prefix_len);
            if u32::from(gw) & m != u32::from(self.range.network) & m {
                return Err(StatefulError::Usage(format!(
                    "gateway {gw} is not on the network {}/{} of the addresses",
                    Ipv4Addr::from(u32::from(self.range.network) & m),
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
    /// an address it owns, or ARP asking for or answering one. Everything else — the host's
    /// own traffic on a shared interface, IPv6, the link's control frames — is left alone, so
    /// the stack never answers an ARP for an address it does not own.
    pub fn accepts(&self, frame: &[u8]) -> bool {
        if frame.len() < 14 {
            return false;
        }
        let to_us = frame[..6] == self.mac;
        let broadcast = frame[..6] == [0xff; 6];
        let ip_at = |at: usize| -> Option<Ipv4Addr> {
            let b: [u8; 4] = frame.get(at..at + 4)?.try_into().ok()?;
            Some(Ipv4Addr::from(b))
        };
        match u16::from_be_bytes([frame[12], frame[13]]) {
            0x0800 if to_us => ip_at(14 + 16).is_some_and(|dst| self.range.contains(dst)),
            // The target protocol address of an ARP request or reply.
            0x0806 if to_us || broadcast => {
                ip_at(14 + 24).is_some_and(|target| self.range.contains(target))
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
        assert_eq!(r.nth(0), Ipv4Addr::new(100, 64, 1, 1));
        assert_eq!(r.nth(253), Ipv4Addr::new(100, 64, 1, 254));
        assert_eq!(r.nth(254), Ipv4Addr::new(100, 64, 1, 1));
        assert!(!r.contains(Ipv4Addr::new(100, 64, 1, 255)));
        assert_eq!(
            Range::parse("10.0.0.7").unwrap().nth(5),
            Ipv4Addr::new(10, 0, 0, 7)
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
            gateway: Some(Ipv4Addr::new(100, 64, 0, 1)),
        };
        a.validate().unwrap();
        a.gateway = Some(Ipv4Addr::new(100, 65, 0, 1));
        assert!(
            a.validate()
                .unwrap_err()
                .to_string()
                .contains("not on the network")
        );
        a.gateway = Some(Ipv4Addr::new(100, 64, 1, 9));
        assert!(a.validate().unwrap_err().to_string().contains("inside"));
    }

    #[test]
    fn only_our_frames_pass() {
        let a = Addresses {
            mac: [2, 0, 0, 0, 0, 1],
            range: Range::parse("100.64.1.0/24").unwrap(),
            prefix_len: 16,
            gateway: None,
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
}
